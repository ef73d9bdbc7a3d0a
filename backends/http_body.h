/* SPDX-License-Identifier: MIT */
/* A libcurl write callback into a growing buffer with a size bound (and,
 * for streams of lines, a callback per line): the response body of the
 * Docker Engine client and of the Daytona client. */
#ifndef AIRLOCK_BACKENDS_HTTP_BODY_H
#define AIRLOCK_BACKENDS_HTTP_BODY_H

#include <stdbool.h>
#include <stddef.h>

struct http_body {
  char *buf;       /* NUL-terminated while not NULL */
  size_t len, cap;
  size_t max;      /* bytes kept at most (0: 8 MiB); more sets too_big */
  bool too_big;
  /* line mode: each complete line handed over, only the unfinished one
   * kept (the bound then applies to a line) */
  void (*on_line) (void *ctx, const char *line);
  void *ctx;
  size_t line_start;
};

/* CURLOPT_WRITEFUNCTION with CURLOPT_WRITEDATA a struct http_body. */
size_t http_body_write (char *data, size_t size, size_t n, void *userdata);

/* Back to empty, keeping the bound and the line callback (a retry). */
void http_body_reset (struct http_body *b);

#endif
