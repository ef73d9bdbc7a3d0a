/* SPDX-License-Identifier: MIT */
/* The wait before a retry: exponential with a cap and +-25 % jitter (which
 * spreads the retries of many clients after one outage).  Shared by the
 * Daytona client (200 ms to 5 s) and the gRPC layer (100 ms to 1 s). */
#ifndef AIRLOCK_BACKENDS_BACKOFF_H
#define AIRLOCK_BACKENDS_BACKOFF_H

#include <stdlib.h>

/* The wait before retry number attempt (1: after the first failure):
 * first_ms doubling up to cap_ms, then +-25 % drawn from *seed. */
static inline unsigned
backoff_ms (unsigned attempt, unsigned first_ms, unsigned cap_ms, unsigned *seed)
{
  unsigned ms = first_ms;
  for (unsigned i = 1; i < attempt && ms < cap_ms; i++)
    ms *= 2;
  if (ms > cap_ms)
    ms = cap_ms;
  unsigned span = ms / 2;
  return ms - ms / 4 + (span ? (unsigned) rand_r (seed) % (span + 1) : 0);
}

#endif
