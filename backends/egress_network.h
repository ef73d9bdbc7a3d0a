/* SPDX-License-Identifier: MIT */
/* The sandbox's network with `network: allowlist`, as airlock-egress's
 * stack serves it: the tap's side is helper/egress_addresses.h. */
#ifndef AIRLOCK_BACKENDS_EGRESS_NETWORK_H
#define AIRLOCK_BACKENDS_EGRESS_NETWORK_H

#include "egress_addresses.h"

/* The sandbox's whole view: 10.99.0.0/16. */
#define EGRESS_NETWORK 0x0a630000u
#define EGRESS_NETMASK 0xffff0000u
#define EGRESS_MTU 1500

/* The resolver (slirp's vnameserver): /etc/resolv.conf names it, and
 * airlock-egress answers its DNS queries itself. */
#define EGRESS_RESOLVER 0x0a630003u
#define EGRESS_RESOLVER_TEXT "10.99.0.3"

/* Fake addresses, one per allowed name, handed out from the first up. */
#define EGRESS_FAKE_FIRST 0x0a630101u /* 10.99.1.1 */
#define EGRESS_FAKE_LAST 0x0a63fffeu  /* 10.99.255.254 */

#endif
