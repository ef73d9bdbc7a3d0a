/* SPDX-License-Identifier: MIT */
/* Unit tests for the host's side of the files API (broker/files_host.c):
 * a download's tar stream is hostile, so crafted streams (names with
 * "..", absolute names, symlinks and hard links leading out, a file
 * through a symlink, two top entries) must write nothing outside dest;
 * and a packed tree unpacks the same, modes kept. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <archive.h>
#include <archive_entry.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "files_host.h"

static char dir[] = "/tmp/test-files-XXXXXX";

static int
setup (void **state)
{
  (void) state;
  strcpy (dir, "/tmp/test-files-XXXXXX");
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

/* A crafted stream: entries "name", "name=>target" (symlink),
 * "name==>target" (hard link), "name/" (directory), else a file whose
 * content is its name. */
struct stream {
  unsigned char buf[1 << 16];
  size_t used, off;
};

static void
craft (struct stream *s, const char *const *entries)
{
  struct archive *a = archive_write_new ();
  archive_write_set_format_pax_restricted (a);
  assert_int_equal (archive_write_open_memory (a, s->buf, sizeof s->buf, &s->used), ARCHIVE_OK);
  for (; *entries; entries++)
    {
      char name[512];
      snprintf (name, sizeof name, "%s", *entries);
      struct archive_entry *e = archive_entry_new ();
      char *hard = strstr (name, "==>"), *sym = strstr (name, "=>");
      size_t len = strlen (name);
      if (hard)
        {
          *hard = '\0';
          archive_entry_set_filetype (e, AE_IFREG);
          archive_entry_copy_hardlink (e, hard + 3);
        }
      else if (sym)
        {
          *sym = '\0';
          archive_entry_set_filetype (e, AE_IFLNK);
          archive_entry_copy_symlink (e, sym + 2);
        }
      else if (name[len - 1] == '/')
        archive_entry_set_filetype (e, AE_IFDIR);
      else
        {
          archive_entry_set_filetype (e, AE_IFREG);
          archive_entry_set_size (e, (la_int64_t) len);
        }
      archive_entry_set_perm (e, 0755);
      archive_entry_copy_pathname (e, name);
      assert_true (archive_write_header (a, e) >= ARCHIVE_WARN);
      if (!hard && !sym && name[len - 1] != '/')
        archive_write_data (a, name, len);
      archive_entry_free (e);
    }
  archive_write_close (a);
  archive_write_free (a);
  s->off = 0;
}

static ssize_t
read_stream (void *ctx, const void **buf)
{
  struct stream *s = ctx;
  size_t n = s->used - s->off < 1000 ? s->used - s->off : 1000;
  *buf = s->buf + s->off;
  s->off += n;
  return (ssize_t) n;
}

/* Unpack a crafted stream to dir/dest: the step's result, and *code. */
static int
unpack (const char *const *entries, const char *dest, char **code, size_t *skipped)
{
  static struct stream s;
  craft (&s, entries);
  char path[256], *err = NULL;
  snprintf (path, sizeof path, "%s/%s", dir, dest);
  struct files_unpacker *u = files_unpacker_new (path, read_stream, &s, code, &err);
  assert_non_null (u);
  int r;
  while ((r = files_unpacker_step (u, 4096, code, &err)) == 0)
    ;
  files_unpacker_skipped (u, skipped);
  files_unpacker_free (u);
  free (err);
  return r;
}

static bool
exists (const char *rel)
{
  char path[256];
  struct stat st;
  snprintf (path, sizeof path, "%s/%s", dir, rel);
  return lstat (path, &st) == 0;
}

static void
test_unsafe_names_refused (void **state)
{
  (void) state;
  char *code = NULL;
  size_t skipped;
  static const char *const dotdot[] = { "top/", "top/../../evil", NULL };
  assert_int_equal (unpack (dotdot, "d1", &code, &skipped), -1);
  assert_string_equal (code, "bad_stream");
  assert_false (exists ("evil"));
  char abs[200];
  snprintf (abs, sizeof abs, "%s/abs-evil", dir);
  const char *const absolute[] = { abs, NULL };
  assert_int_equal (unpack (absolute, "d2", &code, &skipped), -1);
  assert_false (exists ("abs-evil"));
  static const char *const two[] = { "top/a", "other/b", NULL };
  assert_int_equal (unpack (two, "d3", &code, &skipped), -1);
  assert_false (exists ("other"));
}

static void
test_links_out_skipped (void **state)
{
  (void) state;
  char *code = NULL, victim[200], link[220], hard[220];
  size_t skipped = 0;
  snprintf (victim, sizeof victim, "%s/victim", dir);
  assert_int_equal (mkdir (victim, 0700), 0);
  snprintf (link, sizeof link, "top/link=>%s", victim);
  snprintf (hard, sizeof hard, "top/hard==>%s/victim", dir);
  const char *const entries[] = { "top/", link, "top/link/file", "top/up=>../..",
                                  "top/sub/", "top/sub/ok=>../link", hard,
                                  "top/h2==>../x", NULL };
  assert_int_equal (unpack (entries, "d", &code, &skipped), 1);
  assert_int_equal (skipped, 4); /* link, up, hard, h2 */
  assert_false (exists ("victim/file"));
  assert_true (exists ("d/link/file")); /* a directory of its own */
  assert_true (exists ("d/sub/ok"));    /* stays inside: kept */
  assert_false (exists ("d/up"));
  assert_false (exists ("d/hard"));
}

static void
test_nothing_through_a_symlink (void **state)
{
  (void) state;
  char *code = NULL;
  size_t skipped;
  static const char *const entries[] = { "top/", "top/sub/", "top/in=>sub", "top/in/f", NULL };
  assert_int_equal (unpack (entries, "d", &code, &skipped), -1);
  assert_false (exists ("d/sub/f"));
}

static void
test_existing_dest_refused (void **state)
{
  (void) state;
  char path[200], *code = NULL, *err = NULL;
  snprintf (path, sizeof path, "%s/file", dir);
  FILE *f = fopen (path, "w");
  fclose (f);
  static struct stream s;
  assert_null (files_unpacker_new (path, read_stream, &s, &code, &err));
  assert_string_equal (code, "exists");
  free (err);
  /* Into an existing directory: under the top's name, never over it. */
  size_t skipped;
  static const char *const entries[] = { "file", NULL };
  assert_int_equal (unpack (entries, "", &code, &skipped), -1);
  assert_string_equal (code, "exists");
}

static void
test_round_trip (void **state)
{
  (void) state;
  char src[200], cmd[2048];
  snprintf (src, sizeof src, "%s/src dir", dir);
  snprintf (cmd, sizeof cmd, "mkdir -p '%s/a/b' && printf 'x\\0y' > '%s/a/b/bin file' && "
            "chmod 0751 '%s/a/b/bin file' && ln -s b '%s/a/l'", src, src, src, src);
  assert_int_equal (system (cmd), 0);
  char *code = NULL, *err = NULL;
  struct files_packer *p = files_packer_new_path (src, &code, &err);
  assert_non_null (p);
  assert_string_equal (files_packer_name (p), "src dir");
  static struct stream s;
  s.used = 0;
  for (;;)
    {
      assert_int_equal (files_packer_fill (p, 100, &err), 0);
      size_t n;
      const void *d = files_packer_peek (p, &n);
      if (!n && files_packer_done (p))
        break;
      assert_true (s.used + n <= sizeof s.buf);
      memcpy (s.buf + s.used, d, n);
      s.used += n;
      files_packer_consume (p, n);
    }
  files_packer_free (p);
  s.off = 0;
  char dest[220];
  snprintf (dest, sizeof dest, "%s/out", dir);
  struct files_unpacker *u = files_unpacker_new (dest, read_stream, &s, &code, &err);
  assert_non_null (u);
  int r;
  while ((r = files_unpacker_step (u, 100, &code, &err)) == 0)
    ;
  assert_int_equal (r, 1);
  uint64_t files, bytes;
  files_unpacker_counts (u, &files, &bytes);
  assert_int_equal (files, 1);
  assert_int_equal (bytes, 3);
  files_unpacker_free (u);
  snprintf (cmd, sizeof cmd, "diff -r '%s' '%s/out' && test \"$(stat -c %%a '%s/out/a/b/bin file')\" = 751 "
            "&& test -L '%s/out/a/l'", src, dir, dir, dir);
  assert_int_equal (system (cmd), 0);
}

static void
test_base64 (void **state)
{
  (void) state;
  char *e = files_base64_encode ("hello\n", 6);
  assert_string_equal (e, "aGVsbG8K");
  unsigned char *d = NULL;
  assert_int_equal (files_base64_decode (e, &d), 6);
  assert_memory_equal (d, "hello\n", 6);
  free (d);
  free (e);
  assert_int_equal (files_base64_decode ("aGVsbG8", &d), -1);
  assert_int_equal (files_base64_decode ("aG=sbG8K", &d), -1);
  assert_int_equal (files_base64_decode ("YQ==", &d), 1);
  free (d);
}

int
main (void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test_setup_teardown (test_unsafe_names_refused, setup, teardown),
    cmocka_unit_test_setup_teardown (test_links_out_skipped, setup, teardown),
    cmocka_unit_test_setup_teardown (test_nothing_through_a_symlink, setup, teardown),
    cmocka_unit_test_setup_teardown (test_existing_dest_refused, setup, teardown),
    cmocka_unit_test_setup_teardown (test_round_trip, setup, teardown),
    cmocka_unit_test (test_base64),
  };
  return cmocka_run_group_tests (tests, NULL, NULL);
}
