/* SPDX-License-Identifier: MIT */
/* Unit tests for the SIF cache (backends/sif_cache.c) and the size text
 * it prints with (backends/size_text.c): names, reference checks, the
 * magic and size checks, the floor arithmetic, and, with a fake build
 * executable written here, one build per image, rebuilds with a notice,
 * LRU eviction (pinned SIFs kept), the floor refusal and the timeout. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sif_cache.h"
#include "size_text.h"

static char dir[64];
static char exe[128], cache[128], logf[128];

/* Builds are logged one line each; the SIF is FAKE_SIZE bytes with a
 * real global header; FAKE_DELAY seconds first (its sleep's pid in
 * DIR/sleep.pid). */
static const char fake[]
    = "#!/bin/sh\n"
      "echo \"$*\" >> \"$FAKE_LOG\"\n"
      "[ \"$1\" = build ] || exit 3\n"
      "echo 'INFO:    Starting build...' >&2\n"
      "if [ -n \"$FAKE_FAIL\" ]; then echo \"FATAL:   $FAKE_FAIL\" >&2; exit 255; fi\n"
      "if [ -n \"$FAKE_DELAY\" ]; then sleep \"$FAKE_DELAY\" & echo $! > \"$FAKE_DIR/sleep.pid\"; wait; fi\n"
      "{ printf '#!/usr/bin/env run-singularity\\n\\0SIF_MAGIC01'; "
      "head -c $(( ${FAKE_SIZE:-1000} - 43 )) /dev/zero; } > \"$2\"\n"
      "env | grep -E '^(APPTAINER|SINGULARITY)' >> \"$FAKE_DIR/env\"\n"
      "echo 'INFO:    Build complete' >&2\n";

static int
setup (void **state)
{
  (void) state;
  strcpy (dir, "/tmp/test-sif-cache-XXXXXX");
  if (!mkdtemp (dir))
    return -1;
  snprintf (exe, sizeof exe, "%s/apptainer", dir);
  snprintf (cache, sizeof cache, "%s/cache", dir);
  snprintf (logf, sizeof logf, "%s/log", dir);
  FILE *f = fopen (exe, "w");
  if (!f)
    return -1;
  fputs (fake, f);
  fclose (f);
  chmod (exe, 0755);
  setenv ("FAKE_LOG", logf, 1);
  setenv ("FAKE_DIR", dir, 1);
  unsetenv ("FAKE_SIZE");
  unsetenv ("FAKE_DELAY");
  unsetenv ("FAKE_FAIL");
  return 0;
}

static int
teardown (void **state)
{
  (void) state;
  char cmd[128];
  snprintf (cmd, sizeof cmd, "rm -rf %s", dir);
  return system (cmd);
}

static struct sif_cache_options
opts (void)
{
  return (struct sif_cache_options){ .exe = exe, .kind = "apptainer",
                                     .cache_dir = cache, .cache_max = 0,
                                     .disk_floor = 1, .build_timeout = 60 };
}

static int
builds (void)
{
  FILE *f = fopen (logf, "r");
  int n = 0, ch;
  while (f && (ch = fgetc (f)) != EOF)
    n += ch == '\n';
  if (f)
    fclose (f);
  return n;
}

static char said[8192];
static void
collect (void *ctx, const char *line)
{
  (void) ctx;
  snprintf (said + strlen (said), sizeof said - strlen (said), "%s\n", line);
}

static char *
get (const struct sif_cache_options *o, const char *ref)
{
  char *path = NULL, *err = NULL;
  said[0] = '\0';
  int rc = sif_cache_get (o, ref, collect, NULL, &path, &err);
  if (rc)
    fail_msg ("get %s: %s", ref, err);
  return path;
}

static void
test_size_text (void **state)
{
  (void) state;
  uint64_t v;
  assert_true (size_parse ("20G", &v));
  assert_int_equal (v, 20ULL << 30);
  assert_true (size_parse ("512k", &v));
  assert_int_equal (v, 512ULL << 10);
  assert_true (size_parse ("7", &v));
  assert_int_equal (v, 7);
  assert_false (size_parse ("0", &v));
  assert_false (size_parse ("1X", &v));
  assert_false (size_parse ("1GB", &v));
  assert_false (size_parse ("", &v));
  assert_false (size_parse ("-1", &v));
  assert_false (size_parse ("16777216T", &v));
  char b[SIZE_TEXT_MAX];
  size_format (20ULL << 20, b, sizeof b);
  assert_string_equal (b, "20M");
  size_format (1000, b, sizeof b);
  assert_string_equal (b, "1000 bytes");
  size_format_approx (3ULL << 29, b, sizeof b);
  assert_string_equal (b, "1.5G");
  size_format_approx (2ULL << 30, b, sizeof b);
  assert_string_equal (b, "2G");
  size_format_approx (812, b, sizeof b);
  assert_string_equal (b, "812 bytes");
  size_format_approx (500ULL << 20, b, sizeof b);
  assert_string_equal (b, "500M");
}

static void
test_names_and_refs (void **state)
{
  (void) state;
  char n[33];
  /* the first 16 bytes of SHA-256("abc") (FIPS 180-4's example) */
  sif_cache_name ("abc", n);
  assert_string_equal (n, "ba7816bf8f01cfea414140de5dae2223");
  char *err = NULL;
  assert_int_equal (sif_image_is_ref ("docker://debian:12", &err), 1);
  assert_int_equal (sif_image_is_ref ("oras://ghcr.io/x/y:1", &err), 1);
  assert_int_equal (sif_image_is_ref ("library://alpine", &err), 1);
  assert_int_equal (sif_image_is_ref ("/images/x.sif", &err), 0);
  assert_null (err);
  assert_int_equal (sif_image_is_ref ("shub://x", &err), -1);
  assert_non_null (strstr (err, "unsupported scheme"));
  free (err), err = NULL;
  assert_int_equal (sif_image_is_ref ("docker://", &err), -1);
  free (err), err = NULL;
  assert_int_equal (sif_image_is_ref ("docker://a b", &err), -1);
  free (err), err = NULL;
}

static void
write_file (const char *path, const char *head, size_t headlen, size_t size)
{
  FILE *f = fopen (path, "w");
  assert_non_null (f);
  fwrite (head, 1, headlen, f);
  for (size_t i = headlen; i < size; i++)
    fputc (0, f);
  fclose (f);
}

static void
test_check_file (void **state)
{
  (void) state;
  char p[160];
  snprintf (p, sizeof p, "%s/x.sif", dir);
  char *why = sif_check_file (p, 0);
  assert_string_equal (why, "missing");
  free (why);
  static const char good[] = "#!/usr/bin/env run-singularity\n\0SIF_MAGIC01";
  write_file (p, good, sizeof good - 1, 100);
  assert_null (sif_check_file (p, 0));
  assert_null (sif_check_file (p, 100));
  why = sif_check_file (p, 99);
  assert_string_equal (why, "corrupt (100 bytes, its record says 99)");
  free (why);
  write_file (p, "#!/usr/bin/env run-singularity\n\0SIF_MAGIX", 42, 100);
  why = sif_check_file (p, 100);
  assert_string_equal (why, "corrupt (no SIF magic)");
  free (why);
  write_file (p, "short", 5, 5);
  why = sif_check_file (p, 0);
  assert_string_equal (why, "corrupt (no SIF magic)");
  free (why);
}

static void
test_floor (void **state)
{
  (void) state;
  uint64_t G = 1ULL << 30, M = 1ULL << 20;
  assert_true (sif_floor_ok (10 * G, 500 * M, 2 * G));
  assert_true (sif_floor_ok (2 * G + 500 * M, 500 * M, 2 * G));
  assert_false (sif_floor_ok (2 * G + 500 * M - 1, 500 * M, 2 * G));
  /* more needed than free: no wrap-around */
  assert_false (sif_floor_ok (100, 200, 0));
  assert_true (sif_floor_ok (200, 200, 0));
}

static void
test_build_once_and_record (void **state)
{
  (void) state;
  struct sif_cache_options o = opts ();
  char *p = get (&o, "docker://debian:12");
  char n[33], want[256];
  sif_cache_name ("docker://debian:12", n);
  snprintf (want, sizeof want, "%s/%s.sif", cache, n);
  assert_string_equal (p, want);
  assert_int_equal (builds (), 1);
  assert_non_null (strstr (said, "INFO:    Starting build..."));
  free (p);
  p = get (&o, "docker://debian:12");
  assert_int_equal (builds (), 1);
  free (p);
  /* the record */
  char rec[256], buf[512] = "";
  snprintf (rec, sizeof rec, "%s/%s.json", cache, n);
  FILE *f = fopen (rec, "r");
  assert_non_null (f);
  assert_true (fread (buf, 1, sizeof buf - 1, f) > 0);
  fclose (f);
  assert_non_null (strstr (buf, "\"ref\":\"docker://debian:12\""));
  assert_non_null (strstr (buf, "\"size\":1000"));
  /* the build's tmp and cache dirs were the build's own, and are gone */
  char envf[160], env[1024] = "";
  snprintf (envf, sizeof envf, "%s/env", dir);
  f = fopen (envf, "r");
  assert_non_null (f);
  assert_true (fread (env, 1, sizeof env - 1, f) > 0);
  fclose (f);
  assert_non_null (strstr (env, "APPTAINER_TMPDIR="));
  assert_non_null (strstr (env, "APPTAINER_CACHEDIR="));
  struct stat st;
  char scratch[160];
  snprintf (scratch, sizeof scratch, "%s/.build", cache);
  assert_int_equal (stat (scratch, &st), 0);
  char cmd[512];
  snprintf (cmd, sizeof cmd, "[ -z \"$(ls -A %s)\" ]", scratch);
  assert_int_equal (system (cmd), 0);
}

static void
test_rebuilt_with_notice (void **state)
{
  (void) state;
  struct sif_cache_options o = opts ();
  char *p = get (&o, "docker://a");
  /* grown behind the cache's back */
  FILE *f = fopen (p, "a");
  fputs ("x", f);
  fclose (f);
  free (get (&o, "docker://a"));
  assert_non_null (strstr (said, "cached SIF for docker://a is corrupt (1001 bytes, its "
                                 "record says 1000); rebuilding"));
  assert_int_equal (builds (), 2);
  unlink (p);
  free (get (&o, "docker://a"));
  assert_non_null (strstr (said, "cached SIF for docker://a is missing; rebuilding"));
  assert_int_equal (builds (), 3);
  /* the magic overwritten, size kept */
  int fd = open (p, O_WRONLY);
  assert_int_equal (pwrite (fd, "XXXXXXXXX", 9, 32), 9);
  close (fd);
  free (get (&o, "docker://a"));
  assert_non_null (strstr (said, "is corrupt (no SIF magic); rebuilding"));
  assert_int_equal (builds (), 4);
  assert_null (sif_check_file (p, 1000));
  free (p);
}

static void
test_lru_eviction_and_pins (void **state)
{
  (void) state;
  struct sif_cache_options o = opts ();
  o.cache_max = 2500; /* two 1000-byte SIFs fit, three do not */
  char *a = get (&o, "docker://a");
  char *b = get (&o, "docker://b");
  usleep (20 * 1000);
  /* a used again: b is now the least recently used */
  free (get (&o, "docker://a"));
  char *c = get (&o, "docker://c");
  assert_non_null (strstr (said, "evicted docker://b"));
  struct stat st;
  assert_int_equal (stat (a, &st), 0);
  assert_int_equal (stat (b, &st), -1);
  assert_int_equal (stat (c, &st), 0);
  /* listed least recently used first */
  struct sif_cache_entry *e;
  size_t n;
  uint64_t total;
  char *err = NULL;
  assert_int_equal (sif_cache_list (&o, &e, &n, &total, &err), 0);
  assert_int_equal (n, 2);
  assert_int_equal (total, 2000);
  assert_string_equal (e[0].ref, "docker://a");
  assert_string_equal (e[1].ref, "docker://c");
  assert_string_equal (e[0].state, "ok");
  assert_false (e[0].in_use);
  sif_cache_entries_free (e, n);
  /* a in use by a session: d's build evicts c instead, although a is
   * older */
  int pin = sif_cache_pin (&o, a, &err);
  assert_true (pin >= 0);
  assert_int_equal (sif_cache_pin (&o, "/elsewhere/x.sif", &err), SIF_CACHE_NOT_CACHED);
  char *d = get (&o, "docker://d");
  assert_non_null (strstr (said, "evicted docker://c"));
  assert_int_equal (stat (a, &st), 0);
  assert_int_equal (stat (c, &st), -1);
  assert_int_equal (sif_cache_list (&o, &e, &n, &total, &err), 0);
  assert_int_equal (n, 2);
  assert_true (e[0].in_use);
  sif_cache_entries_free (e, n);
  /* prune --all keeps what is in use */
  size_t removed = 0;
  uint64_t freed = 0;
  said[0] = '\0';
  assert_int_equal (sif_cache_prune (&o, true, collect, NULL, &removed, &freed, &err), 0);
  assert_int_equal (removed, 1);
  assert_int_equal (freed, 1000);
  assert_int_equal (stat (a, &st), 0);
  assert_int_equal (stat (d, &st), -1);
  sif_cache_unpin (pin);
  assert_int_equal (sif_cache_prune (&o, true, NULL, NULL, &removed, &freed, &err), 0);
  assert_int_equal (removed, 1);
  assert_int_equal (stat (a, &st), -1);
  free (a), free (b), free (c), free (d);
}

static void
test_floor_refusal (void **state)
{
  (void) state;
  struct sif_cache_options o = opts ();
  o.disk_floor = 1ULL << 60; /* no disk has that */
  char *path = NULL, *err = NULL;
  assert_int_equal (sif_cache_get (&o, "docker://big", NULL, NULL, &path, &err), -1);
  assert_null (path);
  assert_non_null (strstr (err, "not building docker://big: "));
  assert_non_null (strstr (err, "the SIF needs about 512M (a guess: it was never built here)"));
  assert_non_null (strstr (err, "below singularity.disk_floor 1048576T"));
  free (err);
  assert_int_equal (builds (), 0);
}

static void
test_build_failure_and_timeout (void **state)
{
  (void) state;
  struct sif_cache_options o = opts ();
  char *path = NULL, *err = NULL;
  setenv ("FAKE_FAIL", "no such image", 1);
  assert_int_equal (sif_cache_get (&o, "docker://nope", NULL, NULL, &path, &err), -1);
  assert_non_null (strstr (err, "build docker://nope failed (exit 255): FATAL:   no such image"));
  free (err), err = NULL;
  unsetenv ("FAKE_FAIL");
  o.build_timeout = 1;
  setenv ("FAKE_DELAY", "30", 1);
  assert_int_equal (sif_cache_get (&o, "docker://slow", NULL, NULL, &path, &err), -1);
  assert_non_null (strstr (err, "took over singularity.build_timeout (1 s)"));
  free (err);
  /* the build's own child was killed with its group */
  char pf[160];
  snprintf (pf, sizeof pf, "%s/sleep.pid", dir);
  FILE *f = fopen (pf, "r");
  assert_non_null (f);
  int pid = 0;
  assert_int_equal (fscanf (f, "%d", &pid), 1);
  fclose (f);
  /* gone, or a zombie its new parent has not reaped yet (within 5 s:
   * SIGKILL takes effect when the process is next scheduled) */
  char stat_path[64];
  snprintf (stat_path, sizeof stat_path, "/proc/%d/stat", pid);
  bool dead = false;
  for (int i = 0; i < 50 && !dead; i++)
    {
      char line[256] = "";
      f = fopen (stat_path, "r");
      char *rp = f && fgets (line, sizeof line, f) ? strrchr (line, ')') : NULL;
      dead = !f || (rp && rp[1] && rp[2] == 'Z');
      if (f)
        fclose (f);
      if (!dead)
        usleep (100 * 1000);
    }
  assert_true (dead);
  /* nothing left in the cache: no SIF, no temp file */
  char cmd[512];
  snprintf (cmd, sizeof cmd, "[ -z \"$(ls %s)\" ] && ! ls -a %s | grep -q tmp", cache, cache);
  assert_int_equal (system (cmd), 0);
}

static void
test_local_images (void **state)
{
  (void) state;
  struct sif_cache_options o = opts ();
  char p[160], *path = NULL, *err = NULL;
  snprintf (p, sizeof p, "%s/mine.sif", dir);
  static const char good[] = "#!/usr/bin/env run-singularity\n\0SIF_MAGIC01";
  write_file (p, good, sizeof good - 1, 100);
  assert_int_equal (sif_cache_get (&o, p, NULL, NULL, &path, &err), 0);
  assert_string_equal (path, p);
  free (path);
  assert_int_equal (sif_cache_get (&o, dir, NULL, NULL, &path, &err), 0);
  assert_string_equal (path, dir);
  free (path);
  write_file (p, "plain text", 10, 10);
  assert_int_equal (sif_cache_get (&o, p, NULL, NULL, &path, &err), -1);
  assert_non_null (strstr (err, "is not a SIF file"));
  free (err), err = NULL;
  assert_int_equal (sif_cache_get (&o, "mine.sif", NULL, NULL, &path, &err), -1);
  assert_non_null (strstr (err, "absolute path"));
  free (err);
  assert_int_equal (builds (), 0);
}

static void
test_find_executable (void **state)
{
  (void) state;
  const char *k;
  char *err = NULL, sing[160], path[256];
  snprintf (path, sizeof path, "relative:%s", dir);
  char *x = sif_find_executable (NULL, path, &k, &err);
  assert_string_equal (x, exe);
  assert_string_equal (k, "apptainer");
  free (x);
  /* apptainer first, then singularity */
  snprintf (sing, sizeof sing, "%s/singularity", dir);
  assert_int_equal (link (exe, sing), 0);
  x = sif_find_executable (NULL, dir, &k, &err);
  assert_string_equal (x, exe);
  free (x);
  unlink (exe);
  x = sif_find_executable (NULL, dir, &k, &err);
  assert_string_equal (x, sing);
  assert_string_equal (k, "singularity");
  free (x);
  x = sif_find_executable (sing, "/nonexistent", &k, &err);
  assert_string_equal (x, sing);
  free (x);
  x = sif_find_executable (NULL, "/nonexistent", &k, &err);
  assert_null (x);
  assert_non_null (strstr (err, "https://apptainer.org/docs/admin/main/installation.html"));
  free (err), err = NULL;
  x = sif_find_executable ("bin/apptainer", dir, &k, &err);
  assert_null (x);
  free (err);
}

/* No cache_dir: /scratch/$USER/airlock/sif, else the state directory's. */
static void
test_default_dir (void **state)
{
  (void) state;
  char *scratch = sif_scratch_user_dir ();
  if (scratch)
    {
      free (scratch);
      skip ();
    }
  char st[160], want[200];
  snprintf (st, sizeof st, "%s/state", dir);
  setenv ("XDG_STATE_HOME", st, 1);
  struct sif_cache_options o = opts ();
  o.cache_dir = NULL;
  char *err = NULL, *p = sif_cache_default_dir (&err);
  snprintf (want, sizeof want, "%s/airlock/sif", st);
  assert_string_equal (p, want);
  free (p);
  p = get (&o, "docker://x");
  assert_non_null (p);
  assert_int_equal (strncmp (p, want, strlen (want)), 0);
  free (p);
  unsetenv ("XDG_STATE_HOME");
}

int
main (void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test (test_size_text),
    cmocka_unit_test (test_names_and_refs),
    cmocka_unit_test (test_floor),
    cmocka_unit_test_setup_teardown (test_check_file, setup, teardown),
    cmocka_unit_test_setup_teardown (test_build_once_and_record, setup, teardown),
    cmocka_unit_test_setup_teardown (test_rebuilt_with_notice, setup, teardown),
    cmocka_unit_test_setup_teardown (test_lru_eviction_and_pins, setup, teardown),
    cmocka_unit_test_setup_teardown (test_floor_refusal, setup, teardown),
    cmocka_unit_test_setup_teardown (test_build_failure_and_timeout, setup, teardown),
    cmocka_unit_test_setup_teardown (test_local_images, setup, teardown),
    cmocka_unit_test_setup_teardown (test_find_executable, setup, teardown),
    cmocka_unit_test_setup_teardown (test_default_dir, setup, teardown),
  };
  return cmocka_run_group_tests (tests, NULL, NULL);
}
