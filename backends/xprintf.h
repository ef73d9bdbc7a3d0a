/* SPDX-License-Identifier: MIT */
/* printf into a new string: the one formatting helper of the broker and
 * its backends. */
#ifndef AIRLOCK_BACKENDS_XPRINTF_H
#define AIRLOCK_BACKENDS_XPRINTF_H

#include <stdarg.h>

/* malloc'd; NULL when out of memory. */
char *xprintf (const char *fmt, ...) __attribute__ ((format (printf, 1, 2)));
char *vxprintf (const char *fmt, va_list ap) __attribute__ ((format (printf, 1, 0)));

#endif
