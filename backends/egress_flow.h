/* SPDX-License-Identifier: MIT */
/* The flows of airlock-egress: one unix listener per (fake address, port)
 * that slirp forwards a sandbox's TCP connections to, and one thread per
 * accepted connection that reads the start of the flow, checks its TLS
 * SNI or HTTP Host against the name the fake address stands for,
 * resolves and connects upstream itself (only to addresses the policy
 * allows), and relays.  Every decision goes to the audit log. */
#ifndef AIRLOCK_BACKENDS_EGRESS_FLOW_H
#define AIRLOCK_BACKENDS_EGRESS_FLOW_H

#include <poll.h>
#include <stddef.h>
#include <stdint.h>

#include "egress_audit.h"
#include "egress_policy.h"

/* Connections relayed at once; more are closed at once (and audited). */
#define EGRESS_MAX_FLOWS 256
/* Listeners at most (names × ports). */
#define EGRESS_MAX_LISTENERS 4096
/* Deadlines.  AIRLOCK_EGRESS_PEEK_MS, for tests only, shortens the first. */
#define EGRESS_PEEK_MS 10000     /* for the TLS SNI / HTTP Host */
#define EGRESS_OPAQUE_MS 1000    /* for a first byte on an explicit port */
#define EGRESS_CONNECT_MS 10000  /* for each upstream address */

struct egress_flows;

/* The private 0700 directory of the listeners is made here.  NULL and
 * *err (malloc'd) on failure. */
struct egress_flows *egress_flows_new (const struct egress_policy *p,
                                       struct egress_audit *audit,
                                       char **err);

/* Listen for the flows to fake:port (host order), which stand for name,
 * allowed by rule.  The socket's path (owned by flows), or NULL and *err.
 * Listening twice on the same pair returns the same path. */
const char *egress_flows_listen (struct egress_flows *f, uint32_t fake,
                                 uint16_t port, const char *name,
                                 const struct egress_rule *rule, char **err);

/* The listeners' fds, for poll (at most cap); and after poll, accept what
 * is waiting on those that are ready (fds as filled, n of them). */
size_t egress_flows_pollfds (const struct egress_flows *f, struct pollfd *out,
                             size_t cap);
void egress_flows_accept (struct egress_flows *f, const struct pollfd *fds,
                          size_t n);

/* Flows being relayed now. */
unsigned egress_flows_active (struct egress_flows *f);

/* Stop: every flow thread is told to end and awaited (a bounded wait),
 * the listeners are closed and their directory removed.  Frees f when
 * every thread ended (returns 0), else leaves it (-1: the process is
 * about to exit anyway). */
int egress_flows_stop (struct egress_flows *f);

#endif
