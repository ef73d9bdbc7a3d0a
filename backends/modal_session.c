/* SPDX-License-Identifier: MIT */
/* The modal backend's sessions, direct mode (see modal_session.h and
 * docs/modal.md).
 *
 * A session is one Modal sandbox (modal_api.c starts it at open and
 * terminates it at close).  Each command is one exec through the task's
 * command router (service modal.task_command_router.TaskCommandRouter):
 * TaskExecStart with an exec id of ours (a repeated start is a no-op),
 * running modal_wrapper.sh, whose argv holds nothing secret: the
 * command's script and environment go first on the exec's stdin
 * (TaskExecStdinWrite, by offset), then the command's own input.  Its
 * stdout and stderr are read by TaskExecStdioRead, a server stream that
 * starts at a byte offset: a stream that breaks is opened again where we
 * were, so nothing is lost or doubled.  The session layer's state report
 * (the command's fd 3) comes at the end of stderr behind a marker of the
 * job's; the exit status from TaskExecWait.
 *
 * A command on a terminal (backend_spawn.pty) runs on one Modal allocates
 * for the exec (TaskExecStartRequest.pty_info): its output is one stream,
 * its input typed.  Nothing secret may pass through a terminal (it
 * echoes), so the script and environment go first by a short exec of
 * their own (the wrapper's "prep"), and the state report comes after the
 * end by another ("done").  Modal has no call that changes an exec's
 * window: a resize is a short exec of stty on the job's terminal (the
 * kernel tells its foreground group, SIGWINCH).
 *
 * The daemon is single-threaded and these calls are not quick: a worker
 * thread per session makes them, the streams of every running command at
 * once in one curl multi handle; the ops only queue work under the lock
 * and wake it (curl_multi_wakeup), and the worker queues events back and
 * signals an eventfd. */
#define _GNU_SOURCE
#include "modal_session.h"

#include <curl/curl.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "event_queue.h"
#include "grpc_call.h"
#include "modal_wrapper.h"
#include "monotonic_ms.h"
#include "protobuf_wire.h"
#include "random_id.h"
#include "sh_words.h"
#include "xprintf.h"

#define ROUTER "/modal.task_command_router.TaskCommandRouter/"
#define CALL_MS 20000
#define STDIN_CHUNK (1u << 20)
/* A command whose streams stay open after it ended (a background child
 * holds them): read on until they are quiet this long. */
#define QUIET_MS 500
#define EXIT_POLL_MS 1000
/* Without an answer from the router this long, a running command is lost. */
#define LOST_AFTER_MS (10 * 60 * 1000)
#define RETRY_MAX_MS 2000

struct md_job;

/* One of a command's output streams (TaskExecStdioRead). */
struct md_stream {
  struct backend_session *s;
  struct md_job *j;
  int fd;                    /* 0 stdout, 1 stderr (the router's numbers) */
  CURL *c;
  struct grpc_transfer *t;   /* while a read is under way */
  struct grpc_call call;
  struct grpc_result res;
  struct pb_enc req;
  uint64_t off;              /* bytes taken */
  bool eof;
  unsigned fails;
  long long retry_at;
};

struct md_job {
  struct md_job *next;
  uint32_t id;
  /* on a terminal: its first window and TERM (pty points at pty_buf) */
  const struct backend_pty *pty;
  struct backend_pty pty_buf;
  char term[40];
  char prep_id[37];          /* the "prep" exec's id, for retries */
  bool mid_line;             /* typed input not ended by a newline */
  char name[64];             /* its job directory in the sandbox */
  char exec_id[37];
  char marker[33];
  /* the worker's */
  char **args;               /* command_args, until started */
  uint8_t *header;           /* the first bytes of its stdin */
  size_t header_len;
  unsigned timeout_secs;     /* the server's own deadline (0: none) */
  bool started, finished;
  struct md_stream out[2];
  uint64_t in_off;           /* stdin bytes the router took */
  bool in_sent_eof;
  char *hold;                /* stderr not passed on yet: it may be the
                                start of the marker */
  size_t hold_len;
  bool in_meta;              /* past the marker: the state report */
  long long poll_due;
  int exit_code;
  bool exited;               /* seen by TaskExecPoll while streams ran */
  bool drained;              /* its streams were opened again once since */
  long long quiet_until;
  long long unreachable_since;
  /* under the lock */
  char *in;
  size_t in_len;
  bool in_eof;
  bool stdin_pipe;
  int sig;
  unsigned want_rows, want_cols; /* a resize to do (0: none) */
  bool forgotten;
  bool reported;
};

struct backend_session {
  pthread_mutex_t lock;
  pthread_t worker;
  bool worker_started;
  volatile int stop;
  int efd;
  CURLM *multi;
  CURL *uc;                  /* the worker's unary calls */
  struct md_job *jobs;
  struct event_queue q;
  char *lost;
  bool unreachable;
  char token[17];
  char *session;
  struct modal_api *api;     /* the daemon thread's (open, health, close) */
  struct modal_api *wapi;    /* the worker's */
  struct modal_sandbox sb;
  bool control_loopback;     /* the control plane is on this machine */
  /* the command router, the worker's; old ones are kept (a running
   * stream's call points at them) */
  char *router_url;
  char *auth_line;
  const char *meta[2];
  char **old;
  size_t nold;
  long long auth_exp;        /* unix seconds; 0 unknown */
  unsigned lease_secs;       /* 0: none */
  long long lease_due;       /* the next renewal (monotonic ms) */
};

/* ---- events ---- */

static void
push_event (struct backend_session *s, const struct backend_event *ev, const void *data,
            size_t len, const char *msg)
{
  event_queue_push (&s->q, ev, data, len, msg);
  uint64_t one = 1;
  if (write (s->efd, &one, sizeof one) < 0)
    {
      /* the counter is already non-zero */
    }
}

/* Under the lock. */
static void
report_end (struct backend_session *s, struct md_job *j, int status, const char *lost)
{
  if (j->reported)
    return;
  j->reported = true;
  if (j->forgotten)
    return;
  struct backend_event ev = { .job = j->id };
  if (lost)
    {
      ev.type = BACKEND_ERROR;
      char *m = xprintf ("the command in the Modal sandbox %s was lost: %s", s->sb.sandbox_id,
                         lost);
      push_event (s, &ev, NULL, 0, m ? m : lost);
      free (m);
    }
  else
    {
      ev.type = BACKEND_EXITED;
      ev.exit_code = status;
      push_event (s, &ev, NULL, 0, NULL);
    }
}

static void
output (struct backend_session *s, struct md_job *j, int stream, const void *data, size_t n)
{
  if (!n)
    return;
  pthread_mutex_lock (&s->lock);
  if (!j->forgotten && !j->reported)
    {
      struct backend_event ev = { .type = BACKEND_OUTPUT, .job = j->id, .stream = stream,
                                  .len = n };
      push_event (s, &ev, data, n, NULL);
    }
  pthread_mutex_unlock (&s->lock);
}

/* The session is gone: every command with it. */
static void
session_lost (struct backend_session *s, char *why)
{
  pthread_mutex_lock (&s->lock);
  if (!s->lost)
    {
      s->lost = why;
      why = NULL;
      for (struct md_job *j = s->jobs; j; j = j->next)
        report_end (s, j, 0, s->lost);
      struct backend_event ev = { .type = BACKEND_ERROR, .job = 0 };
      push_event (s, &ev, NULL, 0, s->lost);
    }
  pthread_mutex_unlock (&s->lock);
  free (why);
}

/* ---- stderr: the command's, then behind the marker the state report ---- */

static void
take_stderr (struct backend_session *s, struct md_job *j, const uint8_t *d, size_t n)
{
  if (j->in_meta)
    return output (s, j, 3, d, n);
  char pat[40];
  int pl = snprintf (pat, sizeof pat, "\n%s\n", j->marker);
  char *b = realloc (j->hold, j->hold_len + n + 1);
  if (!b)
    return;
  j->hold = b;
  memcpy (b + j->hold_len, d, n);
  j->hold_len += n;
  char *m = memmem (b, j->hold_len, pat, (size_t) pl);
  if (m)
    {
      size_t before = (size_t) (m - b), after = before + (size_t) pl;
      output (s, j, 2, b, before);
      j->in_meta = true;
      output (s, j, 3, b + after, j->hold_len - after);
      j->hold_len = 0;
      return;
    }
  /* all but what may be the marker's start */
  size_t keep = j->hold_len < (size_t) pl - 1 ? j->hold_len : (size_t) pl - 1;
  output (s, j, 2, b, j->hold_len - keep);
  memmove (b, b + j->hold_len - keep, keep);
  j->hold_len = keep;
}

static void
flush_stderr (struct backend_session *s, struct md_job *j)
{
  if (!j->in_meta)
    output (s, j, 2, j->hold, j->hold_len);
  j->hold_len = 0;
}

/* ---- the command router ---- */

static bool
loopback_host (const char *url)
{
  const char *h = strstr (url, "://");
  h = h ? h + 3 : url;
  return !strncmp (h, "127.", 4) || !strncmp (h, "localhost", 9) || !strncmp (h, "[::1]", 5);
}

/* Its URL and JWT, again (at open, before the JWT runs out, after
 * UNAUTHENTICATED).  0, or -1: *why (malloc'd) says so; *gone when the
 * sandbox is no more. */
static int
refresh_router (struct backend_session *s, struct modal_api *a, bool *gone, char **why)
{
  char *url = NULL, *jwt = NULL;
  long long exp = 0;
  *gone = false;
  if (modal_router_access (a, &s->sb, &url, &jwt, &exp, gone, why) < 0)
    return -1;
  /* Modal's router is https; a router on this machine (the test double)
   * speaks plaintext, and is trusted as such only when the control plane
   * is on this machine too, as the official SDK does. */
  char *base = NULL;
  if (!strncmp (url, "https://", 8) && s->control_loopback && loopback_host (url))
    base = xprintf ("http://%s", url + 8);
  else if (!strncmp (url, "https://", 8))
    base = strdup (url);
  char *auth = xprintf ("authorization: Bearer %s", jwt);
  explicit_bzero (jwt, strlen (jwt));
  free (jwt);
  free (url);
  char **o = realloc (s->old, (s->nold + 2) * sizeof *o);
  if (!base || !auth || !o)
    {
      free (base);
      free (auth);
      if (o)
        s->old = o;
      *why = xprintf (base || !url ? "out of memory"
                                   : "the command router's URL is not https://");
      return -1;
    }
  s->old = o;
  if (s->router_url)
    s->old[s->nold++] = s->router_url;
  if (s->auth_line)
    s->old[s->nold++] = s->auth_line;
  s->router_url = base;
  s->auth_line = auth;
  s->meta[0] = s->auth_line;
  s->meta[1] = NULL;
  s->auth_exp = exp;
  return 0;
}

/* A unary call to the router, retried (the same idempotency key) within
 * CALL_MS; UNAUTHENTICATED once gets a fresh JWT.  0 with *reply, or -1
 * with res filled (res->origin says whether anything answered). */
static int
router_unary (struct backend_session *s, const char *rpc, const struct pb_enc *req,
              uint8_t **reply, size_t *len, struct grpc_result *res)
{
  char path[128];
  snprintf (path, sizeof path, ROUTER "%s", rpc);
  for (int attempt = 0;; attempt++)
    {
      if (s->auth_exp && (long long) time (NULL) > s->auth_exp - 30)
        {
          bool gone;
          char *why = NULL;
          if (refresh_router (s, s->wapi, &gone, &why) < 0 && gone)
            session_lost (s, why);
          else
            free (why);
        }
      struct grpc_call call = {
        .base_url = s->router_url, .path = path, .metadata = s->meta,
        .request = req->buf ? req->buf : (const uint8_t *) "", .request_len = req->len,
        .timeout_ms = CALL_MS / 2, .cancel = &s->stop,
      };
      *res = (struct grpc_result){ 0 };
      int rc = grpc_unary_retry (s->uc, &call, 4, monotonic_ms () + CALL_MS, reply, len, res);
      if (rc == 0 || res->code != GRPC_UNAUTHENTICATED || attempt)
        return rc;
      bool gone;
      char *why = NULL;
      if (refresh_router (s, s->wapi, &gone, &why) < 0)
        {
          if (gone)
            session_lost (s, why);
          else
            free (why);
          return rc;
        }
      grpc_result_free (res);
    }
}

/* After a call failed: is the sandbox still there?  When it is not, the
 * session is lost (said once), and true. */
static bool
sandbox_ended (struct backend_session *s)
{
  char *why = NULL, *err = NULL;
  int alive = modal_sandbox_alive (s->wapi, &s->sb, &why, &err);
  free (err);
  if (alive != 0)
    {
      free (why);
      return false;
    }
  char *m = xprintf ("the Modal sandbox %s has ended (%s): it is not re-created; close the "
                     "session and open a new one",
                     s->sb.sandbox_id, why ? why : "terminated outside airlock, or its "
                                                     "lifetime (modal.timeout) ran out");
  free (why);
  session_lost (s, m);
  return true;
}

static void
job_lost (struct backend_session *s, struct md_job *j, const char *why)
{
  pthread_mutex_lock (&s->lock);
  j->finished = true;
  report_end (s, j, 0, why);
  pthread_mutex_unlock (&s->lock);
}

/* A call got no useful answer: a command unreachable too long is lost. */
static void
unreachable (struct backend_session *s, struct md_job *j, const struct grpc_result *res)
{
  long long now = monotonic_ms ();
  if (!j->unreachable_since)
    j->unreachable_since = now;
  pthread_mutex_lock (&s->lock);
  s->unreachable = true;
  pthread_mutex_unlock (&s->lock);
  if (now - j->unreachable_since > LOST_AFTER_MS && !sandbox_ended (s))
    {
      char *t = grpc_result_text (res);
      char *m = xprintf ("no answer from its command router for %d minutes (%s)",
                         LOST_AFTER_MS / 60000, t ? t : "?");
      job_lost (s, j, m ? m : "no answer from its command router");
      free (m);
      free (t);
    }
}

static void
reachable (struct backend_session *s, struct md_job *j)
{
  j->unreachable_since = 0;
  pthread_mutex_lock (&s->lock);
  s->unreachable = false;
  pthread_mutex_unlock (&s->lock);
}

/* A failed call's result: lost when the sandbox ended, else the job's
 * unreachable clock runs (retryable) or it is lost (anything else). */
static void
call_failed (struct backend_session *s, struct md_job *j, const struct grpc_result *res,
             const char *what)
{
  if (grpc_retryable (res) || res->origin == GRPC_FROM_TRANSPORT)
    return unreachable (s, j, res);
  if (sandbox_ended (s))
    return;
  char *t = grpc_result_text (res);
  char *m = xprintf ("%s: %s", what, t ? t : "?");
  job_lost (s, j, m ? m : what);
  free (m);
  free (t);
}

static void
put_ids (struct pb_enc *e, struct backend_session *s, const char *exec_id)
{
  pb_put_string (e, 1, s->sb.task_id);
  pb_put_string (e, 2, exec_id);
}

/* TaskExecStart: 0 started (or started before), -1 not (the caller
 * looked at why). */
static int
exec_start (struct backend_session *s, struct md_job *j, const char *exec_id,
            char *const *args, unsigned timeout_secs, bool pipes,
            const struct backend_pty *pty)
{
  struct pb_enc e = { 0 };
  put_ids (&e, s, exec_id);
  for (char *const *a = args; *a; a++)
    pb_put_string (&e, 3, *a);
  pb_put_enum (&e, 4, pipes ? 1 : 0);
  pb_put_enum (&e, 5, pipes ? 1 : 0);
  if (timeout_secs)
    pb_put_uint32 (&e, 6, timeout_secs);
  if (pty)
    {
      /* PTYInfo as the official SDK fills it for an exec, with our size
       * and TERM; a terminal whose input is quiet must live on (8). */
      size_t m = pb_begin (&e, 9);
      pb_put_bool (&e, 1, true);
      pb_put_uint32 (&e, 2, pty->rows);
      pb_put_uint32 (&e, 3, pty->cols);
      pb_put_string (&e, 4, pty->term);
      pb_put_enum (&e, 7, 2); /* PTY_TYPE_SHELL */
      pb_put_bool (&e, 8, true);
      pb_end (&e, m);
    }
  uint8_t *reply = NULL;
  size_t len;
  struct grpc_result res;
  int rc = e.failed ? -1 : router_unary (s, "TaskExecStart", &e, &reply, &len, &res);
  pb_enc_free (&e);
  free (reply);
  if (rc < 0 && j)
    call_failed (s, j, &res, "starting the command");
  grpc_result_free (&res);
  return rc;
}

/* TaskExecStdinWrite of data at offset off of an exec's stdin. */
static int
stdin_put (struct backend_session *s, const char *exec_id, uint64_t off, const void *data,
           size_t n, bool eof, struct grpc_result *res)
{
  struct pb_enc e = { 0 };
  put_ids (&e, s, exec_id);
  pb_put_uint64 (&e, 3, off);
  if (n)
    pb_put_bytes (&e, 4, data, n);
  if (eof)
    pb_put_bool (&e, 5, true);
  uint8_t *reply = NULL;
  size_t len;
  *res = (struct grpc_result){ 0 };
  int rc = e.failed ? -1 : router_unary (s, "TaskExecStdinWrite", &e, &reply, &len, res);
  pb_enc_free (&e);
  free (reply);
  return rc;
}

/* TaskExecStdinWrite of data at the job's stdin offset. */
static int
stdin_write (struct backend_session *s, struct md_job *j, const void *data, size_t n, bool eof)
{
  struct grpc_result res;
  int rc = stdin_put (s, j->exec_id, j->in_off, data, n, eof, &res);
  if (rc == 0)
    {
      j->in_off += n;
      j->in_sent_eof = eof;
      reachable (s, j);
    }
  else
    call_failed (s, j, &res, "writing the command's input");
  grpc_result_free (&res);
  return rc;
}

/* TaskExecWait (block) or TaskExecPoll: 1 with *status when it ended, 0
 * still running, -1 failed. */
static int
exit_status_of (struct backend_session *s, struct md_job *j, const char *exec_id, bool wait,
                int *status)
{
  struct pb_enc e = { 0 };
  put_ids (&e, s, exec_id);
  uint8_t *reply = NULL;
  size_t len = 0;
  struct grpc_result res;
  int rc = e.failed ? -1
                    : router_unary (s, wait ? "TaskExecWait" : "TaskExecPoll", &e, &reply, &len,
                                    &res);
  pb_enc_free (&e);
  if (rc < 0)
    {
      call_failed (s, j, &res, "waiting for the command's end");
      grpc_result_free (&res);
      return -1;
    }
  grpc_result_free (&res);
  reachable (s, j);
  struct pb_reader r;
  struct pb_field f;
  pb_reader_init (&r, reply, len);
  int found = 0, n;
  while ((n = pb_next (&r, &f)) > 0)
    {
      int32_t v;
      if ((f.number == 1 || f.number == 2) && pb_read_int32 (&r, &f, &v) == 0)
        {
          *status = f.number == 1 ? v : 128 + v;
          found = 1;
        }
    }
  free (reply);
  return n < 0 ? -1 : found;
}

static int
exit_status (struct backend_session *s, struct md_job *j, bool wait, int *status)
{
  return exit_status_of (s, j, j->exec_id, wait, status);
}

/* ---- short execs of our own, run to their end (the worker waits) ---- */

/* What one prints on stdout, up to a bound. */
struct collect {
  char *buf;
  size_t len;
  bool over;
};

#define COLLECT_MAX (16u << 20)

static int
collect_stdio (void *ctx, const uint8_t *msg, size_t len)
{
  struct collect *c = ctx;
  struct pb_reader r;
  struct pb_field f;
  pb_reader_init (&r, msg, len);
  while (pb_next (&r, &f) > 0)
    {
      struct pb_slice d;
      if (f.number != 1 || pb_read_bytes (&r, &f, &d) < 0 || !d.n)
        continue;
      char *b = c->len + d.n <= COLLECT_MAX ? realloc (c->buf, c->len + d.n + 1) : NULL;
      if (!b)
        {
          c->over = true;
          return 1;
        }
      memcpy (b + c->len, d.p, d.n);
      c->len += d.n;
      b[c->len] = '\0';
      c->buf = b;
    }
  return 0;
}

/* Run args with input in (its end after it), its stdout into *out:
 * 1 with *status, 0 when the router could not be asked (j's clock runs:
 * try again with the same exec_id, a no-op start), -1 j is lost. */
static int
short_exec (struct backend_session *s, struct md_job *j, const char *exec_id, char *const *args,
            const void *in, size_t in_len, struct collect *out, int *status)
{
  if (exec_start (s, j, exec_id, args, 60, true, NULL) < 0)
    return j->finished ? -1 : 0;
  struct grpc_result res;
  int rc = stdin_put (s, exec_id, 0, in, in_len, true, &res);
  if (rc < 0)
    call_failed (s, j, &res, "writing to a short command of ours");
  grpc_result_free (&res);
  if (rc < 0)
    return j->finished ? -1 : 0;
  struct pb_enc e = { 0 };
  put_ids (&e, s, exec_id);
  pb_put_uint64 (&e, 3, 0);
  pb_put_enum (&e, 4, 0);
  struct grpc_call call = {
    .base_url = s->router_url, .path = ROUTER "TaskExecStdioRead", .metadata = s->meta,
    .request = e.buf, .request_len = e.len, .timeout_ms = CALL_MS, .cancel = &s->stop,
    .on_message = collect_stdio, .ctx = out,
  };
  free (out->buf);
  *out = (struct collect){ 0 };
  res = (struct grpc_result){ 0 };
  rc = e.failed ? -1 : grpc_server_stream (s->uc, &call, &res);
  pb_enc_free (&e);
  if (rc < 0 && !out->over)
    call_failed (s, j, &res, "reading a short command of ours");
  grpc_result_free (&res);
  if (rc < 0 && !out->over)
    return j->finished ? -1 : 0;
  rc = exit_status_of (s, j, exec_id, true, status);
  return rc == 1 ? 1 : j->finished ? -1 : 0;
}

/* ---- streams ---- */

/* A message of a TaskExecStdioRead stream: {bytes data = 1}. */
static int
on_stdio (void *ctx, const uint8_t *msg, size_t len)
{
  struct md_stream *st = ctx;
  struct md_job *j = st->j;
  struct pb_reader r;
  struct pb_field f;
  pb_reader_init (&r, msg, len);
  int n;
  while ((n = pb_next (&r, &f)) > 0)
    {
      struct pb_slice d;
      if (f.number != 1 || pb_read_bytes (&r, &f, &d) < 0)
        continue;
      st->off += d.n;
      if (st->fd == 0)
        output (st->s, j, 1, d.p, d.n);
      else
        take_stderr (st->s, j, d.p, d.n);
    }
  if (j->exited)
    j->quiet_until = monotonic_ms () + QUIET_MS;
  return n < 0; /* a malformed message ends the read (read again from off) */
}

/* Open (again) a stream's read at its offset. */
static void
stream_open (struct backend_session *s, struct md_stream *st)
{
  struct md_job *j = st->j;
  pb_enc_free (&st->req);
  st->req = (struct pb_enc){ 0 };
  put_ids (&st->req, s, j->exec_id);
  pb_put_uint64 (&st->req, 3, st->off);
  pb_put_enum (&st->req, 4, st->fd);
  if (st->req.failed || (!st->c && !(st->c = curl_easy_init ())))
    {
      job_lost (s, j, "out of memory");
      return;
    }
  st->call = (struct grpc_call){
    .base_url = s->router_url, .path = ROUTER "TaskExecStdioRead", .metadata = s->meta,
    .request = st->req.buf, .request_len = st->req.len, .cancel = &s->stop,
    .on_message = on_stdio, .ctx = st,
  };
  grpc_result_free (&st->res);
  st->res = (struct grpc_result){ 0 };
  if (!(st->t = grpc_transfer_new (st->c, &st->call, &st->res)))
    {
      job_lost (s, j, st->res.message ? st->res.message : "cannot read the command's output");
      return;
    }
  curl_easy_setopt (st->c, CURLOPT_PRIVATE, st);
  /* A stream may be quiet for as long as its command is: a peer that
   * vanished is found by TCP keepalive, not by a deadline. */
  curl_easy_setopt (st->c, CURLOPT_TCP_KEEPALIVE, 1L);
  curl_easy_setopt (st->c, CURLOPT_TCP_KEEPIDLE, 15L);
  curl_easy_setopt (st->c, CURLOPT_TCP_KEEPINTVL, 5L);
  curl_multi_add_handle (s->multi, st->c);
}

static void
stream_stop (struct backend_session *s, struct md_stream *st)
{
  if (!st->t)
    return;
  curl_multi_remove_handle (s->multi, st->c);
  grpc_transfer_free (st->t);
  st->t = NULL;
}

/* A read ended: the stream's end, or a break to resume from. */
static void
stream_done (struct backend_session *s, struct md_stream *st, CURLcode rc)
{
  struct md_job *j = st->j;
  int r = grpc_transfer_finish (st->t, rc, &st->res);
  stream_stop (s, st);
  if (j->finished)
    return;
  if (r == 0)
    {
      st->eof = true;
      st->fails = 0;
      reachable (s, j);
      return;
    }
  if (st->res.code == GRPC_UNAUTHENTICATED && !st->fails)
    {
      bool gone;
      char *why = NULL;
      if (refresh_router (s, s->wapi, &gone, &why) < 0)
        {
          if (gone)
            return session_lost (s, why);
          free (why);
        }
    }
  else if (!grpc_retryable (&st->res) && st->res.origin != GRPC_FROM_TRANSPORT
           && !st->res.stopped)
    return call_failed (s, j, &st->res, "reading the command's output");
  else if (st->res.messages == 0)
    unreachable (s, j, &st->res);
  /* again from the offset, sooner when it got somewhere */
  st->fails = st->res.messages ? 1 : st->fails + 1;
  unsigned wait = 100u << (st->fails < 5 ? st->fails : 5);
  st->retry_at = monotonic_ms () + (wait < RETRY_MAX_MS ? wait : RETRY_MAX_MS);
}

/* ---- the worker ---- */

static void
free_job (struct md_job *j)
{
  for (char **a = j->args; a && *a; a++)
    free (*a);
  free (j->args);
  free (j->header);
  free (j->hold);
  free (j->in);
  for (int i = 0; i < 2; i++)
    {
      pb_enc_free (&j->out[i].req);
      grpc_result_free (&j->out[i].res);
      if (j->out[i].c)
        curl_easy_cleanup (j->out[i].c);
    }
  free (j);
}

/* A terminal job's state report, kept in its job directory, and the
 * directory's removal (the wrapper's "done"). */
static void
take_report (struct backend_session *s, struct md_job *j)
{
  char exec_id[37];
  random_uuid (exec_id);
  char *args[] = { "sh", "-c", (char *) MODAL_WRAPPER, "airlock-modal", "done", j->name, NULL };
  struct collect c = { 0 };
  int status;
  /* Once, and on a job of its own (no events): a report that cannot be
   * had is a session state not saved, which the session layer says; the
   * job's end is neither held nor lost for it. */
  struct md_job quiet = { .forgotten = true, .reported = true };
  if (short_exec (s, &quiet, exec_id, args, NULL, 0, &c, &status) == 1 && status == 0 && !c.over)
    output (s, j, 3, c.buf, c.len);
  free (c.buf);
}

/* The job's end: its status, after its output. */
static void
finish (struct backend_session *s, struct md_job *j, int status)
{
  for (int i = 0; i < 2; i++)
    stream_stop (s, &j->out[i]);
  flush_stderr (s, j);
  if (j->pty && !j->finished)
    take_report (s, j);
  pthread_mutex_lock (&s->lock);
  j->finished = true;
  report_end (s, j, status, NULL);
  pthread_mutex_unlock (&s->lock);
}

/* A terminal job's directory, by the wrapper's "prep" (its script and
 * environment must not pass through the terminal): true when made. */
static bool
prepare (struct backend_session *s, struct md_job *j)
{
  char *args[] = { "sh", "-c", (char *) MODAL_WRAPPER, "airlock-modal", "prep", j->name, NULL };
  struct collect c = { 0 };
  int status;
  int rc = short_exec (s, j, j->prep_id, args, j->header, j->header_len, &c, &status);
  if (rc == 1 && status != 0)
    {
      while (c.len && c.buf[c.len - 1] == '\n')
        c.buf[--c.len] = '\0';
      char *m = xprintf ("preparing the command (exit %d): %s", status,
                         c.len ? c.buf : "no message");
      job_lost (s, j, m ? m : "preparing the command failed");
      free (m);
    }
  free (c.buf);
  if (rc != 1 || status != 0)
    return false;
  explicit_bzero (j->header, j->header_len);
  free (j->header);
  j->header = NULL;
  j->header_len = 0;
  return true;
}

static void
start_job (struct backend_session *s, struct md_job *j)
{
  if (j->pty && j->header_len && !prepare (s, j))
    return; /* lost, or tried again */
  if (exec_start (s, j, j->exec_id, j->args, j->timeout_secs, true, j->pty) < 0)
    return; /* lost, or tried again */
  reachable (s, j);
  j->started = true;
  for (char **a = j->args; *a; a++)
    free (*a);
  free (j->args);
  j->args = NULL;
  j->poll_due = monotonic_ms () + EXIT_POLL_MS;
  /* a terminal's output is one stream: stdout */
  j->out[1].eof = j->pty != NULL;
  for (int i = 0; i < 2; i++)
    if (!j->out[i].eof)
      stream_open (s, &j->out[i]);
}

/* Kill: a short exec of the wrapper's kill path (Modal's router has no
 * call that signals an exec). */
static int
send_signal (struct backend_session *s, struct md_job *j, int sig)
{
  char exec_id[37], num[16];
  random_uuid (exec_id);
  snprintf (num, sizeof num, "%d", sig);
  char *args[] = { "sh", "-c", (char *) MODAL_WRAPPER, "airlock-modal", "kill", j->name, num,
                   NULL };
  return exec_start (s, NULL, exec_id, args, 60, false, NULL);
}

/* A terminal job's new window: stty on its terminal, from a short exec
 * (Modal has no call for it), waited for: what is typed after a resize
 * must find the new size. */
static int
send_resize (struct backend_session *s, struct md_job *j, unsigned rows, unsigned cols)
{
  char exec_id[37], r[16], c[16];
  random_uuid (exec_id);
  snprintf (r, sizeof r, "%u", rows);
  snprintf (c, sizeof c, "%u", cols);
  char *args[] = { "sh", "-c", (char *) MODAL_WRAPPER, "airlock-modal", "resize", j->name, r, c,
                   NULL };
  int status;
  if (exec_start (s, NULL, exec_id, args, 60, false, NULL) < 0
      || exit_status_of (s, j, exec_id, true, &status) < 0)
    return -1;
  if (status != 0)
    fprintf (stderr, "airlock: session %s: resizing job %u's terminal in the Modal sandbox "
                     "failed (exit %d)\n", s->session, j->id, status);
  return 0;
}

/* The next piece of unary work of a job, done: true when there was one. */
static bool
job_step (struct backend_session *s, struct md_job *j, long long now)
{
  pthread_mutex_lock (&s->lock);
  int sig = j->sig;
  unsigned rows = 0, cols = 0;
  if (j->started)
    {
      rows = j->want_rows;
      cols = j->want_cols;
      j->want_rows = j->want_cols = 0;
    }
  bool cancelled = !j->started && (j->forgotten || sig);
  char *in = NULL;
  size_t in_len = 0;
  bool in_eof = false;
  if (sig && j->started)
    j->sig = 0;
  if (j->started && j->header_len == 0 && (j->in_len || (j->in_eof && !j->in_sent_eof)))
    {
      in_len = j->in_len < STDIN_CHUNK ? j->in_len : STDIN_CHUNK;
      in = in_len ? malloc (in_len) : NULL;
      if (in)
        {
          memcpy (in, j->in, in_len);
          memmove (j->in, j->in + in_len, j->in_len - in_len);
          j->in_len -= in_len;
        }
      else
        in_len = 0;
      in_eof = j->in_eof && j->in_len == 0;
    }
  pthread_mutex_unlock (&s->lock);
  if (cancelled)
    {
      /* killed before it started: it never runs */
      pthread_mutex_lock (&s->lock);
      j->finished = true;
      report_end (s, j, 128 + (sig ? sig : SIGKILL), NULL);
      pthread_mutex_unlock (&s->lock);
      return true;
    }
  if (!j->started)
    {
      start_job (s, j);
      return true;
    }
  if (rows && send_resize (s, j, rows, cols) < 0)
    {
      pthread_mutex_lock (&s->lock);
      if (!j->want_rows)
        {
          /* again, once the router answers */
          j->want_rows = rows;
          j->want_cols = cols;
        }
      pthread_mutex_unlock (&s->lock);
    }
  if (sig)
    {
      if (send_signal (s, j, sig) < 0)
        {
          pthread_mutex_lock (&s->lock);
          if (!j->sig)
            j->sig = sig; /* again, once the router answers */
          pthread_mutex_unlock (&s->lock);
        }
      return true;
    }
  if (j->header_len)
    {
      /* the script and environment, then (no stdin) its end */
      pthread_mutex_lock (&s->lock);
      bool eof = !j->stdin_pipe;
      pthread_mutex_unlock (&s->lock);
      if (stdin_write (s, j, j->header, j->header_len, eof) == 0)
        {
          free (j->header);
          j->header = NULL;
          j->header_len = 0;
        }
      return true;
    }
  if (in || in_eof)
    {
      if (stdin_write (s, j, in, in_len, in_eof) < 0)
        {
          /* put back in front: it is tried again */
          pthread_mutex_lock (&s->lock);
          char *b = malloc (in_len + j->in_len + 1);
          if (b)
            {
              memcpy (b, in, in_len);
              if (j->in_len)
                memcpy (b + in_len, j->in, j->in_len);
              free (j->in);
              j->in = b;
              j->in_len += in_len;
            }
          pthread_mutex_unlock (&s->lock);
        }
      free (in);
      return true;
    }
  if (j->out[0].eof && j->out[1].eof)
    {
      int status;
      int r = exit_status (s, j, true, &status);
      if (r == 1)
        finish (s, j, status);
      return true;
    }
  if (j->exited && now >= j->quiet_until)
    {
      if (j->drained)
        {
          finish (s, j, j->exit_code);
          return true;
        }
      /* Quiet since it ended: a background child holds its output open,
       * or a stream's connection died without a word.  Read once more on
       * fresh streams from the offsets, then end. */
      j->drained = true;
      for (int i = 0; i < 2; i++)
        if (!j->out[i].eof)
          {
            stream_stop (s, &j->out[i]);
            stream_open (s, &j->out[i]);
          }
      j->quiet_until = monotonic_ms () + 2 * QUIET_MS;
      return true;
    }
  if (!j->exited && now >= j->poll_due)
    {
      int status;
      if (exit_status (s, j, false, &status) == 1)
        {
          j->exited = true;
          j->exit_code = status;
          j->quiet_until = monotonic_ms () + QUIET_MS;
        }
      j->poll_due = monotonic_ms () + EXIT_POLL_MS;
      return true;
    }
  return false;
}

/* The sandbox's lease on this daemon (modal_api.h): renewed by a short
 * exec a few times per lease, so that a blip of the network costs
 * nothing; a daemon that is gone renews nothing, and the sandbox ends. */
static void
renew_lease (struct backend_session *s, long long now)
{
  if (!s->lease_secs || now < s->lease_due)
    return;
  char exec_id[37];
  random_uuid (exec_id);
  char *args[] = { "touch", MODAL_LEASE_FILE, NULL };
  if (exec_start (s, NULL, exec_id, args, 30, false, NULL) < 0)
    fprintf (stderr, "airlock: session %s: the Modal sandbox's lease was not renewed this "
                     "time\n", s->session);
  s->lease_due = monotonic_ms () + (long long) s->lease_secs * 1000 / 4;
}

static void *
worker (void *arg)
{
  struct backend_session *s = arg;
  while (!s->stop)
    {
      long long now = monotonic_ms ();
      long long next = now + 1000;
      pthread_mutex_lock (&s->lock);
      bool is_lost = s->lost != NULL;
      pthread_mutex_unlock (&s->lock);
      if (!is_lost)
        renew_lease (s, now);
      if (s->lease_secs && s->lease_due < next)
        next = s->lease_due;
      /* unary work: a step of each job that has one */
      pthread_mutex_lock (&s->lock);
      struct md_job *list = s->jobs;
      bool lost = s->lost != NULL;
      pthread_mutex_unlock (&s->lock);
      for (struct md_job *j = list; j && !lost && !s->stop; j = j->next)
        {
          if (j->finished)
            continue;
          if (job_step (s, j, now))
            next = now;
          for (int i = 0; i < 2 && !j->finished && j->started; i++)
            {
              struct md_stream *st = &j->out[i];
              if (!st->t && !st->eof)
                {
                  if (now >= st->retry_at)
                    stream_open (s, st);
                  else if (st->retry_at < next)
                    next = st->retry_at;
                }
            }
          if (j->started && !j->finished)
            {
              long long due = j->exited ? j->quiet_until : j->poll_due;
              if (due < next)
                next = due;
            }
        }
      int running;
      curl_multi_perform (s->multi, &running);
      CURLMsg *m;
      int left;
      while ((m = curl_multi_info_read (s->multi, &left)))
        if (m->msg == CURLMSG_DONE)
          {
            struct md_stream *st = NULL;
            curl_easy_getinfo (m->easy_handle, CURLINFO_PRIVATE, (char **) &st);
            if (st && st->t)
              stream_done (s, st, m->data.result);
            next = monotonic_ms ();
          }
      /* gone from the list: finished and reported (only this thread
       * removes) */
      pthread_mutex_lock (&s->lock);
      for (struct md_job **p = &s->jobs; *p;)
        if ((*p)->finished && (*p)->reported)
          {
            struct md_job *d = *p;
            *p = d->next;
            for (int i = 0; i < 2; i++)
              stream_stop (s, &d->out[i]);
            free_job (d);
          }
        else
          p = &(*p)->next;
      pthread_mutex_unlock (&s->lock);
      long long wait = next - monotonic_ms ();
      if (wait > 0 && !s->stop)
        curl_multi_poll (s->multi, NULL, 0, (int) (wait < 1000 ? wait : 1000), NULL);
    }
  return NULL;
}

/* ---- ops (the daemon's thread) ---- */

static void
wake (struct backend_session *s)
{
  curl_multi_wakeup (s->multi);
}

static struct md_job *
find_job (struct backend_session *s, uint32_t id)
{
  for (struct md_job *j = s->jobs; j; j = j->next)
    if (j->id == id && !j->reported)
      return j;
  return NULL;
}

static int
md_spawn (struct backend_session *s, const struct backend_spawn *sp, char **err)
{
  struct md_job *j = calloc (1, sizeof *j);
  char *env = sh_export_lines (sp->envp);
  size_t argc = 0;
  while (sp->argv[argc])
    argc++;
  if (j)
    j->args = calloc (argc + 10, sizeof *j->args);
  if (!j || !env || !j->args)
    goto oom;
  j->id = sp->job;
  /* a terminal's input is always open: it is typed */
  j->stdin_pipe = sp->stdin_pipe || sp->pty;
  snprintf (j->name, sizeof j->name, "airlock-%s-%u", s->token, sp->job);
  random_uuid (j->exec_id);
  if (sp->pty)
    {
      j->pty_buf = *sp->pty;
      snprintf (j->term, sizeof j->term, "%s", sp->pty->term ? sp->pty->term : "xterm");
      j->pty_buf.term = j->term;
      j->pty = &j->pty_buf;
      random_uuid (j->prep_id);
    }
  random_hex (j->marker, 16);
  for (int i = 0; i < 2; i++)
    {
      j->out[i].s = s;
      j->out[i].j = j;
      j->out[i].fd = i;
    }
  /* The remote deadline just after ours (ours ends the job, 124); the
   * server's own later still, for a wrapper that is stuck. */
  unsigned long long t = sp->timeout_ms ? sp->timeout_ms + 1000 : 0;
  unsigned g = sp->grace_ms ? sp->grace_ms : 2000;
  if (t)
    j->timeout_secs = (unsigned) ((t + g) / 1000 + 30);
  size_t n = 0;
  j->args[n++] = strdup ("sh");
  j->args[n++] = strdup ("-c");
  j->args[n++] = strdup (MODAL_WRAPPER);
  j->args[n++] = strdup ("airlock-modal");
  if (sp->pty)
    j->args[n++] = strdup ("pty");
  j->args[n++] = strdup (j->name);
  j->args[n++] = xprintf ("%llu", t);
  j->args[n++] = xprintf ("%u", g);
  if (!sp->pty)
    j->args[n++] = strdup (sp->stdin_pipe ? "1" : "0");
  j->args[n++] = strdup (sp->cwd ? sp->cwd : "/");
  for (size_t i = 0; i < argc; i++)
    j->args[n++] = strdup (sp->argv[i]);
  for (size_t i = 0; i < n; i++)
    if (!j->args[i])
      goto oom;
  size_t ls = sp->script ? sp->script_len : 0, le = strlen (env);
  char head[96];
  int hl = snprintf (head, sizeof head, "%zu %zu %s\n", ls, le, j->marker);
  if (!(j->header = malloc ((size_t) hl + ls + le)))
    goto oom;
  memcpy (j->header, head, (size_t) hl);
  if (ls)
    memcpy (j->header + hl, sp->script, ls);
  memcpy (j->header + hl + ls, env, le);
  j->header_len = (size_t) hl + ls + le;
  explicit_bzero (env, le);
  free (env);
  pthread_mutex_lock (&s->lock);
  if (s->lost)
    {
      *err = xprintf ("%s", s->lost);
      pthread_mutex_unlock (&s->lock);
      free_job (j);
      return -1;
    }
  j->next = s->jobs;
  s->jobs = j;
  pthread_mutex_unlock (&s->lock);
  wake (s);
  return 0;
oom:
  free (env);
  if (j)
    free_job (j);
  *err = xprintf ("out of memory");
  return -1;
}

/* Typed input that leaves a line open. */
static bool
data_mid_line (const void *data, size_t n)
{
  char c = ((const char *) data)[n - 1];
  return c != '\n' && c != '\r';
}

static int
md_write_stdin (struct backend_session *s, uint32_t job, const void *data, size_t n, bool eof)
{
  pthread_mutex_lock (&s->lock);
  struct md_job *j = find_job (s, job);
  int rc = 0;
  /* A terminal's end of input is typed: ^D (twice after a partial line,
   * whose first only ends the line), its default VEOF; it stays open. */
  const char *end = j && j->pty && eof ? (j->mid_line || (n && data_mid_line (data, n))
                                          ? "\004\004" : "\004") : "";
  if (!j || !j->stdin_pipe || j->in_eof)
    rc = -ESRCH;
  else if (n || *end)
    {
      size_t ne = strlen (end);
      char *b = realloc (j->in, j->in_len + n + ne);
      if (!b)
        rc = -ENOMEM;
      else
        {
          if (n)
            memcpy (b + j->in_len, data, n);
          memcpy (b + j->in_len + n, end, ne);
          j->in = b;
          j->in_len += n + ne;
          if (j->pty && (n || ne))
            j->mid_line = !ne && data_mid_line (data, n);
        }
    }
  if (rc == 0 && eof && !j->pty)
    j->in_eof = true;
  pthread_mutex_unlock (&s->lock);
  wake (s);
  return rc;
}

static int
md_resize (struct backend_session *s, uint32_t job, unsigned rows, unsigned cols)
{
  pthread_mutex_lock (&s->lock);
  struct md_job *j = find_job (s, job);
  int rc = 0;
  if (!j)
    rc = -ESRCH;
  else if (!j->pty)
    rc = -ENOTTY;
  else
    {
      j->want_rows = rows;
      j->want_cols = cols;
    }
  pthread_mutex_unlock (&s->lock);
  wake (s);
  return rc;
}

static int
md_signal (struct backend_session *s, uint32_t job, int sig)
{
  pthread_mutex_lock (&s->lock);
  struct md_job *j = find_job (s, job);
  int rc = 0;
  if (!j)
    rc = -ESRCH;
  else
    {
      if (!j->sig || sig == SIGKILL)
        j->sig = sig;
      if (s->unreachable)
        {
          j->forgotten = true; /* the session layer ends it now */
          rc = BACKEND_KILL_PENDING;
        }
    }
  pthread_mutex_unlock (&s->lock);
  wake (s);
  return rc;
}

static int
md_event_fd (struct backend_session *s)
{
  return s->efd;
}

static int
md_next_event (struct backend_session *s, struct backend_event *ev, char **err)
{
  pthread_mutex_lock (&s->lock);
  int rc = 0;
  if (event_queue_pop (&s->q, ev))
    rc = 1;
  else
    {
      uint64_t v;
      if (read (s->efd, &v, sizeof v) < 0)
        {
          /* nothing pending */
        }
      if (s->lost)
        {
          *err = strdup (s->lost);
          rc = -1;
        }
    }
  pthread_mutex_unlock (&s->lock);
  return rc;
}

static int
md_health (struct backend_session *s, char **err)
{
  char *why = NULL;
  int alive = modal_sandbox_alive (s->api, &s->sb, &why, err);
  if (alive == 1)
    return 0;
  if (alive == 0)
    *err = xprintf ("the Modal sandbox %s has ended%s%s", s->sb.sandbox_id, why ? ": " : "",
                    why ? why : "");
  free (why);
  return -1;
}

/* A cloud sandbox: nothing of this host is reachable from it. */
static void
md_reach (struct backend_session *s, struct backend_reach *r)
{
  (void) s;
  r->isolated = true;
  r->host_filesystem = false;
  r->host_network = false;
}

static int
md_posture (struct backend_session *s, struct backend_posture *p, char **err)
{
  (void) s;
  (void) err;
  p->isolation = "cloud";
  p->namespaces[0] = NULL;
  p->seccomp = false;
  p->no_new_privs = false;
  p->capabilities = -1;
  p->network = "unknown";
  p->privilege = "modal";
  p->verified = false;
  return 0;
}

static void
free_session (struct backend_session *s)
{
  for (struct md_job *j = s->jobs, *n; j; j = n)
    {
      n = j->next;
      for (int i = 0; i < 2; i++)
        stream_stop (s, &j->out[i]);
      free_job (j);
    }
  event_queue_clear (&s->q);
  if (s->multi)
    curl_multi_cleanup (s->multi);
  if (s->uc)
    curl_easy_cleanup (s->uc);
  modal_api_free (s->api);
  modal_api_free (s->wapi);
  modal_sandbox_clear (&s->sb);
  if (s->efd >= 0)
    close (s->efd);
  for (size_t i = 0; i < s->nold; i++)
    free (s->old[i]);
  free (s->old);
  free (s->router_url);
  if (s->auth_line)
    explicit_bzero (s->auth_line, strlen (s->auth_line));
  free (s->auth_line);
  free (s->lost);
  free (s->session);
  pthread_mutex_destroy (&s->lock);
  free (s);
}

static void
md_close (struct backend_session *s)
{
  if (s->worker_started)
    {
      s->stop = 1;
      wake (s);
      pthread_join (s->worker, NULL);
    }
  char *err = NULL;
  if (s->sb.sandbox_id && modal_sandbox_terminate (s->api, &s->sb, &err) < 0)
    fprintf (stderr, "airlock: session %s: terminating the Modal sandbox %s: %s\n", s->session,
             s->sb.sandbox_id, err ? err : "failed");
  free (err);
  free_session (s);
}

static const struct backend_ops modal_ops = {
  .name = "modal",
  .signal = md_signal,
  .spawn = md_spawn,
  .write_stdin = md_write_stdin,
  .resize = md_resize, /* Modal's PTYInfo at the start; stty after */
  .event_fd = md_event_fd,
  .next_event = md_next_event,
  .health = md_health,
  .reach = md_reach,
  .posture = md_posture,
  .oom_kills = NULL,
  .close = md_close,
};

const struct backend_ops *
modal_session_ops (void)
{
  return &modal_ops;
}

/* The directory commands start in when modal.workdir is not set: the
 * sandbox user's home, as the sandbox says (one exec, before the worker
 * runs). */
static char *
first_cwd (struct backend_session *s, char **err)
{
  struct md_job j = { .forgotten = true, .reported = true }; /* no events */
  random_uuid (j.exec_id);
  char *args[] = { "sh", "-c", "cd 2>/dev/null; pwd -P", NULL };
  struct collect c = { 0 };
  int status = -1;
  bool ran = short_exec (s, &j, j.exec_id, args, NULL, 0, &c, &status) == 1;
  while (c.len && c.buf[c.len - 1] == '\n')
    c.buf[--c.len] = '\0';
  if (ran && status == 0 && c.len && c.buf[0] == '/')
    return c.buf;
  free (c.buf);
  *err = xprintf ("the Modal sandbox %s did not say its home directory (%s); set "
                  "modal.workdir", s->sb.sandbox_id,
                  ran ? "it answered something else" : "no answer");
  return NULL;
}

struct backend_session *
modal_session_open (const struct modal_session_options *o, char **cwd, char **err)
{
  struct backend_session *s = calloc (1, sizeof *s);
  if (!s)
    {
      *err = xprintf ("out of memory");
      return NULL;
    }
  pthread_mutex_init (&s->lock, NULL);
  s->efd = eventfd (0, EFD_CLOEXEC | EFD_NONBLOCK);
  random_hex (s->token, 8);
  s->session = strdup (o->session ? o->session : "");
  s->api = modal_api_new (&o->api);
  s->wapi = modal_api_new (&o->api);
  s->multi = curl_multi_init ();
  s->uc = curl_easy_init ();
  s->lease_secs = o->spec.lease_secs;
  s->lease_due = monotonic_ms () + (long long) s->lease_secs * 1000 / 4;
  s->control_loopback = o->api.server_url && !strncmp (o->api.server_url, "http://", 7)
                        && loopback_host (o->api.server_url);
  if (s->efd < 0 || !s->session || !s->api || !s->wapi || !s->multi || !s->uc)
    {
      *err = xprintf ("out of memory");
      free_session (s);
      return NULL;
    }
  if (modal_sandbox_start (s->api, &o->spec, &s->sb, err) < 0)
    {
      free_session (s);
      return NULL;
    }
  bool gone;
  if (refresh_router (s, s->api, &gone, err) < 0
      || !(*cwd = o->workdir && *o->workdir ? strdup (o->workdir) : first_cwd (s, err)))
    {
      if (!*err)
        *err = xprintf ("out of memory");
      char *e = NULL;
      modal_sandbox_terminate (s->api, &s->sb, &e);
      free (e);
      free_session (s);
      return NULL;
    }
  if (pthread_create (&s->worker, NULL, worker, s) != 0)
    {
      *err = xprintf ("cannot start the session's worker thread");
      char *e = NULL;
      modal_sandbox_terminate (s->api, &s->sb, &e);
      free (e);
      free (*cwd);
      *cwd = NULL;
      free_session (s);
      return NULL;
    }
  s->worker_started = true;
  return s;
}
