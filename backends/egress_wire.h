/* SPDX-License-Identifier: MIT */
/* Parsers for what airlock-egress reads from a sandbox before it decides
 * a flow: a DNS query, a TLS ClientHello's server name, an HTTP request's
 * Host.  Pure functions over untrusted bytes: fuzzed (fuzz/fuzz_egress_*). */
#ifndef AIRLOCK_BACKENDS_EGRESS_WIRE_H
#define AIRLOCK_BACKENDS_EGRESS_WIRE_H

#include <stddef.h>
#include <stdint.h>

#define EGRESS_DNS_MAX 512 /* classic UDP DNS; longer queries are refused */

struct dns_query
{
  uint16_t id;
  uint16_t qtype;  /* 1 A, 28 AAAA, ... */
  uint16_t qclass; /* 1 IN */
  char name[254];  /* lower case, dotted, no trailing dot ("" = root) */
  size_t question_len; /* bytes of the question section, echoed in replies */
  uint16_t flags;  /* the query's flags (RD is echoed) */
};

/* 0, or -1 for anything but one standard query (QR=0, OPCODE=0, QDCOUNT=1,
 * no answer/authority records; additional records (EDNS OPT) are allowed
 * and ignored) with a valid uncompressed name. */
int dns_parse_query (const uint8_t *msg, size_t len, struct dns_query *q);

/* Write a reply to q into out (cap bytes): rcode 0 with one A record
 * (addr4 != NULL, TTL ttl) or no answers (NODATA, e.g. AAAA of an allowed
 * name), rcode 3 NXDOMAIN, rcode 5 REFUSED, rcode 4 NOTIMP.  The question
 * is copied from the query.  Returns the length, or -1 if cap is short. */
int dns_build_reply (const uint8_t *query, const struct dns_query *q,
                     unsigned rcode, const uint8_t addr4[4], uint32_t ttl,
                     uint8_t *out, size_t cap);

enum peek_result
{
  PEEK_FOUND = 0,    /* name written */
  PEEK_MORE = 1,     /* need more bytes (nothing malformed so far) */
  PEEK_NONE = 2,     /* well formed, but carries no name (no SNI / Host) */
  PEEK_INVALID = 3,  /* not this protocol, or malformed */
};

/* The server_name (host_name type) of a TLS ClientHello at the start of
 * data (one or more TLS records of type handshake).  Lower-cased into
 * name (cap bytes with NUL); a name with bytes outside [a-z0-9.-] or too
 * long is PEEK_INVALID. */
enum peek_result tls_peek_sni (const uint8_t *data, size_t len, char *name,
                               size_t cap);

/* The Host of an HTTP/1.x request head at the start of data: its port, if
 * any, is cut; lower-cased.  Two Host headers, a request line that is not
 * HTTP/1.x, or an absolute-form target naming another host: PEEK_INVALID.
 * PEEK_MORE until the blank line that ends the head. */
enum peek_result http_peek_host (const uint8_t *data, size_t len, char *name,
                                 size_t cap);

/* At most this many bytes are read from a flow before deciding. */
#define EGRESS_PEEK_MAX 16384

#endif
