/* The commands that talk to the per-user daemon: `airlock serve`,
 * `airlock exec`, `airlock session ls|open|close`, and `airlock daemon`
 * itself.  The daemon is started on demand. */
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

#include "approval.h"
#include "approval_prompt.h"
#include "config.h"
#include "daemon.h"
#include "runtime_dir.h"

#define START_TIMEOUT_MS 5000

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

/* Start `airlock daemon` detached, its output in the runtime dir's log. */
static void
start_daemon (const char *dir)
{
  pid_t pid = fork ();
  if (pid != 0)
    {
      if (pid > 0)
        waitpid (pid, NULL, 0);
      return;
    }
  if (fork () != 0) /* double fork: the daemon is nobody's child */
    _exit (0);
  setsid ();
  char log[4200];
  snprintf (log, sizeof log, "%s/" DAEMON_LOG, dir);
  int fd = open (log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
  int null = open ("/dev/null", O_RDONLY);
  if (fd < 0 || null < 0 || dup2 (null, 0) < 0 || dup2 (fd, 1) < 0 || dup2 (fd, 2) < 0)
    _exit (1);
  /* Nothing of the caller's: a pipe it waits on must not stay open. */
  close_range (3, ~0U, 0);
  execl ("/proc/self/exe", "airlock", "daemon", (char *) NULL);
  _exit (1);
}

int
connect_daemon (void)
{
  char dir[4096];
  char *err = NULL;
  if (runtime_dir (dir, sizeof dir, &err) < 0)
    {
      fprintf (stderr, "airlock: %s\n", err);
      return -1;
    }
  int fd = try_connect (dir);
  if (fd >= 0)
    return fd;
  /* A configuration error is said here, not buried in the daemon's log. */
  struct airlock_config *cfg = config_load (&err);
  if (!cfg)
    {
      fprintf (stderr, "airlock: %s\n", err);
      free (err);
      return -1;
    }
  /* So is a broken rule file or audit log directory. */
  struct approval *a = approval_open (cfg, &err);
  config_free (cfg);
  if (!a)
    {
      fprintf (stderr, "airlock: %s\n", err);
      free (err);
      return -1;
    }
  approval_close (a);
  start_daemon (dir);
  for (int waited = 0; waited < START_TIMEOUT_MS; waited += 20)
    {
      if ((fd = try_connect (dir)) >= 0)
        return fd;
      usleep (20 * 1000);
    }
  fprintf (stderr, "airlock: the daemon did not start; see %s/" DAEMON_LOG "\n", dir);
  return -1;
}

/* ---- one request, one answer ---- */

struct conn {
  int fd;
  char buf[1 << 16];
  size_t len;
  char *line;
};

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
read_json (struct conn *c)
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

static cJSON *
call (struct conn *c, cJSON *req)
{
  if (send_json (c->fd, req) < 0)
    return NULL;
  return read_json (c);
}

static int
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
      "       airlock session open NAME [--workdir DIR]\n"
      "       airlock session close NAME\n";

int
session_command (int argc, char **argv)
{
  if (argc < 2 || !strcmp (argv[1], "--help"))
    {
      fputs (session_usage, argc < 2 ? stderr : stdout);
      return argc < 2 ? 2 : 0;
    }
  const char *verb = argv[1];
  cJSON *req = cJSON_CreateObject ();
  if (!strcmp (verb, "ls") && argc == 2)
    cJSON_AddStringToObject (req, "op", "list");
  else if ((!strcmp (verb, "open") || !strcmp (verb, "close")) && argc >= 3)
    {
      cJSON_AddStringToObject (req, "op", verb);
      cJSON_AddStringToObject (req, "session", argv[2]);
      for (int i = 3; i < argc; i++)
        if (!strcmp (verb, "open") && !strcmp (argv[i], "--workdir") && i + 1 < argc)
          {
            char *real = realpath (argv[++i], NULL);
            if (!real)
              {
                fprintf (stderr, "airlock session: %s: %s\n", argv[i], strerror (errno));
                cJSON_Delete (req);
                return 2;
              }
            cJSON_AddStringToObject (req, "workdir", real);
            free (real);
          }
        else
          {
            fputs (session_usage, stderr);
            cJSON_Delete (req);
            return 2;
          }
      if (!strcmp (verb, "open") && !cJSON_GetObjectItem (req, "workdir"))
        {
          char *cwd = realpath (".", NULL);
          cJSON_AddStringToObject (req, "workdir", cwd ? cwd : "/");
          free (cwd);
        }
    }
  else
    {
      fputs (session_usage, stderr);
      cJSON_Delete (req);
      return 2;
    }
  struct conn c = { .fd = connect_daemon () };
  if (c.fd < 0)
    {
      cJSON_Delete (req);
      return 1;
    }
  cJSON *r = call (&c, req);
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
  if (!cJSON_IsTrue (cJSON_GetObjectItem (r, "ok")))
    rc = print_error (r, "session");
  else if (!strcmp (verb, "ls"))
    {
      const cJSON *s;
      cJSON_ArrayForEach (s, cJSON_GetObjectItem (r, "sessions"))
        {
          const cJSON *cwd = cJSON_GetObjectItem (s, "cwd");
          printf ("%-20s %-8s %s\n", cJSON_GetObjectItem (s, "session")->valuestring,
                  cJSON_GetObjectItem (s, "state")->valuestring,
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
      mode = gate_mode_name (cfg ? approval_default_mode (cfg, approval_tty_available ())
                                 : GATE_MODE_DENY);
      config_free (cfg);
    }
  return mode;
}

/* An approval event: ask the person, send the answer. */
static void
answer_approval (struct conn *c, const cJSON *m)
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
run_exec (struct conn *c, int sfd, const char *session, cJSON *req, char **cwd)
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
      else if (cJSON_IsString (ev) && !strcmp (ev->valuestring, "result"))
        {
          const cJSON *code = cJSON_GetObjectItem (m, "exit_code");
          const cJSON *spill = cJSON_GetObjectItem (m, "spill_path");
          const cJSON *dir = cJSON_GetObjectItem (m, "cwd");
          rc = cJSON_IsNumber (code) ? code->valueint : 1;
          if (cJSON_IsString (spill))
            fprintf (stderr, "airlock: the full output is in %s\n", spill->valuestring);
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
    = "Usage: airlock exec SESSION [--timeout SEC] [--cwd DIR] [--stdin] [--background] -- COMMAND\n"
      "Run COMMAND (a shell command line) in the named session: cd and export\n"
      "carry over between commands.  Output is live; the exit status is the\n"
      "command's (124 timeout, 130 interrupted).  --stdin sends our standard\n"
      "input to the command.  --background prints a job id at once.\n";

static char *
slurp_stdin (void)
{
  size_t cap = 65536, len = 0;
  char *buf = malloc (cap);
  for (ssize_t n; buf && (n = read (0, buf + len, cap - len - 1)) > 0;)
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
  return buf;
}

int
exec_command (int argc, char **argv)
{
  static const struct option opts[] = {
    { "timeout", required_argument, NULL, 't' },
    { "cwd", required_argument, NULL, 'c' },
    { "stdin", no_argument, NULL, 'i' },
    { "background", no_argument, NULL, 'b' },
    { "help", no_argument, NULL, 'h' },
    { NULL, 0, NULL, 0 },
  };
  cJSON *req = cJSON_CreateObject ();
  cJSON_AddStringToObject (req, "op", "exec");
  bool use_stdin = false;
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
      case 't': cJSON_AddNumberToObject (req, "timeout", atof (optarg)); break;
      case 'c': cJSON_AddStringToObject (req, "cwd", optarg); break;
      case 'i': use_stdin = true; break;
      case 'b': cJSON_AddTrueToObject (req, "background"); break;
      case 'h': fputs (exec_usage, stdout); cJSON_Delete (req); return 0;
      default: fputs (exec_usage, stderr); cJSON_Delete (req); return 2;
      }
  if (argc - optind < 1)
    {
      fputs (exec_usage, stderr);
      cJSON_Delete (req);
      return 2;
    }
  cJSON_AddStringToObject (req, "session", session);
  /* The words after the options form one shell command line. */
  size_t len = 1;
  for (int i = optind; i < argc; i++)
    len += strlen (argv[i]) + 1;
  char *cmd = calloc (1, len);
  for (int i = optind; i < argc; i++)
    {
      strcat (cmd, argv[i]);
      if (i + 1 < argc)
        strcat (cmd, " ");
    }
  cJSON_AddStringToObject (req, "command", cmd);
  free (cmd);
  if (use_stdin)
    {
      char *in = slurp_stdin ();
      cJSON_AddStringToObject (req, "stdin", in ? in : "");
      free (in);
    }
  struct conn c = { .fd = connect_daemon () };
  if (c.fd < 0)
    {
      cJSON_Delete (req);
      return 1;
    }
  int sfd = block_stop_signals ();
  int rc = run_exec (&c, sfd, session, req, NULL);
  free (c.line);
  close (c.fd);
  return rc < 0 ? 1 : rc;
}

/* ---- airlock shell ---- */

static const char shell_usage[]
    = "Usage: airlock shell SESSION\n"
      "Type commands into a session, one line each, as into a shell: cd and\n"
      "export carry over, Ctrl-C interrupts the running command.  Ctrl-D or\n"
      "`exit` leaves (the session stays open: airlock session close ends it).\n";

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
  struct conn c = { .fd = connect_daemon () };
  if (c.fd < 0)
    return 1;
  /* The session must exist; its cwd starts the prompt. */
  cJSON *ls = cJSON_CreateObject ();
  cJSON_AddStringToObject (ls, "op", "list");
  cJSON *r = call (&c, ls);
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
      cJSON *req = cJSON_CreateObject ();
      cJSON_AddStringToObject (req, "op", "exec");
      cJSON_AddStringToObject (req, "session", session);
      cJSON_AddStringToObject (req, "command", line);
      char *now = NULL;
      last = run_exec (&c, sfd, session, req, &now);
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

/* The API on stdio: every line is passed to the daemon as it is and every
 * answer back, so `serve` and the socket speak exactly the same. */
int
serve_command (int argc, char **argv)
{
  (void) argc;
  (void) argv;
  int fd = connect_daemon ();
  if (fd < 0)
    return 1;
  signal (SIGPIPE, SIG_IGN);
  bool in_open = true;
  char buf[65536];
  for (;;)
    {
      struct pollfd p[2] = { { .fd = fd, .events = POLLIN },
                             { .fd = 0, .events = in_open ? POLLIN : 0 } };
      if (poll (p, in_open ? 2 : 1, -1) < 0)
        continue;
      if (p[0].revents)
        {
          ssize_t n = read (fd, buf, sizeof buf);
          if (n <= 0 || write (1, buf, (size_t) n) != n)
            return 0;
        }
      if (in_open && p[1].revents)
        {
          ssize_t n = read (0, buf, sizeof buf);
          if (n <= 0)
            {
              in_open = false;
              shutdown (fd, SHUT_WR); /* answers still come */
            }
          else if (write (fd, buf, (size_t) n) != n)
            return 1;
        }
    }
}

int
daemon_command (int argc, char **argv)
{
  int idle = 60;
  for (int i = 1; i < argc; i++)
    if (!strcmp (argv[i], "--idle-exit") && i + 1 < argc)
      idle = atoi (argv[++i]);
  const char *env = getenv ("AIRLOCK_DAEMON_IDLE_EXIT");
  if (env && *env)
    idle = atoi (env);
  return daemon_main (idle);
}
