/* SPDX-License-Identifier: MIT */
/* The egress allowlist as data, and every decision made on it: pure
 * functions, no I/O, no DNS (the caller resolves).  Used by airlock-egress
 * (backends/egress_main.c), which decides each flow of a sandbox with
 * `network: allowlist`, and by the broker, which checks a user's
 * allowlist against the administrator's caps before a sandbox starts.
 * docs/network.md describes the policy for users. */
#ifndef AIRLOCK_POLICY_EGRESS_POLICY_H
#define AIRLOCK_POLICY_EGRESS_POLICY_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#define EGRESS_MAX_PORTS 16
#define EGRESS_MAX_RULES 256
#define EGRESS_MAX_NAME 253 /* a DNS name, without the final dot */

/* One `network.allow` entry: "example.com", "*.example.com" (any name
 * strictly below example.com, not example.com itself), optionally with
 * ports: "example.com:443", "example.com:80,443".  No ports: 80 and 443. */
struct egress_rule
{
  char *text;    /* as written, for messages and the audit log */
  char *domain;  /* lower case, no trailing dot, without the "*." */
  bool wildcard;
  uint16_t ports[EGRESS_MAX_PORTS];
  size_t n_ports;
};

struct egress_cidr
{
  char *text;    /* as written */
  int family;    /* AF_INET or AF_INET6 */
  uint8_t addr[16];
  unsigned prefix;
};

struct egress_mapping
{
  char *name;    /* lower case, no trailing dot */
  int family;
  uint8_t addr[16];
};

struct egress_policy
{
  struct egress_rule *allow;
  size_t n_allow;
  struct egress_mapping *resolve;   /* network.resolve: name -> address */
  size_t n_resolve;
  struct egress_cidr *allow_ranges; /* special ranges opened by config */
  size_t n_allow_ranges;
  struct egress_cidr *upstream_ranges; /* n == 0: any upstream address */
  size_t n_upstream_ranges;
};

/* Parse one allow entry / one CIDR ("10.1.2.0/24", "fd00::/8", a bare
 * address is /32 or /128).  0, or -1 and *err (malloc'd, quoting the
 * entry and saying what is wrong). */
int egress_rule_parse (const char *text, struct egress_rule *out, char **err);
int egress_cidr_parse (const char *text, struct egress_cidr *out, char **err);

/* The JSON object airlock-egress reads (docs/network.md, "How it works"):
 *   {"allow": ["allowed.test", "*.pypi.org:443"],
 *    "resolve": {"allowed.test": "127.0.0.1"},
 *    "allow_ranges": ["127.0.0.1/32"],
 *    "upstream_ranges": ["127.0.0.0/8"]}
 * Every key is optional; an unknown key, a wrong type or a bad entry is
 * an error naming it.  0, or -1 and *err. */
int egress_policy_from_json (const cJSON *obj, struct egress_policy *p,
                             char **err);
void egress_policy_free (struct egress_policy *p);
/* Free n parsed entries and the array holding them (NULL: nothing). */
void egress_rules_free (struct egress_rule *r, size_t n);
void egress_cidrs_free (struct egress_cidr *c, size_t n);

/* Which rule allows this name (case-insensitive, a trailing dot ignored),
 * or NULL.  The first matching rule in order. */
const struct egress_rule *egress_match_name (const struct egress_policy *p,
                                             const char *name);
bool egress_rule_allows_port (const struct egress_rule *r, uint16_t port);

/* Where an address belongs.  Special ranges are never reached unless an
 * allow_ranges entry covers the address. */
enum egress_range
{
  EGRESS_PUBLIC = 0,
  EGRESS_LOOPBACK,    /* 127/8, ::1 */
  EGRESS_PRIVATE,     /* 10/8, 172.16/12, 192.168/16, fc00::/7, 100.64/10 */
  EGRESS_LINK_LOCAL,  /* 169.254/16, fe80::/10 */
  EGRESS_METADATA,    /* 169.254.169.254, fd00:ec2::254 (before link-local) */
  EGRESS_UNUSABLE,    /* 0/8, multicast, broadcast, reserved, ::, v4-mapped
                         special addresses, documentation ranges */
};
enum egress_range egress_classify (int family, const uint8_t addr[16]);
const char *egress_range_name (enum egress_range r); /* "loopback", ... */

bool egress_cidr_contains (const struct egress_cidr *c, int family,
                           const uint8_t addr[16]);

/* May airlock connect to this real address for an allowed name?  True, or
 * false with *why (static text or written into buf) e.g. "127.0.0.2 is a
 * loopback address and no network.allow_ranges entry covers it" or
 * "10.0.0.1 is outside network.upstream_ranges". */
bool egress_address_allowed (const struct egress_policy *p, int family,
                             const uint8_t addr[16], char *buf, size_t len,
                             const char **why);

/* The administrator's caps (policy.rules `network-allow PATTERN` and
 * `network-range CIDR` lines): NULL/0 lists mean no cap.  A user entry is
 * within the caps when some admin pattern covers every name it can match
 * (admin "*.debian.org" covers "deb.debian.org" and "*.deb.debian.org",
 * not "debian.org"; admin "debian.org" covers only itself) and its ports
 * are a subset (admin without ports: any port); a user range must lie
 * inside an admin range.  0, or -1 and *err naming the first user entry
 * outside the caps. */
int egress_policy_check_caps (const struct egress_policy *p,
                              const struct egress_rule *admin_allow,
                              size_t n_admin_allow,
                              const struct egress_cidr *admin_ranges,
                              size_t n_admin_ranges, char **err);

/* 16 hex digits identifying the policy (FNV-1a 64 of its canonical JSON),
 * for postures and the audit log. */
void egress_policy_hash (const struct egress_policy *p, char out[17]);

#endif
