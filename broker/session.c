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
#include "xprintf.h"

#define BOOTSTRAP_TIMEOUT_MS 30000
#define META_MAX 8192

struct session_exec {
  struct session *s;
  uint32_t job;
  bool background;
  const struct session_callbacks *cb;
  void *ctx;
  struct output_window *w_out, *w_err, *w_all;
  char pending[2][4]; /* an incomplete UTF-8 sequence held per stream */
  size_t pending_len[2];
  char meta[META_MAX];
  size_t meta_len;
  long long started, deadline, kill_at;
  long long oom_before; /* the sandbox's OOM kills when it started, -1 */
  bool timed_out, interrupted, term_sent;
  /* background jobs */
  char *command;
  int log_fd;
  char *log_path;
  uint64_t log_bytes;
  enum job_state state;
  int exit_code;
  long long ended;
  bool stdin_closed;
  struct session_exec *next;
};

struct session {
  char *name;
  const struct backend_ops *ops;
  struct backend_session *bs;
  char *cwd;
  char *state_dir;
  struct session_limits lim;
  uint32_t next_job;
  struct session_exec *fg;
  struct session_exec *jobs;
  long long last_active;
  char **env; /* the base environment of every command */
  char **session_env; /* set by the bootstrap, into the saved state */
  char *what; /* "the sandbox", "image X": for messages */
  char *memory_limit; /* "20M", or NULL */
  char **spills; /* full outputs handed out: removed when the session ends */
  size_t nspills;
};

long long
session_now_ms (void)
{
  struct timespec ts;
  clock_gettime (CLOCK_MONOTONIC, &ts);
  return (long long) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
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
              bool login, const char *const *exec_env, char **err)
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
      const char *argv[] = { "bash", login ? "-lc" : "-c", script, NULL };
      struct backend_spawn sp = { .job = job, .argv = argv,
                                  .envp = (const char *const *) envp,
                                  .cwd = "/", .stdin_pipe = with_stdin };
      rc = n == nb + nx ? s->ops->spawn (s->bs, &sp, err)
                        : (*err = xprintf ("out of memory"), -1);
      for (size_t i = nb; i < n; i++)
        free (envp[i]);
      free (envp);
    }
  free (script);
  return rc;
}

/* The length of buf's longest prefix that does not end inside a UTF-8
 * sequence (what is cut off is held for the next chunk). */
static size_t
complete_utf8 (const unsigned char *buf, size_t n)
{
  for (size_t back = 1; back <= 3 && back <= n; back++)
    {
      unsigned char c = buf[n - back];
      if ((c & 0xc0) == 0x80)
        continue; /* a continuation byte: look further back */
      size_t need = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 1;
      return need > back ? n - back : n;
    }
  return n;
}

/* Live output to the client: repaired UTF-8, never a split character. */
static void
stream_out (struct session_exec *e, int stream, const uint8_t *data, size_t n)
{
  if (!e->cb || !e->cb->output)
    return;
  int k = stream - 1;
  size_t total = e->pending_len[k] + n;
  unsigned char *buf = malloc (total);
  if (!buf)
    return;
  memcpy (buf, e->pending[k], e->pending_len[k]);
  memcpy (buf + e->pending_len[k], data, n);
  size_t whole = complete_utf8 (buf, total);
  e->pending_len[k] = total - whole;
  memcpy (e->pending[k], buf + whole, e->pending_len[k]);
  char *text = NULL;
  size_t len = output_window_sanitize_utf8 (buf, whole, &text);
  if (text && len)
    e->cb->output (e->ctx, e, stream, text, len);
  free (text);
  free (buf);
}

static void
free_exec (struct session_exec *e)
{
  output_window_free (e->w_out);
  output_window_free (e->w_err);
  output_window_free (e->w_all);
  if (e->log_fd >= 0)
    close (e->log_fd);
  if (e->log_path)
    unlink (e->log_path);
  free (e->log_path);
  free (e->command);
  free (e);
}

static struct session_exec *
find_exec (struct session *s, uint32_t job)
{
  if (s->fg && s->fg->job == job)
    return s->fg;
  for (struct session_exec *e = s->jobs; e; e = e->next)
    if (e->job == job)
      return e;
  return NULL;
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
  if (m && e->background)
    {
      if (e->log_fd >= 0 && write (e->log_fd, m, strlen (m)) > 0)
        e->log_bytes += strlen (m);
    }
  else if (m)
    {
      output_window_feed (e->w_err, m, strlen (m));
      output_window_feed (e->w_all, m, strlen (m));
      stream_out (e, 2, (const uint8_t *) m, strlen (m));
    }
  free (m);
  return true;
}

static void
finish_foreground (struct session *s, struct session_exec *e, int code,
                   int sig)
{
  struct exec_result r = { 0 };
  r.oom_killed = oom_killed (s, e, code, sig);
  if (e->timed_out)
    r.exit_code = 124;
  else if (e->interrupted)
    r.exit_code = 130;
  else
    r.exit_code = sig ? 128 + sig : code;
  r.timed_out = e->timed_out;
  r.interrupted = e->interrupted;
  bool t;
  r.stdout_text = output_window_render (e->w_out, &t, NULL);
  r.stderr_text = output_window_render (e->w_err, &t, NULL);
  r.output = output_window_render (e->w_all, &r.truncated, &r.total_chars);
  const char *spill = output_window_spill_path (e->w_all);
  r.spill_path = spill ? strdup (spill) : NULL;
  char **more = spill ? realloc (s->spills, (s->nspills + 1) * sizeof *more) : NULL;
  if (more)
    {
      s->spills = more;
      s->spills[s->nspills++] = strdup (spill);
    }
  /* The wrapper reports `pwd -P` on the job's fd 3 as its last act; a
   * command that was killed reports nothing and the cwd stays. */
  while (e->meta_len && (e->meta[e->meta_len - 1] == '\n'))
    e->meta[--e->meta_len] = '\0';
  e->meta[e->meta_len] = '\0';
  if (e->meta_len && e->meta[0] == '/' && !strchr (e->meta, '\n'))
    {
      free (s->cwd);
      s->cwd = strdup (e->meta);
    }
  r.cwd = s->cwd;
  r.duration_ms = session_now_ms () - e->started;
  s->fg = NULL;
  s->last_active = session_now_ms ();
  if (e->cb && e->cb->done)
    e->cb->done (e->ctx, e, &r);
  free (r.stdout_text);
  free (r.stderr_text);
  free (r.output);
  free (r.spill_path);
  free_exec (e);
}

static void
on_event (struct session *s, const struct backend_event *ev)
{
  struct session_exec *e = find_exec (s, ev->job);
  if (!e)
    return; /* a job we forgot (pruned), or forged by the sandbox */
  switch (ev->type)
    {
    case BACKEND_OUTPUT:
      if (ev->stream == 3)
        {
          size_t room = META_MAX - 1 - e->meta_len;
          size_t n = ev->len < room ? ev->len : room;
          memcpy (e->meta + e->meta_len, ev->data, n);
          e->meta_len += n;
        }
      else if (e->background)
        {
          if (e->log_fd >= 0 && write (e->log_fd, ev->data, ev->len) == (ssize_t) ev->len)
            e->log_bytes += ev->len;
        }
      else
        {
          output_window_feed (ev->stream == 2 ? e->w_err : e->w_out, ev->data, ev->len);
          output_window_feed (e->w_all, ev->data, ev->len);
          stream_out (e, ev->stream, ev->data, ev->len);
        }
      return;
    case BACKEND_EXITED:
      if (e->background)
        {
          oom_killed (s, e, ev->exit_code, ev->signal);
          e->state = e->term_sent ? JOB_KILLED : JOB_EXITED;
          e->exit_code = ev->signal ? 128 + ev->signal : ev->exit_code;
          e->ended = session_now_ms ();
          s->last_active = e->ended;
        }
      else
        finish_foreground (s, e, ev->exit_code, ev->signal);
      return;
    case BACKEND_ERROR:
      {
        /* The sandbox could not start the job (or feed it): the job ends
         * here, with the reason where its output goes. */
        const char *m = ev->message ? ev->message : "error";
        if (e->background)
          {
            if (e->log_fd >= 0 && write (e->log_fd, m, strlen (m)) > 0)
              e->log_bytes += strlen (m);
            e->state = JOB_EXITED;
            e->exit_code = 126;
            e->ended = session_now_ms ();
          }
        else
          {
            output_window_feed (e->w_err, m, strlen (m));
            finish_foreground (s, e, 126, 0);
          }
        return;
      }
    case BACKEND_STARTED:
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
  struct session_exec *all[2] = { s->fg, s->jobs };
  for (int k = 0; k < 2; k++)
    for (struct session_exec *e = all[k]; e; e = k ? e->next : NULL)
      {
        if (e->background && e->state != JOB_RUNNING)
          continue;
        if (e->deadline >= 0 && now >= e->deadline && !e->term_sent)
          {
            e->timed_out = !e->interrupted;
            e->term_sent = true;
            s->ops->signal (s->bs, e->job, SIGTERM);
            e->kill_at = now + s->lim.grace_ms;
          }
        if (e->kill_at >= 0 && now >= e->kill_at)
          {
            s->ops->signal (s->bs, e->job, SIGKILL);
            e->kill_at = -1;
          }
      }
  return 0;
}

long long
session_deadline (const struct session *s)
{
  long long best = -1;
  const struct session_exec *all[2] = { s->fg, s->jobs };
  for (int k = 0; k < 2; k++)
    for (const struct session_exec *e = all[k]; e; e = k ? e->next : NULL)
      {
        long long d = e->term_sent ? e->kill_at : e->deadline;
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

/* Run one script to completion before the session is handed out. */
static int
run_bootstrap (struct session *s, const char *cwd, char **err)
{
  uint32_t job = ++s->next_job;
  if (spawn_script (s, job, shell_bootstrap_script (s->state_dir, cwd), false, true,
                    (const char *const *) s->session_env, err) < 0)
    return -1;
  long long until = session_now_ms () + BOOTSTRAP_TIMEOUT_MS;
  char meta[META_MAX];
  size_t meta_len = 0;
  for (;;)
    {
      struct backend_event ev;
      int r = s->ops->next_event (s->bs, &ev, err);
      if (r < 0)
        return -1;
      if (r > 0 && ev.job == job && ev.type == BACKEND_OUTPUT && ev.stream == 3)
        {
          size_t n = ev.len < META_MAX - 1 - meta_len ? ev.len : META_MAX - 1 - meta_len;
          memcpy (meta + meta_len, ev.data, n);
          meta_len += n;
        }
      if (r > 0 && ev.job == job && ev.type == BACKEND_EXITED)
        {
          if (ev.exit_code == 127 && !ev.signal)
            {
              *err = xprintf ("%s has no /bin/bash; sessions need bash "
                              "(4.4 or later) in the sandbox", s->what);
              return -1;
            }
          if (ev.exit_code || ev.signal)
            {
              *err = xprintf ("the session's shell could not start in %s "
                              "(bash exit %d)", s->what,
                              ev.signal ? 128 + ev.signal : ev.exit_code);
              return -1;
            }
          while (meta_len && meta[meta_len - 1] == '\n')
            meta_len--;
          meta[meta_len] = '\0';
          s->cwd = strdup (meta_len ? meta : cwd);
          return 0;
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
  if (!s->env || !s->session_env || !s->what)
    {
      *err = xprintf ("out of memory");
      session_close (s);
      return NULL;
    }
  unsigned rnd = (unsigned) (session_now_ms () ^ getpid ());
  s->state_dir = xprintf ("/tmp/.airlock-session-%08x", rnd);
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
  if (!rq->background && s->fg)
    {
      *err = xprintf ("session %s is busy with another command", s->name);
      return -EBUSY;
    }
  struct session_exec *e = calloc (1, sizeof *e);
  if (!e)
    return -ENOMEM;
  e->s = s;
  e->job = ++s->next_job;
  e->background = rq->background;
  e->cb = cb;
  e->ctx = ctx;
  e->log_fd = -1;
  e->started = session_now_ms ();
  e->oom_before = s->ops->oom_kills ? s->ops->oom_kills (s->bs) : -1;
  uint64_t timeout_ms = rq->timeout_ms ? rq->timeout_ms
                        : rq->background ? 0 : (uint64_t) s->lim.timeout_sec * 1000;
  e->deadline = timeout_ms ? e->started + (long long) timeout_ms : -1;
  e->kill_at = -1;
  if (rq->background)
    {
      e->command = strdup (rq->command);
      e->log_path = xprintf ("%s/airlock-job-XXXXXX", s->lim.spill_dir);
      e->log_fd = e->log_path ? mkostemp (e->log_path, O_CLOEXEC) : -1;
      if (e->log_fd < 0)
        {
          *err = xprintf ("cannot create the job log in %s: %s", s->lim.spill_dir,
                          strerror (errno));
          free (e->log_path);
          e->log_path = NULL;
          free_exec (e);
          return -1;
        }
    }
  else
    {
      e->w_out = output_window_new (s->lim.max_output_chars, NULL);
      e->w_err = output_window_new (s->lim.max_output_chars, NULL);
      e->w_all = output_window_new (s->lim.max_output_chars, s->lim.spill_dir);
      if (!e->w_out || !e->w_err || !e->w_all)
        {
          free_exec (e);
          return -ENOMEM;
        }
    }
  bool with_stdin = rq->stdin_data != NULL || rq->background;
  /* The whole script travels as one argument of the supervisor protocol. */
  if (strlen (rq->command) > AL_MAX_STRING - 16384)
    {
      *err = xprintf ("the command is %zu bytes; the limit is %d (put long "
                      "scripts in a file in the workspace)",
                      strlen (rq->command), AL_MAX_STRING - 16384);
      free_exec (e);
      return -E2BIG;
    }
  /* A background job restores the session's state but never saves it: a
   * job that ends late must not overwrite what later commands saved. */
  char *script = rq->background
                     ? shell_job_script (s->state_dir, rq->cwd, rq->command)
                     : shell_command_script (s->state_dir, rq->cwd, rq->command);
  if (spawn_script (s, e->job, script, with_stdin, false, rq->env, err) < 0)
    {
      free_exec (e);
      return -1;
    }
  if (rq->stdin_data)
    s->ops->write_stdin (s->bs, e->job, rq->stdin_data, rq->stdin_len, !rq->background);
  else if (!rq->background && with_stdin)
    s->ops->write_stdin (s->bs, e->job, "", 0, true);
  if (rq->background)
    {
      e->next = s->jobs;
      s->jobs = e;
    }
  else
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
  if (e->term_sent)
    return;
  e->interrupted = true;
  e->term_sent = true;
  e->s->ops->signal (e->s->bs, e->job, SIGTERM);
  e->kill_at = session_now_ms () + e->s->lim.grace_ms;
}

void
session_exec_detach (struct session_exec *e)
{
  e->cb = NULL;
  e->ctx = NULL;
}

static struct session_exec *
find_job (struct session *s, uint32_t id)
{
  for (struct session_exec *e = s->jobs; e; e = e->next)
    if (e->job == id)
      return e;
  return NULL;
}

static void
fill_info (const struct session_exec *e, struct job_info *i)
{
  *i = (struct job_info){ .id = e->job, .command = e->command,
                          .state = e->state, .exit_code = e->exit_code,
                          .started_ms = e->started, .ended_ms = e->ended,
                          .output_bytes = e->log_bytes };
}

int
session_job_read (struct session *s, uint32_t id, uint64_t offset, size_t max,
                  char **data, size_t *len, struct job_info *info)
{
  struct session_exec *e = find_job (s, id);
  if (!e)
    return -ENOENT;
  fill_info (e, info);
  *data = NULL;
  *len = 0;
  if (offset >= e->log_bytes)
    return 0;
  size_t want = e->log_bytes - offset < max ? (size_t) (e->log_bytes - offset) : max;
  char *raw = malloc (want);
  ssize_t n = raw ? pread (e->log_fd, raw, want, (off_t) offset) : -1;
  if (n < 0)
    {
      free (raw);
      return -errno;
    }
  /* Offsets count raw bytes; a character cut at the end is returned whole
   * by the next read, unless the log is complete and ends there. */
  bool at_end = (uint64_t) n == e->log_bytes - offset && e->state != JOB_RUNNING;
  size_t whole = at_end ? (size_t) n : complete_utf8 ((unsigned char *) raw, (size_t) n);
  *len = output_window_sanitize_utf8 (raw, whole, data);
  info->output_bytes = offset + whole; /* the next offset */
  free (raw);
  return 0;
}

int
session_job_write (struct session *s, uint32_t id, const void *data, size_t n,
                   bool eof)
{
  struct session_exec *e = find_job (s, id);
  if (!e)
    return -ENOENT;
  if (e->state != JOB_RUNNING || e->stdin_closed)
    return -ESRCH;
  e->stdin_closed = eof;
  return s->ops->write_stdin (s->bs, id, data, n, eof);
}

int
session_job_kill (struct session *s, uint32_t id)
{
  struct session_exec *e = find_job (s, id);
  if (!e)
    return -ENOENT;
  if (e->state != JOB_RUNNING || e->term_sent)
    return 0;
  e->term_sent = true;
  s->ops->signal (s->bs, id, SIGTERM);
  e->kill_at = session_now_ms () + s->lim.grace_ms;
  return 0;
}

size_t
session_jobs (struct session *s, struct job_info *out, size_t max)
{
  size_t n = 0;
  for (struct session_exec *e = s->jobs; e && n < max; e = e->next)
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
  if (s->fg)
    return true;
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
  return s->cwd;
}

const struct backend_ops *
session_backend (const struct session *s)
{
  return s->ops;
}

void
session_close (struct session *s)
{
  if (s->fg)
    {
      session_exec_detach (s->fg);
      free_exec (s->fg);
    }
  while (s->jobs)
    {
      struct session_exec *e = s->jobs;
      s->jobs = e->next;
      free_exec (e);
    }
  if (s->bs)
    s->ops->close (s->bs);
  for (size_t i = 0; i < s->nspills; i++)
    {
      if (s->spills[i])
        unlink (s->spills[i]);
      free (s->spills[i]);
    }
  free (s->spills);
  free_env (s->env);
  free_env (s->session_env);
  free (s->what);
  free (s->memory_limit);
  free (s->cwd);
  free (s->state_dir);
  free (s->name);
  free (s);
}
