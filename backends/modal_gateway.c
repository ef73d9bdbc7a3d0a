/* SPDX-License-Identifier: MIT */
/* The managed Modal gateway client (see modal_gateway.h): one libcurl
 * easy handle a struct, retries with backoff inside the caller's
 * deadline, the token only ever in a request header. */
#define _GNU_SOURCE
#include "modal_gateway.h"
#include "backoff.h"
#include "http_body.h"
#include "monotonic_ms.h"
#include "random_id.h"
#include "xprintf.h"

#include <ctype.h>
#include <curl/curl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_ATTEMPTS 6
#define DEFAULT_CALL_MS 60000
#define BODY_MAX (64u << 20)
#define RETRY_AFTER_CAP_MS 60000
#define BACKOFF_FIRST_MS 200
#define BACKOFF_CAP_MS 5000
#define MESSAGE_MAX 300
#define CREATE_MS 180000 /* a sandbox may take a while to boot */
#define SHORT_MS 30000
#define POLL_LIMIT (4u << 20) /* output bytes asked for at most per poll */

struct modal_gateway {
  char *origin;       /* no trailing slash */
  char *auth_header;  /* "Authorization: Bearer ..." */
  char *secret;       /* the token: scrubbed out of any text */
  CURL *curl;
  unsigned seed;
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
modal_gateway_free (struct modal_gateway *g)
{
  if (!g)
    return;
  if (g->curl)
    curl_easy_cleanup (g->curl);
  free (g->origin);
  free_secret (g->auth_header);
  free_secret (g->secret);
  free (g);
}

struct modal_gateway *
modal_gateway_new (const char *url, const char *token)
{
  struct modal_gateway *g = calloc (1, sizeof *g);
  if (!g)
    return NULL;
  if (!url || !*url)
    url = getenv ("MODAL_GATEWAY_URL");
  if (!url || !*url)
    url = MODAL_GATEWAY_DEFAULT_URL;
  size_t n = strlen (url);
  while (n && url[n - 1] == '/')
    n--;
  g->origin = strndup (url, n);
  g->secret = strdup (token ? token : "");
  g->auth_header = xprintf ("Authorization: Bearer %s", token ? token : "");
  g->seed = (unsigned) monotonic_ms () ^ (unsigned) getpid () ^ (unsigned) (uintptr_t) g;
  if (!g->origin || !g->secret || !g->auth_header)
    {
      modal_gateway_free (g);
      return NULL;
    }
  return g;
}

const char *
modal_gateway_origin (const struct modal_gateway *g)
{
  return g->origin;
}

void
modal_gateway_uuid (char buf[37])
{
  random_uuid (buf);
}

/* ---- one call ---- */

/* A Retry-After value (delta seconds or an HTTP date) in ms, capped; -1
 * when it is neither. */
static long long
retry_after_ms (const char *v)
{
  if (!v)
    return -1;
  while (*v == ' ' || *v == '\t')
    v++;
  long long ms;
  if (isdigit ((unsigned char) *v))
    {
      char *end;
      errno = 0;
      unsigned long long s = strtoull (v, &end, 10);
      while (isspace ((unsigned char) *end))
        end++;
      if (*end || errno)
        return -1;
      ms = s > RETRY_AFTER_CAP_MS / 1000 ? RETRY_AFTER_CAP_MS : (long long) s * 1000;
    }
  else
    {
      time_t t = curl_getdate (v, NULL), now = time (NULL);
      if (t == (time_t) -1)
        return -1;
      ms = t <= now ? 0 : (long long) (t - now) * 1000;
    }
  return ms > RETRY_AFTER_CAP_MS ? RETRY_AFTER_CAP_MS : ms;
}

struct attempt {
  struct http_body mem;
  char *retry_after;
  const volatile int *cancel;
};

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
on_progress (void *userdata, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
  (void) dt, (void) dn, (void) ut, (void) un;
  struct attempt *a = userdata;
  return a->cancel && *a->cancel;
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

/* Every copy of the token in s replaced (a server could echo it). */
static void
scrub (const struct modal_gateway *g, char *s)
{
  size_t n = g->secret ? strlen (g->secret) : 0;
  if (!s || n < 4)
    return;
  for (char *p; (p = strstr (s, g->secret));)
    {
      static const char mark[] = "<redacted>";
      size_t m = n < sizeof mark - 1 ? n : sizeof mark - 1;
      memcpy (p, mark, m);
      memmove (p + m, p + n, strlen (p + n) + 1);
    }
}

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

static struct curl_slist *
request_headers (const struct modal_gateway *g, bool json, const char *key)
{
  struct curl_slist *l = NULL, *n;
  char *idem = key ? xprintf ("x-idempotency-key: %s", key) : NULL;
  const char *lines[] = { g->auth_header, "Accept: application/json", "Expect:",
                          json ? "Content-Type: application/json" : NULL, idem };
  for (size_t i = 0; i < sizeof lines / sizeof *lines; i++)
    if (lines[i])
      {
        if (!(n = curl_slist_append (l, lines[i])))
          {
            curl_slist_free_all (l);
            free (idem);
            return NULL;
          }
        l = n;
      }
  if (key && !idem)
    {
      curl_slist_free_all (l);
      l = NULL;
    }
  free (idem);
  return l;
}

/* One attempt's options on the (reset) handle. */
static void
set_options (CURL *c, const char *url, const char *method, struct curl_slist *headers,
             const char *body, char *errbuf, uint64_t left, struct attempt *a)
{
  curl_easy_reset (c);
  curl_easy_setopt (c, CURLOPT_URL, url);
  curl_easy_setopt (c, CURLOPT_CUSTOMREQUEST, method);
  curl_easy_setopt (c, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt (c, CURLOPT_ERRORBUFFER, errbuf);
  curl_easy_setopt (c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt (c, CURLOPT_CONNECTTIMEOUT_MS, (long) (left < 10000 ? left : 10000));
  curl_easy_setopt (c, CURLOPT_TIMEOUT_MS, (long) left);
  curl_easy_setopt (c, CURLOPT_TCP_KEEPALIVE, 1L);
  curl_easy_setopt (c, CURLOPT_HTTP_VERSION, (long) CURL_HTTP_VERSION_1_1);
  curl_easy_setopt (c, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt (c, CURLOPT_WRITEFUNCTION, http_body_write);
  curl_easy_setopt (c, CURLOPT_WRITEDATA, &a->mem);
  curl_easy_setopt (c, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt (c, CURLOPT_HEADERDATA, a);
  curl_easy_setopt (c, CURLOPT_XFERINFOFUNCTION, on_progress);
  curl_easy_setopt (c, CURLOPT_XFERINFODATA, a);
  curl_easy_setopt (c, CURLOPT_NOPROGRESS, 0L);
  if (body || !strcmp (method, "POST"))
    {
      curl_easy_setopt (c, CURLOPT_POSTFIELDS, body ? body : "");
      curl_easy_setopt (c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t) (body ? strlen (body) : 0));
    }
}

int
modal_gateway_call (struct modal_gateway *g, const char *method, const char *path,
                    const cJSON *json, const char *key, uint64_t deadline_ms,
                    const volatile int *cancel, struct modal_gateway_reply *r, char **err)
{
  *r = (struct modal_gateway_reply){ 0 };
  uint64_t start = (uint64_t) monotonic_ms ();
  uint64_t deadline = deadline_ms ? deadline_ms : start + DEFAULT_CALL_MS;
  char *url = xprintf ("%s%s", g->origin, path);
  size_t plen = strcspn (path, "?");
  char *body = json ? cJSON_PrintUnformatted (json) : NULL;
  struct curl_slist *headers = request_headers (g, json != NULL, key);
  struct attempt a = { .cancel = cancel, .mem.max = BODY_MAX };
  char *last = NULL;
  bool answered = false;
  int rc = -1;
  if (!g->curl)
    g->curl = curl_easy_init ();
  if (!url || (json && !body) || !headers || !g->curl)
    {
      *err = xprintf ("out of memory");
      goto out;
    }
  for (;;)
    {
      uint64_t now = (uint64_t) monotonic_ms ();
      if ((cancel && *cancel) || now >= deadline)
        {
          if (!last || (cancel && *cancel))
            {
              free (last);
              last = strdup (cancel && *cancel ? "cancelled" : "no time left before the deadline");
            }
          break;
        }
      r->attempts++;
      http_body_reset (&a.mem);
      free (a.retry_after);
      a.retry_after = NULL;
      char errbuf[CURL_ERROR_SIZE] = "";
      set_options (g->curl, url, method, headers, body, errbuf, deadline - now, &a);
      CURLcode cr = curl_easy_perform (g->curl);
      unsigned wait_ms = backoff_ms (r->attempts, BACKOFF_FIRST_MS, BACKOFF_CAP_MS, &g->seed);
      bool retry = false;
      answered = false;
      free (last);
      last = NULL;
      if (cr != CURLE_OK)
        {
          if (a.mem.too_big)
            {
              *err = xprintf ("the modal gateway's answer to %s %.*s is over %u MiB", method,
                              (int) plen, path, BODY_MAX >> 20);
              goto out;
            }
          last = strdup (cr == CURLE_ABORTED_BY_CALLBACK ? "cancelled"
                         : *errbuf ? errbuf : curl_easy_strerror (cr));
          retry = transient (cr);
        }
      else
        {
          answered = true;
          curl_easy_getinfo (g->curl, CURLINFO_RESPONSE_CODE, &r->status);
          long st = r->status;
          if (st == 429)
            {
              /* A rate limit: wait as asked (or back off).  A quota's
               * 429 is an answer: it does not pass by waiting. */
              long long ra = retry_after_ms (a.retry_after);
              cJSON *j = cJSON_ParseWithLength (a.mem.buf ? a.mem.buf : "", a.mem.len);
              const cJSON *code = cJSON_GetObjectItemCaseSensitive (j, "code");
              retry = !(cJSON_IsString (code) && !strcmp (code->valuestring, "quota_exceeded"));
              cJSON_Delete (j);
              if (ra >= 0)
                wait_ms = (unsigned) ra;
            }
          else if (st == 502 || st == 503 || st == 504)
            retry = true;
          last = xprintf ("HTTP %ld", st);
        }
      if (!retry || r->attempts >= MAX_ATTEMPTS
          || (uint64_t) monotonic_ms () + wait_ms >= deadline)
        break;
      fprintf (stderr, "airlock daemon: modal gateway: %s %.*s: %s; retrying in %u ms\n",
               method, (int) plen, path, last ? last : "failed", wait_ms);
      nap (wait_ms, cancel);
    }
  if (answered)
    {
      r->body = a.mem.buf ? a.mem.buf : strdup ("");
      a.mem.buf = NULL;
      if (!r->body)
        {
          *err = xprintf ("out of memory");
          goto out;
        }
      r->len = a.mem.len;
      r->json = cJSON_ParseWithLength (r->body, r->len);
      rc = 0;
      goto out;
    }
  {
    uint64_t secs = ((uint64_t) monotonic_ms () - start + 500) / 1000;
    *err = xprintf ("cannot reach the modal gateway at %s: %s (%u attempt%s in %llu s)",
                    g->origin, last ? last : "no answer", r->attempts,
                    r->attempts == 1 ? "" : "s", (unsigned long long) secs);
    scrub (g, *err);
    r->status = 0;
  }
out:
  free (a.mem.buf);
  free (a.retry_after);
  free (last);
  curl_slist_free_all (headers);
  if (g->curl)
    curl_easy_reset (g->curl);
  free (body);
  free (url);
  return rc;
}

void
modal_gateway_reply_free (struct modal_gateway_reply *r)
{
  cJSON_Delete (r->json);
  free (r->body);
  *r = (struct modal_gateway_reply){ 0 };
}

static const char *
field_text (const struct modal_gateway_reply *r, const char *name)
{
  const cJSON *v = cJSON_GetObjectItemCaseSensitive (r->json, name);
  return cJSON_IsString (v) && *v->valuestring ? v->valuestring : NULL;
}

const char *
modal_gateway_reply_code (const struct modal_gateway_reply *r)
{
  const char *c = field_text (r, "code");
  return c ? c : "";
}

bool
modal_gateway_sandbox_gone (const struct modal_gateway_reply *r)
{
  const char *c = modal_gateway_reply_code (r);
  return (r->status == 404 || r->status == 410)
         && (!strcmp (c, "sandbox_terminated") || !strcmp (c, "sandbox_not_found"));
}

/* The server's words: "error", else "message", else "code", else the
 * body cut short (one line), else "HTTP NNN".  malloc'd. */
static char *
reply_message (const struct modal_gateway_reply *r)
{
  const char *m = field_text (r, "error");
  if (!m)
    m = field_text (r, "message");
  if (!m)
    m = field_text (r, "code");
  if (m)
    return strndup (m, MESSAGE_MAX);
  if (r->body && *r->body && !r->json)
    {
      char *t = strndup (r->body, MESSAGE_MAX);
      for (char *p = t; p && *p; p++)
        if (iscntrl ((unsigned char) *p))
          *p = ' ';
      return t;
    }
  return xprintf ("HTTP %ld", r->status);
}

char *
modal_gateway_error_text (const struct modal_gateway *g, const struct modal_gateway_reply *r,
                          const char *what)
{
  char *m = reply_message (r);
  const char *code = modal_gateway_reply_code (r);
  long st = r->status;
  const char *msg = m ? m : "?";
  char *t;
  if (st == 401)
    t = xprintf ("%s: the modal gateway at %s did not accept the token from "
                 MODAL_GATEWAY_TOKEN_ENV " (HTTP 401: %s): set " MODAL_GATEWAY_TOKEN_ENV
                 " to a valid, current tool gateway token (log in to the Nous portal again)",
                 what, g->origin, msg);
  else if (st == 403 && !strcmp (code, "not_entitled"))
    t = xprintf ("%s: this account has no managed Modal entitlement on the tool gateway "
                 "(HTTP 403: %s): use modal.mode direct with your own Modal credentials",
                 what, msg);
  else if (!strcmp (code, "quota_exceeded"))
    t = xprintf ("%s: the account's sandbox quota on the modal gateway is used up (HTTP %ld: "
                 "%s): close another session and try again", what, st, msg);
  else if (st == 403)
    t = xprintf ("%s: the modal gateway refused it (HTTP 403: %s)", what, msg);
  else if (modal_gateway_sandbox_gone (r))
    t = xprintf ("%s: the Modal sandbox is gone (HTTP 404: %s); it is never re-created: "
                 "close the session and open a new one", what, msg);
  else if (st == 404)
    t = xprintf ("%s: not found on the modal gateway (HTTP 404: %s)", what, msg);
  else if (st == 429)
    t = xprintf ("%s: the modal gateway is rate-limiting this account (HTTP 429: %s), even "
                 "after waiting as it asked; try again later", what, msg);
  else if (st >= 500)
    t = xprintf ("%s: the modal gateway failed (HTTP %ld: %s)%s", what, st, msg,
                 st >= 502 && st <= 504 ? " after retries; try again later" : "");
  else
    t = xprintf ("%s: the modal gateway answered HTTP %ld: %s", what, st, msg);
  free (m);
  if (t)
    scrub (g, t);
  return t;
}

/* ---- operations ---- */

int
modal_gateway_entitlement (struct modal_gateway *g, char **err)
{
  struct modal_gateway_reply r;
  if (modal_gateway_call (g, "GET", "/v1/entitlement", NULL, NULL,
                          (uint64_t) monotonic_ms () + SHORT_MS, NULL, &r, err) < 0)
    return -1;
  int rc = -1;
  const cJSON *m = cJSON_GetObjectItemCaseSensitive (r.json, "modal");
  if (r.status != 200)
    *err = modal_gateway_error_text (g, &r, "asking the modal gateway for the account's "
                                            "entitlement");
  else if (!cJSON_IsBool (m))
    *err = xprintf ("the modal gateway at %s did not say whether the account is entitled to "
                    "managed Modal (no boolean \"modal\" in its answer)", g->origin);
  else
    rc = cJSON_IsTrue (m) ? 1 : 0;
  modal_gateway_reply_free (&r);
  return rc;
}

int
modal_gateway_create (struct modal_gateway *g, const struct modal_gateway_sandbox_spec *spec,
                      const char *key, char **id, char **err)
{
  cJSON *b = cJSON_CreateObject ();
  bool ok = b && cJSON_AddStringToObject (b, "image", spec->image ? spec->image : "");
  if (ok && spec->cwd && *spec->cwd)
    ok = cJSON_AddStringToObject (b, "cwd", spec->cwd) != NULL;
  if (ok && spec->cpu_milli)
    ok = cJSON_AddNumberToObject (b, "cpu", spec->cpu_milli / 1000.0) != NULL;
  if (ok && spec->memory_mib)
    ok = cJSON_AddNumberToObject (b, "memoryMiB", spec->memory_mib) != NULL;
  if (ok && spec->timeout_s)
    ok = cJSON_AddNumberToObject (b, "timeoutMs", spec->timeout_s * 1000.0) != NULL;
  if (ok && spec->idle_timeout_s)
    ok = cJSON_AddNumberToObject (b, "idleTimeoutMs", spec->idle_timeout_s * 1000.0) != NULL;
  if (ok)
    ok = cJSON_AddBoolToObject (b, "persistentFilesystem", false) != NULL;
  if (!ok)
    {
      cJSON_Delete (b);
      *err = xprintf ("out of memory");
      return -1;
    }
  struct modal_gateway_reply r;
  int rc = modal_gateway_call (g, "POST", "/v1/sandboxes", b, key,
                               (uint64_t) monotonic_ms () + CREATE_MS, NULL, &r, err);
  cJSON_Delete (b);
  if (rc < 0)
    return -1;
  const char *sid = r.status == 200 ? field_text (&r, "id") : NULL;
  if (sid && !strpbrk (sid, "/?#%"))
    *id = strdup (sid);
  else if (r.status == 200)
    *err = xprintf ("the modal gateway created a sandbox but gave no usable id");
  else
    *err = modal_gateway_error_text (g, &r, "creating the Modal sandbox");
  rc = *id ? 0 : -1;
  modal_gateway_reply_free (&r);
  return rc;
}

int
modal_gateway_terminate (struct modal_gateway *g, const char *sandbox_id, bool snapshot,
                         char **err)
{
  cJSON *b = cJSON_CreateObject ();
  char *path = xprintf ("/v1/sandboxes/%s/terminate", sandbox_id);
  if (!b || !path || !cJSON_AddBoolToObject (b, "snapshotBeforeTerminate", snapshot))
    {
      cJSON_Delete (b);
      free (path);
      *err = xprintf ("out of memory");
      return -1;
    }
  struct modal_gateway_reply r;
  int rc = modal_gateway_call (g, "POST", path, b, NULL, (uint64_t) monotonic_ms () + CREATE_MS,
                               NULL, &r, err);
  cJSON_Delete (b);
  free (path);
  if (rc < 0)
    return -1;
  if (r.status != 200 && !modal_gateway_sandbox_gone (&r))
    {
      *err = modal_gateway_error_text (g, &r, "terminating the Modal sandbox");
      rc = -1;
    }
  modal_gateway_reply_free (&r);
  return rc;
}

void
modal_gateway_exec_clear (struct modal_gateway_exec *x)
{
  free (x->output);
  *x = (struct modal_gateway_exec){ 0 };
}

/* An exec object's answer into *x. */
static bool
parse_exec (const struct modal_gateway_reply *r, struct modal_gateway_exec *x)
{
  *x = (struct modal_gateway_exec){ 0 };
  const char *st = field_text (r, "status");
  if (!st)
    return false;
  snprintf (x->status, sizeof x->status, "%s", st);
  x->terminal = strcmp (st, "running") != 0 && strcmp (st, "pending") != 0
                && strcmp (st, "queued") != 0;
  const cJSON *rc = cJSON_GetObjectItemCaseSensitive (r->json, "returncode");
  x->returncode = cJSON_IsNumber (rc) ? rc->valueint
                  : !strcmp (st, "timeout") ? 124 : !strcmp (st, "cancelled") ? 130 : 1;
  x->output = modal_gateway_json_string_field (r->body, r->len, "output", &x->output_len);
  const cJSON *next = cJSON_GetObjectItemCaseSensitive (r->json, "nextOffset");
  if (cJSON_IsNumber (next) && next->valuedouble >= 0)
    {
      x->has_next = true;
      x->next_offset = (uint64_t) next->valuedouble;
    }
  const cJSON *total = cJSON_GetObjectItemCaseSensitive (r->json, "outputLength");
  if (cJSON_IsNumber (total) && total->valuedouble >= 0)
    x->output_length = (uint64_t) total->valuedouble;
  return true;
}

static enum modal_gateway_result
exec_call (struct modal_gateway *g, const char *method, const char *path, const cJSON *body,
           uint64_t deadline_ms, const volatile int *cancel, struct modal_gateway_exec *x,
           bool *gone, const char *what, char **err)
{
  struct modal_gateway_reply r;
  *gone = false;
  if (modal_gateway_call (g, method, path, body, NULL, deadline_ms, cancel, &r, err) < 0)
    return MG_UNREACHABLE;
  enum modal_gateway_result res = MG_OK;
  if (r.status != 200)
    {
      *gone = modal_gateway_sandbox_gone (&r);
      *err = modal_gateway_error_text (g, &r, what);
      res = MG_REFUSED;
    }
  else if (x && !parse_exec (&r, x))
    {
      *err = xprintf ("%s: the modal gateway's answer has no exec status", what);
      res = MG_REFUSED;
    }
  modal_gateway_reply_free (&r);
  return res;
}

enum modal_gateway_result
modal_gateway_exec_start (struct modal_gateway *g, const char *sandbox_id,
                          const struct modal_gateway_exec_request *rq, uint64_t deadline_ms,
                          const volatile int *cancel, struct modal_gateway_exec *x, bool *gone,
                          char **err)
{
  cJSON *b = cJSON_CreateObject ();
  char *path = xprintf ("/v1/sandboxes/%s/execs", sandbox_id);
  bool ok = b && path && cJSON_AddStringToObject (b, "execId", rq->exec_id)
            && cJSON_AddStringToObject (b, "command", rq->command);
  if (ok && rq->cwd)
    ok = cJSON_AddStringToObject (b, "cwd", rq->cwd) != NULL;
  if (ok && rq->timeout_ms)
    ok = cJSON_AddNumberToObject (b, "timeoutMs", (double) rq->timeout_ms) != NULL;
  if (ok && rq->stdin_data)
    ok = cJSON_AddStringToObject (b, "stdinData", rq->stdin_data) != NULL;
  enum modal_gateway_result res = MG_UNREACHABLE;
  *gone = false;
  if (!ok)
    *err = xprintf ("out of memory");
  else
    res = exec_call (g, "POST", path, b, deadline_ms, cancel, x, gone, "starting a command", err);
  cJSON_Delete (b);
  free (path);
  return res;
}

enum modal_gateway_result
modal_gateway_exec_poll (struct modal_gateway *g, const char *sandbox_id, const char *exec_id,
                         uint64_t offset, uint64_t deadline_ms, const volatile int *cancel,
                         struct modal_gateway_exec *x, bool *gone, char **err)
{
  /* limit: the double's too; a gateway without it sends all there is */
  char *path = xprintf ("/v1/sandboxes/%s/execs/%s?offset=%llu&limit=%u", sandbox_id, exec_id,
                        (unsigned long long) offset, POLL_LIMIT);
  *gone = false;
  if (!path)
    {
      *err = xprintf ("out of memory");
      return MG_UNREACHABLE;
    }
  enum modal_gateway_result res = exec_call (g, "GET", path, NULL, deadline_ms, cancel, x, gone,
                                             "reading a command's output", err);
  free (path);
  return res;
}

enum modal_gateway_result
modal_gateway_exec_cancel (struct modal_gateway *g, const char *sandbox_id, const char *exec_id,
                           uint64_t deadline_ms, const volatile int *cancel, bool *gone, char **err)
{
  char *path = xprintf ("/v1/sandboxes/%s/execs/%s/cancel", sandbox_id, exec_id);
  *gone = false;
  if (!path)
    {
      *err = xprintf ("out of memory");
      return MG_UNREACHABLE;
    }
  enum modal_gateway_result res = exec_call (g, "POST", path, NULL, deadline_ms, cancel, NULL,
                                             gone, "cancelling a command", err);
  free (path);
  return res;
}

/* ---- a JSON string with its NUL bytes ---- */

static const char *
skip_ws (const char *p, const char *end)
{
  while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
    p++;
  return p;
}

/* Past the string that starts at p (at its '"'); NULL if it does not end. */
static const char *
skip_string (const char *p, const char *end)
{
  for (p++; p < end; p++)
    if (*p == '\\')
      p++;
    else if (*p == '"')
      return p + 1;
  return NULL;
}

/* Past the value at p (any JSON value); NULL when malformed. */
static const char *
skip_value (const char *p, const char *end)
{
  if (p >= end)
    return NULL;
  if (*p == '"')
    return skip_string (p, end);
  if (*p == '{' || *p == '[')
    {
      int depth = 0;
      while (p < end)
        {
          if (*p == '"')
            {
              if (!(p = skip_string (p, end)))
                return NULL;
              continue;
            }
          if (*p == '{' || *p == '[')
            depth++;
          else if ((*p == '}' || *p == ']') && --depth == 0)
            return p + 1;
          p++;
        }
      return NULL;
    }
  while (p < end && *p != ',' && *p != '}' && *p != ']' && !isspace ((unsigned char) *p))
    p++;
  return p;
}

static int
hex4 (const char *p, const char *end)
{
  if (end - p < 4)
    return -1;
  int v = 0;
  for (int i = 0; i < 4; i++)
    {
      int c = (unsigned char) p[i];
      v = v * 16 + (isdigit (c) ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
                    : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1000000);
    }
  return v < 0 ? -1 : v;
}

static size_t
put_utf8 (char *o, unsigned cp)
{
  if (cp < 0x80)
    return (size_t) (o[0] = (char) cp, 1);
  if (cp < 0x800)
    {
      o[0] = (char) (0xC0 | cp >> 6);
      o[1] = (char) (0x80 | (cp & 0x3F));
      return 2;
    }
  if (cp < 0x10000)
    {
      o[0] = (char) (0xE0 | cp >> 12);
      o[1] = (char) (0x80 | ((cp >> 6) & 0x3F));
      o[2] = (char) (0x80 | (cp & 0x3F));
      return 3;
    }
  o[0] = (char) (0xF0 | cp >> 18);
  o[1] = (char) (0x80 | ((cp >> 12) & 0x3F));
  o[2] = (char) (0x80 | ((cp >> 6) & 0x3F));
  o[3] = (char) (0x80 | (cp & 0x3F));
  return 4;
}

/* The string at p (its '"') decoded; NULL when malformed. */
static char *
decode_string (const char *p, const char *end, size_t *out_len)
{
  char *out = malloc ((size_t) (end - p) + 4), *o = out;
  if (!out)
    return NULL;
  for (p++; p < end && *p != '"'; p++)
    {
      if (*p != '\\')
        {
          *o++ = *p;
          continue;
        }
      if (++p >= end)
        break;
      switch (*p)
        {
        case 'b': *o++ = '\b'; break;
        case 'f': *o++ = '\f'; break;
        case 'n': *o++ = '\n'; break;
        case 'r': *o++ = '\r'; break;
        case 't': *o++ = '\t'; break;
        case 'u':
          {
            int cp = hex4 (p + 1, end);
            if (cp < 0)
              goto bad;
            p += 4;
            if (cp >= 0xD800 && cp < 0xDC00 && end - p > 6 && p[1] == '\\' && p[2] == 'u')
              {
                int lo = hex4 (p + 3, end);
                if (lo >= 0xDC00 && lo < 0xE000)
                  {
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                    p += 6;
                  }
              }
            if (cp >= 0xD800 && cp < 0xE000)
              cp = 0xFFFD; /* a lone surrogate */
            o += put_utf8 (o, (unsigned) cp);
            break;
          }
        default: *o++ = *p; break; /* \" \\ \/ */
        }
    }
  if (p >= end)
    goto bad;
  *o = '\0';
  *out_len = (size_t) (o - out);
  return out;
bad:
  free (out);
  return NULL;
}

char *
modal_gateway_json_string_field (const char *json, size_t len, const char *key, size_t *out_len)
{
  const char *p = json, *end = json + len;
  size_t klen = strlen (key);
  p = skip_ws (p, end);
  if (p >= end || *p != '{')
    return NULL;
  p++;
  for (;;)
    {
      p = skip_ws (p, end);
      if (p >= end || *p != '"')
        return NULL;
      const char *k = p + 1, *ke = skip_string (p, end);
      if (!ke)
        return NULL;
      bool match = (size_t) (ke - 1 - k) == klen && !memcmp (k, key, klen);
      p = skip_ws (ke, end);
      if (p >= end || *p != ':')
        return NULL;
      p = skip_ws (p + 1, end);
      if (match)
        return p < end && *p == '"' ? decode_string (p, end, out_len) : NULL;
      if (!(p = skip_value (p, end)))
        return NULL;
      p = skip_ws (p, end);
      if (p >= end || *p != ',')
        return NULL;
      p++;
    }
}
