/* SPDX-License-Identifier: MIT */
/* `airlock exec --pty`: our terminal becomes the command's.  Ours goes
 * raw (every key, Ctrl-C included, is the command's to read), keystrokes
 * go as job_stdin, the output comes back byte for byte, and a window
 * change here is a resize there.  Without a terminal on stdin, the pipe's
 * bytes are typed and its end is the terminal's EOF (^D). */
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
#include <unistd.h>

#include "supervisor_protocol.h"

enum { ID_EXEC = 1, ID_INTERRUPT = 2, ID_ANSWER = 3, ID_STDIN = 4, ID_RESIZE = 5 };

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
  if (!isatty (0) || tcgetattr (0, &saved) < 0)
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
  cJSON_AddNumberToObject (r, "job", job);
  return r;
}

/* Keystrokes (or the pipe's bytes) as text: a NUL cannot travel in a
 * JSON string here, and is dropped. */
static void
send_input (struct daemon_conn *c, const char *session, int job, const char *buf,
            size_t n, bool eof)
{
  char text[4097];
  size_t k = 0;
  for (size_t i = 0; i < n && k < sizeof text - 1; i++)
    if (buf[i])
      text[k++] = buf[i];
  text[k] = '\0';
  cJSON *r = job_request ("job_stdin", ID_STDIN, session, job);
  cJSON_AddStringToObject (r, "data", text);
  if (eof)
    cJSON_AddTrueToObject (r, "eof");
  daemon_send (c->fd, r);
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
  return signalfd (-1, &sigs, SFD_CLOEXEC);
}

int
pty_relay_run (struct daemon_conn *c, const char *session, cJSON *req,
               void (*on_approval) (struct daemon_conn *c, const cJSON *m))
{
  int sfd = signals_fd ();
  cJSON_AddNumberToObject (req, "id", ID_EXEC);
  if (daemon_send (c->fd, req) < 0)
    return -1;
  int job = 0, rc = -2;
  bool input_open = true;
  while (rc == -2)
    {
      struct pollfd p[3] = { { .fd = c->fd, .events = POLLIN },
                             { .fd = sfd, .events = POLLIN },
                             { .fd = job && input_open ? 0 : -1, .events = POLLIN } };
      if (!c->len && poll (p, 3, -1) < 0)
        continue;
      if (!c->len && (p[1].revents & POLLIN))
        {
          struct signalfd_siginfo si;
          if (read (sfd, &si, sizeof si) != sizeof si)
            continue;
          if (si.ssi_signo == SIGWINCH && job)
            {
              unsigned rows, cols;
              window_size (&rows, &cols);
              cJSON *r = job_request ("resize", ID_RESIZE, session, job);
              cJSON_AddNumberToObject (r, "rows", rows);
              cJSON_AddNumberToObject (r, "cols", cols);
              daemon_send (c->fd, r);
            }
          else if (si.ssi_signo != SIGWINCH)
            {
              /* Stopped from outside (raw, ^C is the command's key): the
               * command is interrupted, and we end with its result. */
              cJSON *r = cJSON_CreateObject ();
              cJSON_AddStringToObject (r, "op", "interrupt");
              cJSON_AddStringToObject (r, "session", session);
              cJSON_AddNumberToObject (r, "id", ID_INTERRUPT);
              daemon_send (c->fd, r);
            }
          continue;
        }
      if (!c->len && (p[2].revents & (POLLIN | POLLHUP | POLLERR)))
        {
          char buf[4096];
          ssize_t n = read (0, buf, sizeof buf);
          if (n < 0 && errno == EINTR)
            continue;
          input_open = n > 0;
          send_input (c, session, job, buf, n > 0 ? (size_t) n : 0, n <= 0);
          continue;
        }
      cJSON *m = daemon_read (c);
      if (!m)
        {
          restore_terminal ();
          fprintf (stderr, "airlock: the daemon went away\n");
          return -1;
        }
      const cJSON *id = cJSON_GetObjectItem (m, "id");
      const cJSON *ev = cJSON_GetObjectItem (m, "event");
      const char *event = cJSON_IsString (ev) ? ev->valuestring : "";
      bool ok = cJSON_IsTrue (cJSON_GetObjectItem (m, "ok"));
      int from = cJSON_IsNumber (id) ? id->valueint : 0;
      if (from != ID_EXEC)
        ; /* input, resize, interrupt, answer: a job that ended says so itself */
      else if (!strcmp (event, "approval"))
        on_approval (c, m);
      else if (!strcmp (event, "started"))
        {
          job = cJSON_GetObjectItem (m, "job")->valueint;
          enter_raw ();
        }
      else if (!strcmp (event, "output"))
        {
          const cJSON *d = cJSON_GetObjectItem (m, "data");
          if (cJSON_IsString (d))
            {
              fputs (d->valuestring, stdout);
              fflush (stdout);
            }
        }
      else if (!strcmp (event, "result"))
        {
          const cJSON *code = cJSON_GetObjectItem (m, "exit_code");
          restore_terminal ();
          rc = cJSON_IsNumber (code) ? code->valueint : print_error (m, "exec");
        }
      else if (!ok)
        {
          const cJSON *e = cJSON_GetObjectItem (cJSON_GetObjectItem (m, "error"), "code");
          restore_terminal ();
          rc = print_error (m, "exec");
          if (cJSON_IsString (e) && !strcmp (e->valuestring, "denied"))
            rc = EXIT_DENIED;
        }
      cJSON_Delete (m);
    }
  restore_terminal ();
  return rc;
}
