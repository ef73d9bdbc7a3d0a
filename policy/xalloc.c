/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xalloc.h"

void
oom (void)
{
  fputs ("airlock: out of memory\n", stderr);
  abort ();
}

void *
nonnull (void *p)
{
  if (!p)
    oom ();
  return p;
}

/* Zero sizes still give a distinct pointer: callers free what they get. */
void *
xcalloc (size_t n, size_t size)
{
  return nonnull (calloc (n ? n : 1, size ? size : 1));
}

void *
xreallocarray (void *p, size_t n, size_t size)
{
  return nonnull (reallocarray (p, n ? n : 1, size ? size : 1));
}

char *
xstrdup (const char *s)
{
  return nonnull (strdup (s));
}

char *
xasprintf (const char *fmt, ...)
{
  va_list ap;
  char *s;
  va_start (ap, fmt);
  int n = vasprintf (&s, fmt, ap);
  va_end (ap);
  if (n < 0)
    oom ();
  return s;
}
