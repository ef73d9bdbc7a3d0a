/* SPDX-License-Identifier: MIT */
/* A job on a terminal of the sandbox, driven from ours: `airlock exec
 * --pty` and `airlock shell` (an exec, relayed to its result) and
 * `airlock attach` (a running job, followed from its start until it ends
 * or we detach).  Our terminal goes raw (every key, Ctrl-C included, is
 * the job's to read), keystrokes go as job_stdin, the output comes back
 * byte for byte, and a window change here is a resize there.  Without a
 * terminal on stdin, the pipe's bytes are typed; for an exec its end is
 * the terminal's EOF (^D), for an attach it only stops the typing. */
#define _GNU_SOURCE
#include "pty_relay.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "supervisor_protocol.h"

enum { ID_EXEC = 1, ID_INTERRUPT = 2, ID_ANSWER = 3, ID_STDIN = 4, ID_RESIZE = 5,
       ID_ATTACH = 6 };

/* How long a first detach key waits for its second before it is sent to
 * the job as the key it also is. */
#define DETACH_HOLD_MS 1000
#define RUNNING (-2)

static struct termios saved;
static bool raw_on;

/* Our terminal as it was: at the result, and at exit whatever the path. */
static void
restore_terminal (void)
{
  if (raw_on)
    tcsetattr (0, TCSAFLUSH, &saved);
  raw_on = false;
}

static void
enter_raw (void)
{
  if (raw_on || !isatty (0) || tcgetattr (0, &saved) < 0)
    return;
  struct termios raw = saved;
  cfmakeraw (&raw);
  raw_on = tcsetattr (0, TCSAFLUSH, &raw) == 0;
  static bool registered;
  if (raw_on && !registered)
    registered = atexit (restore_terminal) == 0;
}

/* Our window, or 24x80 when stdin is no terminal. */
static void
window_size (unsigned *rows, unsigned *cols)
{
  struct winsize ws;
  *rows = 24;
  *cols = 80;
  if (ioctl (0, TIOCGWINSZ, &ws) == 0 && ws.ws_row && ws.ws_col)
    {
      *rows = ws.ws_row > SUP_MAX_PTY_SIDE ? SUP_MAX_PTY_SIDE : ws.ws_row;
      *cols = ws.ws_col > SUP_MAX_PTY_SIDE ? SUP_MAX_PTY_SIDE : ws.ws_col;
    }
}

void
pty_relay_request (cJSON *req)
{
  unsigned rows, cols;
  window_size (&rows, &cols);
  cJSON *pty = cJSON_AddObjectToObject (req, "pty");
  cJSON_AddNumberToObject (pty, "rows", rows);
  cJSON_AddNumberToObject (pty, "cols", cols);
  const char *term = getenv ("TERM");
  if (term && sup_term_ok (term) && strcmp (term, "dumb"))
    cJSON_AddStringToObject (pty, "term", term);
}

static cJSON *
job_request (const char *op, int id, const char *session, int job)
{
  cJSON *r = cJSON_CreateObject ();
  cJSON_AddStringToObject (r, "op", op);
  cJSON_AddNumberToObject (r, "id", id);
  cJSON_AddStringToObject (r, "session", session);
  if (job)
    cJSON_AddNumberToObject (r, "job", job);
  return r;
}

/* One relay: an exec's until its result, or an attach's until the job's
 * end or a detach. */
struct relay {
  struct daemon_conn *c;
  const char *session;
  int job;            /* 0 until an exec has started */
  bool attach;
  bool keys;          /* what we type goes to the job */
  bool input_open;
  bool held;          /* a first detach key, not sent yet */
  long long held_until;
  void (*on_approval) (struct daemon_conn *c, const cJSON *m);
  char **cwd;
  int rc;             /* RUNNING until the end */
};

static long long
now_ms (void)
{
  struct timespec t;
  clock_gettime (CLOCK_MONOTONIC, &t);
  return (long long) t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* Keystrokes (or the pipe's bytes) as text: a NUL cannot travel in a
 * JSON string here, and is dropped. */
static void
send_input (struct relay *r, const char *buf, size_t n, bool eof)
{
  char text[4097];
  size_t k = 0;
  for (size_t i = 0; i < n && k < sizeof text - 1; i++)
    if (buf[i])
      text[k++] = buf[i];
  text[k] = '\0';
  cJSON *q = job_request ("job_stdin", ID_STDIN, r->session, r->job);
  cJSON_AddStringToObject (q, "data", text);
  if (eof)
    cJSON_AddTrueToObject (q, "eof");
  daemon_send (r->c->fd, q);
}

static void
detach (struct relay *r, const char *why)
{
  restore_terminal ();
  fprintf (stderr, "%sairlock attach: %s; job %d runs on (airlock attach %s %d)\n",
           r->keys ? "\n" : "", why, r->job, r->session, r->job);
  r->rc = 0;
}

/* What we typed: for an attach, the detach keys are ours. */
static void
take_input (struct relay *r, const char *buf, ssize_t n)
{
  if (!r->attach)
    {
      r->input_open = n > 0;
      send_input (r, buf, n > 0 ? (size_t) n : 0, n <= 0);
      return;
    }
  if (n <= 0)
    {
      r->input_open = false;
      return;
    }
  char out[4100];
  size_t k = 0;
  for (ssize_t i = 0; i < n; i++)
    {
      if (r->held)
        {
          r->held = false;
          if (buf[i] == PTY_RELAY_DETACH_KEY)
            {
              if (k)
                send_input (r, out, k, false);
              return detach (r, "detached (" PTY_RELAY_DETACH_NAME ")");
            }
          out[k++] = PTY_RELAY_DETACH_KEY;
        }
      else if (buf[i] == PTY_RELAY_DETACH_KEY)
        {
          r->held = true;
          r->held_until = now_ms () + DETACH_HOLD_MS;
          continue;
        }
      out[k++] = buf[i];
    }
  if (k)
    send_input (r, out, k, false);
}

static int
signals_fd (void)
{
  sigset_t sigs;
  sigemptyset (&sigs);
  sigaddset (&sigs, SIGINT);
  sigaddset (&sigs, SIGTERM);
  sigaddset (&sigs, SIGHUP);
  sigaddset (&sigs, SIGWINCH);
  sigprocmask (SIG_BLOCK, &sigs, NULL);
  /* A daemon gone mid-write is an answer we read, not a death with our
   * terminal left raw. */
  signal (SIGPIPE, SIG_IGN);
  return signalfd (-1, &sigs, SFD_CLOEXEC);
}

static void
send_resize (struct relay *r)
{
  unsigned rows, cols;
  window_size (&rows, &cols);
  cJSON *q = job_request ("resize", ID_RESIZE, r->session, r->job);
  cJSON_AddNumberToObject (q, "rows", rows);
  cJSON_AddNumberToObject (q, "cols", cols);
  daemon_send (r->c->fd, q);
}

static void
take_signal (struct relay *r, int sig)
{
  if (sig == SIGWINCH)
    {
      if (r->job && r->keys && isatty (0))
        send_resize (r);
    }
  else if (r->attach)
    detach (r, sig == SIGINT ? "stopped following" : "interrupted");
  else
    {
      /* Stopped from outside (raw, ^C is the command's key): the command
       * is interrupted, and we end with its result. */
      daemon_send (r->c->fd, job_request ("interrupt", ID_INTERRUPT, r->session, 0));
    }
}

static void
write_output (const cJSON *m)
{
  const cJSON *d = cJSON_GetObjectItem (m, "data");
  const cJSON *st = cJSON_GetObjectItem (m, "stream");
  FILE *f = !raw_on && cJSON_IsString (st) && !strcmp (st->valuestring, "stderr") ? stderr
                                                                                  : stdout;
  if (cJSON_IsString (d))
    {
      fputs (d->valuestring, f);
      fflush (f);
    }
}

static const char *
error_code (const cJSON *m)
{
  const cJSON *e = cJSON_GetObjectItem (cJSON_GetObjectItem (m, "error"), "code");
  return cJSON_IsString (e) ? e->valuestring : "";
}

static void
exec_message (struct relay *r, const cJSON *m, const char *event, bool ok)
{
  if (!strcmp (event, "approval"))
    r->on_approval (r->c, m);
  else if (!strcmp (event, "started"))
    {
      r->job = cJSON_GetObjectItem (m, "job")->valueint;
      enter_raw ();
    }
  else if (!strcmp (event, "output"))
    write_output (m);
  else if (!strcmp (event, "result"))
    {
      const cJSON *code = cJSON_GetObjectItem (m, "exit_code");
      const cJSON *dir = cJSON_GetObjectItem (m, "cwd");
      restore_terminal ();
      r->rc = cJSON_IsNumber (code) ? code->valueint : print_error (m, "exec");
      if (r->cwd && cJSON_IsString (dir) && *dir->valuestring)
        *r->cwd = strdup (dir->valuestring);
    }
  else if (!ok)
    {
      restore_terminal ();
      r->rc = print_error (m, "exec");
      if (!strcmp (error_code (m), "denied"))
        r->rc = EXIT_DENIED;
      else if (!strcmp (error_code (m), "not_supported"))
        r->rc = PTY_RELAY_NOT_SUPPORTED;
    }
}

static void
attach_message (struct relay *r, const cJSON *m, const char *event, bool ok)
{
  if (!strcmp (event, "output"))
    write_output (m);
  else if (!strcmp (event, "end"))
    {
      const cJSON *code = cJSON_GetObjectItem (m, "exit_code");
      const cJSON *err = cJSON_GetObjectItem (m, "error");
      restore_terminal ();
      if (cJSON_IsNumber (code))
        r->rc = code->valueint;
      else
        {
          fprintf (stderr, "airlock attach: job %d was lost: %s\n", r->job,
                   cJSON_IsString (err) ? err->valuestring : "no exit status");
          r->rc = 1;
        }
    }
  else if (!ok)
    {
      restore_terminal ();
      r->rc = print_error (m, "attach");
    }
}

static int
relay (struct relay *r)
{
  int sfd = signals_fd ();
  while (r->rc == RUNNING)
    {
      struct pollfd p[3] = { { .fd = r->c->fd, .events = POLLIN },
                             { .fd = sfd, .events = POLLIN },
                             { .fd = r->job && r->keys && r->input_open ? 0 : -1,
                               .events = POLLIN } };
      int wait = r->held ? (int) (r->held_until - now_ms ()) : -1;
      int n = r->c->len ? 1 : poll (p, 3, wait < 0 && r->held ? 0 : wait);
      if (n < 0)
        continue;
      if (n == 0 && r->held)
        {
          /* One Ctrl-\ alone: the job's key after all. */
          r->held = false;
          char key = PTY_RELAY_DETACH_KEY;
          send_input (r, &key, 1, false);
          continue;
        }
      if (!r->c->len && (p[1].revents & POLLIN))
        {
          struct signalfd_siginfo si;
          if (read (sfd, &si, sizeof si) == sizeof si)
            take_signal (r, (int) si.ssi_signo);
          continue;
        }
      if (!r->c->len && (p[2].revents & (POLLIN | POLLHUP | POLLERR)))
        {
          char buf[4000];
          ssize_t got = read (0, buf, sizeof buf);
          if (got < 0 && errno == EINTR)
            continue;
          take_input (r, buf, got);
          continue;
        }
      if (!r->c->len && !(p[0].revents & (POLLIN | POLLHUP | POLLERR)))
        continue;
      cJSON *m = daemon_read (r->c);
      if (!m)
        {
          restore_terminal ();
          fprintf (stderr, "airlock: the daemon went away\n");
          r->rc = -1;
          break;
        }
      const cJSON *id = cJSON_GetObjectItem (m, "id");
      const cJSON *ev = cJSON_GetObjectItem (m, "event");
      const char *event = cJSON_IsString (ev) ? ev->valuestring : "";
      bool ok = cJSON_IsTrue (cJSON_GetObjectItem (m, "ok"));
      int from = cJSON_IsNumber (id) ? id->valueint : 0;
      /* Input, resize, interrupt, answer: a job that ended says so
       * itself. */
      if (from == ID_EXEC && !r->attach)
        exec_message (r, m, event, ok);
      else if (from == ID_ATTACH && r->attach)
        attach_message (r, m, event, ok);
      cJSON_Delete (m);
    }
  restore_terminal ();
  if (sfd >= 0)
    close (sfd);
  return r->rc;
}

int
pty_relay_run (struct daemon_conn *c, const char *session, cJSON *req,
               void (*on_approval) (struct daemon_conn *c, const cJSON *m), char **cwd)
{
  struct relay r = { .c = c, .session = session, .keys = true, .input_open = true,
                     .on_approval = on_approval, .cwd = cwd, .rc = RUNNING };
  cJSON_AddNumberToObject (req, "id", ID_EXEC);
  if (daemon_send (c->fd, req) < 0)
    return -1;
  return relay (&r);
}

int
pty_relay_attach (struct daemon_conn *c, const char *session, int job, bool keys)
{
  struct relay r = { .c = c, .session = session, .job = job, .attach = true, .keys = keys,
                     .input_open = true, .rc = RUNNING };
  if (keys && isatty (0))
    {
      enter_raw ();
      send_resize (&r); /* the job's screen at our size: a full-screen program redraws */
    }
  if (daemon_send (c->fd, job_request ("attach", ID_ATTACH, session, job)) < 0)
    {
      restore_terminal ();
      return -1;
    }
  return relay (&r);
}
