/* SPDX-License-Identifier: MIT */
/* The OpenSSH client as a transport (see ssh_transport.h). */
#define _GNU_SOURCE
#include "ssh_transport.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <termios.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fnv1a.h"
#include "xprintf.h"
#include "monotonic_ms.h"

extern char **environ;

int
ssh_target_init (struct ssh_target *t, const char *runtime_dir, char **err)
{
  t->control_dir = xprintf ("%s/ssh", runtime_dir);
  if (!t->control_dir)
    {
      *err = xprintf ("out of memory");
      return -1;
    }
  struct stat st;
  if ((mkdir (t->control_dir, 0700) < 0 && errno != EEXIST)
      || lstat (t->control_dir, &st) < 0 || !S_ISDIR (st.st_mode)
      || st.st_uid != getuid () || chmod (t->control_dir, 0700) < 0)
    {
      *err = xprintf ("cannot use %s for ssh's control sockets: %s", t->control_dir,
                      errno ? strerror (errno) : "not a directory of ours");
      return -1;
    }
  /* The socket's name: a hash of the destination and of everything that
   * decides how the master authenticates (ssh's %C would be 40 digits,
   * too long for deep runtime directories).  Sessions share a master only
   * with the same identity, known hosts, strictness, config and options:
   * one authenticated one way must not carry a session configured
   * another. */
  uint64_t h = FNV1A64_INIT;
  char port[16];
  snprintf (port, sizeof port, "%d", t->port);
  const char *parts[] = { t->host, t->user, port, t->program, t->key, t->config,
                          t->known_hosts, t->strict };
  for (size_t i = 0; i < sizeof parts / sizeof *parts; i++)
    h = fnv1a64 (h, parts[i] ? parts[i] : "", parts[i] ? strlen (parts[i]) + 1 : 1);
  for (const char *const *o = t->options; o && *o; o++)
    h = fnv1a64 (h, *o, strlen (*o) + 1);
  snprintf (t->settings_id, sizeof t->settings_id, "%016llx", (unsigned long long) h);
  /* ssh adds 17 bytes while it makes the socket; a unix socket's path
   * holds 107. */
  if (strlen (t->control_dir) + 1 + 16 + 17 >= 108)
    {
      *err = xprintf ("the runtime directory %s is too long a path for ssh's "
                      "control socket (107 bytes at most); set XDG_RUNTIME_DIR "
                      "to a shorter one", runtime_dir);
      return -1;
    }
  return 0;
}

void
ssh_target_clear (struct ssh_target *t)
{
  free (t->control_dir);
  t->control_dir = NULL;
}

char *
ssh_target_name (const struct ssh_target *t)
{
  char port[16] = "";
  if (t->port)
    snprintf (port, sizeof port, ":%d", t->port);
  return xprintf ("%s%s%s%s", t->user ? t->user : "", t->user ? "@" : "", t->host, port);
}

/* The argv, its strings malloc'd in *owned (freed by the caller). */
static char **
build_argv (const struct ssh_target *t, const char *control, bool verbose,
            const char *tty_command, char ***owned)
{
  size_t n_opt = 0;
  for (const char *const *o = t->options; o && *o; o++)
    n_opt++;
  size_t cap = 48 + 2 * n_opt;
  char **argv = calloc (cap, sizeof *argv);
  char **own = calloc (16, sizeof *own);
  if (!argv || !own)
    {
      free (argv);
      free (own);
      return NULL;
    }
  size_t a = 0, k = 0;
#define OWN(x) (own[k++] = (x))
#define OPT(fmt, ...) (argv[a++] = "-o", argv[a++] = OWN (xprintf (fmt, __VA_ARGS__)))
  argv[a++] = (char *) (t->program ? t->program : "ssh");
  if (verbose)
    argv[a++] = "-v";
  argv[a++] = tty_command ? "-tt" : "-T";
  argv[a++] = "-o";
  argv[a++] = "BatchMode=yes";
  argv[a++] = "-o";
  argv[a++] = "ControlMaster=auto";
  OPT ("ControlPath=%s/%s", t->control_dir, t->settings_id);
  OPT ("ControlPersist=%d", t->control_persist);
  OPT ("ConnectTimeout=%d", t->connect_timeout);
  OPT ("ServerAliveInterval=%d", t->alive_interval);
  OPT ("ServerAliveCountMax=%d", t->alive_count);
  OPT ("StrictHostKeyChecking=%s", t->strict ? t->strict : "accept-new");
  if (t->known_hosts)
    OPT ("UserKnownHostsFile=%s", t->known_hosts);
  if (!verbose)
    {
      argv[a++] = "-o";
      argv[a++] = "LogLevel=ERROR";
    }
  if (t->config)
    {
      argv[a++] = "-F";
      argv[a++] = (char *) t->config;
    }
  if (t->key)
    {
      argv[a++] = "-i";
      argv[a++] = (char *) t->key;
      argv[a++] = "-o";
      argv[a++] = "IdentitiesOnly=yes";
    }
  if (t->port)
    {
      argv[a++] = "-p";
      argv[a++] = OWN (xprintf ("%d", t->port));
    }
  if (t->user)
    {
      argv[a++] = "-l";
      argv[a++] = (char *) t->user;
    }
  for (const char *const *o = t->options; o && *o; o++)
    {
      argv[a++] = "-o";
      argv[a++] = (char *) *o;
    }
  if (control)
    {
      argv[a++] = "-O";
      argv[a++] = (char *) control;
    }
  argv[a++] = "--";
  argv[a++] = (char *) t->host;
  if (!control)
    argv[a++] = (char *) (tty_command ? tty_command : SSH_REMOTE_BOOTSTRAP);
  argv[a] = NULL;
#undef OPT
#undef OWN
  *owned = own;
  for (size_t i = 0; i < a; i++)
    if (!argv[i])
      {
        free (argv);
        return NULL;
      }
  return argv;
}

static void
free_owned (char **own)
{
  for (size_t i = 0; own && own[i]; i++)
    free (own[i]);
  free (own);
}

static void
close_fd (int *fd)
{
  if (*fd >= 0)
    close (*fd);
  *fd = -1;
}

int
ssh_spawn (const struct ssh_target *t, const char *control, bool verbose,
           struct ssh_proc *p, char **err)
{
  *p = (struct ssh_proc){ .pid = -1, .pidfd = -1, .in = -1, .out = -1, .err = -1 };
  char **own = NULL;
  char **argv = build_argv (t, control, verbose, NULL, &own);
  int in[2] = { -1, -1 }, out[2] = { -1, -1 }, er[2] = { -1, -1 };
  if (!argv || pipe2 (in, O_CLOEXEC) < 0 || pipe2 (out, O_CLOEXEC) < 0
      || pipe2 (er, O_CLOEXEC) < 0)
    {
      *err = xprintf ("cannot start ssh: %s", argv ? strerror (errno) : "out of memory");
      goto fail;
    }
  posix_spawn_file_actions_t fa;
  posix_spawnattr_t at;
  posix_spawn_file_actions_init (&fa);
  posix_spawn_file_actions_adddup2 (&fa, in[0], 0);
  posix_spawn_file_actions_adddup2 (&fa, out[1], 1);
  posix_spawn_file_actions_adddup2 (&fa, er[1], 2);
  posix_spawnattr_init (&at);
  /* The daemon ignores SIGPIPE; ssh must not inherit that, nor our
   * session (a signal to the daemon's group is not one to ssh). */
  sigset_t def, none;
  sigemptyset (&def);
  sigaddset (&def, SIGPIPE);
  sigaddset (&def, SIGCHLD);
  sigemptyset (&none);
  posix_spawnattr_setsigdefault (&at, &def);
  posix_spawnattr_setsigmask (&at, &none);
  posix_spawnattr_setflags (&at, POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK
                                     | POSIX_SPAWN_SETSID);
  int rc = posix_spawnp (&p->pid, argv[0], &fa, &at, argv, environ);
  posix_spawn_file_actions_destroy (&fa);
  posix_spawnattr_destroy (&at);
  if (rc != 0)
    {
      p->pid = -1;
      *err = xprintf ("cannot run the ssh client %s: %s (set ssh.program, or "
                      "install openssh-client)", argv[0], strerror (rc));
      goto fail;
    }
  close (in[0]);
  close (out[1]);
  close (er[1]);
  p->in = in[1];
  p->out = out[0];
  p->err = er[0];
  fcntl (p->in, F_SETFL, O_NONBLOCK);
  fcntl (p->out, F_SETFL, O_NONBLOCK);
  fcntl (p->err, F_SETFL, O_NONBLOCK);
  p->pidfd = (int) syscall (SYS_pidfd_open, p->pid, 0);
  free (argv);
  free_owned (own);
  return 0;
fail:
  for (int i = 0; i < 2; i++)
    {
      close_fd (&in[i]);
      close_fd (&out[i]);
      close_fd (&er[i]);
    }
  free (argv);
  free_owned (own);
  return -1;
}

/* environ with TERM=term instead of its own (malloc'd array). */
static char **
env_with_term (const char *term_var)
{
  size_t n = 0;
  while (environ[n])
    n++;
  char **e = calloc (n + 2, sizeof *e);
  if (!e)
    return NULL;
  size_t k = 0;
  for (size_t i = 0; i < n; i++)
    if (strncmp (environ[i], "TERM=", 5))
      e[k++] = environ[i];
  e[k++] = (char *) term_var;
  e[k] = NULL;
  return e;
}

int
ssh_spawn_tty (const struct ssh_target *t, const char *remote_command, const char *term,
               unsigned rows, unsigned cols, struct ssh_proc *p, int *ptm, char **err)
{
  *p = (struct ssh_proc){ .pid = -1, .pidfd = -1, .in = -1, .out = -1, .err = -1 };
  *ptm = -1;
  char **own = NULL;
  char **argv = build_argv (t, NULL, false, remote_command, &own);
  char *term_var = xprintf ("TERM=%s", term ? term : "xterm");
  char **envp = term_var ? env_with_term (term_var) : NULL;
  int er[2] = { -1, -1 }, master = -1, slave = -1;
  /* The window ssh reports in its pty-req; the terminal's modes (the
   * kernel's defaults: a cooked, echoing line) are the remote terminal's
   * first ones, so the slave stays as it is: ssh makes it raw itself. */
  struct winsize ws = { .ws_row = (unsigned short) rows, .ws_col = (unsigned short) cols };
  if (!argv || !envp || pipe2 (er, O_CLOEXEC) < 0
      || (master = posix_openpt (O_RDWR | O_NOCTTY | O_CLOEXEC)) < 0
      || grantpt (master) < 0 || unlockpt (master) < 0
      || ioctl (master, TIOCSWINSZ, &ws) < 0
      || (slave = ioctl (master, TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC)) < 0)
    {
      *err = xprintf ("cannot make a terminal for ssh: %s",
                      argv && envp ? strerror (errno) : "out of memory");
      goto fail;
    }
  sigset_t all, old, none;
  sigfillset (&all);
  sigemptyset (&none);
  sigprocmask (SIG_BLOCK, &all, &old);
  p->pid = fork ();
  if (p->pid == 0)
    {
      /* ssh leads a session whose controlling terminal is the slave: a
       * TIOCSWINSZ on our master then signals it (SIGWINCH), and it sends
       * the window-change request. */
      struct sigaction dfl = { .sa_handler = SIG_DFL };
      for (int sig = 1; sig < NSIG; sig++)
        sigaction (sig, &dfl, NULL);
      sigprocmask (SIG_SETMASK, &none, NULL);
      if (setsid () < 0 || ioctl (slave, TIOCSCTTY, 0) < 0 || dup2 (slave, 0) < 0
          || dup2 (slave, 1) < 0 || dup2 (er[1], 2) < 0)
        _exit (127);
      execvpe (argv[0], argv, envp);
      _exit (127);
    }
  int fork_errno = errno;
  sigprocmask (SIG_SETMASK, &old, NULL);
  if (p->pid < 0)
    {
      *err = xprintf ("cannot start ssh: %s", strerror (fork_errno));
      goto fail;
    }
  close (slave);
  close (er[1]);
  p->err = er[0];
  fcntl (p->err, F_SETFL, O_NONBLOCK);
  fcntl (master, F_SETFL, O_NONBLOCK);
  *ptm = master;
  p->pidfd = (int) syscall (SYS_pidfd_open, p->pid, 0);
  free (argv);
  free (envp);
  free (term_var);
  free_owned (own);
  return 0;
fail:
  p->pid = -1;
  close_fd (&er[0]);
  close_fd (&er[1]);
  close_fd (&master);
  close_fd (&slave);
  free (argv);
  free (envp);
  free (term_var);
  free_owned (own);
  return -1;
}

int
ssh_proc_reap (struct ssh_proc *p)
{
  if (p->pid <= 0)
    return -1;
  int ws;
  pid_t r;
  while ((r = waitpid (p->pid, &ws, WNOHANG)) < 0 && errno == EINTR)
    ;
  if (r != p->pid)
    return -1;
  p->pid = -1;
  return WIFEXITED (ws) ? WEXITSTATUS (ws) : 128 + WTERMSIG (ws);
}

void
ssh_proc_end (struct ssh_proc *p, bool kill_it)
{
  close_fd (&p->in);
  close_fd (&p->out);
  close_fd (&p->err);
  if (p->pid > 0)
    {
      if (kill_it)
        kill (p->pid, SIGKILL);
      while (waitpid (p->pid, NULL, 0) < 0 && errno == EINTR)
        ;
      p->pid = -1;
    }
  close_fd (&p->pidfd);
}

static bool
append (char **buf, size_t *len, int fd)
{
  char tmp[16384];
  ssize_t n = read (fd, tmp, sizeof tmp);
  if (n <= 0)
    return n < 0 && (errno == EAGAIN || errno == EINTR);
  char *b = realloc (*buf, *len + (size_t) n + 1);
  if (!b)
    return false;
  memcpy (b + *len, tmp, (size_t) n);
  *len += (size_t) n;
  b[*len] = 0;
  *buf = b;
  return true;
}

int
ssh_run (const struct ssh_target *t, const char *control, bool verbose,
         const void *input, size_t input_len, int timeout_ms, char **out,
         char **errout, char **err)
{
  struct ssh_proc p;
  *out = *errout = NULL;
  if (ssh_spawn (t, control, verbose, &p, err) < 0)
    return -1;
  size_t olen = 0, elen = 0, done = 0;
  *out = calloc (1, 1);
  *errout = calloc (1, 1);
  if (!input_len)
    close_fd (&p.in);
  long long until = monotonic_ms () + timeout_ms;
  while (p.out >= 0 || p.err >= 0)
    {
      struct pollfd f[3] = { { .fd = p.out, .events = POLLIN },
                             { .fd = p.err, .events = POLLIN },
                             { .fd = p.in, .events = POLLOUT } };
      long long left = until - monotonic_ms ();
      if (left <= 0)
        {
          ssh_proc_end (&p, true);
          *err = xprintf ("no answer from %s within %d s", t->host, timeout_ms / 1000);
          return -1;
        }
      if (poll (f, 3, (int) left) < 0 && errno != EINTR)
        break;
      if (f[0].revents && !append (out, &olen, p.out))
        close_fd (&p.out);
      if (f[1].revents && !append (errout, &elen, p.err))
        close_fd (&p.err);
      if (f[2].revents & (POLLERR | POLLHUP))
        close_fd (&p.in);
      else if (f[2].revents)
        {
          ssize_t w = write (p.in, (const char *) input + done, input_len - done);
          if (w > 0 && (done += (size_t) w) == input_len)
            close_fd (&p.in);
          else if (w < 0 && errno != EAGAIN && errno != EINTR)
            close_fd (&p.in);
        }
    }
  close_fd (&p.in);
  /* stdout closed: ssh ends at once (a master it forked keeps none). */
  int ws = 0;
  pid_t r;
  while ((r = waitpid (p.pid, &ws, 0)) < 0 && errno == EINTR)
    ;
  p.pid = -1;
  ssh_proc_end (&p, false);
  if (!*out || !*errout)
    {
      *err = xprintf ("out of memory");
      return -1;
    }
  return WIFEXITED (ws) ? WEXITSTATUS (ws) : 128 + WTERMSIG (ws);
}

/* The line of text containing what. */
static char *
line_with (const char *text, const char *what)
{
  const char *p = strstr (text, what);
  if (!p)
    return NULL;
  const char *b = p;
  while (b > text && b[-1] != '\n')
    b--;
  const char *e = strchr (p, '\n');
  size_t n = e ? (size_t) (e - b) : strlen (b);
  while (n && (b[n - 1] == '\r' || b[n - 1] == ' '))
    n--;
  return strndup (b, n);
}

char *
ssh_explain (const struct ssh_target *t, const char *e)
{
  char *name = ssh_target_name (t);
  char port[16];
  snprintf (port, sizeof port, "%d", t->port ? t->port : 22);
  char *m = NULL, *l = NULL;
  if ((l = line_with (e, "Offending ")))
    {
      /* "Offending ED25519 key in /home/u/.ssh/known_hosts:3" */
      const char *in = strstr (l, " in ");
      const char *where = in ? in + 4 : l, *colon = strrchr (where, ':');
      int flen = colon ? (int) (colon - where) : (int) strlen (where);
      m = xprintf ("the host key of %s has changed since it was recorded in %s; "
                   "airlock never replaces a host key: if the change is expected "
                   "(the host was reinstalled), remove that line (ssh-keygen -R "
                   "'%s%s%s%s' -f %.*s) and open the session again", name, where,
                   t->port && t->port != 22 ? "[" : "", t->host,
                   t->port && t->port != 22 ? "]:" : "", t->port && t->port != 22 ? port : "",
                   flen, where);
    }
  else if (strstr (e, "REMOTE HOST IDENTIFICATION HAS CHANGED"))
    m = xprintf ("the host key of %s has changed since it was recorded in known_hosts; "
                 "airlock never replaces a host key: check the host, then remove "
                 "the old key (ssh-keygen -R %s)", name, t->host);
  else if (strstr (e, "Host key verification failed"))
    m = xprintf ("the host key of %s is not known (StrictHostKeyChecking %s%s%s): "
                 "add it to known_hosts after checking it (ssh-keyscan), or use "
                 "ssh.strict_host_key_checking accept-new", name,
                 t->strict ? t->strict : "accept-new",
                 t->known_hosts ? ", known hosts " : "",
                 t->known_hosts ? t->known_hosts : "");
  else if ((l = line_with (e, "Could not resolve hostname")))
    m = xprintf ("cannot reach %s:%s: the name does not resolve (%s)", t->host, port, l);
  else if ((l = line_with (e, "Connection refused")) || (l = line_with (e, "timed out"))
           || (l = line_with (e, "No route to host")) || (l = line_with (e, "unreachable")))
    m = xprintf ("cannot reach %s:%s (%s): is the host up, and sshd listening on "
                 "that port?", t->host, port, l);
  else if ((l = line_with (e, "Permission denied")))
    m = xprintf ("%s refused authentication (%s)", name, l);
  else if ((l = line_with (e, "Too many authentication failures")))
    m = xprintf ("%s refused authentication (%s): set ssh.key to the one key "
                 "to offer", name, l);
  else if ((l = line_with (e, "not responding")) || (l = line_with (e, "Broken pipe"))
           || (l = line_with (e, "Connection reset")) || (l = line_with (e, "closed by remote host")))
    m = xprintf ("the connection to %s was lost (%s)", name, l);
  else if ((l = line_with (e, "Connection closed by")) || (l = line_with (e, "kex_exchange_identification")))
    m = xprintf ("%s:%s closed the connection before login (%s)", t->host, port, l);
  free (l);
  free (name);
  return m;
}

char *
ssh_identities_tried (const char *v)
{
  /* "debug1: Will attempt key: /home/u/.ssh/id_ed25519 ED25519 SHA256:... explicit"
   * "debug1: Will attempt key: u@h ED25519 SHA256:... agent" */
  char *out = NULL;
  size_t len = 0;
  for (const char *p = v; (p = strstr (p, "Will attempt key: ")); p++)
    {
      p += strlen ("Will attempt key: ");
      const char *e = strchr (p, '\n');
      size_t n = e ? (size_t) (e - p) : strlen (p);
      char *line = strndup (p, n);
      if (!line)
        break;
      char *sp = strchr (line, ' ');
      bool agent = strstr (line, " agent") != NULL;
      if (sp)
        *sp = 0;
      char *item = agent ? xprintf ("%sthe agent's key %s", len ? ", " : "", line)
                         : xprintf ("%s%s", len ? ", " : "", line);
      free (line);
      if (!item)
        break;
      char *o = realloc (out, len + strlen (item) + 1);
      if (!o)
        {
          free (item);
          break;
        }
      out = o;
      strcpy (out + len, item);
      len += strlen (item);
      free (item);
    }
  return out;
}
