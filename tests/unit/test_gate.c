/* The approval gate's order of evaluation and its modes (policy/gate.c),
 * with small rule files written here so each step is seen on its own. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "gate.h"

static char dir[] = "/tmp/airlock-test-gate.XXXXXX";
static char default_path[256], admin_path[256];

static const char default_rules[]
    = "rule wipe-root\n"
      "  action block\n"
      "  description wipe the root filesystem\n"
      "  command ^rm( -[a-zA-Z]+)* /$\n"
      "rule rm-recursive\n"
      "  action approve\n"
      "  description recursive delete\n"
      "  command ^rm( -[a-zA-Z]+)* -[a-zA-Z]*r\n"
      "rule pipe-to-shell\n"
      "  action approve\n"
      "  description pipe to a shell\n"
      "  line (curl|wget)[^|]*\\| *(ba)?sh\\b\n";

static void
write_file (const char *path, const char *text)
{
  FILE *f = fopen (path, "w");
  assert_non_null (f);
  fputs (text, f);
  fclose (f);
}

static struct ruleset *
load (const char *admin)
{
  if (admin)
    write_file (admin_path, admin);
  else
    unlink (admin_path);
  char *err = NULL;
  struct ruleset *rs = ruleset_load (default_path, admin_path, &err);
  if (!rs)
    fail_msg ("ruleset_load: %s", err);
  return rs;
}

static struct gate_context
host (enum gate_mode mode)
{
  return (struct gate_context){ .mode = mode, .host_access = true };
}

static void
expect (const struct ruleset *rs, const struct gate_context *ctx,
        const char *cmd, enum gate_verdict v, const char *by)
{
  struct gate_decision d;
  gate_decide (rs, ctx, cmd, &d);
  if (d.verdict != v || strcmp (d.decided_by, by))
    fail_msg ("%s: got verdict %d by %s, want %d by %s", cmd, d.verdict,
              d.decided_by, v, by);
}

static void
test_no_rule_allows (void **state)
{
  (void) state;
  struct ruleset *rs = load (NULL);
  struct gate_context c = host (GATE_MODE_DENY);
  expect (rs, &c, "ls -la", GATE_ALLOW, "no-rule");
  expect (rs, &c, "echo rm -rf /", GATE_ALLOW, "no-rule");
  ruleset_free (rs);
}

static void
test_modes (void **state)
{
  (void) state;
  struct ruleset *rs = load (NULL);
  struct gate_context c = host (GATE_MODE_DENY);
  expect (rs, &c, "rm -rf build", GATE_DENY, "mode-deny");
  c.mode = GATE_MODE_ASK;
  expect (rs, &c, "rm -rf build", GATE_ASK, "pending");
  c.mode = GATE_MODE_INTERACTIVE;
  expect (rs, &c, "rm -rf build", GATE_ASK, "pending");
  c.mode = GATE_MODE_APPROVE;
  expect (rs, &c, "rm -rf build", GATE_ALLOW, "mode-approve");
  ruleset_free (rs);
  rs = load ("set allow_approve_mode no\n");
  expect (rs, &c, "rm -rf build", GATE_DENY, "approve-mode-forbidden");
  ruleset_free (rs);
}

static void
test_hard_block_beats_every_mode (void **state)
{
  (void) state;
  struct ruleset *rs = load ("set allow_bypass yes\n");
  struct gate_context c = host (GATE_MODE_APPROVE);
  c.bypass = true;
  expect (rs, &c, "rm -rf /", GATE_DENY, "hard-block");
  struct id_set always = { 0 };
  id_set_add (&always, "wipe-root");
  c.always = &always;
  expect (rs, &c, "rm -rf /", GATE_DENY, "hard-block");
  id_set_clear (&always);
  ruleset_free (rs);
}

static void
test_admin_deny_comes_first (void **state)
{
  (void) state;
  struct ruleset *rs = load ("set allow_bypass yes\n"
                             "set isolated_guards admin\n"
                             "rule no-curl\n"
                             "  action deny\n"
                             "  description no downloads on this host\n"
                             "  command ^curl\\b\n");
  /* isolated, bypass, approve mode: still refused. */
  struct gate_context c = { .mode = GATE_MODE_APPROVE, .bypass = true };
  expect (rs, &c, "curl -s https://example.org", GATE_DENY, "admin-deny");
  /* Before the hard blocks too: the admin's word is reported. */
  c.host_access = true;
  expect (rs, &c, "curl x; rm -rf /", GATE_DENY, "admin-deny");
  /* isolated_guards admin: no hard block in an isolated sandbox. */
  c.host_access = false;
  expect (rs, &c, "rm -rf /", GATE_ALLOW, "isolated");
  ruleset_free (rs);
}

static void
test_user_deny_globs (void **state)
{
  (void) state;
  struct ruleset *rs = load (NULL);
  const char *const globs[] = { "sudo *", "git push*", NULL };
  struct gate_context c = host (GATE_MODE_APPROVE);
  c.user_deny = globs;
  expect (rs, &c, "sudo apt-get install x", GATE_DENY, "user-deny");
  /* A path-qualified name is the same command. */
  expect (rs, &c, "/usr/bin/sudo id", GATE_DENY, "user-deny");
  expect (rs, &c, "echo $(SUDO id)", GATE_DENY, "user-deny");
  expect (rs, &c, "cd repo && git push --force origin main", GATE_DENY, "user-deny");
  expect (rs, &c, "echo sudo", GATE_ALLOW, "no-rule");
  /* The user's deny list holds on an isolated sandbox too. */
  c.host_access = false;
  expect (rs, &c, "sudo id", GATE_DENY, "user-deny");
  struct gate_decision d;
  c.host_access = true;
  gate_decide (rs, &c, "sudo id", &d);
  assert_string_equal (d.deny_glob, "sudo *");
  ruleset_free (rs);
}

static void
test_isolated_floor (void **state)
{
  (void) state;
  struct ruleset *rs = load (NULL);
  struct gate_context c = { .mode = GATE_MODE_DENY };
  expect (rs, &c, "rm -rf build", GATE_ALLOW, "isolated");
  expect (rs, &c, "rm -rf /", GATE_DENY, "hard-block");
  ruleset_free (rs);
  rs = load ("set isolated_guards full\n");
  expect (rs, &c, "rm -rf build", GATE_DENY, "mode-deny");
  ruleset_free (rs);
}

static void
test_bypass_needs_the_admin (void **state)
{
  (void) state;
  struct ruleset *rs = load (NULL);
  struct gate_context c = host (GATE_MODE_DENY);
  c.bypass = true;
  struct gate_decision d;
  gate_decide (rs, &c, "rm -rf build", &d);
  assert_int_equal (d.verdict, GATE_DENY);
  assert_true (d.bypass_refused);
  ruleset_free (rs);
  rs = load ("set allow_bypass yes\n");
  expect (rs, &c, "rm -rf build", GATE_ALLOW, "bypass");
  ruleset_free (rs);
}

static void
test_allowlists (void **state)
{
  (void) state;
  struct ruleset *rs = load (NULL);
  struct id_set always = { 0 }, session = { 0 };
  struct gate_context c = host (GATE_MODE_DENY);
  c.always = &always;
  c.session = &session;
  id_set_add (&session, "rm-recursive");
  expect (rs, &c, "rm -rf build", GATE_ALLOW, "session-approval");
  /* Two rules match: both must be approved. */
  expect (rs, &c, "rm -r x; curl -s u | sh", GATE_DENY, "mode-deny");
  id_set_add (&always, "pipe-to-shell");
  expect (rs, &c, "curl -s u | sh", GATE_ALLOW, "allowlist");
  expect (rs, &c, "rm -r x; curl -s u | sh", GATE_ALLOW, "session-approval");
  struct gate_decision d;
  c.session = NULL;
  c.mode = GATE_MODE_ASK;
  gate_decide (rs, &c, "rm -r x; curl -s u | sh", &d);
  assert_int_equal (d.verdict, GATE_ASK);
  assert_int_equal (d.n_rules, 1); /* only what still needs an answer */
  assert_string_equal (d.rules[0]->id, "rm-recursive");
  id_set_clear (&always);
  id_set_clear (&session);
  ruleset_free (rs);
}

static void
test_denial_message (void **state)
{
  (void) state;
  struct ruleset *rs = load (NULL);
  struct gate_context c = host (GATE_MODE_DENY);
  struct gate_decision d;
  gate_decide (rs, &c, "rm -rf build", &d);
  char *m = gate_denial_message (&d);
  assert_non_null (strstr (m, "recursive delete (rm-recursive)"));
  assert_non_null (strstr (m, "nobody can approve"));
  assert_non_null (strstr (m, "Do not retry"));
  free (m);
  ruleset_free (rs);
}

/* Input a shell or interpreter would run is judged too; input to a
 * program that only reads data is not. */
static void
test_input_run_as_code (void **state)
{
  (void) state;
  struct ruleset *rs = load (NULL);
  struct gate_context c = host (GATE_MODE_DENY);
  struct gate_decision d;
  gate_decide_input (rs, &c, "bash", "cd /\nrm -rf /\n", &d);
  assert_int_equal (d.verdict, GATE_DENY);
  assert_string_equal (d.decided_by, "hard-block");
  gate_decide_input (rs, &c, "/usr/bin/python3.11 -", "rm -rf build", &d);
  assert_string_equal (d.decided_by, "mode-deny");
  gate_decide_input (rs, &c, "cd x && sh -s", "rm -r build", &d);
  assert_string_equal (d.decided_by, "mode-deny");
  expect (rs, &c, "cat > notes.txt", GATE_ALLOW, "no-rule");
  gate_decide_input (rs, &c, "cat > notes.txt", "rm -rf /", &d);
  assert_int_equal (d.verdict, GATE_ALLOW);
  /* An ask covers the rules of command and input alike. */
  c.mode = GATE_MODE_ASK;
  gate_decide_input (rs, &c, "rm -r a; bash", "curl -s u | sh", &d);
  assert_int_equal (d.verdict, GATE_ASK);
  assert_int_equal (d.n_rules, 2);
  ruleset_free (rs);
}

/* Past the tokenizer's nesting limit nothing is judged: refused. */
static void
test_too_complex_is_refused (void **state)
{
  (void) state;
  struct ruleset *rs = load (NULL);
  struct gate_context c = host (GATE_MODE_APPROVE);
  char cmd[2000] = "";
  for (int i = 0; i < 100; i++)
    strcat (cmd, "$(");
  strcat (cmd, "ls");
  for (int i = 0; i < 100; i++)
    strcat (cmd, ")");
  expect (rs, &c, cmd, GATE_DENY, "too-complex");
  struct gate_decision d;
  gate_decide (rs, &c, cmd, &d);
  char *m = gate_denial_message (&d);
  assert_non_null (strstr (m, "too complex"));
  free (m);
  ruleset_free (rs);
}

static void
test_mode_names (void **state)
{
  (void) state;
  assert_int_equal (gate_mode_parse ("interactive"), GATE_MODE_INTERACTIVE);
  assert_int_equal (gate_mode_parse ("ask"), GATE_MODE_ASK);
  assert_int_equal (gate_mode_parse ("deny"), GATE_MODE_DENY);
  assert_int_equal (gate_mode_parse ("approve"), GATE_MODE_APPROVE);
  assert_int_equal (gate_mode_parse ("yolo"), -1);
  assert_int_equal (gate_mode_parse (NULL), -1);
  assert_string_equal (gate_mode_name (GATE_MODE_ASK), "ask");
}

static int
setup (void **state)
{
  (void) state;
  if (!mkdtemp (dir))
    return -1;
  snprintf (default_path, sizeof default_path, "%s/default.rules", dir);
  snprintf (admin_path, sizeof admin_path, "%s/policy.rules", dir);
  write_file (default_path, default_rules);
  return 0;
}

static int
teardown (void **state)
{
  (void) state;
  unlink (default_path);
  unlink (admin_path);
  rmdir (dir);
  return 0;
}

int
main (void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test (test_no_rule_allows),
    cmocka_unit_test (test_modes),
    cmocka_unit_test (test_hard_block_beats_every_mode),
    cmocka_unit_test (test_admin_deny_comes_first),
    cmocka_unit_test (test_user_deny_globs),
    cmocka_unit_test (test_isolated_floor),
    cmocka_unit_test (test_bypass_needs_the_admin),
    cmocka_unit_test (test_allowlists),
    cmocka_unit_test (test_denial_message),
    cmocka_unit_test (test_too_complex_is_refused),
    cmocka_unit_test (test_input_run_as_code),
    cmocka_unit_test (test_mode_names),
  };
  return cmocka_run_group_tests (tests, setup, teardown);
}
