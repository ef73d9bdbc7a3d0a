/* SPDX-License-Identifier: MIT */
/* Sessions of the ssh backend: commands on a remote host over OpenSSH,
 * each in a job directory there that outlives a dropped connection (see
 * ssh_session.c and docs/ssh.md). */
#ifndef AIRLOCK_BACKENDS_SSH_SESSION_H
#define AIRLOCK_BACKENDS_SSH_SESSION_H

#include <stdbool.h>

#include "backend.h"
#include "ssh_transport.h"

struct ssh_session_options {
  struct ssh_target target;  /* copied; control_dir is set by open */
  const char *runtime_dir;   /* the daemon's: RUNTIME/ssh holds the sockets */
  const char *session;       /* for messages */
  const char *remote_dir;    /* base of the remote job directories */
  const char *workdir;       /* remote working directory; NULL: the login one */
  long long job_ttl_s;       /* stale job directories swept after this */
  bool disposable;           /* the gate treats the host as a sandbox */
};

/* Connect, check the remote (sh, bash, setsid, the job directory) and
 * sweep stale job directories.  NULL with *err (malloc'd, *err NULL on
 * entry); *cwd: the remote working directory. */
struct backend_session *ssh_session_open (const struct ssh_session_options *o,
                                          char **cwd, char **err);
const struct backend_ops *ssh_session_ops (void);

#endif
