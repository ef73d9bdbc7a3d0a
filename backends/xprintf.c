/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>

#include "xprintf.h"

char *
xprintf (const char *fmt, ...)
{
  va_list ap;
  va_start (ap, fmt);
  char *s = NULL;
  if (vasprintf (&s, fmt, ap) < 0)
    s = NULL;
  va_end (ap);
  return s;
}
