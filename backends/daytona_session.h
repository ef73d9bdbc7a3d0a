/* SPDX-License-Identifier: MIT */
/* Sessions of the daytona backend: commands in a Daytona cloud sandbox
 * through its toolbox API (see daytona_session.c and docs/daytona.md). */
#ifndef AIRLOCK_BACKENDS_DAYTONA_SESSION_H
#define AIRLOCK_BACKENDS_DAYTONA_SESSION_H

#include <stdbool.h>

#include "backend.h"
#include "daytona_http.h"
#include "daytona_sandbox.h"

struct daytona_session_options {
  const char *api_url;
  struct daytona_auth auth;          /* strings copied by open */
  struct daytona_sandbox_options sandbox;
  bool keep;                         /* stop, not delete, at close */
  const char *workdir;               /* in the sandbox; NULL: the toolbox's
                                        work-dir */
  const char *session;               /* for messages */
};

/* Acquire the sandbox (daytona_sandbox_acquire), check the toolbox
 * answers and has what commands need, then serve commands.  NULL with
 * *err (malloc'd, *err NULL on entry); *cwd: the first working
 * directory. */
struct backend_session *daytona_session_open (const struct daytona_session_options *o,
                                              char **cwd, char **err);
const struct backend_ops *daytona_session_ops (void);

#endif
