/* SPDX-License-Identifier: MIT */
/* Unit tests for the approval gate's rule files (policy/rules.c).
 *
 * The shipped file (policy/default.rules) is loaded and every one of its
 * match/no-match cases is run.  The parser is tested on small rule files
 * written to a temporary directory: each error kind, with its exact
 * "FILE:LINE: message", the administrator file's powers (disable, set,
 * deny rules and their ordering), and the matching machinery: scopes,
 * home folding, line texts, and failing closed when PCRE2 gives up. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "egress_policy.h"
#include "rules.h"
#include "shell_parse.h"

#define N_ELEMENTS(a) (sizeof (a) / sizeof ((a)[0]))
#define DEFAULT_RULES AIRLOCK_SOURCE_DIR "/policy/default.rules"

static char tmp[256];
static char def_path[512];
static char admin_path[512];

static int
setup (void **state)
{
  (void) state;
  snprintf (tmp, sizeof tmp, "/tmp/airlock-test-rules.XXXXXX");
  if (!mkdtemp (tmp))
    return -1;
  snprintf (def_path, sizeof def_path, "%s/default.rules", tmp);
  snprintf (admin_path, sizeof admin_path, "%s/policy.rules", tmp);
  return 0;
}

static int
teardown (void **state)
{
  (void) state;
  unlink (def_path);
  unlink (admin_path);
  rmdir (admin_path); /* when a test made it a directory */
  rmdir (tmp);
  return 0;
}

static void
write_file (const char *path, const char *text, size_t len)
{
  FILE *f = fopen (path, "w");
  assert_non_null (f);
  assert_int_equal (fwrite (text, 1, len, f), len);
  assert_int_equal (fclose (f), 0);
}

static void
write_text (const char *path, const char *text)
{
  write_file (path, text, strlen (text));
}

/* Load def_path (+ admin_path); the rule set must load. */
static struct ruleset *
load_ok (bool with_admin)
{
  char *err = NULL;
  struct ruleset *rs = ruleset_load (def_path, with_admin ? admin_path : NULL,
                                     &err);
  if (!rs)
    fail_msg ("unexpected load error: %s", err);
  assert_null (err);
  return rs;
}

/* Load must fail with exactly "PATH:LINE: message" (which = 'd' for the
 * default file, 'a' for the admin file). */
static void
expect_error (char which, unsigned line, const char *message)
{
  char *err = NULL;
  struct ruleset *rs = ruleset_load (def_path, admin_path, &err);
  assert_null (rs);
  assert_non_null (err);
  char *want;
  assert_true (asprintf (&want, "%s:%u: %s",
                         which == 'd' ? def_path : admin_path, line,
                         message) > 0);
  if (strcmp (err, want) != 0)
    fail_msg ("error\n  got:  %s\n  want: %s", err, want);
  free (want);
  free (err);
}

/* The ids of the rules matching text, space-separated. */
static char *
matching_ids (const struct ruleset *rs, const char *text, const char *home)
{
  struct shell_parse *p = shell_parse (text, strlen (text));
  assert_non_null (p);
  const struct rule *hits[64];
  size_t n = ruleset_match (rs, p, home, hits, N_ELEMENTS (hits));
  shell_parse_free (p);
  assert_true (n <= N_ELEMENTS (hits));
  char *s = strdup ("");
  for (size_t i = 0; i < n; i++)
    {
      char *t;
      assert_true (asprintf (&t, "%s%s%s", s, i ? " " : "", hits[i]->id) > 0);
      free (s);
      s = t;
    }
  return s;
}

static void
expect_ids (const struct ruleset *rs, const char *text, const char *home,
            const char *want)
{
  char *got = matching_ids (rs, text, home);
  if (strcmp (got, want) != 0)
    fail_msg ("%s (home %s)\n  got:  [%s]\n  want: [%s]", text,
              home ? home : "none", got, want);
  free (got);
}

/* ---- the shipped rules ---- */

static void
test_default_rules_cases_pass (void **state)
{
  (void) state;
  char *err = NULL;
  struct ruleset *rs = ruleset_load (DEFAULT_RULES, NULL, &err);
  if (!rs)
    fail_msg ("%s", err);
  size_t n_cases = 0;
  size_t n_rules = ruleset_count (rs, &n_cases);
  print_message ("default.rules: %zu rules, %zu cases\n", n_rules, n_cases);
  assert_true (n_rules >= 40);
  assert_true (n_cases >= 320);
  char *report = NULL;
  int failures = ruleset_check_cases (rs, &report);
  if (failures)
    {
      /* The whole report: fail_msg would cut it short. */
      fputs (report, stderr);
      fail_msg ("%d case(s) of default.rules failed (listed above)", failures);
    }
  assert_null (report);
  ruleset_free (rs);
}

static void
test_default_rules_actions (void **state)
{
  (void) state;
  struct ruleset *rs = ruleset_load (DEFAULT_RULES, NULL, NULL);
  assert_non_null (rs);
  static const char *const blocks[] = { "wipe-root", "wipe-system-dir",
                                        "wipe-home", "mkfs", "raw-device-write",
                                        "fork-bomb", "kill-all", "power-off" };
  for (size_t i = 0; i < N_ELEMENTS (blocks); i++)
    {
      const struct rule *r = ruleset_find (rs, blocks[i]);
      assert_non_null (r);
      assert_int_equal (r->action, RULE_BLOCK);
      assert_non_null (r->description);
      assert_non_null (strstr (r->origin, "default.rules:"));
    }
  const struct rule *r = ruleset_find (rs, "rm-recursive");
  assert_non_null (r);
  assert_int_equal (r->action, RULE_APPROVE);
  assert_string_equal (r->description, "recursive delete");
  assert_null (ruleset_find (rs, "no-such-rule"));

  /* Defaults when no admin file speaks. */
  const struct rules_settings *s = ruleset_settings (rs);
  assert_false (s->allow_bypass);
  assert_true (s->allow_approve_mode);
  assert_int_equal (s->isolated_guards, GUARDS_FLOOR);
  assert_int_equal (s->approval_timeout, 60);

  /* Blocks come before approvals; a home path given by the caller folds. */
  expect_ids (rs, "sudo rm -rf /home/alice", "/home/alice",
              "wipe-home rm-recursive");
  expect_ids (rs, "sudo rm -rf /home/alice/src", "/home/alice",
              "rm-recursive");
  expect_ids (rs, "ls -la", NULL, "");
  ruleset_free (rs);
}

/* Hostile input of any shape: no crash, no leak, no hang. */
static void
test_default_rules_random_input (void **state)
{
  (void) state;
  struct ruleset *rs = ruleset_load (DEFAULT_RULES, NULL, NULL);
  assert_non_null (rs);
  static const char alphabet[] = "rm -f/~$(){}|&;<>'\"`\\\n\tabc*.=:0123"
                                 "\x1b\xff\xc3";
  uint64_t x = 0x9e3779b97f4a7c15u;
  char buf[600];
  for (int round = 0; round < 3000; round++)
    {
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
      size_t len = (size_t) (x % sizeof buf);
      for (size_t i = 0; i < len; i++)
        {
          x ^= x << 13;
          x ^= x >> 7;
          x ^= x << 17;
          buf[i] = alphabet[x % (sizeof alphabet - 1)];
        }
      struct shell_parse *p = shell_parse (buf, len);
      assert_non_null (p);
      const struct rule *hits[8];
      ruleset_match (rs, p, "/home/u", hits, N_ELEMENTS (hits));
      shell_parse_free (p);
    }
  ruleset_free (rs);
}

/* ---- parser errors ---- */

#define GOOD_RULE                                                            \
  "rule ok\n  action approve\n  description fine\n  command ^ok$\n"

static void
test_error_kinds (void **state)
{
  (void) state;
  static const struct
  {
    const char *def, *admin;
    char which;
    unsigned line;
    const char *message;
  } t[] = {
    { "bogus x\n", "", 'd', 1, "unknown directive \"bogus\"" },
    { GOOD_RULE "\n  frobnicate\n", "", 'd', 6,
      "unknown directive \"frobnicate\"" },
    { "rule r\n action approve\n description d\n command ^(a\n", "", 'd', 4,
      "bad command pattern at offset 3: missing closing parenthesis" },
    { "rule r\n action approve\n description d\n line a{2,1}\n", "", 'd', 4,
      "bad line pattern at offset 5: numbers out of order in {} quantifier" },
    { "rule r\n action approve\n description d\n text (*UTF)x\n", "", 'd', 4,
      "bad text pattern at offset 6: using UTF is disabled by the "
      "application" },
    { GOOD_RULE "rule ok\n", "", 'd', 5,
      "duplicate rule id ok (first defined at %D:1)" },
    { GOOD_RULE, "rule ok\n", 'a', 1,
      "duplicate rule id ok (first defined at %D:1)" },
    { "rule r\n description d\n command x\n", "", 'd', 1,
      "rule r has no `action`" },
    { "rule r\n action block\n command x\n" GOOD_RULE, "", 'd', 1,
      "rule r has no `description`" },
    { "rule r\n action block\n description d\n", "", 'd', 1,
      "rule r has no pattern (command, line, redirect, script or text)" },
    { "rule r\n action deny\n", "", 'd', 2,
      "`action deny` is only allowed in the administrator's rule file" },
    { "rule r\n action maybe\n", "", 'd', 2,
      "bad action \"maybe\": expected deny, block or approve" },
    { "rule r\n action block\n action approve\n", "", 'd', 3,
      "rule r has two `action` lines" },
    { "rule r\n description a\n description b\n", "", 'd', 3,
      "rule r has two `description` lines" },
    { "rule r\n description\n", "", 'd', 2, "empty description" },
    { "rule Bad_Id\n", "", 'd', 1,
      "bad rule id \"Bad_Id\": expected 1 to 64 of [a-z0-9-]" },
    { "rule\n", "", 'd', 1, "bad rule id \"\": expected 1 to 64 of [a-z0-9-]" },
    { "action block\n", "", 'd', 1,
      "`action` outside a rule (a `rule ID` line starts one)" },
    { GOOD_RULE "disable ok\n  match x\n", "x", 'd', 5,
      "`disable` is only allowed in the administrator's rule file" },
    { GOOD_RULE "set allow_bypass yes\n", "", 'd', 5,
      "`set` is only allowed in the administrator's rule file" },
    { GOOD_RULE, "disable nope\n", 'a', 1, "disable: no rule with id \"nope\"" },
    { GOOD_RULE, "\n\ndisable ok\n  match x\n", 'a', 4,
      "`match` outside a rule (a `rule ID` line starts one)" },
    { GOOD_RULE, "set colour blue\n", 'a', 1,
      "set: unknown key \"colour\" (allow_bypass, allow_approve_mode, "
      "isolated_guards, approval_timeout)" },
    { GOOD_RULE, "set allow_bypass maybe\n", 'a', 1,
      "set allow_bypass: expected yes or no, got \"maybe\"" },
    { GOOD_RULE, "set allow_approve_mode\n", 'a', 1,
      "set allow_approve_mode: expected yes or no, got \"\"" },
    { GOOD_RULE, "set isolated_guards none\n", 'a', 1,
      "set isolated_guards: expected full, floor or admin, got \"none\"" },
    { GOOD_RULE, "set approval_timeout 0\n", 'a', 1,
      "set approval_timeout: expected seconds from 1 to 3600, got \"0\"" },
    { GOOD_RULE, "set approval_timeout 3601\n", 'a', 1,
      "set approval_timeout: expected seconds from 1 to 3600, got \"3601\"" },
    { GOOD_RULE, "set approval_timeout -5\n", 'a', 1,
      "set approval_timeout: expected seconds from 1 to 3600, got \"-5\"" },
    { GOOD_RULE, "set approval_timeout 99999999999999999999\n", 'a', 1,
      "set approval_timeout: expected seconds from 1 to 3600, got "
      "\"99999999999999999999\"" },
    { GOOD_RULE, "set approval_timeout 30\n# x\nset approval_timeout 40\n",
      'a', 3, "set: approval_timeout given twice (first at line 1)" },
    { GOOD_RULE "network-allow a.test\n", "", 'd', 5,
      "`network-allow` is only allowed in the administrator's rule file" },
    { GOOD_RULE "network-range 10.0.0.0/8\n", "", 'd', 5,
      "`network-range` is only allowed in the administrator's rule file" },
    { GOOD_RULE, "network-allow *\n", 'a', 1,
      "network-allow: \"*\": '*' may only stand first, as \"*.\" before a "
      "name" },
    { GOOD_RULE, "network-allow a.test:0\n", 'a', 1,
      "network-allow: \"a.test:0\": a port must be a number from 1 to 65535" },
    { GOOD_RULE, "network-allow\n", 'a', 1,
      "network-allow: expected an argument" },
    { GOOD_RULE, "network-range 10.0.0.1/8\n", 'a', 1,
      "network-range: \"10.0.0.1/8\": the address has bits set past the /8 "
      "prefix" },
    { GOOD_RULE, "\nnetwork-range nope\n", 'a', 2,
      "network-range: \"nope\": not an IPv4 or IPv6 address or CIDR range" },
    { "rule r\n action block\n description d\n command ^x \n", "", 'd', 4,
      "trailing blank in pattern (write [ ] or \\x20 if it is meant)" },
    { "rule r\n action block\n description d\n command\n", "", 'd', 4,
      "empty pattern" },
    { GOOD_RULE "  match x\t\n", "", 'd', 5,
      "trailing blank in case (write [ ] or \\x20 if it is meant)" },
    { GOOD_RULE "  no-match\n", "", 'd', 5, "empty case" },
  };
  for (size_t i = 0; i < N_ELEMENTS (t); i++)
    {
      write_text (def_path, t[i].def);
      write_text (admin_path, t[i].admin);
      /* %D in a message stands for the default file's path. */
      char *msg = strdup (t[i].message);
      char *d = strstr (msg, "%D");
      if (d)
        {
          char *m;
          *d = '\0';
          assert_true (asprintf (&m, "%s%s%s", msg, def_path, d + 2) > 0);
          free (msg);
          msg = m;
        }
      print_message ("error case %zu\n", i);
      expect_error (t[i].which, t[i].line, msg);
      free (msg);
    }
}

static void
test_error_nul_byte (void **state)
{
  (void) state;
  static const char text[] = GOOD_RULE "  match a\0b\n";
  write_file (def_path, text, sizeof text - 1);
  write_text (admin_path, "");
  expect_error ('d', 5, "NUL byte in line");
}

static void
test_error_files (void **state)
{
  (void) state;
  char *err = NULL;
  /* The default file must exist. */
  assert_null (ruleset_load (def_path, NULL, &err));
  char *want;
  assert_true (asprintf (&want, "%s: cannot read: %s", def_path,
                         strerror (ENOENT)) > 0);
  assert_string_equal (err, want);
  free (want);
  free (err);

  /* A missing admin file is no admin file ... */
  write_text (def_path, GOOD_RULE);
  struct ruleset *rs = load_ok (true);
  assert_int_equal (ruleset_count (rs, NULL), 1);
  ruleset_free (rs);

  /* ... an unreadable one is an error. */
  assert_int_equal (mkdir (admin_path, 0700), 0);
  err = NULL;
  assert_null (ruleset_load (def_path, admin_path, &err));
  assert_true (asprintf (&want, "%s: cannot read: %s", admin_path,
                         strerror (EISDIR)) > 0);
  assert_string_equal (err, want);
  free (want);
  free (err);
  assert_int_equal (rmdir (admin_path), 0);

  /* A file too large to be a rule file. */
  size_t big = 4 * 1024 * 1024 + 1;
  char *junk = malloc (big);
  assert_non_null (junk);
  memset (junk, '#', big);
  write_file (admin_path, junk, big);
  free (junk);
  err = NULL;
  assert_null (ruleset_load (def_path, admin_path, &err));
  assert_true (asprintf (&want, "%s: larger than 4194304 bytes",
                         admin_path) > 0);
  assert_string_equal (err, want);
  free (want);
  free (err);

  /* err may be NULL. */
  write_text (admin_path, "bogus\n");
  assert_null (ruleset_load (def_path, admin_path, NULL));
}

/* Layout freedom: comments, blank lines, any indentation, CRLF. */
static void
test_layout (void **state)
{
  (void) state;
  write_text (def_path,
              "# comment\n\n"
              "rule a\r\n"
              "action approve\r\n"
              "\t\tdescription   spaced out  \n"
              "      command ^a( |$)\n"
              "    # a comment inside a rule\n"
              "  match a b\n"
              "  match a\n"
              "  no-match b a\n"
              "  no-match ab\n");
  struct ruleset *rs = load_ok (false);
  const struct rule *r = ruleset_find (rs, "a");
  assert_non_null (r);
  assert_string_equal (r->description, "spaced out");
  char *want;
  assert_true (asprintf (&want, "%s:3", def_path) > 0);
  assert_string_equal (r->origin, want);
  free (want);
  size_t n_cases;
  assert_int_equal (ruleset_count (rs, &n_cases), 1);
  assert_int_equal (n_cases, 4);
  char *report = NULL;
  assert_int_equal (ruleset_check_cases (rs, &report), 0);
  assert_null (report);
  ruleset_free (rs);
}

/* ---- the administrator's file ---- */

static void
test_admin_order_and_disable (void **state)
{
  (void) state;
  write_text (def_path,
              "rule d-block\n action block\n description b\n command ^foo\n"
              "rule d-approve\n action approve\n description a\n"
              "  command ^foo\n"
              "rule d-other\n action block\n description o\n command ^bar\n"
              "rule d-off\n action block\n description off\n command ^foo\n");
  write_text (admin_path,
              "rule a-approve\n action approve\n description aa\n"
              "  command ^foo\n"
              "disable d-off\n"
              "rule a-deny\n action deny\n description no\n command ^foo x\n"
              "rule a-block\n action block\n description ab\n"
              "  redirect ^> out$\n"
              "set allow_bypass yes\n"
              "set allow_approve_mode no\n"
              "set isolated_guards admin\n"
              "set approval_timeout 3600\n");
  struct ruleset *rs = load_ok (true);
  /* deny, then block (file order, default file first), then approve. */
  expect_ids (rs, "foo x > out", NULL, "a-deny d-block a-block d-approve "
              "a-approve");
  expect_ids (rs, "foo y", NULL, "d-block d-approve a-approve");
  expect_ids (rs, "bar", NULL, "d-other");

  /* The count of all matches, even past max. */
  struct shell_parse *p = shell_parse ("foo x > out", 11);
  const struct rule *two[2];
  assert_int_equal (ruleset_match (rs, p, NULL, two, 2), 5);
  assert_string_equal (two[0]->id, "a-deny");
  assert_int_equal (two[0]->action, RULE_DENY);
  assert_string_equal (two[1]->id, "d-block");
  assert_int_equal (ruleset_match (rs, p, NULL, NULL, 0), 5);
  shell_parse_free (p);

  /* Listed in file order, without the disabled rule. */
  static const char *const listed[] = { "d-block", "d-approve", "d-other",
                                        "a-approve", "a-deny", "a-block" };
  for (size_t i = 0; i < N_ELEMENTS (listed); i++)
    assert_string_equal (ruleset_rule (rs, i)->id, listed[i]);
  assert_null (ruleset_rule (rs, N_ELEMENTS (listed)));

  /* A disabled rule is gone. */
  assert_null (ruleset_find (rs, "d-off"));
  assert_non_null (ruleset_find (rs, "d-block"));
  assert_int_equal (ruleset_count (rs, NULL), 6);

  const struct rules_settings *s = ruleset_settings (rs);
  assert_true (s->allow_bypass);
  assert_false (s->allow_approve_mode);
  assert_int_equal (s->isolated_guards, GUARDS_ADMIN);
  assert_int_equal (s->approval_timeout, 3600);
  ruleset_free (rs);

  write_text (admin_path, "set isolated_guards full\nset allow_bypass no\n"
                          "set approval_timeout 1\n");
  rs = load_ok (true);
  s = ruleset_settings (rs);
  assert_false (s->allow_bypass);
  assert_true (s->allow_approve_mode);
  assert_int_equal (s->isolated_guards, GUARDS_FULL);
  assert_int_equal (s->approval_timeout, 1);
  ruleset_free (rs);
}

/* The network allowlist caps: kept in order, parsed as the user's own
 * entries are, none by default. */
static void
test_network_caps (void **state)
{
  (void) state;
  write_text (def_path, GOOD_RULE);
  write_text (admin_path, "");
  struct ruleset *rs = load_ok (true);
  const struct rules_settings *s = ruleset_settings (rs);
  assert_int_equal (s->n_network_allow, 0);
  assert_null (s->network_allow);
  assert_int_equal (s->n_network_ranges, 0);
  ruleset_free (rs);

  write_text (admin_path, "rule a-deny\n action deny\n description d\n"
                          "  command ^rm\n"
                          "network-allow *.Debian.org\n"
                          "  network-range 10.0.0.0/8 \n"
                          "network-allow pypi.org:443\n"
                          "network-range fd00::/8\n");
  rs = load_ok (true);
  s = ruleset_settings (rs);
  assert_int_equal (s->n_network_allow, 2);
  assert_string_equal (s->network_allow[0].text, "*.Debian.org");
  assert_string_equal (s->network_allow[0].domain, "debian.org");
  assert_true (s->network_allow[0].wildcard);
  assert_string_equal (s->network_allow[1].domain, "pypi.org");
  assert_int_equal (s->network_allow[1].n_ports, 1);
  assert_int_equal (s->n_network_ranges, 2);
  assert_string_equal (s->network_ranges[0].text, "10.0.0.0/8");
  assert_int_equal (s->network_ranges[1].family, AF_INET6);
  /* The rule before the network lines ended at the first of them. */
  expect_ids (rs, "rm x", NULL, "a-deny");
  ruleset_free (rs);
}

/* ---- cases ---- */

static void
test_check_cases_reports (void **state)
{
  (void) state;
  write_text (def_path,
              "rule r\n action approve\n description d\n command ^rm( |$)\n"
              "  match rm x\n"
              "  match ls\n"                /* fails */
              "  no-match ls\n"
              "  no-match rmdir x\n"
              "rule thin\n action block\n description t\n command ^x\n"
              "  match x\n"
              "  no-match y\n");
  write_text (admin_path,
              "rule admin-thin\n action approve\n description t\n"
              "  command ^z\n"
              "  match z\n");
  struct ruleset *rs = load_ok (true);
  char *report = NULL;
  int failures = ruleset_check_cases (rs, &report);
  assert_non_null (report);
  char *want;
  assert_true (asprintf (&want,
                         "%s:6: rule r: does not match: ls\n"
                         "%s:9: rule thin: needs at least 2 match and 2 "
                         "no-match cases (has 1 and 1)\n",
                         def_path, def_path) > 0);
  if (strcmp (report, want) != 0)
    fail_msg ("report\n%s\nwant\n%s", report, want);
  assert_int_equal (failures, 2);
  free (want);
  free (report);
  ruleset_free (rs);

  /* A no-match case that matches, with escapes shown as written. */
  write_text (def_path,
              "rule r\n action approve\n description d\n text a\\tb\n"
              "  match x a\\tb\n"
              "  match a\\tbc\n"
              "  no-match a\\\\tb\n"
              "  no-match echo \\e[1ma\\tb\\x7f\n");
  rs = load_ok (false);
  report = NULL;
  assert_int_equal (ruleset_check_cases (rs, &report), 1);
  assert_true (asprintf (&want, "%s:8: rule r: matches no-match case: "
                         "echo \\x1b[1ma\\tb\\x7f\n", def_path) > 0);
  assert_string_equal (report, want);
  free (want);
  free (report);
  ruleset_free (rs);
}

/* A disabled rule's cases are not run. */
static void
test_disabled_cases_skipped (void **state)
{
  (void) state;
  write_text (def_path,
              "rule r\n action approve\n description d\n command ^rm\n"
              "  match ls\n");
  write_text (admin_path, "disable r\n");
  struct ruleset *rs = load_ok (true);
  size_t n_cases = 99;
  assert_int_equal (ruleset_count (rs, &n_cases), 0);
  assert_int_equal (n_cases, 0);
  char *report = NULL;
  assert_int_equal (ruleset_check_cases (rs, &report), 0);
  assert_null (report);
  ruleset_free (rs);
}

/* ---- matching ---- */

static void
test_scopes (void **state)
{
  (void) state;
  write_text (def_path,
              "rule cmd\n action approve\n description c\n"
              "  command ^rm -rf x$\n"
              "rule redir\n action approve\n description r\n"
              "  redirect ^2>> log$\n"
              "rule pipe\n action approve\n description p\n"
              "  line ^curl -s u \\| sh$\n"
              "rule and\n action approve\n description a\n"
              "  line ^cat a > b && ls ; id$\n"
              "rule txt\n action approve\n description t\n"
              "  text ^echo 'hi'  there$\n"
              "rule caseless\n action approve\n description ci\n"
              "  text (?i)drop table\n"
              "rule code\n action approve\n description py\n"
              "  script ^python print\\(1\\)$\n"
              "rule dyn\n action approve\n description d\n"
              "  script ^dynamic-sh \\$x$\n");
  struct ruleset *rs = load_ok (false);
  /* Words: quotes removed, the command name reduced to its basename. */
  expect_ids (rs, "/bin/rm -rf 'x'", NULL, "cmd");
  expect_ids (rs, "rm -rf x y", NULL, "");
  expect_ids (rs, "echo rm -rf x", NULL, "");
  expect_ids (rs, "make 2>>log", NULL, "redir");
  expect_ids (rs, "make 2> log", NULL, "");
  expect_ids (rs, "curl -s u | /bin/sh", NULL, "pipe");
  expect_ids (rs, "curl -s u && sh", NULL, "");
  expect_ids (rs, "cat a >b && ls; id", NULL, "and");
  /* The text scope sees the normalized text, quotes and spacing kept. */
  expect_ids (rs, "echo 'hi'  there", NULL, "txt");
  expect_ids (rs, "echo hi there", NULL, "");
  expect_ids (rs, "psql -c 'DROP TABLE x'", NULL, "caseless");
  /* The script scope: LANG TEXT of what a shell or interpreter runs. */
  expect_ids (rs, "python3 -c 'print(1)'", NULL, "code");
  expect_ids (rs, "echo python3 -c 'print(1)'", NULL, "");
  expect_ids (rs, "bash -c \"$x\"", NULL, "dyn");
  expect_ids (rs, "bash -c '$x'", NULL, "");
  /* an empty argument does not hide the words after it */
  expect_ids (rs, "/bin/rm '' -rf 'x'", NULL, "");
  ruleset_free (rs);
}

static void
test_home_folding (void **state)
{
  (void) state;
  write_text (def_path,
              "rule home\n action approve\n description h\n"
              "  command ^rm ~(?:/x)?$\n"
              "rule redir\n action approve\n description r\n"
              "  redirect ^> ~/\\.bashrc$\n"
              "rule line\n action approve\n description l\n"
              "  line ^ls ~ \\| cat$\n");
  struct ruleset *rs = load_ok (false);
  expect_ids (rs, "rm $HOME/x", NULL, "home");
  expect_ids (rs, "rm \"${HOME}\"/x", NULL, "home");
  expect_ids (rs, "rm \"$HOME\"", NULL, "home");
  expect_ids (rs, "rm ~/x", NULL, "home");
  expect_ids (rs, "rm /home/alice/x", "/home/alice", "home");
  expect_ids (rs, "rm /home/alice", "/home/alice", "home");
  expect_ids (rs, "rm /home/alice/x", "/home/alice/", "home");
  expect_ids (rs, "rm /home/alice/x", NULL, "");
  expect_ids (rs, "rm /home/alicex/x", "/home/alice", "");
  expect_ids (rs, "rm $HOMEx/x", NULL, "");
  expect_ids (rs, "rm x$HOME/x", NULL, "");
  /* "/" or a relative path as home would fold everything: ignored. */
  expect_ids (rs, "rm /x", "/", "");
  expect_ids (rs, "rm home/x", "home", "");
  expect_ids (rs, "echo x > /home/alice/.bashrc", "/home/alice", "redir");
  expect_ids (rs, "echo x > $HOME/.bashrc", NULL, "redir");
  expect_ids (rs, "ls /home/alice | cat", "/home/alice", "line");
  ruleset_free (rs);
}

static void
expect_gave_up (const struct ruleset *rs, const char *text, bool want_gave_up,
                const char *want_ids)
{
  struct shell_parse *p = shell_parse (text, strlen (text));
  assert_non_null (p);
  const struct rule *hits[8];
  bool gave_up = !want_gave_up;
  size_t n = ruleset_match_checked (rs, p, NULL, hits, N_ELEMENTS (hits),
                                    &gave_up);
  shell_parse_free (p);
  assert_int_equal (gave_up, want_gave_up);
  char ids[200] = "";
  for (size_t i = 0; i < n && i < N_ELEMENTS (hits); i++)
    snprintf (ids + strlen (ids), sizeof ids - strlen (ids), "%s%s",
              i ? " " : "", hits[i]->id);
  assert_string_equal (ids, want_ids);
}

/* A pattern PCRE2 gives up on counts as a match, and so does every
 * pattern after the command's work budget is spent. */
static void
test_match_limit_fails_closed (void **state)
{
  (void) state;
  write_text (def_path, GOOD_RULE);
  write_text (admin_path,
              "rule slow\n action deny\n description catastrophic\n"
              "  command ^(?:a|aa)+$\n");
  struct ruleset *rs = load_ok (true);
  /* Short: an honest answer either way. */
  expect_gave_up (rs, "aaaa", false, "slow");
  expect_gave_up (rs, "aaaab", false, "");
  expect_gave_up (rs, "ok", false, "ok");
  /* Long: 2^n paths before "no match"; matching gives up, and the rules
   * it could not finish match too. */
  char cmd[80];
  memset (cmd, 'a', 70);
  strcpy (cmd + 70, "b");
  expect_gave_up (rs, cmd, true, "slow ok");
  ruleset_free (rs);
}

/* PCRE2 counts its limit per starting position; the budget counts the
 * whole command, so a pattern that is quadratic over the subject is
 * stopped although no single start position is expensive. */
static void
test_work_budget_spans_start_positions (void **state)
{
  (void) state;
  write_text (def_path,
              "rule quad\n action approve\n description quadratic\n"
              "  text (*NO_START_OPT)a[ax]*c\n");
  struct ruleset *rs = load_ok (false);
  expect_gave_up (rs, "echo aaac", false, "quad");
  expect_gave_up (rs, "echo aaab", false, "");
  size_t n = 40000;
  char *cmd = malloc (n + 8);
  assert_non_null (cmd);
  memcpy (cmd, "echo ", 5);
  memset (cmd + 5, 'a', n);
  strcpy (cmd + 5 + n, "b");
  expect_gave_up (rs, cmd, true, "quad");
  free (cmd);
  ruleset_free (rs);
}

/* Budgets are per subject: a subject that exhausts its own does not
 * make the matching of the others give up, and a rule that really
 * matched is reported as sure. */
static void
test_budget_per_subject (void **state)
{
  (void) state;
  write_text (def_path,
              "rule quad\n action approve\n description quadratic\n"
              "  command (*NO_START_OPT)a[ax]*c\n"
              "rule rm\n action block\n description rm\n"
              "  command ^rm -rf /$\n");
  struct ruleset *rs = load_ok (false);
  size_t n = 40000;
  char *cmd = malloc (n + 32);
  assert_non_null (cmd);
  strcpy (cmd, "rm -rf /; echo ");
  size_t k = strlen (cmd);
  memset (cmd + k, 'a', n);
  strcpy (cmd + k + n, "b");
  struct shell_parse *p = shell_parse (cmd, strlen (cmd));
  assert_non_null (p);
  struct rule_hit hits[4];
  bool gave_up = false;
  size_t m = ruleset_match_hits (rs, p, NULL, hits, 4, &gave_up);
  assert_true (gave_up);
  assert_int_equal (m, 2);
  /* blocks are matched first: rm, surely; quad only counted */
  assert_string_equal (hits[0].rule->id, "rm");
  assert_true (hits[0].sure);
  assert_string_equal (hits[1].rule->id, "quad");
  assert_false (hits[1].sure);
  shell_parse_free (p);
  /* the same long subject alone: the other rule is an honest no */
  p = shell_parse (cmd + 10, strlen (cmd + 10));
  m = ruleset_match_hits (rs, p, NULL, hits, 4, &gave_up);
  assert_true (gave_up);
  assert_int_equal (m, 1);
  assert_string_equal (hits[0].rule->id, "quad");
  shell_parse_free (p);
  free (cmd);
  ruleset_free (rs);
}

int
main (void)
{
#define T(f) cmocka_unit_test_setup_teardown (f, setup, teardown)
  const struct CMUnitTest tests[] = {
    T (test_default_rules_cases_pass),
    T (test_default_rules_actions),
    T (test_default_rules_random_input),
    T (test_error_kinds),
    T (test_error_nul_byte),
    T (test_error_files),
    T (test_layout),
    T (test_admin_order_and_disable),
    T (test_network_caps),
    T (test_check_cases_reports),
    T (test_disabled_cases_skipped),
    T (test_scopes),
    T (test_home_folding),
    T (test_match_limit_fails_closed),
    T (test_work_budget_spans_start_positions),
    T (test_budget_per_subject),
  };
#undef T
  return cmocka_run_group_tests_name ("rules", tests, NULL, NULL);
}
