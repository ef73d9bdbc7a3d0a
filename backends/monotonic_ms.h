/* SPDX-License-Identifier: MIT */
/* Milliseconds of the monotonic clock: deadlines and durations that a
 * change of the wall clock must not move. */
#ifndef AIRLOCK_BACKENDS_MONOTONIC_MS_H
#define AIRLOCK_BACKENDS_MONOTONIC_MS_H

#include <time.h>

static inline long long
monotonic_ms (void)
{
  struct timespec ts;
  clock_gettime (CLOCK_MONOTONIC, &ts);
  return (long long) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

#endif
