/* SPDX-License-Identifier: MIT */
/* Parsing of local sandbox options shared by `airlock run` and sessions
 * (command-line options and config values). */
#ifndef AIRLOCK_BROKER_SANDBOX_OPTIONS_H
#define AIRLOCK_BROKER_SANDBOX_OPTIONS_H

#include <stdbool.h>
#include <stdint.h>

#include "local.h"
#include "protocol.h"

/* A whole number; with sizes, an optional K, M, G or T suffix (1024s). */
bool parse_number (const char *s, uint64_t *out, bool sizes);

/* Append "SRC[:DST]" to binds: SRC is resolved now (the helper refuses
 * symlinks), DST (default: the resolved SRC) must be absolute without
 * ".", ".." or "//".  NULL, or a malloc'd message saying what is wrong. */
char *add_bind (struct al_bind *binds, uint32_t *n, const char *spec);

/* What the local sandbox r describes may show, checked once its workdir,
 * binds and rootfs are set:
 *   - no workdir or bind over the root, the sandbox's own /proc or /dev,
 *     and, on the host's system directories, over /usr, /bin, /sbin,
 *     /lib* (the system itself) or into /etc (whose secrets and
 *     /etc/airlock the helper masks); /tmp may be bound (the workdir
 *     may be /tmp);
 *   - airlock's own directories masked wherever the workdir, a bind or
 *     the rootfs shows them (policy/protected_paths.h), or refused.
 * NULL, or a malloc'd message naming the path.  r->masks are malloc'd:
 * sandbox_view_free frees them. */
char *sandbox_view_check (struct local_run *r);
void sandbox_view_free (struct local_run *r);

#endif
