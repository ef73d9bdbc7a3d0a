/* SPDX-License-Identifier: MIT */
/* Unit tests for the Docker Engine API client (backends/docker_engine.c),
 * against a fake engine in this process: a unix socket served by a
 * thread that reads each request as a real engine would (head, then as
 * many body bytes as Content-Length says) and answers with bytes the test
 * chose, in the real protocol's shapes: chunked bodies, streams of JSON
 * lines, error answers.
 * What the client sent is kept for the test to check.  The real dockerd
 * is tested by tests/docker.bats.  Also the seccomp profile rendered from
 * the helper's table (backends/docker_seccomp.c). */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "docker_engine.h"
#include "docker_seccomp.h"

struct fake {
  char dir[64], path[128];
  int listen_fd;
  pthread_t thread;
  const char *answer;  /* sent after each request */
  size_t answer_len;
  char request[8192];  /* the last request, head and body */
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
      size_t len = 0;
      char *end = NULL;
      while (len < sizeof f->request - 1)
        {
          ssize_t n = read (c, f->request + len, sizeof f->request - 1 - len);
          if (n <= 0)
            break;
          len += (size_t) n;
          f->request[len] = '\0';
          if ((end = strstr (f->request, "\r\n\r\n"))
              && len >= (size_t) (end + 4 - f->request) + content_length (f->request))
            break;
        }
      if (write (c, f->answer, f->answer_len) < 0)
        {
          close (c);
          continue;
        }
      close (c);
    }
}

static int
fake_setup (void **state)
{
  struct fake *f = calloc (1, sizeof *f);
  strcpy (f->dir, "/tmp/airlock-fake-engine.XXXXXX");
  assert_non_null (mkdtemp (f->dir));
  snprintf (f->path, sizeof f->path, "%s/docker.sock", f->dir);
  struct sockaddr_un sa = { .sun_family = AF_UNIX };
  strcpy (sa.sun_path, f->path);
  f->listen_fd = socket (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  assert_int_equal (bind (f->listen_fd, (struct sockaddr *) &sa, sizeof sa), 0);
  assert_int_equal (listen (f->listen_fd, 8), 0);
  assert_int_equal (pthread_create (&f->thread, NULL, serve, f), 0);
  *state = f;
  return 0;
}

static int
fake_teardown (void **state)
{
  struct fake *f = *state;
  shutdown (f->listen_fd, SHUT_RDWR);
  pthread_join (f->thread, NULL);
  close (f->listen_fd);
  unlink (f->path);
  rmdir (f->dir);
  free (f);
  return 0;
}

static void
answer (struct fake *f, const char *text)
{
  f->answer = text;
  f->answer_len = strlen (text);
}

/* ---- which socket ---- */

static void
test_socket_choice (void **state)
{
  (void) state;
  char *err = NULL;
  char *s = docker_socket_choose ("/cfg.sock", true, "unix:///env.sock", &err);
  assert_string_equal (s, "/cfg.sock"); /* configured explicitly: it wins */
  free (s);
  s = docker_socket_choose ("/var/run/docker.sock", false, "unix:///env.sock", &err);
  assert_string_equal (s, "/env.sock");
  free (s);
  s = docker_socket_choose ("/var/run/docker.sock", false, NULL, &err);
  assert_string_equal (s, "/var/run/docker.sock");
  free (s);
  s = docker_socket_choose ("/var/run/docker.sock", false, "", &err);
  assert_string_equal (s, "/var/run/docker.sock");
  free (s);
  assert_null (docker_socket_choose ("/x", false, "tcp://10.0.0.1:2375", &err));
  assert_non_null (strstr (err, "DOCKER_HOST=tcp://10.0.0.1:2375"));
  assert_non_null (strstr (err, "unix"));
  free (err);
  err = NULL;
  assert_null (docker_socket_choose ("/x", false, "unix://relative", &err));
  free (err);
}

/* ---- requests ---- */

static void
test_ping (void **state)
{
  struct fake *f = *state;
  answer (f, "HTTP/1.1 200 OK\r\nApi-Version: 1.41\r\nContent-Length: 2\r\n"
             "Connection: close\r\n\r\nOK");
  struct docker_engine *e = docker_engine_new (f->path);
  char *err = NULL;
  assert_int_equal (docker_engine_ping (e, &err), 0);
  assert_null (err);
  assert_non_null (strstr (f->request, "GET /v" DOCKER_API_VERSION "/_ping HTTP/1.1\r\n"));
  /* Something else answering on the socket is not an engine. */
  answer (f, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello");
  assert_int_equal (docker_engine_ping (e, &err), -1);
  assert_non_null (strstr (err, "does not answer as a Docker Engine"));
  free (err);
  docker_engine_free (e);
}

static void
test_json_call_chunked (void **state)
{
  struct fake *f = *state;
  answer (f, "HTTP/1.1 201 Created\r\nContent-Type: application/json\r\n"
             "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
             "7\r\n{\"Id\":\"\r\n8\r\nabc123\"}\r\n0\r\n\r\n");
  struct docker_engine *e = docker_engine_new (f->path);
  cJSON *body = cJSON_CreateObject ();
  cJSON_AddStringToObject (body, "Image", "img:1");
  struct docker_response r;
  char *err = NULL;
  assert_int_equal (docker_call (e, "POST", "/containers/create?name=x", body, &r, &err), 0);
  assert_int_equal (r.status, 201);
  const cJSON *id = cJSON_GetObjectItemCaseSensitive (r.json, "Id");
  assert_true (cJSON_IsString (id));
  assert_string_equal (id->valuestring, "abc123");
  /* The request: the path under the API version, the JSON body. */
  assert_non_null (strstr (f->request, "POST /v" DOCKER_API_VERSION "/containers/create?name=x "));
  assert_non_null (strstr (f->request, "Content-Type: application/json"));
  assert_non_null (strstr (f->request, "\r\n\r\n{\"Image\":\"img:1\"}"));
  docker_response_free (&r);
  cJSON_Delete (body);
  docker_engine_free (e);
}

static void
test_error_message (void **state)
{
  struct fake *f = *state;
  answer (f, "HTTP/1.1 404 Not Found\r\nContent-Type: application/json\r\n"
             "Content-Length: 40\r\nConnection: close\r\n\r\n"
             "{\"message\":\"No such image: nope:latest\"}");
  struct docker_engine *e = docker_engine_new (f->path);
  struct docker_response r;
  char *err = NULL;
  assert_int_equal (docker_call (e, "GET", "/images/nope/json", NULL, &r, &err), 0);
  assert_int_equal (r.status, 404);
  assert_string_equal (docker_response_message (&r), "No such image: nope:latest");
  docker_response_free (&r);
  /* Not JSON: the body itself. */
  answer (f, "HTTP/1.1 500 Internal Server Error\r\nContent-Length: 9\r\n"
             "Connection: close\r\n\r\nbroken\r\n\r\n");
  assert_int_equal (docker_call (e, "GET", "/x", NULL, &r, &err), 0);
  assert_int_equal (r.status, 500);
  assert_string_equal (docker_response_message (&r), "broken");
  docker_response_free (&r);
  docker_engine_free (e);
}

static void
collect (void *ctx, const char *line)
{
  char *all = ctx;
  strcat (all, line);
  strcat (all, "|");
}

static void
test_json_lines (void **state)
{
  struct fake *f = *state;
  answer (f, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
             "15\r\n{\"status\":\"Pulling\"}\n\r\n"
             "5\r\n{\"sta\r\n"
             "d\r\ntus\":\"Done\"}\n\r\n0\r\n\r\n");
  struct docker_engine *e = docker_engine_new (f->path);
  char all[256] = "";
  struct docker_response r;
  char *err = NULL;
  assert_int_equal (docker_call_lines (e, "POST", "/images/create?fromImage=x",
                                       collect, all, &r, &err), 0);
  assert_int_equal (r.status, 200);
  /* Each line whole, even when a chunk cut it. */
  assert_string_equal (all, "{\"status\":\"Pulling\"}|{\"status\":\"Done\"}|");
  docker_response_free (&r);
  docker_engine_free (e);
}

/* ---- the socket cannot be used ---- */

static void
test_daemon_not_running (void **state)
{
  (void) state;
  char *err = NULL;
  struct docker_engine *e = docker_engine_new ("/nonexistent/docker.sock");
  assert_int_equal (docker_engine_ping (e, &err), -1);
  assert_non_null (strstr (err, "Docker daemon is not running at /nonexistent/docker.sock"));
  assert_non_null (strstr (err, "dockerd"));
  free (err);
  docker_engine_free (e);
  /* A socket file nobody listens on: refused, the same advice. */
  char dir[] = "/tmp/airlock-dead-engine.XXXXXX";
  assert_non_null (mkdtemp (dir));
  char path[128];
  snprintf (path, sizeof path, "%s/docker.sock", dir);
  struct sockaddr_un sa = { .sun_family = AF_UNIX };
  strcpy (sa.sun_path, path);
  int fd = socket (AF_UNIX, SOCK_STREAM, 0);
  assert_int_equal (bind (fd, (struct sockaddr *) &sa, sizeof sa), 0);
  close (fd);
  e = docker_engine_new (path);
  err = NULL;
  assert_int_equal (docker_engine_ping (e, &err), -1);
  assert_non_null (strstr (err, "not running"));
  free (err);
  docker_engine_free (e);
  unlink (path);
  rmdir (dir);
}

/* The rule of the profile for name whose first arg has this op and
 * value, or NULL; n: how many rules name it. */
static const cJSON *
find_rule (const cJSON *syscalls, const char *name, const char *op,
           double value, int *n)
{
  const cJSON *r, *found = NULL;
  *n = 0;
  cJSON_ArrayForEach (r, syscalls)
    {
      const cJSON *nm;
      cJSON_ArrayForEach (nm, cJSON_GetObjectItem (r, "names"))
        if (!strcmp (nm->valuestring, name))
          {
            (*n)++;
            const cJSON *a = cJSON_GetArrayItem (cJSON_GetObjectItem (r, "args"), 0);
            if (!op ? !a
                    : a && !strcmp (cJSON_GetObjectItem (a, "op")->valuestring, op)
                          && cJSON_GetObjectItem (a, "value")->valuedouble == value)
              found = r;
          }
    }
  return found;
}

static void
test_seccomp_profile (void **state)
{
  (void) state;
  cJSON *p = docker_seccomp_profile ();
  assert_non_null (p);
  assert_string_equal (cJSON_GetObjectItem (p, "defaultAction")->valuestring,
                       "SCMP_ACT_ALLOW");
  const cJSON *sc = cJSON_GetObjectItem (p, "syscalls");
  int n;
  /* io_uring and nested namespaces: denied outright, EPERM. */
  const char *outright[] = { "io_uring_setup", "io_uring_enter", "io_uring_register",
                             "unshare", "setns", "mount", "keyctl", "bpf" };
  for (size_t i = 0; i < sizeof outright / sizeof *outright; i++)
    {
      const cJSON *r = find_rule (sc, outright[i], NULL, 0, &n);
      assert_non_null (r);
      assert_int_equal (n, 1);
      assert_string_equal (cJSON_GetObjectItem (r, "action")->valuestring, "SCMP_ACT_ERRNO");
      assert_int_equal (cJSON_GetObjectItem (r, "errnoRet")->valueint, EPERM);
    }
  /* clone with CLONE_NEWUSER, whatever else is set: mask and value. */
  const cJSON *r = find_rule (sc, "clone", "SCMP_CMP_MASKED_EQ", 0x10000000, &n);
  assert_non_null (r);
  assert_int_equal (n, 8); /* one per namespace flag */
  const cJSON *a = cJSON_GetArrayItem (cJSON_GetObjectItem (r, "args"), 0);
  assert_int_equal (cJSON_GetObjectItem (a, "index")->valueint, 0);
  assert_int_equal (cJSON_GetObjectItem (a, "valueTwo")->valuedouble, 0x10000000);
  /* clone3: ENOSYS, so that libc falls back to clone. */
  r = find_rule (sc, "clone3", NULL, 0, &n);
  assert_non_null (r);
  assert_int_equal (cJSON_GetObjectItem (r, "errnoRet")->valueint, ENOSYS);
  /* personality: above 32 bits, and the helper's 32 bit patterns. */
  assert_non_null (find_rule (sc, "personality", "SCMP_CMP_GT", 0xffffffffu, &n));
  assert_int_equal (n, 33);
  /* read() and friends are not touched. */
  assert_null (find_rule (sc, "read", NULL, 0, &n));
  assert_int_equal (n, 0);
  cJSON_Delete (p);
}

int
main (void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test (test_socket_choice),
    cmocka_unit_test_setup_teardown (test_ping, fake_setup, fake_teardown),
    cmocka_unit_test_setup_teardown (test_json_call_chunked, fake_setup, fake_teardown),
    cmocka_unit_test_setup_teardown (test_error_message, fake_setup, fake_teardown),
    cmocka_unit_test_setup_teardown (test_json_lines, fake_setup, fake_teardown),
    cmocka_unit_test (test_daemon_not_running),
    cmocka_unit_test (test_seccomp_profile),
  };
  return cmocka_run_group_tests (tests, NULL, NULL);
}
