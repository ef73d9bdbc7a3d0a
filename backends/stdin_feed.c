/* SPDX-License-Identifier: MIT */
/* A command's pending stdin (see stdin_feed.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "stdin_feed.h"

int
stdin_feed_push (struct stdin_feed *f, const void *data, size_t n, bool eof)
{
  if (f->len + n > STDIN_FEED_MAX)
    return -1;
  if (n)
    {
      char *p = realloc (f->pending, f->len + n);
      if (!p)
        return -2;
      f->pending = p;
      memcpy (p + f->len, data, n);
      f->len += n;
    }
  f->eof |= eof;
  return 0;
}

static void
close_pipe (struct stdin_feed *f)
{
  if (f->fd >= 0)
    close (f->fd);
  f->fd = -1;
}

void
stdin_feed_pump (struct stdin_feed *f)
{
  while (f->fd >= 0 && f->len > 0)
    {
      ssize_t w = write (f->fd, f->pending, f->len);
      if (w < 0 && (errno == EAGAIN || errno == EINTR))
        return;
      if (w <= 0)
        {
          f->len = 0; /* the command closed its stdin */
          close_pipe (f);
          return;
        }
      memmove (f->pending, f->pending + w, f->len - (size_t) w);
      f->len -= (size_t) w;
    }
  if (f->eof && f->len == 0)
    close_pipe (f);
}

void
stdin_feed_close (struct stdin_feed *f)
{
  close_pipe (f);
  free (f->pending);
  f->pending = NULL;
  f->len = 0;
}
