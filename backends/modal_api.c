/* SPDX-License-Identifier: MIT */
/* Modal's control plane for one sandbox's life (modal_api.h): the calls
 * of service modal.client.ModalClient, encoded and decoded by hand
 * (protobuf_wire.h) and carried by grpc_call.h. */
#define _GNU_SOURCE
#include "modal_api.h"

#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "grpc_call.h"
#include "monotonic_ms.h"
#include "protobuf_wire.h"
#include "xprintf.h"

#define MODAL_DEFAULT_URL "https://api.modal.com:443"
#define SERVICE_PATH "/modal.client.ModalClient/"
/* The client type: ClientType has no value for a third-party client.  7
 * is CLIENT_TYPE_LIBMODAL, the generic value of Modal's own client
 * libraries; the JS SDK 0.11.1 sends 8 (its own, LIBMODAL_JS), the Go one
 * 9.  airlock is neither, so it says the generic one.  The double accepts
 * any value (it does not check), so this is a guess about api.modal.com
 * (docs/modal.md). */
#define CLIENT_TYPE_LINE "x-modal-client-type: 7"
/* "behaves like this Python SDK version", as libmodal says it */
#define CLIENT_VERSION_LINE "x-modal-client-version: 1.0.0"
#define IMAGE_BUILDER_VERSION "2024.10"
#define CALL_TIMEOUT_MS 30000u
#define CALL_DEADLINE_MS 60000u /* one logical call, retries included */
#define CALL_RETRIES 3u
#define JOIN_TIMEOUT_S 55.0f     /* what one ImageJoinStreaming may wait */
#define JOIN_RETRIES 5u
#define TASK_POLL_MS 500u
#define TOKEN_MARGIN_S 300       /* fetch another 5 min before exp */
#define TOKEN_NO_EXP_LIFE_S 1200 /* a token without exp: 20 min */
#define LOG_TAIL_LINES 6
#define LOG_LINE_MAX 400

struct modal_api {
  char *url, *token_id, *token_secret, *source, *environment, *ca_file;
  const volatile int *cancel;
  CURL *curl;
  char *id_line, *secret_line; /* metadata lines, built once */
  char *auth_token, *auth_line;
  time_t auth_renew;           /* wall clock: fetch another from then on */
};

/* ---- small helpers ---- */

static void
free_secret (char *s)
{
  if (s)
    {
      explicit_bzero (s, strlen (s));
      free (s);
    }
}

static char *
dup_or_null (const char *s)
{
  return s ? strdup (s) : NULL;
}

static uint64_t
deadline_in (unsigned ms)
{
  return (uint64_t) monotonic_ms () + ms;
}

static bool
cancelled (const struct modal_api *a)
{
  return a->cancel && *a->cancel;
}

static void
nap_ms (const struct modal_api *a, unsigned ms)
{
  long long end = monotonic_ms () + ms;
  for (long long now; (now = monotonic_ms ()) < end && !cancelled (a);)
    {
      long long slice = end - now > 50 ? 50 : end - now;
      struct timespec ts = { 0, (long) slice * 1000000L };
      nanosleep (&ts, NULL);
    }
}

/* s with every occurrence of find replaced by with (s is taken). */
static char *
replace_all (char *s, const char *find, const char *with)
{
  if (!s || !find || strlen (find) < 4)
    return s;
  size_t from = 0;
  char *hit;
  while ((hit = strstr (s + from, find)))
    {
      size_t at = (size_t) (hit - s);
      char *t = xprintf ("%.*s%s%s", (int) at, s, with, hit + strlen (find));
      free_secret (s);
      if (!t)
        return NULL;
      s = t;
      from = at + strlen (with);
    }
  return s;
}

static char *
redact (char *s, const char *secret)
{
  return replace_all (s, secret, "<redacted>");
}

/* The server URL for error text: scheme://host[:port], no user info, path
 * or query (which could hold something secret). */
static char *
url_for_text (const char *url)
{
  const char *sep = strstr (url, "://");
  const char *host = sep ? sep + 3 : url;
  size_t end = strcspn (host, "/?#");
  const char *at = memchr (host, '@', end);
  if (at)
    {
      end -= (size_t) (at + 1 - host);
      host = at + 1;
    }
  int scheme = sep ? (int) (sep + 3 - url) : 0;
  return xprintf ("%.*s%.*s", scheme, url, (int) end, host);
}

static const char *
status_name (int status)
{
  static const char *const names[] = { "UNSPECIFIED", "SUCCESS", "FAILURE", "TERMINATED",
                                       "TIMEOUT", "INIT_FAILURE", "INTERNAL_FAILURE",
                                       "IDLE_TIMEOUT", "MEMORY_MANAGER_EVICTION" };
  return status >= 0 && status < (int) (sizeof names / sizeof *names) ? names[status]
                                                                       : "UNKNOWN_STATUS";
}

/* Text that came from the server, made safe for a terminal: control
 * characters (escape sequences of a build log) become '?'. */
static void
sanitize (char *s)
{
  for (unsigned char *p = (unsigned char *) s; *p; p++)
    if ((*p < 0x20 && *p != '\t') || *p == 0x7f)
      *p = '?';
}

/* ---- decoding ---- */

/* The last string field `number` of a message (protobuf keeps the last):
 * 1 with *out (malloc'd), 0 when absent, -1 when malformed. */
static int
find_string (const uint8_t *buf, size_t len, uint32_t number, char **out)
{
  struct pb_reader r;
  struct pb_field f;
  struct pb_slice s = { 0 };
  bool found = false;
  int rc;
  pb_reader_init (&r, buf, len);
  while ((rc = pb_next (&r, &f)) == 1)
    if (f.number == number)
      {
        if (pb_read_string (&r, &f, &s) < 0)
          return -1;
        found = true;
      }
  if (rc < 0)
    return -1;
  if (!found)
    return 0;
  *out = pb_slice_dup (s);
  return *out ? 1 : -1;
}

/* A submessage field `number`: 1 with *sub pointing into buf, 0, -1. */
static int
find_message (const uint8_t *buf, size_t len, uint32_t number, struct pb_slice *sub)
{
  struct pb_reader r;
  struct pb_field f;
  bool found = false;
  int rc;
  pb_reader_init (&r, buf, len);
  while ((rc = pb_next (&r, &f)) == 1)
    if (f.number == number)
      {
        if (pb_read_bytes (&r, &f, sub) < 0)
          return -1;
        found = true;
      }
  return rc < 0 ? -1 : found;
}

struct generic_result {
  int status;
  char *exception;
};

static int
read_generic_result (struct pb_slice s, struct generic_result *g)
{
  struct pb_reader r;
  struct pb_field f;
  int rc;
  *g = (struct generic_result){ 0 };
  pb_reader_init (&r, s.p, s.n);
  while ((rc = pb_next (&r, &f)) == 1)
    {
      int32_t v;
      struct pb_slice t;
      if (f.number == 1 && pb_read_int32 (&r, &f, &v) == 0)
        g->status = v;
      else if (f.number == 2 && pb_read_string (&r, &f, &t) == 0)
        {
          free (g->exception);
          g->exception = pb_slice_dup (t);
        }
      else if (r.error)
        rc = -1;
      if (rc < 0)
        break;
    }
  if (rc < 0)
    {
      free (g->exception);
      g->exception = NULL;
      return -1;
    }
  if (g->exception)
    sanitize (g->exception);
  return 0;
}

/* "TERMINATED: Sandbox terminated" (malloc'd). */
static char *
generic_text (const struct generic_result *g)
{
  if (g->exception && *g->exception)
    return xprintf ("%s: %s", status_name (g->status), g->exception);
  return strdup (status_name (g->status));
}

/* ---- the API object ---- */

struct modal_api *
modal_api_new (const struct modal_api_options *o)
{
  struct modal_api *a = calloc (1, sizeof *a);
  if (!a)
    return NULL;
  a->url = strdup (o->server_url && *o->server_url ? o->server_url : MODAL_DEFAULT_URL);
  /* the URL with no trailing slash: paths start with one */
  if (a->url)
    for (size_t n = strlen (a->url); n > 0 && a->url[n - 1] == '/'; n--)
      a->url[n - 1] = '\0';
  a->token_id = strdup (o->token_id ? o->token_id : "");
  a->token_secret = strdup (o->token_secret ? o->token_secret : "");
  a->source = strdup (o->source ? o->source : "the configured Modal credentials");
  a->environment = dup_or_null (o->environment && *o->environment ? o->environment : NULL);
  a->ca_file = dup_or_null (o->ca_file);
  a->cancel = o->cancel;
  a->curl = curl_easy_init ();
  if (a->token_id && a->token_secret)
    {
      a->id_line = xprintf ("x-modal-token-id: %s", a->token_id);
      a->secret_line = xprintf ("x-modal-token-secret: %s", a->token_secret);
    }
  if (!a->url || !a->token_id || !a->token_secret || !a->source || !a->curl || !a->id_line
      || !a->secret_line || (o->environment && *o->environment && !a->environment)
      || (o->ca_file && !a->ca_file))
    {
      modal_api_free (a);
      return NULL;
    }
  return a;
}

static void
drop_token (struct modal_api *a)
{
  free_secret (a->auth_token);
  free_secret (a->auth_line);
  a->auth_token = a->auth_line = NULL;
  a->auth_renew = 0;
}

void
modal_api_free (struct modal_api *a)
{
  if (!a)
    return;
  drop_token (a);
  if (a->curl)
    curl_easy_cleanup (a->curl);
  free (a->url);
  free (a->token_id);
  free_secret (a->token_secret);
  free_secret (a->secret_line);
  free (a->id_line);
  free (a->source);
  free (a->environment);
  free (a->ca_file);
  free (a);
}

void
modal_sandbox_clear (struct modal_sandbox *sb)
{
  if (!sb)
    return;
  free (sb->app_id);
  free (sb->image_id);
  free (sb->sandbox_id);
  free (sb->task_id);
  *sb = (struct modal_sandbox){ 0 };
}

/* ---- JWT ---- */

static int
b64url_value (unsigned char c)
{
  if (c >= 'A' && c <= 'Z')
    return c - 'A';
  if (c >= 'a' && c <= 'z')
    return c - 'a' + 26;
  if (c >= '0' && c <= '9')
    return c - '0' + 52;
  if (c == '-' || c == '+')
    return 62;
  if (c == '_' || c == '/')
    return 63;
  return -1;
}

/* base64url (padding optional) into out (n * 3 / 4 + 3 bytes): the decoded
 * length, or -1. */
static long
b64url_decode (const char *in, size_t n, unsigned char *out)
{
  while (n > 0 && in[n - 1] == '=')
    n--;
  if (n % 4 == 1)
    return -1;
  unsigned long acc = 0;
  unsigned bits = 0;
  long len = 0;
  for (size_t i = 0; i < n; i++)
    {
      int v = b64url_value ((unsigned char) in[i]);
      if (v < 0)
        return -1;
      acc = (acc << 6) | (unsigned) v;
      bits += 6;
      if (bits >= 8)
        {
          bits -= 8;
          out[len++] = (unsigned char) (acc >> bits);
          acc &= (1ul << bits) - 1;
        }
    }
  return len;
}

long long
modal_jwt_exp (const char *jwt)
{
  if (!jwt)
    return 0;
  const char *d1 = strchr (jwt, '.');
  const char *d2 = d1 ? strchr (d1 + 1, '.') : NULL;
  if (!d2 || strchr (d2 + 1, '.'))
    return 0;
  size_t n = (size_t) (d2 - d1 - 1);
  if (n == 0 || n > 16384)
    return 0;
  unsigned char *buf = malloc (n * 3 / 4 + 3);
  if (!buf)
    return 0;
  long len = b64url_decode (d1 + 1, n, buf);
  long long exp = 0;
  cJSON *claims = len > 0 ? cJSON_ParseWithLength ((const char *) buf, (size_t) len) : NULL;
  const cJSON *e = cJSON_GetObjectItemCaseSensitive (claims, "exp");
  /* seconds since the epoch, up to the year 9999 */
  if (cJSON_IsNumber (e) && e->valuedouble >= 1 && e->valuedouble < 253402300800.0)
    exp = (long long) e->valuedouble;
  cJSON_Delete (claims);
  free (buf);
  return exp;
}

/* ---- error text ---- */

static const char *
code_hint (int code)
{
  switch (code)
    {
    case GRPC_PERMISSION_DENIED:
      return "the token is not allowed to do this in its workspace or environment";
    case GRPC_RESOURCE_EXHAUSTED:
      return "a Modal quota or limit is reached: end other sandboxes or raise the "
             "workspace's limits";
    case GRPC_NOT_FOUND:
      return "Modal does not know it: the sandbox has ended, or the app or environment "
             "does not exist";
    case GRPC_ALREADY_EXISTS:
      return "a running sandbox of this app has that name already";
    case GRPC_UNIMPLEMENTED:
      return "the server lacks this call: Modal's API may have changed (docs/modal.md)";
    default:
      return NULL;
    }
}

char *
modal_error_text (const struct modal_api *a, const struct grpc_result *r, const char *what)
{
  char *base = grpc_result_text (r);
  if (!base)
    return NULL;
  if (a)
    {
      /* grpc_call's transport errors name the URL: without user info */
      char *shown = url_for_text (a->url);
      base = replace_all (base, a->url, shown ? shown : "the server");
      free (shown);
      base = redact (base, a->token_secret);
      base = redact (base, a->auth_token);
      if (!base)
        return NULL;
    }
  sanitize (base);
  char *hint = NULL;
  const char *source = a ? a->source : "the configured Modal credentials";
  if (r->code == GRPC_UNAUTHENTICATED)
    hint = xprintf ("Modal did not accept the token from %s: make a new one with `modal token "
                    "new`, or set MODAL_TOKEN_ID and MODAL_TOKEN_SECRET",
                    source);
  else if (r->origin == GRPC_FROM_TRANSPORT || r->code == GRPC_DEADLINE_EXCEEDED
           || r->code == GRPC_UNAVAILABLE)
    {
      char *url = url_for_text (a ? a->url : MODAL_DEFAULT_URL);
      hint = url ? xprintf ("Modal's API at %s did not answer", url) : NULL;
      free (url);
    }
  else if (code_hint (r->code))
    hint = strdup (code_hint (r->code));
  char *text = hint ? xprintf ("%s: %s (%s)", what, base, hint) : xprintf ("%s: %s", what, base);
  free (hint);
  free_secret (base);
  return text;
}

/* ---- calls ---- */

struct rpc {
  const char *name;          /* "SandboxCreate" */
  const struct pb_enc *req;
  unsigned timeout_ms;       /* one attempt */
  uint64_t deadline_ms;      /* the logical call, retries included */
  int (*on_message) (void *ctx, const uint8_t *msg, size_t len); /* a stream */
  void *ctx;
};

static int call (struct modal_api *a, const struct rpc *rpc, uint8_t **reply, size_t *len,
                 struct grpc_result *res);

/* An auth token that is not due for renewal: 0, or -1 with res. */
static int
ensure_token (struct modal_api *a, uint64_t deadline_ms, struct grpc_result *res)
{
  time_t now = time (NULL);
  if (a->auth_token && now < a->auth_renew)
    return 0;
  drop_token (a);
  struct pb_enc empty = { 0 };
  struct rpc rpc = { .name = "AuthTokenGet", .req = &empty, .timeout_ms = CALL_TIMEOUT_MS,
                     .deadline_ms = deadline_ms };
  uint8_t *reply = NULL;
  size_t len = 0;
  if (call (a, &rpc, &reply, &len, res) < 0)
    return -1;
  grpc_result_free (res); /* OK: the caller's call fills it anew */
  char *token = NULL;
  int found = find_string (reply, len, 1, &token);
  free (reply);
  if (found <= 0 || !*token || strpbrk (token, "\r\n"))
    {
      free_secret (token);
      res->code = GRPC_INTERNAL;
      res->origin = GRPC_FROM_CLIENT;
      res->message = strdup ("AuthTokenGet gave no token");
      return -1;
    }
  a->auth_token = token;
  a->auth_line = xprintf ("x-modal-auth-token: %s", token);
  if (!a->auth_line)
    {
      drop_token (a);
      res->code = GRPC_INTERNAL;
      res->origin = GRPC_FROM_CLIENT;
      res->message = strdup ("out of memory");
      return -1;
    }
  /* Renew 5 min before exp; a token that lives less than 10 min (a test's
   * short ttl) at half its life, so that it is used at least once. */
  long long exp = modal_jwt_exp (token);
  if (!exp)
    a->auth_renew = now + TOKEN_NO_EXP_LIFE_S;
  else
    {
      long long life = exp - (long long) now;
      long long margin = life / 2 < TOKEN_MARGIN_S ? life / 2 : TOKEN_MARGIN_S;
      a->auth_renew = (time_t) (life > 0 ? exp - margin : now);
    }
  return 0;
}

static int
call_once (struct modal_api *a, const struct rpc *rpc, bool with_token, uint8_t **reply,
           size_t *len, struct grpc_result *res)
{
  const char *md[6] = { CLIENT_TYPE_LINE, CLIENT_VERSION_LINE, a->id_line, a->secret_line,
                        with_token ? a->auth_line : NULL, NULL };
  char path[96];
  snprintf (path, sizeof path, SERVICE_PATH "%s", rpc->name);
  struct grpc_call c = { .base_url = a->url,
                         .path = path,
                         .metadata = md,
                         .request = rpc->req->buf ? (const void *) rpc->req->buf : "",
                         .request_len = rpc->req->len,
                         .timeout_ms = rpc->timeout_ms,
                         .ca_file = a->ca_file,
                         .cancel = a->cancel,
                         .on_message = rpc->on_message,
                         .ctx = rpc->ctx };
  if (rpc->on_message)
    return grpc_server_stream (a->curl, &c, res);
  return grpc_unary_retry (a->curl, &c, CALL_RETRIES, rpc->deadline_ms, reply, len, res);
}

/* One logical call: the auth token first (but for AuthTokenGet itself),
 * retries (unary), and once on UNAUTHENTICATED a new token and again.  0,
 * or -1 with res not OK. */
static int
call (struct modal_api *a, const struct rpc *rpc, uint8_t **reply, size_t *len,
      struct grpc_result *res)
{
  bool is_auth = !strcmp (rpc->name, "AuthTokenGet");
  if (rpc->req->failed)
    {
      *res = (struct grpc_result){ .code = GRPC_INTERNAL, .origin = GRPC_FROM_CLIENT,
                                   .message = strdup ("out of memory encoding the request") };
      return -1;
    }
  for (int attempt = 0;; attempt++)
    {
      if (!is_auth && ensure_token (a, rpc->deadline_ms, res) < 0)
        {
          char *m = xprintf ("getting an auth token (AuthTokenGet): %s",
                             res->message ? res->message : "");
          if (m)
            {
              free (res->message);
              res->message = m;
            }
          return -1;
        }
      int r = call_once (a, rpc, !is_auth, reply, len, res);
      /* a stream that has handed messages over is the caller's to resume */
      if (r == 0 || is_auth || attempt > 0 || res->code != GRPC_UNAUTHENTICATED
          || res->origin != GRPC_FROM_SERVER || res->messages > 0)
        return r;
      fprintf (stderr, "airlock daemon: modal: %s: UNAUTHENTICATED; fetching a new auth token\n",
               rpc->name);
      grpc_result_free (res);
      drop_token (a);
    }
}

/* A unary call with the usual timeouts: 0 with reply, or -1 with *err. */
static int
unary (struct modal_api *a, const char *name, const struct pb_enc *req, uint64_t deadline_ms,
       const char *what, uint8_t **reply, size_t *len, struct grpc_result *res, char **err)
{
  struct rpc rpc = { .name = name, .req = req, .timeout_ms = CALL_TIMEOUT_MS,
                     .deadline_ms = deadline_ms ? deadline_ms : deadline_in (CALL_DEADLINE_MS) };
  if (call (a, &rpc, reply, len, res) == 0)
    return 0;
  if (err)
    *err = modal_error_text (a, res, what);
  return -1;
}

static char *
malformed (const char *rpc)
{
  return xprintf ("modal: %s: the answer is malformed or lacks a field (has Modal's API "
                  "changed? docs/modal.md)",
                  rpc);
}

/* A unary call whose answer's string field 1 is wanted (app_id,
 * sandbox_id): 0 with *out, or -1 with *err. */
static int
unary_string (struct modal_api *a, const char *name, const struct pb_enc *req,
              uint64_t deadline_ms, const char *what, char **out, char **err)
{
  uint8_t *reply = NULL;
  size_t len = 0;
  struct grpc_result res;
  int rc = unary (a, name, req, deadline_ms, what, &reply, &len, &res, err);
  grpc_result_free (&res);
  if (rc < 0)
    return -1;
  *out = NULL;
  if (find_string (reply, len, 1, out) <= 0 || !**out)
    {
      free (*out);
      *out = NULL;
      *err = malformed (name);
      rc = -1;
    }
  free (reply);
  return rc;
}

/* ---- the app ---- */

static int
get_app (struct modal_api *a, const char *name, uint64_t deadline_ms, char **app_id, char **err)
{
  struct pb_enc e = { 0 };
  pb_put_string (&e, 1, name);
  if (a->environment)
    pb_put_string (&e, 2, a->environment);
  pb_put_enum (&e, 3, 1); /* OBJECT_CREATION_TYPE_CREATE_IF_MISSING */
  char *what = xprintf ("modal: getting the app %s (AppGetOrCreate)", name);
  int rc = unary_string (a, "AppGetOrCreate", &e, deadline_ms, what ? what : "modal", app_id,
                         err);
  free (what);
  pb_enc_free (&e);
  return rc;
}

/* ---- the image: a build joined to its end ---- */

struct join {
  char *last_entry_id;
  char partial[LOG_LINE_MAX + 1]; /* an unfinished log line */
  size_t partial_len;
  char tail[LOG_TAIL_LINES][LOG_LINE_MAX + 1];
  unsigned lines;
  struct generic_result result;
  bool have_result, bad;
  void (*progress) (void *ctx, const char *line);
  void *progress_ctx;
};

static void
join_line_done (struct join *j)
{
  j->partial[j->partial_len] = '\0';
  j->partial_len = 0;
  char *line = j->partial;
  sanitize (line);
  snprintf (j->tail[j->lines % LOG_TAIL_LINES], LOG_LINE_MAX + 1, "%s", line);
  j->lines++;
  if (j->progress)
    j->progress (j->progress_ctx, line);
}

static void
join_log_data (struct join *j, struct pb_slice s)
{
  for (size_t i = 0; i < s.n; i++)
    {
      char c = (char) s.p[i];
      if (c == '\n')
        join_line_done (j);
      else if (c != '\r' && j->partial_len < LOG_LINE_MAX)
        j->partial[j->partial_len++] = c;
    }
}

static int
join_task_logs (struct join *j, struct pb_slice logs)
{
  struct pb_reader r;
  struct pb_field f;
  int rc;
  pb_reader_init (&r, logs.p, logs.n);
  while ((rc = pb_next (&r, &f)) == 1)
    if (f.number == 1)
      {
        struct pb_slice data;
        if (pb_read_bytes (&r, &f, &data) < 0)
          return -1;
        join_log_data (j, data);
      }
  return rc;
}

/* One ImageJoinStreamingResponse {result = 1, task_logs = 2, entry_id = 3}. */
static int
join_message (void *ctx, const uint8_t *msg, size_t len)
{
  struct join *j = ctx;
  struct pb_reader r;
  struct pb_field f;
  int rc;
  pb_reader_init (&r, msg, len);
  while ((rc = pb_next (&r, &f)) == 1)
    {
      struct pb_slice s;
      if (f.wire != PB_WIRE_LEN || f.number < 1 || f.number > 3)
        continue;
      if (pb_read_bytes (&r, &f, &s) < 0)
        rc = -1;
      else if (f.number == 1)
        {
          free (j->result.exception);
          rc = read_generic_result (s, &j->result) < 0 ? -1 : 1;
          j->have_result = j->result.status != 0;
        }
      else if (f.number == 2)
        rc = join_task_logs (j, s) < 0 ? -1 : 1;
      else if (f.number == 3 && s.n > 0)
        {
          char *id = pb_slice_dup (s);
          if (id)
            {
              free (j->last_entry_id);
              j->last_entry_id = id;
            }
        }
      if (rc < 0)
        break;
    }
  if (rc < 0)
    j->bad = true;
  return rc < 0;
}

static char *
build_failure_text (const struct join *j, const char *image)
{
  char tail[LOG_TAIL_LINES * (LOG_LINE_MAX + 8) + 1] = "";
  size_t used = 0;
  unsigned first = j->lines > LOG_TAIL_LINES ? j->lines - LOG_TAIL_LINES : 0;
  for (unsigned i = first; i < j->lines; i++)
    {
      int n = snprintf (tail + used, sizeof tail - used, "\n  %s",
                        j->tail[i % LOG_TAIL_LINES]);
      if (n < 0 || (size_t) n >= sizeof tail - used)
        break;
      used += (size_t) n;
    }
  char *result = generic_text (&j->result);
  char *text = xprintf ("modal: the image build of %s failed: %s%s%s", image,
                        result ? result : "?", j->lines ? "; its log ended with:" : "", tail);
  free (result);
  return text;
}

/* Join the build of image_id until it has a result: 0 (SUCCESS), or -1
 * with *err (a failed build with its log's tail). */
static int
join_image (struct modal_api *a, const char *image_id, const struct modal_sandbox_spec *s,
            uint64_t deadline_ms, char **err)
{
  struct join j = { .progress = s->progress, .progress_ctx = s->progress_ctx };
  unsigned failures = 0;
  int rc = -1;
  while (!j.have_result)
    {
      uint64_t now = (uint64_t) monotonic_ms ();
      if (cancelled (a) || now >= deadline_ms)
        {
          *err = xprintf ("modal: the image build of %s %s", s->image,
                          cancelled (a) ? "was cancelled" : "did not end in time");
          goto out;
        }
      struct pb_enc e = { 0 };
      pb_put_string (&e, 1, image_id);
      pb_put_float (&e, 2, JOIN_TIMEOUT_S);
      if (j.last_entry_id)
        pb_put_string (&e, 3, j.last_entry_id);
      uint64_t left = deadline_ms - now;
      unsigned timeout = (unsigned) (left < 70000 ? left : 70000);
      struct rpc rpc = { .name = "ImageJoinStreaming", .req = &e, .timeout_ms = timeout,
                         .deadline_ms = deadline_ms, .on_message = join_message, .ctx = &j };
      struct grpc_result res;
      int r = call (a, &rpc, NULL, NULL, &res);
      pb_enc_free (&e);
      if (j.bad)
        {
          grpc_result_free (&res);
          *err = malformed ("ImageJoinStreaming");
          goto out;
        }
      if (r < 0 && !j.have_result)
        {
          if (res.messages > 0)
            failures = 0;
          if (!grpc_retryable (&res) || ++failures > JOIN_RETRIES)
            {
              *err = modal_error_text (a, &res, "modal: joining the image build "
                                                "(ImageJoinStreaming)");
              grpc_result_free (&res);
              goto out;
            }
          nap_ms (a, 200u * failures);
        }
      grpc_result_free (&res);
    }
  if (j.partial_len)
    join_line_done (&j);
  if (j.result.status == 1)
    rc = 0;
  else
    *err = build_failure_text (&j, s->image);
out:
  free (j.last_entry_id);
  free (j.result.exception);
  return rc;
}

static int
get_image (struct modal_api *a, const struct modal_sandbox_spec *s, const char *app_id,
           uint64_t deadline_ms, char **image_id, char **err)
{
  if (!strncmp (s->image, "im-", 3))
    return (*image_id = strdup (s->image)) ? 0 : -1;
  struct pb_enc e = { 0 };
  size_t m = pb_begin (&e, 2);
  char *from = xprintf ("FROM %s", s->image);
  pb_put_string (&e, 6, from ? from : "");
  pb_end (&e, m);
  pb_put_string (&e, 4, app_id);
  pb_put_string (&e, 9, IMAGE_BUILDER_VERSION);
  e.failed |= !from;
  free (from);
  uint8_t *reply = NULL;
  size_t len = 0;
  struct grpc_result res;
  char *what = xprintf ("modal: getting the image %s (ImageGetOrCreate)", s->image);
  int rc = unary (a, "ImageGetOrCreate", &e, deadline_ms, what ? what : "modal", &reply, &len,
                  &res, err);
  free (what);
  grpc_result_free (&res);
  pb_enc_free (&e);
  if (rc < 0)
    return -1;
  struct pb_slice result_bytes;
  struct generic_result g = { 0 };
  *image_id = NULL;
  int has_result = find_message (reply, len, 2, &result_bytes);
  if (find_string (reply, len, 1, image_id) <= 0 || !**image_id || has_result < 0
      || (has_result && read_generic_result (result_bytes, &g) < 0))
    {
      free (reply);
      free (*image_id);
      *image_id = NULL;
      *err = malformed ("ImageGetOrCreate");
      return -1;
    }
  free (reply);
  if (g.status == 0)
    {
      if (s->progress)
        s->progress (s->progress_ctx, "building the image");
      rc = join_image (a, *image_id, s, deadline_ms, err);
    }
  else if (g.status != 1)
    {
      char *t = generic_text (&g);
      *err = xprintf ("modal: the image %s failed: %s", s->image, t ? t : "?");
      free (t);
      rc = -1;
    }
  free (g.exception);
  if (rc < 0)
    {
      free (*image_id);
      *image_id = NULL;
    }
  return rc;
}

/* ---- the sandbox ---- */

/* SandboxCreateRequest {app_id = 1, definition = 2 Sandbox}; the
 * environment was checked by check_env. */
static void
encode_create (struct pb_enc *e, const struct modal_sandbox_spec *s, const char *app_id,
               const char *image_id)
{
  pb_put_string (e, 1, app_id);
  size_t def = pb_begin (e, 2);
  if (s->lease_secs)
    {
      /* The entrypoint is the lease: the sandbox ends itself when its
       * daemon stopped renewing it (killed, crashed, cut off), instead
       * of running, and costing, until its timeout. */
      char n[16];
      snprintf (n, sizeof n, "%u", s->lease_secs);
      pb_put_string (e, 1, "sh");
      pb_put_string (e, 1, "-c");
      pb_put_string (e, 1, "f=" MODAL_LEASE_FILE "; touch \"$f\" || exit 1; "
                           "while sleep 1; do t=$(stat -c %Y \"$f\" 2>/dev/null) || t=0; "
                           "[ $(($(date +%s) - t)) -lt \"$1\" ] || exit 0; done");
      pb_put_string (e, 1, "airlock-lease");
      pb_put_string (e, 1, n);
    }
  else
    {
      pb_put_string (e, 1, "sleep");
      pb_put_string (e, 1, "infinity");
    }
  pb_put_string (e, 3, image_id);
  if (s->milli_cpu || s->memory_mb)
    {
      size_t r = pb_begin (e, 5);
      if (s->memory_mb)
        pb_put_uint32 (e, 2, s->memory_mb);
      if (s->milli_cpu)
        pb_put_uint32 (e, 3, s->milli_cpu);
      pb_end (e, r);
    }
  if (s->timeout_secs)
    pb_put_uint32 (e, 7, s->timeout_secs);
  if (s->workdir)
    pb_put_string (e, 8, s->workdir);
  size_t net = pb_begin (e, 22);
  bool allowlist = s->allowed_cidrs && s->allowed_cidrs[0];
  pb_put_enum (e, 1, allowlist ? 3 : s->block_network ? 2 : 1); /* ALLOWLIST, BLOCKED, OPEN */
  for (const char *const *c = s->allowed_cidrs; allowlist && *c; c++)
    pb_put_string (e, 2, *c);
  pb_end (e, net);
  if (s->name)
    pb_put_string (e, 30, s->name);
  if (s->idle_timeout_secs)
    pb_put_uint32 (e, 33, s->idle_timeout_secs);
  if (s->env && s->env[0])
    {
      size_t vars = pb_begin (e, 40);
      for (const char *const *v = s->env; *v; v++)
        {
          const char *eq = strchr (*v, '='); /* check_env made sure */
          char *name = strndup (*v, (size_t) (eq - *v));
          e->failed |= !name;
          pb_put_map_entry (e, 1, name ? name : "", eq + 1);
          free (name);
        }
      pb_end (e, vars);
    }
  pb_end (e, def);
}

static int
create_sandbox (struct modal_api *a, const struct modal_sandbox_spec *s, struct modal_sandbox *sb,
                uint64_t deadline_ms, char **err)
{
  struct pb_enc e = { 0 };
  encode_create (&e, s, sb->app_id, sb->image_id);
  int rc = unary_string (a, "SandboxCreate", &e, deadline_ms,
                         "modal: creating the sandbox (SandboxCreate)", &sb->sandbox_id, err);
  pb_enc_free (&e);
  return rc;
}

/* SandboxGetTaskId every 500 ms until it has a task: 0, or -1 with *err
 * (the sandbox ended first, the deadline, an error). */
static int
wait_for_task (struct modal_api *a, struct modal_sandbox *sb, uint64_t deadline_ms,
               unsigned start_timeout_s, char **err)
{
  for (;;)
    {
      struct pb_enc e = { 0 };
      pb_put_string (&e, 1, sb->sandbox_id);
      uint8_t *reply = NULL;
      size_t len = 0;
      struct grpc_result res;
      int rc = unary (a, "SandboxGetTaskId", &e, deadline_ms,
                      "modal: waiting for the sandbox's task (SandboxGetTaskId)", &reply, &len,
                      &res, err);
      grpc_result_free (&res);
      pb_enc_free (&e);
      if (rc < 0)
        return -1;
      struct pb_slice ended;
      struct generic_result g = { 0 };
      char *task = NULL;
      int has_task = find_string (reply, len, 1, &task);
      int has_end = find_message (reply, len, 2, &ended);
      bool bad = has_task < 0 || has_end < 0 || (has_end && read_generic_result (ended, &g) < 0);
      free (reply);
      if (bad)
        {
          free (task);
          *err = malformed ("SandboxGetTaskId");
          return -1;
        }
      if (has_end)
        {
          free (task);
          char *t = generic_text (&g);
          *err = xprintf ("modal: the sandbox %s ended before it started: %s", sb->sandbox_id,
                          t ? t : "?");
          free (t);
          free (g.exception);
          return -1;
        }
      if (has_task && *task)
        {
          sb->task_id = task;
          return 0;
        }
      free (task);
      if (cancelled (a) || (uint64_t) monotonic_ms () + TASK_POLL_MS >= deadline_ms)
        {
          *err = cancelled (a) ? xprintf ("modal: starting the sandbox %s was cancelled",
                                          sb->sandbox_id)
                               : xprintf ("modal: the sandbox %s had no task after %u s "
                                          "(Modal is still scheduling it)",
                                          sb->sandbox_id, start_timeout_s);
          return -1;
        }
      nap_ms (a, TASK_POLL_MS);
    }
}

/* A spec's environment checked before any call: 0, or -1 with *err. */
static int
check_env (const struct modal_sandbox_spec *s, char **err)
{
  for (const char *const *v = s->env; v && *v; v++)
    if (**v == '=' || !strchr (*v, '='))
      {
        /* not echoed: a value given wrongly may be a secret */
        *err = xprintf ("modal: environment entry %zu is not NAME=value",
                        (size_t) (v - s->env) + 1);
        return -1;
      }
  return 0;
}

static void
say (const struct modal_sandbox_spec *s, char *line)
{
  if (s->progress && line)
    s->progress (s->progress_ctx, line);
  free (line);
}

int
modal_sandbox_start (struct modal_api *a, const struct modal_sandbox_spec *s,
                     struct modal_sandbox *sb, char **err)
{
  *sb = (struct modal_sandbox){ 0 };
  *err = NULL;
  unsigned start_s = s->start_timeout_s ? s->start_timeout_s : 600;
  uint64_t deadline = deadline_in (start_s * 1000u);
  const char *app = s->app_name && *s->app_name ? s->app_name : "airlock";
  if (!s->image || !*s->image)
    {
      *err = strdup ("modal: no image given");
      return -1;
    }
  if (check_env (s, err) < 0)
    return -1;
  if (get_app (a, app, deadline, &sb->app_id, err) < 0)
    goto fail;
  say (s, xprintf ("app %s: %s", app, sb->app_id));
  if (get_image (a, s, sb->app_id, deadline, &sb->image_id, err) < 0)
    goto fail;
  say (s, xprintf ("image %s: %s", s->image, sb->image_id));
  if (create_sandbox (a, s, sb, deadline, err) < 0)
    goto fail;
  say (s, xprintf ("sandbox %s created; waiting for it to be scheduled", sb->sandbox_id));
  if (wait_for_task (a, sb, deadline, start_s, err) < 0)
    goto fail;
  say (s, xprintf ("sandbox %s is running (task %s)", sb->sandbox_id, sb->task_id));
  return 0;
fail:
  if (sb->sandbox_id)
    {
      char *ignored = NULL;
      modal_sandbox_terminate (a, sb, &ignored);
      free (ignored);
    }
  if (!*err)
    *err = strdup ("modal: out of memory");
  modal_sandbox_clear (sb);
  return -1;
}

/* ---- router, alive, terminate ---- */

int
modal_router_access (struct modal_api *a, const struct modal_sandbox *sb, char **url,
                     char **jwt, long long *exp_unix, bool *gone, char **err)
{
  *url = *jwt = NULL;
  *exp_unix = 0;
  *gone = false;
  struct pb_enc e = { 0 };
  pb_put_string (&e, 1, sb->task_id ? sb->task_id : "");
  uint8_t *reply = NULL;
  size_t len = 0;
  struct grpc_result res;
  int rc = unary (a, "TaskGetCommandRouterAccess", &e, 0,
                  "modal: getting the sandbox's command router (TaskGetCommandRouterAccess)",
                  &reply, &len, &res, err);
  *gone = rc < 0 && res.code == GRPC_NOT_FOUND && res.origin == GRPC_FROM_SERVER;
  grpc_result_free (&res);
  pb_enc_free (&e);
  if (rc < 0)
    return -1;
  if (find_string (reply, len, 1, jwt) <= 0 || find_string (reply, len, 2, url) <= 0
      || !**jwt)
    rc = -1, *err = malformed ("TaskGetCommandRouterAccess");
  else if (strncmp (*url, "https://", 8) || strpbrk (*url, " \r\n"))
    rc = -1, *err = strdup ("modal: the command router's URL is not https://");
  free (reply);
  if (rc < 0)
    {
      free_secret (*jwt);
      free (*url);
      *url = *jwt = NULL;
      return -1;
    }
  *exp_unix = modal_jwt_exp (*jwt);
  return 0;
}

int
modal_sandbox_alive (struct modal_api *a, const struct modal_sandbox *sb, char **why,
                     char **err)
{
  *why = NULL;
  struct pb_enc e = { 0 };
  pb_put_string (&e, 1, sb->sandbox_id ? sb->sandbox_id : "");
  pb_put_float (&e, 2, 0.0f); /* do not wait: just ask */
  uint8_t *reply = NULL;
  size_t len = 0;
  struct grpc_result res;
  char *call_err = NULL;
  int rc = unary (a, "SandboxWait", &e, 0, "modal: asking about the sandbox (SandboxWait)",
                  &reply, &len, &res, &call_err);
  pb_enc_free (&e);
  if (rc < 0)
    {
      bool unknown = res.code == GRPC_NOT_FOUND && res.origin == GRPC_FROM_SERVER;
      grpc_result_free (&res);
      if (!unknown)
        {
          *err = call_err;
          return -1;
        }
      free (call_err);
      *why = xprintf ("Modal no longer knows the sandbox %s (NOT_FOUND)", sb->sandbox_id);
      return *why ? 0 : -1;
    }
  grpc_result_free (&res);
  struct pb_slice result;
  struct generic_result g = { 0 };
  int ended = find_message (reply, len, 1, &result);
  bool bad = ended < 0 || (ended && read_generic_result (result, &g) < 0);
  free (reply);
  if (bad)
    {
      *err = malformed ("SandboxWait");
      return -1;
    }
  if (!ended)
    return 1;
  *why = generic_text (&g);
  free (g.exception);
  return *why ? 0 : -1;
}

int
modal_sandbox_terminate (struct modal_api *a, const struct modal_sandbox *sb, char **err)
{
  struct pb_enc e = { 0 };
  pb_put_string (&e, 1, sb->sandbox_id ? sb->sandbox_id : "");
  uint8_t *reply = NULL;
  size_t len = 0;
  struct grpc_result res;
  char *call_err = NULL;
  int rc = unary (a, "SandboxTerminate", &e, 0, "modal: terminating the sandbox "
                                                "(SandboxTerminate)",
                  &reply, &len, &res, &call_err);
  pb_enc_free (&e);
  free (reply);
  if (rc < 0 && res.code == GRPC_NOT_FOUND && res.origin == GRPC_FROM_SERVER)
    rc = 0; /* gone already */
  grpc_result_free (&res);
  if (rc < 0)
    *err = call_err;
  else
    free (call_err);
  return rc;
}
