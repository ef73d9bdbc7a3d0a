/* SPDX-License-Identifier: MIT */
/* Unit tests for the parsers airlock-egress runs on what a sandbox sends
 * (backends/egress_wire.c): DNS queries and replies, the TLS ClientHello's
 * server name, the HTTP Host.  The ClientHellos are real: captured from
 * `openssl s_client -connect 127.0.0.1:PORT -servername allowed.test`
 * (and `-noservername`) by a Python socket listener, OpenSSL 3.0. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "egress_wire.h"

static const uint8_t client_hello_sni[] = {
  0x16, 0x03, 0x01, 0x01, 0x39, 0x01, 0x00, 0x01, 0x35, 0x03, 0x03, 0xc9,
  0x72, 0xa5, 0xd5, 0x11, 0x9d, 0xeb, 0x1b, 0x8f, 0x0f, 0xed, 0xb8, 0xe4,
  0x1e, 0x48, 0xb4, 0xfc, 0x8e, 0xb2, 0xa0, 0x73, 0x3e, 0xed, 0xf4, 0x6e,
  0x1b, 0xe0, 0x32, 0xed, 0x00, 0xed, 0xfe, 0x20, 0x57, 0x06, 0x52, 0x83,
  0xaf, 0x63, 0x53, 0xa9, 0x2c, 0xfd, 0xeb, 0x05, 0x00, 0x52, 0x6b, 0xbc,
  0xdd, 0x4d, 0x45, 0xb3, 0x1c, 0xe8, 0xd1, 0x1e, 0xd1, 0xcb, 0xc3, 0x8f,
  0xec, 0x0c, 0xd7, 0xaf, 0x00, 0x3e, 0x13, 0x02, 0x13, 0x03, 0x13, 0x01,
  0xc0, 0x2c, 0xc0, 0x30, 0x00, 0x9f, 0xcc, 0xa9, 0xcc, 0xa8, 0xcc, 0xaa,
  0xc0, 0x2b, 0xc0, 0x2f, 0x00, 0x9e, 0xc0, 0x24, 0xc0, 0x28, 0x00, 0x6b,
  0xc0, 0x23, 0xc0, 0x27, 0x00, 0x67, 0xc0, 0x0a, 0xc0, 0x14, 0x00, 0x39,
  0xc0, 0x09, 0xc0, 0x13, 0x00, 0x33, 0x00, 0x9d, 0x00, 0x9c, 0x00, 0x3d,
  0x00, 0x3c, 0x00, 0x35, 0x00, 0x2f, 0x00, 0xff, 0x01, 0x00, 0x00, 0xae,
  0x00, 0x00, 0x00, 0x11, 0x00, 0x0f, 0x00, 0x00, 0x0c, 0x61, 0x6c, 0x6c,
  0x6f, 0x77, 0x65, 0x64, 0x2e, 0x74, 0x65, 0x73, 0x74, 0x00, 0x0b, 0x00,
  0x04, 0x03, 0x00, 0x01, 0x02, 0x00, 0x0a, 0x00, 0x16, 0x00, 0x14, 0x00,
  0x1d, 0x00, 0x17, 0x00, 0x1e, 0x00, 0x19, 0x00, 0x18, 0x01, 0x00, 0x01,
  0x01, 0x01, 0x02, 0x01, 0x03, 0x01, 0x04, 0x00, 0x23, 0x00, 0x00, 0x00,
  0x16, 0x00, 0x00, 0x00, 0x17, 0x00, 0x00, 0x00, 0x0d, 0x00, 0x2a, 0x00,
  0x28, 0x04, 0x03, 0x05, 0x03, 0x06, 0x03, 0x08, 0x07, 0x08, 0x08, 0x08,
  0x09, 0x08, 0x0a, 0x08, 0x0b, 0x08, 0x04, 0x08, 0x05, 0x08, 0x06, 0x04,
  0x01, 0x05, 0x01, 0x06, 0x01, 0x03, 0x03, 0x03, 0x01, 0x03, 0x02, 0x04,
  0x02, 0x05, 0x02, 0x06, 0x02, 0x00, 0x2b, 0x00, 0x09, 0x08, 0x03, 0x04,
  0x03, 0x03, 0x03, 0x02, 0x03, 0x01, 0x00, 0x2d, 0x00, 0x02, 0x01, 0x01,
  0x00, 0x33, 0x00, 0x26, 0x00, 0x24, 0x00, 0x1d, 0x00, 0x20, 0x8c, 0x05,
  0x4d, 0x0c, 0x82, 0x9e, 0x78, 0x7c, 0x6c, 0x97, 0x0d, 0x3c, 0xcb, 0x45,
  0xc5, 0x64, 0x04, 0x16, 0xf7, 0x55, 0x01, 0x56, 0xc4, 0x30, 0xd9, 0x29,
  0xc0, 0xd0, 0xaa, 0x7f, 0x9b, 0x0c,
};

static const uint8_t client_hello_no_sni[] = {
  0x16, 0x03, 0x01, 0x01, 0x24, 0x01, 0x00, 0x01, 0x20, 0x03, 0x03, 0x53,
  0x3b, 0xdb, 0xb9, 0xe8, 0x44, 0x9e, 0xf9, 0x54, 0x04, 0x22, 0x05, 0x14,
  0xa5, 0x73, 0x76, 0x61, 0xaa, 0x45, 0xe5, 0xe7, 0x84, 0x03, 0x57, 0x18,
  0x74, 0x69, 0x28, 0xcd, 0x96, 0x7f, 0x28, 0x20, 0x88, 0xeb, 0xdc, 0xbb,
  0x4b, 0xcd, 0x93, 0x9f, 0x9f, 0xd3, 0xbd, 0xfd, 0x4f, 0x45, 0x98, 0x62,
  0xc3, 0xc7, 0x0e, 0x2c, 0x02, 0x50, 0x5a, 0x62, 0xc7, 0xcf, 0x56, 0x96,
  0x1b, 0x4c, 0x28, 0xc5, 0x00, 0x3e, 0x13, 0x02, 0x13, 0x03, 0x13, 0x01,
  0xc0, 0x2c, 0xc0, 0x30, 0x00, 0x9f, 0xcc, 0xa9, 0xcc, 0xa8, 0xcc, 0xaa,
  0xc0, 0x2b, 0xc0, 0x2f, 0x00, 0x9e, 0xc0, 0x24, 0xc0, 0x28, 0x00, 0x6b,
  0xc0, 0x23, 0xc0, 0x27, 0x00, 0x67, 0xc0, 0x0a, 0xc0, 0x14, 0x00, 0x39,
  0xc0, 0x09, 0xc0, 0x13, 0x00, 0x33, 0x00, 0x9d, 0x00, 0x9c, 0x00, 0x3d,
  0x00, 0x3c, 0x00, 0x35, 0x00, 0x2f, 0x00, 0xff, 0x01, 0x00, 0x00, 0x99,
  0x00, 0x0b, 0x00, 0x04, 0x03, 0x00, 0x01, 0x02, 0x00, 0x0a, 0x00, 0x16,
  0x00, 0x14, 0x00, 0x1d, 0x00, 0x17, 0x00, 0x1e, 0x00, 0x19, 0x00, 0x18,
  0x01, 0x00, 0x01, 0x01, 0x01, 0x02, 0x01, 0x03, 0x01, 0x04, 0x00, 0x23,
  0x00, 0x00, 0x00, 0x16, 0x00, 0x00, 0x00, 0x17, 0x00, 0x00, 0x00, 0x0d,
  0x00, 0x2a, 0x00, 0x28, 0x04, 0x03, 0x05, 0x03, 0x06, 0x03, 0x08, 0x07,
  0x08, 0x08, 0x08, 0x09, 0x08, 0x0a, 0x08, 0x0b, 0x08, 0x04, 0x08, 0x05,
  0x08, 0x06, 0x04, 0x01, 0x05, 0x01, 0x06, 0x01, 0x03, 0x03, 0x03, 0x01,
  0x03, 0x02, 0x04, 0x02, 0x05, 0x02, 0x06, 0x02, 0x00, 0x2b, 0x00, 0x09,
  0x08, 0x03, 0x04, 0x03, 0x03, 0x03, 0x02, 0x03, 0x01, 0x00, 0x2d, 0x00,
  0x02, 0x01, 0x01, 0x00, 0x33, 0x00, 0x26, 0x00, 0x24, 0x00, 0x1d, 0x00,
  0x20, 0xe9, 0x12, 0x8b, 0x7a, 0x4a, 0xcc, 0x55, 0x7e, 0x7f, 0x2f, 0x33,
  0xde, 0xb7, 0xb0, 0xbd, 0xa4, 0xae, 0xc6, 0x7e, 0x50, 0xe9, 0x7a, 0x3a,
  0x26, 0x3e, 0x6a, 0x4e, 0x9a, 0xd9, 0x9f, 0xc1, 0x4c,
};

/* ---- DNS ---- */

/* A query as a stub resolver sends it: id 0x1234, RD, one question. */
static size_t
make_query (uint8_t *out, const char *name, uint16_t qtype)
{
  static const uint8_t header[12] = { 0x12, 0x34, 0x01, 0x00, 0, 1, 0, 0,
                                      0, 0, 0, 0 };
  memcpy (out, header, sizeof header);
  size_t n = sizeof header;
  while (*name)
    {
      size_t label = strcspn (name, ".");
      out[n++] = (uint8_t) label;
      memcpy (out + n, name, label);
      n += label;
      name += label;
      if (*name == '.')
        name++;
    }
  out[n++] = 0;
  out[n++] = (uint8_t) (qtype >> 8);
  out[n++] = (uint8_t) qtype;
  out[n++] = 0;
  out[n++] = 1;
  return n;
}

/* What glibc's resolver or dig sends with EDNS: AD set, an OPT record
 * with a 4096-byte payload and a client cookie. */
static const uint8_t query_edns[] = {
  0x9d, 0x41, 0x01, 0x20, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01,
  0x07, 'A', 'l', 'l', 'o', 'w', 'e', 'd', 0x04, 't', 'e', 's', 't', 0x00,
  0x00, 0x1c, 0x00, 0x01,
  0x00, 0x00, 0x29, 0x10, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x0c,
  0x00, 0x0a, 0x00, 0x08, 0x5a, 0x1f, 0x03, 0x77, 0xc2, 0x10, 0x9e, 0x44,
};

static void
test_dns_parse (void **state)
{
  (void) state;
  uint8_t msg[EGRESS_DNS_MAX];
  struct dns_query q;
  size_t n = make_query (msg, "allowed.test", 1);
  assert_int_equal (dns_parse_query (msg, n, &q), 0);
  assert_int_equal (q.id, 0x1234);
  assert_int_equal (q.qtype, 1);
  assert_int_equal (q.qclass, 1);
  assert_string_equal (q.name, "allowed.test");
  assert_int_equal (q.question_len, n - 12);
  assert_int_equal (q.flags, 0x0100);

  assert_int_equal (dns_parse_query (query_edns, sizeof query_edns, &q), 0);
  assert_int_equal (q.id, 0x9d41);
  assert_int_equal (q.qtype, 28);
  assert_string_equal (q.name, "allowed.test"); /* lower-cased */
  assert_int_equal (q.question_len, 18);

  /* The root: an empty name. */
  n = make_query (msg, "", 2);
  assert_int_equal (dns_parse_query (msg, n, &q), 0);
  assert_string_equal (q.name, "");

  /* 253 bytes of text is the most a name holds; 255 is refused. */
  char name[300];
  memset (name, 'a', sizeof name);
  for (size_t i = 63; i < sizeof name; i += 64)
    name[i] = '.';
  name[253] = '\0';
  n = make_query (msg, name, 1);
  assert_int_equal (dns_parse_query (msg, n, &q), 0);
  assert_string_equal (q.name, name);
  name[253] = 'a';
  name[255] = '\0';
  n = make_query (msg, name, 1);
  assert_int_equal (dns_parse_query (msg, n, &q), -1);
}

static void
test_dns_malformed (void **state)
{
  (void) state;
  uint8_t msg[EGRESS_DNS_MAX + 16];
  struct dns_query q;
  size_t n = make_query (msg, "allowed.test", 1);
  for (size_t cut = 0; cut < n; cut++)
    assert_int_equal (dns_parse_query (msg, cut, &q), -1);
  for (size_t cut = 0; cut < 30; cut++)
    assert_int_equal (dns_parse_query (query_edns, cut, &q), -1);

  uint8_t bad[EGRESS_DNS_MAX];
  memcpy (bad, msg, n);
  bad[2] |= 0x80; /* QR: a reply */
  assert_int_equal (dns_parse_query (bad, n, &q), -1);
  memcpy (bad, msg, n);
  bad[2] |= 0x10; /* OPCODE 2: status */
  assert_int_equal (dns_parse_query (bad, n, &q), -1);
  memcpy (bad, msg, n);
  bad[5] = 2; /* QDCOUNT 2 */
  assert_int_equal (dns_parse_query (bad, n, &q), -1);
  memcpy (bad, msg, n);
  bad[7] = 1; /* an answer in a query */
  assert_int_equal (dns_parse_query (bad, n, &q), -1);
  memcpy (bad, msg, n);
  bad[9] = 1; /* an authority record */
  assert_int_equal (dns_parse_query (bad, n, &q), -1);

  /* A compression pointer in the name, to itself and forward. */
  memcpy (bad, msg, 12);
  static const uint8_t ptr[] = { 0xc0, 0x0c, 0, 1, 0, 1 };
  memcpy (bad + 12, ptr, sizeof ptr);
  assert_int_equal (dns_parse_query (bad, 12 + sizeof ptr, &q), -1);
  static const uint8_t half_ptr[] = { 3, 'w', 'w', 'w', 0xc0, 0x12, 0, 1, 0, 1 };
  memcpy (bad + 12, half_ptr, sizeof half_ptr);
  assert_int_equal (dns_parse_query (bad, 12 + sizeof half_ptr, &q), -1);

  /* A 64-byte label; a dot or NUL inside a label. */
  char name[80];
  memset (name, 'a', 64);
  strcpy (name + 64, ".test");
  n = make_query (bad, name, 1);
  assert_int_equal (dns_parse_query (bad, n, &q), -1);
  n = make_query (bad, "allowed.test", 1);
  bad[12] = 12; /* one label "allowed.test" */
  memmove (bad + 20, bad + 21, n - 21);
  assert_int_equal (dns_parse_query (bad, n - 1, &q), -1);
  n = make_query (bad, "allo\001ed.test", 1);
  assert_int_equal (dns_parse_query (bad, n, &q), -1);

  /* Longer than classic UDP DNS. */
  memset (msg, 0, sizeof msg);
  n = make_query (msg, "allowed.test", 1);
  assert_int_equal (dns_parse_query (msg, EGRESS_DNS_MAX, &q), 0);
  assert_int_equal (dns_parse_query (msg, EGRESS_DNS_MAX + 1, &q), -1);
}

static void
test_dns_reply (void **state)
{
  (void) state;
  uint8_t msg[EGRESS_DNS_MAX], out[EGRESS_DNS_MAX];
  struct dns_query q;
  size_t n = make_query (msg, "allowed.test", 1);
  assert_int_equal (dns_parse_query (msg, n, &q), 0);
  static const uint8_t addr[4] = { 198, 18, 0, 5 };
  static const uint8_t expect_a[] = {
    0x12, 0x34, 0x85, 0x80, 0x00, 0x01, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00,
    0x07, 'a', 'l', 'l', 'o', 'w', 'e', 'd', 0x04, 't', 'e', 's', 't', 0x00,
    0x00, 0x01, 0x00, 0x01,
    0xc0, 0x0c, 0x00, 0x01, 0x00, 0x01, 0x00, 0x00, 0x00, 0x3c, 0x00, 0x04,
    198, 18, 0, 5,
  };
  int len = dns_build_reply (msg, &q, 0, addr, 60, out, sizeof out);
  assert_int_equal (len, sizeof expect_a);
  assert_memory_equal (out, expect_a, sizeof expect_a);
  /* One byte short of room: refused, not cut. */
  assert_int_equal (dns_build_reply (msg, &q, 0, addr, 60, out,
                                     sizeof expect_a - 1), -1);

  /* NXDOMAIN: no answer; the question still copied verbatim. */
  len = dns_build_reply (msg, &q, 3, NULL, 0, out, sizeof out);
  assert_int_equal (len, 30);
  static const uint8_t expect_nx[12] = { 0x12, 0x34, 0x85, 0x83, 0, 1, 0, 0,
                                         0, 0, 0, 0 };
  assert_memory_equal (out, expect_nx, 12);
  assert_memory_equal (out + 12, msg + 12, 18);
  /* An address with an error rcode is not an answer. */
  assert_int_equal (dns_build_reply (msg, &q, 5, addr, 60, out, sizeof out), 30);
  assert_int_equal (out[3], 0x85);
  assert_int_equal (out[7], 0);
  assert_int_equal (dns_build_reply (msg, &q, 16, NULL, 0, out, sizeof out), -1);

  /* The EDNS query: NODATA (no answer), RD clear, AD dropped, the case
   * of the name as it was asked, no OPT echoed (ARCOUNT 0). */
  assert_int_equal (dns_parse_query (query_edns, sizeof query_edns, &q), 0);
  len = dns_build_reply (query_edns, &q, 0, NULL, 0, out, sizeof out);
  assert_int_equal (len, 30);
  static const uint8_t expect_nodata[12] = { 0x9d, 0x41, 0x85, 0x80, 0, 1,
                                             0, 0, 0, 0, 0, 0 };
  assert_memory_equal (out, expect_nodata, 12);
  assert_memory_equal (out + 12, query_edns + 12, 18);
  msg[2] = 0; /* RD clear: not echoed */
  assert_int_equal (dns_parse_query (msg, n, &q), 0);
  assert_int_equal (dns_build_reply (msg, &q, 0, addr, 60, out, sizeof out), 46);
  assert_int_equal (out[2], 0x84);
}

/* ---- TLS ---- */

static void
test_tls_sni (void **state)
{
  (void) state;
  char name[256];
  assert_int_equal (tls_peek_sni (client_hello_sni, sizeof client_hello_sni,
                                  name, sizeof name), PEEK_FOUND);
  assert_string_equal (name, "allowed.test");
  assert_int_equal (tls_peek_sni (client_hello_no_sni,
                                  sizeof client_hello_no_sni, name,
                                  sizeof name), PEEK_NONE);
  /* Bytes after the ClientHello (early data, say) are not looked at. */
  uint8_t more[sizeof client_hello_sni + 8];
  memcpy (more, client_hello_sni, sizeof client_hello_sni);
  memset (more + sizeof client_hello_sni, 0x17, 8);
  assert_int_equal (tls_peek_sni (more, sizeof more, name, sizeof name),
                    PEEK_FOUND);
  assert_string_equal (name, "allowed.test");
  /* The name does not fit: invalid, never cut. */
  assert_int_equal (tls_peek_sni (client_hello_sni, sizeof client_hello_sni,
                                  name, 12), PEEK_INVALID);
}

static void
test_tls_prefixes (void **state)
{
  (void) state;
  char name[256];
  for (size_t cut = 0; cut < sizeof client_hello_sni; cut++)
    {
      strcpy (name, "stale");
      assert_int_equal (tls_peek_sni (client_hello_sni, cut, name,
                                      sizeof name), PEEK_MORE);
      assert_string_equal (name, "");
    }
  for (size_t cut = 0; cut < sizeof client_hello_no_sni; cut++)
    assert_int_equal (tls_peek_sni (client_hello_no_sni, cut, name,
                                    sizeof name), PEEK_MORE);
}

/* The ClientHello's handshake bytes split into two records at `at`. */
static size_t
split_records (uint8_t *out, size_t at)
{
  const uint8_t *hs = client_hello_sni + 5;
  size_t n = sizeof client_hello_sni - 5;
  uint8_t *p = out;
  size_t parts[2] = { at, n - at };
  for (int i = 0; i < 2; i++)
    {
      *p++ = 0x16;
      *p++ = 0x03;
      *p++ = 0x03;
      *p++ = (uint8_t) (parts[i] >> 8);
      *p++ = (uint8_t) parts[i];
      memcpy (p, hs, parts[i]);
      p += parts[i];
      hs += parts[i];
    }
  return (size_t) (p - out);
}

static void
test_tls_records (void **state)
{
  (void) state;
  char name[256];
  uint8_t two[sizeof client_hello_sni + 5];
  /* Within the handshake header, within the name, and late. */
  static const size_t cuts[] = { 1, 2, 3, 4, 150, 158, 300 };
  for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++)
    {
      size_t n = split_records (two, cuts[i]);
      assert_int_equal (n, sizeof two);
      assert_int_equal (tls_peek_sni (two, n, name, sizeof name), PEEK_FOUND);
      assert_string_equal (name, "allowed.test");
      for (size_t cut = 0; cut < n; cut++)
        assert_int_equal (tls_peek_sni (two, cut, name, sizeof name),
                          PEEK_MORE);
    }
  /* A record of another type in between: not a ClientHello stream. */
  size_t n = split_records (two, 100);
  two[5 + 100] = 0x17;
  assert_int_equal (tls_peek_sni (two, n, name, sizeof name), PEEK_INVALID);
  /* An empty record. */
  static const uint8_t empty[] = { 0x16, 0x03, 0x01, 0x00, 0x00, 0x01 };
  assert_int_equal (tls_peek_sni (empty, sizeof empty, name, sizeof name),
                    PEEK_INVALID);
}

/* The captured hello with its 12-byte name replaced. */
static enum peek_result
with_name (const char *twelve, char *name, size_t cap)
{
  uint8_t m[sizeof client_hello_sni];
  memcpy (m, client_hello_sni, sizeof m);
  uint8_t *at = memmem (m, sizeof m, "allowed.test", 12);
  assert_non_null (at);
  memcpy (at, twelve, 12);
  return tls_peek_sni (m, sizeof m, name, cap);
}

static void
test_tls_bad (void **state)
{
  (void) state;
  char name[256];
  assert_int_equal (with_name ("ALLOWED.Test", name, sizeof name), PEEK_FOUND);
  assert_string_equal (name, "allowed.test");
  assert_int_equal (with_name ("192.168.0.10", name, sizeof name),
                    PEEK_INVALID);
  assert_int_equal (with_name ("allowed_test", name, sizeof name),
                    PEEK_INVALID);
  assert_int_equal (with_name ("allowed.tes\0", name, sizeof name),
                    PEEK_INVALID);
  assert_int_equal (with_name ("allowed.tes.", name, sizeof name),
                    PEEK_INVALID);
  assert_int_equal (with_name ("allowed..est", name, sizeof name),
                    PEEK_INVALID);

#define GARBAGE(s) { s, sizeof s - 1 }
  static const struct
  {
    const char *bytes;
    size_t len;
  } garbage[] = {
    GARBAGE ("GET / HTTP/1.1\r\nHost: allowed.test\r\n\r\n"),
    GARBAGE ("\x16\x02\x01\x00\x10"), /* version 2 */
    GARBAGE ("\x16\x03\x01\x00\x04\x02\x00\x00\x00"), /* a ServerHello */
    GARBAGE ("\x15\x03\x03"),         /* an alert */
    GARBAGE ("\x16\x03\x01\x40\x01"), /* a record longer than 2^14 */
  };
  for (size_t i = 0; i < sizeof garbage / sizeof garbage[0]; i++)
    assert_int_equal (tls_peek_sni ((const uint8_t *) garbage[i].bytes,
                                    garbage[i].len, name, sizeof name),
                      PEEK_INVALID);

  /* Each byte off by one, up and down (every length field among them):
   * a FOUND is only ever a 12-byte name, the one written there. */
  for (size_t i = 0; i < sizeof client_hello_sni; i++)
    for (int d = -1; d <= 1; d += 2)
      {
        uint8_t m[sizeof client_hello_sni];
        memcpy (m, client_hello_sni, sizeof m);
        m[i] = (uint8_t) (m[i] + d);
        enum peek_result r = tls_peek_sni (m, sizeof m, name, sizeof name);
        if (r == PEEK_FOUND)
          assert_int_equal (strlen (name), 12);
      }

  /* A ClientHello that says it is larger than airlock ever reads. */
  static uint8_t big[EGRESS_PEEK_MAX + 100];
  memset (big, 0, sizeof big);
  static const uint8_t head[] = { 0x16, 0x03, 0x01, 0x40, 0x00,
                                  0x01, 0x01, 0x00, 0x00 };
  memcpy (big, head, sizeof head);
  assert_int_equal (tls_peek_sni (big, sizeof big, name, sizeof name),
                    PEEK_INVALID);
}

/* ---- HTTP ---- */

static enum peek_result
http (const char *head, char *name)
{
  return http_peek_host ((const uint8_t *) head, strlen (head), name, 256);
}

static void
test_http_host (void **state)
{
  (void) state;
  char name[256];
  assert_int_equal (http ("GET /simple HTTP/1.1\r\nHost: allowed.test\r\n"
                          "Accept: */*\r\n\r\n", name), PEEK_FOUND);
  assert_string_equal (name, "allowed.test");
  assert_int_equal (http ("POST /x HTTP/1.0\r\nuser-agent: t\r\n"
                          "hOsT:\t Allowed.TEST:8080 \t\r\n\r\nbody", name),
                    PEEK_FOUND);
  assert_string_equal (name, "allowed.test");
  assert_int_equal (http ("GET / HTTP/1.1\nHost: allowed.test\n\n", name),
                    PEEK_FOUND);
  assert_string_equal (name, "allowed.test");
  assert_int_equal (http ("GET / HTTP/1.1\r\nHost: allowed.test.\r\n\r\n",
                          name), PEEK_FOUND);
  assert_string_equal (name, "allowed.test");
  /* Absolute form: the same host, or the only one. */
  assert_int_equal (http ("GET http://Allowed.test:80/a HTTP/1.1\r\n"
                          "Host: allowed.test\r\n\r\n", name), PEEK_FOUND);
  assert_string_equal (name, "allowed.test");
  assert_int_equal (http ("GET http://allowed.test HTTP/1.0\r\n\r\n", name),
                    PEEK_FOUND);
  assert_string_equal (name, "allowed.test");
  assert_int_equal (http ("OPTIONS * HTTP/1.1\r\nHost: allowed.test\r\n\r\n",
                          name), PEEK_FOUND);
  /* No name at all. */
  assert_int_equal (http ("GET / HTTP/1.0\r\nAccept: */*\r\n\r\n", name),
                    PEEK_NONE);
}

static void
test_http_invalid (void **state)
{
  (void) state;
  char name[256];
  static const char *const bad[] = {
    "GET / HTTP/1.1\r\nHost: a.test\r\nHost: a.test\r\n\r\n",
    "GET / HTTP/1.1\r\nHost: a.test\r\nhost: b.test\r\n\r\n",
    "GET http://other.test/ HTTP/1.1\r\nHost: allowed.test\r\n\r\n",
    "GET http://allowed.test@other.test/ HTTP/1.1\r\n\r\n",
    "GET / HTTP/1.1\r\nHost: [::1]:80\r\n\r\n",
    "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
    "GET / HTTP/1.1\r\nHost: a.test:\r\n\r\n",
    "GET / HTTP/1.1\r\nHost: a.test:80x\r\n\r\n",
    "GET / HTTP/1.1\r\nHost: a_b.test\r\n\r\n",
    "GET / HTTP/1.1\r\nHost:\r\n\r\n",
    "GET / HTTP/1.1\r\nX-A: 1\r\n folded\r\nHost: a.test\r\n\r\n",
    "GET / HTTP/1.1\r\nHost: a.test\r\n\tfolded\r\n\r\n",
    "GET / HTTP/1.1\r\nHost : a.test\r\n\r\n",
    "GET / HTTP/1.1\r\nno colon\r\n\r\n",
    "GET / HTTP/2.0\r\nHost: a.test\r\n\r\n",
    "GET / HTTP/1.1 x\r\nHost: a.test\r\n\r\n",
    "get / HTTP/1.1\r\nHost: a.test\r\n\r\n",
    "GET  / HTTP/1.1\r\nHost: a.test\r\n\r\n",
    "CONNECT a.test:443 HTTP/1.1\r\nHost: a.test\r\n\r\n",
    "GET / HTTP/1.1\r\nHo\rst: a.test\r\n\r\n",
    "\x16\x03\x01\x00\x10",
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    {
      enum peek_result r = http (bad[i], name);
      if (r != PEEK_INVALID)
        fail_msg ("case %zu: %d for %s", i, r, bad[i]);
    }
}

static void
test_http_more (void **state)
{
  (void) state;
  char name[256];
  const char *head = "GET /p HTTP/1.1\r\nHost: allowed.test\r\n\r\n";
  size_t n = strlen (head);
  for (size_t cut = 0; cut < n; cut++)
    {
      enum peek_result r
          = http_peek_host ((const uint8_t *) head, cut, name, sizeof name);
      if (r != PEEK_MORE)
        fail_msg ("prefix %zu: %d", cut, r);
    }
  /* A head that never ends within what airlock reads. */
  static uint8_t long_head[EGRESS_PEEK_MAX + 1];
  const char *start = "GET / HTTP/1.1\r\nHost: allowed.test\r\nX-Pad: ";
  memset (long_head, 'a', sizeof long_head);
  memcpy (long_head, start, strlen (start));
  assert_int_equal (http_peek_host (long_head, EGRESS_PEEK_MAX - 1, name,
                                    sizeof name), PEEK_MORE);
  assert_int_equal (http_peek_host (long_head, EGRESS_PEEK_MAX, name,
                                    sizeof name), PEEK_INVALID);
  assert_int_equal (http_peek_host (long_head, sizeof long_head, name,
                                    sizeof name), PEEK_INVALID);
  /* A request line of non-HTTP bytes fails at once, not after 16 KiB. */
  assert_int_equal (http ("\x16\x03", name), PEEK_INVALID);
  assert_int_equal (http ("GET /", name), PEEK_MORE);
}

int
main (void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test (test_dns_parse),
    cmocka_unit_test (test_dns_malformed),
    cmocka_unit_test (test_dns_reply),
    cmocka_unit_test (test_tls_sni),
    cmocka_unit_test (test_tls_prefixes),
    cmocka_unit_test (test_tls_records),
    cmocka_unit_test (test_tls_bad),
    cmocka_unit_test (test_http_host),
    cmocka_unit_test (test_http_invalid),
    cmocka_unit_test (test_http_more),
  };
  return cmocka_run_group_tests (tests, NULL, NULL);
}
