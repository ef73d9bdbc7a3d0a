/* SPDX-License-Identifier: MIT */
/* Allocation that cannot fail quietly: out of memory prints and aborts.
 * For the broker's configuration and the policy modules, where a half-
 * built rule set or config must never be taken for a whole one. */
#ifndef AIRLOCK_POLICY_XALLOC_H
#define AIRLOCK_POLICY_XALLOC_H

#include <stddef.h>

__attribute__ ((noreturn)) void oom (void);
/* p itself, or oom () when it is NULL (any allocating call). */
void *nonnull (void *p);
void *xcalloc (size_t n, size_t size);
void *xreallocarray (void *p, size_t n, size_t size);
char *xstrdup (const char *s);
char *xasprintf (const char *fmt, ...) __attribute__ ((format (printf, 1, 2)));

#endif
