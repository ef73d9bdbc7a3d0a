/* The JSON-lines API (docs/api.md): one request object per line, answered
 * by one response object, or for a foreground exec by output events and
 * then a result, all carrying the request's "id".  A malformed line gets an
 * error object naming the problem and the connection stays usable. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon.h"
#include "api_internal.h"
#include "backend_open.h"

#define JOB_READ_MAX (1 << 20)

/* A foreground exec asked for while the session was busy: commands of a
 * session run one after another, in the order they came. */
struct queued {
  struct client *c;
  cJSON *req;
  bool gated; /* the approval gate let it through already */
  struct queued *next;
};

static struct daemon *the_daemon;

struct pending {
  struct client *c;
  cJSON *id;
  struct session *s;
  struct session_exec *e;
  struct pending *next;
};
static struct pending *pendings;

cJSON *
reply (const cJSON *id, bool ok)
{
  cJSON *r = cJSON_CreateObject ();
  if (id)
    cJSON_AddItemToObject (r, "id", cJSON_Duplicate (id, true));
  cJSON_AddBoolToObject (r, "ok", ok);
  return r;
}

void
send_error (struct client *c, const cJSON *id, const char *code,
            const char *fmt, ...)
{
  char msg[1024];
  va_list ap;
  va_start (ap, fmt);
  vsnprintf (msg, sizeof msg, fmt, ap);
  va_end (ap);
  cJSON *r = reply (id, false);
  cJSON *e = cJSON_AddObjectToObject (r, "error");
  cJSON_AddStringToObject (e, "code", code);
  cJSON_AddStringToObject (e, "message", msg);
  client_send (c, r);
}

/* Field access with the errors the API promises: missing or wrong type. */
static const char *
want_string (struct client *c, const cJSON *req, const cJSON *id,
             const char *key, bool required, bool *bad)
{
  const cJSON *v = cJSON_GetObjectItemCaseSensitive (req, key);
  if (!v && !required)
    return NULL;
  if (!v)
    send_error (c, id, "missing_field", "field \"%s\" is required", key);
  else if (!cJSON_IsString (v))
    send_error (c, id, "wrong_type", "field \"%s\" must be a string", key);
  else
    return v->valuestring;
  *bad = true;
  return NULL;
}

static double
want_number (struct client *c, const cJSON *req, const cJSON *id,
             const char *key, double dflt, double min, double max, bool *bad)
{
  const cJSON *v = cJSON_GetObjectItemCaseSensitive (req, key);
  if (!v)
    return dflt;
  if (!cJSON_IsNumber (v) || v->valuedouble < min || v->valuedouble > max)
    {
      send_error (c, id, "wrong_type", "field \"%s\" must be a number from %g to %g",
                  key, min, max);
      *bad = true;
      return dflt;
    }
  return v->valuedouble;
}

static bool
want_bool (struct client *c, const cJSON *req, const cJSON *id,
           const char *key, bool *bad)
{
  const cJSON *v = cJSON_GetObjectItemCaseSensitive (req, key);
  if (!v)
    return false;
  if (!cJSON_IsBool (v))
    {
      send_error (c, id, "wrong_type", "field \"%s\" must be true or false", key);
      *bad = true;
      return false;
    }
  return cJSON_IsTrue (v);
}

static struct dsession *
want_session (struct daemon *d, struct client *c, const cJSON *req,
              const cJSON *id, bool *bad)
{
  const char *name = want_string (c, req, id, "session", true, bad);
  if (!name)
    return NULL;
  struct dsession *s = daemon_find (d, name);
  if (!s && daemon_is_lost (d, name))
    send_error (c, id, "session_lost",
                "session \"%s\" was lost (its daemon or sandbox ended); close it "
                "and open it again", name);
  else if (!s)
    send_error (c, id, "no_session", "no session \"%s\" (open it first)", name);
  if (!s)
    *bad = true;
  return s;
}

/* ---- open / close / list ---- */

static bool
valid_name (const char *n)
{
  size_t len = strlen (n);
  if (len == 0 || len > 64)
    return false;
  for (const char *p = n; *p; p++)
    if (!(*p >= 'a' && *p <= 'z') && !(*p >= 'A' && *p <= 'Z')
        && !(*p >= '0' && *p <= '9') && !strchr ("-_.", *p))
      return false;
  return true;
}

struct open_progress
{
  struct client *c;
  const cJSON *id;
};

/* A progress event of an open that takes long (an image pull). */
static void
open_progress (void *ctx, const char *line)
{
  struct open_progress *p = ctx;
  cJSON *ev = cJSON_CreateObject ();
  if (p->id)
    cJSON_AddItemToObject (ev, "id", cJSON_Duplicate (p->id, true));
  cJSON_AddStringToObject (ev, "event", "progress");
  cJSON_AddStringToObject (ev, "message", line);
  client_send (p->c, ev);
  client_flush (p->c);
}

static void
op_open (struct daemon *d, struct client *c, const cJSON *req, const cJSON *id)
{
  bool bad = false;
  const char *name = want_string (c, req, id, "session", true, &bad);
  const char *workdir = want_string (c, req, id, "workdir", true, &bad);
  const char *backend = want_string (c, req, id, "backend", false, &bad);
  const char *approval = want_string (c, req, id, "approval", false, &bad);
  if (bad)
    return;
  int mode = approval ? gate_mode_parse (approval)
                      : (int) approval_default_mode (d->cfg, false);
  if (mode < 0)
    return send_error (c, id, "bad_request", "field \"approval\" must be one of "
                       "\"interactive\", \"ask\", \"deny\", \"approve\"");
  if (!valid_name (name))
    return send_error (c, id, "bad_request",
                       "session names are 1-64 letters, digits, '-', '_' or '.'");
  if (daemon_find (d, name))
    return send_error (c, id, "session_exists", "session \"%s\" is already open", name);
  if (!backend)
    backend = config_string (d->cfg, "backend");
  if (workdir[0] != '/')
    return send_error (c, id, "bad_request", "workdir must be an absolute path");
  char *real = realpath (workdir, NULL);
  if (!real)
    return send_error (c, id, "bad_request", "workdir %s: %s", workdir,
                       strerror (errno));
  struct open_progress prog = { c, id };
  struct backend_open_request orq = { .cfg = d->cfg, .backend = backend,
                                      .session = name, .workdir = real,
                                      .owner_id = d->dir,
                                      .progress = open_progress,
                                      .progress_ctx = &prog };
  struct backend_opened bo;
  char *err = NULL;
  struct session *s = NULL;
  struct backend_reach reach = { 0 };
  int orc = backend_open (&orq, &bo, &err);
  if (orc == 0)
    {
      bo.ops->reach (bo.bs, &reach);
      struct session_limits lim = {
        .timeout_sec = (uint32_t) config_int (d->cfg, "exec.timeout"),
        .max_output_chars = (size_t) config_int (d->cfg, "exec.max_output_chars"),
        .grace_ms = 2000,
        .spill_dir = d->dir, /* the daemon's runtime dir: 0700, ours */
      };
      s = session_open (name, bo.ops, bo.bs, bo.cwd, &lim, &err);
      free (bo.cwd);
    }
  free (real);
  if (!s)
    {
      send_error (c, id, orc == BACKEND_NOT_IMPLEMENTED ? "not_implemented" : "backend_error",
                  "%s", err ? err : "cannot open the session");
      free (err);
      return;
    }
  struct dsession *ds = calloc (1, sizeof *ds);
  ds->name = strdup (name);
  ds->backend = strdup (backend);
  ds->s = s;
  /* Anything short of an isolated sandbox without a way to the host gets
   * the whole gate. */
  ds->host_access = !reach.isolated || reach.host_filesystem || reach.host_network;
  ds->mode = (enum gate_mode) mode;
  daemon_forget_lost (d, name);
  daemon_add (d, ds);
  cJSON *r = reply (id, true);
  cJSON_AddStringToObject (r, "session", name);
  cJSON_AddStringToObject (r, "backend", backend);
  cJSON_AddStringToObject (r, "cwd", session_cwd (s));
  cJSON_AddBoolToObject (r, "host_access", ds->host_access);
  const char *why = backend_reach_reasons (bo.ops, bo.bs);
  if (why)
    cJSON_AddStringToObject (r, "host_access_why", why);
  cJSON_AddStringToObject (r, "approval", gate_mode_name (ds->mode));
  client_send (c, r);
}

static void
op_close (struct daemon *d, struct client *c, const cJSON *req, const cJSON *id)
{
  bool bad = false;
  const char *name = want_string (c, req, id, "session", true, &bad);
  if (bad)
    return;
  struct dsession *s = daemon_find (d, name);
  if (!s && daemon_is_lost (d, name))
    daemon_forget_lost (d, name);
  else if (!s)
    return send_error (c, id, "no_session", "no session \"%s\"", name);
  else
    daemon_remove (d, s);
  client_send (c, reply (id, true));
}

static void
op_list (struct daemon *d, struct client *c, const cJSON *id)
{
  cJSON *r = reply (id, true);
  cJSON *arr = cJSON_AddArrayToObject (r, "sessions");
  long long now = session_now_ms ();
  for (struct dsession *s = d->sessions; s; s = s->next)
    {
      cJSON *o = cJSON_CreateObject ();
      cJSON_AddStringToObject (o, "session", s->name);
      cJSON_AddStringToObject (o, "backend", s->backend);
      cJSON_AddStringToObject (o, "state", session_busy (s->s) ? "busy" : "idle");
      cJSON_AddStringToObject (o, "cwd", session_cwd (s->s));
      cJSON_AddNumberToObject (o, "idle_ms", (double) (now - session_idle_since (s->s)));
      struct job_info jobs[64];
      cJSON_AddNumberToObject (o, "jobs", (double) session_jobs (s->s, jobs, 64));
      cJSON_AddItemToArray (arr, o);
    }
  for (size_t i = 0; i < d->nlost; i++)
    {
      cJSON *o = cJSON_CreateObject ();
      cJSON_AddStringToObject (o, "session", d->lost[i]);
      cJSON_AddStringToObject (o, "state", "lost");
      cJSON_AddItemToArray (arr, o);
    }
  client_send (c, r);
}

/* ---- exec ---- */

static void run_queue (struct session *s);

static void
on_output (void *ctx, struct session_exec *e, int stream, const char *text,
           size_t n)
{
  struct pending *p = ctx;
  (void) e;
  if (!p->c)
    return; /* its client went away: the command runs on, unheard */
  cJSON *ev = cJSON_CreateObject ();
  cJSON_AddItemToObject (ev, "id", cJSON_Duplicate (p->id, true));
  cJSON_AddStringToObject (ev, "event", "output");
  cJSON_AddStringToObject (ev, "stream", stream == 2 ? "stderr" : "stdout");
  char *copy = strndup (text, n);
  cJSON_AddStringToObject (ev, "data", copy ? copy : "");
  free (copy);
  client_send (p->c, ev);
}

static void
on_done (void *ctx, struct session_exec *e, const struct exec_result *res)
{
  (void) e;
  struct pending *p = ctx;
  cJSON *r = reply (p->id, true);
  cJSON_AddStringToObject (r, "event", "result");
  cJSON_AddNumberToObject (r, "exit_code", res->exit_code);
  cJSON_AddStringToObject (r, "stdout", res->stdout_text ? res->stdout_text : "");
  cJSON_AddStringToObject (r, "stderr", res->stderr_text ? res->stderr_text : "");
  cJSON_AddStringToObject (r, "output", res->output ? res->output : "");
  cJSON_AddBoolToObject (r, "truncated", res->truncated);
  if (res->spill_path)
    cJSON_AddStringToObject (r, "spill_path", res->spill_path);
  else
    cJSON_AddNullToObject (r, "spill_path");
  cJSON_AddStringToObject (r, "cwd", res->cwd ? res->cwd : "");
  cJSON_AddNumberToObject (r, "duration_ms", (double) res->duration_ms);
  cJSON_AddBoolToObject (r, "timed_out", res->timed_out);
  cJSON_AddBoolToObject (r, "interrupted", res->interrupted);
  if (p->c)
    client_send (p->c, r);
  else
    cJSON_Delete (r);
  for (struct pending **q = &pendings; *q; q = &(*q)->next)
    if (*q == p)
      {
        *q = p->next;
        break;
      }
  struct session *sess = p->s;
  cJSON_Delete (p->id);
  free (p);
  run_queue (sess);
}

static const struct session_callbacks exec_callbacks = { on_output, on_done };

static void
op_exec (struct daemon *d, struct client *c, const cJSON *req, const cJSON *id,
         bool gated)
{
  bool bad = false;
  struct dsession *s = want_session (d, c, req, id, &bad);
  const char *command = bad ? NULL : want_string (c, req, id, "command", true, &bad);
  const char *cwd = bad ? NULL : want_string (c, req, id, "cwd", false, &bad);
  const char *in = bad ? NULL : want_string (c, req, id, "stdin", false, &bad);
  double timeout = bad ? 0 : want_number (c, req, id, "timeout", 0, 0, 86400, &bad);
  bool background = !bad && want_bool (c, req, id, "background", &bad);
  if (bad)
    return;
  if (cwd && cwd[0] != '/')
    return send_error (c, id, "bad_request", "cwd must be an absolute path");
  /* The approval gate, before anything runs or waits its turn. */
  if (!gated)
    {
      char *shown = NULL;
      if (in && *in && asprintf (&shown, "%s  # stdin: %.200s%s", command, in,
                                 strlen (in) > 200 ? "..." : "") < 0)
        shown = NULL;
      bool go = api_gate (d, s, c, req, id, command, in, shown ? shown : command);
      free (shown);
      if (!go)
        return;
    }
  if (!background && session_busy_foreground (s->s))
    {
      struct queued *q = calloc (1, sizeof *q), **tail = &s->queue;
      if (!q)
        return send_error (c, id, "busy", "out of memory");
      q->c = c;
      q->gated = true;
      q->req = cJSON_Duplicate (req, true);
      while (*tail)
        tail = &(*tail)->next;
      *tail = q;
      return;
    }
  struct exec_request rq = { .command = command, .cwd = cwd, .stdin_data = in,
                             .stdin_len = in ? strlen (in) : 0,
                             .timeout_sec = (uint32_t) timeout,
                             .background = background };
  struct pending *p = NULL;
  if (!background)
    {
      p = calloc (1, sizeof *p);
      p->c = c;
      p->id = id ? cJSON_Duplicate (id, true) : cJSON_CreateNull ();
    }
  char *err = NULL;
  uint32_t job = 0;
  struct session_exec *e = NULL;
  int rc = session_exec (s->s, &rq, background ? NULL : &exec_callbacks, p, &e, &job, &err);
  if (rc < 0)
    {
      send_error (c, id, rc == -EBUSY ? "busy" : "backend_error", "%s",
                  err ? err : strerror (-rc));
      free (err);
      if (p)
        {
          cJSON_Delete (p->id);
          free (p);
        }
      return;
    }
  if (background)
    {
      cJSON *r = reply (id, true);
      cJSON_AddNumberToObject (r, "job", job);
      return client_send (c, r);
    }
  p->e = e;
  p->s = s->s;
  p->next = pendings;
  pendings = p;
}

static void
op_interrupt (struct daemon *d, struct client *c, const cJSON *req,
              const cJSON *id)
{
  bool bad = false;
  struct dsession *s = want_session (d, c, req, id, &bad);
  if (bad)
    return;
  bool any = false;
  for (struct pending *p = pendings; p; p = p->next)
    if (p->e && p->s == s->s)
      {
        session_interrupt (p->e);
        any = true;
      }
  cJSON *r = reply (id, true);
  cJSON_AddBoolToObject (r, "interrupted", any);
  client_send (c, r);
}

/* ---- background jobs ---- */

static const char *const state_names[] = { "running", "exited", "killed" };

static void
add_job (cJSON *o, const struct job_info *j)
{
  cJSON_AddNumberToObject (o, "job", j->id);
  cJSON_AddStringToObject (o, "command", j->command ? j->command : "");
  cJSON_AddStringToObject (o, "state", state_names[j->state]);
  if (j->state == JOB_RUNNING)
    cJSON_AddNullToObject (o, "exit_code");
  else
    cJSON_AddNumberToObject (o, "exit_code", j->exit_code);
}

/* Data for a job's stdin is judged like a command when the job runs a
 * shell or interpreter that would execute it. */
static bool
gate_job_stdin (struct daemon *d, struct dsession *s, struct client *c,
                const cJSON *req, const cJSON *id, uint32_t job,
                const char *data)
{
  struct job_info jobs[256];
  size_t n = session_jobs (s->s, jobs, 256);
  const char *command = NULL;
  for (size_t i = 0; i < n; i++)
    if (jobs[i].id == job)
      command = jobs[i].command;
  if (!command || !*data)
    return true; /* no such job: op_job answers that */
  char *shown = NULL;
  if (asprintf (&shown, "stdin of job %u (%s): %s", job, command, data) < 0)
    return false;
  bool go = api_gate (d, s, c, req, id, command, data, shown);
  free (shown);
  return go;
}

static void
op_job (struct daemon *d, struct client *c, const char *op, const cJSON *req,
        const cJSON *id, bool gated)
{
  bool bad = false;
  struct dsession *s = want_session (d, c, req, id, &bad);
  if (bad)
    return;
  if (!strcmp (op, "jobs"))
    {
      struct job_info jobs[256];
      size_t n = session_jobs (s->s, jobs, 256);
      cJSON *r = reply (id, true);
      cJSON *arr = cJSON_AddArrayToObject (r, "jobs");
      for (size_t i = 0; i < n; i++)
        {
          cJSON *o = cJSON_CreateObject ();
          add_job (o, &jobs[i]);
          cJSON_AddItemToArray (arr, o);
        }
      return client_send (c, r);
    }
  uint32_t job = (uint32_t) want_number (c, req, id, "job", 0, 1, 1e9, &bad);
  if (bad)
    return;
  if (!cJSON_GetObjectItemCaseSensitive (req, "job"))
    return send_error (c, id, "missing_field", "field \"job\" is required");
  int rc;
  cJSON *r = reply (id, true);
  if (!strcmp (op, "job_output"))
    {
      double off = want_number (c, req, id, "offset", 0, 0, 9e15, &bad);
      if (bad)
        return cJSON_Delete (r);
      char *data = NULL;
      size_t len = 0;
      struct job_info info;
      rc = session_job_read (s->s, job, (uint64_t) off, JOB_READ_MAX, &data, &len, &info);
      if (rc == 0)
        {
          char *copy = strndup (data ? data : "", len);
          cJSON_AddStringToObject (r, "data", copy ? copy : "");
          free (copy);
          cJSON_AddNumberToObject (r, "next_offset", (double) info.output_bytes);
          add_job (r, &info);
        }
      free (data);
    }
  else if (!strcmp (op, "job_stdin"))
    {
      const char *data = want_string (c, req, id, "data", true, &bad);
      bool eof = !bad && want_bool (c, req, id, "eof", &bad);
      if (bad)
        return cJSON_Delete (r);
      if (!gated && !gate_job_stdin (d, s, c, req, id, job, data))
        return cJSON_Delete (r);
      rc = session_job_write (s->s, job, data, strlen (data), eof);
    }
  else
    rc = session_job_kill (s->s, job);
  if (rc < 0)
    {
      cJSON_Delete (r);
      return send_error (c, id, rc == -ENOENT ? "no_job" : "job_error",
                         rc == -ENOENT ? "no job %u in this session"
                         : rc == -ESRCH ? "job %u is not running, or its stdin is closed"
                                        : "job %u: the operation failed", job);
    }
  client_send (c, r);
}

/* ---- dispatch ---- */

/* Start the next waiting command of the session whose exec just ended. */
static void
run_queue (struct session *sess)
{
  struct daemon *d = the_daemon;
  for (struct dsession *ds = d ? d->sessions : NULL; ds; ds = ds->next)
    if (ds->s == sess && ds->queue && !session_busy_foreground (sess))
      {
        struct queued *q = ds->queue;
        ds->queue = q->next;
        op_exec (d, q->c, q->req, cJSON_GetObjectItemCaseSensitive (q->req, "id"),
                 q->gated);
        cJSON_Delete (q->req);
        free (q);
        return;
      }
}

void
api_handle (struct daemon *d, struct client *c, const char *line, size_t len)
{
  the_daemon = d;
  while (len && (line[len - 1] == '\r' || line[len - 1] == ' '))
    len--;
  if (len == 0)
    return;
  const char *end = NULL;
  cJSON *req = cJSON_ParseWithLengthOpts (line, len, &end, false);
  if (!req)
    return send_error (c, NULL, "bad_json", "malformed JSON near byte %ld",
                       end ? (long) (end - line) : 0L);
  while (end && end < line + len && (*end == ' ' || *end == '\t'))
    end++;
  if (end && end < line + len)
    {
      cJSON_Delete (req);
      return send_error (c, NULL, "bad_json",
                         "one JSON object per line: more follows at byte %ld",
                         (long) (end - line));
    }
  const cJSON *id = cJSON_GetObjectItemCaseSensitive (req, "id");
  const cJSON *op = cJSON_GetObjectItemCaseSensitive (req, "op");
  if (!cJSON_IsObject (req))
    send_error (c, NULL, "bad_request", "a request is a JSON object");
  else if (!op)
    send_error (c, id, "missing_field", "field \"op\" is required");
  else if (!cJSON_IsString (op))
    send_error (c, id, "wrong_type", "field \"op\" must be a string");
  else if (!strcmp (op->valuestring, "ping"))
    client_send (c, reply (id, true));
  else if (!strcmp (op->valuestring, "open"))
    op_open (d, c, req, id);
  else if (!strcmp (op->valuestring, "close"))
    op_close (d, c, req, id);
  else if (!strcmp (op->valuestring, "list"))
    op_list (d, c, id);
  else if (!strcmp (op->valuestring, "exec"))
    op_exec (d, c, req, id, false);
  else if (!strcmp (op->valuestring, "answer"))
    api_op_answer (d, c, req, id);
  else if (!strcmp (op->valuestring, "interrupt"))
    op_interrupt (d, c, req, id);
  else if (!strcmp (op->valuestring, "jobs") || !strcmp (op->valuestring, "job_output")
           || !strcmp (op->valuestring, "job_stdin") || !strcmp (op->valuestring, "kill"))
    op_job (d, c, op->valuestring, req, id, false);
  else
    send_error (c, id, "unknown_op", "unknown op \"%s\"", op->valuestring);
  cJSON_Delete (req);
}

void
api_resume_approved (struct daemon *d, struct client *c, const cJSON *req,
                     const cJSON *id)
{
  const cJSON *op = cJSON_GetObjectItemCaseSensitive (req, "op");
  if (!strcmp (op->valuestring, "exec"))
    op_exec (d, c, req, id, true);
  else
    op_job (d, c, op->valuestring, req, id, true);
}

void
api_client_gone (struct daemon *d, struct client *c)
{
  api_approval_client_gone (d, c);
  for (struct dsession *ds = d->sessions; ds; ds = ds->next)
    for (struct queued **q = &ds->queue; *q;)
      if ((*q)->c == c)
        {
          struct queued *gone = *q;
          *q = gone->next;
          cJSON_Delete (gone->req);
          free (gone);
        }
      else
        q = &(*q)->next;
  for (struct pending *p = pendings; p; p = p->next)
    if (p->c == c)
      p->c = NULL;
}

bool
api_client_waiting (struct daemon *d, struct client *c)
{
  if (api_approval_waiting (c))
    return true;
  for (struct pending *p = pendings; p; p = p->next)
    if (p->c == c)
      return true;
  for (struct dsession *ds = d->sessions; ds; ds = ds->next)
    for (struct queued *q = ds->queue; q; q = q->next)
      if (q->c == c)
        return true;
  return false;
}

void
api_session_gone (struct session *s, const char *why)
{
  if (the_daemon)
    api_approval_session_gone (the_daemon, s);
  for (struct dsession *ds = the_daemon ? the_daemon->sessions : NULL; ds; ds = ds->next)
    while (ds->s == s && ds->queue)
      {
        struct queued *q = ds->queue;
        ds->queue = q->next;
        send_error (q->c, cJSON_GetObjectItemCaseSensitive (q->req, "id"),
                    "session_lost", "%s", why);
        cJSON_Delete (q->req);
        free (q);
      }
  for (struct pending **p = &pendings; *p;)
    if ((*p)->s == s)
      {
        struct pending *gone = *p;
        *p = gone->next;
        if (gone->c)
          send_error (gone->c, gone->id, "session_lost", "%s", why);
        cJSON_Delete (gone->id);
        free (gone);
      }
    else
      p = &(*p)->next;
}
