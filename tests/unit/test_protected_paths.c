/* SPDX-License-Identifier: MIT */
/* Unit tests for policy/protected_paths.c: where airlock's own directories
 * appear in a sandbox's view, and what cannot be shown at all. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "protected_paths.h"

/* The masks one check asked for, "sandbox=host" each. */
struct seen {
  char masks[8][256];
  size_t n;
  bool fail;
};

static int
note_mask (void *ctx, const char *sandbox_path, const char *host_path,
           char **err)
{
  struct seen *s = ctx;
  if (s->fail)
    {
      *err = strdup ("mask refused");
      return -1;
    }
  assert_true (s->n < 8);
  snprintf (s->masks[s->n++], sizeof s->masks[0], "%s=%s", sandbox_path,
            host_path);
  return 0;
}

static struct protected_dirs dirs;
static char *links[2];

/* The usual three under /home/u, all present, no symlinks. */
static void
usual (void)
{
  dirs = (struct protected_dirs){ .n = 3 };
  static const char *const what[] = { "configuration", "state (audit log)",
                                      "runtime (daemon socket)" };
  static const char *const where[] = { "/home/u/.config/airlock",
                                       "/home/u/.local/state/airlock",
                                       "/home/u/.local/state/airlock/run-h" };
  for (size_t i = 0; i < 3; i++)
    dirs.d[i] = (struct protected_dir){ .what = what[i], .path = (char *) where[i],
                                        .exists = true };
}

static int
check (const char *src, const char *dst, bool rw, struct seen *s, char **err)
{
  *s = (struct seen){ 0 };
  *err = NULL;
  return protected_check_source (&dirs, src, dst, rw, note_mask, s, err);
}

static void
test_home_workdir_masks_config_and_state (void **state)
{
  (void) state;
  usual ();
  struct seen s;
  char *err;
  assert_int_equal (check ("/home/u", "/home/u", true, &s, &err), 0);
  assert_null (err);
  /* The runtime dir lies in the state dir: its mask covers it. */
  assert_int_equal (s.n, 2);
  assert_string_equal (s.masks[0], "/home/u/.config/airlock=/home/u/.config/airlock");
  assert_string_equal (s.masks[1],
                       "/home/u/.local/state/airlock=/home/u/.local/state/airlock");
}

static void
test_masks_follow_the_destination (void **state)
{
  (void) state;
  usual ();
  struct seen s;
  char *err;
  assert_int_equal (check ("/home", "/mnt/h", false, &s, &err), 0);
  assert_int_equal (s.n, 2);
  assert_string_equal (s.masks[0], "/mnt/h/u/.config/airlock=/home/u/.config/airlock");
  assert_int_equal (check ("/", "/host", false, &s, &err), 0);
  assert_string_equal (s.masks[0], "/host/home/u/.config/airlock=/home/u/.config/airlock");
  /* A rootfs: shown at /. */
  assert_int_equal (check ("/home/u", "/", false, &s, &err), 0);
  assert_string_equal (s.masks[0], "/.config/airlock=/home/u/.config/airlock");
  assert_string_equal (s.masks[1], "/.local/state/airlock=/home/u/.local/state/airlock");
  /* Only the one inside: the config dir. */
  assert_int_equal (check ("/home/u/.config", "/c", true, &s, &err), 0);
  assert_int_equal (s.n, 1);
  assert_string_equal (s.masks[0], "/c/airlock=/home/u/.config/airlock");
}

static void
test_unrelated_sources_need_nothing (void **state)
{
  (void) state;
  usual ();
  struct seen s;
  char *err;
  static const char *const srcs[] = { "/home/u/project", "/home/u/.config/air",
                                      "/home/uu", "/srv", "/home/u/.local/statex" };
  for (size_t i = 0; i < sizeof srcs / sizeof srcs[0]; i++)
    {
      assert_int_equal (check (srcs[i], srcs[i], true, &s, &err), 0);
      assert_int_equal (s.n, 0);
    }
}

static void
test_inside_is_refused (void **state)
{
  (void) state;
  usual ();
  struct seen s;
  char *err;
  static const char *const srcs[] = { "/home/u/.config/airlock",
                                      "/home/u/.config/airlock/x",
                                      "/home/u/.local/state/airlock/run-h",
                                      "/home/u/.local/state/airlock/audit.log" };
  for (size_t i = 0; i < sizeof srcs / sizeof srcs[0]; i++)
    {
      assert_int_equal (check (srcs[i], "/w", false, &s, &err), -1);
      assert_non_null (strstr (err, "lies inside airlock's"));
      assert_non_null (strstr (err, srcs[i]));
      free (err);
      assert_int_equal (s.n, 0);
    }
}

static void
test_symlink_on_the_way (void **state)
{
  (void) state;
  usual ();
  links[0] = "/home/u/.config";
  dirs.d[0].path = "/data/cfg/airlock";
  dirs.d[0].links = links;
  dirs.d[0].n_links = 1;
  struct seen s;
  char *err;
  /* Writable: the link could be pointed elsewhere. */
  assert_int_equal (check ("/home/u", "/home/u", true, &s, &err), -1);
  assert_non_null (strstr (err, "/home/u/.config, on the way to it, is a symlink"));
  free (err);
  /* Read-only: it cannot; the state dir is masked, the config dir is not
   * inside. */
  assert_int_equal (check ("/home/u", "/home/u", false, &s, &err), 0);
  assert_int_equal (s.n, 1);
  assert_string_equal (s.masks[0],
                       "/home/u/.local/state/airlock=/home/u/.local/state/airlock");
  /* The target directory itself is masked where shown. */
  assert_int_equal (check ("/data", "/data", true, &s, &err), 0);
  assert_int_equal (s.n, 1);
  assert_string_equal (s.masks[0], "/data/cfg/airlock=/data/cfg/airlock");
}

static void
test_missing_directory (void **state)
{
  (void) state;
  usual ();
  dirs.d[0].exists = false;
  struct seen s;
  char *err;
  assert_int_equal (check ("/home/u", "/home/u", true, &s, &err), -1);
  assert_non_null (strstr (err, "does not exist and could not be created"));
  free (err);
  /* Read-only, nothing can be made there: no mask, no refusal. */
  assert_int_equal (check ("/home/u", "/home/u", false, &s, &err), 0);
  assert_int_equal (s.n, 1);
  /* A missing runtime dir inside a present state dir is covered. */
  usual ();
  dirs.d[2].exists = false;
  assert_int_equal (check ("/home/u", "/home/u", true, &s, &err), -1);
  free (err);
}

static void
test_duplicates_and_mask_errors (void **state)
{
  (void) state;
  usual ();
  dirs.d[1].path = "/home/u/.config/airlock"; /* XDG dirs pointed together */
  struct seen s;
  char *err;
  assert_int_equal (check ("/home/u", "/home/u", true, &s, &err), 0);
  assert_int_equal (s.n, 2); /* the config dir once, the runtime dir */
  assert_string_equal (s.masks[0], "/home/u/.config/airlock=/home/u/.config/airlock");
  assert_string_equal (s.masks[1], "/home/u/.local/state/airlock/run-h="
                                   "/home/u/.local/state/airlock/run-h");
  usual ();
  s.fail = true;
  err = NULL;
  assert_int_equal (protected_check_source (&dirs, "/home/u", "/home/u", true,
                                            note_mask, &s, &err), -1);
  assert_string_equal (err, "mask refused");
  free (err);
}

static void
test_host_path (void **state)
{
  (void) state;
  char *p = protected_host_path ("/home/u", "/w", "/w/.config");
  assert_string_equal (p, "/home/u/.config");
  free (p);
  p = protected_host_path ("/", "/host", "/host/etc");
  assert_string_equal (p, "/etc");
  free (p);
  p = protected_host_path ("/home/u", "/", "/.config");
  assert_string_equal (p, "/home/u/.config");
  free (p);
  p = protected_host_path ("/home/u", "/w", "/w");
  assert_string_equal (p, "/home/u");
  free (p);
  assert_true (protected_path_contains ("/", "/x"));
  assert_true (protected_path_contains ("/a", "/a"));
  assert_true (protected_path_contains ("/a", "/a/b"));
  assert_false (protected_path_contains ("/a", "/ab"));
  assert_false (protected_path_contains ("/a/b", "/a"));
}

int
main (void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test (test_home_workdir_masks_config_and_state),
    cmocka_unit_test (test_masks_follow_the_destination),
    cmocka_unit_test (test_unrelated_sources_need_nothing),
    cmocka_unit_test (test_inside_is_refused),
    cmocka_unit_test (test_symlink_on_the_way),
    cmocka_unit_test (test_missing_directory),
    cmocka_unit_test (test_duplicates_and_mask_errors),
    cmocka_unit_test (test_host_path),
  };
  return cmocka_run_group_tests_name ("protected_paths", tests, NULL, NULL);
}
