/* SPDX-License-Identifier: MIT */
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

#define N_ELEMENTS(a) (sizeof (a) / sizeof ((a)[0]))
#define SHIPPED_RULES AIRLOCK_SOURCE_DIR "/policy/default.rules"

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
  /* python3 - reads Python: judged as Python, with what it hands a shell */
  gate_decide_input (rs, &c, "/usr/bin/python3.11 -", "rm -rf build", &d);
  assert_string_equal (d.decided_by, "no-rule");
  gate_decide_input (rs, &c, "/usr/bin/python3.11 -",
                     "import os\nos.system('rm -rf build')\n", &d);
  assert_string_equal (d.decided_by, "mode-deny");
  gate_decide_input (rs, &c, "python3 script.py", "import os\nos.system('rm -r x')", &d);
  assert_string_equal (d.decided_by, "no-rule"); /* input for a script: data */
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

/* A hard block that really matched is reported as one even when the rest
 * of the command is too complex to judge: what could not be judged does
 * not hide what could (and a verdict never softens when text is added). */
static void
test_hard_block_beats_too_complex (void **state)
{
  (void) state;
  struct ruleset *rs = load (NULL);
  struct gate_context c = host (GATE_MODE_ASK);
  char cmd[2000] = "rm -rf /; ";
  for (int i = 0; i < 100; i++)
    strcat (cmd, "$(");
  strcat (cmd, "ls");
  expect (rs, &c, cmd, GATE_DENY, "hard-block");
  expect (rs, &c, cmd + 10, GATE_DENY, "too-complex");
  ruleset_free (rs);
}

static void
test_strictness_order (void **state)
{
  (void) state;
  struct ruleset *rs = load (NULL);
  struct gate_context c = host (GATE_MODE_ASK);
  struct gate_decision d;
  static const struct
  {
    const char *cmd;
    enum gate_strictness want;
  } t[] = {
    { "ls", GATE_STRICT_ALLOW },
    { "rm -r build", GATE_STRICT_APPROVAL },
    { "rm -rf /", GATE_STRICT_BLOCKED },
  };
  for (size_t i = 0; i < N_ELEMENTS (t); i++)
    {
      gate_decide (rs, &c, t[i].cmd, &d);
      assert_int_equal (gate_strictness (&d), t[i].want);
    }
  c.mode = GATE_MODE_DENY;
  gate_decide (rs, &c, "rm -r build", &d);
  assert_int_equal (gate_strictness (&d), GATE_STRICT_APPROVAL);
  c.mode = GATE_MODE_APPROVE;
  gate_decide (rs, &c, "rm -r build", &d);
  assert_int_equal (gate_strictness (&d), GATE_STRICT_APPROVAL);
  d.decided_by = "too-complex";
  assert_int_equal (gate_strictness (&d), GATE_STRICT_REFUSED);
  assert_true (GATE_STRICT_ALLOW < GATE_STRICT_APPROVAL
               && GATE_STRICT_APPROVAL < GATE_STRICT_REFUSED
               && GATE_STRICT_REFUSED < GATE_STRICT_BLOCKED);
  ruleset_free (rs);
}

/* ---- the shipped rules ---- */

static struct ruleset *
load_shipped (void)
{
  char *err = NULL;
  struct ruleset *rs = ruleset_load (SHIPPED_RULES, NULL, &err);
  if (!rs)
    fail_msg ("%s", err);
  return rs;
}

static const char *const harmless_prefixes[] = { "true; ", ": ; ", "cd . && " };

/* verdict(P + C) is at least as strict as verdict(C), for every case of
 * every shipped rule and every harmless prefix P (the property the
 * fuzz_gate harness checks on random input). */
static void
test_prefix_never_softens (void **state)
{
  (void) state;
  struct ruleset *rs = load_shipped ();
  struct gate_context c = { .mode = GATE_MODE_ASK, .host_access = true,
                            .home = "/home/agent" };
  size_t n_cases = 0, failures = 0, checked = 0;
  ruleset_count (rs, &n_cases);
  assert_true (n_cases >= 924);
  for (size_t i = 0; i < n_cases; i++)
    {
      size_t len;
      const char *text = ruleset_case (rs, i, &len);
      assert_non_null (text);
      if (memchr (text, '\0', len))
        continue; /* the gate takes C strings */
      struct gate_decision base;
      gate_decide (rs, &c, text, &base);
      for (size_t k = 0; k < N_ELEMENTS (harmless_prefixes); k++)
        {
          char *pc;
          assert_true (asprintf (&pc, "%s%s", harmless_prefixes[k], text) > 0);
          struct gate_decision d;
          gate_decide (rs, &c, pc, &d);
          checked++;
          if (gate_strictness (&d) < gate_strictness (&base))
            {
              print_error ("softened: [%s] %s -> [%s] %s\n", text,
                           base.decided_by, pc, d.decided_by);
              failures++;
            }
          free (pc);
        }
    }
  print_message ("%zu prefixed cases checked\n", checked);
  assert_int_equal (failures, 0);
  /* a command that is too complex stays so with a prefix (the nested
   * scripts' budget is per top-level command) */
  char cmd[400] = "";
  for (int i = 0; i < 40; i++)
    strcat (cmd, "eval ");
  strcat (cmd, "rm -r x");
  struct gate_decision d;
  gate_decide (rs, &c, cmd, &d);
  assert_string_equal (d.decided_by, "too-complex");
  for (size_t k = 0; k < N_ELEMENTS (harmless_prefixes); k++)
    {
      char *pc;
      assert_true (asprintf (&pc, "%s%s", harmless_prefixes[k], cmd) > 0);
      gate_decide (rs, &c, pc, &d);
      assert_string_equal (d.decided_by, "too-complex");
      free (pc);
    }
  ruleset_free (rs);
}

/* Every command of a table (tests/gate/NAME.txt: one per line, the
 * escapes of rule cases, # comments) decided in deny mode with the
 * shipped rules: each must be allowed (want_allow) or refused. */
static void
run_table (const char *name, bool want_allow)
{
  struct ruleset *rs = load_shipped ();
  struct gate_context c = { .mode = GATE_MODE_DENY, .host_access = true,
                            .home = "/home/agent" };
  char path[512];
  snprintf (path, sizeof path, "%s/tests/gate/%s.txt", AIRLOCK_SOURCE_DIR,
            name);
  FILE *f = fopen (path, "r");
  if (!f)
    fail_msg ("%s: cannot open", path);
  char *line = NULL;
  size_t cap = 0, n_lines = 0, wrong = 0;
  ssize_t n;
  while ((n = getline (&line, &cap, f)) > 0)
    {
      if (line[n - 1] == '\n')
        line[--n] = '\0';
      if (!*line || line[0] == '#')
        continue;
      size_t len;
      char *cmd = rules_unescape_case (line, &len);
      struct gate_decision d;
      gate_decide (rs, &c, cmd, &d);
      n_lines++;
      if ((d.verdict == GATE_ALLOW) != want_allow)
        {
          wrong++;
          print_error ("%s: %s by %s%s%s: %s\n", name,
                       d.verdict == GATE_ALLOW ? "allowed" : "refused",
                       d.decided_by, d.n_rules ? " " : "",
                       d.n_rules ? d.rules[0]->id : "", line);
        }
      free (cmd);
    }
  free (line);
  fclose (f);
  print_message ("%s: %zu commands, %zu wrong\n", name, n_lines, wrong);
  assert_true (n_lines >= 150);
  assert_int_equal (wrong, 0);
  ruleset_free (rs);
}

static void
test_table_dangerous (void **state)
{
  (void) state;
  run_table ("dangerous", false);
}

static void
test_table_ordinary (void **state)
{
  (void) state;
  run_table ("ordinary", true);
}

/* What runs is judged, not how it is spelled: the shells' and
 * interpreters' scripts by their commands, quoted data never. */
static void
test_judged_by_what_runs (void **state)
{
  (void) state;
  struct ruleset *rs = load_shipped ();
  struct gate_context c = { .mode = GATE_MODE_DENY, .host_access = true };
  expect (rs, &c, "bash -c 'ls -la'", GATE_ALLOW, "no-rule");
  expect (rs, &c, "python3 -c 'print(1)'", GATE_ALLOW, "no-rule");
  expect (rs, &c, "node -e 'console.log(1)'", GATE_ALLOW, "no-rule");
  expect (rs, &c, "python3 - <<'EOF'\nprint(1)\nEOF", GATE_ALLOW, "no-rule");
  expect (rs, &c, "chmod +x x.sh && ./x.sh", GATE_ALLOW, "no-rule");
  expect (rs, &c, "echo 'DROP TABLE x' | grep DROP", GATE_ALLOW, "no-rule");
  expect (rs, &c, "cat /etc/passwd", GATE_ALLOW, "no-rule");
  expect (rs, &c, "{rm,-rf,/}", GATE_DENY, "hard-block");
  expect (rs, &c, "python3 -c 'import os; os.system(\"rm -rf /\")'",
          GATE_DENY, "hard-block");
  expect (rs, &c, "bash -c \"$X\"", GATE_DENY, "mode-deny");
  expect (rs, &c, "psql -c 'DROP TABLE users'", GATE_DENY, "mode-deny");
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

/* On a terminal, a shell or interpreter runs whatever is typed: allowed
 * on the isolated floor, else a dangerous rule of its own, approved like
 * any; a program that only reads data, or a script, is not one. */
static void
test_terminal_interpreter (void **state)
{
  (void) state;
  struct ruleset *rs = load (NULL);
  struct gate_context c = host (GATE_MODE_ASK);
  c.terminal = true;
  struct gate_decision d;
  static const char *const interpreters[]
      = { "bash", "bash -i", "sh", "zsh", "python3", "python3 -i", "node", "cd /tmp && bash -i" };
  for (size_t i = 0; i < N_ELEMENTS (interpreters); i++)
    {
      gate_decide_input (rs, &c, interpreters[i], NULL, &d);
      if (d.verdict != GATE_ASK || d.n_rules != 1
          || strcmp (d.rules[0]->id, GATE_TERMINAL_RULE))
        fail_msg ("%s: got verdict %d by %s", interpreters[i], d.verdict, d.decided_by);
      assert_non_null (strstr (d.rules[0]->description, "arbitrary code"));
    }
  static const char *const data_readers[]
      = { "top", "cat", "python3 script.py", "bash script.sh", "less notes.txt", "vi x" };
  for (size_t i = 0; i < N_ELEMENTS (data_readers); i++)
    {
      gate_decide_input (rs, &c, data_readers[i], NULL, &d);
      if (d.verdict != GATE_ALLOW)
        fail_msg ("%s: got verdict %d by %s", data_readers[i], d.verdict, d.decided_by);
    }
  /* Off a terminal, the same shell is judged by its (absent) input. */
  c.terminal = false;
  gate_decide_input (rs, &c, "bash -i", NULL, &d);
  assert_string_equal (d.decided_by, "no-rule");
  c.terminal = true;
  /* The modes and the allowlists, as for any dangerous rule. */
  c.mode = GATE_MODE_DENY;
  gate_decide_input (rs, &c, "bash", NULL, &d);
  assert_string_equal (d.decided_by, "mode-deny");
  char *m = gate_denial_message (&d);
  assert_non_null (strstr (m, "(" GATE_TERMINAL_RULE ")"));
  free (m);
  c.mode = GATE_MODE_APPROVE;
  gate_decide_input (rs, &c, "bash", NULL, &d);
  assert_string_equal (d.decided_by, "mode-approve");
  struct id_set approved = { 0 };
  assert_int_equal (id_set_add (&approved, GATE_TERMINAL_RULE), 0);
  c.mode = GATE_MODE_DENY;
  c.session = &approved;
  gate_decide_input (rs, &c, "bash", NULL, &d);
  assert_string_equal (d.decided_by, "session-approval");
  c.session = NULL;
  /* The command line is still judged: its own rules join the ask. */
  c.mode = GATE_MODE_ASK;
  gate_decide_input (rs, &c, "rm -r build; bash", NULL, &d);
  assert_int_equal (d.verdict, GATE_ASK);
  assert_int_equal (d.n_rules, 2);
  gate_decide_input (rs, &c, "rm -rf /; bash", NULL, &d);
  assert_string_equal (d.decided_by, "hard-block");
  /* The isolated floor (no host access): allowed. */
  c.host_access = false;
  gate_decide_input (rs, &c, "bash -i", NULL, &d);
  assert_int_equal (d.verdict, GATE_ALLOW);
  assert_string_equal (d.decided_by, "isolated");
  id_set_clear (&approved);
  ruleset_free (rs);
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
    cmocka_unit_test (test_terminal_interpreter),
    cmocka_unit_test (test_hard_block_beats_too_complex),
    cmocka_unit_test (test_strictness_order),
    cmocka_unit_test (test_prefix_never_softens),
    cmocka_unit_test (test_table_dangerous),
    cmocka_unit_test (test_table_ordinary),
    cmocka_unit_test (test_judged_by_what_runs),
    cmocka_unit_test (test_mode_names),
  };
  return cmocka_run_group_tests (tests, setup, teardown);
}
