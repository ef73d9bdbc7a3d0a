/* SPDX-License-Identifier: MIT */
/* backends/singularity_argv.c: version lines, the flags each version has,
 * the exact argv of instance start / exec / stop, the child environment. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "singularity_argv.h"

static char *
joined (char **argv)
{
  size_t n = 1;
  for (char **p = argv; *p; p++)
    n += strlen (*p) + 1;
  char *s = calloc (1, n);
  for (char **p = argv; *p; p++)
    {
      if (p != argv)
        strcat (s, " ");
      strcat (s, *p);
    }
  return s;
}

static void
assert_argv (char **argv, const char *want)
{
  assert_non_null (argv);
  char *got = joined (argv);
  assert_string_equal (got, want);
  free (got);
  sg_argv_free (argv);
}

static void
test_version_parse (void **state)
{
  (void) state;
  struct sg_version v;
  assert_int_equal (sg_version_parse ("apptainer version 1.3.4\n", &v), 0);
  assert_int_equal (v.kind, SG_APPTAINER);
  assert_int_equal (v.major, 1);
  assert_int_equal (v.minor, 3);
  assert_int_equal (v.patch, 4);
  assert_int_equal (sg_version_parse ("singularity-ce version 3.11.5", &v), 0);
  assert_int_equal (v.kind, SG_SINGULARITY);
  assert_true (v.ce);
  assert_int_equal (v.minor, 11);
  assert_int_equal (sg_version_parse ("singularity version 3.8.7", &v), 0);
  assert_false (v.ce);
  assert_int_equal (v.patch, 7);
  /* distribution suffixes, a missing patch level */
  assert_int_equal (sg_version_parse ("apptainer version 1.2.5-1.el8", &v), 0);
  assert_int_equal (v.patch, 5);
  assert_int_equal (sg_version_parse ("apptainer version 1.1", &v), 0);
  assert_int_equal (v.minor, 1);
  assert_int_equal (v.patch, 0);
  assert_int_equal (sg_version_parse ("podman version 4.3.1", &v), -1);
  assert_int_equal (sg_version_parse ("apptainer version x", &v), -1);
  assert_int_equal (sg_version_parse ("", &v), -1);
  assert_int_equal (sg_version_parse (NULL, &v), -1);
  char *t = sg_version_text (&(struct sg_version){ SG_SINGULARITY, true, 3, 11, 5 });
  assert_string_equal (t, "singularity-ce 3.11.5");
  free (t);
}

static void
test_version_gates (void **state)
{
  (void) state;
  struct sg_version v;
  sg_version_parse ("apptainer version 1.0.3", &v);
  assert_null (sg_version_too_old (&v));
  assert_false (sg_has_limits (&v));
  sg_version_parse ("apptainer version 1.1.0", &v);
  assert_true (sg_has_limits (&v));
  sg_version_parse ("apptainer version 0.9.9", &v);
  assert_string_equal (sg_version_too_old (&v), "apptainer 1.0");
  sg_version_parse ("singularity version 2.6.1", &v);
  assert_string_equal (sg_version_too_old (&v), "singularity 3.0");
  sg_version_parse ("singularity version 3.8.7", &v);
  assert_null (sg_version_too_old (&v));
  assert_false (sg_has_limits (&v));
  sg_version_parse ("singularity-ce version 3.9.9", &v);
  assert_false (sg_has_limits (&v));
  sg_version_parse ("singularity-ce version 3.10.0", &v);
  assert_true (sg_has_limits (&v));
}

static const struct sg_bind binds[] = {
  { "/data", "/data", true },
  { "/scratch/u", "/work", false },
};

static void
test_start_argv (void **state)
{
  (void) state;
  struct sg_version v;
  sg_version_parse ("apptainer version 1.3.4", &v);
  struct sg_start o = { .exe = "/usr/bin/apptainer", .version = &v,
                        .memory = "512M", .cpus = "1.5", .pids_limit = 64,
                        .control_dir = "/run/user/1/airlock/singularity/session-s",
                        .binds = binds, .n_binds = 2, .image = "/c/x.sif",
                        .name = "airlock-0123abcd-s" };
  char *warning = (char *) "unset";
  assert_argv (sg_start_argv (&o, &warning),
               "/usr/bin/apptainer instance start --containall --no-home --cleanenv "
               "--net --network none --writable-tmpfs --memory 512M --cpus 1.5 "
               "--pids-limit 64 --bind "
               "/run/user/1/airlock/singularity/session-s:/.airlock-control:ro "
               "--bind /data:/data:ro --bind /scratch/u:/work:rw /c/x.sif "
               "airlock-0123abcd-s");
  assert_null (warning);

  /* root: privileges dropped; host network; an overlay; no limits */
  o = (struct sg_start){ .exe = "apptainer", .version = &v, .host_network = true,
                         .overlay = "/s/overlay-x", .root = true, .control_dir = "/c",
                         .image = "/i", .name = "n" };
  assert_argv (sg_start_argv (&o, &warning),
               "apptainer instance start --containall --no-home --cleanenv --overlay "
               "/s/overlay-x --no-privs --drop-caps ALL --bind /c:/.airlock-control:ro "
               "/i n");
  assert_null (warning);
}

/* A version without the limit flags: none passed, and the warning names
 * what was not applied. */
static void
test_start_argv_old_version (void **state)
{
  (void) state;
  struct sg_version v;
  sg_version_parse ("apptainer version 1.0.3", &v);
  struct sg_start o = { .exe = "apptainer", .version = &v, .memory = "1G",
                        .pids_limit = 10, .control_dir = "/c", .image = "/i",
                        .name = "n" };
  char *warning = NULL;
  assert_argv (sg_start_argv (&o, &warning),
               "apptainer instance start --containall --no-home --cleanenv --net "
               "--network none --writable-tmpfs --bind /c:/.airlock-control:ro /i n");
  assert_non_null (warning);
  assert_non_null (strstr (warning, "apptainer 1.0.3 has no resource limit flags"));
  assert_non_null (strstr (warning, "singularity.memory, singularity.pids_limit not applied"));
  assert_null (strstr (warning, "singularity.cpus"));
  free (warning);
}

static void
test_other_argv (void **state)
{
  (void) state;
  assert_argv (sg_exec_argv ("apptainer", "n"),
               "apptainer exec --cleanenv instance://n "
               "/.airlock-control/airlock-supervisor --instance");
  assert_argv (sg_stop_argv ("singularity", "n", false), "singularity instance stop n");
  assert_argv (sg_stop_argv ("singularity", "n", true),
               "singularity instance stop --force n");
  assert_argv (sg_list_argv ("apptainer", "n"), "apptainer instance list --json n");
  assert_argv (sg_list_argv ("apptainer", NULL), "apptainer instance list --json");
}

static void
test_child_env (void **state)
{
  (void) state;
  const char *envp[] = { "PATH=/bin", "APPTAINER_BIND=/", "SINGULARITY_NO_HOME=0",
                         "APPTAINERENV_X=1", "SINGULARITYENV_Y=2", "APPTAINER=1",
                         "HOME=/h", NULL };
  const char *extra[] = { "APPTAINER_TMPDIR=/t", NULL };
  assert_argv (sg_child_env (envp, "/r/config", extra),
               "PATH=/bin APPTAINER=1 HOME=/h APPTAINER_CONFIGDIR=/r/config "
               "SINGULARITY_CONFIGDIR=/r/config APPTAINER_TMPDIR=/t");
  const char *only[] = { "SINGULARITY_BIND=/", NULL };
  char **e = sg_child_env (only, NULL, NULL);
  assert_non_null (e);
  assert_null (e[0]);
  sg_argv_free (e);
}

static void
test_names (void **state)
{
  (void) state;
  char *a = sg_instance_name ("/run/user/1/airlock", "work.1_x-y");
  char *b = sg_instance_name ("/run/user/2/airlock", "work.1_x-y");
  assert_non_null (a);
  assert_int_equal (strlen (a), strlen ("airlock-01234567-work.1_x-y"));
  assert_memory_equal (a, "airlock-", 8);
  assert_string_equal (a + 16, "-work.1_x-y");
  assert_string_not_equal (a, b);
  free (a);
  free (b);
  assert_null (sg_instance_name ("/r", "a b"));
  assert_null (sg_instance_name ("/r", "a/b"));
  assert_null (sg_instance_name ("/r", ""));

}

/* singularity.env reaches the instance through the exec client's
 * environment, whatever the value holds. */
static void
test_env_passed (void **state)
{
  (void) state;
  struct sg_version v;
  const char *env[] = { "TOKEN=it's $HOME", "EMPTY=", NULL };
  sg_version_parse ("apptainer version 1.3.4", &v);
  assert_argv (sg_env_passed (&v, env), "APPTAINERENV_TOKEN=it's $HOME APPTAINERENV_EMPTY=");
  sg_version_parse ("singularity-ce version 3.11.5", &v);
  assert_argv (sg_env_passed (&v, env),
               "SINGULARITYENV_TOKEN=it's $HOME SINGULARITYENV_EMPTY=");
  char **none = sg_env_passed (&v, NULL);
  assert_non_null (none);
  assert_null (none[0]);
  sg_argv_free (none);
}

int
main (void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test (test_version_parse),
    cmocka_unit_test (test_version_gates),
    cmocka_unit_test (test_start_argv),
    cmocka_unit_test (test_start_argv_old_version),
    cmocka_unit_test (test_other_argv),
    cmocka_unit_test (test_child_env),
    cmocka_unit_test (test_names),
    cmocka_unit_test (test_env_passed),
  };
  return cmocka_run_group_tests (tests, NULL, NULL);
}
