/* SPDX-License-Identifier: MIT */
/* `airlock attach SESSION JOB`: our terminal on a running job again.  A
 * job on a terminal (exec with pty, e.g. `airlock exec --background
 * --pty`) gets our keys and window, its screen so far replayed from its
 * spool, then live; Ctrl-\ twice leaves it running.  A job without one
 * has no keyboard to give: its output is followed, read-only. */
#define _GNU_SOURCE
#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client_commands.h"
#include "pty_relay.h"

static const char attach_usage[]
    = "Usage: airlock attach SESSION JOB\n"
      "Our terminal on a running job of a session (a job id from airlock exec\n"
      "--background).  A job on a terminal (exec --pty --background) shows its\n"
      "screen so far, then live; what we type is its input, our window its size.\n"
      "Ctrl-\\ twice detaches: the job runs on, and attach comes back to it.\n"
      "A job without a terminal: its output so far, then live, read-only (Ctrl-C\n"
      "stops following).  The exit status is the job's when it ends, 0 after a\n"
      "detach.\n";

/* Whether job of session runs on a terminal: 1 yes, 0 no, 2 not among
 * its running or kept background jobs (a foreground one, or none: the
 * attach op says which); -1 after an error answer. */
static int
job_on_terminal (struct daemon_conn *c, const char *session, int job)
{
  cJSON *req = cJSON_CreateObject ();
  cJSON_AddStringToObject (req, "op", "jobs");
  cJSON_AddStringToObject (req, "session", session);
  cJSON *r = daemon_call (c, req);
  if (!cJSON_IsTrue (cJSON_GetObjectItem (r, "ok")))
    {
      print_error (r, "attach");
      cJSON_Delete (r);
      return -1;
    }
  int pty = 2;
  const cJSON *j;
  cJSON_ArrayForEach (j, cJSON_GetObjectItem (r, "jobs"))
    {
      const cJSON *id = cJSON_GetObjectItem (j, "job");
      if (cJSON_IsNumber (id) && id->valueint == job)
        pty = cJSON_IsTrue (cJSON_GetObjectItem (j, "pty"));
    }
  cJSON_Delete (r);
  return pty;
}

int
attach_command (int argc, char **argv)
{
  if (argc != 3 || argv[1][0] == '-')
    {
      bool help = argc == 2 && !strcmp (argv[1], "--help");
      fputs (attach_usage, help ? stdout : stderr);
      return help ? 0 : 2;
    }
  const char *session = argv[1];
  char *end = NULL;
  long job = strtol (argv[2], &end, 10);
  if (end == argv[2] || *end || job < 1 || job > 1000000000)
    {
      fprintf (stderr, "airlock attach: JOB '%s': a job id (a number from 1), as "
               "airlock exec --background printed it\n", argv[2]);
      return 2;
    }
  struct daemon_conn c = { .fd = connect_daemon ("airlock") };
  if (c.fd < 0)
    return 1;
  int rc = 1;
  int pty = job_on_terminal (&c, session, (int) job);
  if (pty == 0)
    fprintf (stderr, "airlock attach: job %ld does not run on a terminal (it was not "
             "started with --pty): following its output only; Ctrl-C stops following\n", job);
  else if (pty == 1 && isatty (0))
    fprintf (stderr, "airlock attach: job %ld of session %s; " PTY_RELAY_DETACH_NAME
             " detaches\r\n", job, session);
  if (pty >= 0)
    rc = pty_relay_attach (&c, session, (int) job, pty == 1);
  free (c.line);
  close (c.fd);
  return rc < 0 ? 1 : rc;
}
