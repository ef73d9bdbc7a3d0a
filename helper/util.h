/* SPDX-License-Identifier: MIT */
/* Small shared utilities of the helper: failure reporting that never
 * returns, cleanup attributes, and the report channel. */
#ifndef AIRLOCK_HELPER_UTIL_H
#define AIRLOCK_HELPER_UTIL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdnoreturn.h>
#include <unistd.h>

#include "protocol.h"

/* The report channel to the broker: fd 3, a SOCK_SEQPACKET socket.  It is
 * -1 until sanitize_process() has verified it. */
#define CHANNEL_FD 3
extern int channel_fd;

/* Exit status of the helper after any setup failure. */
#define EXIT_SETUP_FAILED 125

/* Report a setup failure at `step` (errno `err`, 0 for none) to the broker,
 * or to stderr while the channel is not yet usable, and _exit(125). */
noreturn void fail (enum al_step step, int err, const char *fmt, ...)
    __attribute__ ((format (printf, 3, 4)));

/* Send a finished message on the channel, with fd riding along when it is
 * not -1; false when it could not be sent (the broker went away). */
bool channel_send (struct al_writer *w, int fd);

static inline void
close_fdp (int *fd)
{
  if (*fd >= 0)
    close (*fd);
}
#define cleanup_fd __attribute__ ((cleanup (close_fdp)))

/* Read or write exactly n bytes, retrying on EINTR. */
bool write_all (int fd, const void *buf, size_t n);
/* Write a short string to an already-open file (a /proc or cgroup knob). */
int write_knob (int dirfd, const char *name, const char *value);

#endif
