/* SPDX-License-Identifier: MIT */
/* FNV-1a, 64 bits: a fast hash to tell configurations apart (a changed
 * container request, a session's settings).  Not a security boundary. */
#ifndef AIRLOCK_BACKENDS_FNV1A_H
#define AIRLOCK_BACKENDS_FNV1A_H

#include <stddef.h>
#include <stdint.h>

#define FNV1A64_INIT 0xcbf29ce484222325ULL

static inline uint64_t
fnv1a64 (uint64_t h, const void *data, size_t n)
{
  const uint8_t *p = data;
  for (size_t i = 0; i < n; i++)
    h = (h ^ p[i]) * 0x100000001b3ULL;
  return h;
}

#endif
