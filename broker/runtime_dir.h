/* SPDX-License-Identifier: MIT */
/* Where the per-user daemon keeps its socket. */
#ifndef AIRLOCK_BROKER_RUNTIME_DIR_H
#define AIRLOCK_BROKER_RUNTIME_DIR_H

#include <stddef.h>

/* Fill out with the directory, creating it (0700) if needed; -1 with *err
 * when it cannot be made or is not safely ours. */
int runtime_dir (char *out, size_t size, char **err);

#define DAEMON_SOCKET "daemon.sock"
#define DAEMON_LOCK "daemon.lock"
#define DAEMON_LOG "daemon.log"
#define DAEMON_SESSIONS "sessions"

#endif
