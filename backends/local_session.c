/* SPDX-License-Identifier: MIT */
/* The local backend's sessions: one sandbox built by airlock-helper whose
 * pid 1 is airlock-supervisor, kept alive between commands.  The broker
 * talks to the helper on one socket (setup and the sandbox's end) and to
 * the supervisor on another (jobs and their streams).  Everything the
 * supervisor sends is untrusted: code in the sandbox runs as the same uid
 * and could forge it; it is decoded strictly and only ever describes the
 * sandbox's own jobs. */
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
#include "supervisor_protocol.h"
#include "cgroup_oom.h"
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
  int sup_fd;        /* the supervisor */
  uint32_t sandbox_pid;
  uint32_t privilege, limits; /* of the helper's STARTED report */
  int oom_fd;        /* the sandbox's memory cgroup's OOM count, or -1 */
  bool lost;
  char lost_why[256];
  struct local_session_options opts;
  struct al_writer w;
  uint8_t buf[AL_MAX_MESSAGE];
  struct sup_msg msg;
  struct al_message report;
};

static int
send_w (struct backend_session *s)
{
  size_t n = al_finish (&s->w);
  if (n == 0)
    return -EMSGSIZE;
  if (send (s->sup_fd, s->w.buf, n, MSG_NOSIGNAL) != (ssize_t) n)
    return -errno;
  return 0;
}

/* Wait for the helper's first report: started, or why not. */
static int
await_start (struct backend_session *s, char **err)
{
  struct pollfd p = { .fd = s->helper_fd, .events = POLLIN };
  int r = poll (&p, 1, SETUP_TIMEOUT_MS);
  if (r <= 0)
    {
      *err = xprintf ("the sandbox did not start within %d s", SETUP_TIMEOUT_MS / 1000);
      return -1;
    }
  ssize_t n = recv (s->helper_fd, s->buf, sizeof s->buf, 0);
  const char *why = "the helper exited without a report";
  if (n > 0 && al_decode (s->buf, (size_t) n, &s->report, &why) == 0
      && s->report.type == AL_MSG_REPORT)
    {
      struct al_report *rep = &s->report.u.report;
      if (rep->event == AL_EV_STARTED)
        {
          s->sandbox_pid = rep->pid;
          s->privilege = rep->privilege;
          s->limits = rep->limits;
          return 0;
        }
      if (rep->event == AL_EV_SETUP_FAILED)
        {
          *err = xprintf ("sandbox setup failed (%s): %s%s%s", al_step_name (rep->step),
                          rep->message, rep->err ? ": " : "",
                          rep->err ? strerror ((int) rep->err) : "");
          return -1;
        }
      why = "unexpected report";
    }
  *err = xprintf ("the sandbox did not start: %s", why);
  return -1;
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
  sup_begin (&s->w, SUP_PING);
  if (send_w (s) < 0)
    {
      *err = xprintf ("the supervisor is gone");
      return -1;
    }
  struct pollfd p[2] = { { .fd = s->sup_fd, .events = POLLIN },
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
      ssize_t n = recv (s->sup_fd, s->buf, sizeof s->buf, 0);
      const char *why;
      if (n <= 0 || sup_decode (s->buf, (size_t) n, &s->msg, &why) < 0)
        {
          *err = xprintf ("the supervisor does not answer properly");
          return -1;
        }
      if (s->msg.type == SUP_PONG)
        return 0;
    }
}

/* Data for one of a job's input pipes (SUP_STDIN or SUP_SCRIPT), in
 * messages of at most SUP_MAX_DATA bytes. */
static int
send_chunks (struct backend_session *s, enum sup_msg_type type, uint32_t job,
             const void *data, size_t n, bool eof)
{
  const uint8_t *p = data;
  do
    {
      size_t chunk = n > SUP_MAX_DATA ? SUP_MAX_DATA : n;
      sup_begin (&s->w, type);
      sup_put_u32 (&s->w, SUP_F_JOB, job);
      sup_put_bytes (&s->w, SUP_F_DATA, p, chunk);
      sup_put_u32 (&s->w, SUP_F_EOF, eof && chunk == n);
      int rc = send_w (s);
      if (rc < 0)
        return rc;
      p += chunk;
      n -= chunk;
    }
  while (n > 0);
  return 0;
}

static int
local_spawn (struct backend_session *s, const struct backend_spawn *sp,
             char **err)
{
  sup_begin (&s->w, SUP_SPAWN);
  sup_put_u32 (&s->w, SUP_F_JOB, sp->job);
  for (const char *const *a = sp->argv; *a; a++)
    sup_put_str (&s->w, SUP_F_ARGV, *a);
  for (const char *const *e = sp->envp; e && *e; e++)
    sup_put_str (&s->w, SUP_F_ENV, *e);
  sup_put_str (&s->w, SUP_F_CWD, sp->cwd);
  sup_put_u32 (&s->w, SUP_F_STDIN, sp->stdin_pipe);
  sup_put_u32 (&s->w, SUP_F_SCRIPT, sp->script != NULL);
  int rc = send_w (s);
  /* The script follows on its own pipe (backend.h): never in argv. */
  if (rc == 0 && sp->script)
    rc = send_chunks (s, SUP_SCRIPT, sp->job, sp->script, sp->script_len, true);
  if (rc < 0)
    *err = xprintf ("cannot start the command: %s", strerror (-rc));
  return rc;
}

static int
local_write_stdin (struct backend_session *s, uint32_t job, const void *data,
                   size_t n, bool eof)
{
  return send_chunks (s, SUP_STDIN, job, data, n, eof);
}

static int
local_signal (struct backend_session *s, uint32_t job, int sig)
{
  sup_begin (&s->w, SUP_SIGNAL);
  sup_put_u32 (&s->w, SUP_F_JOB, job);
  sup_put_u32 (&s->w, SUP_F_SIGNAL, (uint32_t) sig);
  return send_w (s);
}

static int
local_event_fd (struct backend_session *s)
{
  return s->sup_fd;
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
  ssize_t n = recv (s->sup_fd, s->buf, sizeof s->buf, MSG_DONTWAIT | MSG_TRUNC);
  if (n < 0 && (errno == EAGAIN || errno == EINTR))
    return 0;
  if (n <= 0)
    return lose (s, err, "the sandbox's supervisor exited");
  const char *why;
  if ((size_t) n > sizeof s->buf || sup_decode (s->buf, (size_t) n, &s->msg, &why) < 0)
    return lose (s, err, "the supervisor sent a malformed message");
  struct sup_msg *m = &s->msg;
  *ev = (struct backend_event){ .job = m->job };
  switch (m->type)
    {
    case SUP_STARTED:
      ev->type = BACKEND_STARTED;
      ev->pid = m->pid;
      return 1;
    case SUP_OUTPUT:
      ev->type = BACKEND_OUTPUT;
      ev->stream = (int) m->stream;
      ev->data = m->data;
      ev->len = m->data_len;
      return 1;
    case SUP_EXITED:
      ev->type = BACKEND_EXITED;
      ev->exit_code = (int) m->exit_code;
      ev->signal = SUP_HAS (m, SUP_F_SIGNAL) ? (int) m->signal : 0;
      return 1;
    case SUP_ERROR:
      ev->type = BACKEND_ERROR;
      ev->message = m->message;
      return 1;
    case SUP_PONG:
      return 0;
    default:
      return lose (s, err, "the supervisor sent a request");
    }
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
  close (s->sup_fd);
  struct pollfd p = { .fd = s->helper_fd, .events = POLLIN };
  if (poll (&p, 1, 5000) <= 0)
    kill (s->helper, SIGKILL);
  while (waitpid (s->helper, NULL, 0) < 0 && errno == EINTR)
    ;
  close (s->helper_fd);
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
  p->network = s->opts.run.network == AL_NET_NONE   ? "none"
               : s->opts.run.network == AL_NET_HOST ? "host"
                                                    : "loopback";
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
  s->sup_fd = sc[0];
  if (s->helper < 0 || !local_build_request (r, &s->w)
      || send (s->helper_fd, s->w.buf, s->w.len, MSG_NOSIGNAL) != (ssize_t) s->w.len
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
