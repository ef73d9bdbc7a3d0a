/* SPDX-License-Identifier: MIT */
/* A daytona command on a terminal (see daytona_terminal.h). */
#define _GNU_SOURCE
#include "daytona_terminal.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "files_host.h"
#include "monotonic_ms.h"
#include "terminal_eof.h"
#include "websocket.h"
#include "xprintf.h"

#define CALL_MS 30000
#define CONNECTED_MS 10000   /* the "connected" control message */
#define MARKER_MS 30000      /* the login shell runs go */
#define BEFORE_MAX (64 << 10) /* what the shell prints before go: kept to quote */
#define TAIL_QUOTED 300

struct daytona_terminal {
  struct daytona_terminal_spec spec;
  struct daytona_terminal_hooks hooks;
  pthread_t thread;
  int efd;
  struct daytona_http *h;
  struct websocket *ws;
  /* Under lock (the daemon's thread writes, ours takes) */
  pthread_mutex_t lock;
  char *in;
  size_t in_len;
  bool mid_line;
  unsigned want_rows, want_cols;
  int cancel_sig;
  /* Ours */
  bool connected, started;
  char *before;              /* output before the marker */
  size_t before_len;
  char *failed;              /* the job failed: why */
};

static void
wake (struct daytona_terminal *t)
{
  uint64_t one = 1;
  if (write (t->efd, &one, sizeof one) < 0)
    {
      /* already non-zero */
    }
}

static char *
tb (struct daytona_terminal *t, const char *tail)
{
  return xprintf ("%s%s", t->spec.toolbox_url, tail);
}

/* A toolbox call: 1 a 2xx answer, 0 another (*r kept), -1 none (*err). */
static int
call (struct daytona_terminal *t, const char *method, const char *path, const cJSON *body,
      bool once, struct daytona_reply *r, char **err)
{
  char *url = tb (t, path);
  struct daytona_request rq = {
    .method = method, .url = url, .json = body, .deadline_ms = monotonic_ms () + CALL_MS,
    .cancel = t->spec.stop, .not_idempotent = once,
  };
  *r = (struct daytona_reply){ 0 };
  int rc = url ? daytona_call (t->h, &rq, r, err) : -1;
  free (url);
  if (rc < 0)
    {
      if (!*err)
        *err = xprintf ("out of memory");
      return -1;
    }
  return r->status >= 200 && r->status < 300;
}

/* Set the job's failure (the first one counts). */
static void
fail (struct daytona_terminal *t, char *why)
{
  if (!t->failed)
    t->failed = why ? why : xprintf ("out of memory");
  else
    free (why);
}

static void
fail_answer (struct daytona_terminal *t, struct daytona_reply *r, int rc, char *err,
             const char *what)
{
  if (rc < 0)
    fail (t, xprintf ("%s: %s", what, err));
  else
    fail (t, daytona_error_text (t->h, r, what));
  free (err);
  if (rc >= 0)
    daytona_reply_free (r);
}

/* The job directory, by an exec in a toolbox session of the job's name
 * (the script never passes through the terminal). */
static void
prepare (struct daytona_terminal *t)
{
  struct daytona_reply r;
  char *err = NULL;
  cJSON *b = cJSON_CreateObject ();
  cJSON_AddStringToObject (b, "sessionId", t->spec.name);
  int rc = b ? call (t, "POST", "/process/session", b, false, &r, &err) : -1;
  cJSON_Delete (b);
  if (rc == 0 && r.status == 409) /* made by an attempt we lost */
    rc = 1;
  if (rc != 1)
    {
      fail_answer (t, &r, rc, err, "creating a toolbox session for the terminal");
      return;
    }
  daytona_reply_free (&r);
  char *path = xprintf ("/process/session/%s/exec", t->spec.name);
  b = cJSON_CreateObject ();
  cJSON_AddStringToObject (b, "command", t->spec.prep);
  cJSON_AddBoolToObject (b, "runAsync", false);
  rc = path && b ? call (t, "POST", path, b, true, &r, &err) : -1;
  cJSON_Delete (b);
  free (path);
  if (rc != 1)
    {
      fail_answer (t, &r, rc, err, "preparing the terminal's job directory");
      return;
    }
  /* "P" alone on a line, else the wrapper's "F WORDS". */
  const cJSON *o = r.json ? cJSON_GetObjectItemCaseSensitive (r.json, "stdout") : NULL;
  if (!cJSON_IsString (o))
    o = r.json ? cJSON_GetObjectItemCaseSensitive (r.json, "output") : NULL;
  const char *out = cJSON_IsString (o) ? o->valuestring : "";
  const char *f = strstr (out, "F ");
  if (f && (f == out || f[-1] == '\n'))
    fail (t, xprintf ("%.*s", (int) strcspn (f + 2, "\n"), f + 2));
  else if (!strstr (out, "P\n") && strcmp (out, "P"))
    fail (t, xprintf ("the terminal's job directory was not written (the sandbox said \"%.200s\")",
                      out));
  daytona_reply_free (&r);
}

static void
create_pty (struct daytona_terminal *t)
{
  struct daytona_reply r;
  char *err = NULL;
  cJSON *b = cJSON_CreateObject ();
  cJSON *env = cJSON_AddObjectToObject (b, "envs");
  cJSON_AddStringToObject (b, "id", t->spec.name);
  cJSON_AddStringToObject (b, "cwd", "/");
  cJSON_AddStringToObject (env, "TERM", t->spec.term);
  cJSON_AddNumberToObject (b, "cols", t->spec.cols);
  cJSON_AddNumberToObject (b, "rows", t->spec.rows);
  /* Its shell starts when we connect: nothing it prints is missed. */
  cJSON_AddBoolToObject (b, "lazyStart", true);
  int rc = call (t, "POST", "/process/pty", b, true, &r, &err);
  cJSON_Delete (b);
  if (rc != 1)
    fail_answer (t, &r, rc, err, "creating the Daytona PTY session");
  else
    daytona_reply_free (&r);
}

/* The PTY session goes, and its shell's tree with it. */
static void
delete_pty (struct daytona_terminal *t)
{
  struct daytona_reply r;
  char *err = NULL;
  char *path = xprintf ("/process/pty/%s", t->spec.name);
  if (path && call (t, "DELETE", path, NULL, false, &r, &err) >= 0)
    daytona_reply_free (&r);
  free (path);
  free (err);
}

static void
take_output (struct daytona_terminal *t, const uint8_t *data, size_t n)
{
  if (t->started)
    {
      t->hooks.output (t->spec.session, t->spec.job, data, n);
      return;
    }
  char *b = realloc (t->before, t->before_len + n + 1);
  if (!b)
    return;
  memcpy (b + t->before_len, data, n);
  t->before = b;
  t->before_len += n;
  b[t->before_len] = 0;
  size_t ml = strlen (t->spec.marker);
  char *m = memmem (b, t->before_len, t->spec.marker, ml);
  if (m)
    {
      t->started = true;
      t->hooks.started (t->spec.session, t->spec.job);
      size_t at = (size_t) (m - b) + ml;
      if (at < t->before_len)
        t->hooks.output (t->spec.session, t->spec.job, b + at, t->before_len - at);
      t->before_len = (size_t) (m - b);
      return;
    }
  if (t->before_len > BEFORE_MAX)
    {
      size_t keep = BEFORE_MAX / 2;
      memmove (b, b + t->before_len - keep, keep);
      t->before_len = keep;
    }
}

static void
on_message (void *user, bool binary, const uint8_t *data, size_t len)
{
  struct daytona_terminal *t = user;
  if (!binary && len && data[0] == '{')
    {
      /* Daytona's control messages are text; the terminal's output comes
       * as binary messages (text that is not a control message is
       * output too, as Daytona's own clients take it). */
      cJSON *j = cJSON_ParseWithLength ((const char *) data, len);
      const cJSON *type = j ? cJSON_GetObjectItemCaseSensitive (j, "type") : NULL;
      const cJSON *status = j ? cJSON_GetObjectItemCaseSensitive (j, "status") : NULL;
      if (cJSON_IsString (type) && !strcmp (type->valuestring, "control") && cJSON_IsString (status))
        {
          if (!strcmp (status->valuestring, "connected"))
            t->connected = true;
          else
            {
              const cJSON *e = cJSON_GetObjectItemCaseSensitive (j, "error");
              fail (t, xprintf ("the Daytona terminal refused the connection: %s",
                                cJSON_IsString (e) ? e->valuestring : status->valuestring));
            }
          cJSON_Delete (j);
          return;
        }
      cJSON_Delete (j);
    }
  take_output (t, data, len);
}

/* What the shell printed before go, for error text (printable only). */
static char *
before_text (struct daytona_terminal *t)
{
  size_t from = t->before_len > TAIL_QUOTED ? t->before_len - TAIL_QUOTED : 0;
  char *q = malloc (t->before_len - from + 1);
  size_t n = 0;
  for (size_t i = from; q && i < t->before_len; i++)
    {
      unsigned char c = (unsigned char) t->before[i];
      if (c >= 0x20 && c < 0x7f)
        q[n++] = (char) c;
      else if ((c == '\n' || c == '\r') && n && q[n - 1] != ' ')
        q[n++] = ' ';
    }
  if (q)
    q[n] = 0;
  return q;
}

/* Typed input (kept until the command runs: before, the login shell
 * would read it), a resize or a cancel the daemon's thread left us. */
static void
serve_requests (struct daytona_terminal *t)
{
  pthread_mutex_lock (&t->lock);
  char *in = t->started ? t->in : NULL;
  size_t in_len = in ? t->in_len : 0;
  if (in)
    {
      t->in = NULL;
      t->in_len = 0;
    }
  unsigned rows = t->want_rows, cols = t->want_cols;
  t->want_rows = t->want_cols = 0;
  int sig = t->started ? 0 : t->cancel_sig;
  pthread_mutex_unlock (&t->lock);
  if (sig)
    fail (t, xprintf ("cancelled (signal %d)", sig));
  if (in_len && websocket_send (t->ws, true, in, in_len) < 0)
    fail (t, xprintf ("the Daytona terminal took no more input"));
  free (in);
  if (rows && cols)
    {
      struct daytona_reply r;
      char *err = NULL;
      char *path = xprintf ("/process/pty/%s/resize", t->spec.name);
      cJSON *b = cJSON_CreateObject ();
      cJSON_AddNumberToObject (b, "cols", cols);
      cJSON_AddNumberToObject (b, "rows", rows);
      int rc = path && b ? call (t, "POST", path, b, false, &r, &err) : -1;
      cJSON_Delete (b);
      free (path);
      /* A terminal that just ended (410) has no window to change. */
      if (rc == 0 && r.status != 410)
        {
          char *m = daytona_error_text (t->h, &r, "resizing the terminal");
          fprintf (stderr, "airlock: %s: %s\n", t->spec.name, m ? m : "resize failed");
          free (m);
        }
      if (rc < 0)
        fprintf (stderr, "airlock: %s: resizing the terminal: %s\n", t->spec.name, err);
      if (rc >= 0)
        daytona_reply_free (&r);
      free (err);
    }
}

/* Connected: type the go line, then relay until the terminal closes.
 * 1 closed (its close frame read), 0 failed or stopped. */
static int
relay (struct daytona_terminal *t)
{
  uint64_t connect_by = monotonic_ms () + CONNECTED_MS, marker_by = 0;
  bool typed = false;
  for (;;)
    {
      if (*t->spec.stop || t->failed)
        return 0;
      if (t->connected && !typed)
        {
          char *line = xprintf ("exec /bin/sh /tmp/.airlock-jobs/%s/go\n", t->spec.name);
          if (!line || websocket_send (t->ws, true, line, strlen (line)) < 0)
            fail (t, xprintf ("the Daytona terminal took no input"));
          free (line);
          typed = true;
          marker_by = monotonic_ms () + MARKER_MS;
        }
      uint64_t now = monotonic_ms ();
      if (!t->connected && now > connect_by)
        fail (t, xprintf ("the Daytona terminal did not say it was connected within %d s",
                          CONNECTED_MS / 1000));
      else if (typed && !t->started && now > marker_by)
        {
          char *q = before_text (t);
          fail (t, xprintf ("the sandbox's login shell on the Daytona terminal did not start "
                            "the command within %d s (it printed: \"%s\")",
                            MARKER_MS / 1000, q ? q : ""));
          free (q);
        }
      if (t->failed)
        return 0;
      struct pollfd p[2] = {
        { .fd = websocket_fd (t->ws),
          .events = (short) (POLLIN | (websocket_wants_write (t->ws) ? POLLOUT : 0)) },
        { .fd = t->efd, .events = POLLIN },
      };
      if (poll (p, 2, 200) < 0 && errno != EINTR)
        {
          fail (t, xprintf ("poll: %s", strerror (errno)));
          return 0;
        }
      uint64_t v;
      if (p[1].revents && read (t->efd, &v, sizeof v) < 0)
        {
          /* counted already */
        }
      char *err = NULL;
      int rc = websocket_pump (t->ws, &err);
      if (rc == 0)
        return 1;
      if (rc < 0)
        {
          fail (t, xprintf ("%s; a terminal cannot be resumed (Daytona keeps no output for a "
                            "client that is away), so the command was killed",
                            err));
          free (err);
          return 0;
        }
      /* Every round: what waited for the command's start goes now. */
      serve_requests (t);
    }
}

/* The exit status from the close frame's reason: {"exitCode":N,...}; -1. */
static int
close_status (struct daytona_terminal *t)
{
  cJSON *j = cJSON_Parse (websocket_close_reason (t->ws));
  const cJSON *c = j ? cJSON_GetObjectItemCaseSensitive (j, "exitCode") : NULL;
  int status = cJSON_IsNumber (c) ? c->valueint : websocket_close_code (t->ws) == 1000 ? 0 : -1;
  cJSON_Delete (j);
  return status;
}

/* After the end: the state report and exit status from the job
 * directory ("META-BASE64\nRC\n"), by a short exec. */
static void
finish (struct daytona_terminal *t, int status)
{
  char *cmd = xprintf ("J=/tmp/.airlock-jobs/%s; base64 -w0 < \"$J/meta\" 2>/dev/null; echo; "
                       "cat \"$J/rc\" 2>/dev/null; rm -rf \"$J\"",
                       t->spec.name);
  cJSON *b = cJSON_CreateObject ();
  cJSON_AddStringToObject (b, "command", cmd ? cmd : "true");
  cJSON_AddNumberToObject (b, "timeout", 20);
  struct daytona_reply r;
  char *err = NULL;
  int rc = cmd && b ? call (t, "POST", "/process/execute", b, false, &r, &err) : -1;
  cJSON_Delete (b);
  free (cmd);
  unsigned char *meta = NULL;
  ssize_t meta_len = 0;
  if (rc == 1)
    {
      const cJSON *res = r.json ? cJSON_GetObjectItemCaseSensitive (r.json, "result") : NULL;
      if (cJSON_IsString (res))
        {
          char *nl = strchr (res->valuestring, '\n');
          if (nl)
            {
              *nl = 0;
              meta_len = files_base64_decode (res->valuestring, &meta);
              if (meta_len < 0)
                meta_len = 0;
              char *e;
              long v = strtol (nl + 1, &e, 10);
              if (e != nl + 1 && v >= 0 && v < 256)
                status = (int) v;
            }
        }
    }
  if (rc >= 0)
    daytona_reply_free (&r);
  if (status < 0)
    {
      char *why = xprintf ("the Daytona terminal closed without an exit status (%s)",
                           err ? err : "no report in the sandbox");
      t->hooks.ended (t->spec.session, t->spec.job, 0, NULL, 0, why ? why : "no exit status");
      free (why);
    }
  else
    t->hooks.ended (t->spec.session, t->spec.job, status, meta, (size_t) meta_len, NULL);
  free (meta);
  free (err);
}

static void *
run (void *arg)
{
  struct daytona_terminal *t = arg;
  const char *headers[4];
  daytona_http_header_lines (t->h, headers);
  prepare (t);
  if (!t->failed && !*t->spec.stop)
    create_pty (t);
  if (!t->failed && !*t->spec.stop)
    {
      char *url = xprintf ("%s/process/pty/%s/connect", t->spec.toolbox_url, t->spec.name);
      char *err = NULL;
      t->ws = url ? websocket_open (url, headers, monotonic_ms () + CALL_MS, on_message, t, &err)
                  : NULL;
      free (url);
      if (!t->ws)
        fail (t, err ? err : xprintf ("out of memory"));
      else if (relay (t))
        {
          int status = close_status (t);
          websocket_free (t->ws);
          t->ws = NULL;
          if (!t->started)
            {
              char *q = before_text (t);
              fail (t, xprintf ("the Daytona terminal closed before the command started (it "
                                "printed: \"%s\")", q ? q : ""));
              free (q);
            }
          else
            {
              finish (t, status);
              return NULL;
            }
        }
    }
  websocket_free (t->ws);
  t->ws = NULL;
  if (*t->spec.stop)
    {
      delete_pty (t);
      t->hooks.ended (t->spec.session, t->spec.job, 0, NULL, 0, "the session was closed");
      return NULL;
    }
  delete_pty (t);
  pthread_mutex_lock (&t->lock);
  int sig = t->cancel_sig;
  pthread_mutex_unlock (&t->lock);
  if (sig && !t->started)
    t->hooks.ended (t->spec.session, t->spec.job, 128 + sig, NULL, 0, NULL);
  else /* (the session names the sandbox) */
    t->hooks.ended (t->spec.session, t->spec.job, 0, NULL, 0, t->failed);
  return NULL;
}

struct daytona_terminal *
daytona_terminal_start (const struct daytona_terminal_spec *spec,
                        const struct daytona_terminal_hooks *hooks, char **err)
{
  struct daytona_terminal *t = calloc (1, sizeof *t);
  if (!t)
    goto oom;
  t->spec = *spec;
  t->hooks = *hooks;
  t->efd = -1;
  pthread_mutex_init (&t->lock, NULL);
  t->spec.toolbox_url = strdup (spec->toolbox_url);
  t->spec.name = strdup (spec->name);
  t->spec.prep = strdup (spec->prep);
  t->spec.marker = strdup (spec->marker);
  t->spec.term = strdup (spec->term ? spec->term : "xterm-256color");
  t->h = daytona_http_new (spec->api_url, spec->auth);
  t->efd = eventfd (0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (!t->spec.toolbox_url || !t->spec.name || !t->spec.prep
      || !t->spec.marker || !t->spec.term || !t->h || t->efd < 0)
    goto oom;
  if (pthread_create (&t->thread, NULL, run, t) != 0)
    {
      *err = xprintf ("cannot start a thread for the terminal: %s", strerror (errno));
      t->thread = 0;
      daytona_terminal_free (t);
      return NULL;
    }
  return t;
oom:
  *err = xprintf ("out of memory");
  if (t)
    daytona_terminal_free (t);
  return NULL;
}

int
daytona_terminal_type (struct daytona_terminal *t, const void *data, size_t n, bool eof)
{
  pthread_mutex_lock (&t->lock);
  bool mid = terminal_mid_line (t->mid_line, data, n);
  const char *end = eof ? (mid ? "\004\004" : "\004") : "";
  size_t ne = strlen (end);
  int rc = 0;
  char *b = n + ne ? realloc (t->in, t->in_len + n + ne) : t->in;
  if (n + ne && !b)
    rc = -ENOMEM;
  else if (n + ne)
    {
      if (n)
        memcpy (b + t->in_len, data, n);
      memcpy (b + t->in_len + n, end, ne);
      t->in = b;
      t->in_len += n + ne;
      t->mid_line = ne ? false : mid;
    }
  pthread_mutex_unlock (&t->lock);
  wake (t);
  return rc;
}

void
daytona_terminal_resize (struct daytona_terminal *t, unsigned rows, unsigned cols)
{
  pthread_mutex_lock (&t->lock);
  t->want_rows = rows;
  t->want_cols = cols;
  pthread_mutex_unlock (&t->lock);
  wake (t);
}

void
daytona_terminal_cancel (struct daytona_terminal *t, int sig)
{
  pthread_mutex_lock (&t->lock);
  if (!t->cancel_sig || sig == SIGKILL)
    t->cancel_sig = sig;
  pthread_mutex_unlock (&t->lock);
  wake (t);
}

void
daytona_terminal_free (struct daytona_terminal *t)
{
  if (!t)
    return;
  if (t->thread)
    pthread_join (t->thread, NULL);
  websocket_free (t->ws);
  daytona_http_free (t->h);
  if (t->efd >= 0)
    close (t->efd);
  pthread_mutex_destroy (&t->lock);
  free ((char *) t->spec.toolbox_url);
  free ((char *) t->spec.name);
  free ((char *) t->spec.prep);
  free ((char *) t->spec.marker);
  free ((char *) t->spec.term);
  free (t->in);
  free (t->before);
  free (t->failed);
  free (t);
}
