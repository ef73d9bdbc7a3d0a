/* SPDX-License-Identifier: MIT */
/* airlock-session-driver: drives one local session through the backend
 * interface, for the tests of the supervisor and the local backend (the
 * session layer and its API build on the same interface).
 *
 *   airlock-session-driver STEP...
 *
 * Opens a session (workspace: the current directory; helper and
 * supervisor from AIRLOCK_HELPER / AIRLOCK_SUPERVISOR), runs each STEP in
 * order as `bash -c`, and closes it:
 *
 *   run:CMD               run CMD; its stdout to ours, stderr to ours
 *   stdin:TEXT:CMD        the same with TEXT (plus a newline) on its stdin
 *   kill:SEC:CMD          run CMD; after SEC seconds signal its whole tree
 *                         with SIGTERM, then SIGKILL half a second later
 *   ping                  health check
 *
 * After each job it prints "[exit N]" or "[signal N]" on a line of its
 * own.  Exit status: 0, or 1 when the session could not be opened or was
 * lost (the reason on stderr). */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "local_session.h"
#include "monotonic_ms.h"

static const struct backend_ops *ops;
static struct backend_session *session;

static int
run_job (uint32_t job, const char *cmd, const char *input, double kill_after)
{
  static const char *env[] = { "PATH=/usr/local/bin:/usr/bin:/bin", NULL };
  const char *argv[] = { "/bin/bash", "-c", cmd, NULL };
  char cwd[4096];
  if (!getcwd (cwd, sizeof cwd))
    return -1;
  struct backend_spawn sp = { .job = job, .argv = argv, .envp = env,
                              .cwd = cwd, .stdin_pipe = input != NULL };
  char *err = NULL;
  if (ops->spawn (session, &sp, &err) < 0)
    {
      fprintf (stderr, "driver: %s\n", err);
      return -1;
    }
  if (input)
    {
      char *line;
      if (asprintf (&line, "%s\n", input) < 0
          || ops->write_stdin (session, job, line, strlen (line), true) < 0)
        return -1;
      free (line);
    }
  long long term_at = kill_after > 0 ? monotonic_ms () + (long long) (kill_after * 1000) : -1;
  long long kill_at = -1;
  for (;;)
    {
      struct backend_event ev;
      int r = ops->next_event (session, &ev, &err);
      if (r < 0)
        {
          fprintf (stderr, "driver: %s\n", err);
          return -1;
        }
      if (r == 0)
        {
          long long t = monotonic_ms ();
          if (term_at >= 0 && t >= term_at)
            {
              ops->signal (session, job, SIGTERM);
              term_at = -1;
              kill_at = t + 500;
            }
          if (kill_at >= 0 && t >= kill_at)
            {
              ops->signal (session, job, SIGKILL);
              kill_at = -1;
            }
          struct pollfd p = { .fd = ops->event_fd (session), .events = POLLIN };
          poll (&p, 1, 50);
          continue;
        }
      if (ev.job != job)
        continue;
      if (ev.type == BACKEND_OUTPUT)
        {
          FILE *f = ev.stream == 2 ? stderr : stdout;
          fwrite (ev.data, 1, ev.len, f);
          fflush (f);
        }
      else if (ev.type == BACKEND_ERROR)
        fprintf (stderr, "driver: job %u: %s\n", job, ev.message);
      else if (ev.type == BACKEND_EXITED)
        {
          if (ev.signal)
            printf ("[signal %d]\n", ev.signal);
          else
            printf ("[exit %d]\n", ev.exit_code);
          fflush (stdout);
          return 0;
        }
    }
}

int
main (int argc, char **argv)
{
  static struct local_session_options o = { .log_fd = 2 };
  char cwd[4096];
  if (!getcwd (cwd, sizeof cwd))
    return 1;
  static const char *env[] = { "PATH=/usr/local/bin:/usr/bin:/bin", NULL };
  o.run.helper = getenv ("AIRLOCK_HELPER");
  o.supervisor = getenv ("AIRLOCK_SUPERVISOR");
  o.run.workdir = cwd;
  o.run.envp = env;
  if (!o.run.helper)
    {
      fprintf (stderr, "driver: set AIRLOCK_HELPER\n");
      return 1;
    }
  char *err = NULL;
  session = local_session_open (&o, &err);
  if (!session)
    {
      fprintf (stderr, "driver: %s\n", err);
      return 1;
    }
  ops = local_session_ops ();
  int rc = 0;
  for (int i = 1; i < argc && rc == 0; i++)
    {
      char *step = argv[i];
      uint32_t job = (uint32_t) i;
      if (!strncmp (step, "run:", 4))
        rc = run_job (job, step + 4, NULL, 0);
      else if (!strncmp (step, "stdin:", 6) && strchr (step + 6, ':'))
        {
          char *colon = strchr (step + 6, ':');
          *colon = '\0';
          rc = run_job (job, colon + 1, step + 6, 0);
        }
      else if (!strncmp (step, "kill:", 5) && strchr (step + 5, ':'))
        rc = run_job (job, strchr (step + 5, ':') + 1, NULL, atof (step + 5));
      else if (!strcmp (step, "ping"))
        {
          rc = ops->health (session, &err);
          printf (rc == 0 ? "[pong]\n" : "[no answer: %s]\n", err);
        }
      else
        {
          fprintf (stderr, "driver: unknown step '%s'\n", step);
          rc = -1;
        }
    }
  ops->close (session);
  return rc == 0 ? 0 : 1;
}
