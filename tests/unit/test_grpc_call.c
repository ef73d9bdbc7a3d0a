/* SPDX-License-Identifier: MIT */
/* Unit tests for the gRPC layer (backends/grpc_call.c): the frame
 * reassembler fed one byte at a time and in odd pieces (compressed,
 * oversize and unfinished frames refused), percent-decoding, code names,
 * the retry policy; and whole calls over h2c against a real gRPC server,
 * tests/unit/grpc_peer.py (python3-grpcio, started here on a free port):
 * unary success and connection reuse, a trailers-only error with a
 * percent-encoded message, a stream of messages that do not line up with
 * the body's chunks, a stream aborted with UNAVAILABLE after some
 * messages, the caller stopping a stream, an oversize message, metadata
 * the server received (and refused when it would inject a header),
 * a deadline, a refused connection, and retries keeping one idempotency
 * key.  The server tests are skipped, saying so, without python3-grpcio. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <curl/curl.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "grpc_call.h"
#include "monotonic_ms.h"

/* ---- the reassembler alone ---- */

struct got {
  unsigned n;
  size_t sizes[16];
  uint8_t first[16];
  int stop_after; /* 0: never */
};

static int
collect (void *ctx, const uint8_t *msg, size_t len)
{
  struct got *g = ctx;
  if (g->n < 16)
    {
      g->sizes[g->n] = len;
      g->first[g->n] = len ? msg[0] : 0;
    }
  g->n++;
  return g->stop_after && (int) g->n >= g->stop_after;
}

static size_t
frame (uint8_t *out, uint8_t flag, const char *msg, size_t n)
{
  out[0] = flag;
  out[1] = (uint8_t) (n >> 24), out[2] = (uint8_t) (n >> 16);
  out[3] = (uint8_t) (n >> 8), out[4] = (uint8_t) n;
  memcpy (out + 5, msg, n);
  return 5 + n;
}

static void
test_frames_split_anywhere (void **state)
{
  (void) state;
  uint8_t body[4096];
  size_t n = 0;
  n += frame (body + n, 0, "abc", 3);
  n += frame (body + n, 0, "", 0);
  char big[1000];
  memset (big, 'z', sizeof big);
  n += frame (body + n, 0, big, sizeof big);
  n += frame (body + n, 0, "q", 1);
  static const size_t steps[] = { 1, 2, 3, 5, 6, 7, 1000, 4096 };
  for (size_t s = 0; s < sizeof steps / sizeof *steps; s++)
    {
      struct got g = { 0 };
      struct grpc_frames f = { .on_message = collect, .ctx = &g };
      for (size_t off = 0; off < n; off += steps[s])
        assert_int_equal (grpc_frames_feed (&f, body + off,
                                            n - off < steps[s] ? n - off : steps[s]), 0);
      assert_int_equal (grpc_frames_end (&f), 0);
      assert_int_equal (g.n, 4);
      assert_int_equal (f.count, 4);
      assert_int_equal (g.sizes[0], 3);
      assert_int_equal (g.first[0], 'a');
      assert_int_equal (g.sizes[1], 0);
      assert_int_equal (g.sizes[2], 1000);
      assert_int_equal (g.first[3], 'q');
      grpc_frames_free (&f);
    }
}

static void
test_frames_refused (void **state)
{
  (void) state;
  uint8_t body[64];
  struct grpc_frames f = { 0 };
  /* compressed */
  size_t n = frame (body, 1, "abc", 3);
  assert_int_equal (grpc_frames_feed (&f, body, n), -1);
  assert_int_equal (f.code, GRPC_INTERNAL);
  assert_non_null (strstr (f.error, "compressed"));
  assert_int_equal (grpc_frames_feed (&f, body, n), -1); /* stays failed */
  grpc_frames_free (&f);
  /* an unknown flag */
  f = (struct grpc_frames){ 0 };
  n = frame (body, 0x80, "abc", 3);
  assert_int_equal (grpc_frames_feed (&f, body, n), -1);
  grpc_frames_free (&f);
  /* over the limit: refused from its header, nothing buffered */
  f = (struct grpc_frames){ .max_message = 10 };
  memcpy (body, "\0\0\0\0\x0b", 5);
  assert_int_equal (grpc_frames_feed (&f, body, 5), -1);
  assert_int_equal (f.code, GRPC_RESOURCE_EXHAUSTED);
  assert_true (f.cap <= 5);
  grpc_frames_free (&f);
  /* at the limit: fine; 4 GiB announced with the default limit: refused */
  f = (struct grpc_frames){ .max_message = 10 };
  n = frame (body, 0, "0123456789", 10);
  assert_int_equal (grpc_frames_feed (&f, body, n), 0);
  assert_int_equal (grpc_frames_feed (&f, "\0\xff\xff\xff\xff", 5), -1);
  grpc_frames_free (&f);
  /* unfinished at the end: a header, then part of a message */
  f = (struct grpc_frames){ 0 };
  assert_int_equal (grpc_frames_feed (&f, "\0\0\0", 3), 0);
  assert_int_equal (grpc_frames_end (&f), -1);
  grpc_frames_free (&f);
  f = (struct grpc_frames){ 0 };
  assert_int_equal (grpc_frames_feed (&f, "\0\0\0\0\x05" "ab", 7), 0);
  assert_int_equal (grpc_frames_end (&f), -1);
  assert_non_null (strstr (f.error, "inside a message"));
  grpc_frames_free (&f);
  /* the callback stops it */
  struct got g = { .stop_after = 1 };
  f = (struct grpc_frames){ .on_message = collect, .ctx = &g };
  n = frame (body, 0, "a", 1);
  n += frame (body + n, 0, "b", 1);
  assert_int_equal (grpc_frames_feed (&f, body, n), -1);
  assert_true (f.stopped);
  assert_int_equal (g.n, 1);
  grpc_frames_free (&f);
}

static void
test_percent_decode_and_names (void **state)
{
  (void) state;
  char s[] = "no such sandbox: 50%25 done%2C caf%C3%A9%0Anext %zz %4";
  grpc_percent_decode (s);
  assert_string_equal (s, "no such sandbox: 50% done, caf\xc3\xa9 next %zz %4");
  char z[] = "a%00b"; /* a NUL is not let in */
  grpc_percent_decode (z);
  assert_string_equal (z, "a%00b");
  assert_string_equal (grpc_code_name (GRPC_OK), "OK");
  assert_string_equal (grpc_code_name (GRPC_UNAVAILABLE), "UNAVAILABLE");
  assert_string_equal (grpc_code_name (GRPC_UNAUTHENTICATED), "UNAUTHENTICATED");
  assert_string_equal (grpc_code_name (17), "UNKNOWN_CODE");
  assert_string_equal (grpc_code_name (-1), "UNKNOWN_CODE");
}

static void
test_retry_policy (void **state)
{
  (void) state;
  struct grpc_result r = { .code = GRPC_UNAVAILABLE, .origin = GRPC_FROM_SERVER };
  assert_true (grpc_retryable (&r));
  const int yes[] = { GRPC_UNAVAILABLE, GRPC_DEADLINE_EXCEEDED, GRPC_INTERNAL, GRPC_UNKNOWN,
                      GRPC_CANCELLED };
  for (size_t i = 0; i < 5; i++)
    {
      r.code = yes[i];
      assert_true (grpc_retryable (&r));
    }
  r.code = GRPC_NOT_FOUND;
  assert_false (grpc_retryable (&r));
  r.code = GRPC_UNAUTHENTICATED;
  assert_false (grpc_retryable (&r));
  r = (struct grpc_result){ .code = GRPC_UNAVAILABLE, .origin = GRPC_FROM_TRANSPORT };
  assert_true (grpc_retryable (&r));
  r.origin = GRPC_FROM_CLIENT; /* e.g. the caller stopped the stream */
  assert_false (grpc_retryable (&r));

  struct grpc_retry rt;
  grpc_retry_init (&rt, 3);
  assert_int_equal (strlen (rt.key), 36);
  assert_int_equal (rt.key[14], '4');
  char key[37];
  strcpy (key, rt.key);
  r = (struct grpc_result){ .code = GRPC_UNAVAILABLE };
  unsigned wait, waits[3];
  for (int i = 0; i < 3; i++)
    {
      assert_true (grpc_retry_next (&rt, &r, 0, &wait));
      waits[i] = wait;
      assert_string_equal (rt.key, key);
    }
  assert_false (grpc_retry_next (&rt, &r, 0, &wait)); /* 3 retries: no more */
  assert_in_range (waits[0], 75, 125);
  assert_in_range (waits[1], 150, 250);
  assert_in_range (waits[2], 300, 500);
  assert_string_equal (rt.lines[1], "x-retry-attempt: 3");
  assert_int_equal (strncmp (rt.lines[2], "x-retry-delay: 0.", 17), 0);
  /* the cap: 1 s +-25 % */
  grpc_retry_init (&rt, 20);
  for (int i = 0; i < 20; i++)
    assert_true (grpc_retry_next (&rt, &r, 0, &wait));
  assert_in_range (wait, 750, 1250);
  /* no retry that would end past the deadline */
  grpc_retry_init (&rt, 3);
  assert_false (grpc_retry_next (&rt, &r, (uint64_t) monotonic_ms () + 10, &wait));
  /* two keys differ */
  struct grpc_retry other;
  grpc_retry_init (&other, 3);
  assert_string_not_equal (other.key, key);
}

/* ---- against grpc_peer.py ---- */

static pid_t peer_pid = -1;
static int peer_stdin = -1;
static char base_url[64], tls_url[64]; /* tls_url: "" without openssl */
static char tmp[64], cert[128], key[128];
static CURL *curl;

static int
run_quiet (const char *const *argv)
{
  pid_t pid = fork ();
  if (pid == 0)
    {
      int null = open ("/dev/null", O_WRONLY);
      dup2 (null, 1);
      dup2 (null, 2);
      execvp (argv[0], (char *const *) argv);
      _exit (127);
    }
  int st;
  return pid > 0 && waitpid (pid, &st, 0) == pid && WIFEXITED (st) ? WEXITSTATUS (st) : -1;
}

/* A python3 with grpc: $AIRLOCK_PYTHON3, python3, /usr/bin/python3. */
static const char *
find_python (void)
{
  const char *candidates[] = { getenv ("AIRLOCK_PYTHON3"), "python3", "/usr/bin/python3" };
  for (size_t i = 0; i < 3; i++)
    if (candidates[i]
        && run_quiet ((const char *[]){ "timeout", "-k", "5", "60", candidates[i], "-c",
                                        "import grpc", NULL }) == 0)
      return candidates[i];
  return NULL;
}

/* A self-signed certificate for 127.0.0.1 in tmp, for the TLS port. */
static bool
make_cert (void)
{
  char subj_alt[] = "subjectAltName=IP:127.0.0.1";
  snprintf (cert, sizeof cert, "%s/cert.pem", tmp);
  snprintf (key, sizeof key, "%s/key.pem", tmp);
  return run_quiet ((const char *[]){ "timeout", "-k", "5", "60", "openssl", "req", "-x509",
                                      "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out",
                                      cert, "-days", "1", "-subj", "/CN=127.0.0.1", "-addext",
                                      subj_alt, NULL }) == 0;
}

/* Lines from fd until want of them came (or 30 s passed) into buf. */
static void
read_lines (int fd, char *buf, size_t cap, int want)
{
  size_t len = 0;
  int lines = 0;
  struct pollfd p = { .fd = fd, .events = POLLIN };
  long long end = monotonic_ms () + 30000;
  buf[0] = '\0';
  while (lines < want && len < cap - 1 && monotonic_ms () < end)
    {
      if (poll (&p, 1, 1000) <= 0)
        continue;
      ssize_t n = read (fd, buf + len, cap - 1 - len);
      if (n <= 0)
        break;
      for (ssize_t i = 0; i < n; i++)
        lines += buf[len + (size_t) i] == '\n';
      len += (size_t) n;
      buf[len] = '\0';
    }
}

static int
peer_start (void **state)
{
  (void) state;
  curl_global_init (CURL_GLOBAL_DEFAULT);
  const char *python = find_python ();
  char dir[] = "/tmp/airlock-grpc-XXXXXX";
  if (!python || !mkdtemp (dir))
    return 0;
  snprintf (tmp, sizeof tmp, "%s", dir);
  bool tls = make_cert ();
  int in[2], out[2];
  if (pipe2 (in, O_CLOEXEC) < 0 || pipe2 (out, O_CLOEXEC) < 0)
    return -1;
  peer_pid = fork ();
  if (peer_pid == 0)
    {
      dup2 (in[0], 0);
      dup2 (out[1], 1);
      /* bounded even if this test is killed: timeout, and stdin's end */
      const char *peer = AIRLOCK_SOURCE_DIR "/tests/unit/grpc_peer.py";
      if (tls)
        execlp ("timeout", "timeout", "-k", "5", "600", python, peer, "--tls", cert, key,
                (char *) NULL);
      else
        execlp ("timeout", "timeout", "-k", "5", "600", python, peer, (char *) NULL);
      _exit (127);
    }
  close (in[0]);
  close (out[1]);
  peer_stdin = in[1];
  char text[256];
  read_lines (out[0], text, sizeof text, tls ? 2 : 1);
  close (out[0]);
  int port, tls_port;
  if (sscanf (text, "listening on 127.0.0.1:%d", &port) != 1)
    {
      fprintf (stderr, "grpc_peer.py did not start: %s\n", text);
      return -1;
    }
  snprintf (base_url, sizeof base_url, "http://127.0.0.1:%d", port);
  const char *t = strstr (text, "tls on 127.0.0.1:");
  if (t && sscanf (t, "tls on 127.0.0.1:%d", &tls_port) == 1)
    snprintf (tls_url, sizeof tls_url, "https://127.0.0.1:%d", tls_port);
  curl = curl_easy_init ();
  return curl ? 0 : -1;
}

static int
peer_stop (void **state)
{
  (void) state;
  if (curl)
    curl_easy_cleanup (curl);
  if (peer_pid > 0)
    {
      close (peer_stdin); /* it stops at the end of its stdin */
      long long end = monotonic_ms () + 10000;
      int st;
      while (waitpid (peer_pid, &st, WNOHANG) == 0)
        {
          if (monotonic_ms () > end)
            {
              kill (peer_pid, SIGTERM);
              waitpid (peer_pid, &st, 0);
              break;
            }
          usleep (20000);
        }
    }
  if (*tmp)
    run_quiet ((const char *[]){ "rm", "-rf", tmp, NULL });
  curl_global_cleanup ();
  return 0;
}

static void
need_peer (void)
{
  if (peer_pid <= 0)
    {
      print_message ("skipped: no python3 with grpc (apt-get install python3-grpcio)\n");
      skip ();
    }
}

static struct grpc_call
call_of (const char *method, const char *request)
{
  static char paths[4][64]; /* a few calls may be alive at once */
  static unsigned next;
  char *path = paths[next++ % 4];
  snprintf (path, sizeof paths[0], "/airlock.test.Peer/%s", method);
  return (struct grpc_call){ .base_url = base_url, .path = path, .request = request,
                             .request_len = strlen (request), .timeout_ms = 20000 };
}

static void
test_unary (void **state)
{
  (void) state;
  need_peer ();
  struct grpc_call c = call_of ("Echo", "hello \x01\x02");
  struct grpc_result res;
  uint8_t *reply;
  size_t len;
  int rc = grpc_unary (curl, &c, &reply, &len, &res);
  if (rc)
    fail_msg ("%s (%s)", res.message, grpc_code_name (res.code));
  assert_int_equal (res.code, GRPC_OK);
  assert_int_equal (res.origin, GRPC_FROM_SERVER);
  assert_int_equal (res.http_status, 200);
  assert_int_equal (len, 8);
  assert_memory_equal (reply, "hello \x01\x02", 8);
  free (reply);
  grpc_result_free (&res);
  /* an empty request and answer, and again on the same handle */
  c = call_of ("Echo", "");
  rc = grpc_unary (curl, &c, &reply, &len, &res);
  if (rc)
    fail_msg ("%s (%s)", res.message, grpc_code_name (res.code));
  assert_int_equal (len, 0);
  assert_non_null (reply);
  free (reply);
  grpc_result_free (&res);
  c = call_of ("Echo", "again");
  assert_int_equal (grpc_unary (curl, &c, &reply, &len, &res), 0);
  free (reply);
  grpc_result_free (&res);
}

/* Calls through grpc_transfer_* on one handle: how many connections each
 * opened. */
static void
three_calls (const char *url, long connects[3])
{
  for (int i = 0; i < 3; i++)
    {
      struct grpc_call c = call_of ("Echo", "x");
      struct grpc_result res;
      c.base_url = url;
      c.ca_file = cert;
      struct grpc_transfer *t = grpc_transfer_new (curl, &c, &res);
      assert_non_null (t);
      CURLcode rc = curl_easy_perform (curl);
      connects[i] = -1;
      curl_easy_getinfo (curl, CURLINFO_NUM_CONNECTS, &connects[i]);
      if (grpc_transfer_finish (t, rc, &res) != 0)
        fail_msg ("%s: %s", url, res.message);
      grpc_transfer_free (t);
      grpc_result_free (&res);
    }
}

static void
test_connection_reused (void **state)
{
  (void) state;
  need_peer ();
  long connects[3];
  /* h2c: reused where libcurl can (8.0.0 on) */
  three_calls (base_url, connects);
  if (curl_version_info (CURLVERSION_NOW)->version_num >= 0x080000)
    assert_int_equal (connects[1] + connects[2], 0);
  if (!*tls_url)
    {
      print_message ("TLS part skipped: no openssl to make a certificate\n");
      return;
    }
  /* TLS (the real service's way): one connection for all three */
  three_calls (tls_url, connects);
  assert_int_equal (connects[1], 0);
  assert_int_equal (connects[2], 0);
}

static void
test_trailers_only_error (void **state)
{
  (void) state;
  need_peer ();
  struct grpc_call c = call_of ("Fail", "5 no such sandbox: 50% done, caf\xc3\xa9\nnext");
  struct grpc_result res;
  uint8_t *reply;
  size_t len;
  assert_int_equal (grpc_unary (curl, &c, &reply, &len, &res), -1);
  assert_null (reply);
  assert_int_equal (res.code, GRPC_NOT_FOUND);
  assert_int_equal (res.origin, GRPC_FROM_SERVER);
  assert_string_equal (res.message, "no such sandbox: 50% done, caf\xc3\xa9 next");
  assert_false (grpc_retryable (&res));
  char *t = grpc_result_text (&res);
  assert_string_equal (t, "NOT_FOUND: no such sandbox: 50% done, caf\xc3\xa9 next");
  free (t);
  grpc_result_free (&res);
  c = call_of ("Fail", "16 bad token");
  assert_int_equal (grpc_unary (curl, &c, &reply, &len, &res), -1);
  assert_int_equal (res.code, GRPC_UNAUTHENTICATED);
  assert_string_equal (res.message, "bad token");
  grpc_result_free (&res);
  /* a method the server does not have.  grpcio answers before it reads
   * the request, then resets the stream; libcurl 7.88 sometimes loses
   * the answer to the reset: then it is a (retryable) stream error. */
  c = call_of ("Nope", "");
  assert_int_equal (grpc_unary (curl, &c, &reply, &len, &res), -1);
  if (res.code != GRPC_UNIMPLEMENTED)
    {
      assert_int_equal (res.code, GRPC_UNAVAILABLE);
      assert_int_equal (res.origin, GRPC_FROM_TRANSPORT);
      assert_non_null (strstr (res.message, "Stream error"));
    }
  grpc_result_free (&res);
}

struct stream_check {
  unsigned n;
  size_t sizes[8];
  bool ok;
  int stop_after;
};

static int
check_message (void *ctx, const uint8_t *msg, size_t len)
{
  struct stream_check *s = ctx;
  if (s->n < 8)
    s->sizes[s->n] = len;
  for (size_t j = 0; j < len; j++)
    if (msg[j] != (s->n + j) % 251)
      s->ok = false;
  s->n++;
  return s->stop_after && (int) s->n >= s->stop_after;
}

static void
test_stream (void **state)
{
  (void) state;
  need_peer ();
  /* sizes that straddle HTTP/2 frames (16 KiB) and chunks */
  struct grpc_call c = call_of ("Stream", "1,70000,0,3,20000,5");
  struct stream_check s = { .ok = true };
  c.on_message = check_message;
  c.ctx = &s;
  struct grpc_result res;
  assert_int_equal (grpc_server_stream (curl, &c, &res), 0);
  assert_int_equal (res.messages, 6);
  assert_int_equal (s.n, 6);
  assert_true (s.ok);
  assert_int_equal (s.sizes[1], 70000);
  assert_int_equal (s.sizes[2], 0);
  assert_int_equal (s.sizes[4], 20000);
  grpc_result_free (&res);
}

static void
test_stream_aborted (void **state)
{
  (void) state;
  need_peer ();
  struct grpc_call c = call_of ("StreamAbort", "10,40000,7");
  struct stream_check s = { .ok = true };
  c.on_message = check_message;
  c.ctx = &s;
  struct grpc_result res;
  assert_int_equal (grpc_server_stream (curl, &c, &res), -1);
  assert_int_equal (s.n, 3); /* every message before the abort */
  assert_true (s.ok);
  assert_int_equal (res.messages, 3);
  assert_int_equal (res.code, GRPC_UNAVAILABLE);
  assert_int_equal (res.origin, GRPC_FROM_SERVER);
  assert_string_equal (res.message, "going away");
  assert_true (grpc_retryable (&res)); /* the caller resumes at its offset */
  grpc_result_free (&res);
}

static void
test_stream_stopped (void **state)
{
  (void) state;
  need_peer ();
  struct grpc_call c = call_of ("Stream", "10,10,10,10");
  struct stream_check s = { .ok = true, .stop_after = 2 };
  c.on_message = check_message;
  c.ctx = &s;
  struct grpc_result res;
  assert_int_equal (grpc_server_stream (curl, &c, &res), -1);
  assert_int_equal (s.n, 2);
  assert_true (res.stopped);
  assert_int_equal (res.code, GRPC_CANCELLED);
  assert_int_equal (res.origin, GRPC_FROM_CLIENT);
  assert_false (grpc_retryable (&res));
  grpc_result_free (&res);
  /* the handle still works */
  c = call_of ("Echo", "after");
  uint8_t *reply;
  size_t len;
  assert_int_equal (grpc_unary (curl, &c, &reply, &len, &res), 0);
  free (reply);
  grpc_result_free (&res);
}

static void
test_tls (void **state)
{
  (void) state;
  need_peer ();
  if (!*tls_url)
    {
      print_message ("skipped: no openssl to make a certificate\n");
      skip ();
    }
  struct grpc_call c = call_of ("Stream", "3,30000,0");
  struct stream_check s = { .ok = true };
  c.base_url = tls_url;
  c.ca_file = cert;
  c.on_message = check_message;
  c.ctx = &s;
  struct grpc_result res;
  if (grpc_server_stream (curl, &c, &res) != 0)
    fail_msg ("%s", res.message);
  assert_int_equal (s.n, 3);
  assert_true (s.ok);
  grpc_result_free (&res);
  /* a certificate not trusted: refused, not retried */
  c.ca_file = NULL;
  assert_int_equal (grpc_server_stream (curl, &c, &res), -1);
  assert_int_equal (res.code, GRPC_UNAVAILABLE);
  assert_false (grpc_retryable (&res));
  grpc_result_free (&res);
}

/* Two calls at once in a curl multi handle (a stdout stream and a wait,
 * as the Modal client may run them), each finished by grpc_transfer_finish. */
static void
test_multi (void **state)
{
  (void) state;
  need_peer ();
  const char *url = *tls_url ? tls_url : base_url;
  CURLM *m = curl_multi_init ();
  CURL *e1 = curl_easy_init (), *e2 = curl_easy_init ();
  struct grpc_call slow = call_of ("Slow", "0.3");
  slow.base_url = url;
  slow.ca_file = cert;
  struct grpc_call c = call_of ("Stream", "5,50000,5");
  struct stream_check s = { .ok = true };
  c.base_url = url;
  c.ca_file = cert;
  c.on_message = check_message;
  c.ctx = &s;
  struct grpc_result r1, r2;
  struct grpc_transfer *t1 = grpc_transfer_new (e1, &slow, &r1);
  struct grpc_transfer *t2 = grpc_transfer_new (e2, &c, &r2);
  assert_non_null (t1);
  assert_non_null (t2);
  curl_multi_setopt (m, CURLMOPT_PIPELINING, CURLPIPE_MULTIPLEX);
  curl_multi_add_handle (m, e1);
  curl_multi_add_handle (m, e2);
  int running = 1, done = 0;
  long long end = monotonic_ms () + 20000;
  while (done < 2 && monotonic_ms () < end)
    {
      curl_multi_perform (m, &running);
      CURLMsg *msg;
      int left;
      while ((msg = curl_multi_info_read (m, &left)))
        if (msg->msg == CURLMSG_DONE)
          {
            bool first = msg->easy_handle == e1;
            if (grpc_transfer_finish (first ? t1 : t2, msg->data.result, first ? &r1 : &r2))
              fail_msg ("%s", first ? r1.message : r2.message);
            done++;
          }
      if (done < 2)
        curl_multi_poll (m, NULL, 0, 100, NULL);
    }
  assert_int_equal (done, 2);
  assert_int_equal (s.n, 3);
  assert_true (s.ok);
  curl_multi_remove_handle (m, e1);
  curl_multi_remove_handle (m, e2);
  grpc_transfer_free (t1);
  grpc_transfer_free (t2);
  grpc_result_free (&r1);
  grpc_result_free (&r2);
  curl_easy_cleanup (e1);
  curl_easy_cleanup (e2);
  curl_multi_cleanup (m);
}

static void
test_oversize (void **state)
{
  (void) state;
  need_peer ();
  struct grpc_call c = call_of ("Big", "2000000");
  c.max_message = 1 << 20;
  struct grpc_result res;
  uint8_t *reply;
  size_t len;
  assert_int_equal (grpc_unary (curl, &c, &reply, &len, &res), -1);
  assert_int_equal (res.code, GRPC_RESOURCE_EXHAUSTED);
  assert_int_equal (res.origin, GRPC_FROM_CLIENT);
  assert_non_null (strstr (res.message, "size limit"));
  grpc_result_free (&res);
  c.max_message = 0; /* the default 16 MiB lets it in */
  assert_int_equal (grpc_unary (curl, &c, &reply, &len, &res), 0);
  assert_int_equal (len, 2000000);
  free (reply);
  grpc_result_free (&res);
}

static void
test_metadata (void **state)
{
  (void) state;
  need_peer ();
  const char *meta[] = { "x-test-token: sekret-123", "x-modal-client-type: 9", NULL };
  struct grpc_call c = call_of ("Metadata", "");
  c.metadata = meta;
  struct grpc_result res;
  uint8_t *reply;
  size_t len;
  assert_int_equal (grpc_unary (curl, &c, &reply, &len, &res), 0);
  char *text = strndup ((char *) reply, len);
  assert_non_null (strstr (text, "x-test-token=sekret-123"));
  assert_non_null (strstr (text, "x-modal-client-type=9"));
  free (text);
  free (reply);
  grpc_result_free (&res);
  /* a value that would add a header: refused, and not quoted */
  const char *bad[] = { "x-test-token: sekret-123\r\nx-evil: 1", NULL };
  c.metadata = bad;
  assert_int_equal (grpc_unary (curl, &c, &reply, &len, &res), -1);
  assert_int_equal (res.code, GRPC_INVALID_ARGUMENT);
  assert_null (strstr (res.message, "sekret"));
  grpc_result_free (&res);
}

static void
test_deadline (void **state)
{
  (void) state;
  need_peer ();
  struct grpc_call c = call_of ("Slow", "3");
  c.timeout_ms = 300;
  struct grpc_result res;
  uint8_t *reply;
  size_t len;
  long long t0 = monotonic_ms ();
  assert_int_equal (grpc_unary (curl, &c, &reply, &len, &res), -1);
  long long took = monotonic_ms () - t0;
  assert_int_equal (res.code, GRPC_DEADLINE_EXCEEDED);
  assert_true (took < 2000);
  assert_true (grpc_retryable (&res));
  grpc_result_free (&res);
}

static void
test_refused_connection (void **state)
{
  (void) state;
  /* a port nothing listens on: bind one, close it */
  CURL *h = curl_easy_init ();
  const char *meta[] = { "x-modal-token-secret: as-very-secret", NULL };
  struct grpc_call c = { .base_url = "http://127.0.0.1:1", .path = "/airlock.test.Peer/Echo",
                         .metadata = meta, .request = "", .timeout_ms = 5000 };
  struct grpc_result res;
  uint8_t *reply;
  size_t len;
  assert_int_equal (grpc_unary (h, &c, &reply, &len, &res), -1);
  assert_int_equal (res.code, GRPC_UNAVAILABLE);
  assert_int_equal (res.origin, GRPC_FROM_TRANSPORT);
  assert_int_equal (res.http_status, 0);
  assert_true (grpc_retryable (&res));
  assert_null (strstr (res.message, "very-secret"));
  assert_non_null (strstr (res.message, "127.0.0.1"));
  grpc_result_free (&res);
  c.base_url = "ftp://127.0.0.1:1";
  assert_int_equal (grpc_unary (h, &c, &reply, &len, &res), -1);
  assert_int_equal (res.code, GRPC_INVALID_ARGUMENT);
  grpc_result_free (&res);
  curl_easy_cleanup (h);
}

static void
test_retries_keep_the_key (void **state)
{
  (void) state;
  need_peer ();
  struct grpc_call c = call_of ("Flaky", "2");
  struct grpc_result res;
  uint8_t *reply;
  size_t len;
  long long t0 = monotonic_ms ();
  assert_int_equal (grpc_unary_retry (curl, &c, 3, 0, &reply, &len, &res), 0);
  long long took = monotonic_ms () - t0;
  char *text = strndup ((char *) reply, len);
  /* one key for the three attempts: the server counted them together */
  assert_non_null (strstr (text, "attempt=2 calls=3"));
  assert_int_equal (strlen (strstr (text, "key=") + 4), 36 + strlen (" attempt=2 calls=3"));
  assert_true (took >= 75 + 150);
  free (text);
  free (reply);
  grpc_result_free (&res);
  /* more failures than retries: the last failure comes back */
  c = call_of ("Flaky", "5");
  assert_int_equal (grpc_unary_retry (curl, &c, 2, 0, &reply, &len, &res), -1);
  assert_int_equal (res.code, GRPC_UNAVAILABLE);
  assert_string_equal (res.message, "try again");
  grpc_result_free (&res);
  /* not retryable: one attempt */
  c = call_of ("Fail", "7 no");
  t0 = monotonic_ms ();
  assert_int_equal (grpc_unary_retry (curl, &c, 3, 0, &reply, &len, &res), -1);
  assert_int_equal (res.code, GRPC_PERMISSION_DENIED);
  assert_true (monotonic_ms () - t0 < 75);
  grpc_result_free (&res);
}

int
main (void)
{
  signal (SIGPIPE, SIG_IGN);
  const struct CMUnitTest tests[] = {
    cmocka_unit_test (test_frames_split_anywhere),
    cmocka_unit_test (test_frames_refused),
    cmocka_unit_test (test_percent_decode_and_names),
    cmocka_unit_test (test_retry_policy),
    cmocka_unit_test (test_unary),
    cmocka_unit_test (test_connection_reused),
    cmocka_unit_test (test_trailers_only_error),
    cmocka_unit_test (test_stream),
    cmocka_unit_test (test_stream_aborted),
    cmocka_unit_test (test_stream_stopped),
    cmocka_unit_test (test_tls),
    cmocka_unit_test (test_multi),
    cmocka_unit_test (test_oversize),
    cmocka_unit_test (test_metadata),
    cmocka_unit_test (test_deadline),
    cmocka_unit_test (test_refused_connection),
    cmocka_unit_test (test_retries_keep_the_key),
  };
  return cmocka_run_group_tests (tests, peer_start, peer_stop);
}
