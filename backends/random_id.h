/* SPDX-License-Identifier: MIT */
/* Random identifiers for remote calls: exec ids, idempotency keys, job
 * markers and tokens.  Unique, not secret: without an entropy source they
 * fall back to the clock, the pid and a counter, never to zeros. */
#ifndef AIRLOCK_BACKENDS_RANDOM_ID_H
#define AIRLOCK_BACKENDS_RANDOM_ID_H

#include <stddef.h>

/* bytes random bytes (at most 32) as 2 * bytes hex digits and a NUL. */
void random_hex (char *out, size_t bytes);

/* A version 4 UUID, "xxxxxxxx-xxxx-4xxx-yxxx-xxxxxxxxxxxx" and a NUL. */
void random_uuid (char out[37]);

#endif
