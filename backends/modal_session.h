/* SPDX-License-Identifier: MIT */
/* Sessions of the modal backend, direct mode: commands in a Modal sandbox
 * through its task's command router (see modal_session.c and
 * docs/modal.md). */
#ifndef AIRLOCK_BACKENDS_MODAL_SESSION_H
#define AIRLOCK_BACKENDS_MODAL_SESSION_H

#include "backend.h"
#include "modal_api.h"

struct modal_session_options {
  struct modal_api_options api;   /* strings copied by open */
  struct modal_sandbox_spec spec;
  const char *workdir;            /* the first cwd; NULL: /root */
  const char *session;            /* for messages */
};

/* Start the sandbox (modal_sandbox_start), reach its command router,
 * then serve commands.  NULL with *err (malloc'd); *cwd: the first
 * working directory. */
struct backend_session *modal_session_open (const struct modal_session_options *o,
                                            char **cwd, char **err);
const struct backend_ops *modal_session_ops (void);

#endif
