/* SPDX-License-Identifier: MIT */
/* The Daytona HTTP client (see daytona_http.h): one libcurl easy handle a
 * struct, so one a thread; retries with backoff inside the caller's
 * deadline; credentials only ever in request headers. */
#define _GNU_SOURCE
#include "daytona_http.h"
#include "backoff.h"
#include "http_body.h"
#include "monotonic_ms.h"
#include "xprintf.h"

#include <ctype.h>
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_ATTEMPTS 6
#define DEFAULT_CALL_MS 60000
#define DEFAULT_BODY_MAX (64u << 20)
#define RETRY_AFTER_CAP_MS 60000
#define BACKOFF_FIRST_MS 200
#define BACKOFF_CAP_MS 5000
#define MESSAGE_MAX 300 /* characters of a raw error body quoted */

struct daytona_http {
  char *api_url;         /* no trailing slash */
  char *auth_header;     /* "Authorization: Bearer ..." */
  char *org_header;      /* "X-Daytona-Organization-ID: ...", or NULL */
  char *secret;          /* the key or JWT: scrubbed out of error text */
  char *source;          /* the variable(s) to name in credential errors */
  bool jwt;
  CURL *curl;            /* kept: its connections are reused */
  unsigned seed;         /* jitter */
};

static void
free_secret (char *s)
{
  if (s)
    {
      explicit_bzero (s, strlen (s));
      free (s);
    }
}

void
daytona_http_free (struct daytona_http *h)
{
  if (!h)
    return;
  if (h->curl)
    curl_easy_cleanup (h->curl);
  free (h->api_url);
  free_secret (h->auth_header);
  free_secret (h->org_header);
  free_secret (h->secret);
  free (h->source);
  free (h);
}

struct daytona_http *
daytona_http_new (const char *api_url, const struct daytona_auth *auth)
{
  struct daytona_http *h = calloc (1, sizeof *h);
  if (!h)
    return NULL;
  size_t n = strlen (api_url);
  while (n && api_url[n - 1] == '/')
    n--;
  h->api_url = strndup (api_url, n);
  h->jwt = !(auth->api_key && *auth->api_key) && auth->jwt;
  const char *token = h->jwt ? auth->jwt : auth->api_key ? auth->api_key : "";
  h->secret = strdup (token);
  h->auth_header = xprintf ("Authorization: Bearer %s", token);
  if (h->jwt && auth->organization_id)
    h->org_header = xprintf ("X-Daytona-Organization-ID: %s", auth->organization_id);
  h->source = strdup (auth->source ? auth->source
                      : h->jwt ? "DAYTONA_JWT_TOKEN" : "DAYTONA_API_KEY");
  h->seed = (unsigned) monotonic_ms () ^ (unsigned) getpid () ^ (unsigned) (uintptr_t) h;
  if (!h->api_url || !h->secret || !h->auth_header || !h->source
      || (h->jwt && auth->organization_id && !h->org_header))
    {
      daytona_http_free (h);
      return NULL;
    }
  return h;
}

/* ---- small pieces ---- */

char *
daytona_http_escape (const char *s)
{
  static const char hex[] = "0123456789ABCDEF";
  char *out = malloc (strlen (s) * 3 + 1), *o = out;
  if (!out)
    return NULL;
  for (const unsigned char *p = (const unsigned char *) s; *p; p++)
    if (isalnum (*p) || *p == '-' || *p == '.' || *p == '_' || *p == '~')
      *o++ = (char) *p;
    else
      {
        *o++ = '%';
        *o++ = hex[*p >> 4];
        *o++ = hex[*p & 15];
      }
  *o = '\0';
  return out;
}

long long
daytona_retry_after_ms (const char *value, time_t now)
{
  if (!value)
    return -1;
  while (*value == ' ' || *value == '\t')
    value++;
  long long ms;
  if (isdigit ((unsigned char) *value))
    {
      char *end;
      errno = 0;
      unsigned long long s = strtoull (value, &end, 10);
      while (*end == ' ' || *end == '\t' || *end == '\r' || *end == '\n')
        end++;
      if (*end || errno)
        return -1;
      ms = s > RETRY_AFTER_CAP_MS / 1000 ? RETRY_AFTER_CAP_MS : (long long) s * 1000;
    }
  else
    {
      time_t t = curl_getdate (value, NULL);
      if (t == (time_t) -1)
        return -1;
      ms = t <= now ? 0 : (long long) (t - now) * 1000;
    }
  return ms > RETRY_AFTER_CAP_MS ? RETRY_AFTER_CAP_MS : ms;
}

unsigned
daytona_backoff_ms (unsigned attempt, unsigned *seed)
{
  return backoff_ms (attempt, BACKOFF_FIRST_MS, BACKOFF_CAP_MS, seed);
}

/* The URL without its query (the values may name anything), for text. */
static char *
url_for_text (const char *url)
{
  size_t n = strcspn (url, "?#");
  return strndup (url, n);
}

/* The path part, for log lines: method + path, nothing else. */
static const char *
path_of (const char *url)
{
  const char *p = strstr (url, "://");
  p = p ? strchr (p + 3, '/') : url;
  return p ? p : "/";
}

/* Sleep ms, in slices, giving up early on cancel. */
static void
nap (uint64_t ms, const volatile int *cancel)
{
  uint64_t end = (uint64_t) monotonic_ms () + ms;
  for (;;)
    {
      uint64_t now = (uint64_t) monotonic_ms ();
      if (now >= end || (cancel && *cancel))
        return;
      uint64_t slice = end - now > 50 ? 50 : end - now;
      struct timespec ts = { 0, (long) slice * 1000000L };
      nanosleep (&ts, NULL);
    }
}

/* ---- one call ---- */

struct attempt {
  struct http_body mem;       /* the body, or an error answer's body */
  int fd;                     /* body_path's file, or -1 */
  bool to_file;
  bool file_failed;
  CURL *curl;
  char *retry_after;          /* the header's value */
  const volatile int *cancel;
};

static size_t
on_body (char *data, size_t size, size_t n, void *userdata)
{
  struct attempt *a = userdata;
  if (a->fd >= 0)
    {
      /* Only a successful answer goes to the file: an error's body is
       * read as the error's message. */
      long status = 0;
      curl_easy_getinfo (a->curl, CURLINFO_RESPONSE_CODE, &status);
      if (status >= 200 && status < 300)
        {
          size_t total = size * n;
          for (size_t off = 0; off < total;)
            {
              ssize_t w = write (a->fd, data + off, total - off);
              if (w < 0 && errno == EINTR)
                continue;
              if (w <= 0)
                {
                  a->file_failed = true;
                  return 0;
                }
              off += (size_t) w;
            }
          a->to_file = true;
          return total;
        }
    }
  return http_body_write (data, size, n, &a->mem);
}

static size_t
on_header (char *data, size_t size, size_t n, void *userdata)
{
  struct attempt *a = userdata;
  size_t total = size * n;
  if (total > 12 && !strncasecmp (data, "Retry-After:", 12))
    {
      free (a->retry_after);
      a->retry_after = strndup (data + 12, total - 12);
    }
  return total;
}

static int
on_progress (void *userdata, curl_off_t dt, curl_off_t dn, curl_off_t ut,
             curl_off_t un)
{
  (void) dt, (void) dn, (void) ut, (void) un;
  struct attempt *a = userdata;
  return a->cancel && *a->cancel;
}

/* A transport failure after which it is certain that the server did not
 * get the request: safe to repeat even a call that is not idempotent. */
static bool
nothing_sent (CURL *c, CURLcode rc)
{
  if (rc == CURLE_COULDNT_CONNECT || rc == CURLE_COULDNT_RESOLVE_HOST
      || rc == CURLE_COULDNT_RESOLVE_PROXY)
    return true;
  long sent = 0;
  curl_easy_getinfo (c, CURLINFO_REQUEST_SIZE, &sent);
  return sent == 0 && rc != CURLE_OK;
}

static bool
transient (CURLcode rc)
{
  switch (rc)
    {
    case CURLE_COULDNT_CONNECT:
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_PARTIAL_FILE:
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
      return true;
    default:
      return false;
    }
}

void
daytona_http_header_lines (const struct daytona_http *h, const char *out[4])
{
  size_t n = 0;
  out[n++] = h->auth_header;
  if (h->org_header)
    out[n++] = h->org_header;
  out[n++] = "X-Daytona-Source: airlock";
  out[n] = NULL;
}

static struct curl_slist *
request_headers (struct daytona_http *h, const struct daytona_request *rq)
{
  struct curl_slist *l = NULL, *n;
#define ADD(s)                                                                 \
  do                                                                           \
    {                                                                          \
      if (!(n = curl_slist_append (l, (s))))                                   \
        goto oom;                                                              \
      l = n;                                                                   \
    }                                                                          \
  while (0)
  const char *lines[4];
  daytona_http_header_lines (h, lines);
  for (const char **x = lines; *x; x++)
    ADD (*x);
  if (rq->json)
    ADD ("Content-Type: application/json");
  ADD ("Expect:"); /* no 100-continue round trip */
  for (const char *const *x = rq->headers; x && *x; x++)
    ADD (*x);
  return l;
#undef ADD
oom:
  curl_slist_free_all (l);
  return NULL;
}

static curl_mime *
request_mime (CURL *c, const struct daytona_request *rq)
{
  curl_mime *m = curl_mime_init (c);
  for (size_t i = 0; m && i < rq->nparts; i++)
    {
      const struct daytona_part *p = &rq->parts[i];
      curl_mimepart *part = curl_mime_addpart (m);
      if (!part || curl_mime_name (part, p->name) != CURLE_OK
          || (p->value && curl_mime_data (part, p->value, CURL_ZERO_TERMINATED) != CURLE_OK)
          || (p->file_path && curl_mime_filedata (part, p->file_path) != CURLE_OK)
          || (p->file_path && curl_mime_filename (part, p->filename ? p->filename : "file")
              != CURLE_OK))
        {
          curl_mime_free (m);
          return NULL;
        }
    }
  return m;
}

/* Replace every copy of the secret in s (a server could echo it). */
static void
scrub (const struct daytona_http *h, char *s)
{
  size_t n = h->secret ? strlen (h->secret) : 0;
  if (!s || n < 4)
    return;
  for (char *p; (p = strstr (s, h->secret));)
    {
      static const char mark[] = "<redacted>";
      size_t m = n < sizeof mark - 1 ? n : sizeof mark - 1;
      memcpy (p, mark, m);
      memmove (p + m, p + n, strlen (p + n) + 1);
    }
}

int
daytona_call (struct daytona_http *h, const struct daytona_request *rq,
              struct daytona_reply *reply, char **err)
{
  *reply = (struct daytona_reply){ 0 };
  uint64_t start = (uint64_t) monotonic_ms ();
  uint64_t deadline = rq->deadline_ms ? rq->deadline_ms : start + DEFAULT_CALL_MS;
  bool absolute = !strncmp (rq->url, "http://", 7) || !strncmp (rq->url, "https://", 8);
  char *url = absolute ? strdup (rq->url) : xprintf ("%s%s", h->api_url, rq->url);
  char *shown = url ? url_for_text (url) : NULL;
  char *body = rq->json ? cJSON_PrintUnformatted (rq->json) : NULL;
  struct curl_slist *headers = request_headers (h, rq);
  struct attempt a = { .fd = -1, .cancel = rq->cancel,
                       .mem.max = rq->max_body ? rq->max_body : DEFAULT_BODY_MAX };
  curl_mime *mime = NULL;
  char *last = NULL; /* why the last attempt failed */
  bool answered = false;
  int rc = -1;
  if (!h->curl)
    h->curl = curl_easy_init ();
  if (!url || !shown || (rq->json && !body) || !headers || !h->curl)
    {
      *err = xprintf ("out of memory");
      goto out;
    }
  if (rq->body_path
      && (a.fd = open (rq->body_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW,
                       0600)) < 0)
    {
      *err = xprintf ("cannot create %s for the answer of %s %s: %s", rq->body_path,
                      rq->method, shown, strerror (errno));
      goto out;
    }
  CURL *c = h->curl;
  a.curl = c;
  for (;;)
    {
      if (rq->cancel && *rq->cancel)
        {
          free (last);
          last = xprintf ("cancelled");
          break;
        }
      uint64_t now = (uint64_t) monotonic_ms ();
      if (now >= deadline)
        {
          if (!last)
            last = xprintf ("no time left before the deadline");
          break;
        }
      reply->attempts++;
      http_body_reset (&a.mem);
      a.to_file = a.file_failed = false;
      free (a.retry_after);
      a.retry_after = NULL;
      if (a.fd >= 0 && (ftruncate (a.fd, 0) < 0 || lseek (a.fd, 0, SEEK_SET) < 0))
        {
          *err = xprintf ("cannot rewrite %s: %s", rq->body_path, strerror (errno));
          goto out;
        }
      char errbuf[CURL_ERROR_SIZE] = "";
      curl_easy_reset (c);
      curl_easy_setopt (c, CURLOPT_URL, url);
      curl_easy_setopt (c, CURLOPT_CUSTOMREQUEST, rq->method);
      curl_easy_setopt (c, CURLOPT_HTTPHEADER, headers);
      curl_easy_setopt (c, CURLOPT_ERRORBUFFER, errbuf);
      curl_easy_setopt (c, CURLOPT_NOSIGNAL, 1L);
      curl_easy_setopt (c, CURLOPT_CONNECTTIMEOUT_MS,
                        (long) (deadline - now < 10000 ? deadline - now : 10000));
      curl_easy_setopt (c, CURLOPT_TIMEOUT_MS, (long) (deadline - now));
      curl_easy_setopt (c, CURLOPT_TCP_KEEPALIVE, 1L);
      curl_easy_setopt (c, CURLOPT_HTTP_VERSION, (long) CURL_HTTP_VERSION_1_1);
      curl_easy_setopt (c, CURLOPT_PROTOCOLS_STR, "http,https");
      curl_easy_setopt (c, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
      curl_easy_setopt (c, CURLOPT_WRITEFUNCTION, on_body);
      curl_easy_setopt (c, CURLOPT_WRITEDATA, &a);
      curl_easy_setopt (c, CURLOPT_HEADERFUNCTION, on_header);
      curl_easy_setopt (c, CURLOPT_HEADERDATA, &a);
      curl_easy_setopt (c, CURLOPT_XFERINFOFUNCTION, on_progress);
      curl_easy_setopt (c, CURLOPT_XFERINFODATA, &a);
      curl_easy_setopt (c, CURLOPT_NOPROGRESS, 0L);
      /* libcurl sends a request again by itself when a reused connection
       * turns out closed: never one that must not run twice. */
      if (rq->not_idempotent)
        curl_easy_setopt (c, CURLOPT_FRESH_CONNECT, 1L);
      /* A multipart body anew for each attempt: libcurl does not read a
       * file part again from its start after a reset (the retry of an
       * upload sent its headers and no body, and hung). */
      if (rq->parts)
        {
          curl_mime_free (mime);
          if (!(mime = request_mime (c, rq)))
            {
              *err = xprintf ("out of memory");
              goto out;
            }
        }
      if (mime)
        curl_easy_setopt (c, CURLOPT_MIMEPOST, mime);
      else if (body)
        {
          curl_easy_setopt (c, CURLOPT_POSTFIELDS, body);
          curl_easy_setopt (c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t) strlen (body));
        }
      else if (!strcmp (rq->method, "POST") || !strcmp (rq->method, "PUT"))
        {
          curl_easy_setopt (c, CURLOPT_POSTFIELDS, "");
          curl_easy_setopt (c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t) 0);
        }
      CURLcode cr = curl_easy_perform (c);
      unsigned wait_ms = daytona_backoff_ms (reply->attempts, &h->seed);
      bool retry = false;
      answered = false;
      free (last);
      last = NULL;
      if (cr != CURLE_OK)
        {
          if (a.mem.too_big)
            {
              *err = xprintf ("the answer to %s %s is over %zu MiB", rq->method, shown,
                              a.mem.max >> 20);
              goto out;
            }
          if (a.file_failed)
            {
              *err = xprintf ("cannot write the answer of %s %s to %s: %s", rq->method,
                              shown, rq->body_path, strerror (errno));
              goto out;
            }
          last = strdup (cr == CURLE_ABORTED_BY_CALLBACK ? "cancelled"
                         : *errbuf ? errbuf : curl_easy_strerror (cr));
          retry = transient (cr) && (!rq->not_idempotent || nothing_sent (c, cr));
        }
      else
        {
          answered = true;
          curl_easy_getinfo (c, CURLINFO_RESPONSE_CODE, &reply->status);
          long st = reply->status;
          if (st == 429)
            {
              /* A throttled request was refused before anything was done:
               * safe to repeat, created or not. */
              long long ra = daytona_retry_after_ms (a.retry_after, time (NULL));
              if (ra >= 0)
                wait_ms = (unsigned) ra;
              retry = true;
            }
          else if ((st == 502 || st == 503 || st == 504) && !rq->not_idempotent)
            retry = true;
          last = xprintf ("HTTP %ld", st);
        }
      if (!retry || reply->attempts >= MAX_ATTEMPTS
          || (uint64_t) monotonic_ms () + wait_ms >= deadline)
        break;
      fprintf (stderr, "airlock daemon: daytona: %s %s: %s; retrying in %u ms\n",
               rq->method, path_of (shown), last ? last : "failed", wait_ms);
      nap (wait_ms, rq->cancel);
    }
  if (answered)
    {
      /* an answer, perhaps still an error status after the retries */
      reply->body = a.mem.buf ? a.mem.buf : strdup ("");
      a.mem.buf = NULL;
      if (!reply->body)
        {
          *err = xprintf ("out of memory");
          goto out;
        }
      reply->len = a.to_file ? 0 : a.mem.len;
      if (!a.to_file)
        reply->json = cJSON_ParseWithLength (reply->body, reply->len);
      rc = 0;
      goto out;
    }
  {
    uint64_t secs = ((uint64_t) monotonic_ms () - start + 500) / 1000;
    *err = xprintf ("cannot reach Daytona at %s: %s (%u attempt%s in %llu s)", shown,
                    last ? last : "no answer", reply->attempts,
                    reply->attempts == 1 ? "" : "s", (unsigned long long) secs);
    if (*err)
      scrub (h, *err);
    reply->status = 0;
  }
out:
  if (a.fd >= 0)
    close (a.fd);
  if (rc < 0 && rq->body_path && a.fd >= 0)
    unlink (rq->body_path);
  free (a.mem.buf);
  free (a.retry_after);
  free (last);
  curl_mime_free (mime);
  curl_slist_free_all (headers);
  if (h->curl)
    curl_easy_reset (h->curl); /* drops its pointers to what is freed here */
  free (body);
  free (shown);
  free (url);
  return rc;
}

void
daytona_reply_free (struct daytona_reply *r)
{
  cJSON_Delete (r->json);
  free (r->body);
  *r = (struct daytona_reply){ 0 };
}

const char *
daytona_reply_message (struct daytona_reply *r)
{
  const cJSON *m = cJSON_GetObjectItemCaseSensitive (r->json, "message");
  if (cJSON_IsString (m) && *m->valuestring)
    return m->valuestring;
  if (cJSON_IsArray (m) && r->body)
    {
      /* A validation error's list, joined: shorter than the JSON text it
       * came from, so it fits in the body's buffer. */
      size_t n = 0;
      const cJSON *item;
      cJSON_ArrayForEach (item, m)
        if (cJSON_IsString (item) && n + strlen (item->valuestring) + 3 < r->len)
          n += (size_t) sprintf (r->body + n, "%s%s", n ? ", " : "", item->valuestring);
      if (n)
        return r->body;
    }
  const cJSON *e = cJSON_GetObjectItemCaseSensitive (r->json, "error");
  if (cJSON_IsString (e) && *e->valuestring)
    return e->valuestring;
  if (r->body && *r->body && !r->json)
    {
      size_t n = strlen (r->body);
      if (n > MESSAGE_MAX)
        {
          n = MESSAGE_MAX - 3;
          while (n && ((unsigned char) r->body[n] & 0xC0) == 0x80)
            n--;
          memcpy (r->body + n, "...", 4);
          n += 3;
        }
      while (n && isspace ((unsigned char) r->body[n - 1]))
        r->body[--n] = '\0';
      for (char *p = r->body; *p; p++)
        if (iscntrl ((unsigned char) *p))
          *p = ' ';
      if (n)
        return r->body;
    }
  static __thread char buf[32];
  snprintf (buf, sizeof buf, "HTTP %ld", r->status);
  return buf;
}

char *
daytona_error_text (const struct daytona_http *h, struct daytona_reply *r,
                    const char *what)
{
  const char *m = daytona_reply_message (r);
  long st = r->status;
  const char *cred = h->jwt ? "DAYTONA_JWT_TOKEN and DAYTONA_ORGANIZATION_ID" : h->source;
  char *t;
  if (st == 401)
    t = xprintf ("%s: Daytona did not accept the credentials from %s (HTTP 401: %s): "
                 "set %s to a valid API key (create one at "
                 "https://app.daytona.io/dashboard/keys)",
                 what, cred, m, h->jwt ? "DAYTONA_API_KEY" : h->source);
  else if (st == 403)
    t = xprintf ("%s: the credentials from %s may not do this (HTTP 403: %s): use a "
                 "key with the sandbox permissions (write:sandboxes, "
                 "delete:sandboxes) of the right organization",
                 what, cred, m);
  else if (st == 404)
    t = xprintf ("%s: it does not exist (HTTP 404: %s)", what, m);
  else if (st == 408)
    t = xprintf ("%s: timed out on the server (HTTP 408: %s)", what, m);
  else if (st == 409)
    t = xprintf ("%s: conflicts with the current state (HTTP 409: %s)", what, m);
  else if (st == 429)
    t = xprintf ("%s: Daytona is rate-limiting this account (HTTP 429: %s), even "
                 "after waiting as it asked; try again later",
                 what, m);
  else if (st >= 500)
    t = xprintf ("%s: Daytona's server failed (HTTP %ld: %s)%s", what, st, m,
                 st >= 502 && st <= 504 ? " after retries; try again later" : "");
  else
    t = xprintf ("%s: HTTP %ld: %s", what, st, m);
  if (t)
    scrub (h, t);
  return t;
}
