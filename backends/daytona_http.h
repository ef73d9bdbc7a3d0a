/* SPDX-License-Identifier: MIT */
/* A small client of Daytona's HTTPS APIs (the main REST API and the
 * toolbox API of each sandbox) over libcurl, with cJSON bodies.
 *
 * One struct daytona_http per thread that uses it (a curl easy handle
 * and its connection cache are not shared).  Every call retries what is
 * safe to retry (connection refused or reset, timeouts before an answer,
 * 502/503/504, 429 after its Retry-After) with a bounded exponential
 * backoff and jitter; an answer that is an error is returned, never
 * retried.  Credentials travel in headers only: never in a URL, argv, a
 * log line or error text. */
#ifndef AIRLOCK_BACKENDS_DAYTONA_HTTP_H
#define AIRLOCK_BACKENDS_DAYTONA_HTTP_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

/* How the client proves who it is: an API key (Authorization: Bearer),
 * or a JWT with its organization (X-Daytona-Organization-ID). */
struct daytona_auth {
  const char *api_key;
  const char *jwt;
  const char *organization_id;
  const char *source; /* the variable it came from, for error text:
                         "DAYTONA_API_KEY" (or daytona.api_key_env's
                         name), "DAYTONA_JWT_TOKEN" */
};

struct daytona_http;

/* api_url: the REST API's base (".../api", no trailing slash needed).
 * The strings are copied.  NULL only when out of memory. */
struct daytona_http *daytona_http_new (const char *api_url,
                                       const struct daytona_auth *auth);
void daytona_http_free (struct daytona_http *h);

/* A part of a multipart/form-data body: text (value) or a file's bytes
 * (a host path, sent as the part's content with the given filename). */
struct daytona_part {
  const char *name;
  const char *value;     /* a text part, or NULL */
  const char *file_path; /* a file part: read from this host path */
  const char *filename;  /* the file part's filename */
};

struct daytona_request {
  const char *method;   /* "GET", "POST", "PUT", "DELETE" */
  /* Relative to the API base ("/sandbox/ID"), or absolute (a toolbox URL
   * built from the sandbox's toolboxProxyUrl).  Query values must be
   * escaped by the caller (daytona_http_escape). */
  const char *url;
  const cJSON *json;    /* a JSON body, or NULL */
  const struct daytona_part *parts; /* a multipart body, or NULL */
  size_t nparts;
  const char *const *headers; /* extra "Name: value" lines, NULL-ended */
  /* Where the answer's body goes: NULL: into reply->body (and ->json
   * when it parses); else this host file, created 0600 (downloads).  A
   * body bigger than max_body (0: 64 MiB) into memory is an error. */
  const char *body_path;
  size_t max_body;
  /* The whole call (every attempt and wait) ends by then (monotonic ms,
   * monotonic_ms.h; 0: 60 s from now), and a non-zero *cancel ends it
   * between attempts (another thread may set it). */
  uint64_t deadline_ms;
  const volatile int *cancel;
  /* Not safe to repeat when an attempt may have reached the server
   * (creating a sandbox, starting a command): such a call is tried once
   * unless the connection failed before anything was sent. */
  bool not_idempotent;
};

struct daytona_reply {
  long status;          /* the HTTP status of the last attempt */
  char *body;           /* NUL-terminated (empty with body_path) */
  size_t len;
  cJSON *json;          /* the body parsed, when it is JSON */
  unsigned attempts;    /* how many were made */
};

/* 0 when an HTTP answer came (any status: check reply->status), or -1 with
 * *err (malloc'd) when none did within the deadline and retries: it says
 * what was tried and what failed ("cannot reach the Daytona API at URL:
 * Connection refused (5 attempts in 31 s)").  The URL in error text never
 * carries a query string's values. */
int daytona_call (struct daytona_http *h, const struct daytona_request *rq,
                  struct daytona_reply *reply, char **err);
void daytona_reply_free (struct daytona_reply *r);

/* The server's words for a failed answer, from either of Daytona's error
 * shapes ({"statusCode","message",...}: the API's and the toolbox's), else
 * the body (cut short), else "HTTP NNN".  Valid while r is. */
const char *daytona_reply_message (struct daytona_reply *r);

/* A sentence for a failed answer to what (e.g. "creating the sandbox
 * airlock-1a2b-s"): 401/403 name the credential's variable and how to fix
 * it; 404 says the thing does not exist; 408, 409, 429 and 5xx say what
 * they mean; the server's message follows.  malloc'd. */
char *daytona_error_text (const struct daytona_http *h, struct daytona_reply *r,
                          const char *what);

/* The header lines every call carries (credentials, source), for a
 * connection made elsewhere (a WebSocket: websocket.h): up to 3 into
 * out, NULL-ended (out has 4 slots).  Valid while h is. */
void daytona_http_header_lines (const struct daytona_http *h, const char *out[4]);

/* A query value escaped for a URL (malloc'd). */
char *daytona_http_escape (const char *s);

/* The retry policy's parts, exposed for unit tests.  A Retry-After
 * header's value (delta seconds or an HTTP date, read against now) in
 * ms, capped at 60 s; -1 when it is neither. */
long long daytona_retry_after_ms (const char *value, time_t now);
/* The wait before retry number attempt (1: after the first failure):
 * 200 ms doubling to 5 s, +-25 % jitter drawn from *seed. */
unsigned daytona_backoff_ms (unsigned attempt, unsigned *seed);

#endif
