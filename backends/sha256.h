/* SPDX-License-Identifier: MIT */
/* SHA-256 (FIPS 180-4), for names derived from untrusted text (a SIF
 * cache file per image reference) that must not collide. */
#ifndef AIRLOCK_BACKENDS_SHA256_H
#define AIRLOCK_BACKENDS_SHA256_H

#include <stddef.h>
#include <stdint.h>

void sha256 (const void *data, size_t n, uint8_t out[32]);

#endif
