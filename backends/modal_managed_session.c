/* SPDX-License-Identifier: MIT */
/* The modal backend's managed sessions (see modal_managed_session.h).
 *
 * A session is one sandbox the gateway created for us (entitlement asked
 * first, failing closed; one idempotency key per session), terminated at
 * close.  Each command is one exec whose `command` is always the same
 * text, modal_managed_wrapper.sh: no command text, env or secret is ever
 * in it.  The job travels as the exec's stdinData (base64): a header
 * line, the session layer's script, a prelude (its env as export lines,
 * cd, argv) and then the command's own stdin.  The gateway gives one
 * merged output, as text: the wrapper encodes what the command writes
 * as lines of base64 (one per read), so that bytes arrive as they were.
 * We read it by byte offset (?offset=N, falling back to the whole output
 * of a plain poll), decode each whole line as stream 1 up to the job's
 * marker line (":K", K random per job, never known before the job ends;
 * ':' is not base64), and what follows the marker is the fd-3 report in
 * base64 (stream 3).  Files (file_put, file_get) are execs of the same
 * wrapper too, each on a thread of its own.
 *
 * The daemon is single-threaded; HTTP is not quick.  So every call of a
 * session runs on a worker thread of that session, with its own client;
 * the ops only queue work under the session's lock and return, and the
 * worker queues events back and signals an eventfd. */
#define _GNU_SOURCE
#include "modal_managed_session.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include "event_queue.h"
#include "files_host.h"
#include "modal_gateway.h"
#include "modal_managed_wrapper.h"
#include "monotonic_ms.h"
#include "sh_words.h"
#include "random_id.h"
#include "xprintf.h"

#define POLL_FIRST_MS 20
#define POLL_MAX_MS 500
#define RETRY_MAX_MS 5000
/* Without an answer from the gateway this long, a running command is lost. */
#define LOST_AFTER_MS (10 * 60 * 1000)
#define CALL_MS 30000
#define POLL_CALL_MS 5000
#define STDIN_MAX (4u << 20)
#define STDIN_GRACE_MS 300
#define DEFAULT_IMAGE "debian:12"
/* An upload's part: one exec's input (its base64 is 4/3 of it). */
#define PART_MAX (2u << 20)
/* A line of output not yet whole, kept at most (the wrapper's are 87
 * KiB, a download's 1.4 MB): more is not the wrapper's, passed on as it
 * is. */
#define LINE_MAX_BYTES (4u << 20)
#define FILES_MAX_AT_ONCE 4
#define FILE_TIMEOUT_MS (3600 * 1000LL)
/* The report's base64 kept at most (the session layer keeps 1 MiB of
 * report): more is a process that escaped the job writing on. */
#define META_MAX (8u << 20)

/* An exec's output taken a line at a time. */
struct out_lines {
  char *line;                 /* a line not yet whole */
  size_t len, cap;
  bool past_marker;
  char *after;                /* what follows the marker (bounded) */
  size_t after_len, after_max;
};

/* Where decoded bytes (out) and the wrapper's own plain lines (raw) go. */
struct out_sink {
  void (*out) (void *ctx, const void *data, size_t n);
  void (*raw) (void *ctx, const void *data, size_t n);
  void *ctx;
};

struct mm_job {
  struct mm_job *next;
  uint32_t id;
  char exec_id[37];
  char key[33];               /* the end marker's word */
  char mark[33];              /* AIRLOCK_MODAL_JOB in its processes' env */
  uint64_t timeout_ms;        /* the gateway's: ours + 1 s; 0 none */
  /* The worker's own */
  bool start_tried, running, ended, cleaned;
  long long sig_due;          /* a signal's next try (after no answer) */
  uint64_t offset;            /* output bytes read (offset reads) */
  uint64_t text_seen;         /* output bytes received (plain polls) */
  struct out_lines out;       /* after its marker: the report's base64 */
  long long due;
  unsigned poll_ms;
  long long unreachable_since;
  /* Under the lock */
  char *payload;              /* header, script, prelude, then stdin */
  size_t payload_len, stdin_len;
  bool stdin_pipe, stdin_eof, stdin_too_big;
  long long born;             /* when it was spawned (monotonic ms) */
  int sig;                    /* a signal to send */
  bool forgotten;             /* the session layer wants no more events */
  bool reported;              /* EXITED or ERROR queued */
};

/* A file moved by an exec of the wrapper (ops file_put, file_get): a
 * thread of its own with its own client, so that a long transfer never
 * holds up the worker's polls of running commands. */
struct mm_file {
  struct mm_file *next;
  struct backend_session *s;
  pthread_t thread;
  uint32_t ticket;
  bool put;
  char *host_path;
  char *remote;
  long long deadline;
  bool finished;              /* under the lock: ready to be joined */
};

struct backend_session {
  pthread_mutex_t lock;
  pthread_cond_t wake;
  pthread_t worker;
  bool worker_started;
  volatile int stop;
  int efd;
  struct mm_job *jobs;
  struct event_queue q;       /* under the lock */
  char *lost;                 /* the session is gone: why */
  bool unreachable;           /* the last call got no answer */
  char *session;
  char *sandbox_id;
  char *gateway_url, *token;  /* for the transfers' own clients */
  char upload_token[17];      /* in the names of uploads' files */
  struct mm_file *files;      /* under the lock; joined at close */
  unsigned nfiles;
  struct modal_gateway *g;      /* the worker's */
  struct modal_gateway *main_g; /* open, health and close: the daemon's thread */
};

static const char wrapper_text[] = MODAL_MANAGED_WRAPPER;

/* ---- events (under the lock) ---- */

static void
wake_daemon (struct backend_session *s)
{
  uint64_t one = 1;
  if (write (s->efd, &one, sizeof one) < 0)
    {
      /* the counter is already non-zero */
    }
}

static void
push_event (struct backend_session *s, const struct backend_event *ev, const void *data,
            size_t len, const char *msg)
{
  event_queue_push (&s->q, ev, data, len, msg);
  wake_daemon (s);
}

static void
report_end (struct backend_session *s, struct mm_job *j, int status, const char *lost)
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
      push_event (s, &ev, NULL, 0, lost);
      fprintf (stderr, "airlock: session %s, job %u: lost: %s\n", s->session, j->id, lost);
    }
  else
    {
      ev.type = BACKEND_EXITED;
      ev.exit_code = status;
      push_event (s, &ev, NULL, 0, NULL);
    }
}

static void
end_job (struct backend_session *s, struct mm_job *j, int status, const char *lost)
{
  j->ended = true;
  pthread_mutex_lock (&s->lock);
  report_end (s, j, status, lost);
  pthread_mutex_unlock (&s->lock);
}

static void
deliver (struct backend_session *s, struct mm_job *j, int stream, const void *data, size_t n)
{
  if (!n)
    return;
  pthread_mutex_lock (&s->lock);
  if (!j->forgotten)
    {
      struct backend_event ev = { .type = BACKEND_OUTPUT, .job = j->id, .stream = stream,
                                  .len = n };
      push_event (s, &ev, data, n, NULL);
    }
  pthread_mutex_unlock (&s->lock);
}

static void
session_lost (struct backend_session *s, char *why)
{
  pthread_mutex_lock (&s->lock);
  if (!s->lost)
    {
      s->lost = why;
      why = NULL;
      fprintf (stderr, "airlock: session %s: lost: %s\n", s->session, s->lost);
      for (struct mm_job *j = s->jobs; j; j = j->next)
        if (!j->ended)
          {
            j->ended = true;
            report_end (s, j, 0, s->lost);
          }
      wake_daemon (s);
    }
  pthread_mutex_unlock (&s->lock);
  free (why);
}

/* ---- a job's words ---- */

/* The prelude: the working directory, the env, the argv.  sh's cd
 * exports PWD and OLDPWD: gone again, unless the env has them. */
static char *
prelude (const struct backend_spawn *sp)
{
  char *env = sh_export_lines (sp->envp);
  char *cw = sh_quote (sp->cwd && *sp->cwd ? sp->cwd : "/");
  char *args = sh_argv_words (sp->argv);
  char *t = env && cw && args ? xprintf ("cd %s 2>/dev/null || cd /\nunset OLDPWD PWD\n%sset --%s\n",
                                         cw, env, args)
                              : NULL;
  free (env);
  free (cw);
  free (args);
  return t;
}

/* The header, script and prelude (stdin follows when it comes). */
static bool
build_payload (struct mm_job *j, const struct backend_spawn *sp)
{
  char *pre = prelude (sp);
  size_t ls = sp->script ? sp->script_len : 0;
  char *head = pre ? xprintf ("R %zu %zu %s %s\n", ls, strlen (pre), j->key, j->mark) : NULL;
  if (!head)
    {
      free (pre);
      return false;
    }
  size_t hl = strlen (head), pl = strlen (pre);
  j->payload = malloc (hl + ls + pl + 1);
  if (j->payload)
    {
      memcpy (j->payload, head, hl);
      if (ls)
        memcpy (j->payload + hl, sp->script, ls);
      memcpy (j->payload + hl + ls, pre, pl);
      j->payload_len = hl + ls + pl;
    }
  free (head);
  free (pre);
  return j->payload != NULL;
}

/* ---- the worker's calls ---- */

static void
unreachable (struct backend_session *s, struct mm_job *j, char *err)
{
  long long now = monotonic_ms ();
  if (!j->unreachable_since)
    j->unreachable_since = now;
  pthread_mutex_lock (&s->lock);
  s->unreachable = true;
  pthread_mutex_unlock (&s->lock);
  if (now - j->unreachable_since > LOST_AFTER_MS)
    end_job (s, j, 0, err ? err : "the modal gateway could not be reached for 10 minutes");
  else
    {
      fprintf (stderr, "airlock: session %s, job %u: %s (retrying)\n", s->session, j->id,
               err ? err : "no answer");
      j->poll_ms = j->poll_ms < 1000 ? 1000 : j->poll_ms * 2;
      if (j->poll_ms > RETRY_MAX_MS)
        j->poll_ms = RETRY_MAX_MS;
    }
  free (err);
}

static void
reachable (struct backend_session *s, struct mm_job *j)
{
  j->unreachable_since = 0;
  pthread_mutex_lock (&s->lock);
  s->unreachable = false;
  pthread_mutex_unlock (&s->lock);
}

/* An error answer: the sandbox gone loses the session (never
 * re-created), anything else the job. */
static void
refused (struct backend_session *s, struct mm_job *j, bool gone, char *err)
{
  if (gone)
    {
      char *why = xprintf ("the Modal sandbox %s is gone (terminated or expired outside "
                           "airlock): %s",
                           s->sandbox_id, err ? err : "?");
      session_lost (s, why ? why : strdup ("the Modal sandbox is gone"));
    }
  else
    end_job (s, j, 0, err ? err : "the modal gateway refused the command");
  free (err);
}

/* ---- output: lines of base64, the marker line, what follows ---- */

static bool
append (char **buf, size_t *len, size_t *cap, const void *data, size_t n)
{
  if (!*buf || *len + n + 1 > *cap)
    {
      size_t c = *cap ? *cap : 256;
      while (c < *len + n + 1)
        c *= 2;
      char *b = realloc (*buf, c);
      if (!b)
        return false;
      *buf = b;
      *cap = c;
    }
  memcpy (*buf + *len, data, n);
  *len += n;
  (*buf)[*len] = '\0';
  return true;
}

static void
out_lines_clear (struct out_lines *l)
{
  free (l->line);
  free (l->after);
  *l = (struct out_lines){ 0 };
}

/* A whole line (without its newline): base64 of the command's bytes, or
 * the wrapper's own words, passed on as they are. */
static void
take_line (const char *line, size_t n, const struct out_sink *k)
{
  unsigned char *bytes = NULL;
  ssize_t m = -1;
  if (n % 4 == 0 && !memchr (line, '\0', n))
    {
      char *t = strndup (line, n);
      m = t ? files_base64_decode (t, &bytes) : -1;
      free (t);
    }
  if (m > 0)
    k->out (k->ctx, bytes, (size_t) m);
  else if (m < 0)
    {
      k->raw (k->ctx, line, n);
      k->raw (k->ctx, "\n", 1);
    }
  free (bytes);
}

static bool
is_marker (const struct out_lines *l, const char *key, size_t *rest)
{
  size_t kl = strlen (key);
  if (l->len < kl + 1 || l->line[0] != ':' || memcmp (l->line + 1, key, kl)
      || (l->len > kl + 1 && l->line[kl + 1] != ' '))
    return false;
  *rest = kl + 1;
  return true;
}

static void
keep_after (struct out_lines *l, const char *data, size_t n)
{
  size_t cap = l->after_len + 1;
  if (n && l->after_len + n <= l->after_max)
    append (&l->after, &l->after_len, &cap, data, n);
}

/* Output bytes in order: whole lines decoded, up to the marker; what
 * follows it kept. */
static void
lines_feed (struct out_lines *l, const char *key, const char *data, size_t n,
            const struct out_sink *k)
{
  while (n)
    {
      if (l->past_marker)
        return keep_after (l, data, n);
      const char *nl = memchr (data, '\n', n);
      size_t take = nl ? (size_t) (nl - data) : n;
      if (l->len + take > LINE_MAX_BYTES)
        {
          /* not the wrapper's: as it is */
          k->raw (k->ctx, l->line, l->len);
          l->len = 0;
        }
      if (!append (&l->line, &l->len, &l->cap, data, take))
        return;
      data += take;
      n -= take;
      if (!nl)
        return;
      data++;
      n--;
      size_t rest;
      if (is_marker (l, key, &rest))
        {
          l->past_marker = true;
          keep_after (l, l->line + rest, l->len - rest);
          keep_after (l, "\n", 1);
        }
      else
        take_line (l->line, l->len, k);
      l->len = 0;
    }
}

/* The output's end: a line left without its newline (an exec cut off). */
static void
lines_end (struct out_lines *l, const struct out_sink *k)
{
  if (!l->past_marker && l->len)
    take_line (l->line, l->len, k);
  l->len = 0;
}

struct job_ctx {
  struct backend_session *s;
  struct mm_job *j;
};

static void
job_out (void *ctx, const void *data, size_t n)
{
  struct job_ctx *c = ctx;
  deliver (c->s, c->j, 1, data, n);
}

static void
take_output (struct backend_session *s, struct mm_job *j, const char *data, size_t n)
{
  struct job_ctx c = { s, j };
  struct out_sink k = { job_out, job_out, &c };
  lines_feed (&j->out, j->key, data, n, &k);
}

/* The exec's end: what is held, the report, the status. */
static void
finish (struct backend_session *s, struct mm_job *j, const struct modal_gateway_exec *x)
{
  struct job_ctx c = { s, j };
  struct out_sink k = { job_out, job_out, &c };
  lines_end (&j->out, &k);
  char *meta = j->out.after;
  size_t meta_len = j->out.after_len;
  while (meta_len && (meta[meta_len - 1] == '\n' || meta[meta_len - 1] == '\r'
                      || meta[meta_len - 1] == ' '))
    meta[--meta_len] = '\0';
  while (meta_len && (*meta == '\n' || *meta == ' '))
    {
      meta++;
      meta_len--;
    }
  if (j->out.past_marker && meta_len)
    {
      unsigned char *bytes = NULL;
      ssize_t n = files_base64_decode (meta, &bytes);
      if (n > 0)
        deliver (s, j, 3, bytes, (size_t) n);
      else if (n < 0)
        fprintf (stderr, "airlock: session %s, job %u: a garbled report\n", s->session, j->id);
      free (bytes);
    }
  if (!strcmp (x->status, "failed") && !j->out.past_marker)
    {
      char *m = xprintf ("the modal gateway could not start the command (%s)",
                         x->output && *x->output ? x->output : "no reason given");
      end_job (s, j, 0, m ? m : "the modal gateway could not start the command");
      free (m);
      return;
    }
  end_job (s, j, x->returncode, NULL);
}

/* An exec answer: its new output, then its end when it is whole. */
static void
absorb (struct backend_session *s, struct mm_job *j, const struct modal_gateway_exec *x)
{
  const char *data = x->output;
  size_t n = x->output_len;
  bool whole = true;
  if (x->has_next)
    {
      j->offset = x->next_offset;
      whole = !x->output_length || x->next_offset >= x->output_length;
    }
  else
    {
      /* A plain answer: the whole output so far; only what is new. */
      if (n <= j->text_seen)
        n = 0;
      else
        {
          data += j->text_seen;
          n -= j->text_seen;
        }
    }
  j->text_seen += n;
  if (n)
    take_output (s, j, data, n);
  if (x->terminal && whole)
    finish (s, j, x);
  /* More already there (a read's limit): at once; else 20 ms, doubling
   * to 500 ms while nothing comes. */
  if (!whole)
    j->poll_ms = 0;
  else if (n || j->poll_ms < POLL_FIRST_MS)
    j->poll_ms = POLL_FIRST_MS;
  else if ((j->poll_ms *= 2) > POLL_MAX_MS)
    j->poll_ms = POLL_MAX_MS;
}

static void
start_job (struct backend_session *s, struct mm_job *j)
{
  /* Whole by now (its stdin closed, or none): nothing writes to it. */
  char *b64 = files_base64_encode (j->payload, j->payload_len);
  if (!b64)
    {
      end_job (s, j, 0, "out of memory");
      return;
    }
  struct modal_gateway_exec_request rq = { .exec_id = j->exec_id, .command = wrapper_text,
                                           .timeout_ms = j->timeout_ms, .stdin_data = b64 };
  struct modal_gateway_exec x;
  bool gone = false;
  char *err = NULL;
  j->start_tried = true;
  enum modal_gateway_result r = modal_gateway_exec_start (s->g, s->sandbox_id, &rq,
                                                          monotonic_ms () + CALL_MS, &s->stop,
                                                          &x, &gone, &err);
  free (b64);
  if (r == MG_UNREACHABLE)
    {
      /* Sent or not, we cannot tell: the execId makes a second start the
       * same exec, so it is tried again. */
      unreachable (s, j, err);
      j->due = monotonic_ms () + j->poll_ms;
      return;
    }
  if (r == MG_REFUSED)
    {
      refused (s, j, gone, err);
      return;
    }
  reachable (s, j);
  pthread_mutex_lock (&s->lock);
  free (j->payload); /* the script and stdin: not kept longer than needed */
  j->payload = NULL;
  if (!j->forgotten)
    {
      struct backend_event ev = { .type = BACKEND_STARTED, .job = j->id };
      push_event (s, &ev, NULL, 0, NULL);
    }
  pthread_mutex_unlock (&s->lock);
  j->running = true;
  j->poll_ms = POLL_FIRST_MS;
  /* An answer may already be the whole exec (a quick command). */
  if (x.terminal && !x.has_next)
    absorb (s, j, &x);
  modal_gateway_exec_clear (&x);
  j->due = monotonic_ms () + (j->ended ? 0 : POLL_FIRST_MS);
}

static void
poll_job (struct backend_session *s, struct mm_job *j)
{
  struct modal_gateway_exec x;
  bool gone = false;
  char *err = NULL;
  enum modal_gateway_result r = modal_gateway_exec_poll (s->g, s->sandbox_id, j->exec_id,
                                                         j->offset, monotonic_ms () + POLL_CALL_MS,
                                                         &s->stop, &x, &gone, &err);
  if (r == MG_UNREACHABLE)
    unreachable (s, j, err);
  else if (r == MG_REFUSED)
    refused (s, j, gone, err);
  else
    {
      reachable (s, j);
      absorb (s, j, &x);
      modal_gateway_exec_clear (&x);
    }
}

/* sig to the job: a kill exec finds its processes by their mark; a KILL
 * also cancels the exec (the gateway kills it whole). */
static void
send_signal (struct backend_session *s, struct mm_job *j, int sig)
{
  char id[37], *head = xprintf ("X %s %d\n", j->mark, sig);
  char *b64 = head ? files_base64_encode (head, strlen (head)) : NULL;
  free (head);
  if (!b64)
    return;
  modal_gateway_uuid (id);
  struct modal_gateway_exec_request rq = { .exec_id = id, .command = wrapper_text,
                                           .timeout_ms = 60000, .stdin_data = b64 };
  struct modal_gateway_exec x = { 0 };
  bool gone = false;
  char *err = NULL;
  enum modal_gateway_result r = modal_gateway_exec_start (s->g, s->sandbox_id, &rq,
                                                          monotonic_ms () + CALL_MS, &s->stop,
                                                          &x, &gone, &err);
  free (b64);
  modal_gateway_exec_clear (&x);
  if (r == MG_OK && sig == SIGKILL && j->running)
    {
      free (err);
      err = NULL;
      r = modal_gateway_exec_cancel (s->g, s->sandbox_id, j->exec_id, monotonic_ms () + CALL_MS,
                                     &s->stop, &gone, &err);
    }
  if (r == MG_UNREACHABLE)
    {
      /* sent again on a later round; meanwhile a kill is pending */
      fprintf (stderr, "airlock: session %s, job %u: signal %d: %s\n", s->session, j->id, sig,
               err ? err : "no answer");
      pthread_mutex_lock (&s->lock);
      if (!j->sig || sig == SIGKILL)
        j->sig = sig;
      s->unreachable = true;
      pthread_mutex_unlock (&s->lock);
      j->sig_due = monotonic_ms () + RETRY_MAX_MS;
    }
  else if (r == MG_REFUSED && gone)
    {
      refused (s, j, true, err);
      err = NULL;
    }
  else if (r == MG_REFUSED)
    fprintf (stderr, "airlock: session %s, job %u: signal %d: %s\n", s->session, j->id, sig,
             err ? err : "refused");
  free (err);
}

static void
free_job (struct mm_job *j)
{
  free (j->payload);
  out_lines_clear (&j->out);
  free (j);
}

/* What the worker does next for a job (under the lock). */
enum work { W_NONE, W_SIGNAL, W_CANCELLED, W_START, W_POLL };

static enum work
work_for (struct backend_session *s, struct mm_job *c, long long now, long long *next)
{
  if (c->cleaned || s->lost)
    return W_NONE;
  if (c->ended)
    {
      c->cleaned = true; /* the wrapper removed its files */
      return W_NONE;
    }
  /* Killed before it started (or may have: then the start, which is
   * idempotent, is tried again first, and the signal follows). */
  if (!c->running && !c->start_tried && (c->forgotten || c->sig))
    return W_CANCELLED;
  if (c->sig && c->running)
    {
      if (c->sig_due <= now)
        return W_SIGNAL;
      if (c->sig_due < *next)
        *next = c->sig_due;
    }
  /* Input is taken only with the start: a command whose input has not
   * begun to come soon after it was spawned (a background job, which
   * may never get any) starts with none, and its stdin is closed. */
  if (c->stdin_pipe && !c->stdin_eof && !c->stdin_len && !c->running
      && now - c->born >= STDIN_GRACE_MS)
    c->stdin_eof = true;
  else if (c->stdin_pipe && !c->stdin_eof && !c->stdin_len && c->born + STDIN_GRACE_MS < *next)
    *next = c->born + STDIN_GRACE_MS;
  bool ready = !c->stdin_pipe || c->stdin_eof || c->stdin_too_big;
  if ((c->running || ready) && c->due > now && c->due < *next)
    *next = c->due;
  if (c->due > now)
    return W_NONE;
  return c->running ? W_POLL : ready ? W_START : W_NONE;
}

static void
wait_until (struct backend_session *s, long long next, long long now)
{
  struct timespec ts;
  clock_gettime (CLOCK_MONOTONIC, &ts);
  long long wait = next - now;
  ts.tv_sec += wait / 1000;
  ts.tv_nsec += (wait % 1000) * 1000000;
  if (ts.tv_nsec >= 1000000000)
    {
      ts.tv_sec++;
      ts.tv_nsec -= 1000000000;
    }
  pthread_cond_timedwait (&s->wake, &s->lock, &ts);
}

static void *
worker (void *arg)
{
  struct backend_session *s = arg;
  pthread_mutex_lock (&s->lock);
  while (!s->stop)
    {
      long long now = monotonic_ms ();
      long long next = now + 1000;
      struct mm_job *j = NULL;
      enum work w = W_NONE;
      /* The first job with something due; a poll goes to the back of the
       * list after its turn, so that a busy job starves nobody. */
      for (struct mm_job *c = s->jobs; c && w == W_NONE; c = c->next)
        if ((w = work_for (s, c, now, &next)) != W_NONE)
          j = c;
      if (!j)
        {
          wait_until (s, next, now);
          goto reap;
        }
      int sig = j->sig;
      if (w == W_SIGNAL)
        j->sig = 0;
      bool too_big = j->stdin_too_big;
      pthread_mutex_unlock (&s->lock);
      switch (w)
        {
        case W_SIGNAL:
          send_signal (s, j, sig);
          break;
        case W_CANCELLED:
          /* Killed before it started: it never runs. */
          pthread_mutex_lock (&s->lock);
          j->ended = true;
          report_end (s, j, 128 + (j->sig ? j->sig : SIGKILL), NULL);
          pthread_mutex_unlock (&s->lock);
          break;
        case W_START:
          if (too_big)
            end_job (s, j, 0, "the command's stdin is over 4 MiB: the modal gateway takes "
                              "a command's whole stdin when it starts, and no more than that");
          else
            start_job (s, j);
          break;
        case W_POLL:
          poll_job (s, j);
          if (!j->ended)
            j->due = monotonic_ms () + j->poll_ms;
          break;
        case W_NONE:
          break;
        }
      pthread_mutex_lock (&s->lock);
      if (w == W_POLL && j->next)
        {
          /* to the back of the list */
          struct mm_job **p = &s->jobs;
          while (*p != j)
            p = &(*p)->next;
          *p = j->next;
          struct mm_job **t = p;
          while (*t)
            t = &(*t)->next;
          *t = j;
          j->next = NULL;
        }
    reap:
      for (struct mm_job **p = &s->jobs; *p;)
        if ((*p)->cleaned && (*p)->reported)
          {
            struct mm_job *d = *p;
            *p = d->next;
            free_job (d);
          }
        else
          p = &(*p)->next;
    }
  pthread_mutex_unlock (&s->lock);
  return NULL;
}

/* ---- ops (the daemon's thread) ---- */

static struct mm_job *
find_job (struct backend_session *s, uint32_t id)
{
  for (struct mm_job *j = s->jobs; j; j = j->next)
    if (j->id == id && !j->reported)
      return j;
  return NULL;
}

static int
mm_spawn (struct backend_session *s, const struct backend_spawn *sp, char **err)
{
  struct mm_job *j = calloc (1, sizeof *j);
  if (!j)
    {
      *err = xprintf ("out of memory");
      return -1;
    }
  j->id = sp->job;
  j->stdin_pipe = sp->stdin_pipe;
  /* The gateway's deadline a little after ours: ours ends the job (124);
   * the gateway's holds when we cannot reach it. */
  j->timeout_ms = sp->timeout_ms ? sp->timeout_ms + 1000 : 0;
  modal_gateway_uuid (j->exec_id);
  random_hex (j->key, 16);
  random_hex (j->mark, 16);
  j->out.after_max = META_MAX;
  j->due = j->born = monotonic_ms ();
  if (!build_payload (j, sp))
    {
      free_job (j);
      *err = xprintf ("out of memory");
      return -1;
    }
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
  pthread_cond_signal (&s->wake);
  pthread_mutex_unlock (&s->lock);
  return 0;
}

/* The gateway takes stdin only at the start: it is kept until its end. */
static int
mm_write_stdin (struct backend_session *s, uint32_t job, const void *data, size_t n, bool eof)
{
  pthread_mutex_lock (&s->lock);
  struct mm_job *j = find_job (s, job);
  int rc = 0;
  if (!j || !j->stdin_pipe || j->stdin_eof || !j->payload)
    rc = -ESRCH;
  else if (j->stdin_len + n > STDIN_MAX)
    {
      j->stdin_too_big = true;
      rc = -EFBIG;
    }
  else if (n)
    {
      char *p = realloc (j->payload, j->payload_len + n);
      if (!p)
        rc = -ENOMEM;
      else
        {
          memcpy (p + j->payload_len, data, n);
          j->payload = p;
          j->payload_len += n;
          j->stdin_len += n;
        }
    }
  if (rc == 0 && eof)
    j->stdin_eof = true;
  pthread_cond_signal (&s->wake);
  pthread_mutex_unlock (&s->lock);
  return rc;
}

static int
mm_signal (struct backend_session *s, uint32_t job, int sig)
{
  pthread_mutex_lock (&s->lock);
  struct mm_job *j = find_job (s, job);
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
      pthread_cond_signal (&s->wake);
    }
  pthread_mutex_unlock (&s->lock);
  return rc;
}

static int
mm_event_fd (struct backend_session *s)
{
  return s->efd;
}

static int
mm_next_event (struct backend_session *s, struct backend_event *ev, char **err)
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

/* The sandbox answers when a poll of an exec it never had says just
 * that (and not that the sandbox is gone). */
static int
mm_health (struct backend_session *s, char **err)
{
  char *path = xprintf ("/v1/sandboxes/%s/execs/airlock-health", s->sandbox_id);
  struct modal_gateway_reply r;
  if (!path)
    {
      *err = xprintf ("out of memory");
      return -1;
    }
  int rc = modal_gateway_call (s->main_g, "GET", path, NULL, NULL,
                               (uint64_t) monotonic_ms () + POLL_CALL_MS, NULL, &r, err);
  free (path);
  if (rc < 0)
    return -1;
  if (r.status != 404 || modal_gateway_sandbox_gone (&r))
    {
      *err = modal_gateway_error_text (s->main_g, &r, "checking the Modal sandbox");
      rc = -1;
    }
  modal_gateway_reply_free (&r);
  return rc;
}

static void
mm_reach (struct backend_session *s, struct backend_reach *r)
{
  (void) s;
  r->isolated = true;
  r->host_filesystem = false;
  r->host_network = false;
}

static int
mm_posture (struct backend_session *s, struct backend_posture *p, char **err)
{
  (void) s;
  (void) err;
  p->isolation = "cloud";
  p->namespaces[0] = NULL;
  p->seccomp = false;
  p->no_new_privs = false;
  p->capabilities = -1;
  p->network = "unknown";
  p->privilege = "modal-gateway";
  p->verified = false;
  return 0;
}

/* ---- files (ops file_put, file_get): execs of the wrapper ---- */

struct file_exec {
  struct mm_file *f;
  struct modal_gateway *g;
  char key[33];
  struct out_lines lines;
  struct out_sink sink;
  int returncode;
};

static long long
call_deadline (const struct mm_file *f)
{
  long long d = monotonic_ms () + CALL_MS;
  return d < f->deadline ? d : f->deadline;
}

static void
nap_ms (unsigned ms)
{
  struct timespec ts = { ms / 1000, (long) (ms % 1000) * 1000000L };
  nanosleep (&ts, NULL);
}

static char *
gone_text (const struct backend_session *s, const char *err)
{
  return xprintf ("the Modal sandbox %s is gone (terminated or expired outside airlock): %s",
                  s->sandbox_id, err ? err : "?");
}

/* One exec of the wrapper with payload as its input, to its end: its
 * output through fx's lines, its status in fx->returncode.  NULL, or why
 * it did not run to its end (malloc'd). */
static char *
file_exec_run (struct file_exec *fx, const char *payload, size_t len)
{
  struct mm_file *f = fx->f;
  struct backend_session *s = f->s;
  char id[37], *err = NULL, *b64 = files_base64_encode (payload, len);
  if (!b64)
    return xprintf ("out of memory");
  modal_gateway_uuid (id);
  long long left = f->deadline - monotonic_ms ();
  struct modal_gateway_exec_request rq = { .exec_id = id, .command = wrapper_text,
                                           .timeout_ms = left > 1000 ? (uint64_t) left : 1000,
                                           .stdin_data = b64 };
  struct modal_gateway_exec x = { 0 };
  bool gone = false, started = false;
  uint64_t offset = 0, seen = 0;
  unsigned wait = POLL_FIRST_MS;
  char *why = NULL;
  fx->lines.after_max = 4096; /* ":KEY SIZE" */
  while (!why)
    {
      if (s->stop)
        why = xprintf ("the session is closing");
      else if (monotonic_ms () >= f->deadline)
        why = xprintf ("timed out");
      if (why)
        break;
      enum modal_gateway_result r
          = started ? modal_gateway_exec_poll (fx->g, s->sandbox_id, id, offset,
                                               call_deadline (f), &s->stop, &x, &gone, &err)
                    : modal_gateway_exec_start (fx->g, s->sandbox_id, &rq, call_deadline (f),
                                                &s->stop, &x, &gone, &err);
      if (r == MG_UNREACHABLE)
        {
          /* the same execId again: never run twice */
          free (err);
          err = NULL;
          nap_ms (1000);
          continue;
        }
      if (r == MG_REFUSED)
        {
          why = gone ? gone_text (s, err) : xprintf ("%s", err ? err : "refused");
          break;
        }
      bool first = !started;
      started = true;
      if (first && !(x.terminal && !x.has_next))
        {
          modal_gateway_exec_clear (&x);
          continue; /* read by offset from its start */
        }
      const char *data = x.output;
      size_t n = x.output_len;
      bool whole = true;
      if (x.has_next)
        {
          offset = x.next_offset;
          whole = !x.output_length || x.next_offset >= x.output_length;
        }
      else if (n <= seen)
        n = 0;
      else
        {
          data += seen;
          n -= seen;
        }
      seen += n;
      if (n)
        lines_feed (&fx->lines, fx->key, data, n, &fx->sink);
      if (x.terminal && whole)
        {
          lines_end (&fx->lines, &fx->sink);
          fx->returncode = strcmp (x.status, "completed") && !x.returncode ? -1 : x.returncode;
          modal_gateway_exec_clear (&x);
          break;
        }
      modal_gateway_exec_clear (&x);
      if (!whole)
        wait = 0;
      else if (n)
        wait = POLL_FIRST_MS;
      else if ((wait = wait ? wait * 2 : POLL_FIRST_MS) > POLL_MAX_MS)
        wait = POLL_MAX_MS;
      if (wait)
        nap_ms (wait);
    }
  free (err);
  free (b64);
  if (why && started)
    {
      /* given up: it ends in the sandbox too */
      char *e2 = NULL;
      modal_gateway_exec_cancel (fx->g, s->sandbox_id, id, monotonic_ms () + 5000, NULL, &gone,
                                 &e2);
      free (e2);
    }
  return why;
}

/* The wrapper's own words, kept for an error (the first 300 bytes). */
struct said {
  char text[301];
  size_t len;
};

static void
said_raw (void *ctx, const void *data, size_t n)
{
  struct said *w = ctx;
  n = n < sizeof w->text - 1 - w->len ? n : sizeof w->text - 1 - w->len;
  memcpy (w->text + w->len, data, n);
  w->len += n;
  w->text[w->len] = '\0';
  w->text[strcspn (w->text, "\n")] = '\0';
}

/* What the exec said after its marker: the file's size, or -1. */
static long long
said_size (const struct file_exec *fx)
{
  if (!fx->lines.past_marker || !fx->lines.after)
    return -1;
  char *end;
  unsigned long long v = strtoull (fx->lines.after, &end, 10);
  return end == fx->lines.after ? -1 : (long long) v;
}

/* The sandbox's file removed (best effort, a short while). */
static void
remove_remote (struct mm_file *f, struct modal_gateway *g)
{
  size_t n = strlen (f->remote);
  char *p = malloc (n + 3);
  if (!p)
    return;
  memcpy (p, "D\n", 2);
  memcpy (p + 2, f->remote, n + 1);
  struct said w = { 0 };
  struct file_exec fx = { .f = f, .g = g, .sink = { said_raw, said_raw, &w } };
  long long deadline = f->deadline;
  f->deadline = monotonic_ms () + CALL_MS;
  free (file_exec_run (&fx, p, n + 2));
  f->deadline = deadline;
  out_lines_clear (&fx.lines);
  free (p);
}

static size_t
read_full (int fd, char *buf, size_t n)
{
  size_t got = 0;
  while (got < n)
    {
      ssize_t r = read (fd, buf + got, n - got);
      if (r < 0 && errno == EINTR)
        continue;
      if (r <= 0)
        break;
      got += (size_t) r;
    }
  return got;
}

static void
ignore_bytes (void *ctx, const void *data, size_t n)
{
  (void) ctx;
  (void) data;
  (void) n;
}

/* file_put: the host file in parts, each appended by one exec. */
static char *
put_file (struct mm_file *f, struct modal_gateway *g)
{
  int fd = open (f->host_path, O_RDONLY | O_CLOEXEC);
  struct stat st;
  if (fd < 0 || fstat (fd, &st) < 0)
    {
      char *m = xprintf ("cannot read the upload's stream on the host: %s", strerror (errno));
      if (fd >= 0)
        close (fd);
      return m;
    }
  char head[160];
  char *buf = malloc (sizeof head + PART_MAX);
  char *why = buf ? NULL : xprintf ("out of memory");
  unsigned long long off = 0;
  while (!why)
    {
      struct file_exec fx = { .f = f, .g = g };
      random_hex (fx.key, 16);
      int h = snprintf (head, sizeof head, "A %s %s %u %llu\n", fx.key, f->s->upload_token,
                        f->ticket, off);
      size_t n = read_full (fd, buf + h, PART_MAX);
      memcpy (buf, head, (size_t) h);
      struct said w = { 0 };
      fx.sink = (struct out_sink){ ignore_bytes, said_raw, &w };
      why = file_exec_run (&fx, buf, (size_t) h + n);
      long long size = said_size (&fx);
      out_lines_clear (&fx.lines);
      if (why)
        break;
      if (fx.returncode != 0)
        why = xprintf ("the sandbox did not take a part of the upload (status %d)%s%s",
                       fx.returncode, w.len ? ": " : "", w.text);
      else if (size < 0 || (unsigned long long) size != off + n)
        why = xprintf ("the upload's file in the sandbox has %lld bytes, not %llu", size,
                       off + n);
      off += n;
      if (n < PART_MAX)
        break;
    }
  if (!why && off != (unsigned long long) st.st_size)
    why = xprintf ("the upload's stream changed on the host while it was sent");
  free (buf);
  close (fd);
  if (why)
    remove_remote (f, g);
  return why;
}

struct get_ctx {
  int fd;
  unsigned long long written;
  int error;
};

static void
get_out (void *ctx, const void *data, size_t n)
{
  struct get_ctx *c = ctx;
  const char *p = data;
  while (n && !c->error)
    {
      ssize_t w = write (c->fd, p, n);
      if (w < 0 && errno == EINTR)
        continue;
      if (w < 0)
        {
          c->error = errno;
          return;
        }
      p += w;
      n -= (size_t) w;
      c->written += (unsigned long long) w;
    }
}

struct get_sink {
  struct get_ctx c;
  struct said w;
};

static void
get_write (void *ctx, const void *data, size_t n)
{
  get_out (&((struct get_sink *) ctx)->c, data, n);
}

static void
get_said (void *ctx, const void *data, size_t n)
{
  said_raw (&((struct get_sink *) ctx)->w, data, n);
}

/* file_get: the sandbox's file read through one exec's output, into the
 * host file; the sandbox's file removed whatever happens. */
static char *
get_file (struct mm_file *f, struct modal_gateway *g)
{
  struct get_sink k = { .c = { .fd = open (f->host_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
                                          0600) } };
  if (k.c.fd < 0)
    {
      char *m = xprintf ("cannot write the download on the host: %s", strerror (errno));
      remove_remote (f, g);
      return m;
    }
  struct file_exec fx = { .f = f, .g = g, .sink = { get_write, get_said, &k } };
  random_hex (fx.key, 16);
  char *p = xprintf ("G %s\n%s", fx.key, f->remote);
  char *why = p ? file_exec_run (&fx, p, strlen (p)) : xprintf ("out of memory");
  long long size = said_size (&fx);
  if (!why && k.c.error)
    why = xprintf ("cannot write the download on the host: %s", strerror (k.c.error));
  else if (!why && fx.returncode != 0)
    why = xprintf ("the sandbox could not read the download's file (status %d)%s%s",
                   fx.returncode, k.w.len ? ": " : "", k.w.text);
  else if (!why && (size < 0 || (unsigned long long) size != k.c.written))
    why = xprintf ("the download came %llu bytes of %lld", k.c.written, size);
  if (close (k.c.fd) < 0 && !why)
    why = xprintf ("cannot write the download on the host: %s", strerror (errno));
  if (why)
    remove_remote (f, g); /* the wrapper removes it when it gets that far */
  out_lines_clear (&fx.lines);
  free (p);
  return why;
}

static void *
file_thread (void *arg)
{
  struct mm_file *f = arg;
  struct backend_session *s = f->s;
  struct modal_gateway *g = modal_gateway_new (s->gateway_url, s->token);
  char *why = !g ? xprintf ("out of memory") : f->put ? put_file (f, g) : get_file (f, g);
  modal_gateway_free (g);
  pthread_mutex_lock (&s->lock);
  struct backend_event ev = { .type = BACKEND_FILE_DONE, .job = f->ticket };
  if (!s->stop)
    push_event (s, &ev, NULL, 0, why);
  s->nfiles--;
  f->finished = true;
  pthread_mutex_unlock (&s->lock);
  free (why);
  return NULL;
}

static void
free_file (struct mm_file *f)
{
  free (f->host_path);
  free (f->remote);
  free (f);
}

/* Transfers that ended are joined (their threads hold the lock last
 * when they mark themselves finished, so the join is quick). */
static void
reap_files (struct backend_session *s)
{
  for (struct mm_file **p = &s->files; *p;)
    if ((*p)->finished)
      {
        struct mm_file *f = *p;
        *p = f->next;
        pthread_join (f->thread, NULL);
        free_file (f);
      }
    else
      p = &(*p)->next;
}

static int
start_file (struct backend_session *s, uint32_t ticket, bool put, const char *host_path,
            const char *remote, uint64_t timeout_ms, char **err)
{
  struct mm_file *f = calloc (1, sizeof *f);
  if (!f || !(f->host_path = strdup (host_path)) || !(f->remote = strdup (remote)))
    {
      if (f)
        free_file (f);
      *err = xprintf ("out of memory");
      return -1;
    }
  f->s = s;
  f->ticket = ticket;
  f->put = put;
  f->deadline = monotonic_ms () + (timeout_ms ? (long long) timeout_ms : FILE_TIMEOUT_MS);
  pthread_mutex_lock (&s->lock);
  reap_files (s);
  int rc = 0;
  if (s->lost)
    *err = xprintf ("%s", s->lost);
  else if (s->nfiles >= FILES_MAX_AT_ONCE)
    *err = xprintf ("%u file transfers of this session are under way: wait for one to end",
                    s->nfiles);
  else if ((rc = pthread_create (&f->thread, NULL, file_thread, f)) != 0)
    *err = xprintf ("cannot start a transfer: %s", strerror (rc));
  else
    {
      s->nfiles++;
      f->next = s->files;
      s->files = f;
      pthread_mutex_unlock (&s->lock);
      return 0;
    }
  pthread_mutex_unlock (&s->lock);
  free_file (f);
  return -1;
}

static int
mm_file_put (struct backend_session *s, uint32_t ticket, const char *host_path,
             uint64_t timeout_ms, char *remote, size_t remote_size, char **err)
{
  /* /tmp, by a name no one else in the sandbox can guess in advance (the
   * wrapper makes the same name) */
  int n = snprintf (remote, remote_size, "/tmp/.airlock-upload-%s-%u.tar", s->upload_token,
                    ticket);
  if (n < 0 || (size_t) n >= remote_size)
    {
      *err = xprintf ("no room for the upload's path");
      return -1;
    }
  return start_file (s, ticket, true, host_path, remote, timeout_ms, err);
}

static int
mm_file_get (struct backend_session *s, uint32_t ticket, const char *remote,
             const char *host_path, uint64_t timeout_ms, char **err)
{
  return start_file (s, ticket, false, host_path, remote, timeout_ms, err);
}

/* At close: every transfer ends (s->stop cancels them) and is joined. */
static void
join_files (struct backend_session *s)
{
  pthread_mutex_lock (&s->lock);
  struct mm_file *f = s->files;
  s->files = NULL;
  pthread_mutex_unlock (&s->lock);
  while (f)
    {
      struct mm_file *n = f->next;
      pthread_join (f->thread, NULL);
      free_file (f);
      f = n;
    }
}

static void
free_session (struct backend_session *s)
{
  for (struct mm_job *j = s->jobs, *n; j; j = n)
    {
      n = j->next;
      free_job (j);
    }
  event_queue_clear (&s->q);
  modal_gateway_free (s->g);
  modal_gateway_free (s->main_g);
  if (s->efd >= 0)
    close (s->efd);
  free (s->lost);
  free (s->session);
  free (s->sandbox_id);
  free (s->gateway_url);
  if (s->token)
    explicit_bzero (s->token, strlen (s->token));
  free (s->token);
  pthread_mutex_destroy (&s->lock);
  pthread_cond_destroy (&s->wake);
  free (s);
}

static void
terminate_sandbox (struct backend_session *s)
{
  char *err = NULL;
  if (s->sandbox_id && modal_gateway_terminate (s->main_g, s->sandbox_id, false, &err) < 0)
    fprintf (stderr, "airlock: session %s: %s\n", s->session, err ? err : "terminate failed");
  free (err);
}

static void
mm_close (struct backend_session *s)
{
  if (s->worker_started)
    {
      pthread_mutex_lock (&s->lock);
      s->stop = true;
      pthread_cond_signal (&s->wake);
      pthread_mutex_unlock (&s->lock);
      pthread_join (s->worker, NULL);
    }
  s->stop = true;
  join_files (s);
  terminate_sandbox (s);
  free_session (s);
}

static const struct backend_ops modal_managed_backend_ops = {
  .name = "modal",
  .stdin_max = STDIN_MAX,
  .signal = mm_signal,
  .spawn = mm_spawn,
  .write_stdin = mm_write_stdin,
  .no_pty_why = "in managed mode the gateway's exec has no terminal (it takes a command's "
                "input whole at the start and gives its output as polled text); modal.mode "
                "direct gives one",
  .event_fd = mm_event_fd,
  .next_event = mm_next_event,
  .health = mm_health,
  .reach = mm_reach,
  .posture = mm_posture,
  .oom_kills = NULL,
  .file_put = mm_file_put,
  .file_get = mm_file_get,
  .close = mm_close,
};

const struct backend_ops *
modal_managed_ops (void)
{
  return &modal_managed_backend_ops;
}

/* ---- open ---- */

int
modal_gateway_entitled (const char *gateway_url, const char *token, char **err)
{
  if (!token)
    token = getenv (MODAL_GATEWAY_TOKEN_ENV);
  if (!token || !*token)
    {
      *err = xprintf ("no tool gateway token: set " MODAL_GATEWAY_TOKEN_ENV);
      return -1;
    }
  struct modal_gateway *g = modal_gateway_new (gateway_url, token);
  if (!g)
    {
      *err = xprintf ("out of memory");
      return -1;
    }
  int rc = modal_gateway_entitlement (g, err);
  modal_gateway_free (g);
  return rc;
}

static void
progress (const struct modal_managed_options *o, const char *line)
{
  if (o->progress && line)
    o->progress (o->progress_ctx, line);
}

/* The sandbox's working directory, by a `pwd` of its own. */
static char *
sandbox_pwd (struct backend_session *s, char **err)
{
  char id[37];
  modal_gateway_uuid (id);
  struct modal_gateway_exec_request rq = { .exec_id = id, .command = "pwd -P",
                                           .timeout_ms = 60000 };
  struct modal_gateway_exec x = { 0 };
  bool gone = false;
  long long deadline = monotonic_ms () + 90000;
  enum modal_gateway_result r = modal_gateway_exec_start (s->main_g, s->sandbox_id, &rq,
                                                          monotonic_ms () + CALL_MS, NULL, &x,
                                                          &gone, err);
  unsigned wait = POLL_FIRST_MS;
  while (r == MG_OK && !x.terminal && monotonic_ms () < deadline)
    {
      modal_gateway_exec_clear (&x);
      struct timespec ts = { 0, (long) wait * 1000000L };
      nanosleep (&ts, NULL);
      wait = wait * 2 > POLL_MAX_MS ? POLL_MAX_MS : wait * 2;
      r = modal_gateway_exec_poll (s->main_g, s->sandbox_id, id, 0, monotonic_ms () + CALL_MS,
                                   NULL, &x, &gone, err);
    }
  char *cwd = NULL;
  if (r == MG_OK)
    {
      size_t n = x.output ? strcspn (x.output, "\r\n") : 0;
      if (x.terminal && x.returncode == 0 && n && x.output[0] == '/')
        cwd = strndup (x.output, n);
      else
        *err = xprintf ("the Modal sandbox did not say its working directory (%s, status %d)",
                        x.status, x.returncode);
    }
  modal_gateway_exec_clear (&x);
  return cwd;
}

static struct backend_session *
new_session (const struct modal_managed_options *o, const char *token)
{
  struct backend_session *s = calloc (1, sizeof *s);
  if (!s)
    return NULL;
  pthread_mutex_init (&s->lock, NULL);
  pthread_condattr_t ca;
  pthread_condattr_init (&ca);
  pthread_condattr_setclock (&ca, CLOCK_MONOTONIC);
  pthread_cond_init (&s->wake, &ca);
  pthread_condattr_destroy (&ca);
  s->efd = eventfd (0, EFD_CLOEXEC | EFD_NONBLOCK);
  s->session = strdup (o->session ? o->session : "modal");
  s->main_g = modal_gateway_new (o->gateway_url, token);
  s->g = modal_gateway_new (o->gateway_url, token);
  s->gateway_url = o->gateway_url ? strdup (o->gateway_url) : NULL;
  s->token = strdup (token);
  random_hex (s->upload_token, 8);
  if (s->efd < 0 || !s->session || !s->main_g || !s->g || !s->token
      || (o->gateway_url && !s->gateway_url))
    {
      free_session (s);
      return NULL;
    }
  return s;
}

/* Entitled, or why not (fail closed). */
static char *
not_entitled (struct backend_session *s)
{
  char *err = NULL;
  int e = modal_gateway_entitlement (s->main_g, &err);
  if (e == 1)
    return NULL;
  char *why = e == 0
                  ? xprintf ("the tool gateway at %s says this account has no managed Modal "
                             "entitlement: managed mode is not available (use modal.mode "
                             "direct with your own Modal credentials)",
                             modal_gateway_origin (s->main_g))
                  : xprintf ("managed Modal is not available: the entitlement query failed, "
                             "which counts as not entitled: %s",
                             err ? err : "?");
  free (err);
  return why;
}

struct backend_session *
modal_managed_open (const struct modal_managed_options *o, char **cwd, char **err)
{
  const char *token = o->token ? o->token : getenv (MODAL_GATEWAY_TOKEN_ENV);
  if (!token || !*token)
    {
      *err = xprintf ("managed Modal needs a tool gateway token: set " MODAL_GATEWAY_TOKEN_ENV);
      return NULL;
    }
  struct backend_session *s = new_session (o, token);
  if (!s)
    {
      *err = xprintf ("out of memory");
      return NULL;
    }
  if ((*err = not_entitled (s)))
    {
      free_session (s);
      return NULL;
    }
  char key[37];
  modal_gateway_uuid (key);
  struct modal_gateway_sandbox_spec spec = {
    .image = o->image && *o->image ? o->image : DEFAULT_IMAGE, .cwd = o->cwd,
    .cpu_milli = o->cpu_milli, .memory_mib = o->memory_mib, .timeout_s = o->timeout_s,
    .idle_timeout_s = o->idle_timeout_s,
  };
  char *line = xprintf ("creating a Modal sandbox (%s) through the gateway at %s", spec.image,
                        modal_gateway_origin (s->main_g));
  progress (o, line);
  free (line);
  if (modal_gateway_create (s->main_g, &spec, key, &s->sandbox_id, err) < 0)
    {
      free_session (s);
      return NULL;
    }
  line = xprintf ("Modal sandbox %s is running", s->sandbox_id);
  progress (o, line);
  free (line);
  *cwd = o->cwd && *o->cwd ? strdup (o->cwd) : sandbox_pwd (s, err);
  if (!*cwd || pthread_create (&s->worker, NULL, worker, s) != 0)
    {
      if (!*err)
        *err = xprintf (*cwd ? "cannot start the session's worker thread" : "out of memory");
      free (*cwd);
      *cwd = NULL;
      terminate_sandbox (s);
      free_session (s);
      return NULL;
    }
  s->worker_started = true;
  return s;
}
