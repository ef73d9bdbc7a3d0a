/* SPDX-License-Identifier: MIT */
/* The addresses the helper gives a sandbox's tap device with `network:
 * allowlist`: airlock-egress (backends/egress_network.h, which includes
 * this) serves the other end, so the two can never disagree.  Host-order
 * uint32 values (htonl() them for a struct in_addr). */
#ifndef AIRLOCK_HELPER_EGRESS_ADDRESSES_H
#define AIRLOCK_HELPER_EGRESS_ADDRESSES_H
#define EGRESS_TAP_NAME "eth0"
#define EGRESS_SANDBOX 0x0a630064u /* 10.99.0.100/32, MTU 1500 */
#define EGRESS_GATEWAY 0x0a630001u /* 10.99.0.1 (slirp's vhost): the default route */
#endif
