/* SPDX-License-Identifier: MIT */
/* Unit tests for the egress allowlist's decisions (policy/egress_policy.c):
 * entry and CIDR parsing with their errors, name matching and wildcards,
 * every address class (the metadata addresses and IPv4 in IPv6 among
 * them), the upstream guard, allow_ranges, the administrator's caps, the
 * policy's hash and the JSON form. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "egress_policy.h"

static void
rule_ok (const char *text, const char *domain, bool wildcard,
         const uint16_t *ports, size_t n_ports)
{
  struct egress_rule r;
  char *err = NULL;
  if (egress_rule_parse (text, &r, &err) != 0)
    fail_msg ("%s: %s", text, err);
  assert_string_equal (r.text, text);
  assert_string_equal (r.domain, domain);
  assert_int_equal (r.wildcard, wildcard);
  assert_int_equal (r.n_ports, n_ports);
  for (size_t i = 0; i < n_ports; i++)
    assert_int_equal (r.ports[i], ports[i]);
  free (r.text);
  free (r.domain);
}

/* The entry is refused with a message quoting it and containing why. */
static void
rule_bad (const char *text, const char *why)
{
  struct egress_rule r;
  char *err = NULL;
  if (egress_rule_parse (text, &r, &err) == 0)
    fail_msg ("accepted: %s", text);
  char quoted[600];
  snprintf (quoted, sizeof quoted, "\"%s\"", text);
  if (!strstr (err, quoted) || !strstr (err, why))
    fail_msg ("%s: %s", text, err);
  free (err);
}

static void
test_rule_parse (void **state)
{
  (void) state;
  static const uint16_t web[] = { 80, 443 }, tls[] = { 443 },
                        some[] = { 80, 443, 8080 };
  rule_ok ("example.com", "example.com", false, web, 2);
  rule_ok ("Example.COM.", "example.com", false, web, 2);
  rule_ok ("*.example.com", "example.com", true, web, 2);
  rule_ok ("*.com", "com", true, web, 2);
  rule_ok ("localhost", "localhost", false, web, 2);
  rule_ok ("pypi.org:443", "pypi.org", false, tls, 1);
  rule_ok ("*.pypi.org:443,443", "pypi.org", true, tls, 1);
  rule_ok ("a-b.test:80,443,8080,80", "a-b.test", false, some, 3);
  char long_label[80];
  memset (long_label, 'a', 63);
  strcpy (long_label + 63, ".test");
  rule_ok (long_label, long_label, false, web, 2);
  uint16_t many[16];
  char text[200] = "a.test:";
  for (int i = 0; i < 16; i++)
    {
      many[i] = (uint16_t) (1000 + i);
      snprintf (text + strlen (text), 10, "%s%d", i ? "," : "", 1000 + i);
    }
  rule_ok (text, "a.test", false, many, 16);

  strcat (text, ",2000");
  rule_bad (text, "more than 16 ports");
  rule_bad ("", "empty");
  rule_bad ("*", "'*'");
  rule_bad ("*.", "wildcard");
  rule_bad ("*.:443", "wildcard");
  rule_bad ("a.*.com", "'*'");
  rule_bad ("**.com", "'*'");
  rule_bad ("a..com", "empty label");
  rule_bad (".a.com", "empty label");
  rule_bad ("a_b.com", "letters, digits");
  rule_bad ("a b.com", "letters, digits");
  rule_bad ("http://a.com", "port");
  rule_bad ("a.com:", "port");
  rule_bad ("a.com:0", "port");
  rule_bad ("a.com:65536", "port");
  rule_bad ("a.com:80,", "port");
  rule_bad ("a.com:443x", "port");
  rule_bad ("a.com:-1", "port");
  rule_bad ("a.com:0000080", "port");
  long_label[63] = 'a';
  rule_bad (long_label, "63");
  char longname[300];
  memset (longname, 'a', sizeof longname);
  for (size_t i = 50; i < 299; i += 51)
    longname[i] = '.';
  longname[254] = '\0';
  rule_bad (longname, "253");
  longname[253] = '\0';
  rule_ok (longname, longname, false, web, 2);
}

static void
cidr_ok (const char *text, int family, const char *addr, unsigned prefix)
{
  struct egress_cidr c;
  char *err = NULL;
  if (egress_cidr_parse (text, &c, &err) != 0)
    fail_msg ("%s: %s", text, err);
  uint8_t want[16] = { 0 };
  assert_int_equal (inet_pton (family, addr, want), 1);
  assert_string_equal (c.text, text);
  assert_int_equal (c.family, family);
  assert_int_equal (c.prefix, prefix);
  assert_memory_equal (c.addr, want, 16);
  free (c.text);
}

static void
cidr_bad (const char *text, const char *why)
{
  struct egress_cidr c;
  char *err = NULL;
  if (egress_cidr_parse (text, &c, &err) == 0)
    fail_msg ("accepted: %s", text);
  if (!strstr (err, text) || !strstr (err, why))
    fail_msg ("%s: %s", text, err);
  free (err);
}

static void
test_cidr_parse (void **state)
{
  (void) state;
  cidr_ok ("10.1.2.0/24", AF_INET, "10.1.2.0", 24);
  cidr_ok ("127.0.0.1", AF_INET, "127.0.0.1", 32);
  cidr_ok ("0.0.0.0/0", AF_INET, "0.0.0.0", 0);
  cidr_ok ("fd00::/8", AF_INET6, "fd00::", 8);
  cidr_ok ("::1", AF_INET6, "::1", 128);
  cidr_ok ("::ffff:10.0.0.0/104", AF_INET6, "::ffff:10.0.0.0", 104);
  cidr_bad ("10.1.2.3/24", "bits set past");
  cidr_bad ("fd00::1/8", "bits set past");
  cidr_bad ("10.0.0.0/33", "prefix");
  cidr_bad ("::/129", "prefix");
  cidr_bad ("10.0.0.0/", "prefix");
  cidr_bad ("10.0.0.0/8x", "prefix");
  cidr_bad ("10.0.0.0/-8", "prefix");
  cidr_bad ("10.0.0/8", "not an IPv4");
  cidr_bad ("example.com", "not an IPv4");
  cidr_bad ("", "not an IPv4");
  cidr_bad ("1.2.3.4 /32", "not an IPv4");
}

static struct egress_policy
policy (const char *json)
{
  struct egress_policy p;
  char *err = NULL;
  cJSON *obj = cJSON_Parse (json);
  assert_non_null (obj);
  if (egress_policy_from_json (obj, &p, &err) != 0)
    fail_msg ("%s: %s", json, err);
  cJSON_Delete (obj);
  return p;
}

static void
policy_bad (const char *json, const char *why)
{
  struct egress_policy p;
  char *err = NULL;
  cJSON *obj = cJSON_Parse (json);
  assert_non_null (obj);
  if (egress_policy_from_json (obj, &p, &err) == 0)
    fail_msg ("accepted: %s", json);
  if (!strstr (err, why))
    fail_msg ("%s: %s", json, err);
  assert_int_equal (p.n_allow + p.n_resolve + p.n_allow_ranges
                        + p.n_upstream_ranges, 0);
  free (err);
  cJSON_Delete (obj);
}

static void
test_from_json (void **state)
{
  (void) state;
  struct egress_policy p = policy (
      "{\"allow\": [\"allowed.test\", \"*.pypi.org:443\"],"
      " \"resolve\": {\"Allowed.Test.\": \"127.0.0.1\", \"v6.test\": \"::1\"},"
      " \"allow_ranges\": [\"127.0.0.1/32\"],"
      " \"upstream_ranges\": [\"127.0.0.0/8\", \"::1\"]}");
  assert_int_equal (p.n_allow, 2);
  assert_int_equal (p.n_resolve, 2);
  assert_string_equal (p.resolve[0].name, "allowed.test");
  assert_int_equal (p.resolve[0].family, AF_INET);
  assert_int_equal (p.resolve[0].addr[0], 127);
  assert_int_equal (p.resolve[1].family, AF_INET6);
  assert_int_equal (p.n_allow_ranges, 1);
  assert_int_equal (p.n_upstream_ranges, 2);
  egress_policy_free (&p);
  assert_null (p.allow);
  egress_policy_free (&p); /* twice is harmless */

  p = policy ("{}");
  assert_int_equal (p.n_allow, 0);
  egress_policy_free (&p);

  policy_bad ("[]", "object");
  policy_bad ("{\"allow\": [], \"deny\": []}", "\"deny\"");
  policy_bad ("{\"allow\": [], \"allow\": []}", "\"allow\"");
  policy_bad ("{\"allow\": \"a.test\"}", "allow must be an array");
  policy_bad ("{\"allow\": [1]}", "allow must be an array");
  policy_bad ("{\"allow\": [\"a.test\", \"*\"]}", "allow: \"*\"");
  policy_bad ("{\"resolve\": []}", "resolve must be an object");
  policy_bad ("{\"resolve\": {\"a.test\": \"nope\"}}", "\"a.test\" must map");
  policy_bad ("{\"resolve\": {\"a.test\": 1}}", "\"a.test\" must map");
  policy_bad ("{\"resolve\": {\"a_b\": \"1.2.3.4\"}}", "resolve: \"a_b\"");
  policy_bad ("{\"resolve\": {\"a.test\": \"1.2.3.4\", \"A.test\": \"1.2.3.5\"}}",
              "twice");
  policy_bad ("{\"allow_ranges\": [\"10.0.0.1/8\"]}", "allow_ranges: \"10.0.0.1/8\"");
  policy_bad ("{\"allow\": [\"a.test\"], \"upstream_ranges\": {}}",
              "upstream_ranges must be an array");

  /* At most EGRESS_MAX_RULES entries. */
  cJSON *obj = cJSON_CreateObject ();
  cJSON *arr = cJSON_AddArrayToObject (obj, "allow");
  for (int i = 0; i <= EGRESS_MAX_RULES; i++)
    cJSON_AddItemToArray (arr, cJSON_CreateString ("a.test"));
  char *err = NULL;
  assert_int_equal (egress_policy_from_json (obj, &p, &err), -1);
  assert_non_null (strstr (err, "more than 256"));
  free (err);
  cJSON_Delete (obj);
}

static void
test_match (void **state)
{
  (void) state;
  struct egress_policy p = policy (
      "{\"allow\": [\"allowed.test:8080\", \"*.example.com:443\","
      " \"*.deep.example.com:80\", \"example.com\"]}");
  const struct egress_rule *r = egress_match_name (&p, "allowed.test");
  assert_non_null (r);
  assert_string_equal (r->text, "allowed.test:8080");
  assert_true (egress_rule_allows_port (r, 8080));
  assert_false (egress_rule_allows_port (r, 443));
  assert_ptr_equal (egress_match_name (&p, "ALLOWED.test."), r);
  assert_null (egress_match_name (&p, "sub.allowed.test"));
  assert_null (egress_match_name (&p, "allowed.test.evil"));
  assert_null (egress_match_name (&p, "xallowed.test"));

  /* A wildcard: strictly below, any depth; the first rule wins. */
  r = egress_match_name (&p, "a.example.com");
  assert_string_equal (r->text, "*.example.com:443");
  r = egress_match_name (&p, "a.b.deep.example.com");
  assert_string_equal (r->text, "*.example.com:443");
  r = egress_match_name (&p, "example.com");
  assert_string_equal (r->text, "example.com");
  assert_true (egress_rule_allows_port (r, 80));
  assert_true (egress_rule_allows_port (r, 443));
  assert_false (egress_rule_allows_port (r, 22));
  assert_null (egress_match_name (&p, "badexample.com"));
  assert_null (egress_match_name (&p, ".example.com"));
  assert_null (egress_match_name (&p, "a..example.com"));
  assert_null (egress_match_name (&p, ""));
  assert_null (egress_match_name (&p, "a.example.com\n"));
  assert_false (egress_rule_allows_port (NULL, 80));
  egress_policy_free (&p);
}

static enum egress_range
classify (const char *text)
{
  uint8_t a[16] = { 0 };
  int family = strchr (text, ':') ? AF_INET6 : AF_INET;
  assert_int_equal (inet_pton (family, text, a), 1);
  return egress_classify (family, a);
}

static void
test_classify (void **state)
{
  (void) state;
  static const struct
  {
    const char *addr;
    enum egress_range r;
  } cases[] = {
    { "0.0.0.0", EGRESS_UNUSABLE },       { "0.255.1.1", EGRESS_UNUSABLE },
    { "1.1.1.1", EGRESS_PUBLIC },         { "9.255.255.255", EGRESS_PUBLIC },
    { "10.0.0.1", EGRESS_PRIVATE },       { "10.255.255.255", EGRESS_PRIVATE },
    { "11.0.0.0", EGRESS_PUBLIC },        { "100.63.255.255", EGRESS_PUBLIC },
    { "100.64.0.0", EGRESS_PRIVATE },     { "100.127.255.255", EGRESS_PRIVATE },
    { "100.128.0.0", EGRESS_PUBLIC },     { "127.0.0.1", EGRESS_LOOPBACK },
    { "127.255.0.2", EGRESS_LOOPBACK },   { "128.0.0.0", EGRESS_PUBLIC },
    { "169.254.169.254", EGRESS_METADATA },
    { "169.254.169.253", EGRESS_LINK_LOCAL },
    { "169.254.0.1", EGRESS_LINK_LOCAL }, { "169.255.0.1", EGRESS_PUBLIC },
    { "172.15.255.255", EGRESS_PUBLIC },  { "172.16.0.0", EGRESS_PRIVATE },
    { "172.31.255.255", EGRESS_PRIVATE }, { "172.32.0.0", EGRESS_PUBLIC },
    { "192.0.0.8", EGRESS_UNUSABLE },     { "192.0.1.1", EGRESS_PUBLIC },
    { "192.0.2.1", EGRESS_UNUSABLE },     { "192.167.255.255", EGRESS_PUBLIC },
    { "192.168.1.1", EGRESS_PRIVATE },    { "192.169.0.0", EGRESS_PUBLIC },
    { "198.17.255.255", EGRESS_PUBLIC },  { "198.18.0.1", EGRESS_UNUSABLE },
    { "198.19.255.255", EGRESS_UNUSABLE }, { "198.20.0.0", EGRESS_PUBLIC },
    { "198.51.100.7", EGRESS_UNUSABLE },  { "203.0.113.9", EGRESS_UNUSABLE },
    { "203.0.114.0", EGRESS_PUBLIC },     { "223.255.255.255", EGRESS_PUBLIC },
    { "224.0.0.1", EGRESS_UNUSABLE },     { "239.255.255.255", EGRESS_UNUSABLE },
    { "240.0.0.1", EGRESS_UNUSABLE },     { "255.255.255.255", EGRESS_UNUSABLE },
    { "::", EGRESS_UNUSABLE },            { "::1", EGRESS_LOOPBACK },
    { "::2", EGRESS_PUBLIC },             { "2606:4700::1111", EGRESS_PUBLIC },
    { "fd00:ec2::254", EGRESS_METADATA }, { "fd00:ec2::253", EGRESS_PRIVATE },
    { "fc00::1", EGRESS_PRIVATE },        { "fdff::1", EGRESS_PRIVATE },
    { "fe00::1", EGRESS_PUBLIC },         { "fe80::1", EGRESS_LINK_LOCAL },
    { "febf::1", EGRESS_LINK_LOCAL },     { "fec0::1", EGRESS_PUBLIC },
    { "ff02::1", EGRESS_UNUSABLE },       { "2001:db8::1", EGRESS_UNUSABLE },
    { "2001:db9::1", EGRESS_PUBLIC },
    { "::ffff:127.0.0.1", EGRESS_LOOPBACK },
    { "::ffff:169.254.169.254", EGRESS_METADATA },
    { "::ffff:10.1.1.1", EGRESS_PRIVATE },
    { "::ffff:8.8.8.8", EGRESS_PUBLIC },
    { "::ffff:0.0.0.0", EGRESS_UNUSABLE },
    { "64:ff9b::169.254.169.254", EGRESS_METADATA },
    { "64:ff9b::127.0.0.1", EGRESS_LOOPBACK },
    { "64:ff9b::8.8.8.8", EGRESS_PUBLIC },
    { "64:ff9b:1::8.8.8.8", EGRESS_PUBLIC },
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    {
      enum egress_range r = classify (cases[i].addr);
      if (r != cases[i].r)
        fail_msg ("%s: %s, expected %s", cases[i].addr, egress_range_name (r),
                  egress_range_name (cases[i].r));
    }
  uint8_t zero[16] = { 0 };
  assert_int_equal (egress_classify (AF_UNIX, zero), EGRESS_UNUSABLE);
  assert_string_equal (egress_range_name (EGRESS_LOOPBACK), "loopback");
  assert_string_equal (egress_range_name (EGRESS_LINK_LOCAL), "link-local");
}

static bool
allowed (const struct egress_policy *p, const char *text, char *why_out)
{
  uint8_t a[16] = { 0 };
  int family = strchr (text, ':') ? AF_INET6 : AF_INET;
  assert_int_equal (inet_pton (family, text, a), 1);
  char buf[200];
  const char *why = "unset";
  bool ok = egress_address_allowed (p, family, a, buf, sizeof buf, &why);
  if (ok)
    assert_null (why);
  else
    {
      assert_non_null (why);
      strcpy (why_out, why);
    }
  return ok;
}

static void
test_address_allowed (void **state)
{
  (void) state;
  char why[200];
  struct egress_policy open = policy ("{}");
  assert_true (allowed (&open, "1.1.1.1", why));
  assert_true (allowed (&open, "2606:4700::1111", why));
  assert_false (allowed (&open, "127.0.0.2", why));
  assert_string_equal (why, "127.0.0.2 is a loopback address and no "
                            "network.allow_ranges entry covers it");
  assert_false (allowed (&open, "169.254.169.254", why));
  assert_string_equal (why, "169.254.169.254 is a metadata address and no "
                            "network.allow_ranges entry covers it");
  assert_false (allowed (&open, "255.255.255.255", why));
  assert_string_equal (why, "255.255.255.255 is an unusable address and no "
                            "network.allow_ranges entry covers it");
  assert_false (allowed (&open, "fd00:ec2::254", why));
  assert_false (allowed (&open, "::ffff:10.0.0.1", why));
  assert_string_equal (why, "10.0.0.1 is a private address and no "
                            "network.allow_ranges entry covers it");
  /* No buffer: a fixed text still says why. */
  uint8_t a[16] = { 10, 0, 0, 1 };
  const char *w = NULL;
  assert_false (egress_address_allowed (&open, AF_INET, a, NULL, 0, &w));
  assert_non_null (w);
  egress_policy_free (&open);

  /* The tests' guard: nothing outside 127/8 (public addresses too). */
  struct egress_policy p = policy ("{\"allow_ranges\": [\"127.0.0.1/32\", "
                                   "\"::1\"], \"upstream_ranges\": "
                                   "[\"127.0.0.0/8\", \"::1/128\"]}");
  assert_true (allowed (&p, "127.0.0.1", why));
  assert_true (allowed (&p, "::ffff:127.0.0.1", why));
  assert_true (allowed (&p, "::1", why));
  assert_false (allowed (&p, "127.0.0.2", why));
  assert_string_equal (why, "127.0.0.2 is a loopback address and no "
                            "network.allow_ranges entry covers it");
  assert_false (allowed (&p, "1.1.1.1", why));
  assert_string_equal (why, "1.1.1.1 is outside network.upstream_ranges");
  assert_false (allowed (&p, "10.0.0.1", why));
  assert_string_equal (why, "10.0.0.1 is outside network.upstream_ranges");
  assert_false (allowed (&p, "2606:4700::1111", why));
  assert_false (allowed (&p, "64:ff9b::127.0.0.1", why));
  egress_policy_free (&p);

  /* allow_ranges opens a special range, only where it says. */
  p = policy ("{\"allow_ranges\": [\"10.1.0.0/16\", \"fd00::/8\"]}");
  assert_true (allowed (&p, "10.1.2.3", why));
  assert_false (allowed (&p, "10.2.3.4", why));
  assert_true (allowed (&p, "fd12::1", why));
  assert_false (allowed (&p, "fc00::1", why));
  assert_true (allowed (&p, "8.8.8.8", why));
  egress_policy_free (&p);

  /* A range may open the metadata address, but only if written so. */
  p = policy ("{\"allow_ranges\": [\"169.254.169.254\"]}");
  assert_true (allowed (&p, "169.254.169.254", why));
  assert_false (allowed (&p, "169.254.169.253", why));
  egress_policy_free (&p);
}

static struct egress_rule *
rules (const char *const *texts, size_t n)
{
  struct egress_rule *r = calloc (n ? n : 1, sizeof *r);
  char *err = NULL;
  for (size_t i = 0; i < n; i++)
    assert_int_equal (egress_rule_parse (texts[i], &r[i], &err), 0);
  return r;
}

static int
caps (const char *json, const struct egress_rule *admin, size_t n_admin,
      const struct egress_cidr *ranges, size_t n_ranges, char **err)
{
  struct egress_policy p = policy (json);
  *err = NULL;
  int rc = egress_policy_check_caps (&p, admin, n_admin, ranges, n_ranges,
                                     err);
  egress_policy_free (&p);
  return rc;
}

static void
test_caps (void **state)
{
  (void) state;
  static const char *const admin_texts[]
      = { "*.debian.org", "pypi.org:443", "files.test:80,443,8080" };
  struct egress_rule *admin = rules (admin_texts, 3);
  struct egress_cidr ranges[2];
  char *err = NULL;
  assert_int_equal (egress_cidr_parse ("10.0.0.0/8", &ranges[0], &err), 0);
  assert_int_equal (egress_cidr_parse ("fd00::/8", &ranges[1], &err), 0);

  static const char *const inside[] = {
    ("{\"allow\": [\"deb.debian.org\", \"*.deb.debian.org\", "
     "\"*.debian.org:22\"]}"),
    "{\"allow\": [\"pypi.org:443\", \"files.test:8080,80\"]}",
    "{\"allow_ranges\": [\"10.1.0.0/16\", \"10.0.0.0/8\", \"fd00:1::1\"]}",
    "{}",
  };
  for (size_t i = 0; i < sizeof inside / sizeof inside[0]; i++)
    if (caps (inside[i], admin, 3, ranges, 2, &err) != 0)
      fail_msg ("%s: %s", inside[i], err);

  static const struct
  {
    const char *json, *named;
  } outside[] = {
    { "{\"allow\": [\"deb.debian.org\", \"debian.org\"]}", "\"debian.org\"" },
    { "{\"allow\": [\"*.org\"]}", "\"*.org\"" },
    { "{\"allow\": [\"pypi.org\"]}", "\"pypi.org\"" }, /* 80 and 443 */
    { "{\"allow\": [\"*.pypi.org:443\"]}", "\"*.pypi.org:443\"" },
    { "{\"allow\": [\"files.test:22\"]}", "\"files.test:22\"" },
    { "{\"allow\": [\"a.files.test\"]}", "\"a.files.test\"" },
    { "{\"allow_ranges\": [\"10.0.0.0/7\"]}", "\"10.0.0.0/7\"" },
    { "{\"allow_ranges\": [\"127.0.0.1\"]}", "\"127.0.0.1\"" },
    { "{\"allow_ranges\": [\"::ffff:10.0.0.1\"]}", "\"::ffff:10.0.0.1\"" },
  };
  for (size_t i = 0; i < sizeof outside / sizeof outside[0]; i++)
    {
      if (caps (outside[i].json, admin, 3, ranges, 2, &err) == 0)
        fail_msg ("accepted: %s", outside[i].json);
      if (!strstr (err, outside[i].named))
        fail_msg ("%s: %s", outside[i].json, err);
      free (err);
    }
  /* No caps at all: anything goes; names capped, ranges not, and back. */
  assert_int_equal (caps ("{\"allow\": [\"*.com\"], \"allow_ranges\": "
                          "[\"0.0.0.0/0\"]}", NULL, 0, NULL, 0, &err), 0);
  assert_int_equal (caps ("{\"allow_ranges\": [\"0.0.0.0/0\"]}", admin, 3,
                          NULL, 0, &err), 0);
  assert_int_equal (caps ("{\"allow\": [\"*.com\"]}", NULL, 0, ranges, 2,
                          &err), 0);

  egress_rules_free (admin, 3);
  free (ranges[0].text);
  free (ranges[1].text);
}

static void
hash_of (const char *json, char out[17])
{
  struct egress_policy p = policy (json);
  egress_policy_hash (&p, out);
  egress_policy_free (&p);
  assert_int_equal (strlen (out), 16);
  assert_int_equal (strspn (out, "0123456789abcdef"), 16);
}

static void
test_hash (void **state)
{
  (void) state;
  char a[17], b[17];
  const char *base = "{\"allow\": [\"a.test\", \"b.test\"],"
                     " \"resolve\": {\"a.test\": \"127.0.0.1\", "
                     "\"b.test\": \"::1\"},"
                     " \"upstream_ranges\": [\"127.0.0.0/8\"]}";
  hash_of (base, a);
  hash_of (base, b);
  assert_string_equal (a, b);
  /* Key order and resolve order do not matter. */
  hash_of ("{\"upstream_ranges\": [\"127.0.0.0/8\"],"
           " \"resolve\": {\"b.test\": \"0::1\", \"a.test\": \"127.0.0.1\"},"
           " \"allow\": [\"a.test\", \"b.test\"]}", b);
  assert_string_equal (a, b);
  /* Everything else does. */
  static const char *const other[] = {
    ("{\"allow\": [\"b.test\", \"a.test\"], \"resolve\": {\"a.test\": "
    "\"127.0.0.1\", \"b.test\": \"::1\"}, \"upstream_ranges\": [\"127.0.0.0/8\"]}"),
    ("{\"allow\": [\"a.test\", \"b.test:443\"], \"resolve\": {\"a.test\": "
    "\"127.0.0.1\", \"b.test\": \"::1\"}, \"upstream_ranges\": [\"127.0.0.0/8\"]}"),
    ("{\"allow\": [\"a.test\", \"b.test\"], \"resolve\": {\"a.test\": "
    "\"127.0.0.2\", \"b.test\": \"::1\"}, \"upstream_ranges\": [\"127.0.0.0/8\"]}"),
    ("{\"allow\": [\"a.test\", \"b.test\"], \"resolve\": {\"a.test\": "
    "\"127.0.0.1\", \"b.test\": \"::1\"}, \"upstream_ranges\": [\"127.0.0.0/16\"]}"),
    ("{\"allow\": [\"a.test\", \"b.test\"], \"resolve\": {\"a.test\": "
    "\"127.0.0.1\", \"b.test\": \"::1\"}, \"allow_ranges\": [\"127.0.0.0/8\"]}"),
    ("{\"allow\": [\"a.test\", \"b.test\"], \"resolve\": {\"a.test\": "
    "\"127.0.0.1\"}, \"upstream_ranges\": [\"127.0.0.0/8\"]}"),
    "{}",
  };
  for (size_t i = 0; i < sizeof other / sizeof other[0]; i++)
    {
      hash_of (other[i], b);
      if (strcmp (a, b) == 0)
        fail_msg ("same hash for %s", other[i]);
    }
  /* The value itself is pinned: a change of the canonical form is a
   * change of every posture's hash, and must be made on purpose. */
  hash_of ("{}", b);
  char expect[17];
  uint64_t h = 0xcbf29ce484222325ULL;
  const char *canon = "{\"allow\":[],\"resolve\":{},\"allow_ranges\":[],"
                      "\"upstream_ranges\":[]}";
  for (const char *c = canon; *c; c++)
    h = (h ^ (uint8_t) *c) * 0x100000001b3ULL;
  snprintf (expect, sizeof expect, "%016llx", (unsigned long long) h);
  assert_string_equal (b, expect);
}

int
main (void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test (test_rule_parse),
    cmocka_unit_test (test_cidr_parse),
    cmocka_unit_test (test_from_json),
    cmocka_unit_test (test_match),
    cmocka_unit_test (test_classify),
    cmocka_unit_test (test_address_allowed),
    cmocka_unit_test (test_caps),
    cmocka_unit_test (test_hash),
  };
  return cmocka_run_group_tests (tests, NULL, NULL);
}
