/* SPDX-License-Identifier: MIT */
/* The sandbox's view of the network with `network: allowlist`: the helper
 * gives the tap device these addresses and routes, and airlock-egress
 * serves them.  No real address ever appears in this range's place: every
 * name the sandbox may reach resolves to a fake address of its own. */
#ifndef AIRLOCK_HELPER_EGRESS_ADDRESSES_H
#define AIRLOCK_HELPER_EGRESS_ADDRESSES_H

/* IPv4 addresses in host byte order. */
#define EGRESS_NETWORK 0x0a630000u    /* 10.99.0.0/16, the stack's network */
#define EGRESS_NETMASK 0xffff0000u
#define EGRESS_GATEWAY 0x0a630001u    /* 10.99.0.1, the default route */
#define EGRESS_RESOLVER 0x0a630003u   /* 10.99.0.3, the only DNS server */
#define EGRESS_SANDBOX 0x0a630064u    /* 10.99.0.100/32, the tap's address */
#define EGRESS_FAKE_FIRST 0x0a630101u /* 10.99.1.1: fake addresses start */
#define EGRESS_FAKE_LAST 0x0a63fffeu  /* 10.99.255.254 */
#define EGRESS_RESOLVER_TEXT "10.99.0.3"
#define EGRESS_TAP_NAME "eth0"

#endif
