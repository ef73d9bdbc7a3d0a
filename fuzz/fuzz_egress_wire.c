/* SPDX-License-Identifier: MIT */
/* libFuzzer harness for the parsers airlock-egress runs on what a
 * sandbox sends (backends/egress_wire.c): every input goes to all three.
 *
 * Beyond "no crash, no sanitizer report", every input checks:
 *   - a name that is reported is non-empty, lower case, within the cap
 *     and only of [a-z0-9.-] (DNS: [a-z0-9_-] labels, 253 bytes at most);
 *   - an answer other than MORE on a prefix of the input is final: the
 *     whole input gives the same answer and the same name (MORE means
 *     "valid so far", so more bytes can never turn a verdict);
 *   - a parsed DNS query's reply is exactly as long as the question plus
 *     header (and answer), echoes the id and the question bytes, and is
 *     refused, not cut, when the buffer is one byte short.
 *
 * Build: clang -g -O1 -fsanitize=fuzzer,address,undefined -Ibackends \
 *          fuzz/fuzz_egress_wire.c backends/egress_wire.c */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "egress_wire.h"

#define CHECK(cond)                                                            \
  do                                                                           \
    {                                                                          \
      if (!(cond))                                                             \
        {                                                                      \
          fprintf (stderr, "fuzz_egress_wire: invariant failed: %s (%s:%d)\n",\
                   #cond, __FILE__, __LINE__);                                 \
          abort ();                                                            \
        }                                                                      \
    }                                                                          \
  while (0)

static void
check_host (const char *name, size_t cap)
{
  size_t n = strnlen (name, cap);
  CHECK (n > 0 && n < cap && n <= 253);
  CHECK (strspn (name, "abcdefghijklmnopqrstuvwxyz0123456789.-") == n);
}

typedef enum peek_result (*peek_fn) (const uint8_t *, size_t, char *, size_t);

static void
check_peek (peek_fn peek, const uint8_t *data, size_t len)
{
  char whole[256], part[256];
  enum peek_result r = peek (data, len, whole, sizeof whole);
  CHECK (r == PEEK_FOUND || r == PEEK_MORE || r == PEEK_NONE
         || r == PEEK_INVALID);
  if (r == PEEK_FOUND)
    check_host (whole, sizeof whole);

  /* A cut chosen by the input's last byte. */
  size_t cut = len ? len * data[len - 1] / 256 : 0;
  enum peek_result rp = peek (data, cut, part, sizeof part);
  if (rp != PEEK_MORE)
    {
      CHECK (rp == r);
      if (rp == PEEK_FOUND)
        CHECK (strcmp (part, whole) == 0);
    }
  /* A small cap never yields a cut name. */
  char tiny[6];
  if (peek (data, len, tiny, sizeof tiny) == PEEK_FOUND)
    {
      check_host (tiny, sizeof tiny);
      CHECK (r == PEEK_FOUND && strcmp (tiny, whole) == 0);
    }
}

static void
check_dns (const uint8_t *data, size_t len)
{
  struct dns_query q;
  if (dns_parse_query (data, len, &q) != 0)
    return;
  size_t n = strnlen (q.name, sizeof q.name);
  CHECK (n < sizeof q.name && n <= 253);
  CHECK (strspn (q.name, "abcdefghijklmnopqrstuvwxyz0123456789.-_") == n);
  CHECK (q.question_len >= 5 && q.question_len <= len - 12);

  static const uint8_t addr[4] = { 198, 18, 0, 1 };
  uint8_t out[EGRESS_DNS_MAX + 16];
  for (unsigned rcode = 0; rcode <= 5; rcode++)
    {
      const uint8_t *a = rcode == 0 && (data[len - 1] & 1) ? addr : NULL;
      size_t want = 12 + q.question_len + (a ? 16 : 0);
      int got = dns_build_reply (data, &q, rcode, a, 300, out, sizeof out);
      CHECK (got >= 0 && (size_t) got == want);
      CHECK (out[0] == (q.id >> 8) && out[1] == (q.id & 0xff));
      CHECK ((out[2] & 0x80) && (out[3] & 0x0f) == rcode);
      CHECK (out[5] == 1 && out[7] == (a ? 1 : 0) && out[11] == 0);
      CHECK (memcmp (out + 12, data + 12, q.question_len) == 0);
      CHECK (dns_build_reply (data, &q, rcode, a, 300, out, want - 1) == -1);
    }
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t len)
{
  check_dns (data, len);
  check_peek (tls_peek_sni, data, len);
  check_peek (http_peek_host, data, len);
  return 0;
}
