/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
#include "local.h"
#include "cgroup_oom.h"
#include "egress_client.h"
#include "installed_file.h"
#include "size_text.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

const char *
local_privilege_name (uint32_t privilege)
{
  static const char *const names[] = {
    [AL_PRIV_UNPRIVILEGED] = "unprivileged", [AL_PRIV_SETUID] = "setuid",
    [AL_PRIV_FILECAPS] = "file-capabilities", [AL_PRIV_ROOT] = "root",
  };
  return privilege < sizeof names / sizeof names[0] && names[privilege]
             ? names[privilege] : "unknown";
}

const char *
local_limits_name (uint32_t limits)
{
  static const char *const names[] = {
    [AL_LIMITS_RLIMIT] = "rlimits (no cgroup available to the helper)",
    [AL_LIMITS_CGROUP_V1] = "cgroup v1 (pids, memory)",
    [AL_LIMITS_CGROUP_V2] = "cgroup v2 (pids, memory)",
  };
  return limits < sizeof names / sizeof names[0] && names[limits]
             ? names[limits] : "unknown";
}

bool
local_build_request (const struct local_run *r, struct al_writer *w)
{
  al_begin (w, AL_MSG_RUN);
  for (const char **a = r->argv; *a; a++)
    al_put_str (w, AL_F_ARGV, *a);
  for (const char **e = r->envp; *e; e++)
    al_put_str (w, AL_F_ENV, *e);
  al_put_str (w, AL_F_WORKDIR, r->workdir);
  if (r->rootfs)
    al_put_str (w, AL_F_ROOTFS, r->rootfs);
  for (uint32_t i = 0; i < r->n_binds_ro; i++)
    al_put_pair (w, AL_F_BIND_RO, r->binds_ro[i].src, r->binds_ro[i].dst);
  for (uint32_t i = 0; i < r->n_binds_rw; i++)
    al_put_pair (w, AL_F_BIND_RW, r->binds_rw[i].src, r->binds_rw[i].dst);
  if (r->network == AL_NET_ALLOWLIST)
    al_put_pair (w, AL_F_BIND_RO, r->egress_resolv_conf, "/etc/resolv.conf");
  al_put_u32 (w, AL_F_NETWORK, r->network);
  al_put_u32 (w, AL_F_TIMEOUT_SEC, r->timeout_sec);
  al_put_u64 (w, AL_F_MEMORY_MAX, r->memory_max);
  al_put_u32 (w, AL_F_PIDS_MAX, r->pids_max);
  if (r->as_init)
    al_put_u32 (w, AL_F_AS_INIT, 1);
  for (uint32_t i = 0; i < r->n_masks; i++)
    al_put_str (w, AL_F_MASK, r->masks[i]);
  return al_finish (w) > 0;
}

/* posix_spawn, not fork: glibc's vfork-style clone copies none of the
 * broker's (or the daemon's) page tables only for an exec. */
pid_t
local_spawn_helper (const char *helper, int their_end, const int stdio[3],
                    const sigset_t *old_mask)
{
  posix_spawn_file_actions_t fa;
  posix_spawnattr_t at;
  posix_spawn_file_actions_init (&fa);
  posix_spawnattr_init (&at);
  posix_spawnattr_setsigmask (&at, old_mask);
  posix_spawnattr_setflags (&at, POSIX_SPAWN_SETSIGMASK);
  /* A copy of the channel out of the way of stdio: placed last, on 3. */
  int chan = fcntl (their_end, F_DUPFD_CLOEXEC, 10);
  for (int i = 0; stdio && i < 3; i++)
    if (stdio[i] != i)
      posix_spawn_file_actions_adddup2 (&fa, stdio[i], i);
  posix_spawn_file_actions_adddup2 (&fa, chan, 3);
  posix_spawn_file_actions_addclosefrom_np (&fa, 4);
  /* The helper clears its environment anyway; give it none to begin with. */
  char *const argv[] = { (char *) "airlock-helper", NULL };
  char *const envp[] = { NULL };
  pid_t pid = -1;
  int e = chan < 0 ? errno : posix_spawn (&pid, helper, &fa, &at, argv, envp);
  posix_spawn_file_actions_destroy (&fa);
  posix_spawnattr_destroy (&at);
  if (chan >= 0)
    close (chan);
  if (e == 0)
    return pid;
  char hint[256];
  dprintf (stdio ? stdio[2] : 2, "airlock: cannot run the helper %s: %s (%s)\n",
           helper, strerror (e),
           e == ENOENT || e == ENOTDIR
             ? installed_file_hint (helper, "AIRLOCK_HELPER", hint, sizeof hint)
             : "install airlock, or point AIRLOCK_HELPER at airlock-helper");
  errno = e;
  return -1;
}

/* The sandbox's OOM-kill count, where it has a memory cgroup of its own:
 * read when it starts and again when it is killed.  A later sandbox start
 * removes the group; a count that can no longer be read claims nothing. */
struct oom_watch {
  int fd;
  long long before;
};

/* Turn one report into an exit code, or -1 to keep waiting. */
static int
handle_report (const struct al_report *rep, const struct local_run *r,
               struct oom_watch *oom)
{
  switch (rep->event)
    {
    case AL_EV_STARTED:
      if (r->verbose)
        fprintf (stderr, "airlock: sandbox started, pid %u, helper: %s, "
                 "limits: %s\n", rep->pid, local_privilege_name (rep->privilege),
                 local_limits_name (rep->limits));
      if (rep->limits == AL_LIMITS_CGROUP_V1 || rep->limits == AL_LIMITS_CGROUP_V2)
        {
          oom->fd = cgroup_oom_open ((pid_t) rep->pid);
          oom->before = cgroup_oom_kills (oom->fd);
        }
      return -1;
    case AL_EV_SETUP_FAILED:
      fprintf (stderr, "airlock: sandbox setup failed (%s): %s%s%s\n",
               al_step_name (rep->step), rep->message, rep->err ? ": " : "",
               rep->err ? strerror ((int) rep->err) : "");
      return AIRLOCK_EXIT_SETUP;
    case AL_EV_EXITED:
      if (rep->timed_out)
        {
          fprintf (stderr, "airlock: command timed out after %u s; the "
                   "sandbox and every process in it were killed\n",
                   r->timeout_sec);
          return AIRLOCK_EXIT_TIMEOUT;
        }
      if (rep->present >> (AL_F_SIGNAL - AL_F_EVENT) & 1)
        {
          if (rep->signal == SIGKILL && oom->before >= 0
              && cgroup_oom_kills (oom->fd) > oom->before)
            {
              char limit[32] = "";
              if (r->memory_max)
                size_format (r->memory_max, limit, sizeof limit);
              fprintf (stderr, "airlock: killed: out of memory%s%s%s\n",
                       *limit ? " (limit " : "", limit, *limit ? ")" : "");
            }
          return 128 + (int) rep->signal;
        }
      return (int) rep->exit_code;
    default:
      return -1;
    }
}

int
local_run (const struct local_run *r)
{
  static struct al_writer w;
  static struct al_message msg;
  if (!local_build_request (r, &w))
    {
      fprintf (stderr, "airlock: the command, environment and binds exceed "
               "the protocol's limits (%d bytes, %d arguments)\n",
               AL_MAX_MESSAGE, AL_MAX_ARGV);
      return AIRLOCK_EXIT_SETUP;
    }
  int sv[2];
  if (socketpair (AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
    {
      perror ("airlock: socketpair");
      return AIRLOCK_EXIT_SETUP;
    }
  /* Stop requests go to the helper, which kills the sandbox and reports. */
  sigset_t stop, old;
  sigemptyset (&stop);
  sigaddset (&stop, SIGINT);
  sigaddset (&stop, SIGTERM);
  sigaddset (&stop, SIGHUP);
  sigaddset (&stop, SIGQUIT);
  sigprocmask (SIG_BLOCK, &stop, &old);
  int sfd = signalfd (-1, &stop, SFD_CLOEXEC);
  pid_t helper = local_spawn_helper (r->helper, sv[1], NULL, &old);
  close (sv[1]);
  if (helper < 0)
    return AIRLOCK_EXIT_SETUP; /* it said why */
  if (sfd < 0)
    {
      perror ("airlock: cannot start the helper");
      return AIRLOCK_EXIT_SETUP;
    }
  if (send (sv[0], w.buf, w.len, MSG_NOSIGNAL) != (ssize_t) w.len)
    {
      /* The helper already died; its reason is on stderr. */
      waitpid (helper, NULL, 0);
      return AIRLOCK_EXIT_SETUP;
    }

  int code = -1, stop_sig = 0;
  struct oom_watch oom = { .fd = -1, .before = -1 };
  struct egress egress = { .control = -1 };
  static uint8_t buf[AL_MAX_MESSAGE];
  while (code < 0)
    {
      struct pollfd pfd[2] = { { .fd = sv[0], .events = POLLIN },
                               { .fd = sfd, .events = POLLIN } };
      if (poll (pfd, 2, -1) < 0)
        {
          if (errno == EINTR)
            continue;
          break;
        }
      if (pfd[1].revents & POLLIN)
        {
          struct signalfd_siginfo si;
          if (read (sfd, &si, sizeof si) == sizeof si)
            {
              stop_sig = stop_sig ? stop_sig : (int) si.ssi_signo;
              kill (helper, (int) si.ssi_signo);
            }
        }
      if (!(pfd[0].revents & (POLLIN | POLLHUP | POLLERR)))
        continue;
      int tap = -1;
      ssize_t n = egress_recv_report (sv[0], buf, sizeof buf, &tap);
      if (n <= 0)
        break; /* the helper is gone */
      const char *why = NULL;
      if ((size_t) n > sizeof buf || al_decode (buf, (size_t) n, &msg, &why) < 0
          || msg.type != AL_MSG_REPORT)
        {
          fprintf (stderr, "airlock: malformed report from the helper: %s\n",
                   why ? why : "wrong size or type");
          kill (helper, SIGKILL);
          code = AIRLOCK_EXIT_SETUP;
          break;
        }
      if (msg.u.report.event == AL_EV_TAP)
        {
          /* Once, and only when asked for: the stack decides every flow. */
          char *err = NULL;
          int started = -1;
          if (r->network == AL_NET_ALLOWLIST && !egress.pid)
            started = egress_start (tap, r->egress_policy, NULL, "local", &egress, &err);
          else if (tap >= 0)
            close (tap);
          if (started < 0)
            {
              fprintf (stderr, "airlock: %s\n", err ? err : "unexpected tap device from the helper");
              free (err);
              kill (helper, SIGKILL);
              code = AIRLOCK_EXIT_SETUP;
              break;
            }
          if (r->verbose)
            fprintf (stderr, "airlock: network allowlist %s, airlock-egress pid %d\n",
                     egress.hash, (int) egress.pid);
          continue;
        }
      if (tap >= 0)
        close (tap);
      code = handle_report (&msg.u.report, r, &oom);
    }
  egress_stop (&egress);
  int ws = 0;
  while (waitpid (helper, &ws, 0) < 0 && errno == EINTR)
    ;
  close (sv[0]);
  close (sfd);
  if (oom.fd >= 0)
    close (oom.fd);
  if (code < 0 && stop_sig && WIFSIGNALED (ws) && WTERMSIG (ws) == stop_sig)
    /* Stopped before the helper could block signals: nothing had started. */
    code = 128 + stop_sig;
  if (code < 0)
    {
      if (!(WIFEXITED (ws) && WEXITSTATUS (ws) == AIRLOCK_EXIT_SETUP))
        fprintf (stderr, "airlock: airlock-helper ended without a result (%s %d)\n",
                 WIFSIGNALED (ws) ? "signal" : "status",
                 WIFSIGNALED (ws) ? WTERMSIG (ws) : WEXITSTATUS (ws));
      code = AIRLOCK_EXIT_SETUP;
    }
  return code;
}
