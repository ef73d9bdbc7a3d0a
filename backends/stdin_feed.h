/* SPDX-License-Identifier: MIT */
/* Input on its way into a command's stdin pipe: what the broker sent and
 * the command has not read yet, bounded, written as the pipe takes it.
 * Shared by the supervisor's jobs and the docker job leader. */
#ifndef AIRLOCK_BACKENDS_STDIN_FEED_H
#define AIRLOCK_BACKENDS_STDIN_FEED_H

#include <stdbool.h>
#include <stddef.h>

#define STDIN_FEED_MAX (4 << 20) /* undelivered bytes per command */

struct stdin_feed
{
  int fd;        /* the pipe's write end (non-blocking), -1 when closed */
  char *pending; /* not yet taken by the command */
  size_t len;
  bool eof;      /* close the pipe once pending is delivered */
};

/* Queue data (eof: then close); -1 when the backlog would pass
 * STDIN_FEED_MAX, -2 out of memory: nothing queued. */
int stdin_feed_push (struct stdin_feed *f, const void *data, size_t n, bool eof);

/* Write what the pipe takes now; closes it after the end of input, or
 * when the command closed its end (the rest is dropped). */
void stdin_feed_pump (struct stdin_feed *f);

/* Closes the pipe and frees the backlog. */
void stdin_feed_close (struct stdin_feed *f);

#endif
