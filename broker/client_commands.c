/* SPDX-License-Identifier: MIT */
/* The commands that talk to the per-user daemon: `airlock serve`,
 * `airlock exec`, `airlock session ls|open|close`, `airlock daemon
 * status|stop`; and the way to the daemon program (airlock-daemon, which
 * holds the approval gate and the backends), started on demand or run
 * for `airlock daemon` and `airlock policy`. */
#define _GNU_SOURCE
#include "client_commands.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "approval_client.h"
#include "approval_prompt.h"
#include "config.h"
#include "installed_file.h"
#include "pty_relay.h"
#include "runtime_dir.h"

#define START_TIMEOUT_MS 5000

#ifndef DAEMON_PATH
#define DAEMON_PATH "/usr/local/libexec/airlock/airlock-daemon"
#endif

static const char *
daemon_program (void)
{
  const char *p = getenv ("AIRLOCK_DAEMON");
  return p && *p ? p : DAEMON_PATH;
}

/* "cannot run PATH: why (where the path came from)"; no allocation:
 * usable between fork and exec. */
static void
say_cannot_run (int fd, const char *who, const char *path, int e)
{
  char hint[256];
  dprintf (fd, "%s%scannot run %s: %s (%s)\n", who ? who : "", who ? ": " : "",
           path, strerror (e),
           e == ENOENT || e == ENOTDIR
             ? installed_file_hint (path, "AIRLOCK_DAEMON", hint, sizeof hint)
             : "install airlock, or point AIRLOCK_DAEMON at airlock-daemon");
}

int
exec_daemon_program (char **argv, int status)
{
  const char *path = daemon_program ();
  execv (path, argv);
  say_cannot_run (2, "airlock", path, errno);
  return status;
}

static int
try_connect (const char *dir)
{
  struct sockaddr_un addr = { .sun_family = AF_UNIX };
  snprintf (addr.sun_path, sizeof addr.sun_path, "%s/" DAEMON_SOCKET, dir);
  int fd = socket (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd >= 0 && connect (fd, (struct sockaddr *) &addr, sizeof addr) == 0)
    return fd;
  if (fd >= 0)
    close (fd);
  return -1;
}

/* Start `airlock daemon` detached, its output in the runtime dir's log,
 * and wait until it listens or gives up.  It is told a pipe
 * (AIRLOCK_DAEMON_READY_FD) on which it writes why it cannot start (a
 * broken configuration or rule file, no audit log) and which it closes
 * once it listens, so that the error is said here, not buried in the
 * log.  NULL when it started (or another daemon was starting at the same
 * time), else that message, malloc'd. */
static char *
start_daemon (const char *dir)
{
  int ready[2];
  if (pipe2 (ready, O_CLOEXEC) < 0)
    return strdup (strerror (errno));
  const char *path = daemon_program ();
  pid_t pid = fork ();
  if (pid == 0)
    {
      if (fork () != 0) /* double fork: the daemon is nobody's child */
        _exit (0);
      setsid ();
      int w = fcntl (ready[1], F_DUPFD, 10);
      char log[4200];
      snprintf (log, sizeof log, "%s/" DAEMON_LOG, dir);
      int fd = open (log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
      int null = open ("/dev/null", O_RDONLY | O_CLOEXEC);
      if (w < 0 || fd < 0 || null < 0 || dup2 (null, 0) < 0 || dup2 (fd, 1) < 0
          || dup2 (fd, 2) < 0 || dup2 (w, 3) < 0)
        _exit (1);
      /* Nothing else of the caller's: a pipe it waits on must not stay
       * open. */
      close_range (4, ~0U, 0);
      setenv ("AIRLOCK_DAEMON_READY_FD", "3", 1);
      char *const argv[] = { (char *) "airlock", (char *) "daemon", NULL };
      execv (path, argv);
      say_cannot_run (3, NULL, path, errno);
      _exit (1);
    }
  close (ready[1]);
  if (pid > 0)
    waitpid (pid, NULL, 0);
  char msg[4096];
  size_t len = 0;
  for (;;)
    {
      struct pollfd p = { .fd = ready[0], .events = POLLIN };
      int n = poll (&p, 1, START_TIMEOUT_MS);
      if (n < 0 && errno == EINTR)
        continue;
      ssize_t got = n > 0 ? read (ready[0], msg + len, sizeof msg - 1 - len) : 0;
      if (got < 0 && errno == EINTR)
        continue;
      if (got <= 0 || (len += (size_t) got) == sizeof msg - 1)
        break;
    }
  close (ready[0]);
  while (len && msg[len - 1] == '\n')
    len--;
  msg[len] = '\0';
  return len ? strdup (msg) : NULL;
}

int
connect_daemon (const char *who)
{
  char dir[4096];
  char *err = NULL;
  if (runtime_dir (dir, sizeof dir, &err) < 0)
    {
      fprintf (stderr, "%s: %s\n", who, err);
      free (err);
      return -1;
    }
  int fd = try_connect (dir);
  if (fd >= 0)
    return fd;
  if ((err = start_daemon (dir)))
    {
      fprintf (stderr, "%s: %s\n", who, err);
      free (err);
      return -1;
    }
  /* Started, or another client's daemon is starting: it listens soon. */
  for (int waited = 0; waited < START_TIMEOUT_MS; waited += 10)
    {
      if ((fd = try_connect (dir)) >= 0)
        return fd;
      usleep (10 * 1000);
    }
  fprintf (stderr, "%s: the daemon did not start; see %s/" DAEMON_LOG "\n", who, dir);
  return -1;
}

/* ---- one request, one answer ---- */

static int
send_json (int fd, cJSON *req)
{
  char *text = cJSON_PrintUnformatted (req);
  cJSON_Delete (req);
  if (!text)
    return -1;
  size_t n = strlen (text);
  text[n] = '\n';
  int rc = 0;
  for (size_t off = 0; off < n + 1 && rc == 0;)
    {
      ssize_t w = write (fd, text + off, n + 1 - off);
      if (w <= 0)
        rc = -1;
      else
        off += (size_t) w;
    }
  free (text);
  return rc;
}

/* The next message from the daemon, or NULL when it hung up. */
static cJSON *
read_json (struct daemon_conn *c)
{
  size_t cap = 0, len = 0;
  free (c->line);
  c->line = NULL;
  for (;;)
    {
      char *nl = memchr (c->buf, '\n', c->len);
      size_t take = nl ? (size_t) (nl - c->buf) : c->len;
      if (len + take + 1 > cap)
        {
          cap = (len + take + 1) * 2;
          char *p = realloc (c->line, cap);
          if (!p)
            return NULL;
          c->line = p;
        }
      memcpy (c->line + len, c->buf, take);
      len += take;
      size_t consumed = nl ? take + 1 : take;
      memmove (c->buf, c->buf + consumed, c->len - consumed);
      c->len -= consumed;
      if (nl)
        {
          c->line[len] = '\0';
          return cJSON_Parse (c->line);
        }
      ssize_t n = read (c->fd, c->buf, sizeof c->buf);
      if (n <= 0)
        return NULL;
      c->len = (size_t) n;
    }
}

int
daemon_send (int fd, cJSON *req)
{
  return send_json (fd, req);
}

cJSON *
daemon_read (struct daemon_conn *c)
{
  return read_json (c);
}

cJSON *
daemon_call (struct daemon_conn *c, cJSON *req)
{
  if (send_json (c->fd, req) < 0)
    return NULL;
  return read_json (c);
}

int
print_error (const cJSON *r, const char *what)
{
  const cJSON *e = cJSON_GetObjectItemCaseSensitive (r, "error");
  const cJSON *m = cJSON_GetObjectItemCaseSensitive (e, "message");
  fprintf (stderr, "airlock %s: %s\n", what,
           cJSON_IsString (m) ? m->valuestring : "the daemon went away");
  return 1;
}

/* ---- airlock session ---- */

static const char session_usage[]
    = "Usage: airlock session ls\n"
      "       airlock session open NAME [--backend B] [--image I] [--workdir DIR]\n"
      "                                 [--host [USER@]HOST[:PORT]] (ssh)\n"
      "                                 [--network M] [--memory N] [--idle-timeout S]\n"
      "                                 [--env NAME=VALUE]...\n"
      "       airlock session close NAME\n"
      "The session keeps the settings resolved when it opens: the flags, then\n"
      "your AIRLOCK_* variables, then the configuration files (airlock config show).\n";

/* "NAME=VALUE" into obj; false on a malformed one. */
static bool
add_env_arg (cJSON *obj, const char *arg)
{
  const char *eq = strchr (arg, '=');
  if (!eq || eq == arg)
    return false;
  char *name = strndup (arg, (size_t) (eq - arg));
  cJSON_DeleteItemFromObjectCaseSensitive (obj, name);
  cJSON_AddStringToObject (obj, name, eq + 1);
  free (name);
  return true;
}

/* The open request of `airlock session open NAME [options]`; NULL after
 * a usage message. */
static cJSON *
open_request (int argc, char **argv)
{
  static const struct option opts[] = {
    { "backend", required_argument, NULL, 'b' },
    { "image", required_argument, NULL, 'i' },
    { "workdir", required_argument, NULL, 'w' },
    { "network", required_argument, NULL, 'n' },
    { "memory", required_argument, NULL, 'm' },
    { "idle-timeout", required_argument, NULL, 't' },
    { "env", required_argument, NULL, 'e' },
    { "host", required_argument, NULL, 'H' },
    { NULL, 0, NULL, 0 },
  };
  cJSON *req = cJSON_CreateObject ();
  cJSON_AddStringToObject (req, "op", "open");
  cJSON_AddStringToObject (req, "session", argv[2]);
  cJSON *env = cJSON_CreateObject ();
  char *workdir = NULL;
  optind = 1;
  int opt;
  bool bad = false;
  while (!bad && (opt = getopt_long (argc - 2, argv + 2, "+", opts, NULL)) != -1)
    {
      char *end = NULL;
      switch (opt)
        {
        case 'b': cJSON_AddStringToObject (req, "backend", optarg); break;
        case 'i': cJSON_AddStringToObject (req, "image", optarg); break;
        case 'n': cJSON_AddStringToObject (req, "network", optarg); break;
        case 'm': cJSON_AddStringToObject (req, "memory", optarg); break;
        case 'H': cJSON_AddStringToObject (req, "host", optarg); break;
        case 'w':
          free (workdir);
          if (!(workdir = realpath (optarg, NULL)))
            {
              fprintf (stderr, "airlock session: --workdir %s: %s\n", optarg, strerror (errno));
              bad = true;
            }
          break;
        case 't':
          {
            long v = strtol (optarg, &end, 10);
            if (end == optarg || *end || v < 1)
              {
                fprintf (stderr, "airlock session: --idle-timeout '%s': a number of "
                         "seconds (1 or more)\n", optarg);
                bad = true;
              }
            else
              cJSON_AddNumberToObject (req, "idle_timeout", (double) v);
            break;
          }
        case 'e':
          if (!add_env_arg (env, optarg))
            {
              fprintf (stderr, "airlock session: --env '%s': expected NAME=VALUE\n", optarg);
              bad = true;
            }
          break;
        default: bad = true; fputs (session_usage, stderr); break;
        }
    }
  if (!bad && optind < argc - 2)
    {
      fputs (session_usage, stderr);
      bad = true;
    }
  if (bad)
    {
      free (workdir);
      cJSON_Delete (env);
      cJSON_Delete (req);
      return NULL;
    }
  if (!workdir)
    workdir = realpath (".", NULL);
  cJSON_AddStringToObject (req, "workdir", workdir ? workdir : "/");
  free (workdir);
  if (cJSON_GetArraySize (env))
    cJSON_AddItemToObject (req, "env", env);
  else
    cJSON_Delete (env);
  cJSON_AddItemToObject (req, "client_env", config_client_env (NULL));
  return req;
}

int
session_command (int argc, char **argv)
{
  if (argc < 2 || !strcmp (argv[1], "--help"))
    {
      fputs (session_usage, argc < 2 ? stderr : stdout);
      return argc < 2 ? 2 : 0;
    }
  const char *verb = argv[1];
  cJSON *req = NULL;
  if (!strcmp (verb, "ls") && argc == 2)
    {
      req = cJSON_CreateObject ();
      cJSON_AddStringToObject (req, "op", "list");
    }
  else if (!strcmp (verb, "close") && argc == 3)
    {
      req = cJSON_CreateObject ();
      cJSON_AddStringToObject (req, "op", "close");
      cJSON_AddStringToObject (req, "session", argv[2]);
      /* a person closes any of their sessions, an agent's (MCP) too */
      cJSON_AddBoolToObject (req, "force", true);
    }
  else if (!strcmp (verb, "open") && argc >= 3 && argv[2][0] != '-')
    {
      if (!(req = open_request (argc, argv)))
        return 2;
    }
  else
    {
      fputs (session_usage, stderr);
      return 2;
    }
  struct daemon_conn c = { .fd = connect_daemon ("airlock") };
  if (c.fd < 0)
    {
      cJSON_Delete (req);
      return 1;
    }
  cJSON *r = daemon_call (&c, req);
  /* A slow open (an image pull) says how it is going. */
  for (const cJSON *ev; (ev = cJSON_GetObjectItem (r, "event"))
                        && cJSON_IsString (ev) && !strcmp (ev->valuestring, "progress");)
    {
      const cJSON *m = cJSON_GetObjectItem (r, "message");
      if (cJSON_IsString (m))
        fprintf (stderr, "airlock: %s\n", m->valuestring);
      cJSON_Delete (r);
      r = read_json (&c);
    }
  int rc = 0;
  const cJSON *w;
  cJSON_ArrayForEach (w, cJSON_GetObjectItem (r, "warnings"))
    if (cJSON_IsString (w))
      fprintf (stderr, "airlock: warning: %s\n", w->valuestring);
  if (!cJSON_IsTrue (cJSON_GetObjectItem (r, "ok")))
    rc = print_error (r, "session");
  else if (!strcmp (verb, "ls"))
    {
      const cJSON *s;
      cJSON_ArrayForEach (s, cJSON_GetObjectItem (r, "sessions"))
        {
          const cJSON *cwd = cJSON_GetObjectItem (s, "cwd");
          const cJSON *b = cJSON_GetObjectItem (s, "backend");
          const cJSON *h = cJSON_GetObjectItem (s, "config_hash");
          printf ("%-20s %-8s %-8s %-16s %s\n", cJSON_GetObjectItem (s, "session")->valuestring,
                  cJSON_GetObjectItem (s, "state")->valuestring,
                  cJSON_IsString (b) ? b->valuestring : "-",
                  cJSON_IsString (h) ? h->valuestring : "-",
                  cJSON_IsString (cwd) ? cwd->valuestring : "-");
        }
    }
  cJSON_Delete (r);
  free (c.line);
  close (c.fd);
  return rc;
}

/* ---- airlock exec ---- */

/* SIGINT and SIGTERM as events: they interrupt the running command. */
static int
block_stop_signals (void)
{
  sigset_t sigs;
  sigemptyset (&sigs);
  sigaddset (&sigs, SIGINT);
  sigaddset (&sigs, SIGTERM);
  sigprocmask (SIG_BLOCK, &sigs, NULL);
  return signalfd (-1, &sigs, SFD_CLOEXEC);
}

/* The approval mode of our execs: policy.mode, where auto is interactive
 * when a person is at the terminal. */
static const char *
client_approval_mode (void)
{
  static const char *mode;
  if (!mode)
    {
      char *err = NULL;
      struct airlock_config *cfg = config_load (&err);
      free (err);
      mode = cfg ? approval_default_mode_name (cfg, approval_tty_available ())
                 : "deny";
      config_free (cfg);
    }
  return mode;
}

/* An approval event: ask the person, send the answer. */
static void
answer_approval (struct daemon_conn *c, const cJSON *m)
{
  const cJSON *num = cJSON_GetObjectItem (m, "approval");
  const cJSON *cmd = cJSON_GetObjectItem (m, "command");
  const cJSON *tmo = cJSON_GetObjectItem (m, "timeout_ms");
  const char *lines[16];
  char *owned[16];
  size_t n = 0;
  const cJSON *r;
  cJSON_ArrayForEach (r, cJSON_GetObjectItem (m, "rules"))
    {
      const cJSON *id = cJSON_GetObjectItem (r, "id");
      const cJSON *desc = cJSON_GetObjectItem (r, "description");
      if (n < 16 && cJSON_IsString (id) && cJSON_IsString (desc)
          && asprintf (&owned[n], "%s (%s)", desc->valuestring, id->valuestring) >= 0)
        {
          lines[n] = owned[n];
          n++;
        }
    }
  const char *answer = approval_prompt (cJSON_IsString (cmd) ? cmd->valuestring : "?",
                                        lines, n,
                                        cJSON_IsNumber (tmo) ? (long long) tmo->valuedouble
                                                             : 60000);
  for (size_t i = 0; i < n; i++)
    free (owned[i]);
  if (!strcmp (answer, "timeout"))
    return; /* the daemon's own deadline denies it, as a timeout */
  cJSON *req = cJSON_CreateObject ();
  cJSON_AddStringToObject (req, "op", "answer");
  cJSON_AddNumberToObject (req, "id", 3);
  cJSON_AddNumberToObject (req, "approval", cJSON_IsNumber (num) ? num->valuedouble : 0);
  cJSON_AddStringToObject (req, "answer", answer);
  send_json (c->fd, req);
}

/* Send one exec request (taking req) and relay its output live until the
 * result.  Returns the command's exit status (1 on an error answer, -1
 * when the daemon went away); *cwd, if asked, gets the session's cwd. */
static int
run_exec (struct daemon_conn *c, int sfd, const char *session, cJSON *req, char **cwd)
{
  cJSON_AddNumberToObject (req, "id", 1);
  cJSON_AddStringToObject (req, "approval", client_approval_mode ());
  if (send_json (c->fd, req) < 0)
    return -1;
  for (;;)
    {
      struct pollfd p[2] = { { .fd = c->fd, .events = POLLIN }, { .fd = sfd, .events = POLLIN } };
      if (!c->len && poll (p, 2, -1) < 0)
        continue;
      if (!c->len && (p[1].revents & POLLIN))
        {
          struct signalfd_siginfo si;
          if (read (sfd, &si, sizeof si) > 0)
            {
              cJSON *intr = cJSON_CreateObject ();
              cJSON_AddStringToObject (intr, "op", "interrupt");
              cJSON_AddStringToObject (intr, "session", session);
              cJSON_AddNumberToObject (intr, "id", 2);
              send_json (c->fd, intr);
            }
          continue;
        }
      cJSON *m = read_json (c);
      if (!m)
        {
          fprintf (stderr, "airlock: the daemon went away\n");
          return -1;
        }
      const cJSON *id = cJSON_GetObjectItem (m, "id");
      const cJSON *ev = cJSON_GetObjectItem (m, "event");
      int rc = -2;
      const cJSON *ecode = cJSON_GetObjectItem (cJSON_GetObjectItem (m, "error"), "code");
      if (cJSON_IsNumber (id) && (id->valueint == 2 || id->valueint == 3)
          && cJSON_IsTrue (cJSON_GetObjectItem (m, "ok")))
        ; /* the interrupt's or the answer's own reply */
      else if (cJSON_IsString (ev) && !strcmp (ev->valuestring, "approval"))
        answer_approval (c, m);
      else if (cJSON_IsString (ecode) && !strcmp (ecode->valuestring, "denied"))
        {
          print_error (m, "exec");
          rc = EXIT_DENIED;
        }
      else if (!cJSON_IsTrue (cJSON_GetObjectItem (m, "ok")) && !cJSON_IsString (ev))
        rc = print_error (m, "exec");
      else if (cJSON_IsString (ev) && !strcmp (ev->valuestring, "output"))
        {
          const cJSON *d = cJSON_GetObjectItem (m, "data");
          const cJSON *st = cJSON_GetObjectItem (m, "stream");
          FILE *f = cJSON_IsString (st) && !strcmp (st->valuestring, "stderr") ? stderr : stdout;
          if (cJSON_IsString (d))
            fputs (d->valuestring, f);
          fflush (f);
        }
      else if (cJSON_IsString (ev) && !strcmp (ev->valuestring, "started"))
        ; /* the job's id: for a client that comes back (attach) */
      else if (cJSON_IsString (ev) && !strcmp (ev->valuestring, "result"))
        {
          const cJSON *code = cJSON_GetObjectItem (m, "exit_code");
          const cJSON *spill = cJSON_GetObjectItem (m, "spill_path");
          const cJSON *spool = cJSON_GetObjectItem (m, "spool_error");
          const cJSON *dir = cJSON_GetObjectItem (m, "cwd");
          /* lost by the backend: an error, not the command's status */
          rc = cJSON_IsNumber (code) ? code->valueint : print_error (m, "exec");
          if (cJSON_IsString (spill))
            fprintf (stderr, "airlock: the full output is in %s\n", spill->valuestring);
          if (cJSON_IsString (spool))
            fprintf (stderr, "airlock: %s\n", spool->valuestring);
          if (cJSON_IsTrue (cJSON_GetObjectItem (m, "kill_pending")))
            fprintf (stderr, "airlock: the sandbox could not be reached to stop the "
                     "command; the kill is retried when it can be (kill_pending)\n");
          if (cwd && cJSON_IsString (dir))
            *cwd = strdup (dir->valuestring);
        }
      else if (cJSON_IsNumber (cJSON_GetObjectItem (m, "job")))
        {
          printf ("%d\n", cJSON_GetObjectItem (m, "job")->valueint);
          rc = 0;
        }
      cJSON_Delete (m);
      if (rc != -2)
        return rc;
    }
}

static const char exec_usage[]
    = "Usage: airlock exec SESSION [--timeout SEC] [--cwd DIR] [--env NAME=VALUE]...\n"
      "                    [--stdin | --background | --pty] -- COMMAND\n"
      "       airlock exec SESSION [OPTIONS] --command-file FILE\n"
      "Run COMMAND (a shell command line) in the named session: cd and export\n"
      "carry over between commands.  Output is live; the exit status is the\n"
      "command's (124 timeout, 130 interrupted, 77 refused by the approval\n"
      "gate).  --timeout takes fractions (0.5).  --env sets a variable for this\n"
      "command only.  --stdin sends our standard input to the command.\n"
      "--background prints a job id at once.  --pty runs COMMAND on a terminal\n"
      "of the sandbox, ours (raw meanwhile) its keyboard and screen, for\n"
      "programs that need one (bash -i, python3 -i, top); with --background\n"
      "it runs on a terminal of our window's size, for airlock attach.\n"
      "--command-file reads COMMAND\n"
      "from FILE (- for standard input), so that it is not in our argv,\n"
      "where any local user can read it.\n";

/* All of fd's bytes, NUL-terminated; *n: how many (NULL: out of memory). */
static char *
slurp_fd (int fd, size_t *n_out)
{
  size_t cap = 65536, len = 0;
  char *buf = malloc (cap);
  for (ssize_t n; buf && (n = read (fd, buf + len, cap - len - 1)) > 0;)
    {
      len += (size_t) n;
      if (len + 1 == cap)
        {
          char *p = realloc (buf, cap *= 2);
          if (!p)
            {
              free (buf);
              return NULL;
            }
          buf = p;
        }
    }
  if (buf)
    buf[len] = '\0';
  if (n_out)
    *n_out = len;
  return buf;
}

/* The command of --command-file FILE ("-": stdin), or NULL after saying
 * why. */
static char *
read_command_file (const char *file)
{
  int fd = strcmp (file, "-") ? open (file, O_RDONLY | O_CLOEXEC) : 0;
  if (fd < 0)
    {
      fprintf (stderr, "airlock exec: --command-file %s: %s\n", file, strerror (errno));
      return NULL;
    }
  size_t n = 0;
  char *cmd = slurp_fd (fd, &n);
  if (fd)
    close (fd);
  if (cmd && strlen (cmd) != n)
    {
      fprintf (stderr, "airlock exec: --command-file %s: holds a NUL byte; a "
               "command is text\n", file);
      free (cmd);
      return NULL;
    }
  if (!cmd)
    fprintf (stderr, "airlock exec: out of memory\n");
  return cmd;
}

int
exec_command (int argc, char **argv)
{
  static const struct option opts[] = {
    { "timeout", required_argument, NULL, 't' },
    { "cwd", required_argument, NULL, 'c' },
    { "stdin", no_argument, NULL, 'i' },
    { "background", no_argument, NULL, 'b' },
    { "env", required_argument, NULL, 'e' },
    { "command-file", required_argument, NULL, 'f' },
    { "pty", no_argument, NULL, 'p' },
    { "help", no_argument, NULL, 'h' },
    { NULL, 0, NULL, 0 },
  };
  const char *command_file = NULL;
  cJSON *req = cJSON_CreateObject ();
  cJSON_AddStringToObject (req, "op", "exec");
  cJSON *env = cJSON_CreateObject ();
  char *end;
  double secs;
  bool use_stdin = false, use_pty = false;
  int opt;
  if (argc < 2 || argv[1][0] == '-')
    {
      bool help = argc >= 2 && !strcmp (argv[1], "--help");
      fputs (exec_usage, help ? stdout : stderr);
      cJSON_Delete (req);
      return help ? 0 : 2;
    }
  const char *session = argv[1];
  /* Options follow the session name; "--" ends them. */
  argc--;
  argv++;
  optind = 1;
  while ((opt = getopt_long (argc, argv, "+h", opts, NULL)) != -1)
    switch (opt)
      {
      case 't':
        errno = 0;
        secs = strtod (optarg, &end);
        if (end == optarg || *end || errno || !(secs > 0 && secs <= 86400))
          {
            fprintf (stderr, "airlock exec: --timeout '%s': a number of seconds "
                     "above 0, at most 86400 (0.5 is half a second)\n", optarg);
            cJSON_Delete (env);
            cJSON_Delete (req);
            return 2;
          }
        cJSON_AddNumberToObject (req, "timeout", secs);
        break;
      case 'c': cJSON_AddStringToObject (req, "cwd", optarg); break;
      case 'i': use_stdin = true; break;
      case 'b': cJSON_AddTrueToObject (req, "background"); break;
      case 'f': command_file = optarg; break;
      case 'p': use_pty = true; break;
      case 'e':
        if (add_env_arg (env, optarg))
          break;
        fprintf (stderr, "airlock exec: --env '%s': expected NAME=VALUE\n", optarg);
        cJSON_Delete (env);
        cJSON_Delete (req);
        return 2;
      case 'h': fputs (exec_usage, stdout); cJSON_Delete (env); cJSON_Delete (req); return 0;
      default: fputs (exec_usage, stderr); cJSON_Delete (env); cJSON_Delete (req); return 2;
      }
  if (cJSON_GetArraySize (env))
    cJSON_AddItemToObject (req, "env", env);
  else
    cJSON_Delete (env);
  if (command_file ? argc > optind || (use_stdin && !strcmp (command_file, "-"))
                   : argc - optind < 1)
    {
      if (command_file)
        fputs ("airlock exec: --command-file takes the place of COMMAND (and of "
               "--stdin when it reads standard input)\n", stderr);
      fputs (exec_usage, stderr);
      cJSON_Delete (req);
      return 2;
    }
  bool background = cJSON_GetObjectItem (req, "background") != NULL;
  if (use_pty && (use_stdin || (command_file && !strcmp (command_file, "-"))))
    {
      fputs ("airlock exec: --pty takes our terminal (or stdin) as the command's; "
             "not with --stdin or --command-file -\n", stderr);
      cJSON_Delete (req);
      return 2;
    }
  cJSON_AddStringToObject (req, "session", session);
  char *cmd = NULL;
  if (command_file && !(cmd = read_command_file (command_file)))
    {
      cJSON_Delete (req);
      return 2;
    }
  /* Else the words after the options form one shell command line. */
  size_t len = 1;
  for (int i = optind; !cmd && i < argc; i++)
    len += strlen (argv[i]) + 1;
  if (!cmd)
    cmd = calloc (1, len);
  for (int i = optind; !command_file && cmd && i < argc; i++)
    {
      strcat (cmd, argv[i]);
      if (i + 1 < argc)
        strcat (cmd, " ");
    }
  cJSON_AddStringToObject (req, "command", cmd ? cmd : "");
  free (cmd);
  if (use_stdin)
    {
      char *in = slurp_fd (0, NULL);
      cJSON_AddStringToObject (req, "stdin", in ? in : "");
      free (in);
    }
  struct daemon_conn c = { .fd = connect_daemon ("airlock") };
  if (c.fd < 0)
    {
      cJSON_Delete (req);
      return 1;
    }
  int rc;
  if (use_pty)
    pty_relay_request (req); /* a background one at our window's size too */
  if (use_pty && !background)
    {
      cJSON_AddStringToObject (req, "approval", client_approval_mode ());
      rc = pty_relay_run (&c, session, req, answer_approval, NULL);
    }
  else
    rc = run_exec (&c, block_stop_signals (), session, req, NULL);
  free (c.line);
  close (c.fd);
  return rc < 0 ? 1 : rc;
}

/* ---- airlock shell ---- */

static const char shell_usage[]
    = "Usage: airlock shell SESSION\n"
      "Type commands into a session, one line each, as into a shell: cd and\n"
      "export carry over, Ctrl-C interrupts the running command.  Ctrl-D or\n"
      "`exit` leaves (the session stays open: airlock session close ends it).\n"
      "On a terminal each command runs on a terminal of the sandbox, ours its\n"
      "keyboard and screen while it runs, so full-screen programs work (vi, top,\n"
      "python3 -i); a backend without terminals runs them without one, and says so.\n";

/* The exec of one typed line. */
static cJSON *
line_request (const char *session, const char *line)
{
  cJSON *req = cJSON_CreateObject ();
  cJSON_AddStringToObject (req, "op", "exec");
  cJSON_AddStringToObject (req, "session", session);
  cJSON_AddStringToObject (req, "command", line);
  return req;
}

/* Run one typed line on a terminal of the sandbox; where the backend
 * has none, without one from now on (*on_terminal), after saying so. */
static int
run_line_on_terminal (struct daemon_conn *c, int sfd, const char *session,
                      const char *line, bool *on_terminal, char **cwd)
{
  cJSON *req = line_request (session, line);
  cJSON_AddStringToObject (req, "approval", client_approval_mode ());
  pty_relay_request (req);
  int rc = pty_relay_run (c, session, req, answer_approval, cwd);
  if (rc != PTY_RELAY_NOT_SUPPORTED)
    return rc;
  fprintf (stderr, "airlock shell: session %s runs commands without a terminal: "
           "line by line from now on (full-screen programs will not work)\n", session);
  *on_terminal = false;
  return run_exec (c, sfd, session, line_request (session, line), cwd);
}

int
shell_command (int argc, char **argv)
{
  if (argc != 2 || argv[1][0] == '-')
    {
      bool help = argc == 2 && !strcmp (argv[1], "--help");
      fputs (shell_usage, help ? stdout : stderr);
      return help ? 0 : 2;
    }
  const char *session = argv[1];
  struct daemon_conn c = { .fd = connect_daemon ("airlock") };
  if (c.fd < 0)
    return 1;
  /* The session must exist; its cwd starts the prompt. */
  cJSON *ls = cJSON_CreateObject ();
  cJSON_AddStringToObject (ls, "op", "list");
  cJSON *r = daemon_call (&c, ls);
  char *cwd = NULL;
  const cJSON *it;
  cJSON_ArrayForEach (it, cJSON_GetObjectItem (r, "sessions"))
    {
      const cJSON *name = cJSON_GetObjectItem (it, "session");
      const cJSON *dir = cJSON_GetObjectItem (it, "cwd");
      if (cJSON_IsString (name) && !strcmp (name->valuestring, session)
          && cJSON_IsString (dir))
        cwd = strdup (dir->valuestring);
    }
  cJSON_Delete (r);
  if (!cwd)
    {
      fprintf (stderr, "airlock shell: no usable session \"%s\" (airlock session open %s)\n",
               session, session);
      free (c.line);
      close (c.fd);
      return 1;
    }
  int sfd = block_stop_signals ();
  bool on_terminal = isatty (0) && isatty (1);
  int last = 0;
  char line[65536];
  for (;;)
    {
      fprintf (stderr, "[%s %s]%s ", session, cwd, last ? "!" : "$");
      fflush (stderr);
      /* Wait for a line, or for Ctrl-C, which just gives a new prompt. */
      struct pollfd p[2] = { { .fd = 0, .events = POLLIN }, { .fd = sfd, .events = POLLIN } };
      if (poll (p, 2, -1) < 0)
        continue;
      if (p[1].revents & POLLIN)
        {
          struct signalfd_siginfo si;
          if (read (sfd, &si, sizeof si) > 0 && si.ssi_signo == SIGTERM)
            break;
          fputc ('\n', stderr);
          continue;
        }
      if (!fgets (line, sizeof line, stdin))
        {
          fputc ('\n', stderr);
          break;
        }
      line[strcspn (line, "\n")] = '\0';
      if (!strcmp (line, "exit"))
        break;
      if (!*line)
        continue;
      char *now = NULL;
      if (on_terminal)
        last = run_line_on_terminal (&c, sfd, session, line, &on_terminal, &now);
      else
        last = run_exec (&c, sfd, session, line_request (session, line), &now);
      if (now)
        {
          free (cwd);
          cwd = now;
        }
      if (last == -1)
        break; /* the daemon went away */
    }
  free (cwd);
  free (c.line);
  close (c.fd);
  return 0;
}

/* ---- airlock serve ---- */

static int
write_all (int fd, const char *buf, size_t n)
{
  for (size_t off = 0; off < n;)
    {
      ssize_t w = write (fd, buf + off, n - off);
      if (w <= 0)
        return -1;
      off += (size_t) w;
    }
  return 0;
}

/* One request line on its way to the daemon: an open or cache request
 * without client_env gets ours, so that `AIRLOCK_BACKEND=docker airlock
 * serve` opens docker sessions (and the cache is the one its sessions
 * use); every other line goes as it is. */
static int
forward_line (int fd, const char *line, size_t n)
{
  cJSON *req = NULL;
  if (n < 65536 && (memmem (line, n, "\"open\"", 6) || memmem (line, n, "\"cache\"", 7)))
    req = cJSON_ParseWithLength (line, n);
  const cJSON *op = cJSON_GetObjectItemCaseSensitive (req, "op");
  if (!cJSON_IsObject (req) || !cJSON_IsString (op)
      || (strcmp (op->valuestring, "open") && strcmp (op->valuestring, "cache"))
      || cJSON_GetObjectItemCaseSensitive (req, "client_env"))
    {
      cJSON_Delete (req);
      return write_all (fd, line, n);
    }
  cJSON_AddItemToObject (req, "client_env", config_client_env (NULL));
  char *text = cJSON_PrintUnformatted (req);
  cJSON_Delete (req);
  int rc = text ? write_all (fd, text, strlen (text)) | write_all (fd, "\n", 1) : -1;
  free (text);
  return rc;
}

/* The API on stdio: every line is passed to the daemon as it is (opens
 * and cache requests with the client's AIRLOCK_* variables added) and
 * every answer back, so `serve` and the socket speak the same. */
int
serve_command (int argc, char **argv)
{
  (void) argc;
  (void) argv;
  int fd = connect_daemon ("airlock");
  if (fd < 0)
    return 1;
  signal (SIGPIPE, SIG_IGN);
  bool in_open = true;
  char buf[65536];
  char *line = NULL;
  size_t len = 0, cap = 0;
  for (;;)
    {
      struct pollfd p[2] = { { .fd = fd, .events = POLLIN },
                             { .fd = 0, .events = in_open ? POLLIN : 0 } };
      if (poll (p, in_open ? 2 : 1, -1) < 0)
        continue;
      if (p[0].revents)
        {
          ssize_t n = read (fd, buf, sizeof buf);
          if (n <= 0 || write_all (1, buf, (size_t) n) < 0)
            break;
        }
      if (in_open && p[1].revents)
        {
          ssize_t n = read (0, buf, sizeof buf);
          if (n <= 0)
            {
              in_open = false;
              if (len && write_all (fd, line, len) < 0) /* a last line without \n */
                break;
              shutdown (fd, SHUT_WR); /* answers still come */
              continue;
            }
          if (len + (size_t) n > cap)
            {
              char *q = realloc (line, cap = (len + (size_t) n) * 2);
              if (!q)
                break;
              line = q;
            }
          memcpy (line + len, buf, (size_t) n);
          len += (size_t) n;
          size_t start = 0;
          for (char *nl; (nl = memchr (line + start, '\n', len - start));)
            {
              size_t end = (size_t) (nl - line) + 1;
              if (forward_line (fd, line + start, end - start) < 0)
                goto out;
              start = end;
            }
          /* A long line with no newline yet is passed on as it comes:
           * only short ones can be opens. */
          if (len - start > 65536)
            {
              if (write_all (fd, line + start, len - start) < 0)
                break;
              start = len;
            }
          memmove (line, line + start, len - start);
          len -= start;
        }
    }
out:
  free (line);
  return 0;
}

/* ---- airlock daemon ---- */

/* One request to a daemon that is already running (never starting one);
 * NULL when none runs. */
static cJSON *
ask_running_daemon (const char *op, char *dir, size_t dir_size)
{
  char *err = NULL;
  if (runtime_dir (dir, dir_size, &err) < 0)
    {
      fprintf (stderr, "airlock daemon: %s\n", err);
      free (err);
      return NULL;
    }
  struct daemon_conn c = { .fd = try_connect (dir) };
  if (c.fd < 0)
    return NULL;
  cJSON *req = cJSON_CreateObject ();
  cJSON_AddStringToObject (req, "op", op);
  cJSON *r = daemon_call (&c, req);
  free (c.line);
  close (c.fd);
  return r;
}

int
daemon_command (int argc, char **argv)
{
  /* The daemon itself, in the foreground: the daemon program, under
   * the name it was called by (ps shows "airlock daemon"). */
  if (argc != 3 || (strcmp (argv[2], "status") && strcmp (argv[2], "stop")))
    return exec_daemon_program (argv, 1);
  char dir[4096];
  bool stop = !strcmp (argv[2], "stop");
  cJSON *r = ask_running_daemon (stop ? "shutdown" : "status", dir, sizeof dir);
  if (!r)
    {
      printf ("airlock daemon: not running (%s)\n", dir);
      return stop ? 0 : 3;
    }
  int rc = 0;
  if (!cJSON_IsTrue (cJSON_GetObjectItem (r, "ok")))
    rc = print_error (r, "daemon");
  else if (stop)
    {
      /* Gone once nothing answers on the socket any more. */
      int fd;
      for (int waited = 0; (fd = try_connect (dir)) >= 0 && waited < 10000; waited += 50)
        {
          close (fd);
          usleep (50 * 1000);
        }
      if (fd >= 0)
        {
          close (fd);
          fprintf (stderr, "airlock daemon: still running after 10 s\n");
          rc = 1;
        }
      else
        printf ("airlock daemon: stopped\n");
    }
  else
    {
      const cJSON *pid = cJSON_GetObjectItem (r, "pid");
      const cJSON *ver = cJSON_GetObjectItem (r, "version");
      const cJSON *n = cJSON_GetObjectItem (r, "sessions");
      const cJSON *up = cJSON_GetObjectItem (r, "uptime_ms");
      printf ("airlock daemon: running, pid %d, version %s, %d session%s, up %.0f s, in %s\n",
              cJSON_IsNumber (pid) ? pid->valueint : 0,
              cJSON_IsString (ver) ? ver->valuestring : "?",
              cJSON_IsNumber (n) ? n->valueint : 0,
              cJSON_IsNumber (n) && n->valueint == 1 ? "" : "s",
              cJSON_IsNumber (up) ? up->valuedouble / 1000 : 0.0, dir);
      if (cJSON_IsString (ver) && strcmp (ver->valuestring, AIRLOCK_VERSION))
        printf ("airlock daemon: it is version %s, this airlock is %s: "
                "`airlock daemon stop` and it restarts on demand\n",
                ver->valuestring, AIRLOCK_VERSION);
    }
  cJSON_Delete (r);
  return rc;
}
