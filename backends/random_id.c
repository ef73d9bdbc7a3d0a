/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
#include "random_id.h"

#include <stdio.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

static void
random_bytes (unsigned char *r, size_t n)
{
  if (getrandom (r, n, 0) == (ssize_t) n)
    return;
  /* no entropy source: unique enough per host, not a secret */
  static unsigned counter;
  struct timespec ts;
  clock_gettime (CLOCK_MONOTONIC, &ts);
  unsigned long long x = (unsigned long long) ts.tv_nsec ^ (unsigned long long) ts.tv_sec << 30
                         ^ (unsigned long long) getpid () << 48 ^ ++counter;
  for (size_t i = 0; i < n; i++)
    {
      x = x * 6364136223846793005ULL + 1442695040888963407ULL;
      r[i] = (unsigned char) (x >> 56);
    }
}

void
random_hex (char *out, size_t bytes)
{
  unsigned char r[32];
  if (bytes > sizeof r)
    bytes = sizeof r;
  random_bytes (r, bytes);
  for (size_t i = 0; i < bytes; i++)
    snprintf (out + 2 * i, 3, "%02x", r[i]);
}

void
random_uuid (char out[37])
{
  unsigned char r[16];
  random_bytes (r, sizeof r);
  r[6] = (unsigned char) ((r[6] & 0x0f) | 0x40); /* version 4 */
  r[8] = (unsigned char) ((r[8] & 0x3f) | 0x80); /* variant 1 */
  snprintf (out, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
            r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8], r[9], r[10], r[11], r[12],
            r[13], r[14], r[15]);
}
