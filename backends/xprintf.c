/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>

#include "xprintf.h"

char *
vxprintf (const char *fmt, va_list ap)
{
  char *s = NULL;
  if (vasprintf (&s, fmt, ap) < 0)
    s = NULL;
  return s;
}

char *
xprintf (const char *fmt, ...)
{
  va_list ap;
  va_start (ap, fmt);
  char *s = vxprintf (fmt, ap);
  va_end (ap);
  return s;
}
