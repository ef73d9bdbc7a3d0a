/* SPDX-License-Identifier: MIT */
/* Sizes as people write them ("512M", "20G": K, M, G, T are powers of
 * 1024): the one parser and printer of the configuration, the backends and
 * the client, so that a size reads back the way it was written. */
#ifndef AIRLOCK_BACKENDS_SIZE_TEXT_H
#define AIRLOCK_BACKENDS_SIZE_TEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Digits and an optional K, M, G or T (either case), not zero, not over
 * 2^64-1 bytes; false for anything else. */
bool size_parse (const char *s, uint64_t *bytes);

/* Exact: the largest unit that divides n ("20M", "1000 bytes"). */
void size_format (uint64_t n, char *buf, size_t size);

/* For reading, rounded to one decimal in the largest unit n reaches
 * ("1.5G", "500M", "812 bytes"); the same units size_parse takes. */
void size_format_approx (uint64_t n, char *buf, size_t size);

#define SIZE_TEXT_MAX 32

#endif
