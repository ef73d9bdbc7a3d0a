/* SPDX-License-Identifier: MIT */
/* The session layer (see session.h). */
#define _GNU_SOURCE
#include "session.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "output_window.h"
#include "protocol.h"
#include "shell_state.h"
#include "spool.h"
#include "xprintf.h"
#include "monotonic_ms.h"

#define BOOTSTRAP_TIMEOUT_MS 30000
/* The most bytes of a script: the backends' bound on what a pipe to a
 * command may hold undelivered (STDIN_FEED_MAX, backends/stdin_feed.h). */
#define SCRIPT_MAX (4 << 20)
/* After SIGKILL, a backend that has reported neither the end nor any
 * output this long after has lost the job: it ends as `lost` and the
 * session is free again. */
#define LOST_AFTER_KILL_MS 3000

/* A job's fd 3, where the shell wrapper reports the state
 * (shell_state_take), bounded: a larger report is dropped whole. */
struct report {
  char *buf;
  size_t len;
  bool over;
};

static void
report_add (struct report *m, const void *data, size_t n)
{
  if (m->over || !n)
    return;
  char *p = n <= SHELL_REPORT_MAX - m->len ? realloc (m->buf, m->len + n) : NULL;
  if (!p)
    {
      m->over = true; /* too large, or out of memory: not saved */
      return;
    }
  memcpy (p + m->len, data, n);
  m->buf = p;
  m->len += n;
}

/* Every command is a job (foreground or background), in s->jobs from its
 * start until it is pruned; s->fg is the foreground one that runs. */
struct session_exec {
  struct session *s;
  uint32_t job;
  bool background;  /* nobody waits for a result: output only in the spool */
  bool foreground;  /* started as a foreground command */
  const struct session_callbacks *cb;
  void *ctx;
  struct output_window *w_out, *w_err, *w_all; /* a result's windows */
  struct spool *spool;
  struct report meta; /* what the wrapper reported on the job's fd 3 */
  long long started, deadline, kill_at, lost_at;
  long long oom_before; /* the sandbox's OOM kills when it started, -1 */
  enum job_end stop_reason; /* why the kill path started; NONE: it did not */
  char *command;
  enum job_state state;
  enum job_end cause;
  char *lost;
  int exit_code;
  long long ended;
  bool stdin_closed;
  bool pty;         /* on a terminal: its input is open, foreground too */
  /* A job of the session layer's own (session_job_script): a fixed
   * script, no shell state, no result windows; forgotten once it ended. */
  bool raw;
  bool kill_pending; /* the backend could not reach the sandbox to kill it */
  struct session_exec *next;
};

struct session {
  char *name;
  const struct backend_ops *ops;
  struct backend_session *bs;
  struct shell_state state; /* exports, functions, aliases, cwd */
  struct session_limits lim;
  uint32_t next_job;
  struct session_exec *fg;
  struct session_exec *jobs;
  long long last_active;
  char **env; /* the base environment of every command */
  char **session_env; /* set by the bootstrap, into the saved state */
  char *what; /* "the sandbox", "image X": for messages */
  char *memory_limit; /* "20M", or NULL */
  char *workdir; /* the first working directory, as the sandbox sees it */
  struct file_op *file_ops; /* file_put / file_get under way */
  uint32_t next_ticket;
};

struct file_op {
  struct file_op *next;
  uint32_t ticket;
  session_file_fn done;
  void *ctx;
};

const char *
session_job_end_name (enum job_end e)
{
  static const char *const names[] = { "running", "exited", "timed_out",
                                       "interrupted", "killed", "lost" };
  return names[e];
}

long long
session_now_ms (void)
{
  return monotonic_ms ();
}

bool
session_env_name_ok (const char *name)
{
  static const char *const reserved[] = { "BASH_ENV", "ENV", "SHELLOPTS",
                                          "BASHOPTS", "PS4", NULL };
  if (!*name || strlen (name) > 128 || !strncmp (name, "AIRLOCK_", 8)
      || (*name >= '0' && *name <= '9'))
    return false;
  for (const char *p = name; *p; p++)
    if (!(*p == '_' || (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z')
          || (*p >= '0' && *p <= '9')))
      return false;
  for (const char *const *r = reserved; *r; r++)
    if (!strcmp (name, *r))
      return false;
  return true;
}

static size_t
env_count (const char *const *env)
{
  size_t n = 0;
  while (env && env[n])
    n++;
  return n;
}

/* A NULL-terminated copy of env (NULL: an empty one). */
static char **
copy_env (const char *const *env, size_t extra)
{
  size_t n = env_count (env);
  char **out = calloc (n + extra + 1, sizeof *out);
  for (size_t i = 0; out && i < n; i++)
    if (!(out[i] = strdup (env[i])))
      {
        for (size_t k = 0; k < i; k++)
          free (out[k]);
        free (out);
        return NULL;
      }
  return out;
}

static void
free_env (char **env)
{
  for (char **e = env; e && *e; e++)
    free (*e);
  free (env);
}

/* The environment every command starts from; the snapshot then restores
 * the session's exports over it (the session's own env among them: the
 * bootstrap sets it after the login files, which would reset PATH).
 * AIRLOCK_* names are the session's identity: never saved. */
static char **
make_base_env (const char *name)
{
  static const char *const defaults[]
      = { "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
          "LANG=C.UTF-8", "TERM=dumb", "PAGER=cat", "GIT_PAGER=cat", NULL };
  size_t n = env_count (defaults);
  char **env = copy_env (defaults, 1);
  if (!env)
    return NULL;
  if (!(env[n] = xprintf ("AIRLOCK_SESSION=%s", name)))
    {
      free_env (env);
      return NULL;
    }
  return env;
}

/* A command's own env travels as AIRLOCK_ENV_NAME=value beside the base
 * environment: the wrapper exports each as NAME after restoring the
 * snapshot and keeps it out of the next save. */
static int
spawn_script (struct session *s, uint32_t job, char *script, bool with_stdin,
              bool login, const char *const *exec_env, uint64_t timeout_ms,
              const struct backend_pty *pty, char **err)
{
  if (!script)
    {
      *err = xprintf ("out of memory");
      return -1;
    }
  size_t nb = env_count ((const char *const *) s->env), nx = env_count (exec_env);
  char **envp = calloc (nb + nx + 1, sizeof *envp);
  int rc = -1;
  if (!envp)
    *err = xprintf ("out of memory");
  else
    {
      memcpy (envp, s->env, nb * sizeof *envp);
      size_t n = nb;
      for (size_t i = 0; i < nx; i++)
        if (!(envp[n++] = xprintf ("AIRLOCK_ENV_%s", exec_env[i])))
          n--;
      /* The script on fd 4, never in argv: any user reads argv. */
      const char *argv[] = { "bash", login ? "-lc" : "-c", SHELL_SCRIPT_LOADER, NULL };
      struct backend_spawn sp = { .job = job, .argv = argv,
                                  .envp = (const char *const *) envp,
                                  .cwd = "/", .stdin_pipe = with_stdin, .pty = pty,
                                  .script = script, .script_len = strlen (script),
                                  .timeout_ms = timeout_ms, .grace_ms = s->lim.grace_ms };
      rc = n == nb + nx ? s->ops->spawn (s->bs, &sp, err)
                        : (*err = xprintf ("out of memory"), -1);
      for (size_t i = nb; i < n; i++)
        free (envp[i]);
      free (envp);
    }
  free (script);
  return rc;
}

static void
free_windows (struct session_exec *e)
{
  output_window_free (e->w_out);
  output_window_free (e->w_err);
  output_window_free (e->w_all);
  e->w_out = e->w_err = e->w_all = NULL;
}

static void
free_exec (struct session_exec *e)
{
  free_windows (e);
  free (e->meta.buf);
  spool_unref (e->spool);
  free (e->command);
  free (e->lost);
  free (e);
}

static struct session_exec *
find_exec (struct session *s, uint32_t job)
{
  for (struct session_exec *e = s->jobs; e; e = e->next)
    if (e->job == job)
      return e;
  return NULL;
}

/* Output of the job on stream 1 or 2: to its spool, a foreground
 * command's windows, and whoever follows it.  False once the spool drops
 * bytes (spool_append). */
static bool
record_output (struct session_exec *e, int stream, const void *data, size_t n)
{
  bool kept = spool_append (e->spool, stream, data, n);
  if (e->w_out)
    {
      output_window_feed (stream == 2 ? e->w_err : e->w_out, data, n);
      output_window_feed (e->w_all, data, n);
    }
  if (e->cb && e->cb->output)
    e->cb->output (e->ctx, e);
  return kept;
}

/* What the session layer itself has to say about a job, where its
 * errors go. */
static void
say (struct session_exec *e, const char *m)
{
  if (m)
    record_output (e, 2, m, strlen (m));
}

static void end_job (struct session *s, struct session_exec *e, int code, int sig,
                     const char *lost);

/* The sandbox cannot be reached to kill the job (a remote host): it ends
 * now, with its stop cause; the backend kills it when it can. */
static void
kill_pending (struct session_exec *e)
{
  e->kill_pending = true;
  end_job (e->s, e, 0, SIGTERM, NULL); /* as a kill would end it: 143 */
}

/* The one kill path: TERM to the job's whole tree now, KILL to whatever
 * is left after the grace period (session_process). */
static void
stop_job (struct session_exec *e, enum job_end why)
{
  if (e->state != JOB_RUNNING || e->stop_reason != JOB_END_NONE)
    return;
  e->stop_reason = why;
  if (e->s->ops->signal (e->s->bs, e->job, SIGTERM) == BACKEND_KILL_PENDING)
    return kill_pending (e);
  e->kill_at = session_now_ms () + e->s->lim.grace_ms;
}

/* A SIGKILL while the sandbox's OOM count grew: the kernel's, not the
 * command's own.  Said where the command's errors go. */
static bool
oom_killed (struct session *s, struct session_exec *e, int code, int sig)
{
  if (!(sig == SIGKILL || (!sig && code == 128 + SIGKILL)) || e->oom_before < 0
      || !s->ops->oom_kills || s->ops->oom_kills (s->bs) <= e->oom_before)
    return false;
  char *m = s->memory_limit
                ? xprintf ("airlock: killed: out of memory (limit %s)\n", s->memory_limit)
                : xprintf ("airlock: killed: out of memory\n");
  say (e, m);
  free (m);
  return true;
}

/* Forget the oldest finished foreground commands beyond the limit. */
static void
trim_finished (struct session *s)
{
  unsigned kept = 0;
  for (struct session_exec **p = &s->jobs; *p;)
    {
      struct session_exec *e = *p;
      if (e->foreground && !e->background && e->state != JOB_RUNNING
          && ++kept > s->lim.keep_finished)
        {
          *p = e->next;
          free_exec (e);
        }
      else
        p = &e->next;
    }
}

static void end_raw_job (struct session *s, struct session_exec *e);

/* The job ended: by itself (code, sig), or lost (why).  Reported once:
 * the job is no longer running afterwards, and later events for it are
 * ignored. */
static void
end_job (struct session *s, struct session_exec *e, int code, int sig,
         const char *lost)
{
  if (e->state != JOB_RUNNING)
    return;
  bool oom = !lost && oom_killed (s, e, code, sig);
  bool was_fg = s->fg == e;
  /* The state the wrapper reported as its last act, kept only when
   * whole and only from the foreground command: a command that was
   * killed or `exec`ed reports nothing whole, and one that went on in
   * the background must not overwrite what later commands saved. */
  if (was_fg && !lost && e->meta.over)
    say (e, "airlock: warning: shell state not saved: over 1 MiB\n");
  else if (was_fg && !lost && e->meta.len
           && shell_state_take (&s->state, e->meta.buf, e->meta.len) < 0)
    say (e, "airlock: warning: shell state not saved: out of memory\n");
  free (e->meta.buf);
  e->meta = (struct report){ 0 };
  e->state = e->stop_reason != JOB_END_NONE ? JOB_KILLED : JOB_EXITED;
  e->cause = lost ? JOB_END_LOST
             : e->stop_reason != JOB_END_NONE ? e->stop_reason : JOB_END_EXITED;
  e->exit_code = lost ? -1
                 : e->cause == JOB_END_TIMED_OUT ? 124
                 : e->cause == JOB_END_INTERRUPTED ? 130
                 : sig ? 128 + sig : code;
  if (lost)
    {
      e->lost = strdup (lost);
      char *m = xprintf ("airlock: %s\n", lost);
      say (e, m);
      free (m);
      /* Whatever the backend still has of it must not run on. */
      s->ops->signal (s->bs, e->job, SIGKILL);
    }
  e->ended = session_now_ms ();
  e->kill_at = e->lost_at = -1;
  spool_finish (e->spool);
  s->last_active = e->ended;
  if (was_fg)
    s->fg = NULL;
  if (e->raw)
    return end_raw_job (s, e);
  if (e->background || !e->cb)
    {
      free_windows (e);
      return;
    }
  struct exec_result r = { .job = e->job, .cause = e->cause, .lost = e->lost,
                           .exit_code = e->exit_code, .oom_killed = oom,
                           .timed_out = e->cause == JOB_END_TIMED_OUT,
                           .kill_pending = e->kill_pending,
                           .interrupted = e->cause == JOB_END_INTERRUPTED };
  bool t;
  r.stdout_text = output_window_render (e->w_out, &t, NULL);
  r.stderr_text = output_window_render (e->w_err, &t, NULL);
  r.output = output_window_render (e->w_all, &r.truncated, &r.total_chars);
  /* The whole stream is the spool: when the result is cut, the client
   * gets the file (it is then the client's, never removed by airlock). */
  r.spill_path = r.truncated ? strdup (spool_give_away (e->spool)) : NULL;
  r.spool_error = spool_error (e->spool);
  r.cwd = s->state.cwd;
  r.duration_ms = e->ended - e->started;
  const struct session_callbacks *cb = e->cb;
  void *ctx = e->ctx;
  e->cb = NULL;
  e->ctx = NULL;
  free_windows (e);
  if (cb->done)
    cb->done (ctx, e, &r);
  free (r.stdout_text);
  free (r.stderr_text);
  free (r.output);
  free (r.spill_path);
  trim_finished (s);
}

/* A file_put or file_get ended: its caller hears how, once. */
static void
file_op_done (struct session *s, uint32_t ticket, const char *error)
{
  for (struct file_op **p = &s->file_ops; *p; p = &(*p)->next)
    if ((*p)->ticket == ticket)
      {
        struct file_op *op = *p;
        *p = op->next;
        op->done (op->ctx, error);
        free (op);
        return;
      }
}

static void
on_event (struct session *s, const struct backend_event *ev)
{
  if (ev->type == BACKEND_FILE_DONE)
    return file_op_done (s, ev->job, ev->message);
  struct session_exec *e = find_exec (s, ev->job);
  if (!e || e->state != JOB_RUNNING)
    return; /* a job we forgot (pruned), that ended, or forged */
  switch (ev->type)
    {
    case BACKEND_OUTPUT:
      if (ev->stream == 3)
        {
          report_add (&e->meta, ev->data, ev->len);
          return;
        }
      if (ev->stream != 1 && ev->stream != 2)
        return;
      /* Killed, but still delivering what it wrote before (a remote
       * backend's backlog): not lost while its output comes. */
      if (e->lost_at >= 0)
        e->lost_at = session_now_ms () + LOST_AFTER_KILL_MS;
      if (record_output (e, ev->stream, ev->data, ev->len))
        return;
      /* The spool is full (its error says how much was dropped).  A job
       * already killed ends now with its cause: nothing more of its
       * backlog could be kept anyway. */
      if (e->lost_at >= 0)
        end_job (s, e, 0, SIGKILL, NULL);
      else if (s->lim.spool_full_stops)
        stop_job (e, JOB_END_KILLED);
      return;
    case BACKEND_EXITED:
      end_job (s, e, ev->exit_code, ev->signal, NULL);
      return;
    case BACKEND_ERROR:
      /* The backend lost the job (or could not start it): an error with
       * its words, never an exit code. */
      end_job (s, e, 0, 0, ev->message ? ev->message : "the backend lost the command");
      return;
    case BACKEND_STARTED:
    case BACKEND_FILE_DONE: /* taken above */
      return;
    }
}

int
session_process (struct session *s, char **err)
{
  struct backend_event ev;
  int r;
  while ((r = s->ops->next_event (s->bs, &ev, err)) > 0)
    on_event (s, &ev);
  if (r < 0)
    return -1;
  long long now = session_now_ms ();
  for (struct session_exec *e = s->jobs, *next; e; e = next)
    {
      next = e->next; /* end_job may forget finished jobs, never e */
      if (e->state != JOB_RUNNING)
        continue;
      if (e->deadline >= 0 && now >= e->deadline)
        stop_job (e, JOB_END_TIMED_OUT);
      if (e->kill_at >= 0 && now >= e->kill_at)
        {
          e->kill_at = -1;
          if (s->ops->signal (s->bs, e->job, SIGKILL) == BACKEND_KILL_PENDING)
            {
              kill_pending (e);
              continue;
            }
          e->lost_at = now + LOST_AFTER_KILL_MS;
        }
      if (e->lost_at >= 0 && now >= e->lost_at)
        end_job (s, e, 0, 0, "the sandbox did not report the command's end "
                 "after it was killed; it is lost");
    }
  return 0;
}

long long
session_deadline (const struct session *s)
{
  long long best = -1;
  for (const struct session_exec *e = s->jobs; e; e = e->next)
    {
      if (e->state != JOB_RUNNING)
        continue;
      long long d = e->lost_at >= 0 ? e->lost_at
                    : e->stop_reason != JOB_END_NONE ? e->kill_at : e->deadline;
      if (d >= 0 && (best < 0 || d < best))
        best = d;
    }
  return best;
}

int
session_fd (const struct session *s)
{
  return s->ops->event_fd (s->bs);
}

static int bootstrap_wait (struct session *s, uint32_t job, long long until,
                           struct report *meta, char **err);

/* Run one script to completion before the session is handed out. */
static int
run_bootstrap (struct session *s, const char *cwd, char **err)
{
  uint32_t job = ++s->next_job;
  if (spawn_script (s, job, shell_bootstrap_script (cwd), false, true,
                    (const char *const *) s->session_env, BOOTSTRAP_TIMEOUT_MS, NULL,
                    err) < 0)
    return -1;
  long long until = session_now_ms () + BOOTSTRAP_TIMEOUT_MS;
  struct report meta = { 0 };
  int rc = bootstrap_wait (s, job, until, &meta, err);
  free (meta.buf);
  return rc;
}

/* The bootstrap's end, and the state it reported on fd 3. */
static int
bootstrap_wait (struct session *s, uint32_t job, long long until,
                struct report *meta, char **err)
{
  for (;;)
    {
      struct backend_event ev;
      int r = s->ops->next_event (s->bs, &ev, err);
      if (r < 0)
        return -1;
      if (r > 0 && ev.job == job && ev.type == BACKEND_OUTPUT && ev.stream == 3)
        report_add (meta, ev.data, ev.len);
      if (r > 0 && ev.job == job && ev.type == BACKEND_ERROR)
        {
          *err = xprintf ("the session's shell could not start in %s: %s", s->what,
                          ev.message ? ev.message : "the backend lost it");
          return -1;
        }
      if (r > 0 && ev.job == job && ev.type == BACKEND_EXITED)
        {
          if (ev.exit_code == 127 && !ev.signal)
            {
              *err = xprintf ("%s has no /bin/bash; sessions need bash "
                              "(4.4 or later) in the sandbox", s->what);
              return -1;
            }
          if (ev.exit_code == SHELL_EXIT_NO_STATE && !ev.signal)
            {
              *err = xprintf ("the session's shell in %s is older than bash "
                              "4.4 or could not report its state", s->what);
              return -1;
            }
          if (ev.exit_code || ev.signal)
            {
              *err = xprintf ("the session's shell could not start in %s "
                              "(bash exit %d)", s->what,
                              ev.signal ? 128 + ev.signal : ev.exit_code);
              return -1;
            }
          int took = meta->over ? 0 : shell_state_take (&s->state, meta->buf, meta->len);
          if (took <= 0)
            *err = took < 0 ? xprintf ("out of memory")
                   : meta->over ? xprintf ("the login shell state in %s is over 1 MiB", s->what)
                   : xprintf ("the session's shell in %s reported no whole state", s->what);
          return took > 0 ? 0 : -1;
        }
      if (r == 0)
        {
          long long left = until - session_now_ms ();
          if (left <= 0)
            {
              *err = xprintf ("the session's shell did not start within 30 s");
              return -1;
            }
          struct pollfd p = { .fd = session_fd (s), .events = POLLIN };
          poll (&p, 1, (int) left);
        }
    }
}

struct session *
session_open (const char *name, const struct backend_ops *ops,
              struct backend_session *bs, const char *cwd,
              const struct session_limits *limits, char **err)
{
  struct session *s = calloc (1, sizeof *s);
  if (!s || !(s->name = strdup (name)))
    {
      free (s);
      ops->close (bs);
      *err = xprintf ("out of memory");
      return NULL;
    }
  s->ops = ops;
  s->bs = bs;
  s->lim = *limits;
  s->lim.env = NULL;
  s->lim.what = NULL;
  s->env = make_base_env (name);
  s->session_env = copy_env (limits->env, 0);
  s->what = strdup (limits->what ? limits->what : "the sandbox");
  s->memory_limit = limits->memory_limit ? strdup (limits->memory_limit) : NULL;
  s->lim.memory_limit = NULL;
  s->workdir = strdup (cwd ? cwd : "/");
  if (!s->env || !s->session_env || !s->what || !s->workdir)
    {
      *err = xprintf ("out of memory");
      session_close (s);
      return NULL;
    }
  s->last_active = session_now_ms ();
  if (run_bootstrap (s, cwd, err) < 0)
    {
      session_close (s);
      return NULL;
    }
  return s;
}

int
session_exec (struct session *s, const struct exec_request *rq,
              const struct session_callbacks *cb, void *ctx,
              struct session_exec **out, uint32_t *job_id, char **err)
{
  /* One check for every backend: a terminal it cannot give is said,
   * never replaced by pipes. */
  if (rq->pty && !s->ops->resize)
    {
      *err = xprintf ("the %s backend cannot run a command on a terminal (pty)%s%s; "
                      "run it without pty", s->ops->name,
                      s->ops->no_pty_why ? ": " : " yet",
                      s->ops->no_pty_why ? s->ops->no_pty_why : "");
      return -ENOTSUP;
    }
  if (!rq->background && s->fg)
    {
      *err = xprintf ("session %s is busy with another command", s->name);
      return -EBUSY;
    }
  /* The script reaches bash through a pipe (spawn_script) whose backlog
   * is bounded by 4 MiB (stdin_feed.h); quoting makes it at most four
   * times the command, plus the wrapper. */
  if (strlen (rq->command) > (1 << 20) - 16384)
    {
      *err = xprintf ("the command is %zu bytes; the limit is %d (put long "
                      "scripts in a file in the workspace)",
                      strlen (rq->command), (1 << 20) - 16384);
      return -E2BIG;
    }
  struct session_exec *e = calloc (1, sizeof *e);
  if (!e || !(e->command = strdup (rq->command)))
    {
      free (e);
      return -ENOMEM;
    }
  e->s = s;
  e->job = ++s->next_job;
  e->background = rq->background;
  e->foreground = !rq->background;
  e->cb = rq->background ? NULL : cb;
  e->ctx = rq->background ? NULL : ctx;
  e->state = JOB_RUNNING;
  e->started = session_now_ms ();
  e->oom_before = s->ops->oom_kills ? s->ops->oom_kills (s->bs) : -1;
  uint64_t timeout_ms = rq->timeout_ms ? rq->timeout_ms
                        : rq->background ? 0 : (uint64_t) s->lim.timeout_sec * 1000;
  e->deadline = timeout_ms ? e->started + (long long) timeout_ms : -1;
  e->kill_at = e->lost_at = -1;
  if (!(e->spool = spool_new (s->lim.spill_dir, s->lim.spool_max, err)))
    {
      free_exec (e);
      return -1;
    }
  if (!rq->background)
    {
      e->w_out = output_window_new (s->lim.max_output_chars);
      e->w_err = output_window_new (s->lim.max_output_chars);
      e->w_all = output_window_new (s->lim.max_output_chars);
      if (!e->w_out || !e->w_err || !e->w_all)
        {
          free_exec (e);
          return -ENOMEM;
        }
    }
  bool with_stdin = rq->stdin_data != NULL || rq->background;
  /* A background job restores the session's state but never saves it: a
   * job that ends late must not overwrite what later commands saved. */
  char *script = rq->background
                     ? shell_job_script (&s->state, rq->cwd, rq->command)
                     : shell_command_script (&s->state, rq->cwd, rq->command);
  /* The state travels in the script too: the two must fit the pipe's
   * bound together. */
  if (script && strlen (script) > SCRIPT_MAX)
    {
      *err = xprintf ("the command with the session's shell state (%zu bytes "
                      "of exports, functions and aliases) makes a script of "
                      "%zu bytes; the limit is %d", strlen (s->state.snapshot
                      ? s->state.snapshot : ""), strlen (script), SCRIPT_MAX);
      free (script);
      free_exec (e);
      return -E2BIG;
    }
  /* TERM for this command only, after the session's state is restored
   * (a saved TERM=dumb must not win); the request's own TERM gives way. */
  const char *env[SESSION_MAX_ENV + 2];
  const char *const *exec_env = rq->env;
  char term[64];
  if (rq->pty)
    {
      size_t n = 0;
      for (const char *const *v = rq->env; v && *v && n < SESSION_MAX_ENV; v++)
        if (strncmp (*v, "TERM=", 5))
          env[n++] = *v;
      snprintf (term, sizeof term, "TERM=%s", rq->pty->term);
      env[n++] = term;
      env[n] = NULL;
      exec_env = env;
    }
  if (spawn_script (s, e->job, script, with_stdin, false, exec_env, timeout_ms,
                    rq->pty, err) < 0)
    {
      free_exec (e);
      return -1;
    }
  e->pty = rq->pty != NULL;
  if (rq->stdin_data)
    /* A background job's stdin stays open for job_stdin, unless the
     * backend takes input only whole, at the start (stdin_max) */
    s->ops->write_stdin (s->bs, e->job, rq->stdin_data, rq->stdin_len,
                         !rq->background || s->ops->stdin_max);
  else if (!rq->background && with_stdin)
    s->ops->write_stdin (s->bs, e->job, "", 0, true);
  e->next = s->jobs;
  s->jobs = e;
  if (!rq->background)
    s->fg = e;
  s->last_active = e->started;
  if (out)
    *out = e;
  if (job_id)
    *job_id = e->job;
  return 0;
}

void
session_interrupt (struct session_exec *e)
{
  stop_job (e, JOB_END_INTERRUPTED);
}

void
session_exec_detach (struct session_exec *e, bool keep_running)
{
  e->cb = NULL;
  e->ctx = NULL;
  if (e->state != JOB_RUNNING)
    return;
  if (!keep_running)
    return stop_job (e, JOB_END_INTERRUPTED);
  /* A background job from now on: the session is free for the next
   * command; the output stays in the spool for whoever attaches. */
  e->background = true;
  free_windows (e);
  if (e->s->fg == e)
    e->s->fg = NULL;
}

uint32_t
session_exec_job (const struct session_exec *e)
{
  return e->job;
}

struct spool *
session_exec_spool (struct session_exec *e)
{
  return e->spool;
}

static void
fill_info (const struct session_exec *e, struct job_info *i)
{
  *i = (struct job_info){ .id = e->job, .command = e->command,
                          .state = e->state, .cause = e->cause,
                          .foreground = e->foreground && !e->background,
                          .exit_code = e->exit_code,
                          .started_ms = e->started, .ended_ms = e->ended,
                          .output_bytes = spool_size (e->spool),
                          .spool_error = spool_error (e->spool),
                          .lost = e->lost, .kill_pending = e->kill_pending,
                          .pty = e->pty };
}

int
session_job_info (struct session *s, uint32_t id, struct job_info *info)
{
  struct session_exec *e = find_exec (s, id);
  if (!e)
    return -ENOENT;
  fill_info (e, info);
  return 0;
}

struct spool *
session_job_spool (struct session *s, uint32_t id)
{
  struct session_exec *e = find_exec (s, id);
  return e ? spool_ref (e->spool) : NULL;
}

int
session_job_read (struct session *s, uint32_t id, uint64_t offset, size_t max,
                  char **data, size_t *len, struct job_info *info)
{
  struct session_exec *e = find_exec (s, id);
  if (!e)
    return -ENOENT;
  fill_info (e, info);
  *data = NULL;
  *len = 0;
  uint64_t size = spool_size (e->spool);
  if (offset >= size)
    {
      info->output_bytes = offset > size ? size : offset;
      return 0;
    }
  size_t want = size - offset < max ? (size_t) (size - offset) : max;
  char *raw = malloc (want);
  ssize_t n = raw ? spool_read (e->spool, offset, raw, want) : -1;
  if (n < 0)
    {
      int err = raw ? errno : ENOMEM;
      free (raw);
      return -err;
    }
  /* Offsets count raw bytes; a character cut at the end is returned whole
   * by the next read, unless the spool is complete and ends there. */
  bool at_end = offset + (uint64_t) n == size && e->state != JOB_RUNNING;
  size_t whole = at_end ? (size_t) n
                        : output_window_complete_utf8 ((unsigned char *) raw, (size_t) n);
  *len = output_window_sanitize_utf8 (raw, whole, data);
  info->output_bytes = offset + whole; /* the next offset */
  free (raw);
  return 0;
}

int
session_job_write (struct session *s, uint32_t id, const void *data, size_t n,
                   bool eof)
{
  struct session_exec *e = find_exec (s, id);
  if (!e || (!e->background && !e->pty))
    return -ENOENT;
  if (e->state != JOB_RUNNING || e->stdin_closed)
    return -ESRCH;
  /* A terminal's end of input is a typed ^D: it stays open for more
   * (a shell whose cat just ended reads on). */
  e->stdin_closed = eof && !e->pty;
  return s->ops->write_stdin (s->bs, id, data, n, eof);
}

int
session_job_resize (struct session *s, uint32_t id, unsigned rows, unsigned cols)
{
  struct session_exec *e = find_exec (s, id);
  if (!e)
    return -ENOENT;
  if (!e->pty)
    return -ENOTTY;
  if (e->state != JOB_RUNNING)
    return -ESRCH;
  return s->ops->resize (s->bs, id, rows, cols);
}

int
session_job_kill (struct session *s, uint32_t id)
{
  struct session_exec *e = find_exec (s, id);
  if (!e)
    return -ENOENT;
  stop_job (e, JOB_END_KILLED);
  return 0;
}

size_t
session_jobs (struct session *s, struct job_info *out, size_t max)
{
  size_t n = 0;
  for (struct session_exec *e = s->jobs; e && n < max; e = e->next)
    if (e->background)
      fill_info (e, &out[n++]);
  return n;
}

void
session_prune_jobs (struct session *s, long long ttl_ms)
{
  long long now = session_now_ms ();
  for (struct session_exec **p = &s->jobs; *p;)
    {
      struct session_exec *e = *p;
      if (e->state != JOB_RUNNING && now - e->ended > ttl_ms)
        {
          *p = e->next;
          free_exec (e);
        }
      else
        p = &e->next;
    }
}

bool
session_busy (const struct session *s)
{
  for (const struct session_exec *e = s->jobs; e; e = e->next)
    if (e->state == JOB_RUNNING)
      return true;
  return false;
}

bool
session_busy_foreground (const struct session *s)
{
  return s->fg != NULL;
}

long long
session_idle_since (const struct session *s)
{
  return session_busy (s) ? session_now_ms () : s->last_active;
}

const char *
session_name (const struct session *s)
{
  return s->name;
}

const char *
session_cwd (const struct session *s)
{
  return s->state.cwd;
}

const char *
session_workdir (const struct session *s)
{
  return s->workdir;
}

const struct backend_ops *
session_backend (const struct session *s)
{
  return s->ops;
}

/* ---- jobs of the session layer's own (files) ---- */

int
session_job_script (struct session *s, const char *what, const char *script,
                    const char *const *env, bool with_stdin, uint64_t timeout_ms,
                    const struct session_callbacks *cb, void *ctx,
                    struct session_exec **out, char **err)
{
  struct session_exec *e = calloc (1, sizeof *e);
  char *copy = strdup (script);
  if (!e || !copy || !(e->command = strdup (what)))
    {
      free (e);
      free (copy);
      *err = xprintf ("out of memory");
      return -ENOMEM;
    }
  e->s = s;
  e->job = ++s->next_job;
  e->raw = true;
  e->cb = cb;
  e->ctx = ctx;
  e->state = JOB_RUNNING;
  e->started = session_now_ms ();
  e->oom_before = s->ops->oom_kills ? s->ops->oom_kills (s->bs) : -1;
  e->deadline = timeout_ms ? e->started + (long long) timeout_ms : -1;
  e->kill_at = e->lost_at = -1;
  if (!(e->spool = spool_new (s->lim.spill_dir, s->lim.spool_max, err))
      || spawn_script (s, e->job, copy, with_stdin, false, env, timeout_ms, NULL, err) < 0)
    {
      if (!e->spool)
        free (copy);
      free_exec (e);
      return -1;
    }
  e->next = s->jobs;
  s->jobs = e;
  s->last_active = e->started;
  *out = e;
  return 0;
}

int
session_job_script_write (struct session_exec *e, const void *data, size_t n,
                          bool eof)
{
  if (e->state != JOB_RUNNING || e->stdin_closed)
    return -ESRCH;
  e->stdin_closed = eof;
  return e->s->ops->write_stdin (e->s->bs, e->job, data, n, eof);
}

/* A raw job's end: its caller hears how it ended (its output is in the
 * spool, which the caller holds a reference to), and it is forgotten. */
static void
end_raw_job (struct session *s, struct session_exec *e)
{
  struct exec_result r = { .job = e->job, .cause = e->cause, .lost = e->lost,
                           .exit_code = e->exit_code,
                           .timed_out = e->cause == JOB_END_TIMED_OUT,
                           .interrupted = e->cause == JOB_END_INTERRUPTED,
                           .spool_error = spool_error (e->spool),
                           .duration_ms = e->ended - e->started };
  const struct session_callbacks *cb = e->cb;
  void *ctx = e->ctx;
  e->cb = NULL;
  e->ctx = NULL;
  for (struct session_exec **p = &s->jobs; *p; p = &(*p)->next)
    if (*p == e)
      {
        *p = e->next;
        break;
      }
  if (cb && cb->done)
    cb->done (ctx, e, &r);
  free_exec (e);
}

/* ---- files through the backend's files API ---- */

bool
session_has_file_api (const struct session *s)
{
  return s->ops->file_put && s->ops->file_get;
}

static struct file_op *
file_op_new (struct session *s, session_file_fn done, void *ctx, char **err)
{
  struct file_op *op = calloc (1, sizeof *op);
  if (!op)
    {
      *err = xprintf ("out of memory");
      return NULL;
    }
  op->ticket = ++s->next_ticket;
  op->done = done;
  op->ctx = ctx;
  return op;
}

int
session_file_put (struct session *s, const char *host_path, uint64_t timeout_ms,
                  char *remote, size_t remote_size, session_file_fn done, void *ctx,
                  uint32_t *ticket, char **err)
{
  struct file_op *op = file_op_new (s, done, ctx, err);
  if (!op)
    return -1;
  if (s->ops->file_put (s->bs, op->ticket, host_path, timeout_ms, remote, remote_size, err)
      < 0)
    {
      free (op);
      return -1;
    }
  op->next = s->file_ops;
  s->file_ops = op;
  *ticket = op->ticket;
  return 0;
}

int
session_file_get (struct session *s, const char *remote, const char *host_path,
                  uint64_t timeout_ms, session_file_fn done, void *ctx, uint32_t *ticket,
                  char **err)
{
  struct file_op *op = file_op_new (s, done, ctx, err);
  if (!op)
    return -1;
  if (s->ops->file_get (s->bs, op->ticket, remote, host_path, timeout_ms, err) < 0)
    {
      free (op);
      return -1;
    }
  op->next = s->file_ops;
  s->file_ops = op;
  *ticket = op->ticket;
  return 0;
}

/* Its caller is gone: the transfer itself runs to its end, unheard. */
void
session_file_cancel (struct session *s, uint32_t ticket)
{
  for (struct file_op **p = &s->file_ops; *p; p = &(*p)->next)
    if ((*p)->ticket == ticket)
      {
        struct file_op *op = *p;
        *p = op->next;
        free (op);
        return;
      }
}

char *
session_temp_file (struct session *s, char **err)
{
  char *path = xprintf ("%s/transfer.XXXXXX", s->lim.spill_dir ? s->lim.spill_dir : "/tmp");
  if (!path)
    {
      *err = xprintf ("out of memory");
      return NULL;
    }
  int fd = mkostemp (path, O_CLOEXEC); /* 0600 */
  if (fd < 0)
    {
      *err = xprintf ("cannot make a temporary file in %s: %s",
                      s->lim.spill_dir ? s->lim.spill_dir : "/tmp", strerror (errno));
      free (path);
      return NULL;
    }
  close (fd);
  return path;
}

void
session_close (struct session *s)
{
  /* The sandbox first: nothing may write a spool being removed.  Spools
   * go with their jobs, except the files handed to clients. */
  if (s->bs)
    s->ops->close (s->bs);
  s->fg = NULL;
  while (s->jobs)
    {
      struct session_exec *e = s->jobs;
      s->jobs = e->next;
      free_exec (e);
    }
  while (s->file_ops)
    {
      struct file_op *op = s->file_ops;
      s->file_ops = op->next;
      free (op);
    }
  free_env (s->env);
  free_env (s->session_env);
  free (s->what);
  free (s->memory_limit);
  free (s->workdir);
  shell_state_free (&s->state);
  free (s->name);
  free (s);
}
