/* SPDX-License-Identifier: MIT */
/* airlock-egress's audit writer: every decision to the audit log
 * (policy/audit_log.h), decided_by "network-allowlist", rate-limited per
 * (decision, name-or-address) so that a sandbox hammering one
 * destination cannot flood the log.  Safe to call from any thread. */
#ifndef AIRLOCK_BACKENDS_EGRESS_AUDIT_H
#define AIRLOCK_BACKENDS_EGRESS_AUDIT_H

#include <stdbool.h>

#include "audit_log.h"

/* At most this many lines per key per window; the count of the ones held
 * back goes into the next line of that key that is written. */
#define EGRESS_AUDIT_BURST 20
#define EGRESS_AUDIT_WINDOW_MS 10000
/* Keys remembered at once (least recently used one forgotten). */
#define EGRESS_AUDIT_KEYS 128

struct egress_audit;

/* Opens the audit log under the state directory (XDG_STATE_HOME / HOME).
 * NULL and *err (malloc'd) on failure. */
struct egress_audit *egress_audit_open (const char *session,
                                        const char *backend, char **err);

/* One decision.  rule: the matching rule's text, or NULL.  Returns 0 when
 * the line was written or held back by the rate limit, -1 when the log
 * could not be written (said on stderr): an allow must then not go on. */
int egress_audit (struct egress_audit *a, bool allow, const char *reason,
                  const char *rule, const struct audit_network *net);

void egress_audit_close (struct egress_audit *a);

#endif
