/* SPDX-License-Identifier: MIT */
/* The local backend's sessions: one sandbox built by airlock-helper whose
 * pid 1 is airlock-supervisor, kept alive between commands.  The broker
 * talks to the helper on one socket (setup and the sandbox's end) and to
 * the supervisor on another (jobs and their streams, supervisor_client.c,
 * shared with the docker backend). */
#define _GNU_SOURCE
#include "local_session.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "local.h"
#include "supervisor_client.h"
#include "cgroup_oom.h"
#include "egress_client.h"
#include "monotonic_ms.h"
#include "posture.h"
#include "xprintf.h"

#ifndef SUPERVISOR_PATH
#define SUPERVISOR_PATH "/usr/local/libexec/airlock/airlock-supervisor"
#endif

/* Where the supervisor binary appears inside the sandbox. */
#define SUPERVISOR_IN_SANDBOX "/.airlock-supervisor"
#define SETUP_TIMEOUT_MS 30000

struct backend_session {
  pid_t helper;
  int helper_fd;     /* reports of the helper */
  uint32_t sandbox_pid;
  uint32_t privilege, limits; /* of the helper's STARTED report */
  int oom_fd;        /* the sandbox's memory cgroup's OOM count, or -1 */
  bool lost;
  char lost_why[256];
  struct local_session_options opts;
  struct sup_client sup; /* sup.fd: the supervisor */
  struct egress egress;  /* network allowlist: airlock-egress */
  struct al_message report;
};

/* Wait for the helper's reports: started (and, with the allowlist
 * network, the tap device, on which airlock-egress then runs), or why
 * not.  The two come from two processes, in either order. */
static int
await_start (struct backend_session *s, char **err)
{
  long long deadline = monotonic_ms () + SETUP_TIMEOUT_MS;
  bool started = false;
  bool need_tap = s->opts.run.network == AL_NET_ALLOWLIST && !s->egress.pid;
  while (!started || need_tap)
    {
      long long left = deadline - monotonic_ms ();
      struct pollfd p = { .fd = s->helper_fd, .events = POLLIN };
      if (left <= 0 || poll (&p, 1, (int) left) <= 0)
        {
          *err = xprintf ("the sandbox did not start within %d s", SETUP_TIMEOUT_MS / 1000);
          return -1;
        }
      int tap = -1;
      ssize_t n = egress_recv_report (s->helper_fd, s->sup.buf, sizeof s->sup.buf, &tap);
      const char *why = "the helper exited without a report";
      if (n <= 0 || (size_t) n > sizeof s->sup.buf
          || al_decode (s->sup.buf, (size_t) n, &s->report, &why) < 0
          || s->report.type != AL_MSG_REPORT)
        {
          if (tap >= 0)
            close (tap);
          *err = xprintf ("the sandbox did not start: %s", why);
          return -1;
        }
      struct al_report *rep = &s->report.u.report;
      if (rep->event == AL_EV_TAP && need_tap)
        {
          if (egress_start (tap, s->opts.run.egress_policy, s->opts.session, "local",
                            &s->egress, err) < 0)
            return -1;
          need_tap = false;
          continue;
        }
      if (tap >= 0)
        close (tap);
      if (rep->event == AL_EV_STARTED && !started)
        {
          s->sandbox_pid = rep->pid;
          s->privilege = rep->privilege;
          s->limits = rep->limits;
          started = true;
          continue;
        }
      if (rep->event == AL_EV_SETUP_FAILED)
        *err = xprintf ("sandbox setup failed (%s): %s%s%s", al_step_name (rep->step),
                        rep->message, rep->err ? ": " : "",
                        rep->err ? strerror ((int) rep->err) : "");
      else
        *err = xprintf ("the sandbox did not start: unexpected report");
      return -1;
    }
  return 0;
}

/* The helper has reported STARTED, but pid 1 may still fail its setup:
 * a ping answered by the supervisor proves the sandbox is up. */
static int
local_health (struct backend_session *s, char **err)
{
  if (s->lost)
    {
      *err = xprintf ("session lost: %s", s->lost_why);
      return -1;
    }
  if (sup_client_ping (&s->sup) < 0)
    {
      *err = xprintf ("the supervisor is gone");
      return -1;
    }
  struct pollfd p[2] = { { .fd = s->sup.fd, .events = POLLIN },
                         { .fd = s->helper_fd, .events = POLLIN } };
  for (;;)
    {
      if (poll (p, 2, SETUP_TIMEOUT_MS) <= 0)
        {
          *err = xprintf ("the supervisor does not answer");
          return -1;
        }
      if (p[1].revents)
        {
          /* The helper speaks only when the sandbox ended or failed. */
          char *why = NULL;
          if (await_start (s, &why) == 0)
            why = xprintf ("the sandbox ended");
          *err = why;
          return -1;
        }
      struct backend_event ev;
      const char *why;
      int r = sup_client_next_event (&s->sup, &ev, &why);
      if (r < 0)
        {
          *err = xprintf ("the supervisor does not answer properly");
          return -1;
        }
      if (r == SUP_CLIENT_PONG)
        return 0;
    }
}

static int
local_spawn (struct backend_session *s, const struct backend_spawn *sp,
             char **err)
{
  return sup_client_spawn (&s->sup, sp, err);
}

static int
local_write_stdin (struct backend_session *s, uint32_t job, const void *data,
                   size_t n, bool eof)
{
  return sup_client_write_stdin (&s->sup, job, data, n, eof);
}

static int
local_resize (struct backend_session *s, uint32_t job, unsigned rows, unsigned cols)
{
  return sup_client_resize (&s->sup, job, rows, cols);
}

static int
local_signal (struct backend_session *s, uint32_t job, int sig)
{
  return sup_client_signal (&s->sup, job, sig);
}

static int
local_event_fd (struct backend_session *s)
{
  return s->sup.fd;
}

static int
lose (struct backend_session *s, char **err, const char *why)
{
  if (!s->lost)
    snprintf (s->lost_why, sizeof s->lost_why, "%s", why);
  s->lost = true;
  *err = xprintf ("%s", s->lost_why);
  return -1;
}

static int
local_next_event (struct backend_session *s, struct backend_event *ev,
                  char **err)
{
  if (s->lost)
    return lose (s, err, s->lost_why);
  const char *why;
  int r = sup_client_next_event (&s->sup, ev, &why);
  if (r < 0)
    return lose (s, err, why);
  return r == 1;
}

static void
local_reach (struct backend_session *s, struct backend_reach *r)
{
  /* The workspace and rw binds are host paths; host networking only when
   * asked (and allowed by helper.conf). */
  r->host_filesystem = true;
  r->host_network = s->opts.run.network == AL_NET_HOST;
  r->isolated = true;
}

static void
local_close (struct backend_session *s)
{
  /* End of file on its socket makes the supervisor, pid 1, exit; the
   * kernel then kills every process in the sandbox, and the helper
   * reports and exits. */
  close (s->sup.fd);
  struct pollfd p = { .fd = s->helper_fd, .events = POLLIN };
  if (poll (&p, 1, 5000) <= 0)
    kill (s->helper, SIGKILL);
  while (waitpid (s->helper, NULL, 0) < 0 && errno == EINTR)
    ;
  close (s->helper_fd);
  egress_stop (&s->egress);
  if (s->oom_fd >= 0)
    close (s->oom_fd);
  free (s);
}

void
local_session_started (struct backend_session *s, uint32_t *privilege,
                       uint32_t *limits)
{
  *privilege = s->privilege;
  *limits = s->limits;
}

/* What the helper set up (its contract: airlock-helper(8)), checked on
 * the supervisor, the sandbox's pid 1. */
static int
local_posture (struct backend_session *s, struct backend_posture *p, char **err)
{
  size_t n = 0;
  static const char *const always[] = { "user", "mount", "pid", "ipc", "uts" };
  for (size_t i = 0; i < 5; i++)
    p->namespaces[n++] = always[i];
  if (s->opts.run.network != AL_NET_HOST)
    p->namespaces[n++] = "net";
  p->namespaces[n++] = "cgroup";
  p->namespaces[n] = NULL;
  p->isolation = "namespaces";
  p->seccomp = true;
  p->no_new_privs = true;
  p->capabilities = 0;
  p->network = s->opts.run.network == AL_NET_NONE        ? "none"
               : s->opts.run.network == AL_NET_HOST      ? "host"
               : s->opts.run.network == AL_NET_ALLOWLIST ? "allowlist"
                                                         : "loopback";
  if (s->opts.run.network == AL_NET_ALLOWLIST)
    p->network_policy = s->egress.hash;
  p->privilege = local_privilege_name (s->privilege);
  return posture_verify ((pid_t) s->sandbox_pid, p, err);
}

/* Only a cgroup of the sandbox's own counts its OOM kills; with rlimits
 * an allocation fails instead, and the sandbox shares the user's group. */
static long long
local_oom_kills (struct backend_session *s)
{
  if (s->oom_fd < 0 && (s->limits == AL_LIMITS_CGROUP_V1 || s->limits == AL_LIMITS_CGROUP_V2))
    s->oom_fd = cgroup_oom_open ((pid_t) s->sandbox_pid);
  return cgroup_oom_kills (s->oom_fd);
}

static const struct backend_ops local_ops = {
  .name = "local",
  .signal = local_signal,
  .spawn = local_spawn,
  .write_stdin = local_write_stdin,
  .resize = local_resize, /* the supervisor opens the sandbox's own devpts */
  .event_fd = local_event_fd,
  .next_event = local_next_event,
  .health = local_health,
  .reach = local_reach,
  .posture = local_posture,
  .oom_kills = local_oom_kills,
  .close = local_close,
};

const struct backend_ops *
local_session_ops (void)
{
  return &local_ops;
}

struct backend_session *
local_session_open (const struct local_session_options *o, char **err)
{
  struct backend_session *s = calloc (1, sizeof *s);
  if (!s)
    {
      *err = xprintf ("out of memory");
      return NULL;
    }
  s->opts = *o;
  s->oom_fd = -1;
  s->egress.control = -1;
  struct local_run *r = &s->opts.run;
  const char *supervisor = o->supervisor ? o->supervisor : SUPERVISOR_PATH;
  static const char *argv[] = { SUPERVISOR_IN_SANDBOX, NULL };
  r->argv = argv;
  r->as_init = true;
  if (r->n_binds_ro >= AL_MAX_BINDS)
    {
      *err = xprintf ("too many binds");
      free (s);
      return NULL;
    }
  r->binds_ro[r->n_binds_ro++] = (struct al_bind){ supervisor, SUPERVISOR_IN_SANDBOX };

  int hc[2], sc[2];
  if (socketpair (AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, hc) < 0
      || socketpair (AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sc) < 0)
    {
      *err = xprintf ("socketpair: %s", strerror (errno));
      free (s);
      return NULL;
    }
  int null = open ("/dev/null", O_RDWR | O_CLOEXEC);
  int stdio[3] = { sc[1], sc[1], o->log_fd >= 0 ? o->log_fd : null };
  sigset_t cur;
  sigprocmask (SIG_SETMASK, NULL, &cur);
  s->helper = local_spawn_helper (r->helper, hc[1], stdio, &cur);
  close (hc[1]);
  close (sc[1]);
  close (null);
  s->helper_fd = hc[0];
  s->sup.fd = sc[0];
  if (s->helper < 0 || !local_build_request (r, &s->sup.w)
      || send (s->helper_fd, s->sup.w.buf, s->sup.w.len, MSG_NOSIGNAL) != (ssize_t) s->sup.w.len
      || await_start (s, err) < 0 || local_health (s, err) < 0)
    {
      if (!*err)
        *err = xprintf ("cannot start the helper %s: %s", r->helper, strerror (errno));
      if (s->helper > 0)
        kill (s->helper, SIGKILL);
      local_close (s);
      return NULL;
    }
  return s;
}
