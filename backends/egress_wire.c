/* SPDX-License-Identifier: MIT */
/* DNS query, TLS ClientHello SNI and HTTP Host parsers for airlock-egress
 * (egress_wire.h).  Every read is checked against the bytes given; the
 * input is whatever a sandboxed process chose to send. */
#include "egress_wire.h"

#include <stdbool.h>
#include <string.h>

static uint16_t
get16 (const uint8_t *p)
{
  return (uint16_t) ((p[0] << 8) | p[1]);
}

static void
put16 (uint8_t *p, uint16_t v)
{
  p[0] = (uint8_t) (v >> 8);
  p[1] = (uint8_t) v;
}

static char
lower (char c)
{
  return (c >= 'A' && c <= 'Z') ? (char) (c - 'A' + 'a') : c;
}

/* ---- DNS ---- */

#define DNS_HEADER 12
#define DNS_QR 0x8000
#define DNS_AA 0x0400
#define DNS_RD 0x0100
#define DNS_RA 0x0080

/* A byte allowed inside a query label.  '_' is kept (SRV-style names are
 * harmless: no rule can match them); '.' and controls are not, or a single
 * label "allowed.test" would read as two. */
static bool
dns_label_byte (uint8_t c)
{
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
         || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

int
dns_parse_query (const uint8_t *msg, size_t len, struct dns_query *q)
{
  if (!msg || !q || len < DNS_HEADER || len > EGRESS_DNS_MAX)
    return -1;
  uint16_t flags = get16 (msg + 2);
  if ((flags & DNS_QR) || ((flags >> 11) & 0xf) != 0)
    return -1;
  if (get16 (msg + 4) != 1 || get16 (msg + 6) != 0 || get16 (msg + 8) != 0)
    return -1;

  size_t pos = DNS_HEADER, out = 0;
  for (;;)
    {
      if (pos >= len)
        return -1;
      uint8_t n = msg[pos++];
      if (n == 0)
        break;
      if (n > 63) /* a compression pointer (0xc0) or a reserved kind */
        return -1;
      if (n > len - pos)
        return -1;
      /* The dotted text must fit 253 bytes: the dot plus the label. */
      if (out + (out ? 1 : 0) + n > 253)
        return -1;
      if (out)
        q->name[out++] = '.';
      for (uint8_t i = 0; i < n; i++)
        {
          uint8_t c = msg[pos + i];
          if (!dns_label_byte (c))
            return -1;
          q->name[out++] = lower ((char) c);
        }
      pos += n;
    }
  if (len - pos < 4)
    return -1;
  q->name[out] = '\0';
  q->id = get16 (msg);
  q->flags = flags;
  q->qtype = get16 (msg + pos);
  q->qclass = get16 (msg + pos + 2);
  q->question_len = pos + 4 - DNS_HEADER;
  return 0;
}

int
dns_build_reply (const uint8_t *query, const struct dns_query *q,
                 unsigned rcode, const uint8_t addr4[4], uint32_t ttl,
                 uint8_t *out, size_t cap)
{
  if (!query || !q || !out || rcode > 15
      || q->question_len > EGRESS_DNS_MAX - DNS_HEADER)
    return -1;
  bool answer = rcode == 0 && addr4 != NULL;
  size_t total = DNS_HEADER + q->question_len + (answer ? 16 : 0);
  if (total > cap)
    return -1;

  put16 (out, q->id);
  put16 (out + 2, (uint16_t) (DNS_QR | DNS_AA | (q->flags & DNS_RD) | DNS_RA
                              | rcode));
  put16 (out + 4, 1);
  put16 (out + 6, answer ? 1 : 0);
  put16 (out + 8, 0);
  put16 (out + 10, 0); /* EDNS is dropped: a plain 512-byte reply */
  memcpy (out + DNS_HEADER, query + DNS_HEADER, q->question_len);
  if (answer)
    {
      uint8_t *a = out + DNS_HEADER + q->question_len;
      put16 (a, 0xc000 | DNS_HEADER); /* the name: the question's */
      put16 (a + 2, 1);               /* A */
      put16 (a + 4, 1);               /* IN */
      put16 (a + 6, (uint16_t) (ttl >> 16));
      put16 (a + 8, (uint16_t) ttl);
      put16 (a + 10, 4);
      memcpy (a + 12, addr4, 4);
    }
  return (int) total;
}

/* ---- names read from a flow ---- */

#define EGRESS_MAX_HOST 253

/* Lower-case name[0..n) into out (cap with NUL) and check it is a host
 * name: labels of [a-z0-9-], 1..63 bytes, 253 in all, and not an IPv4
 * literal (all digits and dots), which no allow rule names. */
static enum peek_result
copy_host (const uint8_t *name, size_t n, char *out, size_t cap)
{
  if (n == 0 || n > EGRESS_MAX_HOST || n >= cap)
    return PEEK_INVALID;
  size_t label = 0;
  bool digits_only = true;
  for (size_t i = 0; i < n; i++)
    {
      char c = lower ((char) name[i]);
      if (c == '.')
        {
          if (label == 0)
            return PEEK_INVALID;
          label = 0;
        }
      else if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')
        {
          if (++label > 63)
            return PEEK_INVALID;
          if (c < '0' || c > '9')
            digits_only = false;
        }
      else
        return PEEK_INVALID;
      out[i] = c;
    }
  if (label == 0 || digits_only)
    return PEEK_INVALID;
  out[n] = '\0';
  return PEEK_FOUND;
}

/* ---- TLS ---- */

#define TLS_HANDSHAKE 22
#define TLS_CLIENT_HELLO 1
#define TLS_RECORD_MAX 16384
#define TLS_EXT_SERVER_NAME 0

/* A cursor over the reassembled handshake bytes: `avail` of them are
 * here; a field past a length it sits in is malformed, a field past
 * `avail` (but inside its lengths) needs more bytes. */
struct hs_reader
{
  const uint8_t *b;
  size_t avail;
  size_t pos;
};

/* PEEK_FOUND when n bytes at the cursor lie inside limit and are here. */
static enum peek_result
hs_need (const struct hs_reader *r, size_t n, size_t limit)
{
  if (n > limit || r->pos > limit - n)
    return PEEK_INVALID;
  if (r->pos + n > r->avail)
    return PEEK_MORE;
  return PEEK_FOUND;
}

#define NEED(r, n, limit)                                                      \
  do                                                                           \
    {                                                                          \
      enum peek_result need_ = hs_need ((r), (n), (limit));                    \
      if (need_ != PEEK_FOUND)                                                 \
        return need_;                                                          \
    }                                                                          \
  while (0)

/* The server_name extension's body [r->pos, end): the first host_name
 * entry.  RFC 6066 allows one entry per type; others are skipped. */
static enum peek_result
tls_server_name (struct hs_reader *r, size_t end, char *name, size_t cap,
                 bool *found)
{
  NEED (r, 2, end);
  size_t list = get16 (r->b + r->pos);
  r->pos += 2;
  if (list != end - r->pos || list == 0)
    return PEEK_INVALID;
  while (r->pos < end)
    {
      NEED (r, 3, end);
      uint8_t type = r->b[r->pos];
      size_t n = get16 (r->b + r->pos + 1);
      r->pos += 3;
      NEED (r, n, end);
      if (type == 0 && !*found)
        {
          if (copy_host (r->b + r->pos, n, name, cap) != PEEK_FOUND)
            return PEEK_INVALID;
          *found = true;
        }
      r->pos += n;
    }
  return PEEK_FOUND;
}

/* The ClientHello body: [r->pos, end) where end is given by the handshake
 * header.  FOUND only once the whole message is here and well formed, so
 * a prefix is never taken for the whole. */
static enum peek_result
tls_client_hello (struct hs_reader *r, size_t end, char *name, size_t cap)
{
  NEED (r, 2 + 32 + 1, end); /* legacy_version, random, session id length */
  if (r->b[r->pos] != 3)
    return PEEK_INVALID;
  r->pos += 34;
  size_t n = r->b[r->pos++];
  if (n > 32)
    return PEEK_INVALID;
  NEED (r, n + 2, end);
  r->pos += n;
  n = get16 (r->b + r->pos); /* cipher suites */
  r->pos += 2;
  if (n == 0 || n % 2)
    return PEEK_INVALID;
  NEED (r, n + 1, end);
  r->pos += n;
  n = r->b[r->pos++]; /* compression methods */
  if (n == 0)
    return PEEK_INVALID;
  NEED (r, n, end);
  r->pos += n;
  if (r->pos == end)
    return PEEK_NONE; /* no extensions at all */

  NEED (r, 2, end);
  n = get16 (r->b + r->pos);
  r->pos += 2;
  if (n != end - r->pos)
    return PEEK_INVALID;
  bool found = false, seen_sni = false;
  while (r->pos < end)
    {
      NEED (r, 4, end);
      uint16_t type = get16 (r->b + r->pos);
      size_t ext_len = get16 (r->b + r->pos + 2);
      r->pos += 4;
      NEED (r, ext_len, end);
      if (type == TLS_EXT_SERVER_NAME)
        {
          if (seen_sni) /* RFC 8446 4.2: one extension of each type */
            return PEEK_INVALID;
          seen_sni = true;
          struct hs_reader sub = *r;
          enum peek_result res
              = tls_server_name (&sub, r->pos + ext_len, name, cap, &found);
          if (res != PEEK_FOUND)
            return res; /* the extension is all here: never MORE */
        }
      r->pos += ext_len;
    }
  return found ? PEEK_FOUND : PEEK_NONE;
}

enum peek_result
tls_peek_sni (const uint8_t *data, size_t len, char *name, size_t cap)
{
  static const size_t hs_cap = EGRESS_PEEK_MAX;
  uint8_t hs[EGRESS_PEEK_MAX];
  size_t hs_len = 0;
  size_t want = 4; /* handshake header, then the whole message */
  size_t pos = 0;
  if (len > EGRESS_PEEK_MAX) /* more than airlock-egress ever reads */
    len = EGRESS_PEEK_MAX;

  if (!data || !name || cap == 0)
    return PEEK_INVALID;
  name[0] = '\0';
  /* Reassemble the handshake bytes of as many records as it spans. */
  while (hs_len < want)
    {
      size_t left = len - pos;
      if (left >= 1 && data[pos] != TLS_HANDSHAKE)
        return PEEK_INVALID;
      if (left >= 2 && data[pos + 1] != 3)
        return PEEK_INVALID;
      if (left < 5)
        break; /* the next record's header is still coming */
      size_t rec = get16 (data + pos + 3);
      if (rec == 0 || rec > TLS_RECORD_MAX)
        return PEEK_INVALID;
      pos += 5;
      size_t here = len - pos < rec ? len - pos : rec;
      if (here > hs_cap - hs_len)
        return PEEK_INVALID;
      memcpy (hs + hs_len, data + pos, here);
      hs_len += here;
      pos += here;
      if (hs_len >= 4 && want == 4)
        {
          if (hs[0] != TLS_CLIENT_HELLO)
            return PEEK_INVALID;
          size_t body = ((size_t) hs[1] << 16) | ((size_t) hs[2] << 8) | hs[3];
          if (body > hs_cap - 4)
            return PEEK_INVALID; /* more than airlock-egress will read */
          want = 4 + body;
        }
      if (here < rec)
        break; /* the record itself is cut: what is here is all there is */
    }
  /* Judge the bytes that are here even when more are wanted: a body
   * already malformed is INVALID now, whatever follows. */
  if (hs_len >= 1 && hs[0] != TLS_CLIENT_HELLO)
    return PEEK_INVALID;
  if (hs_len < 4)
    return len >= EGRESS_PEEK_MAX ? PEEK_INVALID : PEEK_MORE;

  struct hs_reader r = { hs, hs_len < want ? hs_len : want, 4 };
  enum peek_result res = tls_client_hello (&r, want, name, cap);
  if (res == PEEK_MORE && len >= EGRESS_PEEK_MAX)
    return PEEK_INVALID;
  if (res != PEEK_FOUND)
    name[0] = '\0';
  return res;
}

/* ---- HTTP ---- */

/* Longer than any registered method: not HTTP, said early. */
#define HTTP_METHOD_MAX 32

/* The request line [p, p+n) (without its line end), or a prefix of it
 * when complete is false: METHOD SP TARGET SP HTTP/1.x */
static enum peek_result
http_request_line (const uint8_t *p, size_t n, bool complete,
                   const uint8_t **target, size_t *target_len)
{
  size_t i = 0;
  while (i < n && p[i] >= 'A' && p[i] <= 'Z')
    i++;
  if (i > HTTP_METHOD_MAX)
    return PEEK_INVALID;
  if (i == n)
    return complete ? PEEK_INVALID : PEEK_MORE;
  if (i == 0 || p[i] != ' ')
    return PEEK_INVALID;
  size_t t = ++i;
  while (i < n && p[i] > ' ' && p[i] < 0x7f)
    i++;
  if (i == n)
    return complete ? PEEK_INVALID : PEEK_MORE;
  if (i == t || p[i] != ' ')
    return PEEK_INVALID;
  *target = p + t;
  *target_len = i - t;
  i++;
  static const char version[] = "HTTP/1.";
  for (size_t k = 0; k < sizeof version - 1; k++, i++)
    {
      if (i == n)
        return complete ? PEEK_INVALID : PEEK_MORE;
      if (p[i] != (uint8_t) version[k])
        return PEEK_INVALID;
    }
  if (i == n)
    return complete ? PEEK_INVALID : PEEK_MORE;
  if (p[i] < '0' || p[i] > '9')
    return PEEK_INVALID;
  i++;
  if (i != n)
    return PEEK_INVALID;
  return complete ? PEEK_FOUND : PEEK_MORE;
}

/* host[:port] (an authority or a Host value): the name into out. */
static enum peek_result
http_authority (const uint8_t *p, size_t n, char *out, size_t cap)
{
  if (n == 0 || p[0] == '[')
    return PEEK_INVALID; /* no name, or an IPv6 literal */
  const uint8_t *colon = memchr (p, ':', n);
  size_t host = colon ? (size_t) (colon - p) : n;
  if (colon)
    {
      size_t digits = n - host - 1;
      if (digits == 0 || digits > 5)
        return PEEK_INVALID;
      for (size_t i = host + 1; i < n; i++)
        if (p[i] < '0' || p[i] > '9')
          return PEEK_INVALID;
    }
  if (host > 1 && p[host - 1] == '.') /* "example.com." is the same name */
    host--;
  return copy_host (p, host, out, cap);
}

static bool
ascii_case_prefix (const uint8_t *p, size_t n, const char *prefix)
{
  size_t k = strlen (prefix);
  if (n < k)
    return false;
  for (size_t i = 0; i < k; i++)
    if (lower ((char) p[i]) != prefix[i])
      return false;
  return true;
}

/* The request target: an absolute-form target's host into out (*has
 * true); origin-form and "*" carry none. */
static enum peek_result
http_target (const uint8_t *t, size_t n, char *out, size_t cap, bool *has)
{
  *has = false;
  if (t[0] == '/' || (n == 1 && t[0] == '*'))
    return PEEK_FOUND;
  size_t skip;
  if (ascii_case_prefix (t, n, "http://"))
    skip = 7;
  else if (ascii_case_prefix (t, n, "https://"))
    skip = 8;
  else
    return PEEK_INVALID; /* authority-form (CONNECT) or garbage */
  size_t end = skip;
  while (end < n && t[end] != '/' && t[end] != '?' && t[end] != '#')
    {
      if (t[end] == '@') /* userinfo: a name that is not the host */
        return PEEK_INVALID;
      end++;
    }
  *has = true;
  return http_authority (t + skip, end - skip, out, cap);
}

static bool
http_token_byte (uint8_t c)
{
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
         || (c >= '0' && c <= '9') || (c && strchr ("!#$%&'*+-.^_`|~", c));
}

enum peek_result
http_peek_host (const uint8_t *data, size_t len, char *name, size_t cap)
{
  if (!data || !name || cap == 0)
    return PEEK_INVALID;
  name[0] = '\0';
  if (len > EGRESS_PEEK_MAX)
    len = EGRESS_PEEK_MAX;

  char target_host[EGRESS_MAX_HOST + 1];
  char host[sizeof target_host];
  bool has_target_host = false, has_host = false;
  const uint8_t *target = NULL;
  size_t target_len = 0;
  size_t pos = 0;
  bool first = true;

  for (;;)
    {
      const uint8_t *lf = memchr (data + pos, '\n', len - pos);
      size_t line_len = (lf ? (size_t) (lf - data) : len) - pos;
      const uint8_t *line = data + pos;
      /* The CR of CRLF; at the cut end of a partial line it may be one. */
      if (line_len > 0 && line[line_len - 1] == '\r')
        line_len--;
      if (memchr (line, '\r', line_len) || memchr (line, '\0', line_len))
        return PEEK_INVALID; /* a bare CR or a NUL inside a line */
      if (first)
        {
          enum peek_result r = http_request_line (line, line_len, lf != NULL,
                                                  &target, &target_len);
          if (r == PEEK_MORE)
            return len >= EGRESS_PEEK_MAX ? PEEK_INVALID : PEEK_MORE;
          if (r != PEEK_FOUND)
            return r;
          r = http_target (target, target_len, target_host,
                           sizeof target_host, &has_target_host);
          if (r != PEEK_FOUND)
            return r;
          first = false;
        }
      else if (!lf)
        {
          /* A header line still arriving: only its shape so far. */
          if (line_len > 0 && (line[0] == ' ' || line[0] == '\t'))
            return PEEK_INVALID;
          return len >= EGRESS_PEEK_MAX ? PEEK_INVALID : PEEK_MORE;
        }
      else if (line_len == 0)
        break; /* the blank line: the head is whole */
      else
        {
          if (line[0] == ' ' || line[0] == '\t')
            return PEEK_INVALID; /* obsolete line folding */
          size_t i = 0;
          while (i < line_len && http_token_byte (line[i]))
            i++;
          if (i == 0 || i == line_len || line[i] != ':')
            return PEEK_INVALID;
          if (i == 4 && ascii_case_prefix (line, i, "host"))
            {
              if (has_host)
                return PEEK_INVALID;
              size_t v = i + 1, e = line_len;
              while (v < e && (line[v] == ' ' || line[v] == '\t'))
                v++;
              while (e > v && (line[e - 1] == ' ' || line[e - 1] == '\t'))
                e--;
              if (http_authority (line + v, e - v, host, sizeof host)
                  != PEEK_FOUND)
                return PEEK_INVALID;
              has_host = true;
            }
        }
      pos = (size_t) (lf - data) + 1;
    }

  const char *found;
  if (has_host && has_target_host)
    {
      if (strcmp (host, target_host) != 0)
        return PEEK_INVALID;
      found = host;
    }
  else if (has_host)
    found = host;
  else if (has_target_host)
    found = target_host;
  else
    return PEEK_NONE;
  size_t n = strlen (found);
  if (n >= cap)
    return PEEK_INVALID;
  memcpy (name, found, n + 1);
  return PEEK_FOUND;
}
