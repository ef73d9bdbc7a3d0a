/* SPDX-License-Identifier: MIT */
/* Unit tests for the protobuf wire codec (backends/protobuf_wire.c): round
 * trips of every wire type through the encoder and the decoder, exact
 * bytes for known encodings, malformed input refused (truncated and
 * over-long varints, lengths past the end, groups, wire types 6 and 7,
 * field number 0, nesting too deep, a wrong wire type), unknown fields
 * skipped; and a cross-check against the protobuf library: the messages
 * of tests/unit/wire_check.proto, compiled with protoc --python_out at
 * test time, encoded here and checked by tests/unit/wire_check.py (parsed,
 * equal, byte for byte the library's encoding), and encoded by the
 * library and read back here.  The cross-check is skipped, saying so,
 * without protoc or python3-protobuf. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "protobuf_wire.h"

/* ---- helpers ---- */

static void
expect_bytes (const struct pb_enc *e, const char *hex)
{
  char got[4096] = "";
  assert_false (e->failed);
  for (size_t i = 0; i < e->len && 2 * i + 2 < sizeof got; i++)
    sprintf (got + 2 * i, "%02x", e->buf[i]);
  assert_string_equal (got, hex);
}

/* The single field of a one-field message. */
static struct pb_field
only_field (const struct pb_enc *e, struct pb_reader *r)
{
  struct pb_field f;
  pb_reader_init (r, e->buf, e->len);
  assert_int_equal (pb_next (r, &f), 1);
  struct pb_field g;
  assert_int_equal (pb_next (r, &g), 0);
  return f;
}

/* The error decoding bytes gives (walking every field), or NULL. */
static const char *
decode_error (const void *buf, size_t n)
{
  static struct pb_reader r;
  struct pb_field f;
  pb_reader_init (&r, buf, n);
  int rc;
  while ((rc = pb_next (&r, &f)) > 0)
    ;
  if (rc == 0)
    return NULL;
  assert_non_null (r.error);
  assert_int_equal (pb_next (&r, &f), -1); /* sticky */
  return r.error;
}

/* ---- encoder ---- */

static void
test_known_encodings (void **state)
{
  (void) state;
  struct pb_enc e = { 0 };
  pb_put_uint32 (&e, 1, 150);
  expect_bytes (&e, "089601");
  pb_enc_free (&e);
  pb_put_int32 (&e, 2, -1);
  expect_bytes (&e, "10ffffffffffffffffff01");
  pb_enc_free (&e);
  pb_put_string (&e, 2, "testing");
  expect_bytes (&e, "120774657374696e67");
  pb_enc_free (&e);
}

static void
test_float_tag (void **state)
{
  (void) state;
  struct pb_enc e = { 0 };
  pb_put_float (&e, 2, 55.0f); /* a float timeout: tag 0x15, 4 bytes LE */
  expect_bytes (&e, "1500005c42");
  pb_enc_free (&e);
  pb_put_double (&e, 1, 1.0);
  expect_bytes (&e, "09000000000000f03f");
  pb_enc_free (&e);
  /* defaults are written when asked: presence is the caller's */
  pb_put_uint32 (&e, 16, 0);
  pb_put_string (&e, 17, "");
  pb_put_bool (&e, 18, false);
  expect_bytes (&e, "8001008a0100900100");
  pb_enc_free (&e);
}

static void
test_nested_backpatch (void **state)
{
  (void) state;
  struct pb_enc e = { 0 };
  size_t outer = pb_begin (&e, 5);
  pb_put_uint32 (&e, 2, 512);
  size_t inner = pb_begin (&e, 3);
  char big[300];
  memset (big, 'x', sizeof big - 1);
  big[sizeof big - 1] = '\0';
  pb_put_string (&e, 1, big); /* 299 bytes: lengths of 2 bytes both levels */
  pb_end (&e, inner);
  pb_end (&e, outer);
  size_t m = pb_begin (&e, 6); /* an empty submessage */
  pb_end (&e, m);
  assert_false (e.failed);

  struct pb_reader r, s, t;
  struct pb_field f;
  pb_reader_init (&r, e.buf, e.len);
  assert_int_equal (pb_next (&r, &f), 1);
  assert_int_equal (f.number, 5);
  assert_int_equal (pb_sub (&r, &f, &s), 0);
  assert_int_equal (pb_next (&s, &f), 1);
  uint32_t v;
  assert_int_equal (pb_read_uint32 (&s, &f, &v), 0);
  assert_int_equal (v, 512);
  assert_int_equal (pb_next (&s, &f), 1);
  assert_int_equal (pb_sub (&s, &f, &t), 0);
  assert_int_equal (pb_next (&t, &f), 1);
  struct pb_slice str;
  assert_int_equal (pb_read_string (&t, &f, &str), 0);
  assert_int_equal (str.n, 299);
  assert_memory_equal (str.p, big, 299);
  assert_int_equal (pb_next (&t, &f), 0);
  assert_int_equal (pb_next (&s, &f), 0);
  assert_int_equal (pb_next (&r, &f), 1);
  assert_int_equal (f.number, 6);
  assert_int_equal (f.bytes.n, 0);
  assert_int_equal (pb_next (&r, &f), 0);
  pb_enc_free (&e);
}

static void
test_round_trips (void **state)
{
  (void) state;
  struct pb_enc e = { 0 };
  struct pb_reader r;
  struct pb_field f;
  uint64_t u64;
  int64_t i64;
  int32_t i32;
  uint32_t u32;
  bool b;
  float fl;
  double d;
  struct pb_slice s;

  const uint64_t u64s[] = { 0, 1, 127, 128, 16383, 16384, UINT32_MAX, (uint64_t) 1 << 63,
                            UINT64_MAX };
  for (size_t i = 0; i < sizeof u64s / sizeof *u64s; i++)
    {
      pb_put_uint64 (&e, 536870911, u64s[i]);
      f = only_field (&e, &r);
      assert_int_equal (f.number, 536870911);
      assert_int_equal (pb_read_uint64 (&r, &f, &u64), 0);
      assert_true (u64 == u64s[i]);
      pb_enc_free (&e);
    }
  const int64_t i64s[] = { INT64_MIN, -1, 0, INT64_MAX };
  for (size_t i = 0; i < sizeof i64s / sizeof *i64s; i++)
    {
      pb_put_int64 (&e, 4, i64s[i]);
      f = only_field (&e, &r);
      assert_int_equal (pb_read_int64 (&r, &f, &i64), 0);
      assert_true (i64 == i64s[i]);
      pb_enc_free (&e);
    }
  const int32_t i32s[] = { INT32_MIN, -123456, -1, 0, INT32_MAX };
  for (size_t i = 0; i < sizeof i32s / sizeof *i32s; i++)
    {
      pb_put_int32 (&e, 3, i32s[i]);
      f = only_field (&e, &r);
      assert_int_equal (pb_read_int32 (&r, &f, &i32), 0);
      assert_int_equal (i32, i32s[i]);
      pb_enc_free (&e);
      pb_put_enum (&e, 6, i32s[i]);
      f = only_field (&e, &r);
      assert_int_equal (pb_read_int32 (&r, &f, &i32), 0);
      assert_int_equal (i32, i32s[i]);
      pb_enc_free (&e);
    }
  pb_put_uint32 (&e, 1, UINT32_MAX);
  f = only_field (&e, &r);
  assert_int_equal (pb_read_uint32 (&r, &f, &u32), 0);
  assert_int_equal (u32, UINT32_MAX);
  pb_enc_free (&e);
  pb_put_bool (&e, 5, true);
  f = only_field (&e, &r);
  assert_int_equal (pb_read_bool (&r, &f, &b), 0);
  assert_true (b);
  pb_enc_free (&e);
  pb_put_fixed32 (&e, 9, 0xdeadbeef);
  f = only_field (&e, &r);
  assert_int_equal (pb_read_fixed32 (&r, &f, &u32), 0);
  assert_int_equal (u32, 0xdeadbeef);
  pb_enc_free (&e);
  pb_put_fixed64 (&e, 10, 0x0123456789abcdefULL);
  f = only_field (&e, &r);
  assert_int_equal (pb_read_fixed64 (&r, &f, &u64), 0);
  assert_true (u64 == 0x0123456789abcdefULL);
  pb_enc_free (&e);
  const float fls[] = { 0.0f, -0.0f, 1.5f, 55.0f, -3.4e38f, INFINITY };
  for (size_t i = 0; i < sizeof fls / sizeof *fls; i++)
    {
      pb_put_float (&e, 7, fls[i]);
      f = only_field (&e, &r);
      assert_int_equal (pb_read_float (&r, &f, &fl), 0);
      assert_memory_equal (&fl, &fls[i], 4);
      pb_enc_free (&e);
    }
  pb_put_double (&e, 8, -2.25);
  f = only_field (&e, &r);
  assert_int_equal (pb_read_double (&r, &f, &d), 0);
  assert_true (d == -2.25);
  pb_enc_free (&e);
  pb_put_bytes (&e, 12, "\0\xff\x01", 3);
  f = only_field (&e, &r);
  assert_int_equal (pb_read_bytes (&r, &f, &s), 0);
  assert_int_equal (s.n, 3);
  assert_memory_equal (s.p, "\0\xff\x01", 3);
  /* bytes with a NUL are not a string */
  assert_int_equal (pb_read_string (&r, &f, &s), -1);
  assert_non_null (strstr (r.error, "NUL"));
  pb_enc_free (&e);
  pb_put_string (&e, 11, "h\xc3\xa9llo");
  f = only_field (&e, &r);
  assert_int_equal (pb_read_string (&r, &f, &s), 0);
  char *c = pb_slice_dup (s);
  assert_string_equal (c, "h\xc3\xa9llo");
  free (c);
  pb_enc_free (&e);
}

static void
test_map_entries (void **state)
{
  (void) state;
  struct pb_enc e = { 0 };
  pb_put_map_entry (&e, 15, "PATH", "/usr/bin");
  pb_put_map_entry (&e, 15, "EMPTY", "");
  /* what python writes for {"EMPTY": ""}: the empty value is there */
  assert_memory_equal (e.buf + 18, "\x7a\x09\x0a\x05" "EMPTY" "\x12\x00", 11);
  struct pb_reader r;
  struct pb_field f;
  struct pb_slice k, v;
  pb_reader_init (&r, e.buf, e.len);
  assert_int_equal (pb_next (&r, &f), 1);
  assert_int_equal (pb_read_map_entry (&r, &f, &k, &v), 0);
  assert_int_equal (k.n, 4);
  assert_memory_equal (k.p, "PATH", 4);
  assert_int_equal (v.n, 8);
  assert_int_equal (pb_next (&r, &f), 1);
  assert_int_equal (pb_read_map_entry (&r, &f, &k, &v), 0);
  assert_int_equal (v.n, 0);
  pb_enc_free (&e);
  /* an entry with no value, and one that is not a message */
  pb_reader_init (&r, "\x7a\x02\x0a\x00", 4);
  assert_int_equal (pb_next (&r, &f), 1);
  assert_int_equal (pb_read_map_entry (&r, &f, &k, &v), 0);
  assert_int_equal (k.n + v.n, 0);
  pb_reader_init (&r, "\x7a\x02\x0a\x05", 4);
  assert_int_equal (pb_next (&r, &f), 1);
  assert_int_equal (pb_read_map_entry (&r, &f, &k, &v), -1);
  assert_non_null (strstr (r.error, "past the end"));
  assert_int_equal (r.error_at, 2); /* inside the entry: at the key's tag */
}

static void
test_encoder_misuse (void **state)
{
  (void) state;
  struct pb_enc e = { 0 };
  pb_put_uint32 (&e, 0, 1); /* field 0 is never valid */
  assert_true (e.failed);
  pb_enc_free (&e);
  pb_put_uint32 (&e, 1u << 29, 1);
  assert_true (e.failed);
  pb_enc_free (&e);
  struct pb_enc sub = { .failed = true };
  pb_put_message (&e, 1, &sub);
  assert_true (e.failed);
  pb_enc_free (&e);
}

/* ---- decoder: malformed input ---- */

static void
test_malformed (void **state)
{
  (void) state;
  static const struct
  {
    const char *bytes;
    size_t n;
    const char *why;
  } bad[] = {
    { "\x08", 1, "truncated varint" },
    { "\x08\x80", 2, "truncated varint" },
    { "\x80", 1, "truncated varint" },
    { "\x08\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 12, "over 10 bytes" },
    { "\x08\xff\xff\xff\xff\xff\xff\xff\xff\xff\x02", 11, "over 64 bits" },
    { "\x12\x05" "abc", 5, "past the end" },
    { "\x12\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 11, "past the end" },
    { "\x0b", 1, "group" },
    { "\x0c", 1, "group" },
    { "\x0e", 1, "wire type 6 or 7" },
    { "\x0f", 1, "wire type 6 or 7" },
    { "\x00\x01", 2, "field number 0" },
    { "\x02\x00", 2, "field number 0" },
    { "\x0d\x01\x02\x03", 4, "truncated fixed32" },
    { "\x09\x01\x02\x03\x04\x05\x06\x07", 8, "truncated fixed64" },
    { "\x80\x80\x80\x80\x80\x01", 6, "tag over 32 bits" },
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
    {
      const char *why = decode_error (bad[i].bytes, bad[i].n);
      if (!why || !strstr (why, bad[i].why))
        fail_msg ("case %zu: got %s, want %s", i, why ? why : "no error", bad[i].why);
    }
  /* the error text names the offset */
  struct pb_reader r;
  struct pb_field f;
  pb_reader_init (&r, "\x08\x01\x12\x09", 4);
  assert_int_equal (pb_next (&r, &f), 1);
  assert_int_equal (pb_next (&r, &f), -1);
  char *t = pb_error_text (&r);
  assert_string_equal (t, "malformed protobuf at byte 2: length past the end of the message");
  free (t);
  /* an empty message, and NULL with no bytes, are fine */
  assert_null (decode_error ("", 0));
  assert_null (decode_error (NULL, 0));
}

static void
test_wrong_wire_type (void **state)
{
  (void) state;
  struct pb_reader r;
  struct pb_field f;
  struct pb_slice s;
  uint64_t u;
  float fl;
  pb_reader_init (&r, "\x08\x01", 2);
  assert_int_equal (pb_next (&r, &f), 1);
  assert_int_equal (pb_read_string (&r, &f, &s), -1);
  assert_non_null (strstr (r.error, "not length-delimited"));
  pb_reader_init (&r, "\x0a\x00", 2);
  assert_int_equal (pb_next (&r, &f), 1);
  assert_int_equal (pb_read_uint64 (&r, &f, &u), -1);
  pb_reader_init (&r, "\x09" "12345678", 9);
  assert_int_equal (pb_next (&r, &f), 1);
  assert_int_equal (pb_read_float (&r, &f, &fl), -1);
  /* a varint is not a submessage */
  struct pb_reader sub;
  pb_reader_init (&r, "\x08\x01", 2);
  assert_int_equal (pb_next (&r, &f), 1);
  assert_int_equal (pb_sub (&r, &f, &sub), -1);
}

static void
test_depth_bound (void **state)
{
  (void) state;
  /* 40 nested submessages, field 1 in field 1 ... */
  struct pb_enc e = { 0 };
  size_t marks[40];
  for (int i = 0; i < 40; i++)
    marks[i] = pb_begin (&e, 1);
  for (int i = 39; i >= 0; i--)
    pb_end (&e, marks[i]);
  assert_false (e.failed);
  struct pb_reader levels[PB_MAX_DEPTH + 2];
  struct pb_field f;
  pb_reader_init (&levels[0], e.buf, e.len);
  int d = 0;
  while (pb_next (&levels[d], &f) == 1 && pb_sub (&levels[d], &f, &levels[d + 1]) == 0)
    d++;
  assert_int_equal (d, PB_MAX_DEPTH);
  assert_non_null (strstr (levels[d].error, "too deep"));
  pb_enc_free (&e);
}

static void
test_unknown_skipped (void **state)
{
  (void) state;
  /* known field 1 among unknown fields of every skippable wire type */
  struct pb_enc e = { 0 };
  pb_put_fixed64 (&e, 100, 1);
  pb_put_fixed32 (&e, 101, 2);
  pb_put_bytes (&e, 102, "skip", 4);
  pb_put_uint64 (&e, 103, UINT64_MAX);
  pb_put_uint32 (&e, 1, 42);
  size_t m = pb_begin (&e, 104);
  pb_put_string (&e, 1, "deep");
  pb_end (&e, m);
  struct pb_reader r;
  struct pb_field f;
  uint32_t v = 0;
  pb_reader_init (&r, e.buf, e.len);
  int rc, n = 0;
  while ((rc = pb_next (&r, &f)) > 0)
    {
      n++;
      if (f.number == 1)
        assert_int_equal (pb_read_uint32 (&r, &f, &v), 0);
    }
  assert_int_equal (rc, 0);
  assert_int_equal (n, 6);
  assert_int_equal (v, 42);
  pb_enc_free (&e);
}

/* ---- the cross-check with protoc and python3-protobuf ---- */

static char *tmp;
static const char *python;

/* Run argv (no shell) bounded by timeout(1); its exit status, or -1. */
static int
run (const char *const *argv, bool quiet)
{
  pid_t pid = fork ();
  if (pid < 0)
    return -1;
  if (pid == 0)
    {
      if (quiet)
        {
          int null = open ("/dev/null", O_WRONLY);
          dup2 (null, 1);
          dup2 (null, 2);
        }
      const char *args[16] = { "timeout", "-k", "5", "60" };
      int n = 4;
      for (int i = 0; argv[i] && n < 15; i++)
        args[n++] = argv[i];
      args[n] = NULL;
      execvp ("timeout", (char *const *) args);
      _exit (127);
    }
  int st;
  if (waitpid (pid, &st, 0) < 0)
    return -1;
  return WIFEXITED (st) ? WEXITSTATUS (st) : -1;
}

/* A python3 that has the protobuf module: $AIRLOCK_PYTHON3, python3 on
 * PATH, /usr/bin/python3 (Debian's, where python3-protobuf goes). */
static const char *
find_python (const char *module)
{
  const char *candidates[] = { getenv ("AIRLOCK_PYTHON3"), "python3", "/usr/bin/python3" };
  char code[128];
  snprintf (code, sizeof code, "import %s", module);
  for (size_t i = 0; i < 3; i++)
    if (candidates[i] && run ((const char *[]){ candidates[i], "-c", code, NULL }, true) == 0)
      return candidates[i];
  return NULL;
}

static int
cross_setup (void **state)
{
  (void) state;
  char dir[] = "/tmp/airlock-wire-XXXXXX";
  if (!mkdtemp (dir))
    return -1;
  tmp = strdup (dir);
  python = find_python ("google.protobuf");
  const char *src = AIRLOCK_SOURCE_DIR "/tests/unit";
  char out[256];
  snprintf (out, sizeof out, "--python_out=%s", tmp);
  if (python
      && run ((const char *[]){ "protoc", out, "-I", src, AIRLOCK_SOURCE_DIR
                                "/tests/unit/wire_check.proto", NULL }, false) != 0)
    python = NULL;
  return 0;
}

static int
cross_teardown (void **state)
{
  (void) state;
  if (tmp)
    run ((const char *[]){ "rm", "-rf", tmp, NULL }, false);
  free (tmp);
  tmp = NULL;
  return 0;
}

static void
skip_without_python (void)
{
  if (!python)
    {
      print_message ("skipped: no protoc or no python3 with the protobuf module "
                     "(apt-get install protobuf-compiler python3-protobuf)\n");
      skip ();
    }
}

static int
wire_check (const char *mode, const char *name, const char *file)
{
  return run ((const char *[]){ python, AIRLOCK_SOURCE_DIR "/tests/unit/wire_check.py", tmp,
                                mode, name, file, NULL }, false);
}

static void
write_file (const char *path, const void *buf, size_t n)
{
  FILE *f = fopen (path, "wb");
  assert_non_null (f);
  assert_int_equal (fwrite (buf, 1, n, f), n);
  assert_int_equal (fclose (f), 0);
}

static void
put_inner_chain (struct pb_enc *e, uint32_t field, const char *const *names, uint32_t n)
{
  size_t m = pb_begin (e, field);
  pb_put_string (e, 1, names[0]);
  pb_put_uint32 (e, 2, n);
  if (names[1])
    put_inner_chain (e, 3, names + 1, n + 1);
  pb_end (e, m);
}

/* The cases of wire_check.py, encoded here in field-number order (the
 * library's order, so that the bytes can be compared too). */
static void
encode_case (const char *name, struct pb_enc *e)
{
  if (!strcmp (name, "scalars"))
    {
      pb_put_uint32 (e, 1, UINT32_MAX);
      pb_put_uint64 (e, 2, UINT64_MAX);
      pb_put_int32 (e, 3, -1);
      pb_put_int64 (e, 4, INT64_MIN);
      pb_put_bool (e, 5, true);
      pb_put_enum (e, 6, 2);
      pb_put_float (e, 7, 55.0f);
      pb_put_double (e, 8, -2.25);
      pb_put_fixed32 (e, 9, 0xdeadbeef);
      pb_put_fixed64 (e, 10, 0x0123456789abcdefULL);
      pb_put_string (e, 11, "h\xc3\xa9llo");
      pb_put_bytes (e, 12, "\0\xff\x01", 3);
      pb_put_int32 (e, 21, -2);
      pb_put_uint32 (e, 536870911, 7);
    }
  else if (!strcmp (name, "negative"))
    {
      pb_put_uint64 (e, 2, (uint64_t) 1 << 63);
      pb_put_int32 (e, 3, -123456);
      pb_put_int32 (e, 22, 9);
    }
  else if (!strcmp (name, "nested"))
    {
      put_inner_chain (e, 13, (const char *[]){ "top", "mid", "leaf", NULL }, 1);
      pb_put_string (e, 14, "a");
      pb_put_string (e, 14, "");
      pb_put_string (e, 14, "\xc3\xbc");
      pb_put_map_entry (e, 15, "EMPTY", "");
      pb_put_map_entry (e, 15, "PATH", "/usr/bin");
      char x[201];
      memset (x, 'x', 200);
      x[200] = '\0';
      size_t m = pb_begin (e, 20);
      pb_put_string (e, 1, x);
      pb_end (e, m);
      m = pb_begin (e, 20);
      pb_end (e, m);
    }
  else if (!strcmp (name, "defaults"))
    {
      pb_put_uint32 (e, 16, 0);
      pb_put_string (e, 17, "");
      pb_put_bool (e, 18, false);
      pb_put_float (e, 19, 0.0f);
      pb_put_int32 (e, 21, 0);
    }
  /* "empty": nothing */
}

static void
test_python_decodes_ours (void **state)
{
  (void) state;
  skip_without_python ();
  const char *names[] = { "empty", "scalars", "negative", "nested", "defaults" };
  for (size_t i = 0; i < sizeof names / sizeof *names; i++)
    {
      struct pb_enc e = { 0 };
      encode_case (names[i], &e);
      assert_false (e.failed);
      char path[512];
      snprintf (path, sizeof path, "%s/%s.c.bin", tmp, names[i]);
      write_file (path, e.buf ? e.buf : (uint8_t *) "", e.len);
      if (wire_check ("check", names[i], path) != 0)
        fail_msg ("wire_check.py refused the C encoding of case %s", names[i]);
      pb_enc_free (&e);
    }
}

/* What the decoder makes of an All: enough to compare with the cases. */
struct all {
  uint32_t u32, fx32, opt_u32, last;
  uint64_t u64, fx64;
  int32_t i32, kind, code, signal;
  int64_t i64;
  bool flag, opt_b;
  float f, opt_f;
  double d;
  char s[64], b[16], inner[64], names[64], env[64], opt_s[8];
  size_t b_len, items, item0_len;
  unsigned present; /* bit n: field n seen (16..22) */
  int fields;       /* every field, unknown ones included */
};

static void
append (char *dst, size_t cap, struct pb_slice s, const char *sep)
{
  size_t n = strlen (dst);
  snprintf (dst + n, cap - n, "%s%.*s", n ? sep : "", (int) s.n, (const char *) s.p);
}

/* Inner as "name/n>name/n>...". */
static int
decode_inner (struct pb_reader *r, char *out, size_t cap)
{
  struct pb_field f;
  struct pb_reader sub;
  int rc;
  while ((rc = pb_next (r, &f)) > 0)
    {
      struct pb_slice s;
      uint32_t n;
      size_t len = strlen (out);
      if (f.number == 1 && pb_read_string (r, &f, &s) == 0)
        snprintf (out + len, cap - len, "%s%.*s", len ? ">" : "", (int) s.n, (const char *) s.p);
      else if (f.number == 2 && pb_read_uint32 (r, &f, &n) == 0)
        snprintf (out + len, cap - len, "/%u", n);
      else if (f.number == 3 && pb_sub (r, &f, &sub) == 0 && decode_inner (&sub, out, cap) < 0)
        return pb_sub_error (r, &sub);
      if (r->error)
        return -1;
    }
  return rc;
}

static int
decode_all (const uint8_t *buf, size_t n, struct all *a)
{
  struct pb_reader r, sub;
  struct pb_field f;
  struct pb_slice s, k, v;
  int rc;
  memset (a, 0, sizeof *a);
  pb_reader_init (&r, buf, n);
  while ((rc = pb_next (&r, &f)) > 0)
    {
      a->fields++;
      if (f.number >= 16 && f.number <= 22)
        a->present |= 1u << f.number;
      switch (f.number)
        {
        case 1: pb_read_uint32 (&r, &f, &a->u32); break;
        case 2: pb_read_uint64 (&r, &f, &a->u64); break;
        case 3: pb_read_int32 (&r, &f, &a->i32); break;
        case 4: pb_read_int64 (&r, &f, &a->i64); break;
        case 5: pb_read_bool (&r, &f, &a->flag); break;
        case 6: pb_read_int32 (&r, &f, &a->kind); break;
        case 7: pb_read_float (&r, &f, &a->f); break;
        case 8: pb_read_double (&r, &f, &a->d); break;
        case 9: pb_read_fixed32 (&r, &f, &a->fx32); break;
        case 10: pb_read_fixed64 (&r, &f, &a->fx64); break;
        case 11:
          if (pb_read_string (&r, &f, &s) == 0)
            append (a->s, sizeof a->s, s, "");
          break;
        case 12:
          if (pb_read_bytes (&r, &f, &s) == 0 && s.n <= sizeof a->b)
            memcpy (a->b, s.p, a->b_len = s.n);
          break;
        case 13:
          if (pb_sub (&r, &f, &sub) == 0 && decode_inner (&sub, a->inner, sizeof a->inner) < 0)
            pb_sub_error (&r, &sub);
          break;
        case 14:
          if (pb_read_string (&r, &f, &s) == 0)
            {
              size_t len = strlen (a->names);
              snprintf (a->names + len, sizeof a->names - len, "[%.*s]", (int) s.n,
                        (const char *) s.p);
            }
          break;
        case 15:
          if (pb_read_map_entry (&r, &f, &k, &v) == 0)
            {
              size_t len = strlen (a->env);
              snprintf (a->env + len, sizeof a->env - len, "%.*s=%.*s;", (int) k.n,
                        (const char *) k.p, (int) v.n, (const char *) v.p);
            }
          break;
        case 16: pb_read_uint32 (&r, &f, &a->opt_u32); break;
        case 17:
          if (pb_read_string (&r, &f, &s) == 0)
            append (a->opt_s, sizeof a->opt_s, s, "");
          break;
        case 18: pb_read_bool (&r, &f, &a->opt_b); break;
        case 19: pb_read_float (&r, &f, &a->opt_f); break;
        case 20:
          if (a->items++ == 0)
            a->item0_len = f.bytes.n;
          break;
        case 21: pb_read_int32 (&r, &f, &a->code); break;
        case 22: pb_read_int32 (&r, &f, &a->signal); break;
        case 536870911: pb_read_uint32 (&r, &f, &a->last); break;
        default: break; /* unknown: skipped */
        }
      if (r.error)
        return -1;
    }
  return rc;
}

static void
read_python_case (const char *name, struct all *a)
{
  char path[512];
  snprintf (path, sizeof path, "%s/%s.py.bin", tmp, name);
  assert_int_equal (wire_check ("emit", name, path), 0);
  FILE *f = fopen (path, "rb");
  assert_non_null (f);
  static uint8_t buf[65536];
  size_t n = fread (buf, 1, sizeof buf, f);
  fclose (f);
  assert_int_equal (decode_all (buf, n, a), 0);
}

static void
test_we_decode_python (void **state)
{
  (void) state;
  skip_without_python ();
  struct all a;
  read_python_case ("empty", &a);
  assert_int_equal (a.fields, 0);

  read_python_case ("scalars", &a);
  assert_int_equal (a.u32, UINT32_MAX);
  assert_true (a.u64 == UINT64_MAX);
  assert_int_equal (a.i32, -1);
  assert_true (a.i64 == INT64_MIN);
  assert_true (a.flag);
  assert_int_equal (a.kind, 2);
  assert_true (a.f == 55.0f);
  assert_true (a.d == -2.25);
  assert_int_equal (a.fx32, 0xdeadbeef);
  assert_true (a.fx64 == 0x0123456789abcdefULL);
  assert_string_equal (a.s, "h\xc3\xa9llo");
  assert_int_equal (a.b_len, 3);
  assert_memory_equal (a.b, "\0\xff\x01", 3);
  assert_int_equal (a.code, -2);
  assert_int_equal (a.last, 7);

  read_python_case ("negative", &a);
  assert_int_equal (a.i32, -123456);
  assert_true (a.u64 == (uint64_t) 1 << 63);
  assert_int_equal (a.present, 1u << 22);
  assert_int_equal (a.signal, 9);

  read_python_case ("nested", &a);
  assert_string_equal (a.inner, "top/1>mid/2>leaf/3");
  assert_string_equal (a.names, "[a][][\xc3\xbc]");
  /* map order is the library's choice: either */
  assert_true (!strcmp (a.env, "EMPTY=;PATH=/usr/bin;") || !strcmp (a.env, "PATH=/usr/bin;EMPTY=;"));
  assert_int_equal (a.items, 2);
  assert_int_equal (a.item0_len, 203);

  read_python_case ("defaults", &a);
  assert_int_equal (a.present, 1u << 16 | 1u << 17 | 1u << 18 | 1u << 19 | 1u << 21);
  assert_int_equal (a.opt_u32, 0);
  assert_string_equal (a.opt_s, "");
  assert_false (a.opt_b);
  assert_true (a.opt_f == 0.0f);

  /* unknown fields before, between and after known ones */
  read_python_case ("unknown", &a);
  assert_int_equal (a.u32, 5);
  assert_string_equal (a.s, "kept");
  assert_string_equal (a.names, "[one][two]");
  assert_int_equal (a.fields, 4 + 5 + 5);
}

int
main (void)
{
  signal (SIGPIPE, SIG_IGN);
  const struct CMUnitTest tests[] = {
    cmocka_unit_test (test_known_encodings),
    cmocka_unit_test (test_float_tag),
    cmocka_unit_test (test_nested_backpatch),
    cmocka_unit_test (test_round_trips),
    cmocka_unit_test (test_map_entries),
    cmocka_unit_test (test_encoder_misuse),
    cmocka_unit_test (test_malformed),
    cmocka_unit_test (test_wrong_wire_type),
    cmocka_unit_test (test_depth_bound),
    cmocka_unit_test (test_unknown_skipped),
    cmocka_unit_test (test_python_decodes_ours),
    cmocka_unit_test (test_we_decode_python),
  };
  return cmocka_run_group_tests (tests, cross_setup, cross_teardown);
}
