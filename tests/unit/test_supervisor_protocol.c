/* SPDX-License-Identifier: MIT */
/* Unit tests of the broker <-> supervisor messages: every message type
 * round-trips, and every rejection path the broker relies on (the
 * supervisor's messages are untrusted) answers with its reason. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "supervisor_protocol.h"

static struct al_writer w;
static struct sup_msg m;

static int
decode (const char **why)
{
  size_t n = al_finish (&w);
  assert_true (n > 0);
  return sup_decode (w.buf, n, &m, why);
}

static void
expect_reject (const char *want)
{
  const char *why = NULL;
  assert_int_equal (decode (&why), -1);
  assert_string_equal (why, want);
}

static void
test_spawn_round_trip (void **state)
{
  (void) state;
  sup_begin (&w, SUP_SPAWN);
  sup_put_u32 (&w, SUP_F_JOB, 7);
  sup_put_str (&w, SUP_F_ARGV, "bash");
  sup_put_str (&w, SUP_F_ARGV, "-c");
  sup_put_str (&w, SUP_F_ARGV, "echo 'hi there'");
  sup_put_str (&w, SUP_F_ENV, "A=1");
  sup_put_str (&w, SUP_F_CWD, "/w/x");
  sup_put_u32 (&w, SUP_F_STDIN, 1);
  const char *why = NULL;
  assert_int_equal (decode (&why), 0);
  assert_int_equal (m.type, SUP_SPAWN);
  assert_int_equal (m.job, 7);
  assert_int_equal (m.argc, 3);
  assert_string_equal (m.argv[2], "echo 'hi there'");
  assert_null (m.argv[3]);
  assert_string_equal (m.envp[0], "A=1");
  assert_null (m.envp[1]);
  assert_string_equal (m.cwd, "/w/x");
  assert_int_equal (m.stdin_mode, 1);
}

static void
test_output_bytes_round_trip (void **state)
{
  (void) state;
  unsigned char data[256];
  for (int i = 0; i < 256; i++)
    data[i] = (unsigned char) i; /* NUL and everything: bytes, not a string */
  sup_begin (&w, SUP_OUTPUT);
  sup_put_u32 (&w, SUP_F_JOB, 1);
  sup_put_u32 (&w, SUP_F_STREAM, 2);
  sup_put_bytes (&w, SUP_F_DATA, data, sizeof data);
  const char *why = NULL;
  assert_int_equal (decode (&why), 0);
  assert_int_equal (m.stream, 2);
  assert_int_equal (m.data_len, 256);
  assert_memory_equal (m.data, data, 256);
}

static void
test_exited_needs_one_of_code_and_signal (void **state)
{
  (void) state;
  sup_begin (&w, SUP_EXITED);
  sup_put_u32 (&w, SUP_F_JOB, 1);
  sup_put_u32 (&w, SUP_F_EXIT_CODE, 3);
  const char *why = NULL;
  assert_int_equal (decode (&why), 0);
  assert_int_equal (m.exit_code, 3);
  sup_begin (&w, SUP_EXITED);
  sup_put_u32 (&w, SUP_F_JOB, 1);
  expect_reject ("exited needs exactly one of exit code and signal");
  sup_begin (&w, SUP_EXITED);
  sup_put_u32 (&w, SUP_F_JOB, 1);
  sup_put_u32 (&w, SUP_F_EXIT_CODE, 3);
  sup_put_u32 (&w, SUP_F_SIGNAL, 9);
  expect_reject ("exited needs exactly one of exit code and signal");
}

/* The script travels as data after its SPAWN, never in argv. */
static void
test_script_round_trip (void **state)
{
  (void) state;
  sup_begin (&w, SUP_SPAWN);
  sup_put_u32 (&w, SUP_F_JOB, 7);
  sup_put_str (&w, SUP_F_ARGV, "bash");
  sup_put_str (&w, SUP_F_CWD, "/");
  sup_put_u32 (&w, SUP_F_SCRIPT, 1);
  const char *why = NULL;
  assert_int_equal (decode (&why), 0);
  assert_int_equal (m.script, 1);
  sup_begin (&w, SUP_SCRIPT);
  sup_put_u32 (&w, SUP_F_JOB, 7);
  sup_put_bytes (&w, SUP_F_DATA, "echo s\0x", 9);
  sup_put_u32 (&w, SUP_F_EOF, 1);
  assert_int_equal (decode (&why), 0);
  assert_int_equal (m.type, SUP_SCRIPT);
  assert_int_equal (m.job, 7);
  assert_int_equal (m.data_len, 9);
  assert_memory_equal (m.data, "echo s\0x", 9);
  assert_int_equal (m.eof, 1);

  sup_begin (&w, SUP_SPAWN);
  sup_put_u32 (&w, SUP_F_JOB, 7);
  sup_put_str (&w, SUP_F_ARGV, "bash");
  sup_put_str (&w, SUP_F_CWD, "/");
  sup_put_u32 (&w, SUP_F_SCRIPT, 2);
  expect_reject ("flag is not 0 or 1");
  sup_begin (&w, SUP_SCRIPT);
  sup_put_u32 (&w, SUP_F_JOB, 7);
  sup_put_u32 (&w, SUP_F_STREAM, 1);
  expect_reject ("field not allowed in this message type");
  sup_begin (&w, SUP_SCRIPT);
  sup_put_bytes (&w, SUP_F_DATA, "x", 1);
  expect_reject ("a required field is missing");
  sup_begin (&w, SUP_OUTPUT); /* the supervisor never sends a script flag */
  sup_put_u32 (&w, SUP_F_JOB, 1);
  sup_put_u32 (&w, SUP_F_STREAM, 1);
  sup_put_bytes (&w, SUP_F_DATA, "x", 1);
  sup_put_u32 (&w, SUP_F_SCRIPT, 1);
  expect_reject ("field not allowed in this message type");
}

/* A terminal: rows, columns and type come together, each bounded; a
 * resize names the job and both sides. */
static void
test_pty_fields (void **state)
{
  (void) state;
  sup_begin (&w, SUP_SPAWN);
  sup_put_u32 (&w, SUP_F_JOB, 3);
  sup_put_str (&w, SUP_F_ARGV, "bash");
  sup_put_str (&w, SUP_F_CWD, "/");
  sup_put_u32 (&w, SUP_F_ROWS, 24);
  sup_put_u32 (&w, SUP_F_COLS, 80);
  sup_put_str (&w, SUP_F_TERM, "xterm-256color");
  const char *why = NULL;
  assert_int_equal (decode (&why), 0);
  assert_int_equal (m.rows, 24);
  assert_int_equal (m.cols, 80);
  assert_string_equal (m.term, "xterm-256color");

  sup_begin (&w, SUP_SPAWN); /* no terminal: term stays NULL */
  sup_put_u32 (&w, SUP_F_JOB, 3);
  sup_put_str (&w, SUP_F_ARGV, "bash");
  sup_put_str (&w, SUP_F_CWD, "/");
  assert_int_equal (decode (&why), 0);
  assert_null (m.term);

  sup_begin (&w, SUP_SPAWN);
  sup_put_u32 (&w, SUP_F_JOB, 3);
  sup_put_str (&w, SUP_F_ARGV, "bash");
  sup_put_str (&w, SUP_F_CWD, "/");
  sup_put_u32 (&w, SUP_F_ROWS, 24);
  expect_reject ("a terminal needs rows, columns and type together");

  static const uint32_t bad_sides[] = { 0, SUP_MAX_PTY_SIDE + 1, UINT32_MAX };
  for (size_t i = 0; i < sizeof bad_sides / sizeof *bad_sides; i++)
    {
      sup_begin (&w, SUP_RESIZE);
      sup_put_u32 (&w, SUP_F_JOB, 3);
      sup_put_u32 (&w, SUP_F_ROWS, 10);
      sup_put_u32 (&w, SUP_F_COLS, bad_sides[i]);
      expect_reject ("terminal rows or columns out of range");
    }

  static const char *const bad_terms[] = { "", "../../etc/x", "a b", "xterm\n",
                                           "123456789012345678901234567890123" };
  for (size_t i = 0; i < sizeof bad_terms / sizeof *bad_terms; i++)
    {
      sup_begin (&w, SUP_SPAWN);
      sup_put_u32 (&w, SUP_F_JOB, 3);
      sup_put_str (&w, SUP_F_TERM, bad_terms[i]);
      expect_reject ("terminal type is not a short name");
    }

  sup_begin (&w, SUP_RESIZE);
  sup_put_u32 (&w, SUP_F_JOB, 3);
  sup_put_u32 (&w, SUP_F_ROWS, 50);
  sup_put_u32 (&w, SUP_F_COLS, 132);
  assert_int_equal (decode (&why), 0);
  assert_int_equal (m.type, SUP_RESIZE);
  assert_int_equal (m.rows, 50);
  assert_int_equal (m.cols, 132);

  sup_begin (&w, SUP_RESIZE);
  sup_put_u32 (&w, SUP_F_JOB, 3);
  sup_put_u32 (&w, SUP_F_ROWS, 50);
  expect_reject ("a required field is missing");

  sup_begin (&w, SUP_RESIZE); /* the type is fixed at the start */
  sup_put_u32 (&w, SUP_F_JOB, 3);
  sup_put_u32 (&w, SUP_F_ROWS, 50);
  sup_put_u32 (&w, SUP_F_COLS, 132);
  sup_put_str (&w, SUP_F_TERM, "vt100");
  expect_reject ("field not allowed in this message type");

  sup_begin (&w, SUP_OUTPUT); /* the supervisor never sends a size */
  sup_put_u32 (&w, SUP_F_JOB, 1);
  sup_put_u32 (&w, SUP_F_STREAM, 1);
  sup_put_bytes (&w, SUP_F_DATA, "x", 1);
  sup_put_u32 (&w, SUP_F_ROWS, 1);
  expect_reject ("field not allowed in this message type");
}

static void
test_rejections (void **state)
{
  (void) state;
  sup_begin (&w, SUP_OUTPUT); /* missing stream and data */
  sup_put_u32 (&w, SUP_F_JOB, 1);
  expect_reject ("a required field is missing");

  sup_begin (&w, SUP_PING);
  sup_put_u32 (&w, SUP_F_JOB, 1);
  expect_reject ("field not allowed in this message type");

  sup_begin (&w, SUP_SIGNAL);
  sup_put_u32 (&w, SUP_F_JOB, 1);
  sup_put_u32 (&w, SUP_F_SIGNAL, 65);
  expect_reject ("signal number out of range");

  sup_begin (&w, SUP_SIGNAL);
  sup_put_u32 (&w, SUP_F_JOB, 0);
  sup_put_u32 (&w, SUP_F_SIGNAL, 9);
  expect_reject ("job 0 does not exist");

  sup_begin (&w, SUP_OUTPUT);
  sup_put_u32 (&w, SUP_F_JOB, 1);
  sup_put_u32 (&w, SUP_F_STREAM, 4);
  sup_put_bytes (&w, SUP_F_DATA, "x", 1);
  expect_reject ("stream is not 1, 2 or 3");

  sup_begin (&w, SUP_SPAWN);
  sup_put_u32 (&w, SUP_F_JOB, 1);
  sup_put_str (&w, SUP_F_ARGV, "x");
  sup_put_str (&w, SUP_F_CWD, "relative");
  expect_reject ("path is not absolute and canonical, or too long");

  sup_begin (&w, SUP_SPAWN);
  sup_put_u32 (&w, SUP_F_JOB, 1);
  sup_put_str (&w, SUP_F_ARGV, "x");
  sup_put_str (&w, SUP_F_CWD, "/a/../b");
  expect_reject ("path is not absolute and canonical, or too long");

  sup_begin (&w, SUP_SPAWN);
  sup_put_u32 (&w, SUP_F_JOB, 1);
  sup_put_u32 (&w, SUP_F_JOB, 2);
  expect_reject ("duplicate field");

  sup_begin (&w, SUP_SPAWN);
  sup_put_u32 (&w, SUP_F_JOB, 1);
  sup_put_str (&w, SUP_F_ENV, "NOEQUALS");
  expect_reject ("environment entry is not NAME=value");

  sup_begin (&w, SUP_OUTPUT);
  sup_put_u32 (&w, SUP_F_JOB, 1);
  sup_put_u32 (&w, SUP_F_STREAM, 1);
  static char big[SUP_MAX_DATA + 1];
  al_put_bytes (&w, (enum al_field_type) SUP_F_DATA, big, sizeof big);
  expect_reject ("data field longer than the limit");

  /* A helper message is not a supervisor message, and the reverse. */
  al_begin (&w, AL_MSG_REPORT);
  al_put_u32 (&w, AL_F_EVENT, AL_EV_EXITED);
  expect_reject ("unknown message type");
}

static void
test_every_prefix_is_rejected_cleanly (void **state)
{
  (void) state;
  sup_begin (&w, SUP_SPAWN);
  sup_put_u32 (&w, SUP_F_JOB, 9);
  sup_put_str (&w, SUP_F_ARGV, "bash");
  sup_put_str (&w, SUP_F_CWD, "/");
  size_t n = al_finish (&w);
  for (size_t len = 0; len < n; len++)
    {
      unsigned char *copy = malloc (len ? len : 1);
      memcpy (copy, w.buf, len);
      const char *why = NULL;
      assert_int_equal (sup_decode (copy, len, &m, &why), -1);
      assert_non_null (why);
      free (copy);
    }
}

int
main (void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test (test_spawn_round_trip),
    cmocka_unit_test (test_output_bytes_round_trip),
    cmocka_unit_test (test_exited_needs_one_of_code_and_signal),
    cmocka_unit_test (test_script_round_trip),
    cmocka_unit_test (test_pty_fields),
    cmocka_unit_test (test_rejections),
    cmocka_unit_test (test_every_prefix_is_rejected_cleanly),
  };
  return cmocka_run_group_tests_name ("supervisor_protocol", tests, NULL, NULL);
}
