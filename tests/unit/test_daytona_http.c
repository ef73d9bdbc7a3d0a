/* SPDX-License-Identifier: MIT */
/* Unit tests for the Daytona HTTP client (backends/daytona_http.c): the
 * retry policy's parts (Retry-After, backoff bounds), URL escaping, both
 * of Daytona's error shapes, error text that names the credential's
 * variable and never holds the key, and whole calls against a scripted
 * HTTP server in this process (a thread on 127.0.0.1): headers sent,
 * 5xx and dropped connections retried, 429 waited for, 500 and a
 * not-idempotent call not repeated, downloads into a file; and the
 * sandbox create request daytona_sandbox.c makes (image or snapshot).  The
 * lifecycle against the Daytona double is tests/daytona.bats. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <curl/curl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daytona_http.h"
#include "daytona_sandbox.h"
#include "monotonic_ms.h"

#define KEY "dtn_secret_key_0123456789abcdef"

/* ---- the scripted server ---- */

struct fake {
  int listen_fd, port;
  pthread_t thread;
  const char *answers[8]; /* one a request, in order; NULL: drop the
                             connection without an answer; past the end:
                             the last one again */
  int n_answers;
  int served;
  char request[16384]; /* the last request */
  char requests[8][4096]; /* the first 8, cut short */
  pthread_mutex_t lock;
};

static size_t
content_length (const char *head)
{
  const char *h = strcasestr (head, "\r\ncontent-length:");
  return h ? strtoul (h + 17, NULL, 10) : 0;
}

static void *
serve (void *arg)
{
  struct fake *f = arg;
  for (;;)
    {
      int c = accept (f->listen_fd, NULL, NULL);
      if (c < 0)
        return NULL;
      char buf[sizeof f->request];
      size_t len = 0;
      char *end = NULL;
      while (len < sizeof buf - 1)
        {
          ssize_t n = read (c, buf + len, sizeof buf - 1 - len);
          if (n <= 0)
            break;
          len += (size_t) n;
          buf[len] = '\0';
          if ((end = strstr (buf, "\r\n\r\n"))
              && len >= (size_t) (end + 4 - buf) + content_length (buf))
            break;
        }
      pthread_mutex_lock (&f->lock);
      memcpy (f->request, buf, len + 1);
      if (f->served < 8)
        {
          size_t n = len < sizeof f->requests[0] - 1 ? len : sizeof f->requests[0] - 1;
          memcpy (f->requests[f->served], buf, n);
          f->requests[f->served][n] = '\0';
        }
      int i = f->served < f->n_answers ? f->served : f->n_answers - 1;
      f->served++;
      const char *a = f->answers[i];
      pthread_mutex_unlock (&f->lock);
      /* HEAD\r\n\r\nBODY: the length and the close added here */
      const char *body = a ? strstr (a, "\r\n\r\n") : NULL;
      if (body)
        {
          char head[128];
          int n = snprintf (head, sizeof head, "\r\nContent-Length: %zu\r\nConnection: close",
                            strlen (body + 4));
          if (write (c, a, (size_t) (body - a)) < 0 || write (c, head, (size_t) n) < 0
              || write (c, body, strlen (body)) < 0)
            perror ("write");
        }
      close (c);
    }
}

static int
fake_setup (void **state)
{
  struct fake *f = calloc (1, sizeof *f);
  pthread_mutex_init (&f->lock, NULL);
  f->listen_fd = socket (AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl (INADDR_LOOPBACK) };
  socklen_t sl = sizeof sa;
  if (bind (f->listen_fd, (struct sockaddr *) &sa, sizeof sa) < 0
      || listen (f->listen_fd, 16) < 0
      || getsockname (f->listen_fd, (struct sockaddr *) &sa, &sl) < 0)
    return -1;
  f->port = ntohs (sa.sin_port);
  pthread_create (&f->thread, NULL, serve, f);
  *state = f;
  return 0;
}

static int
fake_teardown (void **state)
{
  struct fake *f = *state;
  shutdown (f->listen_fd, SHUT_RDWR);
  close (f->listen_fd);
  pthread_join (f->thread, NULL);
  free (f);
  return 0;
}

static struct daytona_http *
client (struct fake *f, bool jwt)
{
  char url[64];
  snprintf (url, sizeof url, "http://127.0.0.1:%d/api/", f->port);
  struct daytona_auth auth = { .api_key = jwt ? NULL : KEY,
                               .jwt = jwt ? KEY : NULL,
                               .organization_id = jwt ? "org-7" : NULL,
                               .source = jwt ? "DAYTONA_JWT_TOKEN" : "DAYTONA_API_KEY" };
  struct daytona_http *h = daytona_http_new (url, &auth);
  assert_non_null (h);
  return h;
}

#define OK_JSON "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n" \
                "\r\n{\"id\":\"sb-1\",\"state\":\"x\"}\n"
#define S503 "HTTP/1.1 503 Service Unavailable\r\n\r\n"
#define S500 "HTTP/1.1 500 Internal Server Error\r\nContent-Type: application/json\r\n" \
             "\r\n" \
             "{\"statusCode\":500,\"error\":\"x\",\"message\":\"An unexpected error occurred.\"}\n"

/* ---- the pieces ---- */

static void
test_escape (void **state)
{
  (void) state;
  char *e = daytona_http_escape ("{\"airlock.owner\":\"1a b/&=\"}~-._");
  assert_string_equal (e, "%7B%22airlock.owner%22%3A%221a%20b%2F%26%3D%22%7D~-._");
  free (e);
  e = daytona_http_escape ("");
  assert_string_equal (e, "");
  free (e);
}

static void
test_retry_after (void **state)
{
  (void) state;
  time_t now = 1700000000;
  assert_int_equal (daytona_retry_after_ms ("5", now), 5000);
  assert_int_equal (daytona_retry_after_ms (" 0\r\n", now), 0);
  assert_int_equal (daytona_retry_after_ms ("3600", now), 60000); /* capped */
  assert_int_equal (daytona_retry_after_ms ("soon", now), -1);
  assert_int_equal (daytona_retry_after_ms ("5s", now), -1);
  assert_int_equal (daytona_retry_after_ms (NULL, now), -1);
  /* an HTTP date 10 s ahead, and one in the past */
  char date[64];
  time_t t = now + 10;
  strftime (date, sizeof date, "%a, %d %b %Y %H:%M:%S GMT", gmtime (&t));
  assert_int_equal (daytona_retry_after_ms (date, now), 10000);
  t = now - 100;
  strftime (date, sizeof date, "%a, %d %b %Y %H:%M:%S GMT", gmtime (&t));
  assert_int_equal (daytona_retry_after_ms (date, now), 0);
}

static void
test_backoff_bounds (void **state)
{
  (void) state;
  unsigned seed = 42;
  for (int i = 0; i < 1000; i++)
    {
      unsigned a1 = daytona_backoff_ms (1, &seed);
      assert_in_range (a1, 150, 250);
      unsigned a3 = daytona_backoff_ms (3, &seed);
      assert_in_range (a3, 600, 1000);
      unsigned a9 = daytona_backoff_ms (9, &seed);
      assert_in_range (a9, 3750, 6250); /* capped at 5 s +-25 % */
      assert_in_range (daytona_backoff_ms (1000, &seed), 3750, 6250);
    }
}

static struct daytona_reply
reply_of (long status, const char *body)
{
  struct daytona_reply r = { .status = status, .body = strdup (body), .len = strlen (body) };
  r.json = cJSON_Parse (body);
  return r;
}

static void
test_error_shapes (void **state)
{
  (void) state;
  /* the API's (NestJS) */
  struct daytona_reply r = reply_of (404, "{\"path\":\"/api/sandbox/x\",\"timestamp\":\"t\","
                                          "\"statusCode\":404,\"error\":\"Not Found\","
                                          "\"message\":\"Sandbox with ID or name x not found\"}");
  assert_string_equal (daytona_reply_message (&r), "Sandbox with ID or name x not found");
  daytona_reply_free (&r);
  /* the toolbox's (Go) */
  r = reply_of (408, "{\"statusCode\":408,\"message\":\"command execution timeout\","
                     "\"code\":\"REQUEST_TIMEOUT\",\"timestamp\":\"t\",\"path\":\"/p\","
                     "\"method\":\"POST\"}");
  assert_string_equal (daytona_reply_message (&r), "command execution timeout");
  daytona_reply_free (&r);
  /* a validation list */
  r = reply_of (400, "{\"statusCode\":400,\"message\":[\"cpu must be an integer\","
                     "\"name must be a string\"],\"error\":\"Bad Request\"}");
  assert_string_equal (daytona_reply_message (&r), "cpu must be an integer, name must be a string");
  daytona_reply_free (&r);
  /* plain text, cut short and on one line */
  char big[1000];
  memset (big, 'x', sizeof big - 1);
  big[sizeof big - 1] = '\0';
  big[5] = '\n';
  r = reply_of (502, big);
  const char *m = daytona_reply_message (&r);
  assert_true (strlen (m) <= 300);
  assert_null (strchr (m, '\n'));
  assert_string_equal (m + strlen (m) - 3, "...");
  daytona_reply_free (&r);
  /* nothing */
  r = reply_of (503, "");
  assert_string_equal (daytona_reply_message (&r), "HTTP 503");
  daytona_reply_free (&r);
}

static void
test_error_text (void **state)
{
  struct fake *f = *state;
  struct daytona_http *h = client (f, false);
  /* a server that echoes the key: the text says which variable, never
   * the key */
  struct daytona_reply r = reply_of (401, "{\"statusCode\":401,\"message\":\"bad token " KEY "\"}");
  char *t = daytona_error_text (h, &r, "creating the sandbox airlock-1-s");
  assert_non_null (strstr (t, "creating the sandbox airlock-1-s"));
  assert_non_null (strstr (t, "DAYTONA_API_KEY"));
  assert_non_null (strstr (t, "https://app.daytona.io/dashboard/keys"));
  assert_null (strstr (t, KEY));
  assert_null (strstr (t, "0123456789abcdef"));
  free (t);
  daytona_reply_free (&r);
  r = reply_of (403, "{\"statusCode\":403,\"message\":\"Forbidden\"}");
  t = daytona_error_text (h, &r, "listing sandboxes");
  assert_non_null (strstr (t, "DAYTONA_API_KEY"));
  assert_non_null (strstr (t, "403"));
  free (t);
  daytona_reply_free (&r);
  r = reply_of (429, "{\"statusCode\":429,\"message\":\"ThrottlerException\"}");
  t = daytona_error_text (h, &r, "x");
  assert_non_null (strstr (t, "rate-limiting"));
  free (t);
  daytona_reply_free (&r);
  daytona_http_free (h);
  h = client (f, true);
  r = reply_of (401, "{}");
  t = daytona_error_text (h, &r, "x");
  assert_non_null (strstr (t, "DAYTONA_ORGANIZATION_ID"));
  free (t);
  daytona_reply_free (&r);
  daytona_http_free (h);
}

/* ---- whole calls ---- */

static int
call (struct daytona_http *h, const char *method, const char *url, bool not_idem,
      uint64_t budget_ms, struct daytona_reply *r, char **err)
{
  cJSON *body = cJSON_Parse ("{\"name\":\"n\"}");
  struct daytona_request rq = { .method = method, .url = url,
                                .json = strcmp (method, "GET") ? body : NULL,
                                .deadline_ms = (uint64_t) monotonic_ms () + budget_ms,
                                .not_idempotent = not_idem };
  *err = NULL;
  int rc = daytona_call (h, &rq, r, err);
  cJSON_Delete (body);
  return rc;
}

static void
test_headers (void **state)
{
  struct fake *f = *state;
  f->answers[0] = OK_JSON;
  f->n_answers = 1;
  struct daytona_http *h = client (f, false);
  struct daytona_reply r;
  char *err;
  assert_int_equal (call (h, "POST", "/sandbox", true, 5000, &r, &err), 0);
  assert_int_equal (r.status, 200);
  assert_int_equal (r.attempts, 1);
  assert_string_equal (cJSON_GetObjectItem (r.json, "id")->valuestring, "sb-1");
  assert_non_null (strstr (f->request, "POST /api/sandbox HTTP/1.1\r\n"));
  assert_non_null (strstr (f->request, "\r\nAuthorization: Bearer " KEY "\r\n"));
  assert_non_null (strstr (f->request, "\r\nX-Daytona-Source: airlock\r\n"));
  assert_non_null (strstr (f->request, "\r\nContent-Type: application/json\r\n"));
  assert_null (strcasestr (f->request, "X-Daytona-SDK-Version"));
  assert_null (strcasestr (f->request, "X-Daytona-Organization-ID"));
  assert_non_null (strstr (f->request, "\r\n\r\n{\"name\":\"n\"}"));
  daytona_reply_free (&r);
  daytona_http_free (h);
  /* a JWT travels with its organization */
  h = client (f, true);
  assert_int_equal (call (h, "GET", "/sandbox/x", false, 5000, &r, &err), 0);
  assert_non_null (strstr (f->request, "\r\nX-Daytona-Organization-ID: org-7\r\n"));
  assert_non_null (strstr (f->request, "\r\nAuthorization: Bearer " KEY "\r\n"));
  daytona_reply_free (&r);
  daytona_http_free (h);
}

static void
test_5xx_then_success (void **state)
{
  struct fake *f = *state;
  f->answers[0] = S503;
  f->answers[1] = NULL; /* dropped */
  f->answers[2] = S503;
  f->answers[3] = OK_JSON;
  f->n_answers = 4;
  struct daytona_http *h = client (f, false);
  struct daytona_reply r;
  char *err;
  assert_int_equal (call (h, "GET", "/sandbox/x", false, 20000, &r, &err), 0);
  assert_int_equal (r.status, 200);
  assert_int_equal (r.attempts, 4);
  daytona_reply_free (&r);
  daytona_http_free (h);
}

static void
test_no_repeat (void **state)
{
  struct fake *f = *state;
  struct daytona_http *h = client (f, false);
  struct daytona_reply r;
  char *err;
  /* 500: an API bug repeats; returned as it is */
  f->answers[0] = S500;
  f->answers[1] = OK_JSON;
  f->n_answers = 2;
  assert_int_equal (call (h, "GET", "/sandbox/x", false, 5000, &r, &err), 0);
  assert_int_equal (r.status, 500);
  assert_int_equal (r.attempts, 1);
  assert_string_equal (daytona_reply_message (&r), "An unexpected error occurred.");
  daytona_reply_free (&r);
  /* a create that may have arrived: 503 and a dropped answer are the
   * caller's to resolve (it looks the sandbox up by name) */
  f->served = 0;
  f->answers[0] = S503;
  assert_int_equal (call (h, "POST", "/sandbox", true, 5000, &r, &err), 0);
  assert_int_equal (r.status, 503);
  assert_int_equal (r.attempts, 1);
  daytona_reply_free (&r);
  f->served = 0;
  f->answers[0] = NULL;
  assert_int_equal (call (h, "POST", "/sandbox", true, 5000, &r, &err), -1);
  assert_int_equal (r.attempts, 1);
  assert_non_null (strstr (err, "cannot reach Daytona at http://127.0.0.1:"));
  assert_int_equal (f->served, 1);
  free (err);
  daytona_http_free (h);
}

static void
test_429_retry_after (void **state)
{
  struct fake *f = *state;
  f->answers[0] = "HTTP/1.1 429 Too Many Requests\r\nRetry-After: 1\r\n"
                  "\r\n";
  f->answers[1] = OK_JSON;
  f->n_answers = 2;
  struct daytona_http *h = client (f, false);
  struct daytona_reply r;
  char *err;
  long long t0 = monotonic_ms ();
  /* even a create: a throttled request was not acted on */
  assert_int_equal (call (h, "POST", "/sandbox", true, 10000, &r, &err), 0);
  long long took = monotonic_ms () - t0;
  assert_int_equal (r.status, 200);
  assert_int_equal (r.attempts, 2);
  assert_true (took >= 950);
  daytona_reply_free (&r);
  daytona_http_free (h);
}

static void
test_unreachable (void **state)
{
  struct fake *f = *state;
  /* a port nobody listens on: bind one, then close it */
  int s = socket (AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl (INADDR_LOOPBACK) };
  socklen_t sl = sizeof sa;
  bind (s, (struct sockaddr *) &sa, sizeof sa);
  getsockname (s, (struct sockaddr *) &sa, &sl);
  close (s);
  char url[128];
  snprintf (url, sizeof url, "http://127.0.0.1:%d/api", ntohs (sa.sin_port));
  struct daytona_auth auth = { .api_key = KEY, .source = "MY_KEY" };
  struct daytona_http *h = daytona_http_new (url, &auth);
  struct daytona_reply r;
  char *err;
  long long t0 = monotonic_ms ();
  assert_int_equal (call (h, "GET", "/sandbox?labels=%7B%22secretvalue%22%7D", false, 1500,
                          &r, &err), -1);
  long long took = monotonic_ms () - t0;
  assert_true (took < 5000); /* the deadline holds */
  assert_true (r.attempts >= 2 && r.attempts <= 6);
  assert_non_null (strstr (err, "cannot reach Daytona at"));
  assert_non_null (strstr (err, "/api/sandbox: ")); /* the query is left out */
  assert_null (strstr (err, "secretvalue"));
  assert_null (strstr (err, KEY));
  free (err);
  /* cancelled: gives up at once */
  volatile int cancel = 1;
  struct daytona_request rq = { .method = "GET", .url = "/x", .cancel = &cancel };
  assert_int_equal (daytona_call (h, &rq, &r, &err), -1);
  assert_non_null (strstr (err, "cancelled"));
  free (err);
  daytona_http_free (h);
  (void) f;
}

static void
test_download (void **state)
{
  struct fake *f = *state;
  f->answers[0] = "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\n"
                  "\r\nhello";
  f->n_answers = 1;
  struct daytona_http *h = client (f, false);
  char path[] = "/tmp/test_daytona_http.XXXXXX";
  int fd = mkstemp (path);
  close (fd);
  unlink (path);
  struct daytona_request rq = { .method = "GET", .url = "http://127.0.0.1:1/x",
                                .body_path = path };
  char url[128];
  snprintf (url, sizeof url, "http://127.0.0.1:%d/toolbox/sb-1/files/download?path=%%2Ftmp%%2Fa",
            f->port);
  rq.url = url;
  struct daytona_reply r;
  char *err = NULL;
  assert_int_equal (daytona_call (h, &rq, &r, &err), 0);
  assert_int_equal (r.status, 200);
  assert_non_null (strstr (f->request, "GET /toolbox/sb-1/files/download?path=%2Ftmp%2Fa "));
  assert_non_null (strstr (f->request, "\r\nAuthorization: Bearer " KEY "\r\n"));
  struct stat st;
  assert_int_equal (stat (path, &st), 0);
  assert_int_equal (st.st_size, 5);
  assert_int_equal (st.st_mode & 0777, 0600);
  daytona_reply_free (&r);
  /* an error answer is read as a message, not written to the file */
  f->served = 0;
  f->answers[0] = "HTTP/1.1 404 Not Found\r\nContent-Type: application/json\r\n"
                  "\r\n"
                  "{\"statusCode\":404,\"message\":\"no such file\"}";
  assert_int_equal (daytona_call (h, &rq, &r, &err), 0);
  assert_int_equal (r.status, 404);
  assert_string_equal (daytona_reply_message (&r), "no such file");
  daytona_reply_free (&r);
  unlink (path);
  daytona_http_free (h);
}

/* ---- the create request (daytona_sandbox.c) ---- */

static cJSON *
body_of (const char *request)
{
  const char *b = strstr (request, "\r\n\r\n");
  return b ? cJSON_Parse (b + 4) : NULL;
}

static void
test_create_request (void **state)
{
  struct fake *f = *state;
  f->answers[0] = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n"
                  "{\"items\":[{\"id\":\"x\",\"name\":\"airlock-1-s-other\",\"state\":\"started\"}],"
                  "\"nextCursor\":null}";
  f->answers[1] = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n"
                  "{\"id\":\"sb-9\",\"name\":\"airlock-1-s\",\"state\":\"started\","
                  "\"toolboxProxyUrl\":\"http://tb.example/toolbox/\"}";
  f->n_answers = 2;
  struct daytona_http *h = client (f, false);
  const char *labels[] = { "airlock.owner=1", "airlock.session=s", "team=ml", NULL };
  const char *env[] = { "A=1", "B=x=y", NULL };
  struct daytona_sandbox_options o = { .name = "airlock-1-s", .labels = labels,
                                       .image = "python:3.12", .cpus = 2, .memory_gb = 4,
                                       .disk_gb = 10, .env = env, .start_timeout_s = 10 };
  struct daytona_sandbox sb;
  char *err = NULL;
  assert_int_equal (daytona_sandbox_acquire (h, &o, &sb, &err), 0);
  assert_string_equal (sb.id, "sb-9");
  assert_string_equal (sb.toolbox_url, "http://tb.example/toolbox/sb-9");
  assert_false (sb.reused); /* a prefix match of the name is not it */
  /* found by airlock's labels only, and the name */
  assert_non_null (strstr (f->requests[0], "GET /api/sandbox?labels=%7B%22airlock.owner%22%3A%221%22"
                                          "%2C%22airlock.session%22%3A%22s%22%7D&name=airlock-1-s"));
  assert_non_null (strstr (f->requests[1], "POST /api/sandbox HTTP/1.1"));
  cJSON *b = body_of (f->requests[1]);
  assert_non_null (b);
  assert_string_equal (cJSON_GetObjectItem (cJSON_GetObjectItem (b, "buildInfo"), "dockerfileContent")->valuestring,
                       "FROM python:3.12\n");
  assert_null (cJSON_GetObjectItem (b, "snapshot"));
  assert_int_equal (cJSON_GetObjectItem (b, "cpu")->valueint, 2);
  assert_int_equal (cJSON_GetObjectItem (b, "memory")->valueint, 4);
  assert_int_equal (cJSON_GetObjectItem (b, "disk")->valueint, 10);
  assert_int_equal (cJSON_GetObjectItem (b, "autoStopInterval")->valueint, 0);
  assert_null (cJSON_GetObjectItem (b, "autoArchiveInterval"));
  assert_string_equal (cJSON_GetObjectItem (cJSON_GetObjectItem (b, "labels"), "team")->valuestring, "ml");
  assert_string_equal (cJSON_GetObjectItem (cJSON_GetObjectItem (b, "env"), "B")->valuestring, "x=y");
  cJSON_Delete (b);
  daytona_sandbox_clear (&sb);
  /* a snapshot: no buildInfo, no resources (the server refuses them) */
  f->served = 0;
  o.snapshot = "snap-1";
  o.auto_archive_min = 60;
  assert_int_equal (daytona_sandbox_acquire (h, &o, &sb, &err), 0);
  b = body_of (f->requests[1]);
  assert_string_equal (cJSON_GetObjectItem (b, "snapshot")->valuestring, "snap-1");
  assert_null (cJSON_GetObjectItem (b, "buildInfo"));
  assert_null (cJSON_GetObjectItem (b, "cpu"));
  assert_null (cJSON_GetObjectItem (b, "memory"));
  assert_int_equal (cJSON_GetObjectItem (b, "autoArchiveInterval")->valueint, 60);
  cJSON_Delete (b);
  daytona_sandbox_clear (&sb);
  daytona_http_free (h);
}

int
main (void)
{
  curl_global_init (CURL_GLOBAL_DEFAULT);
  const struct CMUnitTest tests[] = {
    cmocka_unit_test (test_escape),
    cmocka_unit_test (test_retry_after),
    cmocka_unit_test (test_backoff_bounds),
    cmocka_unit_test (test_error_shapes),
    cmocka_unit_test_setup_teardown (test_error_text, fake_setup, fake_teardown),
    cmocka_unit_test_setup_teardown (test_headers, fake_setup, fake_teardown),
    cmocka_unit_test_setup_teardown (test_5xx_then_success, fake_setup, fake_teardown),
    cmocka_unit_test_setup_teardown (test_no_repeat, fake_setup, fake_teardown),
    cmocka_unit_test_setup_teardown (test_429_retry_after, fake_setup, fake_teardown),
    cmocka_unit_test_setup_teardown (test_unreachable, fake_setup, fake_teardown),
    cmocka_unit_test_setup_teardown (test_download, fake_setup, fake_teardown),
    cmocka_unit_test_setup_teardown (test_create_request, fake_setup, fake_teardown),
  };
  int rc = cmocka_run_group_tests (tests, NULL, NULL);
  curl_global_cleanup ();
  return rc;
}
