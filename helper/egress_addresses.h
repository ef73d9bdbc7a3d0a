/* SPDX-License-Identifier: MIT */
/* The addresses of a sandbox with `network: allowlist`: the helper gives
 * the sandbox's tap device these, and airlock-egress (backends/egress_*)
 * runs the other end.  One place, so the two can never disagree.
 * Host-order uint32 values (htonl() them for a struct in_addr) and the
 * same addresses as text. */
#ifndef AIRLOCK_HELPER_EGRESS_ADDRESSES_H
#define AIRLOCK_HELPER_EGRESS_ADDRESSES_H

/* The sandbox's whole view: 10.99.0.0/16. */
#define EGRESS_NETWORK      0x0a630000u
#define EGRESS_NETMASK      0xffff0000u
#define EGRESS_NETWORK_TEXT "10.99.0.0"
#define EGRESS_PREFIX       16

/* The gateway (slirp's vhost): the sandbox's default route. */
#define EGRESS_GATEWAY      0x0a630001u
#define EGRESS_GATEWAY_TEXT "10.99.0.1"

/* The resolver (slirp's vnameserver): /etc/resolv.conf names it, and
 * airlock-egress answers its DNS queries itself. */
#define EGRESS_RESOLVER      0x0a630003u
#define EGRESS_RESOLVER_TEXT "10.99.0.3"

/* The sandbox itself (tap eth0, 10.99.0.100/32, MTU 1500). */
#define EGRESS_SANDBOX      0x0a630064u
#define EGRESS_SANDBOX_TEXT "10.99.0.100"
#define EGRESS_MTU          1500
#define EGRESS_TAP_NAME     "eth0"

/* Fake addresses, one per allowed name, handed out from the first up. */
#define EGRESS_FAKE_FIRST   0x0a630101u /* 10.99.1.1 */
#define EGRESS_FAKE_LAST    0x0a63fffeu /* 10.99.255.254 */

#endif
