/* Parsing of local sandbox options shared by `airlock run` and sessions
 * (command-line options and config values). */
#ifndef AIRLOCK_BROKER_SANDBOX_OPTIONS_H
#define AIRLOCK_BROKER_SANDBOX_OPTIONS_H

#include <stdbool.h>
#include <stdint.h>

#include "protocol.h"

/* A whole number; with sizes, an optional K, M, G or T suffix (1024s). */
bool parse_number (const char *s, uint64_t *out, bool sizes);

/* Append "SRC[:DST]" to binds: SRC is resolved now (the helper refuses
 * symlinks), DST (default: the resolved SRC) must be absolute without
 * ".", ".." or "//".  NULL, or a malloc'd message saying what is wrong. */
char *add_bind (struct al_bind *binds, uint32_t *n, const char *spec);

#endif
