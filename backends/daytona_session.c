/* SPDX-License-Identifier: MIT */
/* The daytona backend's sessions (see daytona_session.h, docs/daytona.md).
 *
 * A session is one Daytona sandbox (daytona_sandbox.c finds or creates
 * it at open and deletes or stops it at close).  Each command is one
 * toolbox session of its own ("airlock-TOKEN-JOB") running one async exec
 * of daytona_wrapper.sh, which keeps the command's output in a job
 * directory in the sandbox and relays it, by byte offset, as ASCII lines
 * of the toolbox session's log.  We read that log with
 * X-Daytona-Split-Output (the raw log: each line behind a three-byte
 * stream marker) and keep our offset in it, so a dropped connection, a
 * retried read or a 5xx costs nothing: the next read starts where we
 * were.  Daytona's logs endpoint has no offset parameter: each read
 * returns the whole log so far, which the poll interval keeps in check.
 *
 * The daemon is single-threaded; HTTP is not quick.  So every call of a
 * session runs on a worker thread of that session, with its own client
 * (daytona_http.h); the ops only queue work under the session's lock and
 * return, and the worker queues events back and signals an eventfd. */
#define _GNU_SOURCE
#include "daytona_session.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <unistd.h>

#include "daytona_terminal.h"
#include "daytona_wrapper.h"
#include "event_queue.h"
#include "files_host.h"
#include "monotonic_ms.h"
#include "sh_words.h"
#include "xprintf.h"

#define POLL_FIRST_MS 20
#define POLL_MAX_MS 500
#define RETRY_MAX_MS 5000
/* Without an answer from Daytona this long, a running command is lost. */
#define LOST_AFTER_MS (10 * 60 * 1000)
#define CALL_MS 30000
#define POLL_CALL_MS 5000
/* A log longer than this is left for a fresh one (rotate). */
#define ROTATE_BYTES (4u << 20)
#define STDIN_CHUNK (1 << 20)
#define CLOSE_TIMEOUT_S 120

struct dt_job {
  struct dt_job *next;
  uint32_t id;
  char sid[96];              /* its toolbox session */
  /* The worker's own */
  char *command;             /* the exec's text, until it is sent */
  char *cmd_id;
  bool running, ended, cleaned;
  uint64_t raw_off;          /* bytes of the log taken */
  uint64_t off[4];           /* bytes delivered of streams 1-3 */
  uint32_t pid;
  unsigned relay;            /* which relay of the job writes our log */
  unsigned long long timeout_ms; /* the remote deadline, from start */
  unsigned grace_ms;
  long long started_ms;
  long long due;             /* next poll (monotonic ms) */
  unsigned poll_ms;
  long long unreachable_since; /* 0: answered last time */
  /* Under the lock */
  char *in;                  /* stdin lines not sent yet */
  size_t in_len;
  bool stdin_pipe;
  int sig;                   /* a signal to send */
  bool forgotten;            /* the session layer wants no more events */
  bool reported;             /* EXITED or ERROR queued */
  /* A command on a terminal (daytona_terminal.h): its own thread does
   * the rest; the worker only signals it and cleans up. */
  struct daytona_terminal *terminal;
};

/* A file moved by the toolbox's files API (ops file_put, file_get): a
 * thread of its own with its own client, so that a long transfer never
 * holds up the worker's polls of running commands. */
struct dt_file {
  struct dt_file *next;
  struct backend_session *s;
  pthread_t thread;
  uint32_t ticket;
  bool put;
  char *host_path;
  char *remote;
  uint64_t deadline;
  bool finished;              /* under the lock: ready to be joined */
};

struct backend_session {
  pthread_mutex_t lock;
  pthread_cond_t wake;
  pthread_t worker;
  bool worker_started;
  volatile int stop;   /* read by daytona_call between attempts */
  int efd;
  struct dt_job *jobs;
  struct dt_file *files;      /* under the lock; joined at close */
  unsigned nfiles;
  struct event_queue q;       /* under the lock */
  char *lost;                /* the session is gone: why */
  bool unreachable;          /* the last call got no answer */
  char token[17];
  char *session;
  char *api_url;
  struct daytona_auth auth;
  struct daytona_sandbox sb;
  bool keep;
  struct daytona_http *h;    /* the worker's */
  struct daytona_http *main_h; /* open and close, on the daemon's thread */
};

/* ---- events (under the lock) ---- */

/* The daemon's thread looks at the session (ops->event_fd). */
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
push_event (struct backend_session *s, const struct backend_event *ev,
            const void *data, size_t len, const char *msg)
{
  event_queue_push (&s->q, ev, data, len, msg);
  wake_daemon (s);
}

static void
report_end (struct backend_session *s, struct dt_job *j, int status, const char *lost)
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
      char *m = xprintf ("the command in the Daytona sandbox %s was lost: %s", s->sb.name, lost);
      push_event (s, &ev, NULL, 0, m ? m : lost);
      free (m);
      fprintf (stderr, "airlock: session %s, job %u: lost: %s\n", s->session, j->id, lost);
    }
  else
    {
      ev.type = BACKEND_EXITED;
      ev.exit_code = status;
      push_event (s, &ev, NULL, 0, NULL);
    }
}

/* ---- the sandbox's words ---- */

/* A terminal job's "go" file (the wrapper in M=pty), in base64: its
 * preamble has no secret, but it is the job directory's business. */
static char *
go_text (struct backend_session *s, const struct dt_job *j, const char *cw, const char *args,
         const char *marker)
{
  char *go = xprintf ("M=pty N=airlock-%s-%u T=%llu G=%u CW=%s K=%s\nset --%s\n%s", s->token,
                      j->id, j->timeout_ms, j->grace_ms, cw, marker, args, DAYTONA_WRAPPER);
  char *b = go ? files_base64_encode (go, strlen (go)) : NULL;
  free (go);
  return b;
}

/* The exec's text: the wrapper behind its preamble, in a subshell.  For
 * a terminal (marker set), the exec that prepares its job directory. */
static char *
exec_text (struct backend_session *s, const struct dt_job *j, const struct backend_spawn *sp,
           const char *marker)
{
  char *env = sh_export_lines (sp->envp);
  char *se = sp->script ? files_base64_encode (sp->script, sp->script_len) : strdup ("");
  char *ee = env ? files_base64_encode (env, strlen (env)) : NULL;
  char *cw = sh_quote (sp->cwd ? sp->cwd : "/");
  char *args = sh_argv_words (sp->argv);
  char *go = marker && cw && args ? go_text (s, j, cw, args, marker) : NULL;
  char *t = env && se && ee && cw && args && (go || !marker)
                ? marker ? xprintf ("(\nM=prep RID=0 N=airlock-%s-%u S='%s' E='%s' P='%s' IN=0 T=0 G=0 "
                                    "CW=/\nset --\n%s)\n",
                                    s->token, j->id, se, ee, go, DAYTONA_WRAPPER)
                         : xprintf ("(\nM=run RID=0 N=airlock-%s-%u S='%s' E='%s' IN=%d T=%llu G=%u "
                                    "CW=%s\nset --%s\n%s)\n",
                                    s->token, j->id, se, ee, sp->stdin_pipe ? 1 : 0, j->timeout_ms,
                                    j->grace_ms, cw, args, DAYTONA_WRAPPER)
                : NULL;
  free (env);
  free (se);
  free (ee);
  free (cw);
  free (args);
  free (go);
  return t;
}

/* ---- calls (the worker's) ---- */

static char *
tb_url (struct backend_session *s, const char *fmt, ...)
    __attribute__ ((format (printf, 2, 3)));
static char *
tb_url (struct backend_session *s, const char *fmt, ...)
{
  va_list ap;
  va_start (ap, fmt);
  char *tail = NULL;
  int n = vasprintf (&tail, fmt, ap);
  va_end (ap);
  if (n < 0)
    return NULL;
  char *u = xprintf ("%s%s", s->sb.toolbox_url, tail);
  free (tail);
  return u;
}

/* One toolbox call: 1 answered 2xx, 0 answered otherwise (*r kept for
 * the caller), -1 no answer (*err).  A 404 on a path of the sandbox's
 * own makes the caller check whether the sandbox is still there. */
static int
tb_call (struct backend_session *s, const char *method, const char *url, const cJSON *body,
         const char *const *headers, bool once, struct daytona_reply *r, char **err)
{
  /* A read of the log is repeated anyway: given up sooner, so that a
   * sandbox out of reach is known (and a kill reported pending) soon. */
  bool poll = !strcmp (method, "GET");
  struct daytona_request rq = {
    .method = method, .url = url, .json = body, .headers = headers,
    .deadline_ms = monotonic_ms () + (poll ? POLL_CALL_MS : CALL_MS), .cancel = &s->stop,
    .not_idempotent = once, .max_body = 256u << 20,
  };
  *r = (struct daytona_reply){ 0 };
  if (daytona_call (s->h, &rq, r, err) < 0)
    return -1;
  return r->status >= 200 && r->status < 300;
}

/* After a 404 or an error answer: is the sandbox still there and started?
 * NULL when it is; else why the session is lost (malloc'd). */
static char *
sandbox_gone_by (struct backend_session *s, struct daytona_http *h)
{
  bool gone = false;
  char *err = NULL;
  char *state = daytona_sandbox_state (h, &s->sb, &gone, &err);
  char *why = NULL;
  if (gone)
    why = xprintf ("the Daytona sandbox %s (%s) no longer exists (deleted outside airlock); "
                   "it is not re-created: close the session and open a new one",
                   s->sb.name, s->sb.id);
  else if (state && strcmp (state, "started"))
    why = xprintf ("the Daytona sandbox %s (%s) is %s, not started (stopped or archived "
                   "outside airlock, or by its auto-stop): its commands are gone; close the "
                   "session and open it again%s",
                   s->sb.name, s->sb.id, state,
                   s->keep ? " (daytona.keep reuses the sandbox)" : "");
  free (state);
  free (err);
  return why;
}

/* The same, from the worker. */
static char *
sandbox_gone (struct backend_session *s)
{
  return sandbox_gone_by (s, s->h);
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
      for (struct dt_job *j = s->jobs; j; j = j->next)
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

/* An answer that is an error: the sandbox's fate first, then the job's. */
static void
job_failed (struct backend_session *s, struct dt_job *j, struct daytona_reply *r,
            const char *what)
{
  if (r->status == 404 || r->status == 400 || r->status == 410 || r->status >= 500)
    {
      char *why = sandbox_gone (s);
      if (why)
        {
          session_lost (s, why);
          return;
        }
    }
  char *m = daytona_error_text (s->h, r, what);
  pthread_mutex_lock (&s->lock);
  j->ended = true;
  report_end (s, j, 0, m ? m : what);
  pthread_mutex_unlock (&s->lock);
  free (m);
}

static void
unreachable (struct backend_session *s, struct dt_job *j, char *err)
{
  long long now = monotonic_ms ();
  if (!j->unreachable_since)
    j->unreachable_since = now;
  pthread_mutex_lock (&s->lock);
  s->unreachable = true;
  pthread_mutex_unlock (&s->lock);
  if (now - j->unreachable_since > LOST_AFTER_MS)
    {
      pthread_mutex_lock (&s->lock);
      j->ended = true;
      report_end (s, j, 0, err ? err : "Daytona could not be reached for 10 minutes");
      pthread_mutex_unlock (&s->lock);
    }
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
reachable (struct backend_session *s, struct dt_job *j)
{
  j->unreachable_since = 0;
  pthread_mutex_lock (&s->lock);
  s->unreachable = false;
  pthread_mutex_unlock (&s->lock);
}

/* Create the job's toolbox session and start its exec. */
static void
start_job (struct backend_session *s, struct dt_job *j)
{
  struct daytona_reply r;
  char *err = NULL;
  char *url = tb_url (s, "/process/session");
  cJSON *b = cJSON_CreateObject ();
  cJSON_AddStringToObject (b, "sessionId", j->sid);
  int rc = url && b ? tb_call (s, "POST", url, b, NULL, false, &r, &err) : -1;
  cJSON_Delete (b);
  free (url);
  if (rc < 0)
    {
      unreachable (s, j, err);
      return;
    }
  if (rc == 0 && r.status != 409) /* 409: made by an attempt we lost */
    {
      job_failed (s, j, &r, "creating a toolbox session");
      daytona_reply_free (&r);
      return;
    }
  daytona_reply_free (&r);
  reachable (s, j);
  url = tb_url (s, "/process/session/%s/exec", j->sid);
  b = cJSON_CreateObject ();
  cJSON_AddStringToObject (b, "command", j->command);
  cJSON_AddBoolToObject (b, "runAsync", true);
  cJSON_AddBoolToObject (b, "suppressInputEcho", true);
  rc = url && b ? tb_call (s, "POST", url, b, NULL, true, &r, &err) : -1;
  cJSON_Delete (b);
  free (url);
  if (rc < 0)
    {
      /* Sent or not, we cannot tell: running it twice is worse than
       * losing it. */
      pthread_mutex_lock (&s->lock);
      j->ended = true;
      report_end (s, j, 0, err ? err : "no answer to starting the command");
      pthread_mutex_unlock (&s->lock);
      free (err);
      return;
    }
  const cJSON *id = r.json ? cJSON_GetObjectItemCaseSensitive (r.json, "cmdId") : NULL;
  if (rc == 0 || !cJSON_IsString (id))
    {
      if (rc == 1)
        r.status = 502; /* an answer without its command id */
      job_failed (s, j, &r, "starting the command");
      daytona_reply_free (&r);
      return;
    }
  j->cmd_id = strdup (id->valuestring);
  daytona_reply_free (&r);
  free (j->command);
  j->command = NULL;
  j->running = j->cmd_id != NULL;
  j->poll_ms = POLL_FIRST_MS;
  j->due = monotonic_ms () + POLL_FIRST_MS;
}

static void
deliver (struct backend_session *s, struct dt_job *j, int stream, uint64_t at,
         const char *b64)
{
  unsigned char *bytes = NULL;
  ssize_t n = files_base64_decode (b64, &bytes);
  if (n < 0)
    {
      fprintf (stderr, "airlock: session %s, job %u: a garbled output frame\n", s->session, j->id);
      return;
    }
  /* Only what we do not have yet: a frame read twice counts once. */
  uint64_t end = at + (uint64_t) n;
  if (end > j->off[stream] && at <= j->off[stream])
    {
      size_t skip = (size_t) (j->off[stream] - at);
      pthread_mutex_lock (&s->lock);
      if (!j->forgotten)
        {
          struct backend_event ev = { .type = BACKEND_OUTPUT, .job = j->id, .stream = stream,
                                      .len = (size_t) n - skip };
          push_event (s, &ev, bytes + skip, (size_t) n - skip, NULL);
        }
      pthread_mutex_unlock (&s->lock);
      j->off[stream] = end;
    }
  free (bytes);
}

/* One line of the wrapper's, from its stdout. */
static void
frame (struct backend_session *s, struct dt_job *j, char *line)
{
  if (line[0] == 'S' && line[1] == ' ')
    {
      if (j->pid)
        return; /* a new relay says it again */
      j->pid = (uint32_t) strtoul (line + 2, NULL, 10);
      pthread_mutex_lock (&s->lock);
      if (!j->forgotten)
        {
          struct backend_event ev = { .type = BACKEND_STARTED, .job = j->id, .pid = j->pid };
          push_event (s, &ev, NULL, 0, NULL);
        }
      pthread_mutex_unlock (&s->lock);
    }
  else if (line[0] == 'O' && line[1] == ' ')
    {
      char *p = line + 2, *e;
      int stream = (int) strtol (p, &e, 10);
      if (e == p || *e != ' ' || stream < 1 || stream > 3)
        return;
      p = e + 1;
      unsigned long long at = strtoull (p, &e, 10);
      if (e == p || *e != ' ')
        return;
      deliver (s, j, stream, at, e + 1);
    }
  else if (line[0] == 'R' && line[1] == ' ')
    {
      int status = atoi (line + 2);
      j->ended = true;
      pthread_mutex_lock (&s->lock);
      report_end (s, j, status, NULL);
      pthread_mutex_unlock (&s->lock);
    }
  else if (line[0] == 'F' && line[1] == ' ')
    {
      j->ended = true;
      pthread_mutex_lock (&s->lock);
      report_end (s, j, 0, line + 2);
      pthread_mutex_unlock (&s->lock);
    }
}

/* A toolbox session sid with one async exec of text: its command id, or
 * NULL (said on the daemon's log). */
static char *
exec_in_session (struct backend_session *s, const char *sid, const char *text)
{
  struct daytona_reply r;
  char *err = NULL, *id = NULL;
  char *url = tb_url (s, "/process/session");
  cJSON *b = cJSON_CreateObject ();
  cJSON_AddStringToObject (b, "sessionId", sid);
  int rc = url && b ? tb_call (s, "POST", url, b, NULL, false, &r, &err) : -1;
  cJSON_Delete (b);
  free (url);
  if (rc >= 0)
    {
      if (rc == 0 && r.status != 409)
        rc = -1;
      daytona_reply_free (&r);
    }
  if (rc >= 0)
    {
      url = tb_url (s, "/process/session/%s/exec", sid);
      b = cJSON_CreateObject ();
      cJSON_AddStringToObject (b, "command", text);
      cJSON_AddBoolToObject (b, "runAsync", true);
      cJSON_AddBoolToObject (b, "suppressInputEcho", true);
      rc = url && b ? tb_call (s, "POST", url, b, NULL, true, &r, &err) : -1;
      cJSON_Delete (b);
      free (url);
      if (rc >= 0)
        {
          const cJSON *c = r.json ? cJSON_GetObjectItemCaseSensitive (r.json, "cmdId") : NULL;
          if (rc == 1 && cJSON_IsString (c))
            id = strdup (c->valuestring);
          daytona_reply_free (&r);
        }
    }
  if (!id)
    fprintf (stderr, "airlock: session %s: a new relay in %s did not start%s%s\n", s->session,
             sid, err ? ": " : "", err ? err : "");
  free (err);
  return id;
}

/* Daytona's logs endpoint returns the whole log each time: once a job's
 * log is long, a new relay in a new toolbox session carries on from our
 * offsets into a fresh log, and the old one stops (it is not the job's
 * relay any more).  Nothing is lost or doubled: frames carry offsets. */
static void
rotate (struct backend_session *s, struct dt_job *j)
{
  unsigned rid = j->relay + 1;
  char sid[sizeof j->sid];
  snprintf (sid, sizeof sid, "airlock-%s-%u-r%u", s->token, j->id, rid);
  long long spent = monotonic_ms () - j->started_ms;
  unsigned long long left = j->timeout_ms == 0 ? 0
                            : spent < (long long) j->timeout_ms ? j->timeout_ms - (unsigned long long) spent
                                                                : 1;
  char *text = xprintf ("(\nM=relay RID=%u N=airlock-%s-%u O1=%llu O2=%llu O3=%llu IN=0 T=%llu G=%u "
                        "S= E= CW=/\nset --\n%s)\n",
                        rid, s->token, j->id, (unsigned long long) j->off[1],
                        (unsigned long long) j->off[2], (unsigned long long) j->off[3], left,
                        j->grace_ms, DAYTONA_WRAPPER);
  char *cmd_id = text ? exec_in_session (s, sid, text) : NULL;
  free (text);
  if (!cmd_id)
    return; /* the old log serves on; tried again at the next read */
  char *old = tb_url (s, "/process/session/%s", j->sid);
  struct daytona_reply r;
  char *err = NULL;
  if (old && tb_call (s, "DELETE", old, NULL, NULL, false, &r, &err) >= 0)
    daytona_reply_free (&r);
  free (err);
  free (old);
  memcpy (j->sid, sid, sizeof sid);
  free (j->cmd_id);
  j->cmd_id = cmd_id;
  j->relay = rid;
  j->raw_off = 0;
}

/* Read the log from our offset: every whole line that came since. */
static void
poll_job (struct backend_session *s, struct dt_job *j)
{
  static const char *const split[] = { "X-Daytona-Split-Output: true", NULL };
  char *url = tb_url (s, "/process/session/%s/command/%s/logs", j->sid, j->cmd_id);
  struct daytona_reply r;
  char *err = NULL;
  int rc = url ? tb_call (s, "GET", url, NULL, split, false, &r, &err) : -1;
  free (url);
  if (rc < 0)
    {
      unreachable (s, j, err);
      return;
    }
  if (rc == 0)
    {
      job_failed (s, j, &r, "reading the command's output");
      daytona_reply_free (&r);
      return;
    }
  reachable (s, j);
  bool moved = false;
  while (!j->ended && j->raw_off < r.len)
    {
      char *line = r.body + j->raw_off;
      char *nl = memchr (line, '\n', r.len - j->raw_off);
      if (!nl)
        break;
      *nl = 0;
      j->raw_off = (uint64_t) (nl + 1 - r.body);
      moved = true;
      if (nl - line >= 3 && !memcmp (line, "\1\1\1", 3))
        frame (s, j, line + 3);
      else if (nl - line >= 3 && !memcmp (line, "\2\2\2", 3) && nl - line > 3)
        fprintf (stderr, "airlock: session %s, job %u: the sandbox said: %.300s\n", s->session,
                 j->id, line + 3);
    }
  daytona_reply_free (&r);
  if (!j->ended && j->raw_off > ROTATE_BYTES)
    rotate (s, j);
  j->poll_ms = moved ? POLL_FIRST_MS : j->poll_ms * 2;
  if (j->poll_ms > POLL_MAX_MS)
    j->poll_ms = POLL_MAX_MS;
}

/* A short command of our own in the sandbox (a kill): its exit code, or
 * -1 when Daytona did not answer. */
static int
sandbox_exec (struct backend_session *s, const char *command, char **err)
{
  char *url = tb_url (s, "/process/execute");
  cJSON *b = cJSON_CreateObject ();
  cJSON_AddStringToObject (b, "command", command);
  cJSON_AddNumberToObject (b, "timeout", 20);
  struct daytona_reply r;
  int rc = url && b ? tb_call (s, "POST", url, b, NULL, false, &r, err) : -1;
  cJSON_Delete (b);
  free (url);
  if (rc < 0)
    return -1;
  const cJSON *ec = r.json ? cJSON_GetObjectItemCaseSensitive (r.json, "exitCode") : NULL;
  int code = rc == 1 && cJSON_IsNumber (ec) ? ec->valueint : 1;
  if (rc == 0)
    *err = daytona_error_text (s->h, &r, "signalling a command");
  daytona_reply_free (&r);
  return code;
}

static const char kill_script[]
    = "J=/tmp/.airlock-jobs/%s; p=; read -r p < \"$J/pid\" 2>/dev/null; "
      "for d in /proc/[0-9]*; do l=; read -r l < \"$d/stat\" 2>/dev/null || continue; "
      "l=${l##*) }; set -- $l; "
      "if { [ -n \"$p\" ] && [ \"$4\" = \"$p\" ]; } || "
      "grep -qz '^AIRLOCK_DAYTONA_JOB=%s$' \"$d/environ\" 2>/dev/null; then "
      "kill -%d \"${d#/proc/}\" 2>/dev/null; fi; done; exit 0";

static void
send_signal (struct backend_session *s, struct dt_job *j, int sig)
{
  char name[64];
  snprintf (name, sizeof name, "airlock-%s-%u", s->token, j->id);
  char *cmd = xprintf (kill_script, name, name, sig);
  char *err = NULL;
  int rc = cmd ? sandbox_exec (s, cmd, &err) : -1;
  free (cmd);
  if (rc < 0 || err)
    {
      fprintf (stderr, "airlock: session %s, job %u: signal %d: %s\n", s->session, j->id, sig,
               err ? err : "no answer");
      if (rc < 0)
        {
          /* sent again on the next round */
          pthread_mutex_lock (&s->lock);
          if (!j->sig || sig == SIGKILL)
            j->sig = sig;
          s->unreachable = true;
          pthread_mutex_unlock (&s->lock);
        }
    }
  free (err);
}

static void
send_stdin (struct backend_session *s, struct dt_job *j, char *text)
{
  char *url = tb_url (s, "/process/session/%s/command/%s/input", j->sid, j->cmd_id);
  cJSON *b = cJSON_CreateObject ();
  cJSON_AddStringToObject (b, "data", text);
  struct daytona_reply r;
  char *err = NULL;
  int rc = url && b ? tb_call (s, "POST", url, b, NULL, false, &r, &err) : -1;
  cJSON_Delete (b);
  free (url);
  if (rc < 0)
    fprintf (stderr, "airlock: session %s, job %u: its input was not delivered: %s\n",
             s->session, j->id, err ? err : "no answer");
  else
    daytona_reply_free (&r);
  free (err);
}

static int sandbox_exec (struct backend_session *s, const char *command, char **err);

static void
cleanup_job (struct backend_session *s, struct dt_job *j)
{
  char *rm = xprintf ("rm -rf /tmp/.airlock-jobs/airlock-%s-%u", s->token, j->id);
  char *e = NULL;
  if (rm)
    sandbox_exec (s, rm, &e);
  free (rm);
  free (e);
  char *url = tb_url (s, "/process/session/%s", j->sid);
  struct daytona_reply r;
  char *err = NULL;
  if (url && tb_call (s, "DELETE", url, NULL, NULL, false, &r, &err) >= 0)
    daytona_reply_free (&r);
  free (err);
  free (url);
  j->cleaned = true;
}

static void
free_job (struct dt_job *j)
{
  daytona_terminal_free (j->terminal);
  free (j->command);
  free (j->cmd_id);
  free (j->in);
  free (j);
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
      struct dt_job *j = NULL;
      int sig = 0;
      char *in = NULL;
      /* One piece of work at a time, the lock released while it runs. */
      for (struct dt_job *c = s->jobs; c && !j; c = c->next)
        {
          if (c->cleaned || s->lost)
            continue;
          /* A terminal job's own thread runs it until its end. */
          if (c->terminal && !c->ended && !(c->sig && c->running))
            continue;
          if (c->sig && (c->running || c->ended))
            {
              j = c;
              sig = c->sig;
              c->sig = 0;
            }
          /* Input only once it started: before its shell opened the
           * input pipe, Daytona cannot write to it. */
          else if (c->in_len && c->running && c->pid && !c->ended)
            {
              j = c;
              in = c->in;
              c->in = NULL;
              c->in_len = 0;
            }
          else if (c->ended || (!c->running && c->command))
            j = c;
          else if (c->due < next)
            next = c->due;
        }
      /* Else the poll longest due, so that a busy job starves nobody. */
      for (struct dt_job *c = s->jobs; c && !j && next <= now; c = c->next)
        if (!c->cleaned && !s->lost && !c->terminal && c->running && !c->ended && c->due == next)
          j = c;
      if (!j)
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
          continue;
        }
      bool cancelled = !j->running && j->command && (j->forgotten || j->sig);
      pthread_mutex_unlock (&s->lock);
      if (sig)
        send_signal (s, j, sig);
      else if (in)
        send_stdin (s, j, in);
      else if (cancelled)
        {
          /* Killed before it started: it never runs. */
          free (j->command);
          j->command = NULL;
          pthread_mutex_lock (&s->lock);
          j->ended = j->cleaned = true;
          report_end (s, j, 128 + (j->sig ? j->sig : SIGKILL), NULL);
          pthread_mutex_unlock (&s->lock);
        }
      else if (j->ended)
        cleanup_job (s, j);
      else if (!j->running)
        start_job (s, j);
      else
        {
          poll_job (s, j);
          j->due = monotonic_ms () + j->poll_ms;
        }
      free (in);
      pthread_mutex_lock (&s->lock);
      /* Done with: gone from the list (only this thread removes). */
      for (struct dt_job **p = &s->jobs; *p;)
        if ((*p)->cleaned && (*p)->reported)
          {
            struct dt_job *d = *p;
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

static struct dt_job *
find_job (struct backend_session *s, uint32_t id)
{
  for (struct dt_job *j = s->jobs; j; j = j->next)
    if (j->id == id && !j->reported)
      return j;
  return NULL;
}

/* ---- a terminal job's hooks (its thread; daytona_terminal.h) ---- */

static void
terminal_started (void *session, void *job)
{
  struct backend_session *s = session;
  struct dt_job *j = job;
  pthread_mutex_lock (&s->lock);
  j->running = true;
  if (!j->forgotten)
    {
      struct backend_event ev = { .type = BACKEND_STARTED, .job = j->id };
      push_event (s, &ev, NULL, 0, NULL);
    }
  pthread_cond_signal (&s->wake); /* a signal may wait for this */
  pthread_mutex_unlock (&s->lock);
}

static void
terminal_output (void *session, void *job, const void *data, size_t n)
{
  struct backend_session *s = session;
  struct dt_job *j = job;
  pthread_mutex_lock (&s->lock);
  if (!j->forgotten)
    {
      struct backend_event ev = { .type = BACKEND_OUTPUT, .job = j->id, .stream = 1, .len = n };
      push_event (s, &ev, data, n, NULL);
    }
  pthread_mutex_unlock (&s->lock);
}

static void
terminal_ended (void *session, void *job, int status, const void *meta, size_t meta_len,
                const char *lost)
{
  struct backend_session *s = session;
  struct dt_job *j = job;
  pthread_mutex_lock (&s->lock);
  if (meta_len && !j->forgotten)
    {
      struct backend_event ev = { .type = BACKEND_OUTPUT, .job = j->id, .stream = 3,
                                  .len = meta_len };
      push_event (s, &ev, meta, meta_len, NULL);
    }
  j->ended = true;
  report_end (s, j, status, lost);
  pthread_cond_signal (&s->wake); /* the worker cleans up */
  pthread_mutex_unlock (&s->lock);
}

static const struct daytona_terminal_hooks terminal_hooks = {
  .started = terminal_started, .output = terminal_output, .ended = terminal_ended,
};

/* A command on a terminal: its thread prepares, connects and relays. */
static int
spawn_terminal (struct backend_session *s, struct dt_job *j, const struct backend_spawn *sp,
                char **err)
{
  unsigned char raw[16];
  char marker[40];
  if (getrandom (raw, sizeof raw, 0) != sizeof raw)
    {
      *err = xprintf ("no random bytes: %s", strerror (errno));
      return -1;
    }
  int n = snprintf (marker, sizeof marker, "AIRLOCK");
  for (size_t i = 0; i < sizeof raw; i++)
    n += snprintf (marker + n, sizeof marker - (size_t) n, "%02x", raw[i]);
  char *prep = exec_text (s, j, sp, marker);
  if (!prep)
    {
      *err = xprintf ("out of memory");
      return -1;
    }
  struct daytona_terminal_spec spec = {
    .api_url = s->api_url, .auth = &s->auth, .toolbox_url = s->sb.toolbox_url,
    .name = j->sid, .prep = prep, .marker = marker,
    .rows = sp->pty->rows, .cols = sp->pty->cols, .term = sp->pty->term, .stop = &s->stop,
    .session = s, .job = j,
  };
  j->terminal = daytona_terminal_start (&spec, &terminal_hooks, err);
  explicit_bzero (prep, strlen (prep));
  free (prep);
  return j->terminal ? 0 : -1;
}

static int
dt_spawn (struct backend_session *s, const struct backend_spawn *sp, char **err)
{
  struct dt_job *j = calloc (1, sizeof *j);
  if (!j)
    {
      *err = xprintf ("out of memory");
      return -1;
    }
  j->id = sp->job;
  j->stdin_pipe = sp->stdin_pipe || sp->pty;
  /* The remote deadline a little after ours: ours ends the job (124);
   * the remote one holds when we cannot reach the sandbox. */
  j->timeout_ms = sp->timeout_ms ? sp->timeout_ms + 1000 : 0;
  j->grace_ms = sp->grace_ms ? sp->grace_ms : 2000;
  j->started_ms = monotonic_ms ();
  snprintf (j->sid, sizeof j->sid, "airlock-%s-%u", s->token, sp->job);
  if (!sp->pty && !(j->command = exec_text (s, j, sp, NULL)))
    {
      free (j);
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
  /* Listed before its thread starts: the thread's hooks find it there. */
  if (sp->pty && spawn_terminal (s, j, sp, err) < 0)
    {
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

static int
dt_write_stdin (struct backend_session *s, uint32_t job, const void *data, size_t n, bool eof)
{
  pthread_mutex_lock (&s->lock);
  struct dt_job *j = find_job (s, job);
  int rc = 0;
  if (!j || !j->stdin_pipe)
    rc = -ESRCH;
  else if (j->terminal)
    {
      rc = daytona_terminal_type (j->terminal, data, n, eof);
      pthread_mutex_unlock (&s->lock);
      return rc;
    }
  const unsigned char *p = data;
  while (rc == 0 && (n || eof))
    {
      size_t k = n < STDIN_CHUNK ? n : STDIN_CHUNK;
      char *b = k ? files_base64_encode (p, k) : NULL;
      char *line = k ? (b ? xprintf ("D %zu\n%s\n", strlen (b), b) : NULL) : xprintf ("C\n");
      free (b);
      if (!line)
        {
          rc = -ENOMEM;
          break;
        }
      size_t len = strlen (line);
      char *g = realloc (j->in, j->in_len + len + 1);
      if (!g)
        {
          free (line);
          rc = -ENOMEM;
          break;
        }
      j->in = g;
      memcpy (j->in + j->in_len, line, len + 1);
      j->in_len += len;
      free (line);
      if (!k)
        break;
      p += k;
      n -= k;
    }
  pthread_cond_signal (&s->wake);
  pthread_mutex_unlock (&s->lock);
  return rc;
}

static int
dt_signal (struct backend_session *s, uint32_t job, int sig)
{
  pthread_mutex_lock (&s->lock);
  struct dt_job *j = find_job (s, job);
  int rc = 0;
  if (!j)
    rc = -ESRCH;
  else if (j->terminal && !j->running && !j->ended)
    daytona_terminal_cancel (j->terminal, sig); /* it never starts */
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
dt_resize (struct backend_session *s, uint32_t job, unsigned rows, unsigned cols)
{
  pthread_mutex_lock (&s->lock);
  struct dt_job *j = find_job (s, job);
  int rc = 0;
  if (!j)
    rc = -ESRCH;
  else if (!j->terminal)
    rc = -ENOTTY;
  else
    daytona_terminal_resize (j->terminal, rows, cols);
  pthread_mutex_unlock (&s->lock);
  return rc;
}

static int
dt_event_fd (struct backend_session *s)
{
  return s->efd;
}

static int
dt_next_event (struct backend_session *s, struct backend_event *ev, char **err)
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
dt_health (struct backend_session *s, char **err)
{
  bool gone = false;
  char *state = daytona_sandbox_state (s->main_h, &s->sb, &gone, err);
  int rc = state && !strcmp (state, "started") ? 0 : -1;
  if (rc < 0 && !*err)
    *err = gone ? xprintf ("the Daytona sandbox %s no longer exists", s->sb.name)
                : xprintf ("the Daytona sandbox %s is %s", s->sb.name, state ? state : "?");
  free (state);
  return rc;
}

/* A cloud sandbox: nothing of this host is reachable from it. */
static void
dt_reach (struct backend_session *s, struct backend_reach *r)
{
  (void) s;
  r->isolated = true;
  r->host_filesystem = false;
  r->host_network = false;
}

static int
dt_posture (struct backend_session *s, struct backend_posture *p, char **err)
{
  (void) s;
  (void) err;
  p->isolation = "cloud";
  p->namespaces[0] = NULL;
  p->seccomp = false;
  p->no_new_privs = false;
  p->capabilities = -1;
  p->network = "unknown";
  p->privilege = "daytona";
  p->verified = false;
  return 0;
}

/* ---- files (ops file_put, file_get) ---- */

#define FILES_MAX_AT_ONCE 4

/* The transfer itself: NULL when done, else why not (malloc'd). */
static char *
move_file (struct backend_session *s, struct daytona_http *h, struct dt_file *f)
{
  char *q = daytona_http_escape (f->remote);
  char *url = !q ? NULL : f->put ? tb_url (s, "/files/bulk-upload")
                                 : tb_url (s, "/files/download?path=%s", q);
  char *why = NULL, *err = NULL;
  /* One multipart request, the bulk upload's one file. */
  struct daytona_part parts[] = {
    { .name = "files[0].path", .value = f->remote },
    { .name = "files[0].file", .file_path = f->host_path, .filename = "airlock.tar" },
  };
  struct daytona_request rq = {
    .method = f->put ? "POST" : "GET", .url = url, .deadline_ms = f->deadline,
    .cancel = &s->stop, .parts = f->put ? parts : NULL, .nparts = f->put ? 2 : 0,
    .body_path = f->put ? NULL : f->host_path,
  };
  struct daytona_reply r;
  if (!url)
    why = xprintf ("out of memory");
  else if (daytona_call (h, &rq, &r, &err) < 0)
    why = err ? err : xprintf ("no answer");
  else
    {
      if (r.status < 200 || r.status > 299)
        {
          why = daytona_error_text (h, &r, f->put ? "uploading to the sandbox"
                                                  : "downloading from the sandbox");
          if (r.status == 404 || r.status == 400)
            {
              /* the sandbox itself may be gone: say so rather */
              char *gone = sandbox_gone_by (s, h);
              if (gone)
                {
                  free (why);
                  why = gone;
                }
            }
        }
      daytona_reply_free (&r);
    }
  free (url);
  if (!f->put)
    {
      /* the stream's file goes, whatever happened */
      char *del = q ? tb_url (s, "/files?path=%s", q) : NULL;
      struct daytona_request d = { .method = "DELETE", .url = del,
                                   .deadline_ms = monotonic_ms () + CALL_MS,
                                   .cancel = &s->stop };
      char *derr = NULL;
      if (del && daytona_call (h, &d, &r, &derr) == 0)
        daytona_reply_free (&r);
      free (derr);
      free (del);
    }
  free (q);
  return why;
}

static void *
file_thread (void *arg)
{
  struct dt_file *f = arg;
  struct backend_session *s = f->s;
  struct daytona_http *h = daytona_http_new (s->api_url, &s->auth);
  char *why = h ? move_file (s, h, f) : xprintf ("out of memory");
  daytona_http_free (h);
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

/* Transfers that ended are joined (under the lock: their threads hold
 * it last when they mark themselves finished, so the join is quick). */
static void
reap_files (struct backend_session *s)
{
  for (struct dt_file **p = &s->files; *p;)
    if ((*p)->finished)
      {
        struct dt_file *f = *p;
        *p = f->next;
        pthread_join (f->thread, NULL);
        free (f->host_path);
        free (f->remote);
        free (f);
      }
    else
      p = &(*p)->next;
}

static int
start_file (struct backend_session *s, uint32_t ticket, bool put, const char *host_path,
            const char *remote, uint64_t timeout_ms, char **err)
{
  struct dt_file *f = calloc (1, sizeof *f);
  if (!f || !(f->host_path = strdup (host_path)) || !(f->remote = strdup (remote)))
    {
      if (f)
        free (f->host_path);
      free (f);
      *err = xprintf ("out of memory");
      return -1;
    }
  f->s = s;
  f->ticket = ticket;
  f->put = put;
  f->deadline = monotonic_ms () + (timeout_ms ? timeout_ms : 3600 * 1000ULL);
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
  free (f->host_path);
  free (f->remote);
  free (f);
  return -1;
}

static int
dt_file_put (struct backend_session *s, uint32_t ticket, const char *host_path,
             uint64_t timeout_ms, char *remote, size_t remote_size, char **err)
{
  /* /tmp, by a name no one else in the sandbox can guess in advance */
  int n = snprintf (remote, remote_size, "/tmp/.airlock-upload-%s-%u.tar", s->token, ticket);
  if (n < 0 || (size_t) n >= remote_size)
    {
      *err = xprintf ("no room for the upload's path");
      return -1;
    }
  return start_file (s, ticket, true, host_path, remote, timeout_ms, err);
}

static int
dt_file_get (struct backend_session *s, uint32_t ticket, const char *remote,
             const char *host_path, uint64_t timeout_ms, char **err)
{
  return start_file (s, ticket, false, host_path, remote, timeout_ms, err);
}

/* At close: every transfer ends (s->stop cancels them) and is joined. */
static void
join_files (struct backend_session *s)
{
  pthread_mutex_lock (&s->lock);
  struct dt_file *f = s->files;
  s->files = NULL;
  pthread_mutex_unlock (&s->lock);
  while (f)
    {
      struct dt_file *n = f->next;
      pthread_join (f->thread, NULL);
      free (f->host_path);
      free (f->remote);
      free (f);
      f = n;
    }
}

static void
free_session (struct backend_session *s)
{
  for (struct dt_job *j = s->jobs, *n; j; j = n)
    {
      n = j->next;
      free_job (j);
    }
  event_queue_clear (&s->q);
  daytona_http_free (s->h);
  daytona_http_free (s->main_h);
  daytona_sandbox_clear (&s->sb);
  if (s->efd >= 0)
    close (s->efd);
  free (s->lost);
  free (s->session);
  free (s->api_url);
  free ((char *) s->auth.api_key);
  free ((char *) s->auth.jwt);
  free ((char *) s->auth.organization_id);
  free ((char *) s->auth.source);
  pthread_mutex_destroy (&s->lock);
  pthread_cond_destroy (&s->wake);
  free (s);
}

static void
dt_close (struct backend_session *s)
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
  char *err = NULL;
  if (s->sb.id && daytona_sandbox_release (s->main_h, &s->sb, s->keep, CLOSE_TIMEOUT_S, &err) < 0)
    fprintf (stderr, "airlock: session %s: %s\n", s->session, err ? err : "release failed");
  free (err);
  free_session (s);
}

static const struct backend_ops daytona_ops = {
  .name = "daytona",
  .signal = dt_signal,
  .spawn = dt_spawn,
  .write_stdin = dt_write_stdin,
  .resize = dt_resize, /* Daytona's PTY sessions: daytona_terminal.c */
  .event_fd = dt_event_fd,
  .next_event = dt_next_event,
  .health = dt_health,
  .reach = dt_reach,
  .posture = dt_posture,
  .oom_kills = NULL,
  .file_put = dt_file_put,
  .file_get = dt_file_get,
  .close = dt_close,
};

const struct backend_ops *
daytona_session_ops (void)
{
  return &daytona_ops;
}

static char *
dup_or_null (const char *s)
{
  return s ? strdup (s) : NULL;
}

/* The directory commands start in: daytona.workdir, else the toolbox's. */
static char *
first_cwd (struct backend_session *s, const char *workdir, char **err)
{
  if (workdir && *workdir)
    return strdup (workdir);
  char *url = tb_url (s, "/work-dir");
  struct daytona_reply r;
  int rc = url ? tb_call (s, "GET", url, NULL, NULL, false, &r, err) : -1;
  free (url);
  if (rc < 0)
    return NULL;
  const cJSON *d = r.json ? cJSON_GetObjectItemCaseSensitive (r.json, "dir") : NULL;
  char *cwd = rc == 1 && cJSON_IsString (d) && d->valuestring[0] == '/' ? strdup (d->valuestring)
                                                                        : NULL;
  if (!cwd)
    *err = rc == 1 ? xprintf ("the Daytona sandbox %s's toolbox did not say its working "
                              "directory; set daytona.workdir", s->sb.name)
                   : daytona_error_text (s->h, &r, "asking the sandbox's toolbox for its working directory");
  daytona_reply_free (&r);
  return cwd;
}

struct backend_session *
daytona_session_open (const struct daytona_session_options *o, char **cwd, char **err)
{
  struct backend_session *s = calloc (1, sizeof *s);
  if (!s)
    {
      *err = xprintf ("out of memory");
      return NULL;
    }
  pthread_mutex_init (&s->lock, NULL);
  pthread_condattr_t ca;
  pthread_condattr_init (&ca);
  pthread_condattr_setclock (&ca, CLOCK_MONOTONIC);
  pthread_cond_init (&s->wake, &ca);
  pthread_condattr_destroy (&ca);
  s->efd = eventfd (0, EFD_CLOEXEC | EFD_NONBLOCK);
  unsigned char rnd[8];
  if (getrandom (rnd, sizeof rnd, 0) != sizeof rnd)
    memset (rnd, 0, sizeof rnd);
  for (int i = 0; i < 8; i++)
    snprintf (s->token + 2 * i, 3, "%02x", rnd[i]);
  s->session = dup_or_null (o->session);
  s->api_url = dup_or_null (o->api_url);
  s->auth.api_key = dup_or_null (o->auth.api_key);
  s->auth.jwt = dup_or_null (o->auth.jwt);
  s->auth.organization_id = dup_or_null (o->auth.organization_id);
  s->auth.source = dup_or_null (o->auth.source);
  s->keep = o->keep;
  s->main_h = daytona_http_new (s->api_url, &s->auth);
  s->h = daytona_http_new (s->api_url, &s->auth);
  if (s->efd < 0 || !s->main_h || !s->h || !s->session)
    {
      *err = xprintf ("out of memory");
      free_session (s);
      return NULL;
    }
  if (daytona_sandbox_acquire (s->main_h, &o->sandbox, &s->sb, err) < 0)
    {
      free_session (s);
      return NULL;
    }
  /* The worker's client serves open's last call: nothing runs yet. */
  *cwd = first_cwd (s, o->workdir, err);
  if (!*cwd)
    {
      char *e = NULL;
      daytona_sandbox_release (s->main_h, &s->sb, s->keep, CLOSE_TIMEOUT_S, &e);
      free (e);
      free_session (s);
      return NULL;
    }
  if (pthread_create (&s->worker, NULL, worker, s) != 0)
    {
      *err = xprintf ("cannot start the session's worker thread");
      free (*cwd);
      *cwd = NULL;
      char *e = NULL;
      daytona_sandbox_release (s->main_h, &s->sb, s->keep, CLOSE_TIMEOUT_S, &e);
      free (e);
      free_session (s);
      return NULL;
    }
  s->worker_started = true;
  return s;
}
