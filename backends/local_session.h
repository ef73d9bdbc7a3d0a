/* SPDX-License-Identifier: MIT */
/* Sessions of the local backend (see local_session.c). */
#ifndef AIRLOCK_BACKENDS_LOCAL_SESSION_H
#define AIRLOCK_BACKENDS_LOCAL_SESSION_H

#include "backend.h"
#include "local.h"

struct local_session_options {
  /* The sandbox's shape: helper, workdir, rootfs, binds, network, limits
   * and the supervisor's environment (argv and as_init are set here). */
  struct local_run run;
  const char *supervisor; /* NULL: $(LIBEXECDIR)/airlock/airlock-supervisor */
  int log_fd;             /* the supervisor's stderr; -1: /dev/null */
  const char *session;    /* its name, for airlock-egress's audit lines */
};

/* Start a session; NULL with *err (malloc'd; *err must be NULL on entry). */
struct backend_session *local_session_open (const struct local_session_options *o,
                                            char **err);
const struct backend_ops *local_session_ops (void);

/* What the helper reported when it started the session's sandbox: its
 * privilege mode (enum al_privilege) and how pids and memory are bounded
 * (enum al_limits); local.h's local_*_name() put them in words. */
void local_session_started (struct backend_session *s, uint32_t *privilege,
                            uint32_t *limits);

#endif
