/* SPDX-License-Identifier: MIT */
/* The approval gate's rule files: parsing, compiling every pattern with
 * PCRE2, matching a parsed command, and running the files' own test
 * cases.  The format is documented in docs/policy.md ("Rule file
 * format"); rules.h is the interface. */
#define _GNU_SOURCE
#define PCRE2_CODE_UNIT_WIDTH 8
#include "rules.h"
#include "chars.h"
#include "egress_policy.h"
#include "xalloc.h"

#include <errno.h>
#include <pcre2.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A rule file is tens of kilobytes; the bound keeps a mistaken path (a
 * log, a device) from being slurped. */
#define MAX_FILE_BYTES (4 * 1024 * 1024)
#define MAX_ID_LEN 64
/* PCRE2 limits per pcre2_match() call (per starting position for an
 * unanchored pattern), far above what the shipped patterns need on the
 * longest command the tokenizer accepts.  PCRE2 resets its count at each
 * starting position, so a work budget per subject bounds the total: each
 * step of the matcher (an automatic callout) costs 1 plus the distance it
 * moved in the subject, and all patterns together may spend WORK_BASE
 * plus WORK_PER_BYTE for each byte of a subject, many times what linear
 * patterns need.  A budget per subject, not per command, so that text
 * added elsewhere in a command never buys a subject more work (the gate's
 * promise that adding harmless text never softens a verdict).  Running
 * out, like hitting a limit, counts as a match: fail closed. */
#define MATCH_LIMIT 10000000
#define DEPTH_LIMIT 1000000
#define HEAP_LIMIT_KIB (64 * 1024)
#define WORK_BASE 50000ull
#define WORK_PER_BYTE 500ull
/* Case text quoted in a failure report. */
#define REPORT_TEXT_MAX 200

/* ---- allocation: the broker cannot do anything useful without memory ---- */

/* A growing string. */
struct buf
{
  char *s;
  size_t len, cap;
};

static void
buf_add (struct buf *b, const char *s, size_t n)
{
  if (b->len + n + 1 > b->cap)
    {
      size_t cap = b->cap ? b->cap : 64;
      while (cap < b->len + n + 1)
        cap *= 2;
      b->s = nonnull (realloc (b->s, cap));
      b->cap = cap;
    }
  memcpy (b->s + b->len, s, n);
  b->len += n;
  b->s[b->len] = '\0';
}

static void
buf_str (struct buf *b, const char *s)
{
  buf_add (b, s, strlen (s));
}

/* An empty buf still yields a string. */
static char *
buf_take (struct buf *b)
{
  if (!b->s)
    buf_add (b, "", 0);
  char *s = b->s;
  *b = (struct buf) { 0 };
  return s;
}

/* ---- the rule set ---- */

/* What a pattern is matched against (see docs/policy.md). */
enum scope
{
  SCOPE_COMMAND,
  SCOPE_LINE,
  SCOPE_REDIRECT,
  SCOPE_SCRIPT,
  SCOPE_TEXT,
  N_SCOPES
};

static const char *const scope_names[N_SCOPES] = {
  [SCOPE_COMMAND] = "command",
  [SCOPE_LINE] = "line",
  [SCOPE_REDIRECT] = "redirect",
  [SCOPE_SCRIPT] = "script",
  [SCOPE_TEXT] = "text",
};

struct pattern
{
  enum scope scope;
  pcre2_code *re;
};

struct rule_case
{
  char *text; /* escapes resolved; may hold NUL bytes */
  size_t len;
  bool must_match;
  char *origin; /* "FILE:LINE" */
};

struct rule_entry
{
  struct rule pub; /* first: ruleset_match hands out &entry->pub */
  struct pattern *patterns;
  size_t n_patterns;
  struct rule_case *cases;
  size_t n_cases;
  bool has_action;
  bool from_admin;
  bool disabled;
};

struct ruleset
{
  struct rule_entry **rules; /* file order: default file, then admin file */
  size_t n_rules;
  struct rule_entry **ordered; /* enabled rules: deny, block, approve */
  size_t n_ordered;
  struct rules_settings settings;
  pcre2_match_context *mctx; /* the limits; read-only once loaded */
};

static void
rule_entry_free (struct rule_entry *e)
{
  if (!e)
    return;
  free (e->pub.id);
  free (e->pub.description);
  free (e->pub.origin);
  for (size_t i = 0; i < e->n_patterns; i++)
    pcre2_code_free (e->patterns[i].re);
  free (e->patterns);
  for (size_t i = 0; i < e->n_cases; i++)
    {
      free (e->cases[i].text);
      free (e->cases[i].origin);
    }
  free (e->cases);
  free (e);
}

void
ruleset_free (struct ruleset *rs)
{
  if (!rs)
    return;
  for (size_t i = 0; i < rs->n_rules; i++)
    rule_entry_free (rs->rules[i]);
  free (rs->rules);
  free (rs->ordered);
  egress_rules_free (rs->settings.network_allow, rs->settings.n_network_allow);
  egress_cidrs_free (rs->settings.network_ranges, rs->settings.n_network_ranges);
  pcre2_match_context_free (rs->mctx);
  free (rs);
}

static struct rule_entry *
find_entry (const struct ruleset *rs, const char *id)
{
  for (size_t i = 0; i < rs->n_rules; i++)
    if (strcmp (rs->rules[i]->pub.id, id) == 0)
      return rs->rules[i];
  return NULL;
}

/* ---- the parser ---- */

struct parser
{
  struct ruleset *rs;
  const char *path;
  unsigned line;
  bool admin;
  struct rule_entry *cur; /* the rule being read, not yet in rs */
  unsigned cur_line;
  /* `set` keys already given, for the duplicate check. */
  unsigned set_lines[4];
  char *err;
};

static bool __attribute__ ((format (printf, 2, 3)))
fail (struct parser *ps, const char *fmt, ...)
{
  va_list ap;
  char *msg;
  va_start (ap, fmt);
  int n = vasprintf (&msg, fmt, ap);
  va_end (ap);
  if (n < 0)
    oom ();
  free (ps->err);
  ps->err = xasprintf ("%s:%u: %s", ps->path, ps->line, msg);
  free (msg);
  return false;
}

static bool
is_blank (char c)
{
  return c == ' ' || c == '\t';
}

/* Trim blanks on both sides, in place. */
static char *
trim (char *s)
{
  while (is_blank (*s))
    s++;
  size_t n = strlen (s);
  while (n && is_blank (s[n - 1]))
    s[--n] = '\0';
  return s;
}

static bool
valid_id (const char *id)
{
  size_t n = strlen (id);
  if (n == 0 || n > MAX_ID_LEN)
    return false;
  return strspn (id, "abcdefghijklmnopqrstuvwxyz0123456789-") == n;
}

/* Case text: \n \t \r \e \\ and \xHH are escapes; any other backslash is
 * itself, so shell spellings such as r\m need no doubling. */
char *
rules_unescape_case (const char *s, size_t *len)
{
  struct buf b = { 0 };
  while (*s)
    {
      char c = *s++;
      if (c == '\\' && *s)
        {
          switch (*s)
            {
            case 'n': c = '\n'; s++; break;
            case 't': c = '\t'; s++; break;
            case 'r': c = '\r'; s++; break;
            case 'e': c = '\x1b'; s++; break;
            case '\\': c = '\\'; s++; break;
            case 'x':
              if (hex_digit (s[1]) >= 0 && hex_digit (s[2]) >= 0)
                {
                  c = (char) (hex_digit (s[1]) * 16 + hex_digit (s[2]));
                  s += 3;
                }
              break;
            default:
              break;
            }
        }
      buf_add (&b, &c, 1);
    }
  *len = b.len;
  return buf_take (&b);
}

static bool
finish_rule (struct parser *ps)
{
  struct rule_entry *e = ps->cur;
  if (!e)
    return true;
  unsigned line = ps->line;
  ps->line = ps->cur_line;
  bool ok = false;
  if (!e->has_action)
    fail (ps, "rule %s has no `action`", e->pub.id);
  else if (!e->pub.description)
    fail (ps, "rule %s has no `description`", e->pub.id);
  else if (e->n_patterns == 0)
    fail (ps, "rule %s has no pattern (command, line, redirect, script or "
          "text)", e->pub.id);
  else
    ok = true;
  ps->line = line;
  if (!ok)
    return false;
  struct ruleset *rs = ps->rs;
  rs->rules = xreallocarray (rs->rules, rs->n_rules + 1, sizeof *rs->rules);
  rs->rules[rs->n_rules++] = e;
  ps->cur = NULL;
  return true;
}

static bool
start_rule (struct parser *ps, char *arg)
{
  if (!finish_rule (ps))
    return false;
  char *id = trim (arg);
  if (!valid_id (id))
    return fail (ps, "bad rule id \"%s\": expected 1 to %d of [a-z0-9-]", id,
                 MAX_ID_LEN);
  struct rule_entry *old = find_entry (ps->rs, id);
  if (old)
    return fail (ps, "duplicate rule id %s (first defined at %s)", id,
                 old->pub.origin);
  struct rule_entry *e = xcalloc (1, sizeof *e);
  e->pub.id = xstrdup (id);
  e->pub.origin = xasprintf ("%s:%u", ps->path, ps->line);
  e->from_admin = ps->admin;
  ps->cur = e;
  ps->cur_line = ps->line;
  return true;
}

static bool
set_action (struct parser *ps, char *arg)
{
  char *v = trim (arg);
  struct rule_entry *e = ps->cur;
  if (e->has_action)
    return fail (ps, "rule %s has two `action` lines", e->pub.id);
  if (strcmp (v, "deny") == 0)
    {
      if (!ps->admin)
        return fail (ps, "`action deny` is only allowed in the administrator's "
                     "rule file");
      e->pub.action = RULE_DENY;
    }
  else if (strcmp (v, "block") == 0)
    e->pub.action = RULE_BLOCK;
  else if (strcmp (v, "approve") == 0)
    e->pub.action = RULE_APPROVE;
  else
    return fail (ps, "bad action \"%s\": expected deny, block or approve", v);
  e->has_action = true;
  return true;
}

static bool
set_description (struct parser *ps, char *arg)
{
  char *v = trim (arg);
  struct rule_entry *e = ps->cur;
  if (e->pub.description)
    return fail (ps, "rule %s has two `description` lines", e->pub.id);
  if (!*v)
    return fail (ps, "empty description");
  e->pub.description = xstrdup (v);
  return true;
}

/* Patterns and cases are taken verbatim, so trailing blanks would be an
 * invisible part of them: refuse them and say how to write one. */
static bool
check_verbatim (struct parser *ps, const char *what, const char *arg)
{
  size_t n = strlen (arg);
  if (n == 0)
    return fail (ps, "empty %s", what);
  if (is_blank (arg[n - 1]))
    return fail (ps, "trailing blank in %s (write [ ] or \\x20 if it is "
                 "meant)", what);
  return true;
}

static bool
add_pattern (struct parser *ps, enum scope scope, const char *arg)
{
  if (!check_verbatim (ps, "pattern", arg))
    return false;
  int code;
  PCRE2_SIZE offset;
  /* No UTF: commands are matched as bytes, so invalid UTF-8 in a hostile
   * command can never make matching fail. */
  pcre2_code *re = pcre2_compile ((PCRE2_SPTR) arg, PCRE2_ZERO_TERMINATED,
                                  PCRE2_NEVER_UTF | PCRE2_NEVER_BACKSLASH_C
                                  | PCRE2_AUTO_CALLOUT,
                                  &code, &offset, NULL);
  if (!re)
    {
      PCRE2_UCHAR msg[256];
      if (pcre2_get_error_message (code, msg, sizeof msg) < 0)
        snprintf ((char *) msg, sizeof msg, "error %d", code);
      return fail (ps, "bad %s pattern at offset %zu: %s", scope_names[scope],
                   (size_t) offset, (const char *) msg);
    }
  struct rule_entry *e = ps->cur;
  e->patterns = xreallocarray (e->patterns, e->n_patterns + 1,
                               sizeof *e->patterns);
  e->patterns[e->n_patterns++] = (struct pattern) { scope, re };
  return true;
}

static bool
add_case (struct parser *ps, bool must_match, const char *arg)
{
  if (!check_verbatim (ps, "case", arg))
    return false;
  struct rule_entry *e = ps->cur;
  struct rule_case c = { .must_match = must_match };
  c.text = rules_unescape_case (arg, &c.len);
  c.origin = xasprintf ("%s:%u", ps->path, ps->line);
  e->cases = xreallocarray (e->cases, e->n_cases + 1, sizeof *e->cases);
  e->cases[e->n_cases++] = c;
  return true;
}

static bool
disable_rule (struct parser *ps, char *arg)
{
  char *id = trim (arg);
  if (!ps->admin)
    return fail (ps, "`disable` is only allowed in the administrator's rule "
                 "file");
  struct rule_entry *e = find_entry (ps->rs, id);
  if (!e)
    return fail (ps, "disable: no rule with id \"%s\"", id);
  e->disabled = true;
  return true;
}

static bool
parse_yes_no (const char *v, bool *out)
{
  if (strcmp (v, "yes") == 0)
    *out = true;
  else if (strcmp (v, "no") == 0)
    *out = false;
  else
    return false;
  return true;
}

static bool
set_setting (struct parser *ps, char *arg)
{
  if (!ps->admin)
    return fail (ps, "`set` is only allowed in the administrator's rule file");
  char *key = trim (arg);
  char *value = key + strcspn (key, " \t");
  if (*value)
    *value++ = '\0';
  value = trim (value);
  static const char *const keys[] = { "allow_bypass", "allow_approve_mode",
                                      "isolated_guards", "approval_timeout" };
  size_t k = 0;
  while (k < 4 && strcmp (key, keys[k]) != 0)
    k++;
  if (k == 4)
    return fail (ps, "set: unknown key \"%s\" (allow_bypass, "
                 "allow_approve_mode, isolated_guards, approval_timeout)", key);
  if (ps->set_lines[k])
    return fail (ps, "set: %s given twice (first at line %u)", key,
                 ps->set_lines[k]);
  struct rules_settings *s = &ps->rs->settings;
  bool ok = true;
  switch (k)
    {
    case 0:
      ok = parse_yes_no (value, &s->allow_bypass);
      break;
    case 1:
      ok = parse_yes_no (value, &s->allow_approve_mode);
      break;
    case 2:
      if (strcmp (value, "full") == 0)
        s->isolated_guards = GUARDS_FULL;
      else if (strcmp (value, "floor") == 0)
        s->isolated_guards = GUARDS_FLOOR;
      else if (strcmp (value, "admin") == 0)
        s->isolated_guards = GUARDS_ADMIN;
      else
        return fail (ps, "set isolated_guards: expected full, floor or admin, "
                     "got \"%s\"", value);
      break;
    default:
      {
        char *end;
        errno = 0;
        unsigned long v = strtoul (value, &end, 10);
        if (!*value || *value < '0' || *value > '9' || *end || errno
            || v < 1 || v > 3600)
          return fail (ps, "set approval_timeout: expected seconds from 1 to "
                       "3600, got \"%s\"", value);
        s->approval_timeout = (unsigned) v;
      }
    }
  if (!ok)
    return fail (ps, "set %s: expected yes or no, got \"%s\"", key, value);
  ps->set_lines[k] = ps->line;
  return true;
}

/* `network-allow PATTERN` / `network-range CIDR`: a cap on what users'
 * sandboxes may name in network.allow / network.allow_ranges. */
static bool
network_cap (struct parser *ps, const char *directive, char *arg)
{
  if (!ps->admin)
    return fail (ps, "`%s` is only allowed in the administrator's rule file",
                 directive);
  char *value = trim (arg);
  if (!*value)
    return fail (ps, "%s: expected an argument", directive);
  struct rules_settings *s = &ps->rs->settings;
  bool allow = strcmp (directive, "network-allow") == 0;
  if ((allow ? s->n_network_allow : s->n_network_ranges) >= EGRESS_MAX_RULES)
    return fail (ps, "%s: more than %d lines", directive, EGRESS_MAX_RULES);
  char *why = NULL;
  int rc;
  if (allow)
    {
      s->network_allow = xreallocarray (s->network_allow,
                                        s->n_network_allow + 1,
                                        sizeof *s->network_allow);
      rc = egress_rule_parse (value, &s->network_allow[s->n_network_allow],
                              &why);
      if (rc == 0)
        s->n_network_allow++;
    }
  else
    {
      s->network_ranges = xreallocarray (s->network_ranges,
                                         s->n_network_ranges + 1,
                                         sizeof *s->network_ranges);
      rc = egress_cidr_parse (value, &s->network_ranges[s->n_network_ranges],
                              &why);
      if (rc == 0)
        s->n_network_ranges++;
    }
  if (rc < 0)
    {
      fail (ps, "%s: %s", directive, why);
      free (why);
      return false;
    }
  return true;
}

static bool
parse_line (struct parser *ps, char *line)
{
  line += strspn (line, " \t");
  if (!*line || *line == '#')
    return true;
  size_t n = strcspn (line, " \t");
  char *arg = line + n;
  /* The argument starts after exactly one blank: case text is verbatim. */
  if (*arg)
    *arg++ = '\0';
  const char *d = line;

  if (strcmp (d, "rule") == 0)
    return start_rule (ps, arg);
  if (strcmp (d, "disable") == 0)
    return finish_rule (ps) && disable_rule (ps, arg);
  if (strcmp (d, "set") == 0)
    return finish_rule (ps) && set_setting (ps, arg);
  if (strcmp (d, "network-allow") == 0 || strcmp (d, "network-range") == 0)
    return finish_rule (ps) && network_cap (ps, d, arg);

  static const char *const in_rule[] = { "action", "description", "command",
                                         "line", "redirect", "script", "text",
                                         "match", "no-match" };
  bool known = false;
  for (size_t i = 0; i < sizeof in_rule / sizeof in_rule[0]; i++)
    known |= strcmp (d, in_rule[i]) == 0;
  if (!known)
    return fail (ps, "unknown directive \"%s\"", d);
  if (!ps->cur)
    return fail (ps, "`%s` outside a rule (a `rule ID` line starts one)", d);

  if (strcmp (d, "action") == 0)
    return set_action (ps, arg);
  if (strcmp (d, "description") == 0)
    return set_description (ps, arg);
  if (strcmp (d, "match") == 0)
    return add_case (ps, true, arg);
  if (strcmp (d, "no-match") == 0)
    return add_case (ps, false, arg);
  for (enum scope s = 0; s < N_SCOPES; s++)
    if (strcmp (d, scope_names[s]) == 0)
      return add_pattern (ps, s, arg);
  return fail (ps, "unknown directive \"%s\"", d); /* not reached */
}

/* Read a whole file; -1 with errno, or -2 when too large. */
static int
read_file (const char *path, char **data, size_t *len)
{
  FILE *f = fopen (path, "re");
  if (!f)
    return -1;
  struct buf b = { 0 };
  char chunk[8192];
  size_t n;
  while ((n = fread (chunk, 1, sizeof chunk, f)) > 0)
    {
      if (b.len + n > MAX_FILE_BYTES)
        {
          fclose (f);
          free (b.s);
          return -2;
        }
      buf_add (&b, chunk, n);
    }
  int err = ferror (f) ? errno : 0;
  fclose (f);
  if (err)
    {
      free (b.s);
      errno = err;
      return -1;
    }
  *len = b.len;
  *data = buf_take (&b);
  return 0;
}

static bool
parse_file (struct parser *ps, const char *path, bool admin, bool optional)
{
  ps->path = path;
  ps->admin = admin;
  ps->line = 0;
  char *data;
  size_t len;
  int r = read_file (path, &data, &len);
  if (r == -1 && optional && errno == ENOENT)
    return true;
  if (r == -1)
    {
      free (ps->err);
      ps->err = xasprintf ("%s: cannot read: %s", path, strerror (errno));
      return false;
    }
  if (r == -2)
    {
      free (ps->err);
      ps->err = xasprintf ("%s: larger than %d bytes", path, MAX_FILE_BYTES);
      return false;
    }
  bool ok = true;
  char *p = data, *end = data + len;
  while (ok && p < end)
    {
      ps->line++;
      char *nl = memchr (p, '\n', (size_t) (end - p));
      char *stop = nl ? nl : end;
      bool has_nul = memchr (p, '\0', (size_t) (stop - p)) != NULL;
      *stop = '\0';
      if (stop > p && stop[-1] == '\r')
        stop[-1] = '\0';
      ok = has_nul ? fail (ps, "NUL byte in line") : parse_line (ps, p);
      p = stop + 1;
    }
  if (ok)
    ok = finish_rule (ps);
  free (data);
  return ok;
}

static int
action_rank (enum rule_action a)
{
  return a == RULE_DENY ? 0 : a == RULE_BLOCK ? 1 : 2;
}

struct ruleset *
ruleset_load (const char *default_path, const char *admin_path, char **err)
{
  struct ruleset *rs = xcalloc (1, sizeof *rs);
  rs->settings = (struct rules_settings) {
    .allow_bypass = false,
    .allow_approve_mode = true,
    .isolated_guards = GUARDS_FLOOR,
    .approval_timeout = 60,
  };
  struct parser ps = { .rs = rs };
  bool ok = parse_file (&ps, default_path, false, false);
  if (ok && admin_path)
    {
      memset (ps.set_lines, 0, sizeof ps.set_lines);
      ok = parse_file (&ps, admin_path, true, true);
    }
  rule_entry_free (ps.cur);
  if (!ok)
    {
      if (err)
        *err = ps.err;
      else
        free (ps.err);
      ruleset_free (rs);
      return NULL;
    }

  rs->ordered = xcalloc (rs->n_rules, sizeof *rs->ordered);
  for (int rank = 0; rank < 3; rank++)
    for (size_t i = 0; i < rs->n_rules; i++)
      if (!rs->rules[i]->disabled
          && action_rank (rs->rules[i]->pub.action) == rank)
        rs->ordered[rs->n_ordered++] = rs->rules[i];

  rs->mctx = nonnull (pcre2_match_context_create (NULL));
  pcre2_set_match_limit (rs->mctx, MATCH_LIMIT);
  pcre2_set_depth_limit (rs->mctx, DEPTH_LIMIT);
  pcre2_set_heap_limit (rs->mctx, HEAP_LIMIT_KIB);
  return rs;
}

const struct rules_settings *
ruleset_settings (const struct ruleset *rs)
{
  return &rs->settings;
}

const struct rule *
ruleset_find (const struct ruleset *rs, const char *id)
{
  struct rule_entry *e = find_entry (rs, id);
  return e && !e->disabled ? &e->pub : NULL;
}

size_t
ruleset_count (const struct ruleset *rs, size_t *n_cases)
{
  size_t cases = 0;
  for (size_t i = 0; i < rs->n_ordered; i++)
    cases += rs->ordered[i]->n_cases;
  if (n_cases)
    *n_cases = cases;
  return rs->n_ordered;
}

const char *
ruleset_case (const struct ruleset *rs, size_t i, size_t *len)
{
  for (size_t k = 0; k < rs->n_ordered; k++)
    {
      const struct rule_entry *e = rs->ordered[k];
      if (i < e->n_cases)
        {
          if (len)
            *len = e->cases[i].len;
          return e->cases[i].text;
        }
      i -= e->n_cases;
    }
  return NULL;
}

/* File order, as listed; the action order of rs->ordered is for
 * matching. */
const struct rule *
ruleset_rule (const struct ruleset *rs, size_t i)
{
  for (size_t k = 0; k < rs->n_rules; k++)
    if (!rs->rules[k]->disabled && i-- == 0)
      return &rs->rules[k]->pub;
  return NULL;
}

/* ---- subjects: the strings patterns are matched against ---- */

struct subjects
{
  char **of[N_SCOPES];
  size_t n[N_SCOPES];
  /* work units each subject has left (see WORK_BASE) */
  unsigned long long *left[N_SCOPES];
};

static void
subjects_add (struct subjects *sj, enum scope scope, char *s)
{
  sj->of[scope] = xreallocarray (sj->of[scope], sj->n[scope] + 1,
                                 sizeof (char *));
  sj->left[scope] = xreallocarray (sj->left[scope], sj->n[scope] + 1,
                                   sizeof (unsigned long long));
  sj->left[scope][sj->n[scope]] = WORK_BASE + WORK_PER_BYTE * strlen (s);
  sj->of[scope][sj->n[scope]++] = s;
}

static void
subjects_free (struct subjects *sj)
{
  for (int s = 0; s < N_SCOPES; s++)
    {
      for (size_t i = 0; i < sj->n[s]; i++)
        free (sj->of[s][i]);
      free (sj->of[s]);
      free (sj->left[s]);
    }
}

/* Length of the home prefix of word w (0: none): $HOME, ${HOME} or the
 * home directory itself, followed by '/' or the end of the word. */
static size_t
home_prefix (const char *w, const char *home, size_t home_len)
{
  size_t n = 0;
  if (strncmp (w, "${HOME}", 7) == 0)
    n = 7;
  else if (strncmp (w, "$HOME", 5) == 0)
    n = 5;
  else if (home_len && strncmp (w, home, home_len) == 0)
    n = home_len;
  if (n && (w[n] == '/' || w[n] == '\0'))
    return n;
  return 0;
}

static void
buf_word (struct buf *b, const char *w, const char *home, size_t home_len)
{
  size_t n = home_prefix (w, home, home_len);
  if (n)
    {
      buf_str (b, "~");
      w += n;
    }
  buf_str (b, w);
}

static void
buf_command (struct buf *b, const struct shell_command *c, const char *home,
             size_t home_len)
{
  for (size_t i = 0; i < c->n_words; i++)
    {
      if (i)
        buf_str (b, " ");
      /* an empty argument is written as the shell would: patterns step
       * over words with \S+, and rm '' -rf / is still rm -rf / */
      if (i && !c->words[i][0])
        buf_str (b, "''");
      else
        buf_word (b, c->words[i], home, home_len);
    }
}

static void
buf_redirect (struct buf *b, const struct shell_redirect *r, const char *home,
              size_t home_len)
{
  buf_str (b, r->op);
  buf_str (b, " ");
  buf_word (b, r->target, home, home_len);
}

static const char *
connector_text (const char *c)
{
  if (strcmp (c, "\n") == 0 || strcmp (c, ";") == 0)
    return " ; ";
  if (strcmp (c, "|") == 0)
    return " | ";
  if (strcmp (c, "|&") == 0)
    return " |& ";
  if (strcmp (c, "&&") == 0)
    return " && ";
  if (strcmp (c, "||") == 0)
    return " || ";
  if (strcmp (c, "&") == 0)
    return " & ";
  return NULL;
}

static int
by_list (const void *a, const void *b, void *parse)
{
  const struct shell_parse *p = parse;
  size_t i = *(const size_t *) a, j = *(const size_t *) b;
  unsigned li = p->cmds[i].list, lj = p->cmds[j].list;
  if (li != lj)
    return li < lj ? -1 : 1;
  return i < j ? -1 : i > j;
}

/* Line texts: the commands of each list in order, each with its
 * redirections, joined by their connectors.  A wrapped command is left
 * out (its wrapper's text already holds its words); the connector of a
 * wrapper chain is the first one its members carry. */
static void
add_lines (struct subjects *sj, const struct shell_parse *p, const char *home,
           size_t home_len)
{
  if (p->n_cmds == 0)
    return;
  size_t *idx = xcalloc (p->n_cmds, sizeof *idx);
  for (size_t i = 0; i < p->n_cmds; i++)
    idx[i] = i;
  qsort_r (idx, p->n_cmds, sizeof *idx, by_list, (void *) p);

  struct buf b = { 0 };
  const char *pending = NULL; /* connector owed before the next command */
  for (size_t k = 0; k < p->n_cmds; k++)
    {
      const struct shell_command *c = &p->cmds[idx[k]];
      bool last = k + 1 == p->n_cmds || p->cmds[idx[k + 1]].list != c->list;
      if (!c->wrapped || !b.s)
        {
          if (pending)
            buf_str (&b, pending);
          else if (b.s)
            buf_str (&b, " ; ");
          pending = NULL;
          buf_command (&b, c, home, home_len);
          for (size_t r = 0; r < c->n_redirs; r++)
            {
              buf_str (&b, " ");
              buf_redirect (&b, &c->redirs[r], home, home_len);
            }
        }
      if (!pending && c->connector)
        pending = connector_text (c->connector);
      if (last)
        {
          subjects_add (sj, SCOPE_LINE, buf_take (&b));
          pending = NULL;
        }
    }
  free (idx);
}

static void
build_subjects (struct subjects *sj, const struct shell_parse *p,
                const char *home)
{
  size_t home_len = 0;
  if (home && home[0] == '/')
    {
      home_len = strlen (home);
      while (home_len > 1 && home[home_len - 1] == '/')
        home_len--;
      if (home_len == 1)
        home_len = 0; /* "/" as home would fold every path */
    }
  for (size_t i = 0; i < p->n_cmds; i++)
    {
      const struct shell_command *c = &p->cmds[i];
      struct buf b = { 0 };
      buf_command (&b, c, home, home_len);
      subjects_add (sj, SCOPE_COMMAND, buf_take (&b));
      for (size_t r = 0; r < c->n_redirs; r++)
        {
          buf_redirect (&b, &c->redirs[r], home, home_len);
          subjects_add (sj, SCOPE_REDIRECT, buf_take (&b));
        }
    }
  add_lines (sj, p, home, home_len);
  /* scripts: "LANG TEXT", "dynamic-LANG TEXT" when built at run time */
  for (size_t i = 0; i < p->n_scripts; i++)
    {
      const struct shell_script *sc = &p->scripts[i];
      struct buf b = { 0 };
      if (sc->dynamic)
        buf_str (&b, "dynamic-");
      buf_str (&b, sc->lang);
      buf_str (&b, " ");
      buf_add (&b, sc->text, strnlen (sc->text, sc->len));
      subjects_add (sj, SCOPE_SCRIPT, buf_take (&b));
    }
  subjects_add (sj, SCOPE_TEXT, xstrdup (p->normalized ? p->normalized : ""));
}

/* The matching of one command against rules: made per call, so that one
 * rule set serves concurrent callers. */
struct matcher
{
  pcre2_match_data *md; /* one ovector pair: only "did it match" matters */
  pcre2_match_context *mctx; /* the rule set's limits, this budget */
  unsigned long long *budget; /* work units left for the current subject */
  size_t last_pos;            /* where the previous step was */
  bool gave_up;               /* a pattern failed and counted as a match */
};

static int
charge_work (pcre2_callout_block *cb, void *data)
{
  struct matcher *m = data;
  size_t pos = cb->current_position;
  unsigned long long cost = 1 + (pos > m->last_pos ? pos - m->last_pos
                                                   : m->last_pos - pos);
  m->last_pos = pos;
  if (cost > *m->budget)
    {
      *m->budget = 0;
      return PCRE2_ERROR_CALLOUT;
    }
  *m->budget -= cost;
  return 0;
}

static void
matcher_init (struct matcher *m, const struct ruleset *rs)
{
  *m = (struct matcher) {
    .md = nonnull (pcre2_match_data_create (1, NULL)),
    .mctx = nonnull (pcre2_match_context_copy (rs->mctx)),
  };
  pcre2_set_callout (m->mctx, charge_work, m);
}

static void
matcher_free (struct matcher *m)
{
  pcre2_match_data_free (m->md);
  pcre2_match_context_free (m->mctx);
}

enum outcome
{
  NO_MATCH,
  MATCHED,
  FAILED, /* a limit or the subject's budget: counts as a match */
};

static enum outcome
pattern_matches (struct matcher *m, const struct pattern *pt,
                 const char *subject, unsigned long long *budget)
{
  if (*budget == 0)
    {
      m->gave_up = true;
      return FAILED;
    }
  m->budget = budget;
  m->last_pos = 0;
  int rc = pcre2_match (pt->re, (PCRE2_SPTR) subject, strlen (subject), 0, 0,
                        m->md, m->mctx);
  if (rc == PCRE2_ERROR_NOMATCH)
    return NO_MATCH;
  if (rc < 0)
    {
      m->gave_up = true;
      return FAILED;
    }
  return MATCHED;
}

/* Whether the rule matches any subject of its patterns' scopes: MATCHED
 * when one really does, FAILED when matching only gave up somewhere. */
static enum outcome
rule_matches (struct matcher *m, const struct rule_entry *e,
              struct subjects *sj)
{
  enum outcome r = NO_MATCH;
  for (size_t i = 0; i < e->n_patterns; i++)
    {
      const struct pattern *pt = &e->patterns[i];
      for (size_t j = 0; j < sj->n[pt->scope]; j++)
        {
          enum outcome o = pattern_matches (m, pt, sj->of[pt->scope][j],
                                            &sj->left[pt->scope][j]);
          if (o == MATCHED)
            return MATCHED;
          if (o == FAILED)
            r = FAILED; /* look on for a real match */
        }
    }
  return r;
}

size_t
ruleset_match_hits (const struct ruleset *rs, const struct shell_parse *p,
                    const char *home, struct rule_hit *out, size_t max,
                    bool *gave_up)
{
  struct subjects sj = { 0 };
  build_subjects (&sj, p, home);
  struct matcher m;
  matcher_init (&m, rs);
  size_t n = 0;
  for (size_t i = 0; i < rs->n_ordered; i++)
    {
      enum outcome o = rule_matches (&m, rs->ordered[i], &sj);
      if (o == NO_MATCH)
        continue;
      if (n < max)
        out[n] = (struct rule_hit) { &rs->ordered[i]->pub, o == MATCHED };
      n++;
    }
  if (gave_up)
    *gave_up = m.gave_up;
  matcher_free (&m);
  subjects_free (&sj);
  return n;
}

size_t
ruleset_match_checked (const struct ruleset *rs, const struct shell_parse *p,
                       const char *home, const struct rule **out, size_t max,
                       bool *gave_up)
{
  struct rule_hit *hits = max ? xcalloc (max, sizeof *hits) : NULL;
  size_t n = ruleset_match_hits (rs, p, home, hits, max, gave_up);
  for (size_t i = 0; i < n && i < max; i++)
    out[i] = hits[i].rule;
  free (hits);
  return n;
}

size_t
ruleset_match (const struct ruleset *rs, const struct shell_parse *p,
               const char *home, const struct rule **out, size_t max)
{
  return ruleset_match_checked (rs, p, home, out, max, NULL);
}

/* ---- the files' own test cases ---- */

/* Case text for a report: printable ASCII as is, the rest escaped the
 * way the rule file writes it. */
static void
buf_case_text (struct buf *b, const struct rule_case *c)
{
  for (size_t i = 0; i < c->len && i < REPORT_TEXT_MAX; i++)
    {
      unsigned char ch = (unsigned char) c->text[i];
      char tmp[8];
      if (ch == '\n')
        buf_str (b, "\\n");
      else if (ch == '\t')
        buf_str (b, "\\t");
      else if (ch == '\\')
        buf_str (b, "\\\\");
      else if (ch >= 0x20 && ch != 0x7f)
        buf_add (b, (const char *) &ch, 1);
      else
        {
          snprintf (tmp, sizeof tmp, "\\x%02x", ch);
          buf_str (b, tmp);
        }
    }
  if (c->len > REPORT_TEXT_MAX)
    buf_str (b, "...");
}

int
ruleset_check_cases (const struct ruleset *rs, char **report)
{
  struct buf b = { 0 };
  int failures = 0;
  for (size_t i = 0; i < rs->n_rules; i++)
    {
      const struct rule_entry *e = rs->rules[i];
      if (e->disabled)
        continue;
      size_t n_match = 0, n_no = 0;
      for (size_t k = 0; k < e->n_cases; k++)
        {
          const struct rule_case *c = &e->cases[k];
          *(c->must_match ? &n_match : &n_no) += 1;
          struct shell_parse *p = nonnull (shell_parse (c->text, c->len));
          struct subjects sj = { 0 };
          build_subjects (&sj, p, NULL);
          struct matcher m;
          matcher_init (&m, rs);
          bool matched = rule_matches (&m, e, &sj) != NO_MATCH;
          matcher_free (&m);
          subjects_free (&sj);
          shell_parse_free (p);
          if (matched == c->must_match)
            continue;
          failures++;
          buf_str (&b, c->origin);
          buf_str (&b, ": rule ");
          buf_str (&b, e->pub.id);
          buf_str (&b, c->must_match ? ": does not match: "
                                     : ": matches no-match case: ");
          buf_case_text (&b, c);
          buf_str (&b, "\n");
        }
      /* The shipped file proves each rule both ways, twice. */
      if (!e->from_admin && (n_match < 2 || n_no < 2))
        {
          failures++;
          char *line = xasprintf ("%s: rule %s: needs at least 2 match and 2 "
                                  "no-match cases (has %zu and %zu)\n",
                                  e->pub.origin, e->pub.id, n_match, n_no);
          buf_str (&b, line);
          free (line);
        }
    }
  if (report)
    *report = failures ? buf_take (&b) : NULL;
  free (b.s);
  return failures;
}
