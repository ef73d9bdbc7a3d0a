/* SPDX-License-Identifier: MIT */
/* The docker backend's sessions (see docker_session.h).
 *
 * A session is one container (docker_container.c).  Each command is an
 * exec of our job leader, `DOCKER_LEADER_PATH --job --script -- bash -c
 * LOADER` (exec_leader.h, shell_state.h): POST /containers/{id}/exec, then POST
 * /exec/{id}/start
 * with the connection hijacked into a raw stream that carries, in
 * docker's multiplexed frames, the leader's framed protocol (stdin and
 * signals in, and first the command's script, which must never be in the
 * exec's Cmd: docker inspect and the host's ps show that; stdout, stderr,
 * fd 3 and the exit status out).  So a
 * timeout or an interrupt kills the command's whole tree inside the
 * container, and a broker that dies takes its commands with it (the
 * leader sees its stdin end).
 *
 * The exit status comes from the leader once the command's output is
 * drained.  A stream that ends without one is a lost job, an error naming
 * the cause (exit_from_inspect): the leader was killed or could not start
 * (the exec's own exit code tells how), or the engine or the container
 * went away.  event_fd is
 * an epoll descriptor over every job's connection.
 *
 * Everything the container sends is untrusted: code in it may own the
 * leader's uid.  Frames are bounded and only ever describe that job. */
#define _GNU_SOURCE
#include "docker_session.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "docker_container.h"
#include "exec_leader.h"
#include "cgroup_oom.h"
#include "posture.h"
#include "xprintf.h"

#define READ_CHUNK (128 << 10)
#define DOCKER_FRAME_MAX (1 << 20) /* docker sends at most 32 KiB frames */
#define BOOTSTRAP_REPLAY_MS 30000
#define INTERNAL_JOB UINT32_MAX

struct buf {
  uint8_t *p;
  size_t off, len, cap; /* data is p[off..len) */
};

struct djob {
  uint32_t id;
  int fd;
  char *exec_id;
  struct buf raw;    /* docker's multiplexed frames, as read */
  struct buf lead;   /* the leader's frames (docker's stdout payloads) */
  struct buf out;    /* frames to send: stdin, signals */
  char *note;        /* said on stderr before the job's output */
  bool eof, exited;
  struct djob *next;
};

struct backend_session {
  struct docker_container c;
  char *session;
  int ep, wake;
  struct djob *jobs;
  uint8_t *ev;       /* the data of the event handed out last */
  size_t ev_cap;
  bool lost;
  char *lost_why;
  /* The first command of a session is its bootstrap (session.c runs it
   * before handing the session out): replayed in a recreated container,
   * so the shell state directory and the starting directory exist. */
  char **boot_argv, **boot_env;
  char *boot_script;
  size_t boot_script_len;
  int oom_fd; /* the container's memory cgroup's OOM count, or -1 */
};

static long long
now_ms (void)
{
  struct timespec ts;
  clock_gettime (CLOCK_MONOTONIC, &ts);
  return (long long) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- buffers ---- */

static bool
buf_add (struct buf *b, const void *data, size_t n)
{
  if (b->off > 0 && (b->off == b->len || b->len + n > b->cap))
    {
      memmove (b->p, b->p + b->off, b->len - b->off);
      b->len -= b->off;
      b->off = 0;
    }
  if (b->len + n > b->cap)
    {
      size_t cap = b->cap ? b->cap : 4096;
      while (cap < b->len + n)
        cap *= 2;
      uint8_t *p = realloc (b->p, cap);
      if (!p)
        return false;
      b->p = p;
      b->cap = cap;
    }
  memcpy (b->p + b->len, data, n);
  b->len += n;
  return true;
}

static size_t
buf_size (const struct buf *b)
{
  return b->len - b->off;
}

static uint8_t *
buf_data (const struct buf *b)
{
  return b->p + b->off;
}

/* ---- jobs ---- */

static struct djob *
find_job (struct backend_session *s, uint32_t id)
{
  for (struct djob *j = s->jobs; j; j = j->next)
    if (j->id == id)
      return j;
  return NULL;
}

static void
free_job (struct backend_session *s, struct djob *j)
{
  for (struct djob **p = &s->jobs; *p; p = &(*p)->next)
    if (*p == j)
      {
        *p = j->next;
        break;
      }
  if (j->fd >= 0)
    {
      epoll_ctl (s->ep, EPOLL_CTL_DEL, j->fd, NULL);
      close (j->fd); /* the leader sees its stdin end: the tree is killed */
    }
  free (j->exec_id);
  free (j->raw.p);
  free (j->lead.p);
  free (j->out.p);
  free (j->note);
  free (j);
}

static void
want_write (struct backend_session *s, struct djob *j, bool on)
{
  struct epoll_event e = { .events = EPOLLIN | (on ? EPOLLOUT : 0), .data.ptr = j };
  epoll_ctl (s->ep, EPOLL_CTL_MOD, j->fd, &e);
}

/* Send what is queued without blocking; the rest waits for EPOLLOUT. */
static void
flush_job (struct backend_session *s, struct djob *j)
{
  size_t before = buf_size (&j->out);
  while (buf_size (&j->out) > 0 && j->fd >= 0)
    {
      ssize_t w = send (j->fd, buf_data (&j->out), buf_size (&j->out),
                        MSG_DONTWAIT | MSG_NOSIGNAL);
      if (w < 0 && errno == EINTR)
        continue;
      if (w <= 0)
        {
          if (w < 0 && errno != EAGAIN)
            j->out.off = j->out.len; /* the leader is gone: nothing to feed */
          break;
        }
      j->out.off += (size_t) w;
    }
  if (before && j->fd >= 0)
    want_write (s, j, buf_size (&j->out) > 0);
}

static int
queue_frame (struct backend_session *s, struct djob *j, uint8_t type,
             const void *data, size_t n)
{
  uint8_t h[XL_HEADER];
  xl_put_header (h, type, (uint32_t) n);
  if (!buf_add (&j->out, h, sizeof h) || (n && !buf_add (&j->out, data, n)))
    return -ENOMEM;
  flush_job (s, j);
  return 0;
}

/* ---- starting a command ---- */

static char **
copy_strv (const char *const *v)
{
  size_t n = 0;
  while (v && v[n])
    n++;
  char **c = calloc (n + 1, sizeof *c);
  for (size_t i = 0; c && i < n; i++)
    if (!(c[i] = strdup (v[i])))
      return c; /* shorter: harmless for a replay */
  return c;
}

static void
free_strv (char **v)
{
  for (char **p = v; p && *p; p++)
    free (*p);
  free (v);
}

/* POST /containers/{id}/exec: the exec's id, or NULL with *err; *status
 * is the HTTP status (404/409: the container is gone or stopped). */
static char *
create_exec (struct backend_session *s, const struct backend_spawn *sp,
             long *status, char **err)
{
  cJSON *b = cJSON_CreateObject ();
  cJSON_AddBoolToObject (b, "AttachStdin", true);
  cJSON_AddBoolToObject (b, "AttachStdout", true);
  cJSON_AddBoolToObject (b, "AttachStderr", true);
  cJSON_AddBoolToObject (b, "Tty", false);
  cJSON_AddStringToObject (b, "WorkingDir", sp->cwd && *sp->cwd ? sp->cwd : "/");
  cJSON *env = cJSON_AddArrayToObject (b, "Env");
  for (const char *const *e = sp->envp; e && *e; e++)
    cJSON_AddItemToArray (env, cJSON_CreateString (*e));
  cJSON *cmd = cJSON_AddArrayToObject (b, "Cmd");
  cJSON_AddItemToArray (cmd, cJSON_CreateString (DOCKER_LEADER_PATH));
  cJSON_AddItemToArray (cmd, cJSON_CreateString (EXEC_LEADER_FLAG));
  if (sp->stdin_pipe)
    cJSON_AddItemToArray (cmd, cJSON_CreateString (EXEC_LEADER_STDIN_FLAG));
  if (sp->script)
    cJSON_AddItemToArray (cmd, cJSON_CreateString (EXEC_LEADER_SCRIPT_FLAG));
  cJSON_AddItemToArray (cmd, cJSON_CreateString ("--"));
  for (const char *const *a = sp->argv; *a; a++)
    cJSON_AddItemToArray (cmd, cJSON_CreateString (*a));
  char *path = xprintf ("/containers/%s/exec", s->c.id);
  struct docker_response r;
  char *id = NULL;
  *status = 0;
  if (path && docker_call (s->c.eng, "POST", path, b, &r, err) == 0)
    {
      *status = r.status;
      const cJSON *j = cJSON_GetObjectItemCaseSensitive (r.json, "Id");
      if (r.status == 201 && cJSON_IsString (j))
        id = strdup (j->valuestring);
      else
        *err = xprintf ("cannot start the command in container %s: %s",
                        s->c.name, docker_response_message (&r));
      docker_response_free (&r);
    }
  free (path);
  cJSON_Delete (b);
  return id;
}

static struct djob *
start_job (struct backend_session *s, const struct backend_spawn *sp,
           long *status, char **err)
{
  char *exec_id = create_exec (s, sp, status, err);
  if (!exec_id)
    return NULL;
  cJSON *b = cJSON_CreateObject ();
  cJSON_AddBoolToObject (b, "Detach", false);
  cJSON_AddBoolToObject (b, "Tty", false);
  char *path = xprintf ("/exec/%s/start", exec_id);
  uint8_t *early = NULL;
  size_t early_len = 0;
  int fd = path ? docker_hijack (s->c.eng, path, b, status, &early, &early_len, err) : -1;
  free (path);
  cJSON_Delete (b);
  struct djob *j = fd >= 0 ? calloc (1, sizeof *j) : NULL;
  if (!j)
    {
      if (fd >= 0)
        {
          close (fd);
          *err = xprintf ("out of memory");
        }
      free (exec_id);
      free (early);
      return NULL;
    }
  j->id = sp->job;
  j->fd = fd;
  j->exec_id = exec_id;
  if (early_len)
    buf_add (&j->raw, early, early_len);
  free (early);
  struct epoll_event e = { .events = EPOLLIN, .data.ptr = j };
  epoll_ctl (s->ep, EPOLL_CTL_ADD, fd, &e);
  j->next = s->jobs;
  s->jobs = j;
  /* The script, before any stdin: the leader feeds it to fd 4. */
  int rc = 0;
  for (size_t off = 0, n; sp->script && rc == 0 && off < sp->script_len; off += n)
    {
      n = sp->script_len - off < XL_MAX_PAYLOAD ? sp->script_len - off : XL_MAX_PAYLOAD;
      rc = queue_frame (s, j, XL_SCRIPT, sp->script + off, n);
    }
  if (sp->script && rc == 0)
    rc = queue_frame (s, j, XL_SCRIPT_END, NULL, 0);
  if (rc < 0)
    {
      *err = xprintf ("out of memory");
      free_job (s, j);
      return NULL;
    }
  return j;
}

/* ---- reading a job's stream ---- */

static const uint8_t *
hold (struct backend_session *s, const uint8_t *data, size_t n)
{
  if (n > s->ev_cap)
    {
      uint8_t *p = realloc (s->ev, n);
      if (!p)
        return NULL;
      s->ev = p;
      s->ev_cap = n;
    }
  memcpy (s->ev, data, n);
  return s->ev;
}

static uint32_t
be32 (const uint8_t *p)
{
  return xl_get_u32 (p);
}

/* The next event in what the job sent so far: 1 (ev filled), 0 (need
 * more), -1 (the stream broke the protocol: *why). */
static int
parse_job (struct backend_session *s, struct djob *j, struct backend_event *ev,
           const char **why)
{
  for (;;)
    {
      size_t n = buf_size (&j->lead);
      if (n >= XL_HEADER)
        {
          const uint8_t *f = buf_data (&j->lead);
          uint32_t len = be32 (f + 1);
          if (len > XL_MAX_PAYLOAD)
            return *why = "the job leader sent an oversized frame", -1;
          if (n >= XL_HEADER + len)
            {
              j->lead.off += XL_HEADER + len;
              const uint8_t *p = f + XL_HEADER;
              *ev = (struct backend_event){ .job = j->id };
              if (j->exited)
                continue; /* its exit was reported: nothing more counts */
              if (f[0] >= XL_OUT && f[0] <= XL_META)
                {
                  ev->type = BACKEND_OUTPUT;
                  ev->stream = f[0];
                  ev->data = hold (s, p, len);
                  ev->len = ev->data ? len : 0;
                  return 1;
                }
              if (f[0] == XL_EXIT && len == 8)
                {
                  ev->type = BACKEND_EXITED;
                  ev->exit_code = (int) (be32 (p) & 0xff);
                  ev->signal = (int) (be32 (p + 4) & 0x7f);
                  j->exited = true;
                  return 1;
                }
              return *why = "the job leader sent an unknown frame", -1;
            }
        }
      size_t r = buf_size (&j->raw);
      if (r < DOCKER_FRAME_HEADER)
        return 0;
      const uint8_t *h = buf_data (&j->raw);
      uint32_t size = be32 (h + 4);
      if (size > DOCKER_FRAME_MAX || h[0] > 2)
        return *why = "the exec stream is not multiplexed as expected", -1;
      if (r < DOCKER_FRAME_HEADER + size)
        return 0;
      j->raw.off += DOCKER_FRAME_HEADER + size;
      const uint8_t *p = h + DOCKER_FRAME_HEADER;
      if (h[0] == 1)
        {
          if (!buf_add (&j->lead, p, size))
            return *why = "out of memory", -1;
          continue;
        }
      if (h[0] == 2 && size > 0)
        {
          /* The leader's own complaints (or docker's, when it could not
           * run the leader): the job's stderr. */
          *ev = (struct backend_event){ .type = BACKEND_OUTPUT, .job = j->id,
                                        .stream = 2 };
          ev->data = hold (s, p, size);
          ev->len = ev->data ? size : 0;
          if (!j->exited)
            return 1;
        }
    }
}

/* GET /containers/ID/json: 0 with *r (any status), -1 with *err. */
static int
inspect_container (struct backend_session *s, struct docker_response *r, char **err)
{
  char *path = xprintf ("/containers/%s/json", s->c.id);
  int rc = path ? docker_call (s->c.eng, "GET", path, NULL, r, err) : -1;
  free (path);
  return rc < 0 ? -1 : 0;
}

/* What became of the session's container: NULL while it runs, else a
 * sentence naming the cause (malloc'd). */
static char *
container_fate (struct backend_session *s)
{
  struct docker_response r;
  char *err = NULL, *fate;
  if (inspect_container (s, &r, &err) < 0)
    {
      fate = xprintf ("the Docker engine at %s does not answer (%s): dockerd "
                      "stopped or is restarting, and its containers stop with "
                      "it unless live-restore is on",
                      docker_engine_socket (s->c.eng), err ? err : "?");
      free (err);
      return fate;
    }
  const cJSON *st = cJSON_GetObjectItemCaseSensitive (r.json, "State");
  const cJSON *code = cJSON_GetObjectItemCaseSensitive (st, "ExitCode");
  const cJSON *at = cJSON_GetObjectItemCaseSensitive (st, "FinishedAt");
  const cJSON *why = cJSON_GetObjectItemCaseSensitive (st, "Error");
  if (r.status == 404)
    fate = xprintf ("container %s is gone (removed)", s->c.name);
  else if (r.status != 200)
    fate = xprintf ("container %s cannot be inspected: %s", s->c.name,
                    docker_response_message (&r));
  else if (cJSON_IsTrue (cJSON_GetObjectItemCaseSensitive (st, "Running")))
    fate = NULL;
  else
    fate = xprintf ("the Docker engine at %s stopped container %s (exit "
                    "code %d%s%s%s%s%s): dockerd stopped or restarted (its "
                    "containers stop with it unless live-restore is on), or "
                    "someone stopped the container",
                    docker_engine_socket (s->c.eng), s->c.name,
                    cJSON_IsNumber (code) ? code->valueint : -1,
                    cJSON_IsTrue (cJSON_GetObjectItemCaseSensitive (st, "OOMKilled"))
                        ? ", out of memory" : "",
                    cJSON_IsString (at) ? ", at " : "",
                    cJSON_IsString (at) ? at->valuestring : "",
                    cJSON_IsString (why) && *why->valuestring ? ": " : "",
                    cJSON_IsString (why) ? why->valuestring : "");
  docker_response_free (&r);
  return fate;
}

/* The stream ended before the leader reported an exit.  Either the leader
 * itself was killed (OOM, a kill from inside) or could not start: the
 * exec's own exit code says how, but it is no exit code of the command's,
 * which nobody saw (what the command started died with the leader: pid 1
 * kills a dead leader's orphans).  Or the engine or the container went away under
 * it (dockerd stopped or restarted: its API goes first, then it stops
 * the containers): that is no exit code of the command but an error, with
 * the cause. */
static void
exit_from_inspect (struct backend_session *s, struct djob *j,
                   struct backend_event *ev)
{
  char *path = xprintf ("/exec/%s/json", j->exec_id);
  struct docker_response r = { 0 };
  char *err = NULL, *fate = NULL;
  const char *sock = docker_engine_socket (s->c.eng);
  *ev = (struct backend_event){ .job = j->id };
  int rc = path ? docker_call (s->c.eng, "GET", path, NULL, &r, &err) : -1;
  free (path);
  const cJSON *code = cJSON_GetObjectItemCaseSensitive (r.json, "ExitCode");
  if (rc < 0)
    {
      char *why = err;
      err = xprintf ("the Docker engine went away while the command ran "
                     "(dockerd at %s stopped or restarted?): %s", sock,
                     why ? why : "no answer");
      free (why);
    }
  else if (r.status == 200
           && cJSON_IsTrue (cJSON_GetObjectItemCaseSensitive (r.json, "Running")))
    err = xprintf ("the command's stream from the Docker engine at %s was cut "
                   "while it still runs (its job leader ends it when its "
                   "input closes)", sock);
  else if (r.status != 200 || !cJSON_IsNumber (code))
    {
      fate = container_fate (s);
      err = xprintf ("the Docker engine at %s lost the command (%s: dockerd "
                     "restarted?)%s%s", sock, docker_response_message (&r),
                     fate ? "; " : "", fate ? fate : "");
    }
  else
    {
      /* Killed by a signal with the container still running: the engine
       * may be stopping it right now; a moment tells. */
      for (int i = 0; !(fate = container_fate (s)) && code->valueint >= 128 && i < 10; i++)
        poll (NULL, 0, 100);
      if (fate)
        err = xprintf ("the command did not end by itself: %s", fate);
      else if (code->valueint > 128)
        err = xprintf ("the job was lost: its leader was killed by signal %d "
                       "before the command ended (what the command started "
                       "was killed)", code->valueint - 128);
      else
        err = xprintf ("the job was lost: its leader ended (exit code %d) "
                       "without reporting the command's end", code->valueint);
    }
  docker_response_free (&r);
  free (fate);
  if (ev->type != BACKEND_EXITED)
    {
      ev->type = BACKEND_ERROR;
      ev->message = (const char *) hold (s, (const uint8_t *) (err ? err : "lost"),
                                         strlen (err ? err : "lost") + 1);
      fprintf (stderr, "airlock: session %s, job %u: %s\n", s->session, j->id,
               ev->message ? ev->message : "lost");
    }
  free (err);
  j->exited = true;
}

/* 1 with *ev, or 0 when the job has nothing now (it may be freed). */
static int
job_next (struct backend_session *s, struct djob *j, struct backend_event *ev)
{
  if (j->note)
    {
      *ev = (struct backend_event){ .type = BACKEND_OUTPUT, .job = j->id, .stream = 2 };
      ev->data = hold (s, (const uint8_t *) j->note, strlen (j->note));
      ev->len = ev->data ? strlen (j->note) : 0;
      free (j->note);
      j->note = NULL;
      return 1;
    }
  flush_job (s, j);
  for (;;)
    {
      const char *why = NULL;
      int r = parse_job (s, j, ev, &why);
      if (r > 0)
        return 1;
      if (r < 0)
        {
          fprintf (stderr, "airlock: session %s, job %u: %s\n", s->session, j->id, why);
          j->eof = true;
          j->raw.off = j->raw.len;
          j->lead.off = j->lead.len;
        }
      if (!j->eof)
        {
          uint8_t chunk[READ_CHUNK];
          ssize_t n = recv (j->fd, chunk, sizeof chunk, MSG_DONTWAIT);
          if (n < 0 && errno == EINTR)
            continue;
          if (n < 0 && errno == EAGAIN)
            return 0;
          if (n > 0 && buf_add (&j->raw, chunk, (size_t) n))
            continue;
          j->eof = true;
          continue; /* what is buffered still counts */
        }
      /* End of the stream. */
      if (!j->exited)
        {
          exit_from_inspect (s, j, ev);
          return 1; /* freed at the next call */
        }
      free_job (s, j);
      return 0;
    }
}

static int
docker_next_event (struct backend_session *s, struct backend_event *ev,
                   char **err)
{
  if (s->lost)
    {
      *err = xprintf ("%s", s->lost_why);
      return -1;
    }
  uint64_t v;
  if (read (s->wake, &v, sizeof v) < 0 && errno != EAGAIN)
    return 0;
  for (struct djob *j = s->jobs, *next; j; j = next)
    {
      next = j->next;
      if (j->id == INTERNAL_JOB)
        continue;
      if (job_next (s, j, ev))
        return 1;
    }
  return 0;
}

/* Run one command to its end, ignoring its output (the bootstrap replay). */
static int
run_internal (struct backend_session *s, char **argv, char **envp,
              const char *script, size_t script_len, char **err)
{
  struct backend_spawn sp = { .job = INTERNAL_JOB, .argv = (const char *const *) argv,
                              .envp = (const char *const *) envp, .cwd = "/",
                              .script = script, .script_len = script_len };
  long status;
  struct djob *j = start_job (s, &sp, &status, err);
  if (!j)
    return -1;
  long long until = now_ms () + BOOTSTRAP_REPLAY_MS;
  for (;;)
    {
      struct backend_event ev;
      if (job_next (s, j, &ev))
        {
          if (ev.type == BACKEND_EXITED || ev.type == BACKEND_ERROR)
            {
              int code = ev.type == BACKEND_EXITED && !ev.exit_code && !ev.signal ? 0 : -1;
              if (code < 0)
                *err = xprintf ("the session's shell could not start again in "
                                "the new container");
              free_job (s, j);
              return code;
            }
          continue;
        }
      long long left = until - now_ms ();
      struct pollfd p = { .fd = j->fd,
                          .events = POLLIN | (buf_size (&j->out) ? POLLOUT : 0) };
      if (left <= 0 || poll (&p, 1, (int) left) == 0)
        {
          *err = xprintf ("the session's shell did not start again within 30 s");
          free_job (s, j);
          return -1;
        }
    }
}

/* The container vanished between commands: one new one, same request. */
static int
recreate (struct backend_session *s, char **err)
{
  fprintf (stderr, "airlock: session %s: container %s vanished; creating it again\n",
           s->session, s->c.name);
  for (struct djob *j = s->jobs, *next; j; j = next)
    {
      next = j->next;
      free_job (s, j); /* their processes went with the container */
    }
  docker_container_remove (&s->c); /* a stopped one; a gone one is a no-op */
  if (docker_container_create (&s->c, err) < 0)
    return -1;
  if (s->boot_argv
      && run_internal (s, s->boot_argv, s->boot_env, s->boot_script,
                       s->boot_script_len, err) < 0)
    return -1;
  return 0;
}

static int
docker_spawn (struct backend_session *s, const struct backend_spawn *sp,
              char **err)
{
  if (s->lost)
    {
      *err = xprintf ("%s", s->lost_why);
      return -1;
    }
  if (find_job (s, sp->job))
    {
      *err = xprintf ("job %u already exists", sp->job);
      return -1;
    }
  long status = 0;
  struct djob *j = start_job (s, sp, &status, err);
  char *note = NULL;
  if (!j && (status == 404 || status == 409))
    {
      /* Gone or stopped: recreated once, and the result says so, with
       * what became of the old one. */
      free (*err);
      *err = NULL;
      char *fate = container_fate (s);
      if (recreate (s, err) < 0)
        {
          char *why = *err;
          *err = xprintf ("the container of session %s vanished and could not "
                          "be created again: %s%s%s", s->session, why ? why : "?",
                          fate ? "; before: " : "", fate ? fate : "");
          free (why);
          free (fate);
          return -1;
        }
      bool why = fate && status != 404;
      note = xprintf ("airlock: the container of session %s had %s%s%s%s; a new "
                      "one was created (files and processes of the old one are "
                      "gone)\n", s->session, status == 404 ? "vanished" : "stopped",
                      why ? " (" : "", why ? fate : "", why ? ")" : "");
      free (fate);
      j = start_job (s, sp, &status, err);
    }
  if (!j)
    {
      free (note);
      return -1;
    }
  j->note = note;
  if (note)
    {
      uint64_t one = 1;
      if (write (s->wake, &one, sizeof one) < 0)
        {
          /* the eventfd cannot overflow at 1 */
        }
    }
  if (!s->boot_argv)
    {
      s->boot_argv = copy_strv (sp->argv);
      s->boot_env = copy_strv (sp->envp);
      if (sp->script && (s->boot_script = malloc (sp->script_len ? sp->script_len : 1)))
        {
          memcpy (s->boot_script, sp->script, sp->script_len);
          s->boot_script_len = sp->script_len;
        }
    }
  return 0;
}

static int
docker_write_stdin (struct backend_session *s, uint32_t job, const void *data,
                    size_t n, bool eof)
{
  struct djob *j = find_job (s, job);
  if (!j || j->fd < 0)
    return -ESRCH;
  const uint8_t *p = data;
  while (n > 0)
    {
      size_t chunk = n > XL_MAX_PAYLOAD ? XL_MAX_PAYLOAD : n;
      int rc = queue_frame (s, j, XL_STDIN, p, chunk);
      if (rc < 0)
        return rc;
      p += chunk;
      n -= chunk;
    }
  return eof ? queue_frame (s, j, XL_STDIN_EOF, NULL, 0) : 0;
}

static int
docker_signal (struct backend_session *s, uint32_t job, int sig)
{
  struct djob *j = find_job (s, job);
  if (!j || j->fd < 0)
    return -ESRCH;
  uint8_t b = (uint8_t) sig;
  return queue_frame (s, j, XL_SIGNAL, &b, 1);
}

static int
docker_event_fd (struct backend_session *s)
{
  return s->ep;
}

/* The container's fate when it is not running, with the cause. */
static int
docker_health (struct backend_session *s, char **err)
{
  *err = container_fate (s);
  return *err ? -1 : 0;
}

static void
docker_reach (struct backend_session *s, struct backend_reach *r)
{
  r->host_filesystem = s->c.host_access;
  r->host_network = false; /* bridge or none: never the host's namespace */
  r->isolated = true;
}

static bool
has_opt (const cJSON *list, const char *a, const char *b)
{
  const cJSON *o;
  cJSON_ArrayForEach (o, list)
    if (cJSON_IsString (o) && (!strcmp (o->valuestring, a) || (b && !strcmp (o->valuestring, b))))
      return true;
  return false;
}

static bool
mode_is (const cJSON *hc, const char *key, const char *value)
{
  const cJSON *v = cJSON_GetObjectItemCaseSensitive (hc, key);
  return cJSON_IsString (v) && !strcmp (v->valuestring, value);
}

/* What the engine says it set up (the container's HostConfig), then
 * checked on its first process where this host's /proc shows it. */
static int
docker_posture (struct backend_session *s, struct backend_posture *p, char **err)
{
  struct docker_response r;
  if (inspect_container (s, &r, err) < 0)
    return -1;
  int rc;
  const cJSON *hc = cJSON_GetObjectItemCaseSensitive (r.json, "HostConfig");
  const cJSON *sec = cJSON_GetObjectItemCaseSensitive (hc, "SecurityOpt");
  const cJSON *caps = cJSON_GetObjectItemCaseSensitive (hc, "CapAdd");
  bool privileged = cJSON_IsTrue (cJSON_GetObjectItemCaseSensitive (hc, "Privileged"));
  size_t n = 0;
  p->namespaces[n++] = "mount";
  if (!mode_is (hc, "PidMode", "host"))
    p->namespaces[n++] = "pid";
  if (!mode_is (hc, "IpcMode", "host"))
    p->namespaces[n++] = "ipc";
  if (!mode_is (hc, "UTSMode", "host"))
    p->namespaces[n++] = "uts";
  if (!mode_is (hc, "NetworkMode", "host"))
    p->namespaces[n++] = "net";
  if (mode_is (hc, "CgroupnsMode", "private"))
    p->namespaces[n++] = "cgroup";
  p->namespaces[n] = NULL;
  p->isolation = "container";
  p->seccomp = !privileged && !has_opt (sec, "seccomp=unconfined", "seccomp:unconfined");
  p->no_new_privs = has_opt (sec, "no-new-privileges", "no-new-privileges:true");
  p->capabilities = privileged || cJSON_GetArraySize (caps) ? -1 : 0;
  p->network = mode_is (hc, "NetworkMode", "none") ? "none"
               : mode_is (hc, "NetworkMode", "host") ? "host" : "bridge";
  p->privilege = "docker-engine";
  const cJSON *pid = cJSON_GetObjectItemCaseSensitive (
      cJSON_GetObjectItemCaseSensitive (r.json, "State"), "Pid");
  rc = r.status == 200 ? 0 : -1;
  if (rc < 0)
    *err = xprintf ("cannot inspect container %s (HTTP %ld)", s->c.name, (long) r.status);
  else if (cJSON_IsNumber (pid) && pid->valueint > 0)
    {
      rc = posture_verify ((pid_t) pid->valueint, p, err);
      if (s->oom_fd < 0)
        s->oom_fd = cgroup_oom_open ((pid_t) pid->valueint);
    }
  docker_response_free (&r);
  return rc;
}

/* A container always has a memory cgroup of its own. */
static long long
docker_oom_kills (struct backend_session *s)
{
  return cgroup_oom_kills (s->oom_fd);
}

static void
docker_close (struct backend_session *s)
{
  if (s->oom_fd >= 0)
    close (s->oom_fd);
  while (s->jobs)
    free_job (s, s->jobs);
  if (s->c.id)
    docker_container_remove (&s->c);
  docker_container_clear (&s->c);
  if (s->ep >= 0)
    close (s->ep);
  if (s->wake >= 0)
    close (s->wake);
  free_strv (s->boot_argv);
  free_strv (s->boot_env);
  free (s->boot_script);
  free (s->ev);
  free (s->lost_why);
  free (s->session);
  free (s);
}

static const struct backend_ops docker_ops = {
  .name = "docker",
  .signal = docker_signal,
  .spawn = docker_spawn,
  .write_stdin = docker_write_stdin,
  .event_fd = docker_event_fd,
  .next_event = docker_next_event,
  .health = docker_health,
  .reach = docker_reach,
  .posture = docker_posture,
  .oom_kills = docker_oom_kills,
  .close = docker_close,
};

const struct backend_ops *
docker_session_ops (void)
{
  return &docker_ops;
}

const char *
docker_session_risk_reasons (struct backend_session *s)
{
  return s->c.reasons;
}

const char *
docker_session_warning (struct backend_session *s)
{
  return s->c.warning;
}

struct backend_session *
docker_session_open (const struct docker_session_options *o, char **cwd,
                     char **err)
{
  struct backend_session *s = calloc (1, sizeof *s);
  if (!s || !(s->session = strdup (o->session)))
    {
      free (s);
      *err = xprintf ("out of memory");
      return NULL;
    }
  s->oom_fd = -1;
  s->ep = epoll_create1 (EPOLL_CLOEXEC);
  s->wake = eventfd (0, EFD_CLOEXEC | EFD_NONBLOCK);
  struct epoll_event e = { .events = EPOLLIN, .data.ptr = NULL };
  if (s->ep < 0 || s->wake < 0 || epoll_ctl (s->ep, EPOLL_CTL_ADD, s->wake, &e) < 0)
    *err = xprintf ("epoll: %s", strerror (errno));
  else if (docker_container_plan (&s->c, o, err) == 0)
    docker_container_up (&s->c, err);
  if (*err)
    {
      free (s->c.id); /* up() removed what it made: nothing to remove */
      s->c.id = NULL;
      docker_close (s);
      return NULL;
    }
  *cwd = strdup (o->mount_workdir ? o->workdir : "/");
  return s;
}
