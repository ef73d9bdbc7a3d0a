/* SPDX-License-Identifier: MIT */
/* Unit tests for the job output spool (broker/spool.c): bytes by offset,
 * labelled reads that give back each stream in order, the cap, a write
 * error (a file size limit stands in for a full disk), and who removes
 * the file. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "spool.h"

static char dir[] = "/tmp/test-spool-XXXXXX";

static int
setup (void **state)
{
  (void) state;
  strcpy (dir, "/tmp/test-spool-XXXXXX");
  return mkdtemp (dir) ? 0 : -1;
}

static int
teardown (void **state)
{
  (void) state;
  char cmd[128];
  snprintf (cmd, sizeof cmd, "rm -rf %s", dir);
  return system (cmd);
}

static bool
exists (const char *path)
{
  struct stat st;
  return stat (path, &st) == 0;
}

static struct spool *
new_spool (uint64_t cap)
{
  char *err = NULL;
  struct spool *sp = spool_new (dir, cap, &err);
  if (!sp)
    fail_msg ("spool_new: %s", err);
  return sp;
}

/* Many small chunks on alternating streams come back in order, each with
 * its label, through any chunk size and from any starting offset. */
static void
test_labelled_order (void **state)
{
  (void) state;
  struct spool *sp = new_spool (0);
  char expect[2][8192];
  size_t elen[2] = { 0, 0 };
  char all[16384];
  size_t alen = 0;
  for (int i = 0; i < 300; i++)
    {
      int stream = (i % 3 == 0) ? 2 : 1; /* runs of the same stream too */
      char chunk[32];
      int n = snprintf (chunk, sizeof chunk, "%c%d;", stream == 1 ? 'o' : 'e', i);
      assert_true (spool_append (sp, stream, chunk, (size_t) n));
      memcpy (expect[stream - 1] + elen[stream - 1], chunk, (size_t) n);
      elen[stream - 1] += (size_t) n;
      memcpy (all + alen, chunk, (size_t) n);
      alen += (size_t) n;
    }
  assert_int_equal (spool_size (sp), alen);
  assert_null (spool_error (sp));
  char raw[16384];
  assert_int_equal (spool_read (sp, 0, raw, sizeof raw), (ssize_t) alen);
  assert_memory_equal (raw, all, alen);
  for (int finished = 0; finished < 2; finished++)
    {
      if (finished)
        spool_finish (sp); /* reads then open the files again */
      for (size_t chunk = 1; chunk <= 64; chunk *= 4)
        {
          char got[2][8192];
          size_t glen[2] = { 0, 0 };
          struct spool_cursor c = { 0, 0 };
          char buf[64];
          int stream;
          ssize_t n;
          while ((n = spool_read_labelled (sp, &c, buf, chunk, &stream)) > 0)
            {
              assert_true (stream == 1 || stream == 2);
              /* a labelled read never crosses a change of stream */
              assert_memory_equal (buf, all + c.offset - (size_t) n, (size_t) n);
              memcpy (got[stream - 1] + glen[stream - 1], buf, (size_t) n);
              glen[stream - 1] += (size_t) n;
            }
          assert_int_equal (n, 0);
          for (int k = 0; k < 2; k++)
            {
              assert_int_equal (glen[k], elen[k]);
              assert_memory_equal (got[k], expect[k], elen[k]);
            }
        }
      /* From the middle: the label of the byte at the offset. */
      for (uint64_t off = 0; off < alen; off += 37)
        {
          struct spool_cursor c = spool_cursor_at (sp, off);
          char buf[4];
          int stream;
          assert_int_equal (spool_read_labelled (sp, &c, buf, 1, &stream), 1);
          /* the chunk that holds `off` starts with its stream's letter */
          size_t start = off;
          while (start > 0 && all[start - 1] != ';')
            start--;
          assert_int_equal (stream, all[start] == 'o' ? 1 : 2);
          assert_int_equal (buf[0], all[off]);
        }
    }
  spool_unref (sp);
}

static void
test_cap (void **state)
{
  (void) state;
  struct spool *sp = new_spool (10);
  assert_true (spool_append (sp, 1, "12345", 5));
  assert_false (spool_append (sp, 2, "abcdefgh", 8));
  assert_false (spool_append (sp, 1, "zz", 2));
  assert_int_equal (spool_size (sp), 10);
  assert_int_equal (spool_dropped (sp), 5);
  const char *e = spool_error (sp);
  assert_non_null (e);
  assert_non_null (strstr (e, "cap of 10 bytes"));
  assert_non_null (strstr (e, "5 later bytes"));
  char buf[32];
  assert_int_equal (spool_read (sp, 0, buf, sizeof buf), 10);
  assert_memory_equal (buf, "12345abcde", 10);
  spool_unref (sp);
}

/* A full disk, as far as the spool can tell: writes fail past a size. */
static void
test_write_error (void **state)
{
  (void) state;
  struct spool *sp = new_spool (0);
  struct rlimit old, lim = { 100, 100 };
  getrlimit (RLIMIT_FSIZE, &old);
  lim.rlim_max = old.rlim_max;
  signal (SIGXFSZ, SIG_IGN);
  assert_int_equal (setrlimit (RLIMIT_FSIZE, &lim), 0);
  char big[150];
  memset (big, 'x', sizeof big);
  bool ok = spool_append (sp, 1, big, sizeof big);
  setrlimit (RLIMIT_FSIZE, &old);
  assert_false (ok);
  assert_int_equal (spool_size (sp), 100);
  assert_int_equal (spool_dropped (sp), 50);
  const char *e = spool_error (sp);
  assert_non_null (e);
  assert_non_null (strstr (e, "could not be written"));
  assert_non_null (strstr (e, "first 100 bytes"));
  /* Later output is counted, not kept, and not silently. */
  assert_false (spool_append (sp, 2, "more", 4));
  assert_int_equal (spool_dropped (sp), 54);
  spool_unref (sp);
}

static void
test_ownership (void **state)
{
  (void) state;
  struct spool *a = new_spool (0), *b = new_spool (0);
  char *pa = strdup (spool_path (a)), *pb = strdup (spool_path (b));
  char ia[4200];
  snprintf (ia, sizeof ia, "%s.index", pa);
  spool_append (a, 1, "x", 1);
  spool_append (b, 1, "y", 1);
  spool_ref (a);
  spool_unref (a);
  assert_true (exists (pa)); /* a reference is left */
  spool_unref (a);
  assert_false (exists (pa));
  assert_false (exists (ia));
  assert_string_equal (spool_give_away (b), pb);
  spool_finish (b);
  spool_unref (b);
  assert_true (exists (pb)); /* the client's now */
  struct stat st;
  assert_int_equal (stat (pb, &st), 0);
  assert_int_equal (st.st_mode & 0777, 0600);
  free (pa);
  free (pb);
}

int
main (void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test_setup_teardown (test_labelled_order, setup, teardown),
    cmocka_unit_test_setup_teardown (test_cap, setup, teardown),
    cmocka_unit_test_setup_teardown (test_write_error, setup, teardown),
    cmocka_unit_test_setup_teardown (test_ownership, setup, teardown),
  };
  return cmocka_run_group_tests (tests, NULL, NULL);
}
