/* SPDX-License-Identifier: MIT */
/* Unit tests for airlock-egress's audit writer (backends/egress_audit.c):
 * the lines it writes and its rate limit (20 per key per window; the
 * window's end and the "suppressed" count of the next line are checked
 * live by tests/egress.bats, which can wait 10 s). */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "egress_audit.h"

static char tmp[] = "/tmp/test_egress_audit.XXXXXX";

static size_t
count_lines (const char *needle)
{
  char *path;
  assert_true (asprintf (&path, "%s/airlock/audit.log", tmp) > 0);
  FILE *f = fopen (path, "r");
  free (path);
  if (!f)
    return 0;
  char *line = NULL;
  size_t cap = 0, n = 0;
  while (getline (&line, &cap, f) > 0)
    if (!needle || strstr (line, needle))
      n++;
  free (line);
  fclose (f);
  return n;
}

static void
test_rate_limit (void **state)
{
  (void) state;
  char *err = NULL;
  struct egress_audit *a = egress_audit_open ("s1", "local", &err);
  if (!a)
    fail_msg ("open: %s", err);

  struct audit_network x = { .name = "x.test", .port = 443,
                             .fake_address = "10.99.1.1" };
  for (int i = 0; i < 25; i++)
    assert_int_equal (egress_audit (a, false, "denied x", "x.test", &x), 0);
  assert_int_equal (count_lines ("\"reason\":\"denied x\""), EGRESS_AUDIT_BURST);
  /* allow and deny of one name are counted apart */
  assert_int_equal (egress_audit (a, true, "allowed x", "x.test", &x), 0);
  assert_int_equal (count_lines ("\"reason\":\"allowed x\""), 1);
  /* a key is the name, else the sandbox-side address */
  struct audit_network bare = { .port = 9, .fake_address = "10.99.0.50" };
  for (int i = 0; i < 22; i++)
    egress_audit (a, false, "udp", NULL, &bare);
  assert_int_equal (count_lines ("\"fake_address\":\"10.99.0.50\""),
                    EGRESS_AUDIT_BURST);

  /* More keys than the table holds: each new one is written (the least
     recently used is forgotten), and memory stays the table's. */
  for (int i = 0; i < 3 * EGRESS_AUDIT_KEYS; i++)
    {
      char name[32];
      snprintf (name, sizeof name, "n%d.test", i);
      struct audit_network n = { .name = name };
      egress_audit (a, false, "many", NULL, &n);
    }
  assert_int_equal (count_lines ("\"reason\":\"many\""),
                    3 * EGRESS_AUDIT_KEYS);
  /* x.test was evicted: it starts a fresh window */
  egress_audit (a, false, "denied x", "x.test", &x);
  assert_int_equal (count_lines ("\"reason\":\"denied x\""),
                    EGRESS_AUDIT_BURST + 1);
  assert_int_equal (count_lines ("\"decided_by\":\"network-allowlist\""),
                    count_lines (NULL));
  assert_int_equal (count_lines ("\"rules\":[\"x.test\"]"),
                    EGRESS_AUDIT_BURST + 2);
  egress_audit_close (a);
}

int
main (void)
{
  assert_non_null (mkdtemp (tmp));
  setenv ("XDG_STATE_HOME", tmp, 1);
  const struct CMUnitTest tests[] = {
    cmocka_unit_test (test_rate_limit),
  };
  int rc = cmocka_run_group_tests (tests, NULL, NULL);
  char *cmd;
  if (asprintf (&cmd, "rm -rf '%s'", tmp) > 0)
    {
      if (system (cmd) != 0)
        rc = rc ? rc : 1;
      free (cmd);
    }
  return rc;
}
