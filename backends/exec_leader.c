/* SPDX-License-Identifier: MIT */
/* The docker backend's job leader (see exec_leader.h). */
#define _GNU_SOURCE
#include "exec_leader.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "process_tree.h"
#include "stdin_feed.h"

#define DRAIN_IDLE_MS 200          /* as the local supervisor: after exit, */

static long long
now_ms (void)
{
  struct timespec ts;
  clock_gettime (CLOCK_MONOTONIC, &ts);
  return (long long) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The broker reads everything we send: a failed write means it is gone,
 * and so must the command be. */
static void
send_frame (uint8_t type, const void *data, uint32_t len)
{
  uint8_t h[XL_HEADER];
  xl_put_header (h, type, len);
  const uint8_t *parts[2] = { h, data };
  size_t lens[2] = { XL_HEADER, len };
  for (int i = 0; i < 2; i++)
    for (size_t off = 0; off < lens[i];)
      {
        ssize_t w = write (1, parts[i] + off, lens[i] - off);
        if (w < 0 && errno == EINTR)
          continue;
        if (w <= 0)
          {
            process_tree_signal (SIGKILL);
            _exit (137);
          }
        off += (size_t) w;
      }
}

static void
close_fd (int *fd)
{
  if (*fd >= 0)
    close (*fd);
  *fd = -1;
}

struct leader {
  int out, err, meta;  /* the command's output pipes (read ends) */
  struct stdin_feed in; /* its stdin pipe (in.fd: write end, -1 without) */
  struct stdin_feed script; /* its script, on its fd 4 (-1 without) */
  uint8_t ctl[XL_HEADER + XL_MAX_PAYLOAD];
  size_t ctl_len;
};

static void
complain (const char *what)
{
  dprintf (2, "airlock job leader: %s\n", what);
}

/* The frames the broker sent so far; false when its end is closed. */
static bool
read_control (struct leader *l)
{
  ssize_t n = read (0, l->ctl + l->ctl_len, sizeof l->ctl - l->ctl_len);
  if (n < 0 && (errno == EINTR || errno == EAGAIN))
    return true;
  if (n <= 0)
    return false;
  l->ctl_len += (size_t) n;
  size_t off = 0;
  while (l->ctl_len - off >= XL_HEADER)
    {
      const uint8_t *f = l->ctl + off;
      uint32_t len = xl_get_u32 (f + 1);
      if (len > XL_MAX_PAYLOAD)
        {
          complain ("oversized frame from the broker: giving up");
          return false;
        }
      if (l->ctl_len - off < XL_HEADER + len)
        break;
      const uint8_t *p = f + XL_HEADER;
      switch (f[0])
        {
        case XL_STDIN:
          if (l->in.fd < 0)
            break; /* no stdin, or the command closed it: dropped */
          switch (stdin_feed_push (&l->in, p, len, false))
            {
            case -1: complain ("stdin backlog over 4 MiB: input dropped"); break;
            case -2: complain ("out of memory: input dropped"); break;
            }
          break;
        case XL_STDIN_EOF:
          stdin_feed_push (&l->in, NULL, 0, true);
          break;
        case XL_SCRIPT:
        case XL_SCRIPT_END:
          /* Dropped once the command stopped reading it (its bash died). */
          if (l->script.fd >= 0
              && stdin_feed_push (&l->script, p, len, f[0] == XL_SCRIPT_END) < 0)
            {
              complain ("script over 4 MiB or out of memory: giving up");
              return false;
            }
          break;
        case XL_SIGNAL:
          if (len == 1 && p[0] > 0 && p[0] < 65)
            process_tree_signal (p[0]);
          break;
        default:
          complain ("unknown frame from the broker: ignored");
        }
      off += XL_HEADER + len;
    }
  memmove (l->ctl, l->ctl + off, l->ctl_len - off);
  l->ctl_len -= off;
  stdin_feed_pump (&l->in);
  stdin_feed_pump (&l->script);
  return true;
}

/* One chunk of one output pipe to the broker; false at end of file. */
static bool
forward (int *fd, uint8_t type)
{
  static char buf[XL_MAX_PAYLOAD];
  ssize_t n = read (*fd, buf, sizeof buf);
  if (n < 0 && (errno == EINTR || errno == EAGAIN))
    return true;
  if (n <= 0)
    {
      close_fd (fd);
      return false;
    }
  send_frame (type, buf, (uint32_t) n);
  return true;
}

int
exec_leader_main (int argc, char **argv)
{
  bool with_stdin = false, with_script = false;
  int i = 1;
  if (i < argc && !strcmp (argv[i], EXEC_LEADER_STDIN_FLAG))
    with_stdin = true, i++;
  if (i < argc && !strcmp (argv[i], EXEC_LEADER_SCRIPT_FLAG))
    with_script = true, i++;
  if (i + 1 >= argc || strcmp (argv[i], "--"))
    {
      fprintf (stderr, "airlock-supervisor " EXEC_LEADER_FLAG ": run by the "
               "docker backend of airlock, not by hand\n");
      return 2;
    }
  char **cmd_argv = argv + i + 1;
  /* Commands run as our uid: they must not ptrace us. */
  prctl (PR_SET_DUMPABLE, 0, 0, 0, 0);
  prctl (PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
  signal (SIGPIPE, SIG_IGN);
  sigset_t chld;
  sigemptyset (&chld);
  sigaddset (&chld, SIGCHLD);
  sigprocmask (SIG_BLOCK, &chld, NULL);
  int sfd = signalfd (-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK);

  static struct leader l;
  int in[2] = { -1, -1 }, out[2], err[2], meta[2], sc[2] = { -1, -1 };
  if (with_stdin ? pipe2 (in, O_CLOEXEC) < 0
                 : (in[0] = open ("/dev/null", O_RDONLY | O_CLOEXEC)) < 0)
    in[0] = -1;
  if (sfd < 0 || in[0] < 0 || pipe2 (out, O_CLOEXEC) || pipe2 (err, O_CLOEXEC)
      || pipe2 (meta, O_CLOEXEC) || (with_script && pipe2 (sc, O_CLOEXEC)))
    {
      fprintf (stderr, "airlock job leader: cannot set up the command: %s\n",
               strerror (errno));
      return 126;
    }
  /* Above fd 4, so that placing the command's fds overwrites none. */
  int fds[5] = { in[0], out[1], err[1], meta[1], sc[0] };
  for (int k = 0; k < 5; k++)
    if (fds[k] >= 0)
      {
        int moved = fcntl (fds[k], F_DUPFD_CLOEXEC, 10);
        close (fds[k]);
        fds[k] = moved;
      }
  pid_t cmd = fork ();
  if (cmd == 0)
    process_tree_exec (cmd_argv, NULL, NULL, fds);
  for (int k = 0; k < 5; k++)
    if (fds[k] >= 0)
      close (fds[k]);
  l.out = out[0];
  l.err = err[0];
  l.meta = meta[0];
  l.in.fd = in[1];
  l.script.fd = sc[1];
  if (l.in.fd >= 0)
    fcntl (l.in.fd, F_SETFL, O_NONBLOCK);
  if (l.script.fd >= 0)
    fcntl (l.script.fd, F_SETFL, O_NONBLOCK);
  if (cmd < 0)
    {
      fprintf (stderr, "airlock job leader: fork: %s\n", strerror (errno));
      return 126;
    }

  bool exited = false, reported = false;
  int status = 0;
  long long drain_until = 0;
  for (;;)
    {
      struct pollfd p[7];
      int fdv[7] = { 0, sfd, l.out, l.err, l.meta,
                     l.in.len ? l.in.fd : -1, l.script.len ? l.script.fd : -1 };
      for (int k = 0; k < 7; k++)
        p[k] = (struct pollfd){ .fd = fdv[k], .events = k >= 5 ? POLLOUT : POLLIN };
      int wait = -1;
      if (exited && !reported)
        {
          long long left = drain_until - now_ms ();
          wait = left < 0 ? 0 : (int) left;
        }
      if (poll (p, 7, wait) < 0 && errno != EINTR)
        return 1;
      if (p[0].revents && !read_control (&l))
        {
          /* The broker is gone (or broke the protocol): nothing of the
           * command may outlive it, and nobody waits for its status.
           * What we leave unreaped, pid 1 (EXEC_INIT_FLAG) reaps. */
          process_tree_signal (SIGKILL);
          _exit (137);
        }
      if (p[5].revents)
        stdin_feed_pump (&l.in);
      if (p[6].revents)
        stdin_feed_pump (&l.script);
      int *outs[3] = { &l.out, &l.err, &l.meta };
      for (int k = 0; k < 3; k++)
        if (p[2 + k].revents && forward (outs[k], (uint8_t) (XL_OUT + k)) && exited)
          drain_until = now_ms () + DRAIN_IDLE_MS;
      if (p[1].revents)
        {
          struct signalfd_siginfo si;
          while (read (sfd, &si, sizeof si) > 0)
            ;
        }
      int ws;
      pid_t r;
      while ((r = waitpid (-1, &ws, WNOHANG)) > 0)
        if (r == cmd)
          {
            exited = true;
            status = ws;
            drain_until = now_ms () + DRAIN_IDLE_MS;
          }
      bool no_children = r < 0 && errno == ECHILD;
      /* Exit reported once the output is drained, or quiet: a background
       * descendant may hold the pipes open for ever. */
      if (exited && !reported
          && ((l.out < 0 && l.err < 0 && l.meta < 0) || now_ms () >= drain_until))
        {
          close_fd (&l.out);
          close_fd (&l.err);
          close_fd (&l.meta);
          stdin_feed_close (&l.in);
          stdin_feed_close (&l.script);
          uint32_t code = WIFEXITED (status) ? (uint32_t) WEXITSTATUS (status) : 0;
          uint32_t sig = WIFSIGNALED (status) ? (uint32_t) WTERMSIG (status) : 0;
          uint8_t payload[8] = { (uint8_t) (code >> 24), (uint8_t) (code >> 16),
                                 (uint8_t) (code >> 8), (uint8_t) code,
                                 (uint8_t) (sig >> 24), (uint8_t) (sig >> 16),
                                 (uint8_t) (sig >> 8), (uint8_t) sig };
          send_frame (XL_EXIT, payload, sizeof payload);
          reported = true;
        }
      if (reported && no_children)
        return WIFSIGNALED (status) ? 128 + WTERMSIG (status) : WEXITSTATUS (status);
    }
}

int
exec_leader_init (void)
{
  if (getpid () != 1)
    {
      fprintf (stderr, "airlock-supervisor " EXEC_INIT_FLAG ": the pid 1 of "
               "airlock's docker containers, not run by hand\n");
      return 2;
    }
  prctl (PR_SET_DUMPABLE, 0, 0, 0, 0);
  /* As pid 1 we get only the signals we handle: SIGTERM (docker stop)
   * ends the container at once. */
  sigset_t set;
  sigemptyset (&set);
  sigaddset (&set, SIGCHLD);
  sigaddset (&set, SIGTERM);
  sigaddset (&set, SIGINT);
  sigprocmask (SIG_BLOCK, &set, NULL);
  int sfd = signalfd (-1, &set, SFD_CLOEXEC);
  if (sfd < 0)
    return 1;
  for (;;)
    {
      struct signalfd_siginfo si;
      if (read (sfd, &si, sizeof si) != sizeof si)
        {
          if (errno == EINTR)
            continue;
          return 1;
        }
      if (si.ssi_signo != SIGCHLD)
        return 0;
      /* Job leaders are exec'd from outside (their parent is not in the
       * container): every child of ours is an orphan of a dead leader or
       * of some other exec, and nothing may outlive its owner. */
      while (waitpid (-1, NULL, WNOHANG) > 0)
        ;
      process_tree_kill_orphans (NULL, 0);
      while (waitpid (-1, NULL, WNOHANG) > 0)
        ;
    }
}
