/* SPDX-License-Identifier: MIT */
/* gRPC unary and server-streaming calls over libcurl (see grpc_call.h). */
#define _GNU_SOURCE
#include "grpc_call.h"
#include "backoff.h"
#include "monotonic_ms.h"
#include "random_id.h"
#include "xprintf.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#define FRAME_HEADER 5
#define MESSAGE_TEXT_MAX 1024
#define DEFAULT_CONNECT_MS 10000
#define LOCAL_GRACE_MS 250 /* past grpc-timeout before giving up here */
#define RETRY_FIRST_MS 100
#define RETRY_CAP_MS 1000

static const char *const code_names[] = {
  "OK",           "CANCELLED",          "UNKNOWN",         "INVALID_ARGUMENT",
  "DEADLINE_EXCEEDED", "NOT_FOUND",     "ALREADY_EXISTS",  "PERMISSION_DENIED",
  "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION", "ABORTED",  "OUT_OF_RANGE",
  "UNIMPLEMENTED", "INTERNAL",          "UNAVAILABLE",     "DATA_LOSS",
  "UNAUTHENTICATED",
};

const char *
grpc_code_name (int code)
{
  if (code < 0 || code >= (int) (sizeof code_names / sizeof *code_names))
    return "UNKNOWN_CODE";
  return code_names[code];
}

void
grpc_result_free (struct grpc_result *r)
{
  free (r->message);
  *r = (struct grpc_result){ 0 };
}

char *
grpc_result_text (const struct grpc_result *r)
{
  if (r->message && *r->message)
    return xprintf ("%s: %s", grpc_code_name (r->code), r->message);
  return xprintf ("%s", grpc_code_name (r->code));
}

/* Fill res; message is taken (NULL: out of memory, said so). */
static int
set_result (struct grpc_result *res, int code, enum grpc_origin origin, char *message)
{
  free (res->message);
  res->code = code;
  res->origin = origin;
  res->message = message ? message : strdup ("out of memory");
  return code == GRPC_OK ? 0 : -1;
}

/* ---- the frame reassembler ---- */

static int
frames_fail (struct grpc_frames *f, int code, const char *why)
{
  f->error = why;
  f->code = code;
  return -1;
}

static bool
frames_grow (struct grpc_frames *f, size_t want, size_t frame_size)
{
  if (want <= f->cap)
    return true;
  size_t cap = f->cap * 2 > want ? f->cap * 2 : want;
  if (cap > frame_size)
    cap = frame_size;
  uint8_t *p = realloc (f->buf, cap);
  if (!p)
    return false;
  f->buf = p;
  f->cap = cap;
  return true;
}

int
grpc_frames_feed (struct grpc_frames *f, const void *data, size_t n)
{
  const uint8_t *in = data;
  size_t max = f->max_message ? f->max_message : GRPC_DEFAULT_MAX_MESSAGE;
  if (f->error || f->stopped)
    return -1;
  while (n)
    {
      /* the header first: 5 bytes */
      if (f->len < FRAME_HEADER)
        {
          size_t take = FRAME_HEADER - f->len < n ? FRAME_HEADER - f->len : n;
          if (!frames_grow (f, FRAME_HEADER, FRAME_HEADER))
            return frames_fail (f, GRPC_INTERNAL, "out of memory");
          memcpy (f->buf + f->len, in, take);
          f->len += take, in += take, n -= take;
          if (f->len < FRAME_HEADER)
            return 0;
        }
      uint8_t flag = f->buf[0];
      size_t size = (size_t) f->buf[1] << 24 | (size_t) f->buf[2] << 16
                    | (size_t) f->buf[3] << 8 | f->buf[4];
      if (flag == 1)
        return frames_fail (f, GRPC_INTERNAL,
                            "the server sent a compressed message (none was asked for)");
      if (flag != 0)
        return frames_fail (f, GRPC_INTERNAL, "a response frame has an unknown flag");
      if (size > max)
        return frames_fail (f, GRPC_RESOURCE_EXHAUSTED,
                            "a response message is over the size limit");
      size_t need = FRAME_HEADER + size - f->len;
      size_t take = need < n ? need : n;
      if (!frames_grow (f, f->len + take, FRAME_HEADER + size))
        return frames_fail (f, GRPC_INTERNAL, "out of memory");
      if (take)
        memcpy (f->buf + f->len, in, take);
      f->len += take, in += take, n -= take;
      if (f->len < FRAME_HEADER + size)
        return 0;
      f->len = 0;
      f->count++;
      if (f->on_message && f->on_message (f->ctx, f->buf + FRAME_HEADER, size))
        {
          f->stopped = true;
          return -1;
        }
    }
  return 0;
}

int
grpc_frames_end (struct grpc_frames *f)
{
  if (f->error || f->stopped)
    return -1;
  if (f->len)
    return frames_fail (f, GRPC_INTERNAL, "the response ends inside a message");
  return 0;
}

void
grpc_frames_free (struct grpc_frames *f)
{
  free (f->buf);
  f->buf = NULL;
  f->len = f->cap = 0;
}

/* ---- grpc-message ---- */

static int
hexval (char c)
{
  return c >= '0' && c <= '9' ? c - '0'
         : c >= 'a' && c <= 'f' ? c - 'a' + 10
         : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

void
grpc_percent_decode (char *s)
{
  char *o = s;
  for (const char *p = s; *p; p++)
    {
      int hi, lo;
      if (*p == '%' && (hi = hexval (p[1])) >= 0 && (lo = hexval (p[2])) >= 0
          && (hi || lo))
        {
          *o++ = (char) (hi << 4 | lo);
          p += 2;
        }
      else
        *o++ = *p;
    }
  *o = '\0';
  for (unsigned char *u = (unsigned char *) s; *u; u++)
    if (*u < 0x20 || *u == 0x7f)
      *u = ' ';
}

/* ---- one transfer ---- */

struct grpc_transfer {
  CURL *curl;
  const struct grpc_call *call;
  struct curl_slist *headers;
  uint8_t *body;         /* the framed request */
  struct grpc_frames frames;
  int status;            /* grpc-status, -1 until seen */
  char *status_message;  /* grpc-message, raw */
  char errbuf[CURL_ERROR_SIZE];
};

static size_t
on_body (char *data, size_t size, size_t n, void *userdata)
{
  struct grpc_transfer *t = userdata;
  return grpc_frames_feed (&t->frames, data, size * n) < 0 ? 0 : size * n;
}

/* The value of header line `name: value\r\n` when its name is name. */
static char *
header_value (const char *line, size_t n, const char *name)
{
  size_t k = strlen (name);
  if (n <= k || strncasecmp (line, name, k) || line[k] != ':')
    return NULL;
  const char *v = line + k + 1, *end = line + n;
  while (v < end && (*v == ' ' || *v == '\t'))
    v++;
  while (end > v && (end[-1] == '\r' || end[-1] == '\n' || end[-1] == ' ' || end[-1] == '\t'))
    end--;
  return strndup (v, (size_t) (end - v));
}

static size_t
on_header (char *data, size_t size, size_t n, void *userdata)
{
  struct grpc_transfer *t = userdata;
  size_t total = size * n;
  char *v;
  if ((v = header_value (data, total, "grpc-status")))
    {
      char *end;
      long code = strtol (v, &end, 10);
      t->status = (*v && !*end && code >= 0 && code <= GRPC_UNAUTHENTICATED)
                  ? (int) code : GRPC_UNKNOWN;
      free (v);
    }
  else if ((v = header_value (data, total, "grpc-message")))
    {
      free (t->status_message);
      t->status_message = v;
    }
  return total;
}

static int
on_progress (void *userdata, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
  (void) dt, (void) dn, (void) ut, (void) un;
  struct grpc_transfer *t = userdata;
  return t->call->cancel && *t->call->cancel;
}

void
grpc_transfer_free (struct grpc_transfer *t)
{
  if (!t)
    return;
  curl_slist_free_all (t->headers);
  free (t->body);
  grpc_frames_free (&t->frames);
  free (t->status_message);
  free (t);
}

static bool
add_header (struct grpc_transfer *t, const char *line)
{
  struct curl_slist *l = curl_slist_append (t->headers, line);
  if (l)
    t->headers = l;
  return l != NULL;
}

static bool
build_headers (struct grpc_transfer *t, const struct grpc_call *call)
{
  char timeout[32];
  /* grpc-timeout takes 8 digits at most: milliseconds up to a day, then
   * seconds */
  if (call->timeout_ms <= 99999999u)
    snprintf (timeout, sizeof timeout, "grpc-timeout: %um", call->timeout_ms);
  else
    snprintf (timeout, sizeof timeout, "grpc-timeout: %uS", call->timeout_ms / 1000);
  if (!add_header (t, "content-type: application/grpc") || !add_header (t, "te: trailers")
      || !add_header (t, "Accept:") || !add_header (t, "Expect:")
      || (call->timeout_ms && !add_header (t, timeout)))
    return false;
  const struct grpc_retry *rt = call->retry;
  if (rt)
    for (unsigned i = 0; i < (rt->attempt ? 3u : 1u); i++)
      if (!add_header (t, rt->lines[i]))
        return false;
  for (const char *const *m = call->metadata; m && *m; m++)
    if (!add_header (t, *m))
      return false;
  return true;
}

static const char *
bad_metadata (const struct grpc_call *call)
{
  for (const char *const *m = call->metadata; m && *m; m++)
    {
      const char *colon = strchr (*m, ':');
      if (strpbrk (*m, "\r\n") || !colon || colon == *m)
        return "a metadata entry is not one \"name: value\" line";
    }
  return NULL;
}

/* libcurl before 8.0.0 breaks an h2c (prior knowledge) connection that it
 * reuses: "Error in the HTTP2 framing layer" on the second call (curl
 * issue 10634; Debian 12 has 7.88.1).  TLS with ALPN is not affected. */
static bool
h2c_reuse_broken (void)
{
  return curl_version_info (CURLVERSION_NOW)->version_num < 0x080000;
}

struct grpc_transfer *
grpc_transfer_new (CURL *c, const struct grpc_call *call, struct grpc_result *res)
{
  *res = (struct grpc_result){ 0 };
  bool tls = !strncmp (call->base_url, "https://", 8);
  if (!tls && strncmp (call->base_url, "http://", 7))
    {
      set_result (res, GRPC_INVALID_ARGUMENT, GRPC_FROM_CLIENT,
                  xprintf ("the server URL must start with https:// or http://"));
      return NULL;
    }
  const char *bad = bad_metadata (call);
  if (bad)
    {
      set_result (res, GRPC_INVALID_ARGUMENT, GRPC_FROM_CLIENT, xprintf ("%s", bad));
      return NULL;
    }
  if (call->request_len > UINT32_MAX)
    {
      set_result (res, GRPC_RESOURCE_EXHAUSTED, GRPC_FROM_CLIENT,
                  xprintf ("the request is over 4 GiB"));
      return NULL;
    }
  struct grpc_transfer *t = calloc (1, sizeof *t);
  size_t blen = FRAME_HEADER + call->request_len;
  size_t ulen = strlen (call->base_url);
  while (ulen && call->base_url[ulen - 1] == '/')
    ulen--;
  char *url = xprintf ("%.*s%s", (int) ulen, call->base_url, call->path);
  if (!t || !url || !(t->body = malloc (blen)) || !build_headers (t, call))
    {
      free (url);
      grpc_transfer_free (t);
      set_result (res, GRPC_INTERNAL, GRPC_FROM_CLIENT, NULL);
      return NULL;
    }
  uint32_t n = (uint32_t) call->request_len;
  t->body[0] = 0;
  t->body[1] = (uint8_t) (n >> 24), t->body[2] = (uint8_t) (n >> 16);
  t->body[3] = (uint8_t) (n >> 8), t->body[4] = (uint8_t) n;
  if (n)
    memcpy (t->body + FRAME_HEADER, call->request, n);
  t->curl = c;
  t->call = call;
  t->status = -1;
  t->frames.max_message = call->max_message;
  t->frames.on_message = call->on_message;
  t->frames.ctx = call->ctx;

  curl_easy_reset (c);
  curl_easy_setopt (c, CURLOPT_URL, url);
  free (url); /* libcurl keeps its own copy of strings */
  curl_easy_setopt (c, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt (c, CURLOPT_HTTP_VERSION,
                    (long) (tls ? CURL_HTTP_VERSION_2TLS : CURL_HTTP_VERSION_2_PRIOR_KNOWLEDGE));
  curl_easy_setopt (c, CURLOPT_HTTPHEADER, t->headers);
  curl_easy_setopt (c, CURLOPT_POST, 1L);
  curl_easy_setopt (c, CURLOPT_POSTFIELDS, t->body);
  curl_easy_setopt (c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t) blen);
  curl_easy_setopt (c, CURLOPT_ERRORBUFFER, t->errbuf);
  curl_easy_setopt (c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt (c, CURLOPT_TCP_KEEPALIVE, 1L);
  curl_easy_setopt (c, CURLOPT_PIPEWAIT, 1L);
  curl_easy_setopt (c, CURLOPT_CONNECTTIMEOUT_MS,
                    (long) (call->connect_timeout_ms ? call->connect_timeout_ms
                                                     : DEFAULT_CONNECT_MS));
  if (call->timeout_ms)
    curl_easy_setopt (c, CURLOPT_TIMEOUT_MS, (long) call->timeout_ms + LOCAL_GRACE_MS);
  if (call->ca_file)
    curl_easy_setopt (c, CURLOPT_CAINFO, call->ca_file);
  if (!tls && h2c_reuse_broken ())
    {
      /* a connection a call: only the local double speaks h2c */
      curl_easy_setopt (c, CURLOPT_FRESH_CONNECT, 1L);
      curl_easy_setopt (c, CURLOPT_FORBID_REUSE, 1L);
    }
  curl_easy_setopt (c, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt (c, CURLOPT_WRITEDATA, t);
  curl_easy_setopt (c, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt (c, CURLOPT_HEADERDATA, t);
  curl_easy_setopt (c, CURLOPT_XFERINFOFUNCTION, on_progress);
  curl_easy_setopt (c, CURLOPT_XFERINFODATA, t);
  curl_easy_setopt (c, CURLOPT_NOPROGRESS, 0L);
  return t;
}

/* gRPC's mapping of an HTTP status that is not 200 to a code. */
static int
code_of_http (long status)
{
  switch (status)
    {
    case 400:
      return GRPC_INTERNAL;
    case 401:
      return GRPC_UNAUTHENTICATED;
    case 403:
      return GRPC_PERMISSION_DENIED;
    case 404:
      return GRPC_UNIMPLEMENTED;
    case 429:
    case 502:
    case 503:
    case 504:
      return GRPC_UNAVAILABLE;
    default:
      return GRPC_UNKNOWN;
    }
}

/* A transfer that got no gRPC answer: its code, and whether trying
 * again can help (a certificate or a URL will not change). */
static int
code_of_curl (CURLcode rc, enum grpc_origin *origin)
{
  *origin = GRPC_FROM_TRANSPORT;
  switch (rc)
    {
    case CURLE_OPERATION_TIMEDOUT:
      return GRPC_DEADLINE_EXCEEDED;
    case CURLE_COULDNT_CONNECT:
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_PARTIAL_FILE:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
    case CURLE_SSL_CONNECT_ERROR:
      return GRPC_UNAVAILABLE;
    default:
      *origin = GRPC_FROM_CLIENT;
      return GRPC_UNAVAILABLE;
    }
}

int
grpc_transfer_finish (struct grpc_transfer *t, CURLcode rc, struct grpc_result *res)
{
  const struct grpc_call *call = t->call;
  *res = (struct grpc_result){ 0 };
  res->messages = t->frames.count;
  curl_easy_getinfo (t->curl, CURLINFO_RESPONSE_CODE, &res->http_status);
  if (t->frames.stopped)
    {
      res->stopped = true;
      return set_result (res, GRPC_CANCELLED, GRPC_FROM_CLIENT, xprintf ("stopped by the caller"));
    }
  if (t->frames.error)
    return set_result (res, t->frames.code, GRPC_FROM_CLIENT,
                       xprintf ("%s (%s)", t->frames.error, call->path));
  if (rc == CURLE_ABORTED_BY_CALLBACK)
    return set_result (res, GRPC_CANCELLED, GRPC_FROM_CLIENT, xprintf ("cancelled"));
  if (rc != CURLE_OK && t->status < 0)
    {
      enum grpc_origin origin;
      int code = code_of_curl (rc, &origin);
      return set_result (res, code, origin,
                         xprintf ("%s%s: %s", call->base_url, call->path,
                                  *t->errbuf ? t->errbuf : curl_easy_strerror (rc)));
    }
  long version = 0;
  curl_easy_getinfo (t->curl, CURLINFO_HTTP_VERSION, &version);
  if (version != CURL_HTTP_VERSION_2_0)
    return set_result (res, GRPC_UNAVAILABLE, GRPC_FROM_CLIENT,
                       xprintf ("%s did not answer in HTTP/2", call->base_url));
  if (res->http_status != 200)
    return set_result (res, code_of_http (res->http_status), GRPC_FROM_TRANSPORT,
                       xprintf ("HTTP %ld from %s%s", res->http_status, call->base_url,
                                call->path));
  if (grpc_frames_end (&t->frames) < 0 && t->status == GRPC_OK)
    return set_result (res, t->frames.code, GRPC_FROM_CLIENT,
                       xprintf ("%s (%s)", t->frames.error, call->path));
  if (t->status < 0)
    return set_result (res, GRPC_INTERNAL, GRPC_FROM_CLIENT,
                       xprintf ("no grpc-status in the answer to %s", call->path));
  char *m = t->status_message ? t->status_message : strdup ("");
  t->status_message = NULL;
  if (m)
    {
      grpc_percent_decode (m);
      if (strlen (m) > MESSAGE_TEXT_MAX)
        {
          size_t cut = MESSAGE_TEXT_MAX;
          while (cut && ((unsigned char) m[cut] & 0xC0) == 0x80)
            cut--; /* not inside a UTF-8 character */
          m[cut] = '\0';
        }
    }
  return set_result (res, t->status, GRPC_FROM_SERVER, m);
}

/* ---- the blocking calls ---- */

struct unary_reply {
  uint8_t *msg;
  size_t len;
  unsigned n;
  bool oom;
};

static int
keep_reply (void *ctx, const uint8_t *msg, size_t len)
{
  struct unary_reply *u = ctx;
  if (u->n++)
    return 0; /* the count says it is wrong: see grpc_unary */
  u->msg = malloc (len ? len : 1);
  if (!u->msg)
    {
      u->oom = true;
      return 1;
    }
  if (len)
    memcpy (u->msg, msg, len);
  u->len = len;
  return 0;
}

static int
run (CURL *c, const struct grpc_call *call, struct grpc_result *res)
{
  struct grpc_transfer *t = grpc_transfer_new (c, call, res);
  if (!t)
    return -1;
  CURLcode rc = curl_easy_perform (c);
  int r = grpc_transfer_finish (t, rc, res);
  curl_easy_reset (c); /* drops its pointers to what is freed here */
  grpc_transfer_free (t);
  return r;
}

int
grpc_unary (CURL *c, const struct grpc_call *call, uint8_t **reply, size_t *len,
            struct grpc_result *res)
{
  struct unary_reply u = { 0 };
  struct grpc_call unary = *call;
  unary.on_message = keep_reply;
  unary.ctx = &u;
  *reply = NULL;
  *len = 0;
  int r = run (c, &unary, res);
  if (u.oom)
    {
      res->stopped = false;
      r = set_result (res, GRPC_INTERNAL, GRPC_FROM_CLIENT, NULL);
    }
  else if (r == 0 && u.n != 1)
    r = set_result (res, GRPC_INTERNAL, GRPC_FROM_CLIENT,
                    xprintf ("%u response messages to the unary call %s", u.n, call->path));
  if (r == 0)
    {
      *reply = u.msg;
      *len = u.len;
    }
  else
    free (u.msg);
  return r;
}

int
grpc_server_stream (CURL *c, const struct grpc_call *call, struct grpc_result *res)
{
  return run (c, call, res);
}

/* ---- retries ---- */

bool
grpc_retryable (const struct grpc_result *r)
{
  if (r->origin == GRPC_FROM_CLIENT)
    return false;
  switch (r->code)
    {
    case GRPC_UNAVAILABLE:
    case GRPC_DEADLINE_EXCEEDED:
    case GRPC_INTERNAL:
    case GRPC_UNKNOWN:
    case GRPC_CANCELLED:
      return true;
    default:
      return false;
    }
}

void
grpc_retry_init (struct grpc_retry *rt, unsigned max_retries)
{
  *rt = (struct grpc_retry){ .max_retries = max_retries };
  random_uuid (rt->key);
  /* the jitter's seed: the key's last 32 random bits */
  rt->seed = (unsigned) strtoul (rt->key + 28, NULL, 16);
  snprintf (rt->lines[0], sizeof rt->lines[0], "x-idempotency-key: %s", rt->key);
}

bool
grpc_retry_next (struct grpc_retry *rt, const struct grpc_result *res, uint64_t deadline_ms,
                 unsigned *wait_ms)
{
  if (!grpc_retryable (res) || rt->attempt >= rt->max_retries)
    return false;
  unsigned wait = backoff_ms (rt->attempt + 1, RETRY_FIRST_MS, RETRY_CAP_MS, &rt->seed);
  if (deadline_ms && (uint64_t) monotonic_ms () + wait >= deadline_ms)
    return false;
  rt->attempt++;
  rt->last_delay_ms = wait;
  snprintf (rt->lines[1], sizeof rt->lines[1], "x-retry-attempt: %u", rt->attempt);
  snprintf (rt->lines[2], sizeof rt->lines[2], "x-retry-delay: %u.%03u", wait / 1000,
            wait % 1000);
  *wait_ms = wait;
  return true;
}

static void
nap (unsigned ms, const volatile int *cancel)
{
  long long end = monotonic_ms () + ms;
  for (long long now; (now = monotonic_ms ()) < end && !(cancel && *cancel);)
    {
      long long slice = end - now > 50 ? 50 : end - now;
      struct timespec ts = { 0, (long) slice * 1000000L };
      nanosleep (&ts, NULL);
    }
}

int
grpc_unary_retry (CURL *c, const struct grpc_call *call, unsigned max_retries,
                  uint64_t deadline_ms, uint8_t **reply, size_t *len, struct grpc_result *res)
{
  struct grpc_retry rt;
  grpc_retry_init (&rt, max_retries);
  struct grpc_call attempt = *call;
  attempt.retry = &rt;
  for (;;)
    {
      if (deadline_ms)
        {
          uint64_t now = (uint64_t) monotonic_ms ();
          uint64_t left = deadline_ms > now ? deadline_ms - now : 1;
          if (!call->timeout_ms || left < call->timeout_ms)
            attempt.timeout_ms = (unsigned) (left < UINT32_MAX ? left : UINT32_MAX);
        }
      int r = grpc_unary (c, &attempt, reply, len, res);
      unsigned wait;
      if (r == 0 || !grpc_retry_next (&rt, res, deadline_ms, &wait))
        return r;
      fprintf (stderr, "airlock daemon: grpc: %s: %s; retrying in %u ms\n", call->path,
               grpc_code_name (res->code), wait);
      nap (wait, call->cancel);
      if (call->cancel && *call->cancel)
        return r;
      grpc_result_free (res);
    }
}
