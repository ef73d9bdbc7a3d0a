/* SPDX-License-Identifier: MIT */
/* The user-mode TCP/IP stack of airlock-egress: libslirp on the sandbox's
 * tap fd, in restricted mode (it connects nowhere by itself), with every
 * frame from the sandbox checked first: ARP and TCP go to slirp, DNS to
 * the resolver address is answered here with fake addresses (one per
 * allowed name, each with a slirp forward to a listener of
 * egress_flow.h per allowed port), everything else is dropped and
 * audited.  Main-thread only (libslirp is not thread-safe). */
#ifndef AIRLOCK_BACKENDS_EGRESS_STACK_H
#define AIRLOCK_BACKENDS_EGRESS_STACK_H

#include <poll.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "egress_audit.h"
#include "egress_flow.h"
#include "egress_policy.h"

/* Names given a fake address at most (a wildcard rule could otherwise
 * make a sandbox allocate without end); past that: REFUSED. */
#define EGRESS_MAX_NAMES 1024
/* Frames read from the tap per round of the loop: far below the
 * listeners' backlog (see egress_flows_listen). */
#define EGRESS_FRAMES_PER_ROUND 64

/* The fds of one round of the main loop. */
struct egress_pollset
{
  struct pollfd *fds;
  size_t n, cap;
};
/* Append one; its index, or -1 when out of memory. */
int egress_pollset_add (struct egress_pollset *ps, int fd, short events);

struct egress_stack;

struct egress_stack *egress_stack_new (int tap, const struct egress_policy *p,
                                       struct egress_audit *audit,
                                       struct egress_flows *flows,
                                       char **err);

/* Before poll: add the tap's and slirp's fds to ps, lower *timeout_ms
 * (milliseconds, -1 none) to the next timer.  After poll (rc its
 * result): let slirp do its I/O, read the tap's frames, run timers. */
void egress_stack_prepare (struct egress_stack *s, struct egress_pollset *ps,
                           int *timeout_ms);
void egress_stack_dispatch (struct egress_stack *s, struct egress_pollset *ps,
                            int rc);

/* The tap reported an error (its device is gone): time to stop. */
bool egress_stack_tap_gone (const struct egress_stack *s);

void egress_stack_free (struct egress_stack *s);

#endif
