/* SPDX-License-Identifier: MIT */
/* The egress allowlist: parsing, matching, address classes, the
 * administrator's caps and the policy's hash (egress_policy.h). */
#define _GNU_SOURCE
#include "egress_policy.h"

#include <arpa/inet.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../backends/fnv1a.h"
#include "xalloc.h"

/* ---- names ---- */

/* Lower-case, without one trailing dot, into out (EGRESS_MAX_NAME + 1):
 * labels of [a-z0-9-], 1..63 bytes, 253 in all.  NULL, or what is wrong. */
static const char *
normalize_name (const char *in, size_t n, char *out)
{
  if (n > 0 && in[n - 1] == '.')
    n--;
  if (n == 0)
    return "the name is empty";
  if (n > EGRESS_MAX_NAME)
    return "the name is longer than 253 bytes";
  size_t label = 0;
  for (size_t i = 0; i < n; i++)
    {
      char c = in[i];
      if (c >= 'A' && c <= 'Z')
        c = (char) (c - 'A' + 'a');
      if (c == '.')
        {
          if (label == 0)
            return "the name has an empty label";
          label = 0;
        }
      else if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')
        {
          if (++label > 63)
            return "a label of the name is longer than 63 bytes";
        }
      else
        return "a name may hold only letters, digits, '-' and '.'";
      out[i] = c;
    }
  if (label == 0)
    return "the name has an empty label";
  out[n] = '\0';
  return NULL;
}

static int
parse_ports (const char *s, struct egress_rule *r, const char **why)
{
  r->n_ports = 0;
  for (;;)
    {
      unsigned long v = 0;
      size_t digits = 0;
      while (s[digits] >= '0' && s[digits] <= '9')
        {
          if (digits < 6)
            v = v * 10 + (unsigned long) (s[digits] - '0');
          digits++;
        }
      if (digits == 0 || digits > 5 || v < 1 || v > 65535
          || (s[digits] != ',' && s[digits] != '\0'))
        {
          *why = "a port must be a number from 1 to 65535";
          return -1;
        }
      bool dup = false;
      for (size_t i = 0; i < r->n_ports; i++)
        dup |= r->ports[i] == v;
      if (!dup)
        {
          if (r->n_ports == EGRESS_MAX_PORTS)
            {
              *why = "more than 16 ports";
              return -1;
            }
          r->ports[r->n_ports++] = (uint16_t) v;
        }
      if (s[digits] == '\0')
        return 0;
      s += digits + 1;
    }
}

int
egress_rule_parse (const char *text, struct egress_rule *out, char **err)
{
  memset (out, 0, sizeof *out);
  const char *why = NULL;
  const char *name = text;
  bool wildcard = false;
  if (strncmp (name, "*.", 2) == 0)
    {
      wildcard = true;
      name += 2;
    }
  const char *colon = strchr (name, ':');
  size_t n = colon ? (size_t) (colon - name) : strlen (name);
  char domain[EGRESS_MAX_NAME + 1];
  if (strchr (name, '*'))
    why = "'*' may only stand first, as \"*.\" before a name";
  else if (wildcard && (n == 0 || (n == 1 && name[0] == '.')))
    why = "a wildcard needs a name after \"*.\"";
  else
    why = normalize_name (name, n, domain);
  if (!why && colon)
    parse_ports (colon + 1, out, &why);
  if (why)
    {
      *err = xasprintf ("\"%s\": %s", text, why);
      return -1;
    }
  if (!colon)
    {
      out->ports[0] = 80;
      out->ports[1] = 443;
      out->n_ports = 2;
    }
  out->text = xstrdup (text);
  out->domain = xstrdup (domain);
  out->wildcard = wildcard;
  return 0;
}

/* The address text of a CIDR or a mapping: v4 first, then v6. */
static int
parse_address (const char *s, int *family, uint8_t addr[16])
{
  memset (addr, 0, 16);
  if (inet_pton (AF_INET, s, addr) == 1)
    *family = AF_INET;
  else if (inet_pton (AF_INET6, s, addr) == 1)
    *family = AF_INET6;
  else
    return -1;
  return 0;
}

int
egress_cidr_parse (const char *text, struct egress_cidr *out, char **err)
{
  memset (out, 0, sizeof *out);
  char buf[INET6_ADDRSTRLEN + 8];
  const char *slash = strchr (text, '/');
  size_t n = slash ? (size_t) (slash - text) : strlen (text);
  if (n >= INET6_ADDRSTRLEN)
    goto bad_address;
  memcpy (buf, text, n);
  buf[n] = '\0';
  if (parse_address (buf, &out->family, out->addr) < 0)
    goto bad_address;
  unsigned max = out->family == AF_INET ? 32 : 128;
  out->prefix = max;
  if (slash)
    {
      const char *p = slash + 1;
      unsigned v = 0;
      size_t digits = 0;
      while (p[digits] >= '0' && p[digits] <= '9' && digits < 4)
        v = v * 10 + (unsigned) (p[digits++] - '0');
      if (digits == 0 || p[digits] != '\0' || v > max)
        {
          *err = xasprintf ("\"%s\": the prefix length must be a number "
                            "from 0 to %u", text, max);
          return -1;
        }
      out->prefix = v;
    }
  /* Bits past the prefix would mean the writer expected another range. */
  for (unsigned bit = out->prefix; bit < max; bit++)
    if (out->addr[bit / 8] & (0x80 >> (bit % 8)))
      {
        *err = xasprintf ("\"%s\": the address has bits set past the /%u "
                          "prefix", text, out->prefix);
        return -1;
      }
  out->text = xstrdup (text);
  return 0;

bad_address:
  *err = xasprintf ("\"%s\": not an IPv4 or IPv6 address or CIDR range",
                    text);
  return -1;
}

/* ---- the policy as JSON ---- */

void
egress_rules_free (struct egress_rule *r, size_t n)
{
  for (size_t i = 0; i < n; i++)
    {
      free (r[i].text);
      free (r[i].domain);
    }
  free (r);
}

void
egress_cidrs_free (struct egress_cidr *c, size_t n)
{
  for (size_t i = 0; i < n; i++)
    free (c[i].text);
  free (c);
}

void
egress_policy_free (struct egress_policy *p)
{
  if (!p)
    return;
  egress_rules_free (p->allow, p->n_allow);
  for (size_t i = 0; i < p->n_resolve; i++)
    free (p->resolve[i].name);
  free (p->resolve);
  egress_cidrs_free (p->allow_ranges, p->n_allow_ranges);
  egress_cidrs_free (p->upstream_ranges, p->n_upstream_ranges);
  memset (p, 0, sizeof *p);
}

/* An array of strings at key, each parsed by one: -1 and *err naming the
 * key on a wrong type or a bad entry. */
static int
string_array (const cJSON *arr, const char *key, size_t *count,
              char **err)
{
  if (!cJSON_IsArray (arr))
    {
      *err = xasprintf ("%s must be an array of strings", key);
      return -1;
    }
  size_t n = 0;
  const cJSON *e;
  cJSON_ArrayForEach (e, arr)
  {
    if (!cJSON_IsString (e))
      {
        *err = xasprintf ("%s must be an array of strings", key);
        return -1;
      }
    n++;
  }
  if (n > EGRESS_MAX_RULES)
    {
      *err = xasprintf ("%s has more than %d entries", key, EGRESS_MAX_RULES);
      return -1;
    }
  *count = n;
  return 0;
}

static int
prefix_err (const char *key, char **err)
{
  char *inner = *err;
  *err = xasprintf ("%s: %s", key, inner);
  free (inner);
  return -1;
}

static int
parse_cidrs (const cJSON *arr, const char *key, struct egress_cidr **out,
             size_t *n_out, char **err)
{
  size_t n;
  if (string_array (arr, key, &n, err) < 0)
    return -1;
  *out = xcalloc (n, sizeof **out);
  const cJSON *e;
  cJSON_ArrayForEach (e, arr)
  {
    if (egress_cidr_parse (e->valuestring, &(*out)[*n_out], err) < 0)
      return prefix_err (key, err);
    (*n_out)++;
  }
  return 0;
}

static int
parse_resolve (const cJSON *obj, struct egress_policy *p, char **err)
{
  if (!cJSON_IsObject (obj))
    {
      *err = xstrdup ("resolve must be an object of name: address");
      return -1;
    }
  size_t n = 0;
  const cJSON *e;
  cJSON_ArrayForEach (e, obj) n++;
  if (n > EGRESS_MAX_RULES)
    {
      *err = xasprintf ("resolve has more than %d entries", EGRESS_MAX_RULES);
      return -1;
    }
  p->resolve = xcalloc (n, sizeof *p->resolve);
  cJSON_ArrayForEach (e, obj)
  {
    char name[EGRESS_MAX_NAME + 1];
    const char *why = normalize_name (e->string, strlen (e->string), name);
    if (why)
      {
        *err = xasprintf ("resolve: \"%s\": %s", e->string, why);
        return -1;
      }
    for (size_t i = 0; i < p->n_resolve; i++)
      if (strcmp (p->resolve[i].name, name) == 0)
        {
          *err = xasprintf ("resolve: \"%s\" is given twice", e->string);
          return -1;
        }
    struct egress_mapping *m = &p->resolve[p->n_resolve];
    if (!cJSON_IsString (e)
        || parse_address (e->valuestring, &m->family, m->addr) < 0)
      {
        *err = xasprintf ("resolve: \"%s\" must map to an IPv4 or IPv6 "
                          "address", e->string);
        return -1;
      }
    m->name = xstrdup (name);
    p->n_resolve++;
  }
  return 0;
}

int
egress_policy_from_json (const cJSON *obj, struct egress_policy *p,
                         char **err)
{
  memset (p, 0, sizeof *p);
  if (!cJSON_IsObject (obj))
    {
      *err = xstrdup ("the egress policy must be a JSON object");
      return -1;
    }
  const cJSON *e;
  cJSON_ArrayForEach (e, obj)
  {
    int rc = 0;
    if (strcmp (e->string, "allow") == 0 && !p->allow)
      {
        size_t n;
        rc = string_array (e, "allow", &n, err);
        if (rc == 0)
          {
            p->allow = xcalloc (n, sizeof *p->allow);
            const cJSON *s;
            cJSON_ArrayForEach (s, e)
            {
              rc = egress_rule_parse (s->valuestring, &p->allow[p->n_allow],
                                      err);
              if (rc < 0)
                {
                  prefix_err ("allow", err);
                  break;
                }
              p->n_allow++;
            }
          }
      }
    else if (strcmp (e->string, "resolve") == 0 && !p->resolve)
      rc = parse_resolve (e, p, err);
    else if (strcmp (e->string, "allow_ranges") == 0 && !p->allow_ranges)
      rc = parse_cidrs (e, "allow_ranges", &p->allow_ranges,
                        &p->n_allow_ranges, err);
    else if (strcmp (e->string, "upstream_ranges") == 0
             && !p->upstream_ranges)
      rc = parse_cidrs (e, "upstream_ranges", &p->upstream_ranges,
                        &p->n_upstream_ranges, err);
    else
      {
        *err = xasprintf ("unknown or repeated key \"%s\" in the egress "
                          "policy", e->string);
        rc = -1;
      }
    if (rc < 0)
      {
        egress_policy_free (p);
        return -1;
      }
  }
  return 0;
}

/* ---- matching ---- */

/* Does a rule with this domain/wildcard match the normalized name? */
static bool
domain_matches (const char *domain, bool wildcard, const char *name)
{
  if (!wildcard)
    return strcmp (domain, name) == 0;
  size_t d = strlen (domain), n = strlen (name);
  return n > d + 1 && name[n - d - 1] == '.' && strcmp (name + n - d, domain) == 0;
}

const struct egress_rule *
egress_match_name (const struct egress_policy *p, const char *name)
{
  char norm[EGRESS_MAX_NAME + 1];
  if (!p || !name || normalize_name (name, strlen (name), norm))
    return NULL;
  for (size_t i = 0; i < p->n_allow; i++)
    if (domain_matches (p->allow[i].domain, p->allow[i].wildcard, norm))
      return &p->allow[i];
  return NULL;
}

bool
egress_rule_allows_port (const struct egress_rule *r, uint16_t port)
{
  for (size_t i = 0; r && i < r->n_ports; i++)
    if (r->ports[i] == port)
      return true;
  return false;
}

/* ---- addresses ---- */

static bool
in_prefix (const uint8_t *addr, const uint8_t *net, unsigned prefix)
{
  unsigned full = prefix / 8, rest = prefix % 8;
  if (memcmp (addr, net, full) != 0)
    return false;
  if (rest == 0)
    return true;
  uint8_t mask = (uint8_t) (0xff << (8 - rest));
  return (addr[full] & mask) == (net[full] & mask);
}

static enum egress_range
classify4 (const uint8_t a[4])
{
  static const struct
  {
    uint8_t net[4];
    unsigned prefix;
    enum egress_range r;
  } table[] = {
    /* Order matters: the metadata address before link-local. */
    { { 169, 254, 169, 254 }, 32, EGRESS_METADATA },
    { { 0, 0, 0, 0 }, 8, EGRESS_UNUSABLE },
    { { 10, 0, 0, 0 }, 8, EGRESS_PRIVATE },
    { { 100, 64, 0, 0 }, 10, EGRESS_PRIVATE },
    { { 127, 0, 0, 0 }, 8, EGRESS_LOOPBACK },
    { { 169, 254, 0, 0 }, 16, EGRESS_LINK_LOCAL },
    { { 172, 16, 0, 0 }, 12, EGRESS_PRIVATE },
    { { 192, 0, 0, 0 }, 24, EGRESS_UNUSABLE },
    { { 192, 0, 2, 0 }, 24, EGRESS_UNUSABLE },
    { { 192, 168, 0, 0 }, 16, EGRESS_PRIVATE },
    { { 198, 18, 0, 0 }, 15, EGRESS_UNUSABLE },
    { { 198, 51, 100, 0 }, 24, EGRESS_UNUSABLE },
    { { 203, 0, 113, 0 }, 24, EGRESS_UNUSABLE },
    { { 224, 0, 0, 0 }, 4, EGRESS_UNUSABLE },
    { { 240, 0, 0, 0 }, 4, EGRESS_UNUSABLE }, /* with 255.255.255.255 */
  };
  for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
    if (in_prefix (a, table[i].net, table[i].prefix))
      return table[i].r;
  return EGRESS_PUBLIC;
}

static const uint8_t v4_mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
static const uint8_t nat64[12] = { 0, 0x64, 0xff, 0x9b };

enum egress_range
egress_classify (int family, const uint8_t addr[16])
{
  if (family == AF_INET)
    return classify4 (addr);
  if (family != AF_INET6)
    return EGRESS_UNUSABLE;
  static const uint8_t any[16], loop[16] = { [15] = 1 };
  static const uint8_t metadata[16]
      = { 0xfd, 0x00, 0x0e, 0xc2, [14] = 0x02, [15] = 0x54 };
  static const uint8_t doc[4] = { 0x20, 0x01, 0x0d, 0xb8 };
  if (memcmp (addr, any, 16) == 0)
    return EGRESS_UNUSABLE;
  if (memcmp (addr, loop, 16) == 0)
    return EGRESS_LOOPBACK;
  if (memcmp (addr, metadata, 16) == 0)
    return EGRESS_METADATA;
  /* An IPv4 address in IPv6 clothes reaches the IPv4 host it embeds. */
  if (memcmp (addr, v4_mapped, 12) == 0 || memcmp (addr, nat64, 12) == 0)
    return classify4 (addr + 12);
  if ((addr[0] & 0xfe) == 0xfc)
    return EGRESS_PRIVATE;
  if (addr[0] == 0xfe && (addr[1] & 0xc0) == 0x80)
    return EGRESS_LINK_LOCAL;
  if (addr[0] == 0xff)
    return EGRESS_UNUSABLE;
  if (memcmp (addr, doc, 4) == 0)
    return EGRESS_UNUSABLE;
  return EGRESS_PUBLIC;
}

const char *
egress_range_name (enum egress_range r)
{
  switch (r)
    {
    case EGRESS_PUBLIC:
      return "public";
    case EGRESS_LOOPBACK:
      return "loopback";
    case EGRESS_PRIVATE:
      return "private";
    case EGRESS_LINK_LOCAL:
      return "link-local";
    case EGRESS_METADATA:
      return "metadata";
    case EGRESS_UNUSABLE:
      return "unusable";
    }
  return "unknown";
}

bool
egress_cidr_contains (const struct egress_cidr *c, int family,
                      const uint8_t addr[16])
{
  return c && c->family == family && in_prefix (addr, c->addr, c->prefix);
}

static bool
any_contains (const struct egress_cidr *c, size_t n, int family,
              const uint8_t addr[16])
{
  for (size_t i = 0; i < n; i++)
    if (egress_cidr_contains (&c[i], family, addr))
      return true;
  return false;
}

bool
egress_address_allowed (const struct egress_policy *p, int family,
                        const uint8_t addr[16], char *buf, size_t len,
                        const char **why)
{
  /* A v4-mapped address is the IPv4 host: ranges are checked on that. */
  uint8_t a[16] = { 0 };
  if (family == AF_INET6 && memcmp (addr, v4_mapped, 12) == 0)
    {
      family = AF_INET;
      memcpy (a, addr + 12, 4);
    }
  else
    memcpy (a, addr, family == AF_INET ? 4 : 16);

  char text[INET6_ADDRSTRLEN] = "?";
  inet_ntop (family, a, text, sizeof text);
  if (p->n_upstream_ranges
      && !any_contains (p->upstream_ranges, p->n_upstream_ranges, family, a))
    {
      if (buf && len)
        snprintf (buf, len, "%s is outside network.upstream_ranges", text);
      *why = buf && len ? buf : "the address is outside network.upstream_ranges";
      return false;
    }
  enum egress_range r = egress_classify (family, a);
  if (r != EGRESS_PUBLIC
      && !any_contains (p->allow_ranges, p->n_allow_ranges, family, a))
    {
      if (buf && len)
        snprintf (buf, len,
                  "%s is %s %s address and no network.allow_ranges entry "
                  "covers it", text, r == EGRESS_UNUSABLE ? "an" : "a",
                  egress_range_name (r));
      *why = buf && len ? buf
                        : "the address is in a special range and no "
                          "network.allow_ranges entry covers it";
      return false;
    }
  *why = NULL;
  return true;
}

/* ---- the administrator's caps ---- */

/* Ports written after the name: an admin rule without them allows any. */
static bool
ports_given (const struct egress_rule *r)
{
  return strchr (r->text, ':') != NULL;
}

static bool
rule_covers (const struct egress_rule *admin, const struct egress_rule *user)
{
  bool names;
  if (!admin->wildcard)
    names = !user->wildcard && strcmp (admin->domain, user->domain) == 0;
  else if (!user->wildcard)
    names = domain_matches (admin->domain, true, user->domain);
  else /* *.U matches names below U: inside *.D when U is D or below it */
    names = strcmp (admin->domain, user->domain) == 0
            || domain_matches (admin->domain, true, user->domain);
  if (!names)
    return false;
  if (!ports_given (admin))
    return true;
  for (size_t i = 0; i < user->n_ports; i++)
    if (!egress_rule_allows_port (admin, user->ports[i]))
      return false;
  return true;
}

static bool
cidr_inside (const struct egress_cidr *outer, const struct egress_cidr *inner)
{
  return outer->family == inner->family && outer->prefix <= inner->prefix
         && in_prefix (inner->addr, outer->addr, outer->prefix);
}

int
egress_policy_check_caps (const struct egress_policy *p,
                          const struct egress_rule *admin_allow,
                          size_t n_admin_allow,
                          const struct egress_cidr *admin_ranges,
                          size_t n_admin_ranges, char **err)
{
  if (n_admin_allow)
    for (size_t i = 0; i < p->n_allow; i++)
      {
        bool ok = false;
        for (size_t j = 0; j < n_admin_allow && !ok; j++)
          ok = rule_covers (&admin_allow[j], &p->allow[i]);
        if (!ok)
          {
            *err = xasprintf ("network.allow entry \"%s\" is outside the "
                              "administrator's network-allow lines",
                              p->allow[i].text);
            return -1;
          }
      }
  if (n_admin_ranges)
    for (size_t i = 0; i < p->n_allow_ranges; i++)
      {
        bool ok = false;
        for (size_t j = 0; j < n_admin_ranges && !ok; j++)
          ok = cidr_inside (&admin_ranges[j], &p->allow_ranges[i]);
        if (!ok)
          {
            *err = xasprintf ("network.allow_ranges entry \"%s\" is outside "
                              "the administrator's network-range lines",
                              p->allow_ranges[i].text);
            return -1;
          }
      }
  return 0;
}

/* ---- hash ---- */

static int
mapping_by_name (const void *a, const void *b)
{
  const struct egress_mapping *const *x = a, *const *y = b;
  return strcmp ((*x)->name, (*y)->name);
}

static cJSON *
cidr_texts (const struct egress_cidr *c, size_t n)
{
  cJSON *arr = nonnull (cJSON_CreateArray ());
  for (size_t i = 0; i < n; i++)
    cJSON_AddItemToArray (arr, nonnull (cJSON_CreateString (c[i].text)));
  return arr;
}

void
egress_policy_hash (const struct egress_policy *p, char out[17])
{
  /* The canonical form: fixed key order, allow in its (meaningful) order,
   * resolve sorted by name with addresses as inet_ntop writes them. */
  cJSON *root = nonnull (cJSON_CreateObject ());
  cJSON *allow = nonnull (cJSON_CreateArray ());
  for (size_t i = 0; i < p->n_allow; i++)
    cJSON_AddItemToArray (allow, nonnull (cJSON_CreateString (p->allow[i].text)));
  cJSON_AddItemToObject (root, "allow", allow);

  const struct egress_mapping **sorted
      = xcalloc (p->n_resolve, sizeof *sorted);
  for (size_t i = 0; i < p->n_resolve; i++)
    sorted[i] = &p->resolve[i];
  qsort (sorted, p->n_resolve, sizeof *sorted, mapping_by_name);
  cJSON *resolve = nonnull (cJSON_CreateObject ());
  for (size_t i = 0; i < p->n_resolve; i++)
    {
      char text[INET6_ADDRSTRLEN] = "?";
      inet_ntop (sorted[i]->family, sorted[i]->addr, text, sizeof text);
      cJSON_AddItemToObject (resolve, sorted[i]->name,
                             nonnull (cJSON_CreateString (text)));
    }
  free (sorted);
  cJSON_AddItemToObject (root, "resolve", resolve);
  cJSON_AddItemToObject (root, "allow_ranges",
                         cidr_texts (p->allow_ranges, p->n_allow_ranges));
  cJSON_AddItemToObject (root, "upstream_ranges",
                         cidr_texts (p->upstream_ranges, p->n_upstream_ranges));
  char *json = nonnull (cJSON_PrintUnformatted (root));
  cJSON_Delete (root);
  uint64_t h = fnv1a64 (FNV1A64_INIT, json, strlen (json));
  free (json);
  snprintf (out, 17, "%016" PRIx64, h);
}
