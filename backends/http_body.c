/* SPDX-License-Identifier: MIT */
/* A response body into memory (see http_body.h). */
#include "http_body.h"

#include <stdlib.h>
#include <string.h>

#define DEFAULT_MAX (8u << 20)

size_t
http_body_write (char *data, size_t size, size_t n, void *userdata)
{
  struct http_body *s = userdata;
  size_t total = size * n;
  size_t max = s->max ? s->max : DEFAULT_MAX;
  if (s->len + total + 1 > max)
    {
      if (!s->on_line)
        {
          s->too_big = true;
          return 0;
        }
      /* A stream of lines: keep only the unfinished one. */
      memmove (s->buf, s->buf + s->line_start, s->len - s->line_start);
      s->len -= s->line_start;
      s->line_start = 0;
      if (s->len + total + 1 > max)
        {
          s->too_big = true;
          return 0;
        }
    }
  if (s->len + total + 1 > s->cap)
    {
      size_t cap = (s->len + total + 1) * 2;
      char *p = realloc (s->buf, cap);
      if (!p)
        return 0;
      s->buf = p;
      s->cap = cap;
    }
  memcpy (s->buf + s->len, data, total);
  s->len += total;
  s->buf[s->len] = '\0';
  if (s->on_line)
    for (char *nl; (nl = memchr (s->buf + s->line_start, '\n', s->len - s->line_start));)
      {
        *nl = '\0';
        s->on_line (s->ctx, s->buf + s->line_start);
        *nl = '\n';
        s->line_start = (size_t) (nl + 1 - s->buf);
      }
  return total;
}

void
http_body_reset (struct http_body *b)
{
  b->len = 0;
  b->line_start = 0;
  b->too_big = false;
  if (b->buf)
    b->buf[0] = '\0';
}
