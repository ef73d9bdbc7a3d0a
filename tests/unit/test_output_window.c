/* SPDX-License-Identifier: MIT */
/* Unit tests for the session layer's bounded output capture
 * (broker/output_window.c).
 *
 * Expected renders are built here from first principles (code points in,
 * head = floor (0.4 * limit), marker, tail), never by calling the code
 * under test, except that sanitize_utf8() -- checked on its own against a
 * table of every invalid-input class -- supplies the decoded text of
 * random inputs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "output_window.h"

#define N_ELEMENTS(a) (sizeof (a) / sizeof ((a)[0]))
#define FFFD "\xef\xbf\xbd"
#define MB (1024 * 1024)

/* Deterministic randomness, so a failure can be replayed. */
static uint64_t rng_state = 0x9e3779b97f4a7c15u;

static uint64_t
rng (void)
{
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return rng_state;
}

static size_t
rng_below (size_t n)
{
  return n ? (size_t) (rng () % n) : 0;
}

/* The window's memory ceiling: its code points and the struct (no raw
 * bytes are kept). */
static size_t
memory_bound (size_t limit)
{
  return 4 * limit + 2048;
}

/* Helpers */

/* Decode valid UTF-8 (the test's own simple decoder). */
static size_t
decode_valid (const char *s, size_t len, uint32_t **out)
{
  uint32_t *cps = malloc ((len + 1) * sizeof *cps);
  assert_non_null (cps);
  size_t n = 0;
  const unsigned char *p = (const unsigned char *) s;
  for (size_t i = 0; i < len;)
    {
      unsigned char b = p[i];
      size_t k = b < 0x80 ? 1 : b < 0xe0 ? 2 : b < 0xf0 ? 3 : 4;
      uint32_t c = k == 1 ? b : k == 2 ? b & 0x1fu : k == 3 ? b & 0x0fu
                                                           : b & 0x07u;
      assert_true (i + k <= len);
      for (size_t j = 1; j < k; j++)
        {
          assert_int_equal (p[i + j] & 0xc0, 0x80);
          c = (c << 6) | (p[i + j] & 0x3fu);
        }
      cps[n++] = c;
      i += k;
    }
  *out = cps;
  return n;
}

static char *
put_cp (char *p, uint32_t c)
{
  if (c < 0x80)
    *p++ = (char) c;
  else if (c < 0x800)
    {
      *p++ = (char) (0xc0 | (c >> 6));
      *p++ = (char) (0x80 | (c & 0x3f));
    }
  else if (c < 0x10000)
    {
      *p++ = (char) (0xe0 | (c >> 12));
      *p++ = (char) (0x80 | ((c >> 6) & 0x3f));
      *p++ = (char) (0x80 | (c & 0x3f));
    }
  else
    {
      *p++ = (char) (0xf0 | (c >> 18));
      *p++ = (char) (0x80 | ((c >> 12) & 0x3f));
      *p++ = (char) (0x80 | ((c >> 6) & 0x3f));
      *p++ = (char) (0x80 | (c & 0x3f));
    }
  return p;
}

static void
grouped (char *buf, size_t v)
{
  char tmp[32];
  int n = snprintf (tmp, sizeof tmp, "%zu", v);
  char *p = buf;
  for (int i = 0; i < n; i++)
    {
      if (i && (n - i) % 3 == 0)
        *p++ = ',';
      *p++ = tmp[i];
    }
  *p = '\0';
}

/* What render() must return for these code points under this limit. */
static char *
expected_render (const uint32_t *cps, size_t n, size_t limit)
{
  char *out = malloc (4 * (n < limit ? n : limit) + 256);
  assert_non_null (out);
  char *p = out;
  if (n <= limit)
    {
      for (size_t i = 0; i < n; i++)
        p = put_cp (p, cps[i]);
      *p = '\0';
      return out;
    }
  size_t head = limit * 2 / 5;
  size_t tail = limit - head;
  char om[32], tot[32];
  grouped (om, n - limit);
  grouped (tot, n);
  for (size_t i = 0; i < head; i++)
    p = put_cp (p, cps[i]);
  p += sprintf (p, "\n\n... [OUTPUT TRUNCATED - %s chars omitted out of %s "
                "total] ...\n\n", om, tot);
  for (size_t i = n - tail; i < n; i++)
    p = put_cp (p, cps[i]);
  *p = '\0';
  return out;
}

/* Feed in chunks whose sizes come from the rng (1..max_chunk). */
static void
feed_random_chunks (struct output_window *w, const void *buf, size_t n,
                    size_t max_chunk)
{
  const char *p = buf;
  while (n)
    {
      size_t k = 1 + rng_below (max_chunk);
      if (k > n)
        k = n;
      int r = output_window_feed (w, p, k);
      assert_int_equal (r, 0);
      p += k;
      n -= k;
    }
}

static char *
render_all (size_t limit, const void *buf, size_t n, bool *trunc,
            size_t *total)
{
  struct output_window *w = output_window_new (limit);
  assert_non_null (w);
  assert_int_equal (output_window_feed (w, buf, n), 0);
  char *s = output_window_render (w, trunc, total);
  assert_non_null (s);
  assert_int_equal (output_window_total_bytes (w), n);
  output_window_free (w);
  return s;
}

/* Small outputs come back verbatim */

static void
test_small_verbatim (void **state)
{
  (void) state;
  static const char *const cases[] = {
    "", "x", "hello\nworld\n", "tab\tand\r\ncrlf",
    "h\xc3\xa9llo \xe2\x9c\x93 \xf0\x9f\x98\x80 \xe4\xb8\xad\xe6\x96\x87",
    "\x1b[31mred\x1b[0m\x7f",
  };
  static const size_t chars[] = { 0, 1, 12, 13, 12, 13 };
  for (size_t i = 0; i < N_ELEMENTS (cases); i++)
    {
      struct output_window *w
          = output_window_new (OUTPUT_WINDOW_DEFAULT_LIMIT);
      assert_non_null (w);
      assert_int_equal (output_window_feed (w, cases[i], strlen (cases[i])),
                        0);
      bool trunc = true;
      size_t total = 99;
      char *s = output_window_render (w, &trunc, &total);
      assert_string_equal (s, cases[i]);
      assert_false (trunc);
      assert_int_equal (total, chars[i]);
      free (s);
      output_window_free (w);
    }
}

/* limit fits; limit + 1 is truncated */

static void
test_exact_boundary (void **state)
{
  (void) state;
  bool trunc;
  size_t total;

  struct output_window *w = output_window_new (10);
  assert_int_equal (output_window_feed (w, "abcdefghij", 10), 0);
  char *s = output_window_render (w, &trunc, &total);
  assert_string_equal (s, "abcdefghij");
  assert_false (trunc);
  assert_int_equal (total, 10);
  free (s);
  output_window_free (w);

  w = output_window_new (10);
  assert_int_equal (output_window_feed (w, "abcdefghijk", 11), 0);
  s = output_window_render (w, &trunc, &total);
  assert_string_equal (s, "abcd\n\n... [OUTPUT TRUNCATED - 1 chars omitted "
                          "out of 11 total] ...\n\nfghijk");
  assert_true (trunc);
  assert_int_equal (total, 11);
  free (s);
  output_window_free (w);

  /* Characters, not bytes: ten 2-byte characters fit a limit of 10. */
  const char *ten = "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
                    "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9";
  s = render_all (10, ten, 20, &trunc, &total);
  assert_string_equal (s, ten);
  assert_false (trunc);
  assert_int_equal (total, 10);
  free (s);

  const char *eleven = "\xf0\x9f\x98\x80\xf0\x9f\x98\x81\xf0\x9f\x98\x82"
                       "\xf0\x9f\x98\x83\xf0\x9f\x98\x84\xf0\x9f\x98\x85"
                       "\xf0\x9f\x98\x86\xf0\x9f\x98\x87\xf0\x9f\x98\x88"
                       "\xf0\x9f\x98\x89\xf0\x9f\x98\x8a";
  s = render_all (10, eleven, 44, &trunc, &total);
  assert_string_equal (s, "\xf0\x9f\x98\x80\xf0\x9f\x98\x81\xf0\x9f\x98\x82"
                          "\xf0\x9f\x98\x83"
                          "\n\n... [OUTPUT TRUNCATED - 1 chars omitted out "
                          "of 11 total] ...\n\n"
                          "\xf0\x9f\x98\x85\xf0\x9f\x98\x86\xf0\x9f\x98\x87"
                          "\xf0\x9f\x98\x88\xf0\x9f\x98\x89\xf0\x9f\x98\x8a");
  assert_true (trunc);
  assert_int_equal (total, 11);
  free (s);
}

/* 40 / 60 split */

/* n numbered code points mixing 1- to 4-byte encodings. */
static uint32_t *
numbered_cps (size_t n)
{
  static const uint32_t extra[] = { 0xe9, 0x20ac, 0x1f600, 0x4e2d, 0x10ffff };
  uint32_t *cps = malloc ((n ? n : 1) * sizeof *cps);
  assert_non_null (cps);
  for (size_t i = 0; i < n; i++)
    cps[i] = i % 7 == 6 ? extra[i / 7 % N_ELEMENTS (extra)]
                        : (uint32_t) ('a' + i % 26);
  return cps;
}

static char *
encode_cps (const uint32_t *cps, size_t n, size_t *len)
{
  char *s = malloc (4 * n + 1);
  assert_non_null (s);
  char *p = s;
  for (size_t i = 0; i < n; i++)
    p = put_cp (p, cps[i]);
  *p = '\0';
  *len = (size_t) (p - s);
  return s;
}

/* Count code points of valid UTF-8. */
static size_t
count_chars (const char *s, size_t len)
{
  size_t n = 0;
  for (size_t i = 0; i < len; i++)
    n += ((unsigned char) s[i] & 0xc0) != 0x80;
  return n;
}

static void
test_split_counts (void **state)
{
  (void) state;
  size_t n = 123456, len;
  uint32_t *cps = numbered_cps (n);
  char *in = encode_cps (cps, n, &len);
  bool trunc;
  size_t total;
  char *s = render_all (OUTPUT_WINDOW_DEFAULT_LIMIT, in, len, &trunc, &total);
  assert_true (trunc);
  assert_int_equal (total, n);

  const char *marker = "\n\n... [OUTPUT TRUNCATED - 73,456 chars omitted out "
                       "of 123,456 total] ...\n\n";
  char *m = strstr (s, marker);
  assert_non_null (m);
  assert_int_equal (count_chars (s, (size_t) (m - s)), 20000);
  const char *tail = m + strlen (marker);
  assert_int_equal (count_chars (tail, strlen (tail)), 30000);
  char *want = expected_render (cps, n, OUTPUT_WINDOW_DEFAULT_LIMIT);
  assert_string_equal (s, want);
  free (want);
  free (s);

  /* Odd limits: head is floor (0.4 * limit), the tail the rest. */
  static const size_t limits[][3] = {
    { 1, 0, 1 }, { 2, 0, 2 }, { 3, 1, 2 }, { 4, 1, 3 }, { 5, 2, 3 },
    { 7, 2, 5 }, { 10, 4, 6 }, { 11, 4, 7 }, { 99, 39, 60 },
    { 1001, 400, 601 },
  };
  for (size_t i = 0; i < N_ELEMENTS (limits); i++)
    {
      size_t limit = limits[i][0];
      s = render_all (limit, in, len, &trunc, &total);
      assert_true (trunc);
      m = strstr (s, "\n\n... [OUTPUT TRUNCATED - ");
      assert_non_null (m);
      assert_int_equal (count_chars (s, (size_t) (m - s)), limits[i][1]);
      tail = strstr (m, "] ...\n\n") + 7;
      assert_int_equal (count_chars (tail, strlen (tail)), limits[i][2]);
      want = expected_render (cps, n, limit);
      assert_string_equal (s, want);
      free (want);
      free (s);
    }
  free (in);
  free (cps);
}

/* Marker text and numbers */

static void
test_marker_numbers (void **state)
{
  (void) state;
  static const struct
  {
    size_t limit, n;
    const char *marker;
  } cases[] = {
    { 0, 1, "1 chars omitted out of 1 total" },
    { 0, 999, "999 chars omitted out of 999 total" },
    { 0, 1000, "1,000 chars omitted out of 1,000 total" },
    { 5, 1005, "1,000 chars omitted out of 1,005 total" },
    { 10, 1234567, "1,234,557 chars omitted out of 1,234,567 total" },
    { 1000, 1001000, "1,000,000 chars omitted out of 1,001,000 total" },
  };
  for (size_t i = 0; i < N_ELEMENTS (cases); i++)
    {
      char *in = malloc (cases[i].n);
      assert_non_null (in);
      memset (in, 'x', cases[i].n);
      bool trunc;
      size_t total;
      char *s = render_all (cases[i].limit, in, cases[i].n, &trunc, &total);
      char want[200];
      snprintf (want, sizeof want,
                "\n\n... [OUTPUT TRUNCATED - %s] ...\n\n", cases[i].marker);
      assert_non_null (strstr (s, want));
      assert_true (trunc);
      assert_int_equal (total, cases[i].n);
      if (cases[i].limit == 0)
        assert_string_equal (s, want);  /* the marker alone */
      else
        assert_int_equal (strlen (s), strlen (want) + cases[i].limit);
      free (s);
      free (in);
    }
}

/* Multibyte characters cut at every chunk boundary */

static void
test_multibyte_every_split (void **state)
{
  (void) state;
  const char *in = "a\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80z\xf4\x8f\xbf\xbf"
                   "\xe4\xb8\xad\xc2\x80\xef\xbf\xbf";
  size_t len = strlen (in);
  uint32_t *cps;
  size_t n = decode_valid (in, len, &cps);
  assert_int_equal (n, 9);

  /* Every way of cutting it into three chunks, under a limit that fits
   * and under limits that truncate inside it. */
  static const size_t limits[] = { 100, 9, 8, 5, 3, 1, 0 };
  for (size_t li = 0; li < N_ELEMENTS (limits); li++)
    {
      char *want = expected_render (cps, n, limits[li]);
      for (size_t i = 0; i <= len; i++)
        for (size_t j = i; j <= len; j++)
          {
            struct output_window *w = output_window_new (limits[li]);
            assert_int_equal (output_window_feed (w, in, i), 0);
            assert_int_equal (output_window_feed (w, in + i, j - i), 0);
            assert_int_equal (output_window_feed (w, in + j, len - j), 0);
            size_t total;
            char *s = output_window_render (w, NULL, &total);
            assert_string_equal (s, want);
            assert_int_equal (total, n);
            free (s);
            output_window_free (w);
          }
      /* and one byte at a time */
      struct output_window *w = output_window_new (limits[li]);
      for (size_t i = 0; i < len; i++)
        assert_int_equal (output_window_feed (w, in + i, 1), 0);
      char *s = output_window_render (w, NULL, NULL);
      assert_string_equal (s, want);
      free (s);
      output_window_free (w);
      free (want);
    }
  free (cps);
}

/* Invalid UTF-8, class by class */

/* A string literal and its length, NULs included. */
#define B(s) s, sizeof (s) - 1

static const struct
{
  const char *what;
  const char *in;
  size_t len;
  const char *want;
} invalid_cases[] = {
  { "overlong 2-byte '/'", B ("\xc0\xaf"), FFFD FFFD },
  { "overlong 2-byte C1", B ("\xc1\xbf"), FFFD FFFD },
  { "overlong 3-byte '/'", B ("\xe0\x80\xaf"), FFFD FFFD FFFD },
  { "overlong 3-byte U+07FF", B ("\xe0\x9f\xbf"), FFFD FFFD FFFD },
  { "overlong 4-byte '/'", B ("\xf0\x80\x80\xaf"), FFFD FFFD FFFD FFFD },
  { "overlong 4-byte U+FFFF", B ("\xf0\x8f\xbf\xbf"),
    FFFD FFFD FFFD FFFD },
  { "high surrogate", B ("\xed\xa0\x80"), FFFD FFFD FFFD },
  { "low surrogate", B ("\xed\xbf\xbf"), FFFD FFFD FFFD },
  { "surrogate pair (CESU-8)", B ("\xed\xa0\xbd\xed\xb8\x80"),
    FFFD FFFD FFFD FFFD FFFD FFFD },
  { "U+110000", B ("\xf4\x90\x80\x80"), FFFD FFFD FFFD FFFD },
  { "F5 lead", B ("\xf5\x80\x80\x80"), FFFD FFFD FFFD FFFD },
  { "5-byte form", B ("\xf8\x88\x80\x80\x80"), FFFD FFFD FFFD FFFD FFFD },
  { "FE FF", B ("\xfe\xff"), FFFD FFFD },
  { "stray continuation", B ("a\x80" "b"), "a" FFFD "b" },
  { "stray continuations", B ("\x80\xbf\x8f"), FFFD FFFD FFFD },
  { "2-byte cut by ASCII", B ("\xc3" "a"), FFFD "a" },
  { "3-byte cut after 2", B ("\xe2\x82" "a"), FFFD "a" },
  { "4-byte cut after 3", B ("\xf0\x9f\x98" "x"), FFFD "x" },
  { "4-byte cut by a lead", B ("\xf0\x9f\xc3\xa9"), FFFD "\xc3\xa9" },
  { "cut at end (2)", B ("ok\xc3"), "ok" FFFD },
  { "cut at end (3)", B ("ok\xe2\x82"), "ok" FFFD },
  { "cut at end (4)", B ("ok\xf0\x9f\x98"), "ok" FFFD },
  { "lead alone at end", B ("\xf4"), FFFD },
  { "NUL", B ("a\0b"), "a" FFFD "b" },
  { "NULs", B ("\0\0"), FFFD FFFD },
  { "valid edges", B ("\xc2\x80\xdf\xbf\xe0\xa0\x80\xed\x9f\xbf\xee\x80\x80"
    "\xf0\x90\x80\x80\xf4\x8f\xbf\xbf"),
    "\xc2\x80\xdf\xbf\xe0\xa0\x80\xed\x9f\xbf\xee\x80\x80"
    "\xf0\x90\x80\x80\xf4\x8f\xbf\xbf" },
  { "U+FFFD itself passes", B (FFFD), FFFD },
};

static void
test_invalid_classes (void **state)
{
  (void) state;
  for (size_t i = 0; i < N_ELEMENTS (invalid_cases); i++)
    {
      const char *in = invalid_cases[i].in;
      size_t len = invalid_cases[i].len;
      const char *want = invalid_cases[i].want;
      print_message ("# %s\n", invalid_cases[i].what);

      char *s;
      size_t slen = output_window_sanitize_utf8 (in, len, &s);
      assert_non_null (s);
      assert_string_equal (s, want);
      assert_int_equal (slen, strlen (want));
      free (s);

      size_t total;
      s = render_all (1000, in, len, NULL, &total);
      assert_string_equal (s, want);
      assert_int_equal (total, count_chars (want, strlen (want)));
      free (s);

      struct output_window *w = output_window_new (1000);
      for (size_t j = 0; j < len; j++)
        assert_int_equal (output_window_feed (w, in + j, 1), 0);
      s = output_window_render (w, NULL, NULL);
      assert_string_equal (s, want);
      free (s);
      output_window_free (w);
    }
}

/* Random bytes, random chunking, random limits */

/* Bytes biased towards the ones that matter to a UTF-8 decoder. */
static void
nasty_bytes (unsigned char *buf, size_t n)
{
  static const unsigned char pick[] = {
    0x00, 'a', '\n', 0x7f, 0x80, 0x8f, 0x90, 0x9f, 0xa0, 0xbf, 0xc0, 0xc1,
    0xc2, 0xdf, 0xe0, 0xe1, 0xed, 0xef, 0xf0, 0xf1, 0xf4, 0xf5, 0xff,
  };
  for (size_t i = 0; i < n; i++)
    buf[i] = rng () % 4 ? pick[rng_below (sizeof pick)]
                        : (unsigned char) rng ();
}

static void
test_random_chunking (void **state)
{
  (void) state;
  for (int round = 0; round < 300; round++)
    {
      size_t n = rng_below (3000);
      unsigned char *in = malloc (n + 1);
      assert_non_null (in);
      nasty_bytes (in, n);
      size_t limit = round % 3 ? rng_below (64) : rng_below (5000);

      char *clean;
      size_t clen = output_window_sanitize_utf8 (in, n, &clean);
      assert_non_null (clean);
      assert_int_equal (strlen (clean), clen);
      uint32_t *cps;
      size_t nc = decode_valid (clean, clen, &cps);
      char *want = expected_render (cps, nc, limit);

      struct output_window *w = output_window_new (limit);
      feed_random_chunks (w, in, n, 1 + rng_below (16));
      bool trunc;
      size_t total;
      char *s = output_window_render (w, &trunc, &total);
      assert_string_equal (s, want);
      assert_int_equal (total, nc);
      assert_true (trunc == (nc > limit));
      assert_int_equal (output_window_total_bytes (w), n);
      free (s);
      output_window_free (w);
      free (want);
      free (cps);
      free (clean);
      free (in);
    }
}

/* 10 MB: bounded memory */

static unsigned char *
big_input (size_t n)
{
  unsigned char *in = malloc (n);
  assert_non_null (in);
  size_t i = 0;
  while (i < n)
    {
      /* Mostly log-like text, some multibyte text, some binary garbage. */
      size_t k = 1 + rng_below (200);
      if (k > n - i)
        k = n - i;
      switch (rng () % 4)
        {
        case 0:
          nasty_bytes (in + i, k);
          break;
        case 1:
          for (size_t j = 0; j < k; j++)
            in[i + j] = "\xe2\x82\xac\xf0\x9f\x98\x80\xc3\xa9"[j % 9];
          break;
        default:
          for (size_t j = 0; j < k; j++)
            in[i + j] = j + 1 == k ? '\n' : (unsigned char) (' ' + rng () % 95);
        }
      i += k;
    }
  return in;
}

static void
test_10mb_memory (void **state)
{
  (void) state;
  const size_t n = 10 * MB, limit = OUTPUT_WINDOW_DEFAULT_LIMIT;
  unsigned char *in = big_input (n);
  struct output_window *w = output_window_new (limit);
  assert_non_null (w);

  size_t fed = 0, mem_at_1mb = 0, peak = 0;
  while (fed < n)
    {
      /* Sizes from 1 byte to 64 KiB, the odd one very small. */
      size_t k = rng () % 8 ? 1 + rng_below (65536) : 1 + rng_below (8);
      if (k > n - fed)
        k = n - fed;
      assert_int_equal (output_window_feed (w, in + fed, k), 0);
      fed += k;
      size_t mem = output_window_memory (w);
      if (mem > peak)
        peak = mem;
      if (!mem_at_1mb && fed >= MB)
        mem_at_1mb = mem;
    }
  print_message ("# peak window memory: %zu bytes for a %zu-byte stream\n",
                 peak, n);
  assert_true (peak <= memory_bound (limit));
  /* The same after 1 MB as after 10 MB: independent of the stream size. */
  assert_int_equal (output_window_memory (w), mem_at_1mb);
  assert_int_equal (output_window_total_bytes (w), n);

  bool trunc;
  size_t total;
  char *s = output_window_render (w, &trunc, &total);
  assert_true (trunc);

  char *clean;
  size_t clen = output_window_sanitize_utf8 (in, n, &clean);
  uint32_t *cps;
  size_t nc = decode_valid (clean, clen, &cps);
  assert_int_equal (total, nc);
  char *want = expected_render (cps, nc, limit);
  assert_string_equal (s, want);

  free (want);
  free (cps);
  free (clean);
  free (s);
  output_window_free (w);
  free (in);
}

/* One huge chunk overflowing in its middle, on a small window */

static void
test_large_single_chunk (void **state)
{
  (void) state;
  const size_t n = 3 * MB, limit = 100;
  unsigned char *in = big_input (n);
  struct output_window *w = output_window_new (limit);
  assert_int_equal (output_window_feed (w, in, 50), 0);
  assert_int_equal (output_window_feed (w, in + 50, n - 50), 0);
  assert_true (output_window_memory (w) <= memory_bound (limit));
  bool trunc;
  size_t total;
  char *s = output_window_render (w, &trunc, &total);
  assert_true (trunc);

  char *clean;
  size_t clen = output_window_sanitize_utf8 (in, n, &clean);
  uint32_t *cps;
  size_t nc = decode_valid (clean, clen, &cps);
  assert_int_equal (total, nc);
  char *want = expected_render (cps, nc, limit);
  assert_string_equal (s, want);

  free (want);
  free (cps);
  free (clean);
  free (s);
  output_window_free (w);
  free (in);
}

/* The U+FFFD flushed at the end may be the character that overflows. */

static void
test_overflow_at_flush (void **state)
{
  (void) state;
  struct output_window *w = output_window_new (3);
  assert_int_equal (output_window_feed (w, "abc\xe2\x82", 5), 0);
  bool trunc;
  size_t total;
  char *s = output_window_render (w, &trunc, &total);
  assert_string_equal (s, "a\n\n... [OUTPUT TRUNCATED - 1 chars omitted out "
                          "of 4 total] ...\n\nc" FFFD);
  assert_true (trunc);
  assert_int_equal (total, 4);
  free (s);
  output_window_free (w);
}

/* Binary input */

static void
test_binary_input (void **state)
{
  (void) state;
  unsigned char all[256];
  for (int i = 0; i < 256; i++)
    all[i] = (unsigned char) i;
  bool trunc;
  size_t total;
  char *s = render_all (1000, all, sizeof all, &trunc, &total);
  /* NUL and every byte >= 0x80 (each followed by a byte that cannot
   * continue it) become one U+FFFD each; the rest is itself. */
  char want[1000], *p = want;
  p += sprintf (p, FFFD);
  for (int i = 1; i < 128; i++)
    *p++ = (char) i;
  for (int i = 128; i < 256; i++)
    p += sprintf (p, FFFD);
  *p = '\0';
  assert_string_equal (s, want);
  assert_int_equal (total, 256);
  assert_false (trunc);
  free (s);

  /* Something shaped like an executable, truncated: still a clean
   * C string of valid UTF-8 with exactly limit characters besides the
   * marker. */
  size_t n = 200000;
  unsigned char *bin = malloc (n);
  assert_non_null (bin);
  for (size_t i = 0; i < n; i++)
    bin[i] = (unsigned char) (i % 3 ? rng () : 0);
  memcpy (bin, "\x7f" "ELF\x02\x01\x01", 7);
  s = render_all (777, bin, n, &trunc, &total);
  assert_true (trunc);
  char *clean;
  size_t len = strlen (s);
  size_t clen = output_window_sanitize_utf8 (s, len, &clean);
  assert_int_equal (clen, len);
  assert_string_equal (clean, s);       /* already valid, no NUL inside */
  char *m = strstr (s, "\n\n... [OUTPUT TRUNCATED - ");
  assert_non_null (m);
  const char *tail = strstr (m, "] ...\n\n") + 7;
  assert_int_equal (count_chars (s, (size_t) (m - s))
                        + count_chars (tail, strlen (tail)),
                    777);
  free (clean);
  free (s);
  free (bin);
}

/* Render twice; feed after render */

static void
test_render_is_final (void **state)
{
  (void) state;
  struct output_window *w = output_window_new (4);
  assert_int_equal (output_window_feed (w, "abcdef\xc3", 7), 0);
  bool t1, t2;
  size_t n1, n2;
  char *a = output_window_render (w, &t1, &n1);
  assert_int_equal (output_window_feed (w, "\xa9", 1), -EINVAL);
  char *b = output_window_render (w, &t2, &n2);
  assert_string_equal (a, b);
  assert_true (a != b);
  assert_true (t1 && t2);
  assert_int_equal (n1, 7);
  assert_int_equal (n2, 7);
  assert_int_equal (output_window_total_bytes (w), 7);
  assert_string_equal (a, "a\n\n... [OUTPUT TRUNCATED - 3 chars omitted out "
                          "of 7 total] ...\n\nef" FFFD);
  free (a);
  free (b);
  output_window_free (w);
  output_window_free (NULL);
}

/* "Keep everything" */

static void
test_unbounded_limit (void **state)
{
  (void) state;
  size_t len;
  uint32_t *cps = numbered_cps (100000);
  char *in = encode_cps (cps, 100000, &len);
  struct output_window *w = output_window_new (SIZE_MAX);
  feed_random_chunks (w, in, len, 5000);
  bool trunc;
  size_t total;
  char *s = output_window_render (w, &trunc, &total);
  assert_string_equal (s, in);
  assert_false (trunc);
  assert_int_equal (total, 100000);
  free (s);
  output_window_free (w);
  free (in);
  free (cps);
}

/* sanitize_utf8 on its own */

static void
test_sanitize_helper (void **state)
{
  (void) state;
  char *s;
  assert_int_equal (output_window_sanitize_utf8 ("", 0, &s), 0);
  assert_non_null (s);
  assert_string_equal (s, "");
  free (s);
  assert_int_equal (output_window_sanitize_utf8 (NULL, 0, &s), 0);
  assert_string_equal (s, "");
  free (s);
  assert_int_equal (output_window_sanitize_utf8 ("a\0b", 3, &s), 5);
  assert_string_equal (s, "a" FFFD "b");
  free (s);
  /* Worst case growth: every byte to three. */
  assert_int_equal (output_window_sanitize_utf8 ("\xff\xfe\x80", 3, &s), 9);
  assert_string_equal (s, FFFD FFFD FFFD);
  free (s);
}

int
main (void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test (test_small_verbatim),
    cmocka_unit_test (test_exact_boundary),
    cmocka_unit_test (test_split_counts),
    cmocka_unit_test (test_marker_numbers),
    cmocka_unit_test (test_multibyte_every_split),
    cmocka_unit_test (test_invalid_classes),
    cmocka_unit_test (test_random_chunking),
    cmocka_unit_test (test_10mb_memory),
    cmocka_unit_test (test_large_single_chunk),
    cmocka_unit_test (test_overflow_at_flush),
    cmocka_unit_test (test_binary_input),
    cmocka_unit_test (test_render_is_final),
    cmocka_unit_test (test_unbounded_limit),
    cmocka_unit_test (test_sanitize_helper),
  };
  return cmocka_run_group_tests_name ("output_window", tests, NULL, NULL);
}
