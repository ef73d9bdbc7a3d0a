/* SPDX-License-Identifier: MIT */
/* Unit tests for the wire protocol (helper/protocol.c).
 *
 * Every rejection path of al_decode() is provoked at least once, and the
 * exact `why` string is asserted: the strings are the only diagnostic the
 * broker shows when the helper refuses a request, so a silent change of
 * which check fires is a behaviour change.  The last test checks that the
 * set of provoked strings is complete.
 *
 * Every decode in this file runs on bytes placed right before a PROT_NONE
 * guard page, so an over-read faults even in a build without ASan. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "protocol.h"

#define N_ELEMENTS(a) (sizeof (a) / sizeof ((a)[0]))

/* struct al_message and struct al_writer are ~260 KiB each: never on the
 * stack. */
static struct al_message msg;
static struct al_writer wr;

/* Every `why` string al_decode() can produce.  Keep in sync with
 * protocol.c; test_every_reachable_why_was_provoked fails if one of these
 * is never seen, note_why() fails on any string not listed. */
static const char *const reachable_whys[] = {
  "message shorter than the header",
  "bad magic: not an airlock message",
  "unsupported protocol version",
  "unknown message type",
  "header length disagrees with the message size",
  "message larger than the limit",
  "reserved header bits set",
  "truncated field header",
  "reserved field bits set",
  "field length overruns the message",
  "unknown field type",
  "field not allowed in this message type",
  "duplicate field",
  "u32 field with a length other than 4",
  "u64 field with a length other than 8",
  "string field longer than the limit",
  "string field contains a NUL byte",
  "path is not absolute and canonical, or too long",
  "pair field shorter than its first length",
  "pair field's first length overruns the field",
  "bind path is not absolute and canonical, or too long",
  "too many arguments",
  "too many environment entries",
  "environment entry is not NAME=value",
  "too many bind mounts",
  "too many masks",
  "unknown network mode",
  "as-init flag is not 0 or 1",
  "run request without a command",
  "run request without a workdir",
  "report without an event",
  "exit code out of range",
  "signal number out of range",
  "timed-out flag is not 0 or 1",
  "started report without a pid or limits",
  "unknown limits kind",
  "started report without a known privilege mode",
  "setup-failed report without a valid step",
  "exited report needs exactly one of exit code and signal",
  "unknown event",
};
static bool why_hit[N_ELEMENTS (reachable_whys)];

/* Defensive checks that no input can reach (see the test that proves it for
 * "too many fields"):
 *   - "too many fields": at most 1024 + 512 + 64 + 64 + 64 + 7 = 1735 fields can
 *     decode successfully, fewer than AL_MAX_FIELDS, so field 2049 is never
 *     looked at;
 *   - "strings exceed the decode arena": every decoded string of n bytes
 *     came from at least n + 8 message bytes and uses n + 1 arena bytes, and
 *     the arena is larger than the largest message;
 *   - "field has no value kind", "unknown field": kinds and the switch cover
 *     every field type that passes the "unknown field type" check. */
static const char *const unreachable_whys[] = {
  "too many fields",
  "strings exceed the decode arena",
  "field has no value kind",
  "unknown field",
};

static void
note_why (const char *why)
{
  for (size_t i = 0; i < N_ELEMENTS (reachable_whys); i++)
    if (strcmp (why, reachable_whys[i]) == 0)
      {
        why_hit[i] = true;
        return;
      }
  for (size_t i = 0; i < N_ELEMENTS (unreachable_whys); i++)
    if (strcmp (why, unreachable_whys[i]) == 0)
      fail_msg ("reached a check believed unreachable: \"%s\"", why);
  fail_msg ("unexpected why string \"%s\"", why);
}

/* Guarded decoding */

static uint8_t *guard_base;
static size_t guard_span; /* usable bytes right before the guard page */
static size_t guard_page;

static int
group_setup (void **state)
{
  (void) state;
  guard_page = (size_t) sysconf (_SC_PAGESIZE);
  guard_span = (AL_MAX_MESSAGE + 4096 + guard_page - 1) / guard_page * guard_page;
  void *p = mmap (NULL, guard_span + guard_page, PROT_READ | PROT_WRITE,
                  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED)
    return -1;
  guard_base = p;
  if (mprotect (guard_base + guard_span, guard_page, PROT_NONE) < 0)
    return -1;
  return 0;
}

static int
group_teardown (void **state)
{
  (void) state;
  munmap (guard_base, guard_span + guard_page);
  return 0;
}

/* Decode n bytes placed so that the byte after the last one is unmapped. */
static int
decode (const void *src, size_t n, const char **why)
{
  assert_true (n <= guard_span);
  uint8_t *p = guard_base + guard_span - n;
  if (n)
    memmove (p, src, n);
  *why = NULL;
  int rc = al_decode (p, n, &msg, why);
  if (rc == 0)
    assert_null (*why);
  else
    {
      assert_int_equal (rc, -1);
      assert_non_null (*why);
    }
  return rc;
}

static void
expect_ok (const void *src, size_t n)
{
  const char *why;
  if (decode (src, n, &why) != 0)
    fail_msg ("valid message rejected: \"%s\"", why);
}

static void
expect_reject (const void *src, size_t n, const char *want)
{
  const char *why;
  if (decode (src, n, &why) == 0)
    fail_msg ("invalid message accepted (wanted \"%s\")", want);
  assert_string_equal (why, want);
  note_why (why);
}

/* Writer-built messages */

static size_t
finish (void)
{
  size_t n = al_finish (&wr);
  assert_true (n >= AL_HEADER_SIZE);
  return n;
}

static void
writer_ok (void)
{
  size_t n = finish ();
  expect_ok (wr.buf, n);
}

static void
writer_reject (const char *want)
{
  size_t n = finish ();
  expect_reject (wr.buf, n, want);
}

/* Hand-built (possibly malformed) messages */

static uint8_t raw[AL_MAX_MESSAGE + 4096];
static size_t raw_len;

static void
put16 (uint8_t *p, uint16_t v)
{
  p[0] = (uint8_t) v;
  p[1] = (uint8_t) (v >> 8);
}

static void
put32 (uint8_t *p, uint32_t v)
{
  put16 (p, (uint16_t) v);
  put16 (p + 2, (uint16_t) (v >> 16));
}

static void
raw_header (uint32_t magic, uint16_t version, uint16_t type,
            uint32_t reserved)
{
  put32 (raw, magic);
  put16 (raw + 4, version);
  put16 (raw + 6, type);
  put32 (raw + 8, 0); /* patched by raw_end() */
  put32 (raw + 12, reserved);
  raw_len = AL_HEADER_SIZE;
}

static void
raw_begin (uint16_t type)
{
  raw_header (AL_MAGIC, AL_VERSION, type, 0);
}

static void
raw_bytes (const void *p, size_t n)
{
  assert_true (n <= sizeof raw - raw_len);
  if (n)
    memcpy (raw + raw_len, p, n);
  raw_len += n;
}

static void
raw_field_header (uint16_t type, uint16_t reserved, uint32_t len)
{
  assert_true (AL_FIELD_HEADER_SIZE <= sizeof raw - raw_len);
  put16 (raw + raw_len, type);
  put16 (raw + raw_len + 2, reserved);
  put32 (raw + raw_len + 4, len);
  raw_len += AL_FIELD_HEADER_SIZE;
}

static void
raw_field (uint16_t type, const void *v, size_t n)
{
  raw_field_header (type, 0, (uint32_t) n);
  raw_bytes (v, n);
}

static void
raw_str (uint16_t type, const char *s)
{
  raw_field (type, s, strlen (s));
}

static void
raw_u32 (uint16_t type, uint32_t v)
{
  uint8_t b[4];
  put32 (b, v);
  raw_field (type, b, 4);
}

static void
raw_u64 (uint16_t type, uint64_t v)
{
  uint8_t b[8];
  put32 (b, (uint32_t) v);
  put32 (b + 4, (uint32_t) (v >> 32));
  raw_field (type, b, 8);
}

/* A pair whose first-length word is given explicitly, so it can lie. */
static void
raw_pair (uint16_t type, uint32_t first_len, const void *v, size_t n)
{
  raw_field_header (type, 0, (uint32_t) (4 + n));
  uint8_t b[4];
  put32 (b, first_len);
  raw_bytes (b, 4);
  raw_bytes (v, n);
}

static void
raw_pair_str (uint16_t type, const char *a, const char *b)
{
  char buf[2 * AL_MAX_PATH + 8];
  size_t na = strlen (a), nb = strlen (b);
  assert_true (na + nb <= sizeof buf);
  memcpy (buf, a, na);
  memcpy (buf + na, b, nb);
  raw_pair (type, (uint32_t) na, buf, na + nb);
}

static size_t
raw_end (void)
{
  put32 (raw + 8, (uint32_t) raw_len);
  return raw_len;
}

static void
raw_ok (void)
{
  size_t n = raw_end ();
  expect_ok (raw, n);
}

static void
raw_reject (const char *want)
{
  size_t n = raw_end ();
  expect_reject (raw, n, want);
}

/* A valid value of the right kind for any known field. */
static void
raw_valid_field (uint16_t type)
{
  switch (type)
    {
    case AL_F_ARGV: raw_str (type, "true"); break;
    case AL_F_ENV: raw_str (type, "A=b"); break;
    case AL_F_WORKDIR:
    case AL_F_MASK:
    case AL_F_ROOTFS: raw_str (type, "/w"); break;
    case AL_F_BIND_RO:
    case AL_F_BIND_RW: raw_pair_str (type, "/s", "/d"); break;
    case AL_F_MEMORY_MAX: raw_u64 (type, 1); break;
    case AL_F_MESSAGE: raw_str (type, "m"); break;
    case AL_F_EVENT: raw_u32 (type, AL_EV_EXITED); break;
    case AL_F_LIMITS: raw_u32 (type, AL_LIMITS_RLIMIT); break;
    case AL_F_SIGNAL: raw_u32 (type, 9); break;
    case AL_F_TIMED_OUT: raw_u32 (type, 1); break;
    case AL_F_STEP: raw_u32 (type, AL_STEP_BIND); break;
    default: raw_u32 (type, 1); break;
    }
}

/* A run request that is complete, to which a test adds one field. */
static void
raw_run_base (void)
{
  raw_begin (AL_MSG_RUN);
  raw_str (AL_F_ARGV, "true");
  raw_str (AL_F_WORKDIR, "/w");
}

static const uint16_t run_fields[] = {
  AL_F_ARGV, AL_F_ENV, AL_F_WORKDIR, AL_F_ROOTFS, AL_F_BIND_RO,
  AL_F_BIND_RW, AL_F_NETWORK, AL_F_TIMEOUT_SEC, AL_F_MEMORY_MAX,
  AL_F_PIDS_MAX, AL_F_AS_INIT, AL_F_MASK,
};
static const uint16_t report_fields[] = {
  AL_F_EVENT, AL_F_PID, AL_F_LIMITS, AL_F_EXIT_CODE, AL_F_SIGNAL,
  AL_F_TIMED_OUT, AL_F_STEP, AL_F_ERRNO, AL_F_MESSAGE, AL_F_PRIVILEGE,
};

static bool
is_known_field (unsigned t)
{
  return (t >= AL_F_ARGV && t <= AL_F_MASK)
         || (t >= AL_F_EVENT && t <= AL_F_PRIVILEGE);
}

/* A decoded string must be a NUL-terminated copy inside the arena. */
static void
assert_in_arena (const char *s)
{
  assert_non_null (s);
  assert_true (s >= msg.arena && s < msg.arena + sizeof msg.arena);
  assert_non_null (memchr (s, 0, (size_t) (msg.arena + sizeof msg.arena - s)));
}

/* ------------------------------------------------------------------ */
/* Wire format: exact bytes of each field kind */

static void
test_encoding_bytes (void **state)
{
  (void) state;
  al_begin (&wr, AL_MSG_RUN);
  al_put_u32 (&wr, AL_F_NETWORK, 0x04030201u);
  al_put_u64 (&wr, AL_F_MEMORY_MAX, UINT64_C (0x0807060504030201));
  al_put_str (&wr, AL_F_ARGV, "ab");
  al_put_pair (&wr, AL_F_BIND_RO, "/a", "/bc");
  size_t n = al_finish (&wr);
  static const uint8_t want[] = {
    'A', 'L', 'K', '1', 1, 0, AL_MSG_RUN, 0, 71, 0, 0, 0, 0, 0, 0, 0,
    AL_F_NETWORK, 0, 0, 0, 4, 0, 0, 0, 1, 2, 3, 4,
    AL_F_MEMORY_MAX, 0, 0, 0, 8, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8,
    AL_F_ARGV, 0, 0, 0, 2, 0, 0, 0, 'a', 'b',
    AL_F_BIND_RO, 0, 0, 0, 9, 0, 0, 0, 2, 0, 0, 0, '/', 'a', '/', 'b', 'c',
  };
  assert_int_equal (n, sizeof want);
  assert_memory_equal (wr.buf, want, sizeof want);
}

/* Each field kind round-trips, including its boundary values. */

static void
test_u32_round_trip (void **state)
{
  (void) state;
  static const uint32_t values[] = { 0, 1, 0x80000000u, 0xffffffffu };
  for (size_t i = 0; i < N_ELEMENTS (values); i++)
    {
      raw_run_base ();
      raw_u32 (AL_F_TIMEOUT_SEC, values[i]);
      raw_u32 (AL_F_PIDS_MAX, ~values[i]);
      raw_ok ();
      assert_int_equal (msg.u.run.timeout_sec, values[i]);
      assert_int_equal (msg.u.run.pids_max, ~values[i]);
    }
}

static void
test_u64_round_trip (void **state)
{
  (void) state;
  static const uint64_t values[] = { 0, 1, UINT64_C (0xffffffff),
                                     UINT64_C (0x100000000),
                                     UINT64_C (0x0123456789abcdef),
                                     UINT64_MAX };
  for (size_t i = 0; i < N_ELEMENTS (values); i++)
    {
      al_begin (&wr, AL_MSG_RUN);
      al_put_str (&wr, AL_F_ARGV, "x");
      al_put_str (&wr, AL_F_WORKDIR, "/");
      al_put_u64 (&wr, AL_F_MEMORY_MAX, values[i]);
      writer_ok ();
      assert_true (msg.u.run.memory_max == values[i]);
    }
}

static void
test_string_round_trip (void **state)
{
  (void) state;
  static const char *const values[] = {
    "", "a", " leading and trailing ", "tab\there\nnewline",
    "\x01\x7f\x80\xff", "=", "$(rm -rf /); `x` 'q' \"dq\"",
  };
  al_begin (&wr, AL_MSG_RUN);
  for (size_t i = 0; i < N_ELEMENTS (values); i++)
    al_put_str (&wr, AL_F_ARGV, values[i]);
  al_put_str (&wr, AL_F_WORKDIR, "/w");
  writer_ok ();
  assert_int_equal (msg.u.run.argc, N_ELEMENTS (values));
  for (size_t i = 0; i < N_ELEMENTS (values); i++)
    {
      assert_in_arena (msg.u.run.argv[i]);
      assert_string_equal (msg.u.run.argv[i], values[i]);
    }
  assert_null (msg.u.run.argv[N_ELEMENTS (values)]);

  /* The longest string allowed, as an argument and as a report message. */
  char *big = malloc (AL_MAX_STRING + 1);
  assert_non_null (big);
  memset (big, 'x', AL_MAX_STRING);
  big[AL_MAX_STRING] = '\0';
  al_begin (&wr, AL_MSG_RUN);
  al_put_str (&wr, AL_F_ARGV, big);
  al_put_str (&wr, AL_F_WORKDIR, "/w");
  writer_ok ();
  assert_int_equal (strlen (msg.u.run.argv[0]), AL_MAX_STRING);
  al_begin (&wr, AL_MSG_REPORT);
  al_put_u32 (&wr, AL_F_EVENT, AL_EV_SETUP_FAILED);
  al_put_u32 (&wr, AL_F_STEP, AL_STEP_EXEC);
  al_put_str (&wr, AL_F_MESSAGE, big);
  writer_ok ();
  assert_string_equal (msg.u.report.message, big);
  free (big);
}

static const char *const good_paths[] = {
  "/", "/a", "/a/b/c", "/.a", "/..a", "/a..", "/...", "/a.b/c.d",
  "/a b/c", "/\xff\x01", "/a/b.",
};

static void
test_path_round_trip (void **state)
{
  (void) state;
  for (size_t i = 0; i < N_ELEMENTS (good_paths); i++)
    {
      al_begin (&wr, AL_MSG_RUN);
      al_put_str (&wr, AL_F_ARGV, "x");
      al_put_str (&wr, AL_F_WORKDIR, good_paths[i]);
      al_put_str (&wr, AL_F_ROOTFS, good_paths[i]);
      writer_ok ();
      assert_in_arena (msg.u.run.workdir);
      assert_in_arena (msg.u.run.rootfs);
      assert_string_equal (msg.u.run.workdir, good_paths[i]);
      assert_string_equal (msg.u.run.rootfs, good_paths[i]);
    }

  /* AL_MAX_PATH bytes is the longest path accepted. */
  char *p = malloc (AL_MAX_PATH + 1);
  assert_non_null (p);
  memset (p, 'a', AL_MAX_PATH);
  p[0] = '/';
  p[100] = '/';
  p[AL_MAX_PATH] = '\0';
  al_begin (&wr, AL_MSG_RUN);
  al_put_str (&wr, AL_F_ARGV, "x");
  al_put_str (&wr, AL_F_WORKDIR, p);
  al_put_pair (&wr, AL_F_BIND_RW, p, p);
  writer_ok ();
  assert_string_equal (msg.u.run.workdir, p);
  assert_string_equal (msg.u.run.binds_rw[0].src, p);
  assert_string_equal (msg.u.run.binds_rw[0].dst, p);
  free (p);
}

static void
test_pair_round_trip (void **state)
{
  (void) state;
  for (size_t i = 0; i < N_ELEMENTS (good_paths); i++)
    for (size_t j = 0; j < N_ELEMENTS (good_paths); j++)
      {
        al_begin (&wr, AL_MSG_RUN);
        al_put_str (&wr, AL_F_ARGV, "x");
        al_put_str (&wr, AL_F_WORKDIR, "/w");
        al_put_pair (&wr, AL_F_BIND_RO, good_paths[i], good_paths[j]);
        al_put_pair (&wr, AL_F_BIND_RW, good_paths[j], good_paths[i]);
        writer_ok ();
        const struct al_run *r = &msg.u.run;
        assert_int_equal (r->n_binds_ro, 1);
        assert_int_equal (r->n_binds_rw, 1);
        assert_in_arena (r->binds_ro[0].src);
        assert_in_arena (r->binds_ro[0].dst);
        assert_string_equal (r->binds_ro[0].src, good_paths[i]);
        assert_string_equal (r->binds_ro[0].dst, good_paths[j]);
        assert_string_equal (r->binds_rw[0].src, good_paths[j]);
        assert_string_equal (r->binds_rw[0].dst, good_paths[i]);
      }
}

/* ------------------------------------------------------------------ */
/* Full messages */

static void
put_full_run (void)
{
  al_begin (&wr, AL_MSG_RUN);
  al_put_u32 (&wr, AL_F_NETWORK, AL_NET_HOST); /* order does not matter */
  al_put_str (&wr, AL_F_ARGV, "/bin/sh");
  al_put_str (&wr, AL_F_ENV, "HOME=/home/u");
  al_put_str (&wr, AL_F_ARGV, "-c");
  al_put_str (&wr, AL_F_ARGV, "echo \"$HOME\"; exit 3");
  al_put_str (&wr, AL_F_ARGV, "");
  al_put_str (&wr, AL_F_ENV, "EMPTY=");
  al_put_str (&wr, AL_F_ENV, "X==y");
  al_put_str (&wr, AL_F_WORKDIR, "/home/u/project");
  al_put_str (&wr, AL_F_ROOTFS, "/var/lib/images/debian");
  al_put_pair (&wr, AL_F_BIND_RO, "/opt/tools", "/tools");
  al_put_pair (&wr, AL_F_BIND_RW, "/home/u/cache", "/cache");
  al_put_pair (&wr, AL_F_BIND_RO, "/", "/host");
  al_put_u32 (&wr, AL_F_TIMEOUT_SEC, 3600);
  al_put_u64 (&wr, AL_F_MEMORY_MAX, UINT64_C (8) << 30);
  al_put_u32 (&wr, AL_F_PIDS_MAX, 4096);
  al_put_str (&wr, AL_F_MASK, "/home/u/project/.config/airlock");
  al_put_str (&wr, AL_F_MASK, "/cache/state");
}

static void
test_run_round_trip (void **state)
{
  (void) state;
  put_full_run ();
  size_t n = finish ();

  /* Decode from a private copy, then wipe it: the decoded strings must be
   * copies, not pointers into the caller's buffer. */
  uint8_t *copy = malloc (n);
  assert_non_null (copy);
  memcpy (copy, wr.buf, n);
  const char *why = "unset";
  assert_int_equal (al_decode (copy, n, &msg, &why), 0);
  memset (copy, 0xa5, n);
  free (copy);

  const struct al_run *r = &msg.u.run;
  assert_int_equal (msg.type, AL_MSG_RUN);
  assert_int_equal (r->argc, 4);
  assert_string_equal (r->argv[0], "/bin/sh");
  assert_string_equal (r->argv[1], "-c");
  assert_string_equal (r->argv[2], "echo \"$HOME\"; exit 3");
  assert_string_equal (r->argv[3], "");
  assert_null (r->argv[4]);
  assert_int_equal (r->envc, 3);
  assert_string_equal (r->envp[0], "HOME=/home/u");
  assert_string_equal (r->envp[1], "EMPTY=");
  assert_string_equal (r->envp[2], "X==y");
  assert_null (r->envp[3]);
  assert_string_equal (r->workdir, "/home/u/project");
  assert_string_equal (r->rootfs, "/var/lib/images/debian");
  assert_int_equal (r->n_binds_ro, 2);
  assert_string_equal (r->binds_ro[0].src, "/opt/tools");
  assert_string_equal (r->binds_ro[0].dst, "/tools");
  assert_string_equal (r->binds_ro[1].src, "/");
  assert_string_equal (r->binds_ro[1].dst, "/host");
  assert_int_equal (r->n_binds_rw, 1);
  assert_string_equal (r->binds_rw[0].src, "/home/u/cache");
  assert_string_equal (r->binds_rw[0].dst, "/cache");
  assert_int_equal (r->network, AL_NET_HOST);
  assert_int_equal (r->timeout_sec, 3600);
  assert_true (r->memory_max == UINT64_C (8) << 30);
  assert_int_equal (r->pids_max, 4096);
  assert_int_equal (r->n_masks, 2);
  assert_string_equal (r->masks[0], "/home/u/project/.config/airlock");
  assert_string_equal (r->masks[1], "/cache/state");
  assert_in_arena (r->masks[0]);
  assert_in_arena (r->masks[1]);
  for (uint32_t i = 0; i < r->argc; i++)
    assert_in_arena (r->argv[i]);
  for (uint32_t i = 0; i < r->envc; i++)
    assert_in_arena (r->envp[i]);
  assert_in_arena (r->workdir);
  assert_in_arena (r->rootfs);
}

static void
test_run_defaults (void **state)
{
  (void) state;
  /* Fill the struct first, so that stale values would show. */
  put_full_run ();
  writer_ok ();

  al_begin (&wr, AL_MSG_RUN);
  al_put_str (&wr, AL_F_ARGV, "true");
  al_put_str (&wr, AL_F_WORKDIR, "/w");
  writer_ok ();
  const struct al_run *r = &msg.u.run;
  assert_int_equal (r->argc, 1);
  assert_null (r->argv[1]);
  assert_int_equal (r->envc, 0);
  assert_null (r->envp[0]);
  assert_null (r->rootfs);
  assert_int_equal (r->n_binds_ro, 0);
  assert_int_equal (r->n_binds_rw, 0);
  assert_int_equal (r->network, AL_NET_LOOPBACK);
  assert_int_equal (r->timeout_sec, 0);
  assert_true (r->memory_max == 0);
  assert_int_equal (r->pids_max, 0);
  assert_int_equal (r->n_masks, 0);
}

static void
test_network_modes (void **state)
{
  (void) state;
  static const uint32_t modes[] = { AL_NET_LOOPBACK, AL_NET_NONE, AL_NET_HOST, AL_NET_ALLOWLIST };
  for (size_t i = 0; i < N_ELEMENTS (modes); i++)
    {
      raw_run_base ();
      raw_u32 (AL_F_NETWORK, modes[i]);
      raw_ok ();
      assert_int_equal (msg.u.run.network, modes[i]);
    }
}

#define BIT(f) (UINT64_C (1) << ((f) - AL_F_EVENT))

static void
test_report_started (void **state)
{
  (void) state;
  static const uint32_t limits[] = { AL_LIMITS_RLIMIT, AL_LIMITS_CGROUP_V1,
                                     AL_LIMITS_CGROUP_V2 };
  static const uint32_t pids[] = { 1, 4242, 0xffffffffu };
  static const uint32_t modes[] = { AL_PRIV_UNPRIVILEGED, AL_PRIV_SETUID,
                                    AL_PRIV_FILECAPS, AL_PRIV_ROOT };
  for (size_t i = 0; i < N_ELEMENTS (limits); i++)
    for (size_t j = 0; j < N_ELEMENTS (pids); j++)
      for (size_t k = 0; k < N_ELEMENTS (modes); k++)
        {
          al_begin (&wr, AL_MSG_REPORT);
          al_put_u32 (&wr, AL_F_EVENT, AL_EV_STARTED);
          al_put_u32 (&wr, AL_F_PID, pids[j]);
          al_put_u32 (&wr, AL_F_LIMITS, limits[i]);
          al_put_u32 (&wr, AL_F_PRIVILEGE, modes[k]);
          writer_ok ();
          const struct al_report *r = &msg.u.report;
          assert_int_equal (msg.type, AL_MSG_REPORT);
          assert_int_equal (r->event, AL_EV_STARTED);
          assert_int_equal (r->pid, pids[j]);
          assert_int_equal (r->limits, limits[i]);
          assert_int_equal (r->privilege, modes[k]);
          assert_string_equal (r->message, "");
          assert_true (r->present
                       == (BIT (AL_F_EVENT) | BIT (AL_F_PID) | BIT (AL_F_LIMITS)
                           | BIT (AL_F_PRIVILEGE)));
        }
}

static void
test_report_setup_failed (void **state)
{
  (void) state;
  for (uint32_t step = 1; step <= AL_STEP_MAX_; step++)
    {
      al_begin (&wr, AL_MSG_REPORT);
      al_put_str (&wr, AL_F_MESSAGE, "mount /proc: Permission denied");
      al_put_u32 (&wr, AL_F_ERRNO, 13);
      al_put_u32 (&wr, AL_F_STEP, step);
      al_put_u32 (&wr, AL_F_EVENT, AL_EV_SETUP_FAILED);
      writer_ok ();
      const struct al_report *r = &msg.u.report;
      assert_int_equal (r->event, AL_EV_SETUP_FAILED);
      assert_int_equal (r->step, step);
      assert_int_equal (r->err, 13);
      assert_in_arena (r->message);
      assert_string_equal (r->message, "mount /proc: Permission denied");
      assert_true (r->present
                   == (BIT (AL_F_EVENT) | BIT (AL_F_STEP) | BIT (AL_F_ERRNO)
                       | BIT (AL_F_MESSAGE)));
    }

  /* errno and message are optional; an absent message reads as "". */
  al_begin (&wr, AL_MSG_REPORT);
  al_put_u32 (&wr, AL_F_EVENT, AL_EV_SETUP_FAILED);
  al_put_u32 (&wr, AL_F_STEP, AL_STEP_MONITOR);
  writer_ok ();
  assert_string_equal (msg.u.report.message, "");
  assert_int_equal (msg.u.report.err, 0);
  assert_true (msg.u.report.present == (BIT (AL_F_EVENT) | BIT (AL_F_STEP)));
}

static void
test_report_exited (void **state)
{
  (void) state;
  static const uint32_t codes[] = { 0, 1, 124, 125, 255 };
  for (size_t i = 0; i < N_ELEMENTS (codes); i++)
    for (uint32_t t = 0; t <= 1; t++)
      {
        al_begin (&wr, AL_MSG_REPORT);
        al_put_u32 (&wr, AL_F_EVENT, AL_EV_EXITED);
        al_put_u32 (&wr, AL_F_EXIT_CODE, codes[i]);
        al_put_u32 (&wr, AL_F_TIMED_OUT, t);
        writer_ok ();
        const struct al_report *r = &msg.u.report;
        assert_int_equal (r->event, AL_EV_EXITED);
        assert_int_equal (r->exit_code, codes[i]);
        assert_int_equal (r->timed_out, t);
        assert_true (r->present
                     == (BIT (AL_F_EVENT) | BIT (AL_F_EXIT_CODE)
                         | BIT (AL_F_TIMED_OUT)));
      }
  static const uint32_t sigs[] = { 1, 9, 15, 31, 64 };
  for (size_t i = 0; i < N_ELEMENTS (sigs); i++)
    {
      al_begin (&wr, AL_MSG_REPORT);
      al_put_u32 (&wr, AL_F_SIGNAL, sigs[i]);
      al_put_u32 (&wr, AL_F_EVENT, AL_EV_EXITED);
      writer_ok ();
      const struct al_report *r = &msg.u.report;
      assert_int_equal (r->signal, sigs[i]);
      assert_int_equal (r->timed_out, 0);
      assert_true (r->present == (BIT (AL_F_EVENT) | BIT (AL_F_SIGNAL)));
    }
}

/* The tap report has no fields beyond its event: its descriptor travels
 * outside the message (SCM_RIGHTS), checked by the broker. */
static void
test_report_tap (void **state)
{
  (void) state;
  al_begin (&wr, AL_MSG_REPORT);
  al_put_u32 (&wr, AL_F_EVENT, AL_EV_TAP);
  writer_ok ();
  assert_int_equal (msg.u.report.event, AL_EV_TAP);
  assert_true (msg.u.report.present == BIT (AL_F_EVENT));
}

static void
test_decode_resets_state (void **state)
{
  (void) state;
  /* A report decoded after a run request (and vice versa) keeps nothing. */
  put_full_run ();
  writer_ok ();
  al_begin (&wr, AL_MSG_REPORT);
  al_put_u32 (&wr, AL_F_EVENT, AL_EV_EXITED);
  al_put_u32 (&wr, AL_F_SIGNAL, 9);
  writer_ok ();
  assert_int_equal (msg.type, AL_MSG_REPORT);
  assert_int_equal (msg.u.report.pid, 0);
  assert_int_equal (msg.u.report.exit_code, 0);
  assert_string_equal (msg.u.report.message, "");
  assert_true (msg.u.report.present == (BIT (AL_F_EVENT) | BIT (AL_F_SIGNAL)));
}

static void
test_step_names (void **state)
{
  (void) state;
  for (uint32_t s = 1; s <= AL_STEP_MAX_; s++)
    {
      assert_non_null (al_step_name (s));
      assert_string_not_equal (al_step_name (s), "unknown step");
    }
  assert_string_equal (al_step_name (0), "unknown step");
  assert_string_equal (al_step_name (AL_STEP_MAX_ + 1), "unknown step");
  assert_string_equal (al_step_name (0xffffffffu), "unknown step");
}

/* ------------------------------------------------------------------ */
/* Header rejections */

static void
test_reject_short_header (void **state)
{
  (void) state;
  raw_run_base ();
  raw_end ();
  for (size_t n = 0; n < AL_HEADER_SIZE; n++)
    expect_reject (raw, n, "message shorter than the header");
}

static void
test_reject_bad_magic (void **state)
{
  (void) state;
  static const uint32_t magics[] = { 0, 0x324b4c41u /* ALK2 */,
                                     0x414c4b31u /* byte-swapped */,
                                     0xffffffffu };
  for (size_t i = 0; i < N_ELEMENTS (magics); i++)
    {
      raw_header (magics[i], AL_VERSION, AL_MSG_RUN, 0);
      raw_str (AL_F_ARGV, "true");
      raw_str (AL_F_WORKDIR, "/w");
      raw_reject ("bad magic: not an airlock message");
    }
}

static void
test_reject_version (void **state)
{
  (void) state;
  static const uint16_t versions[] = { 0, 2, 0x100, 0xffff };
  for (size_t i = 0; i < N_ELEMENTS (versions); i++)
    {
      raw_header (AL_MAGIC, versions[i], AL_MSG_RUN, 0);
      raw_str (AL_F_ARGV, "true");
      raw_str (AL_F_WORKDIR, "/w");
      raw_reject ("unsupported protocol version");
    }
}

static void
test_reject_message_type (void **state)
{
  (void) state;
  static const uint16_t types[] = { 0, 3, 0x100, 0x200, 0xffff };
  for (size_t i = 0; i < N_ELEMENTS (types); i++)
    {
      raw_header (AL_MAGIC, AL_VERSION, types[i], 0);
      raw_reject ("unknown message type");
    }
}

static void
test_reject_length_mismatch (void **state)
{
  (void) state;
  raw_run_base ();
  size_t n = raw_end ();
  static const int64_t deltas[] = { -1, 1, 8, -(int64_t) AL_HEADER_SIZE };
  for (size_t i = 0; i < N_ELEMENTS (deltas); i++)
    {
      put32 (raw + 8, (uint32_t) ((int64_t) n + deltas[i]));
      expect_reject (raw, n, "header length disagrees with the message size");
    }
  put32 (raw + 8, 0);
  expect_reject (raw, n, "header length disagrees with the message size");
  put32 (raw + 8, 0xffffffffu);
  expect_reject (raw, n, "header length disagrees with the message size");
  /* Trailing bytes beyond the header's length are not silently ignored. */
  put32 (raw + 8, (uint32_t) n);
  raw[n] = 0;
  expect_reject (raw, n + 1, "header length disagrees with the message size");
}

static void
test_reject_oversize (void **state)
{
  (void) state;
  /* Exactly AL_MAX_MESSAGE is fine (see test_encoder_exact_fit); one more
   * byte is not, whatever it holds. */
  static const size_t sizes[] = { AL_MAX_MESSAGE + 1, AL_MAX_MESSAGE + 8,
                                  AL_MAX_MESSAGE + 4096 };
  for (size_t i = 0; i < N_ELEMENTS (sizes); i++)
    {
      raw_run_base ();
      memset (raw + raw_len, 0, sizes[i] - raw_len);
      raw_len = sizes[i];
      raw_reject ("message larger than the limit");
    }
}

static void
test_reject_reserved_header (void **state)
{
  (void) state;
  static const uint32_t values[] = { 1, 0x100, 0x80000000u, 0xffffffffu };
  for (size_t i = 0; i < N_ELEMENTS (values); i++)
    {
      raw_header (AL_MAGIC, AL_VERSION, AL_MSG_RUN, values[i]);
      raw_str (AL_F_ARGV, "true");
      raw_str (AL_F_WORKDIR, "/w");
      raw_reject ("reserved header bits set");
    }
}

/* ------------------------------------------------------------------ */
/* Field framing rejections */

static void
test_reject_truncated_field_header (void **state)
{
  (void) state;
  for (size_t extra = 1; extra < AL_FIELD_HEADER_SIZE; extra++)
    {
      raw_run_base ();
      static const uint8_t junk[AL_FIELD_HEADER_SIZE] = { AL_F_ENV, 0, 0, 0,
                                                          0, 0, 0, 0 };
      raw_bytes (junk, extra);
      raw_reject ("truncated field header");
    }
  /* Also as the very first field. */
  raw_begin (AL_MSG_REPORT);
  raw_bytes ("\x20\x00\x00", 3);
  raw_reject ("truncated field header");
}

static void
test_reject_reserved_field_bits (void **state)
{
  (void) state;
  static const uint16_t values[] = { 1, 0x80, 0x8000, 0xffff };
  for (size_t i = 0; i < N_ELEMENTS (values); i++)
    {
      raw_run_base ();
      raw_field_header (AL_F_TIMEOUT_SEC, values[i], 4);
      raw_bytes ("\0\0\0\0", 4);
      raw_reject ("reserved field bits set");
    }
}

static void
test_reject_field_overrun (void **state)
{
  (void) state;
  static const uint32_t lens[] = { 5, 6, 0x7fffffffu, 0xfffffff8u,
                                   0xffffffffu };
  for (size_t i = 0; i < N_ELEMENTS (lens); i++)
    {
      raw_run_base ();
      raw_field_header (AL_F_ARGV, 0, lens[i]);
      raw_bytes ("abcd", 4); /* fewer bytes than the length says */
      raw_reject ("field length overruns the message");
    }
  /* A length that overruns by exactly one byte. */
  raw_begin (AL_MSG_RUN);
  raw_field_header (AL_F_WORKDIR, 0, 3);
  raw_bytes ("/w", 2);
  raw_reject ("field length overruns the message");
}

static void
test_reject_unknown_field_type (void **state)
{
  (void) state;
  for (unsigned t = 0; t <= 0x1ff; t++)
    {
      if (is_known_field (t))
        continue;
      raw_run_base ();
      raw_u32 ((uint16_t) t, 0);
      raw_reject ("unknown field type");
      raw_begin (AL_MSG_REPORT);
      raw_u32 ((uint16_t) t, 0);
      raw_reject ("unknown field type");
    }
  static const uint16_t high[] = { 0x7fff, 0x8000, 0x8001, 0xff01, 0xffff };
  for (size_t i = 0; i < N_ELEMENTS (high); i++)
    {
      raw_run_base ();
      raw_field (high[i], "", 0);
      raw_reject ("unknown field type");
    }
}

static void
test_reject_wrong_message_type (void **state)
{
  (void) state;
  for (size_t i = 0; i < N_ELEMENTS (report_fields); i++)
    {
      raw_run_base ();
      raw_valid_field (report_fields[i]);
      raw_reject ("field not allowed in this message type");
    }
  for (size_t i = 0; i < N_ELEMENTS (run_fields); i++)
    {
      raw_begin (AL_MSG_REPORT);
      raw_u32 (AL_F_EVENT, AL_EV_EXITED);
      raw_u32 (AL_F_EXIT_CODE, 0);
      raw_valid_field (run_fields[i]);
      raw_reject ("field not allowed in this message type");
    }
}

static void
test_reject_duplicate_scalar (void **state)
{
  (void) state;
  static const uint16_t run_scalars[] = {
    AL_F_WORKDIR, AL_F_ROOTFS, AL_F_NETWORK, AL_F_TIMEOUT_SEC,
    AL_F_MEMORY_MAX, AL_F_PIDS_MAX,
  };
  for (size_t i = 0; i < N_ELEMENTS (run_scalars); i++)
    {
      /* Adjacent duplicates... */
      raw_begin (AL_MSG_RUN);
      raw_str (AL_F_ARGV, "true");
      raw_valid_field (run_scalars[i]);
      raw_valid_field (run_scalars[i]);
      raw_reject ("duplicate field");
      /* ...and duplicates separated by other fields. */
      raw_begin (AL_MSG_RUN);
      raw_valid_field (run_scalars[i]);
      raw_str (AL_F_ARGV, "true");
      raw_str (AL_F_ENV, "A=b");
      raw_valid_field (run_scalars[i]);
      raw_reject ("duplicate field");
    }
  for (size_t i = 0; i < N_ELEMENTS (report_fields); i++)
    {
      raw_begin (AL_MSG_REPORT);
      raw_valid_field (report_fields[i]);
      raw_valid_field (report_fields[i]);
      raw_reject ("duplicate field");
    }
  /* The same value twice is a duplicate too. */
  raw_begin (AL_MSG_RUN);
  raw_str (AL_F_ARGV, "true");
  raw_str (AL_F_WORKDIR, "/w");
  raw_str (AL_F_WORKDIR, "/other");
  raw_reject ("duplicate field");
}

static void
test_reject_u32_size (void **state)
{
  (void) state;
  static const uint8_t zeros[16];
  static const size_t sizes[] = { 0, 1, 3, 5, 8, 16 };
  for (size_t i = 0; i < N_ELEMENTS (sizes); i++)
    {
      static const uint16_t run_u32[] = { AL_F_NETWORK, AL_F_TIMEOUT_SEC,
                                          AL_F_PIDS_MAX };
      for (size_t j = 0; j < N_ELEMENTS (run_u32); j++)
        {
          raw_run_base ();
          raw_field (run_u32[j], zeros, sizes[i]);
          raw_reject ("u32 field with a length other than 4");
        }
      for (size_t j = 0; j < N_ELEMENTS (report_fields); j++)
        {
          if (report_fields[j] == AL_F_MESSAGE)
            continue;
          raw_begin (AL_MSG_REPORT);
          raw_field (report_fields[j], zeros, sizes[i]);
          raw_reject ("u32 field with a length other than 4");
        }
    }
}

static void
test_reject_u64_size (void **state)
{
  (void) state;
  static const uint8_t zeros[16];
  static const size_t sizes[] = { 0, 1, 4, 7, 9, 16 };
  for (size_t i = 0; i < N_ELEMENTS (sizes); i++)
    {
      raw_run_base ();
      raw_field (AL_F_MEMORY_MAX, zeros, sizes[i]);
      raw_reject ("u64 field with a length other than 8");
    }
}

/* ------------------------------------------------------------------ */
/* String, path and pair rejections */

static void
test_reject_nul_in_string (void **state)
{
  (void) state;
  static const struct
  {
    const char *bytes;
    size_t len;
  } cases[] = {
    { "\0", 1 }, { "\0abc", 4 }, { "ab\0c", 4 }, { "abc\0", 4 },
    { "A=b\0c", 5 },
  };
  for (size_t i = 0; i < N_ELEMENTS (cases); i++)
    {
      raw_run_base ();
      raw_field (AL_F_ARGV, cases[i].bytes, cases[i].len);
      raw_reject ("string field contains a NUL byte");
      raw_run_base ();
      raw_field (AL_F_ENV, cases[i].bytes, cases[i].len);
      raw_reject ("string field contains a NUL byte");
      raw_begin (AL_MSG_REPORT);
      raw_u32 (AL_F_EVENT, AL_EV_SETUP_FAILED);
      raw_u32 (AL_F_STEP, AL_STEP_EXEC);
      raw_field (AL_F_MESSAGE, cases[i].bytes, cases[i].len);
      raw_reject ("string field contains a NUL byte");
    }
}

static void
test_reject_string_too_long (void **state)
{
  (void) state;
  char *big = malloc (AL_MAX_STRING + 2);
  assert_non_null (big);
  memset (big, 'x', AL_MAX_STRING + 1);
  big[0] = 'A';
  big[1] = '=';
  big[AL_MAX_STRING + 1] = '\0';
  /* The encoder does not enforce AL_MAX_STRING; the decoder does. */
  static const uint16_t fields[] = { AL_F_ARGV, AL_F_ENV };
  for (size_t i = 0; i < N_ELEMENTS (fields); i++)
    {
      al_begin (&wr, AL_MSG_RUN);
      al_put_str (&wr, AL_F_WORKDIR, "/w");
      al_put_str (&wr, fields[i], big);
      writer_reject ("string field longer than the limit");
    }
  al_begin (&wr, AL_MSG_REPORT);
  al_put_u32 (&wr, AL_F_EVENT, AL_EV_SETUP_FAILED);
  al_put_str (&wr, AL_F_MESSAGE, big);
  writer_reject ("string field longer than the limit");
  free (big);
}

static const char *const bad_paths[] = {
  "", "relative", "a/b", "./a", "../a", "~/a", " /a",
  "/..", "/.", "/a/..", "/a/.", "/a/../b", "/a/./b", "/../a", "/./a",
  "//", "///", "//a", "/a//b", "/a/", "/a/b/", "/a/b//",
};

static char *
too_long_path (void)
{
  char *p = malloc (AL_MAX_PATH + 2);
  assert_non_null (p);
  memset (p, 'a', AL_MAX_PATH + 1);
  p[0] = '/';
  p[AL_MAX_PATH + 1] = '\0';
  return p;
}

static void
test_reject_bad_path (void **state)
{
  (void) state;
  static const char *const why = "path is not absolute and canonical, or too long";
  static const uint16_t fields[] = { AL_F_WORKDIR, AL_F_ROOTFS, AL_F_MASK };
  for (size_t f = 0; f < N_ELEMENTS (fields); f++)
    {
      for (size_t i = 0; i < N_ELEMENTS (bad_paths); i++)
        {
          raw_begin (AL_MSG_RUN);
          raw_str (AL_F_ARGV, "true");
          raw_str (fields[f], bad_paths[i]);
          raw_reject (why);
        }
      /* A NUL inside a path, at its start and at its end. */
      raw_begin (AL_MSG_RUN);
      raw_field (fields[f], "/a\0b", 4);
      raw_reject (why);
      raw_begin (AL_MSG_RUN);
      raw_field (fields[f], "\0/a", 3);
      raw_reject (why);
      raw_begin (AL_MSG_RUN);
      raw_field (fields[f], "/a\0", 3);
      raw_reject (why);
      /* One byte over AL_MAX_PATH. */
      char *p = too_long_path ();
      raw_begin (AL_MSG_RUN);
      raw_str (fields[f], p);
      raw_reject (why);
      free (p);
    }
}

static void
test_reject_bad_bind_path (void **state)
{
  (void) state;
  static const char *const why
      = "bind path is not absolute and canonical, or too long";
  static const uint16_t fields[] = { AL_F_BIND_RO, AL_F_BIND_RW };
  char *longp = too_long_path ();
  for (size_t f = 0; f < N_ELEMENTS (fields); f++)
    {
      for (size_t i = 0; i < N_ELEMENTS (bad_paths); i++)
        {
          raw_run_base ();
          raw_pair_str (fields[f], bad_paths[i], "/dst");
          raw_reject (why);
          raw_run_base ();
          raw_pair_str (fields[f], "/src", bad_paths[i]);
          raw_reject (why);
        }
      raw_run_base ();
      raw_pair (fields[f], 4, "/a\0b/dst", 8);
      raw_reject (why);
      raw_run_base ();
      raw_pair (fields[f], 4, "/src/d\0t", 8);
      raw_reject (why);
      raw_run_base ();
      raw_pair_str (fields[f], longp, "/dst");
      raw_reject (why);
      raw_run_base ();
      raw_pair_str (fields[f], "/src", longp);
      raw_reject (why);
      /* A first length that splits "/a/b" into "/a/" and "b". */
      raw_run_base ();
      raw_pair (fields[f], 3, "/a/b", 4);
      raw_reject (why);
    }
  free (longp);
}

static void
test_reject_pair_framing (void **state)
{
  (void) state;
  static const uint16_t fields[] = { AL_F_BIND_RO, AL_F_BIND_RW };
  for (size_t f = 0; f < N_ELEMENTS (fields); f++)
    {
      for (size_t n = 0; n < 4; n++)
        {
          raw_run_base ();
          raw_field (fields[f], "\0\0\0\0", n);
          raw_reject ("pair field shorter than its first length");
        }
      static const uint32_t firsts[] = { 5, 6, 0x7fffffffu, 0xfffffffcu,
                                         0xffffffffu };
      for (size_t i = 0; i < N_ELEMENTS (firsts); i++)
        {
          raw_run_base ();
          raw_pair (fields[f], firsts[i], "/a/b", 4);
          raw_reject ("pair field's first length overruns the field");
        }
      /* First length 0, or the whole value: one of the paths is empty. */
      raw_run_base ();
      raw_pair (fields[f], 0, "/a/b", 4);
      raw_reject ("bind path is not absolute and canonical, or too long");
      raw_run_base ();
      raw_pair (fields[f], 4, "/a/b", 4);
      raw_reject ("bind path is not absolute and canonical, or too long");
      raw_run_base ();
      raw_pair (fields[f], 0, "", 0);
      raw_reject ("bind path is not absolute and canonical, or too long");
    }
}

/* ------------------------------------------------------------------ */
/* Count limits */

static void
test_limit_argv (void **state)
{
  (void) state;
  raw_begin (AL_MSG_RUN);
  raw_str (AL_F_WORKDIR, "/w");
  for (int i = 0; i < AL_MAX_ARGV; i++)
    raw_str (AL_F_ARGV, i % 2 ? "" : "arg");
  raw_ok ();
  assert_int_equal (msg.u.run.argc, AL_MAX_ARGV);
  assert_null (msg.u.run.argv[AL_MAX_ARGV]);
  assert_string_equal (msg.u.run.argv[AL_MAX_ARGV - 1], "");
  raw_str (AL_F_ARGV, "one-too-many");
  raw_reject ("too many arguments");
}

static void
test_limit_env (void **state)
{
  (void) state;
  raw_run_base ();
  for (int i = 0; i < AL_MAX_ENV; i++)
    raw_str (AL_F_ENV, "A=");
  raw_ok ();
  assert_int_equal (msg.u.run.envc, AL_MAX_ENV);
  assert_null (msg.u.run.envp[AL_MAX_ENV]);
  raw_str (AL_F_ENV, "B=c");
  raw_reject ("too many environment entries");
}

static void
test_limit_binds (void **state)
{
  (void) state;
  static const uint16_t fields[] = { AL_F_BIND_RO, AL_F_BIND_RW };
  for (size_t f = 0; f < N_ELEMENTS (fields); f++)
    {
      raw_run_base ();
      /* The other list is full too: the two limits are independent. */
      for (int i = 0; i < AL_MAX_BINDS; i++)
        raw_pair_str (fields[1 - f], "/o", "/p");
      for (int i = 0; i < AL_MAX_BINDS; i++)
        raw_pair_str (fields[f], "/s", "/d");
      raw_ok ();
      assert_int_equal (msg.u.run.n_binds_ro, AL_MAX_BINDS);
      assert_int_equal (msg.u.run.n_binds_rw, AL_MAX_BINDS);
      raw_pair_str (fields[f], "/s", "/d");
      raw_reject ("too many bind mounts");
    }
}

static void
test_limit_masks (void **state)
{
  (void) state;
  raw_run_base ();
  for (int i = 0; i < AL_MAX_MASKS; i++)
    raw_str (AL_F_MASK, "/w/.config/airlock");
  raw_ok ();
  assert_int_equal (msg.u.run.n_masks, AL_MAX_MASKS);
  raw_str (AL_F_MASK, "/w/.config/airlock");
  raw_reject ("too many masks");
}

/* "too many fields" cannot be provoked: the most fields a run request can
 * hold before another limit fires is below AL_MAX_FIELDS (a report has at
 * most ten).  This pins that fact, so that raising a count limit past it
 * makes this test, not a fuzzer, notice. */
static void
test_field_limit_unreachable (void **state)
{
  (void) state;
  const size_t most = AL_MAX_ARGV + AL_MAX_ENV + 2 * AL_MAX_BINDS + AL_MAX_MASKS + 7;
  assert_true (most < AL_MAX_FIELDS);
  raw_begin (AL_MSG_RUN);
  for (int i = 0; i < AL_MAX_ARGV; i++)
    raw_str (AL_F_ARGV, "");
  for (int i = 0; i < AL_MAX_ENV; i++)
    raw_str (AL_F_ENV, "A=");
  for (int i = 0; i < AL_MAX_BINDS; i++)
    {
      raw_pair_str (AL_F_BIND_RO, "/", "/");
      raw_pair_str (AL_F_BIND_RW, "/", "/");
    }
  for (int i = 0; i < AL_MAX_MASKS; i++)
    raw_str (AL_F_MASK, "/m");
  raw_valid_field (AL_F_WORKDIR);
  raw_valid_field (AL_F_ROOTFS);
  raw_valid_field (AL_F_NETWORK);
  raw_valid_field (AL_F_TIMEOUT_SEC);
  raw_valid_field (AL_F_MEMORY_MAX);
  raw_valid_field (AL_F_PIDS_MAX);
  raw_valid_field (AL_F_AS_INIT);
  raw_ok ();
  /* Any further field hits a count limit, a duplicate or an unknown type
   * long before field number AL_MAX_FIELDS + 1. */
  size_t full = raw_len;
  for (unsigned t = 0; t <= 64; t++)
    {
      raw_len = full;
      if (is_known_field (t))
        raw_valid_field ((uint16_t) t);
      else
        raw_u32 ((uint16_t) t, 0);
      size_t n = raw_end ();
      const char *why;
      assert_int_equal (decode (raw, n, &why), -1);
      note_why (why);
      assert_string_not_equal (why, "too many fields");
    }
}

/* ------------------------------------------------------------------ */
/* Run request content rejections */

static void
test_reject_env_format (void **state)
{
  (void) state;
  static const char *const bad[] = { "", "FOO", "=", "=value", "==", "a b" };
  for (size_t i = 0; i < N_ELEMENTS (bad); i++)
    {
      raw_run_base ();
      raw_str (AL_F_ENV, "OK=1");
      raw_str (AL_F_ENV, bad[i]);
      raw_reject ("environment entry is not NAME=value");
    }
  static const char *const good[] = { "A=", "A==", "_=x", "a b=c" };
  for (size_t i = 0; i < N_ELEMENTS (good); i++)
    {
      raw_run_base ();
      raw_str (AL_F_ENV, good[i]);
      raw_ok ();
      assert_string_equal (msg.u.run.envp[0], good[i]);
    }
}

static void
test_as_init_flag (void **state)
{
  (void) state;
  raw_run_base ();
  raw_u32 (AL_F_AS_INIT, 1);
  size_t n = raw_end ();
  expect_ok (raw, n);
  assert_int_equal (msg.u.run.as_init, 1);
  raw_run_base ();
  raw_u32 (AL_F_AS_INIT, 2);
  raw_reject ("as-init flag is not 0 or 1");
}

static void
test_reject_network_mode (void **state)
{
  (void) state;
  static const uint32_t bad[] = { AL_NET_ALLOWLIST + 1, 0x100, 0x80000000u,
                                  0xffffffffu };
  for (size_t i = 0; i < N_ELEMENTS (bad); i++)
    {
      raw_run_base ();
      raw_u32 (AL_F_NETWORK, bad[i]);
      raw_reject ("unknown network mode");
    }
}

static void
test_reject_missing_argv_workdir (void **state)
{
  (void) state;
  raw_begin (AL_MSG_RUN);
  raw_reject ("run request without a command");
  raw_begin (AL_MSG_RUN);
  raw_str (AL_F_WORKDIR, "/w");
  raw_str (AL_F_ENV, "A=b");
  raw_reject ("run request without a command");
  raw_begin (AL_MSG_RUN);
  raw_str (AL_F_ARGV, "true");
  raw_reject ("run request without a workdir");
  raw_begin (AL_MSG_RUN);
  raw_str (AL_F_ARGV, "true");
  raw_str (AL_F_ROOTFS, "/r");
  raw_pair_str (AL_F_BIND_RW, "/a", "/b");
  raw_reject ("run request without a workdir");
}

/* ------------------------------------------------------------------ */
/* Report cross-field rules */

static void
report (uint32_t event)
{
  raw_begin (AL_MSG_REPORT);
  raw_u32 (AL_F_EVENT, event);
}

static void
test_reject_report_no_event (void **state)
{
  (void) state;
  raw_begin (AL_MSG_REPORT);
  raw_reject ("report without an event");
  raw_begin (AL_MSG_REPORT);
  raw_u32 (AL_F_EXIT_CODE, 0);
  raw_u32 (AL_F_TIMED_OUT, 0);
  raw_reject ("report without an event");
  raw_begin (AL_MSG_REPORT);
  raw_u32 (AL_F_PID, 7);
  raw_u32 (AL_F_LIMITS, AL_LIMITS_RLIMIT);
  raw_reject ("report without an event");
}

static void
test_reject_exit_code_range (void **state)
{
  (void) state;
  static const uint32_t bad[] = { 256, 0x10000, 0xffffffffu };
  for (size_t i = 0; i < N_ELEMENTS (bad); i++)
    {
      report (AL_EV_EXITED);
      raw_u32 (AL_F_EXIT_CODE, bad[i]);
      raw_reject ("exit code out of range");
    }
}

static void
test_reject_signal_range (void **state)
{
  (void) state;
  static const uint32_t bad[] = { 0, 65, 128, 0xffffffffu };
  for (size_t i = 0; i < N_ELEMENTS (bad); i++)
    {
      report (AL_EV_EXITED);
      raw_u32 (AL_F_SIGNAL, bad[i]);
      raw_reject ("signal number out of range");
    }
}

static void
test_reject_timed_out_flag (void **state)
{
  (void) state;
  static const uint32_t bad[] = { 2, 0xff, 0xffffffffu };
  for (size_t i = 0; i < N_ELEMENTS (bad); i++)
    {
      report (AL_EV_EXITED);
      raw_u32 (AL_F_EXIT_CODE, 124);
      raw_u32 (AL_F_TIMED_OUT, bad[i]);
      raw_reject ("timed-out flag is not 0 or 1");
    }
}

static void
test_reject_started (void **state)
{
  (void) state;
  static const char *const why = "started report without a pid or limits";
  report (AL_EV_STARTED);
  raw_reject (why);
  report (AL_EV_STARTED);
  raw_u32 (AL_F_LIMITS, AL_LIMITS_CGROUP_V2);
  raw_reject (why);
  report (AL_EV_STARTED);
  raw_u32 (AL_F_PID, 4242);
  raw_reject (why);
  report (AL_EV_STARTED);
  raw_u32 (AL_F_PID, 0);
  raw_u32 (AL_F_LIMITS, AL_LIMITS_CGROUP_V2);
  raw_reject (why);

  static const uint32_t bad_limits[] = { 0, AL_LIMITS_CGROUP_V2 + 1,
                                         0xffffffffu };
  for (size_t i = 0; i < N_ELEMENTS (bad_limits); i++)
    {
      report (AL_EV_STARTED);
      raw_u32 (AL_F_PID, 4242);
      raw_u32 (AL_F_LIMITS, bad_limits[i]);
      raw_u32 (AL_F_PRIVILEGE, AL_PRIV_SETUID);
      raw_reject ("unknown limits kind");
    }

  /* The privilege mode is part of every started report, and known. */
  static const uint32_t bad_modes[] = { 0, AL_PRIV_ROOT + 1, 0xffffffffu };
  report (AL_EV_STARTED);
  raw_u32 (AL_F_PID, 4242);
  raw_u32 (AL_F_LIMITS, AL_LIMITS_RLIMIT);
  raw_reject ("started report without a known privilege mode");
  for (size_t i = 0; i < N_ELEMENTS (bad_modes); i++)
    {
      report (AL_EV_STARTED);
      raw_u32 (AL_F_PID, 4242);
      raw_u32 (AL_F_LIMITS, AL_LIMITS_RLIMIT);
      raw_u32 (AL_F_PRIVILEGE, bad_modes[i]);
      raw_reject ("started report without a known privilege mode");
    }
}

static void
test_reject_setup_failed (void **state)
{
  (void) state;
  static const char *const why = "setup-failed report without a valid step";
  report (AL_EV_SETUP_FAILED);
  raw_u32 (AL_F_ERRNO, 1);
  raw_str (AL_F_MESSAGE, "no step");
  raw_reject (why);
  static const uint32_t bad[] = { 0, AL_STEP_MAX_ + 1, 0xffffffffu };
  for (size_t i = 0; i < N_ELEMENTS (bad); i++)
    {
      report (AL_EV_SETUP_FAILED);
      raw_u32 (AL_F_STEP, bad[i]);
      raw_reject (why);
    }
}

static void
test_reject_exited_code_signal (void **state)
{
  (void) state;
  static const char *const why
      = "exited report needs exactly one of exit code and signal";
  report (AL_EV_EXITED);
  raw_reject (why);
  report (AL_EV_EXITED);
  raw_u32 (AL_F_TIMED_OUT, 1);
  raw_reject (why);
  report (AL_EV_EXITED);
  raw_u32 (AL_F_EXIT_CODE, 0);
  raw_u32 (AL_F_SIGNAL, 9);
  raw_reject (why);
}

static void
test_reject_unknown_event (void **state)
{
  (void) state;
  static const uint32_t bad[] = { 0, AL_EV_TAP + 1, 0x100, 0xffffffffu };
  for (size_t i = 0; i < N_ELEMENTS (bad); i++)
    {
      report (bad[i]);
      raw_u32 (AL_F_EXIT_CODE, 0);
      raw_reject ("unknown event");
    }
}

/* ------------------------------------------------------------------ */
/* Encoder limits */

static void
test_encoder_overflow_single (void **state)
{
  (void) state;
  char *big = malloc (AL_MAX_MESSAGE + 1);
  assert_non_null (big);
  memset (big, 'x', AL_MAX_MESSAGE);
  big[AL_MAX_MESSAGE] = '\0';
  al_begin (&wr, AL_MSG_RUN);
  al_put_str (&wr, AL_F_ARGV, big);
  assert_int_equal (al_finish (&wr), 0);
  /* A value that fits only without its field header. */
  big[AL_MAX_MESSAGE - AL_HEADER_SIZE - AL_FIELD_HEADER_SIZE + 1] = '\0';
  al_begin (&wr, AL_MSG_RUN);
  al_put_str (&wr, AL_F_ARGV, big);
  assert_int_equal (al_finish (&wr), 0);
  big[AL_MAX_MESSAGE / 2] = '\0';
  al_begin (&wr, AL_MSG_RUN);
  al_put_pair (&wr, AL_F_BIND_RO, big, big);
  assert_int_equal (al_finish (&wr), 0);
  free (big);
}

static void
test_encoder_overflow_sticky (void **state)
{
  (void) state;
  char *chunk = malloc (100001);
  assert_non_null (chunk);
  memset (chunk, 'y', 100000);
  chunk[100000] = '\0';
  al_begin (&wr, AL_MSG_RUN);
  al_put_str (&wr, AL_F_WORKDIR, "/w");
  al_put_str (&wr, AL_F_ARGV, chunk);
  al_put_str (&wr, AL_F_ARGV, chunk);
  size_t before = wr.len;
  al_put_str (&wr, AL_F_ARGV, chunk); /* does not fit */
  assert_int_equal (wr.len, before);
  /* Small fields would fit, but the failure sticks. */
  al_put_u32 (&wr, AL_F_NETWORK, 0);
  al_put_u64 (&wr, AL_F_MEMORY_MAX, 0);
  al_put_str (&wr, AL_F_ENV, "A=b");
  al_put_pair (&wr, AL_F_BIND_RO, "/a", "/b");
  assert_int_equal (wr.len, before);
  assert_int_equal (al_finish (&wr), 0);
  assert_int_equal (al_finish (&wr), 0);
  /* al_begin starts over. */
  al_begin (&wr, AL_MSG_RUN);
  al_put_str (&wr, AL_F_WORKDIR, "/w");
  al_put_str (&wr, AL_F_ARGV, chunk);
  writer_ok ();
  free (chunk);
}

static void
test_encoder_exact_fit (void **state)
{
  (void) state;
  /* header 16 + workdir "/" (9) + argv AL_MAX_STRING (131080) + argv of
   * the rest fills AL_MAX_MESSAGE exactly. */
  size_t rest = AL_MAX_MESSAGE - AL_HEADER_SIZE - (AL_FIELD_HEADER_SIZE + 1)
                - (AL_FIELD_HEADER_SIZE + AL_MAX_STRING) - AL_FIELD_HEADER_SIZE;
  assert_true (rest <= AL_MAX_STRING);
  char *s = malloc (AL_MAX_STRING + 1);
  assert_non_null (s);
  memset (s, 'z', AL_MAX_STRING);
  s[AL_MAX_STRING] = '\0';
  al_begin (&wr, AL_MSG_RUN);
  al_put_str (&wr, AL_F_WORKDIR, "/");
  al_put_str (&wr, AL_F_ARGV, s);
  s[rest] = '\0';
  al_put_str (&wr, AL_F_ARGV, s);
  size_t n = al_finish (&wr);
  assert_int_equal (n, AL_MAX_MESSAGE);
  expect_ok (wr.buf, n);
  assert_int_equal (strlen (msg.u.run.argv[0]), AL_MAX_STRING);
  assert_int_equal (strlen (msg.u.run.argv[1]), rest);
  /* Not even an empty field fits now. */
  al_put_str (&wr, AL_F_ENV, "");
  assert_int_equal (al_finish (&wr), 0);

  /* 15 bytes left: a u32 field (12) fits, a u64 field (16) does not. */
  al_begin (&wr, AL_MSG_RUN);
  al_put_str (&wr, AL_F_WORKDIR, "/");
  s[rest] = 'z';
  s[AL_MAX_STRING] = '\0';
  al_put_str (&wr, AL_F_ARGV, s);
  s[rest - 15] = '\0';
  al_put_str (&wr, AL_F_ARGV, s);
  assert_int_equal (wr.len, AL_MAX_MESSAGE - 15);
  al_put_u64 (&wr, AL_F_MEMORY_MAX, 1);
  assert_int_equal (al_finish (&wr), 0);
  al_begin (&wr, AL_MSG_RUN);
  al_put_str (&wr, AL_F_WORKDIR, "/");
  s[rest - 15] = 'z';
  al_put_str (&wr, AL_F_ARGV, s);
  s[rest - 15] = '\0';
  al_put_str (&wr, AL_F_ARGV, s);
  al_put_u32 (&wr, AL_F_PIDS_MAX, 1);
  assert_int_equal (al_finish (&wr), AL_MAX_MESSAGE - 3);
  expect_ok (wr.buf, AL_MAX_MESSAGE - 3);
  free (s);
}

/* ------------------------------------------------------------------ */
/* Decoding never reads past len */

/* A corpus of valid messages: the full run request and one report of each
 * event. */
static size_t
build_valid (unsigned which, uint8_t *out)
{
  switch (which)
    {
    case 0:
      put_full_run ();
      break;
    case 1:
      al_begin (&wr, AL_MSG_REPORT);
      al_put_u32 (&wr, AL_F_EVENT, AL_EV_STARTED);
      al_put_u32 (&wr, AL_F_PID, 4242);
      al_put_u32 (&wr, AL_F_LIMITS, AL_LIMITS_CGROUP_V2);
      al_put_u32 (&wr, AL_F_PRIVILEGE, AL_PRIV_FILECAPS);
      break;
    case 2:
      al_begin (&wr, AL_MSG_REPORT);
      al_put_u32 (&wr, AL_F_EVENT, AL_EV_SETUP_FAILED);
      al_put_u32 (&wr, AL_F_STEP, AL_STEP_PIVOT);
      al_put_u32 (&wr, AL_F_ERRNO, 1);
      al_put_str (&wr, AL_F_MESSAGE, "pivot_root: Operation not permitted");
      break;
    case 3:
      al_begin (&wr, AL_MSG_REPORT);
      al_put_u32 (&wr, AL_F_EVENT, AL_EV_EXITED);
      al_put_u32 (&wr, AL_F_EXIT_CODE, 3);
      al_put_u32 (&wr, AL_F_TIMED_OUT, 0);
      break;
    default:
      al_begin (&wr, AL_MSG_REPORT);
      al_put_u32 (&wr, AL_F_EVENT, AL_EV_EXITED);
      al_put_u32 (&wr, AL_F_SIGNAL, 9);
      al_put_u32 (&wr, AL_F_TIMED_OUT, 1);
      break;
    }
  size_t n = finish ();
  memcpy (out, wr.buf, n);
  return n;
}
#define N_VALID 5

static void
test_every_prefix (void **state)
{
  (void) state;
  static uint8_t m[4096], p[4096];
  for (unsigned which = 0; which < N_VALID; which++)
    {
      size_t n = build_valid (which, m);
      assert_true (n <= sizeof m);
      expect_ok (m, n);

      /* Where each field starts. */
      bool starts[4096] = { false };
      for (size_t off = AL_HEADER_SIZE; off < n;)
        {
          starts[off] = true;
          uint32_t flen = (uint32_t) m[off + 4] | (uint32_t) m[off + 5] << 8
                          | (uint32_t) m[off + 6] << 16
                          | (uint32_t) m[off + 7] << 24;
          off += AL_FIELD_HEADER_SIZE + flen;
        }
      starts[n] = true;

      for (size_t len = 0; len < n; len++)
        {
          const char *why;
          /* As is: the header's length no longer matches. */
          assert_int_equal (decode (m, len, &why), -1);
          note_why (why);
          if (len < AL_HEADER_SIZE)
            {
              assert_string_equal (why, "message shorter than the header");
              continue;
            }
          assert_string_equal (why,
                               "header length disagrees with the message size");

          /* With the header's length patched, so decoding reaches the cut
           * field.  At a field boundary, the message may be valid. */
          memcpy (p, m, len);
          put32 (p + 8, (uint32_t) len);
          int rc = decode (p, len, &why);
          if (rc < 0)
            note_why (why);
          size_t start = len;
          while (!starts[start])
            start--;
          if (start == len)
            continue;
          assert_int_equal (rc, -1);
          if (len - start < AL_FIELD_HEADER_SIZE)
            assert_string_equal (why, "truncated field header");
          else
            assert_string_equal (why, "field length overruns the message");
        }
    }
}

/* A small deterministic PRNG (xorshift64*), so failures reproduce. */
static uint64_t rng_state = UINT64_C (0x9e3779b97f4a7c15);

static uint32_t
rng (void)
{
  rng_state ^= rng_state >> 12;
  rng_state ^= rng_state << 25;
  rng_state ^= rng_state >> 27;
  return (uint32_t) ((rng_state * UINT64_C (2685821657736338717)) >> 32);
}

static void
check_decoded_invariants (void)
{
  if (msg.type == AL_MSG_RUN)
    {
      const struct al_run *r = &msg.u.run;
      assert_true (r->argc >= 1 && r->argc <= AL_MAX_ARGV);
      assert_null (r->argv[r->argc]);
      for (uint32_t i = 0; i < r->argc; i++)
        assert_in_arena (r->argv[i]);
      assert_true (r->envc <= AL_MAX_ENV);
      assert_null (r->envp[r->envc]);
      for (uint32_t i = 0; i < r->envc; i++)
        {
          assert_in_arena (r->envp[i]);
          assert_true (r->envp[i][0] != '=');
          assert_non_null (strchr (r->envp[i], '='));
        }
      assert_in_arena (r->workdir);
      assert_true (r->workdir[0] == '/');
      if (r->rootfs)
        assert_in_arena (r->rootfs);
      assert_true (r->n_binds_ro <= AL_MAX_BINDS);
      assert_true (r->n_binds_rw <= AL_MAX_BINDS);
      assert_true (r->n_masks <= AL_MAX_MASKS);
      for (uint32_t i = 0; i < r->n_masks; i++)
        assert_true (r->masks[i][0] == '/');
      assert_true (r->network <= AL_NET_ALLOWLIST);
    }
  else
    {
      const struct al_report *r = &msg.u.report;
      assert_int_equal (msg.type, AL_MSG_REPORT);
      assert_true (r->event >= AL_EV_STARTED && r->event <= AL_EV_EXITED);
      assert_true (r->exit_code <= 255);
      assert_true (r->timed_out <= 1);
      if (r->present & BIT (AL_F_MESSAGE))
        assert_in_arena (r->message);
      else
        assert_string_equal (r->message, "");
    }
}

static void
test_random_mutations (void **state)
{
  (void) state;
  static uint8_t m[4096 + 64];
  for (int iter = 0; iter < 30000; iter++)
    {
      size_t n = build_valid ((unsigned) (rng () % N_VALID), m);
      int nmut = 1 + (int) (rng () % 4);
      for (int k = 0; k < nmut; k++)
        switch (rng () % 5)
          {
          case 0: /* random byte */
            if (n)
              m[rng () % n] = (uint8_t) rng ();
            break;
          case 1: /* bit flip */
            if (n)
              m[rng () % n] ^= (uint8_t) (1u << (rng () % 8));
            break;
          case 2: /* truncate */
            n = rng () % (n + 1);
            break;
          case 3: /* append junk */
            {
              size_t add = rng () % 17;
              for (size_t i = 0; i < add; i++)
                m[n + i] = (uint8_t) rng ();
              n += add;
              break;
            }
          default: /* a small word anywhere: a plausible wrong length */
            if (n >= AL_HEADER_SIZE + 4)
              put32 (m + AL_HEADER_SIZE + rng () % (n - AL_HEADER_SIZE - 3),
                     rng () % 64);
            break;
          }
      if (n >= AL_HEADER_SIZE && rng () % 4)
        put32 (m + 8, (uint32_t) n);
      const char *why;
      if (decode (m, n, &why) == 0)
        check_decoded_invariants ();
      else
        note_why (why);
    }
}

/* Must run last: every reachable rejection was provoked by some test. */
static void
test_every_reachable_why_was_provoked (void **state)
{
  (void) state;
  int missing = 0;
  for (size_t i = 0; i < N_ELEMENTS (reachable_whys); i++)
    if (!why_hit[i])
      {
        print_message ("never provoked: \"%s\"\n", reachable_whys[i]);
        missing++;
      }
  assert_int_equal (missing, 0);
}

int
main (void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test (test_encoding_bytes),
    cmocka_unit_test (test_u32_round_trip),
    cmocka_unit_test (test_u64_round_trip),
    cmocka_unit_test (test_string_round_trip),
    cmocka_unit_test (test_path_round_trip),
    cmocka_unit_test (test_pair_round_trip),
    cmocka_unit_test (test_run_round_trip),
    cmocka_unit_test (test_run_defaults),
    cmocka_unit_test (test_network_modes),
    cmocka_unit_test (test_report_started),
    cmocka_unit_test (test_report_setup_failed),
    cmocka_unit_test (test_report_exited),
    cmocka_unit_test (test_decode_resets_state),
    cmocka_unit_test (test_step_names),
    cmocka_unit_test (test_reject_short_header),
    cmocka_unit_test (test_reject_bad_magic),
    cmocka_unit_test (test_reject_version),
    cmocka_unit_test (test_reject_message_type),
    cmocka_unit_test (test_reject_length_mismatch),
    cmocka_unit_test (test_reject_oversize),
    cmocka_unit_test (test_reject_reserved_header),
    cmocka_unit_test (test_reject_truncated_field_header),
    cmocka_unit_test (test_reject_reserved_field_bits),
    cmocka_unit_test (test_reject_field_overrun),
    cmocka_unit_test (test_reject_unknown_field_type),
    cmocka_unit_test (test_as_init_flag),
    cmocka_unit_test (test_reject_wrong_message_type),
    cmocka_unit_test (test_reject_duplicate_scalar),
    cmocka_unit_test (test_reject_u32_size),
    cmocka_unit_test (test_reject_u64_size),
    cmocka_unit_test (test_reject_nul_in_string),
    cmocka_unit_test (test_reject_string_too_long),
    cmocka_unit_test (test_reject_bad_path),
    cmocka_unit_test (test_reject_bad_bind_path),
    cmocka_unit_test (test_reject_pair_framing),
    cmocka_unit_test (test_limit_argv),
    cmocka_unit_test (test_limit_env),
    cmocka_unit_test (test_limit_binds),
    cmocka_unit_test (test_limit_masks),
    cmocka_unit_test (test_field_limit_unreachable),
    cmocka_unit_test (test_reject_env_format),
    cmocka_unit_test (test_reject_network_mode),
    cmocka_unit_test (test_reject_missing_argv_workdir),
    cmocka_unit_test (test_reject_report_no_event),
    cmocka_unit_test (test_reject_exit_code_range),
    cmocka_unit_test (test_reject_signal_range),
    cmocka_unit_test (test_reject_timed_out_flag),
    cmocka_unit_test (test_reject_started),
    cmocka_unit_test (test_reject_setup_failed),
    cmocka_unit_test (test_reject_exited_code_signal),
    cmocka_unit_test (test_reject_unknown_event),
    cmocka_unit_test (test_report_tap),
    cmocka_unit_test (test_encoder_overflow_single),
    cmocka_unit_test (test_encoder_overflow_sticky),
    cmocka_unit_test (test_encoder_exact_fit),
    cmocka_unit_test (test_every_prefix),
    cmocka_unit_test (test_random_mutations),
    cmocka_unit_test (test_every_reachable_why_was_provoked),
  };
  return cmocka_run_group_tests_name ("protocol", tests, group_setup,
                                      group_teardown);
}
