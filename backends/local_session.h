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
};

/* Start a session; NULL with *err (malloc'd; *err must be NULL on entry). */
struct backend_session *local_session_open (const struct local_session_options *o,
                                            char **err);
const struct backend_ops *local_session_ops (void);

#endif
