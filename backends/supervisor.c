/* SPDX-License-Identifier: MIT */
/* airlock-supervisor: pid 1 of a local session sandbox, unprivileged.
 *
 * It reads requests from the broker on fd 0 (a SOCK_SEQPACKET socket,
 * messages of supervisor_protocol.h), starts each command as a job, streams
 * the job's stdout and stderr back, feeds its stdin, and reports its exit.
 *
 * Every job has a leader: a small process of ours that is a child
 * subreaper.  Whatever the command starts, including processes that call
 * setsid() or double-fork, stays a descendant of its leader (orphans are
 * reparented to the nearest subreaper), so a signal request reaches the
 * job's whole tree, and nothing else.
 *
 * A leader that dies takes its tree with it: its command has
 * PR_SET_PDEATHSIG, and whatever else it had is reparented to us, pid 1;
 * since a live leader keeps its own orphans, anything we adopt that is not
 * a leader is an orphan of a dead one, and we kill it with its tree
 * (process_tree_kill_orphans).  The job then ends with an error naming the
 * cause, never with an exit code of the leader's.
 *
 * In a docker session it is the container's pid 1 (EXEC_INIT_FLAG): there
 * is no helper to hand it a socket, so it connects to the broker's, in a
 * directory bind-mounted read-only at SUP_CONTAINER_DIR, and serves the
 * same protocol on it.  The container outlives a broker that goes away
 * (a new daemon reuses it): then every job is killed with its tree, as a
 * local sandbox's end would, and it waits for the next broker.
 *
 * In a singularity session it is a process of the instance, started by
 * `exec instance://NAME` (EXEC_INSTANCE_FLAG), not its pid 1: a child
 * subreaper, so that its jobs' orphans stay below it.  It reads a token
 * on its stdin (the broker's pipe), connects to the broker's socket as in
 * a container, and proves itself with the token: anything else in the
 * instance runs as our uid and can reach the socket too, but not the
 * pipe.  When the broker goes away it kills every job with its tree and
 * exits: the instance's own init would reap orphans but leave them
 * running.
 *
 * A job may run on a terminal (SUP_SPAWN with ROWS, COLS and TERM): a
 * pseudo-terminal of the sandbox's own devpts instance, whose slave is
 * the command's stdin, stdout and stderr and its controlling terminal.
 * Its output is the master's one byte stream (stream 1); its input is
 * written to the master, and the end of input is the terminal's EOF
 * character, as a person types it, not a close (which would hang the
 * terminal up).
 *
 * Built static: in a --rootfs sandbox there may be no libc to load. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdnoreturn.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "process_tree.h"
#include "stdin_feed.h"
#include "terminal_eof.h"
#include "supervisor_protocol.h"
#include "monotonic_ms.h"

#define CONTROL_FD 0
#define DRAIN_IDLE_MS 200          /* after exit, output that pauses this long is done */
#define CONNECT_RETRY_MS 1000      /* at most, a container's pid 1 waiting for its broker */

struct job {
  uint32_t id;    /* 0: free slot */
  pid_t leader;   /* 0 once reaped */
  int out_fd, err_fd, meta_fd, ctl_fd, status_fd;
  struct stdin_feed in; /* in.fd: the job's stdin pipe, -1 without */
  struct stdin_feed script; /* its script, on the job's fd 4; -1 without */
  int pty_fd;     /* a terminal job's master (window size, EOF char); else -1 */
  bool mid_line;  /* a terminal job's input so far does not end a line */
  bool exited, reported;
  bool lost;      /* the leader died before reporting the command's end */
  int wait_status;
  long long drain_until_ms;
};

static struct job jobs[SUP_MAX_JOBS];
static struct al_writer out_msg;
static bool container_init; /* pid 1 of a docker container (see above) */
static bool instance;       /* in a singularity instance (see above) */
static bool broker_gone;    /* container_init, instance: CONTROL_FD's broker left */

static void
send_msg (void)
{
  size_t n = al_finish (&out_msg);
  if (broker_gone)
    return;
  if (n && send (CONTROL_FD, out_msg.buf, n, MSG_NOSIGNAL) < 0
      && (errno == EPIPE || errno == ECONNRESET))
    {
      if (!container_init && !instance)
        _exit (0); /* the broker is gone: leaving ends the whole sandbox */
      broker_gone = true;
    }
}

static void
send_error (uint32_t job, const char *fmt, const char *arg)
{
  char text[512];
  snprintf (text, sizeof text, fmt, arg);
  sup_begin (&out_msg, SUP_ERROR);
  if (job)
    sup_put_u32 (&out_msg, SUP_F_JOB, job);
  sup_put_str (&out_msg, SUP_F_MESSAGE, text);
  send_msg ();
}

static void
close_fd (int *fd)
{
  if (*fd >= 0)
    close (*fd);
  *fd = -1;
}

/* Every descriptor a job holds in the supervisor. */
static void
release_fds (struct job *j)
{
  close_fd (&j->out_fd);
  close_fd (&j->err_fd);
  close_fd (&j->meta_fd);
  close_fd (&j->ctl_fd);
  close_fd (&j->status_fd);
  close_fd (&j->pty_fd);
  stdin_feed_close (&j->in);
  stdin_feed_close (&j->script);
}

/* ---- the job leader ---- */

static int
compare_fd (const void *a, const void *b)
{
  return *(const int *) a - *(const int *) b;
}

/* Close every descriptor from 3 up but the n in keep (-1 entries are
 * ignored).  A leader is forked from the supervisor and would otherwise
 * hold every other job's pipes: a job whose input was closed would not see
 * its end while a later job's leader lives. */
static void
close_all_but (int *keep, size_t n)
{
  qsort (keep, n, sizeof *keep, compare_fd);
  unsigned from = 3;
  for (size_t i = 0; i < n; i++)
    if (keep[i] >= (int) from)
      {
        if (keep[i] > (int) from)
          close_range (from, (unsigned) keep[i] - 1, 0);
        from = (unsigned) keep[i] + 1;
      }
  close_range (from, ~0U, 0);
}

static noreturn void
leader_main (const struct sup_msg *m, int fds[5], int ctl_fd, int status_fd)
{
  /* A terminal job's command finds its TERM, over whatever envp had. */
  static const char *envp[SUP_MAX_ENV + 2];
  static char term[sizeof "TERM=" + SUP_MAX_TERM];
  size_t n = 0;
  for (uint32_t i = 0; i < m->envc; i++)
    if (!m->term || strncmp (m->envp[i], "TERM=", 5))
      envp[n++] = m->envp[i];
  if (m->term)
    {
      snprintf (term, sizeof term, "TERM=%s", m->term);
      envp[n++] = term;
    }
  envp[n] = NULL;
  prctl (PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
  prctl (PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
  /* Above fd 4, so that placing the job's fds overwrites none. */
  for (int i = 0; i < 5; i++)
    if (fds[i] >= 0)
      {
        int moved = fcntl (fds[i], F_DUPFD_CLOEXEC, 10);
        close (fds[i]);
        fds[i] = moved;
      }
  int keep[] = { fds[0], fds[1], fds[2], fds[3], fds[4], ctl_fd, status_fd };
  close_all_but (keep, sizeof keep / sizeof *keep);
  pid_t cmd = fork ();
  if (cmd == 0)
    /* fds 0-2 are the job's stdio; fd 3 is its metadata channel (stream
     * 3), where the session's shell wrapper reports the working
     * directory; fd 4 its script, which the supervisor writes. */
    process_tree_exec ((char *const *) m->argv, (char *const *) envp,
                       m->cwd, fds, m->term != NULL);
  for (int i = 0; i < 5; i++)
    if (fds[i] >= 0)
      close (fds[i]);
  if (cmd < 0)
    _exit (126);
  sigset_t chld;
  sigemptyset (&chld);
  sigaddset (&chld, SIGCHLD);
  int sfd = signalfd (-1, &chld, SFD_CLOEXEC);
  bool cmd_done = false;
  for (;;)
    {
      struct pollfd p[2] = { { .fd = ctl_fd, .events = POLLIN },
                             { .fd = sfd, .events = POLLIN } };
      if (poll (p, 2, -1) < 0 && errno != EINTR)
        _exit (1);
      if (p[0].revents)
        {
          unsigned char sig;
          if (read (ctl_fd, &sig, 1) == 1)
            process_tree_signal (sig);
          else
            {
              process_tree_signal (SIGKILL); /* the supervisor is gone */
              _exit (0);
            }
        }
      if (p[1].revents)
        {
          struct signalfd_siginfo si;
          if (read (sfd, &si, sizeof si) < 0)
            continue;
        }
      int ws;
      pid_t r;
      while ((r = waitpid (-1, &ws, WNOHANG)) > 0)
        if (r == cmd)
          {
            if (write (status_fd, &ws, sizeof ws) != sizeof ws)
              _exit (1);
            close (status_fd);
            cmd_done = true;
          }
      if (r < 0 && errno == ECHILD && cmd_done)
        _exit (0); /* the whole tree is gone */
    }
}

/* ---- the supervisor ---- */

static struct job *
find_job (uint32_t id)
{
  for (size_t i = 0; i < SUP_MAX_JOBS; i++)
    if (jobs[i].id == id)
      return &jobs[i];
  return NULL;
}

static int
dup_cloexec (int fd)
{
  return fcntl (fd, F_DUPFD_CLOEXEC, 0);
}

/* A new pseudo-terminal of the sandbox's devpts instance, unlocked, at the
 * job's window size: 0 with both ends, or -1 (errno).  The slave is taken
 * from the master itself (TIOCGPTPEER), so no path can swap it. */
static int
open_terminal (const struct sup_msg *m, int *master, int *slave)
{
  int fd = open ("/dev/pts/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (fd < 0)
    fd = open ("/dev/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (fd < 0)
    return -1;
  int unlock = 0;
  struct winsize ws = { .ws_row = (unsigned short) m->rows,
                        .ws_col = (unsigned short) m->cols };
  int peer = -1;
  if (ioctl (fd, TIOCSPTLCK, &unlock) == 0 && ioctl (fd, TIOCSWINSZ, &ws) == 0)
    peer = ioctl (fd, TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (peer < 0)
    {
      int e = errno;
      close (fd);
      errno = e;
      return -1;
    }
  *master = fd;
  *slave = peer;
  return 0;
}

static void
spawn (const struct sup_msg *m)
{
  if (find_job (m->job))
    return send_error (m->job, "job %s already exists", "");
  struct job *j = find_job (0);
  if (!j)
    return send_error (m->job, "too many jobs (%s)", "256");
  int in[2] = { -1, -1 }, out[2], err[2] = { -1, -1 }, meta[2], ctl[2], st[2],
      sc[2] = { -1, -1 }, pty = -1;
  if (m->term)
    {
      /* The slave is the command's stdio; the master is read (out),
       * written (in) and sized (pty), each through its own descriptor. */
      int slave;
      if (open_terminal (m, &out[0], &slave) < 0)
        return send_error (m->job, "cannot open a terminal: %s", strerror (errno));
      in[0] = slave;
      out[1] = dup_cloexec (slave);
      err[1] = dup_cloexec (slave);
      in[1] = dup_cloexec (out[0]);
      pty = dup_cloexec (out[0]);
      if (out[1] < 0 || err[1] < 0 || in[1] < 0 || pty < 0)
        return send_error (m->job, "terminal: %s", strerror (errno));
    }
  else if (m->stdin_mode ? pipe2 (in, O_CLOEXEC) : (in[0] = open ("/dev/null", O_RDONLY | O_CLOEXEC)) < 0)
    return send_error (m->job, "stdin: %s", strerror (errno));
  if ((!m->term && (pipe2 (out, O_CLOEXEC) || pipe2 (err, O_CLOEXEC)))
      || pipe2 (meta, O_CLOEXEC)
      || pipe2 (ctl, O_CLOEXEC) || pipe2 (st, O_CLOEXEC)
      || (m->script && pipe2 (sc, O_CLOEXEC)))
    return send_error (m->job, "pipe: %s", strerror (errno));
  pid_t leader = fork ();
  if (leader == 0)
    {
      close (CONTROL_FD);
      if (in[1] >= 0)
        close (in[1]);
      if (sc[1] >= 0)
        close (sc[1]);
      close (out[0]);
      if (err[0] >= 0)
        close (err[0]);
      if (pty >= 0)
        close (pty);
      close (meta[0]);
      close (ctl[1]);
      close (st[0]);
      int fds[5] = { in[0], out[1], err[1], meta[1], sc[0] };
      leader_main (m, fds, ctl[0], st[1]);
    }
  close (in[0]);
  if (sc[0] >= 0)
    close (sc[0]);
  close (out[1]);
  close (err[1]);
  close (meta[1]);
  close (ctl[0]);
  close (st[1]);
  *j = (struct job){ .id = m->job, .leader = leader, .out_fd = out[0],
                     .err_fd = err[0], .meta_fd = meta[0], .in = { .fd = in[1] },
                     .script = { .fd = sc[1] }, .ctl_fd = ctl[1], .status_fd = st[0],
                     .pty_fd = pty };
  if (j->in.fd >= 0)
    fcntl (j->in.fd, F_SETFL, O_NONBLOCK);
  if (j->script.fd >= 0)
    fcntl (j->script.fd, F_SETFL, O_NONBLOCK);
  fcntl (j->status_fd, F_SETFL, O_NONBLOCK); /* read after the leader died too */
  if (leader < 0)
    {
      send_error (m->job, "fork: %s", strerror (errno));
      release_fds (j);
      *j = (struct job){ .id = 0 };
      return;
    }
  sup_begin (&out_msg, SUP_STARTED);
  sup_put_u32 (&out_msg, SUP_F_JOB, m->job);
  sup_put_u32 (&out_msg, SUP_F_PID, (uint32_t) leader);
  send_msg ();
}

static void
job_note (const struct job *j, const char *text)
{
  sup_begin (&out_msg, SUP_OUTPUT);
  sup_put_u32 (&out_msg, SUP_F_JOB, j->id);
  sup_put_u32 (&out_msg, SUP_F_STREAM, 2);
  sup_put_bytes (&out_msg, SUP_F_DATA, text, strlen (text));
  send_msg ();
}

/* Input for a terminal job.  Its end is the terminal's EOF character, as
 * typed: twice after an unfinished line (the first only ends the line),
 * nothing when the terminal has none (raw mode programs read bytes). */
static int
push_terminal_input (struct job *j, const uint8_t *data, size_t n, bool eof)
{
  int rc = stdin_feed_push (&j->in, data, n, false);
  if (rc < 0)
    return rc;
  j->mid_line = terminal_mid_line (j->mid_line, data, n);
  char end[2];
  size_t k = eof ? terminal_eof (j->pty_fd, j->mid_line, end) : 0;
  if (!k)
    return 0;
  rc = stdin_feed_push (&j->in, end, k, false);
  j->mid_line = false;
  return rc;
}

static void
handle_request (const struct sup_msg *m)
{
  struct job *j = m->type == SUP_SPAWN || m->type == SUP_PING ? NULL : find_job (m->job);
  struct stdin_feed *feed = !j ? NULL : m->type == SUP_SCRIPT ? &j->script : &j->in;
  switch (m->type)
    {
    case SUP_SPAWN:
      spawn (m);
      return;
    case SUP_PING:
      sup_begin (&out_msg, SUP_PONG);
      send_msg ();
      return;
    case SUP_STDIN:
    case SUP_SCRIPT:
      if (!j)
        return send_error (m->job, "no such job%s", "");
      /* The rest of a script its command stopped reading (its bash died)
       * is dropped without a word: the exit says what happened. */
      if (m->type == SUP_SCRIPT && feed->fd < 0)
        return;
      /* Input that cannot be fed is said on the job's stderr, as the
       * docker leader does: an error for a job would end it as lost while
       * it runs. */
      if (feed->fd < 0)
        return job_note (j, "airlock: the job's stdin is closed: input dropped\n");
      int pushed;
      if (feed == &j->in && j->pty_fd >= 0)
        pushed = push_terminal_input (j, m->data, m->data_len, m->eof);
      else
        pushed = stdin_feed_push (feed, m->data, m->data_len, m->eof);
      switch (pushed)
        {
        case -1:
          return job_note (j, "airlock: stdin or script backlog over 4 MiB: input dropped\n");
        case -2:
          return job_note (j, "airlock: out of memory: input dropped\n");
        }
      stdin_feed_pump (feed);
      return;
    case SUP_RESIZE:
      if (!j)
        return send_error (m->job, "no such job%s", "");
      /* The kernel sends SIGWINCH to the terminal's foreground group. */
      struct winsize ws = { .ws_row = (unsigned short) m->rows,
                            .ws_col = (unsigned short) m->cols };
      if (j->pty_fd < 0 || ioctl (j->pty_fd, TIOCSWINSZ, &ws) < 0)
        return job_note (j, "airlock: the job has no terminal: resize ignored\n");
      return;
    case SUP_SIGNAL:
      if (!j)
        return send_error (m->job, "no such job%s", "");
      unsigned char sig = (unsigned char) m->signal;
      /* A write fails only when the leader is dead: its end is reported
       * (once) when we reap it, so nothing to say here. */
      if (j->ctl_fd >= 0 && j->leader && write (j->ctl_fd, &sig, 1) != 1)
        close_fd (&j->ctl_fd);
      return;
    default:
      send_error (0, "unexpected message type%s", "");
    }
}

/* Forward what one output pipe has; false at end of file. */
static bool
forward_output (struct job *j, int *fd, uint32_t stream)
{
  static char buf[SUP_MAX_DATA];
  ssize_t n = read (*fd, buf, sizeof buf);
  if (n < 0 && (errno == EINTR || errno == EAGAIN))
    return true;
  if (n <= 0)
    {
      close_fd (fd);
      return false;
    }
  sup_begin (&out_msg, SUP_OUTPUT);
  sup_put_u32 (&out_msg, SUP_F_JOB, j->id);
  sup_put_u32 (&out_msg, SUP_F_STREAM, stream);
  sup_put_bytes (&out_msg, SUP_F_DATA, buf, (size_t) n);
  send_msg ();
  if (j->exited)
    j->drain_until_ms = monotonic_ms () + DRAIN_IDLE_MS;
  return true;
}

/* After the command exited and its output is drained (or a background
 * descendant holds the pipes open but is quiet), report the exit. */
static void
maybe_report_exit (struct job *j)
{
  if (!j->exited || j->reported)
    return;
  if ((j->out_fd >= 0 || j->err_fd >= 0 || j->meta_fd >= 0)
      && monotonic_ms () < j->drain_until_ms)
    return;
  close_fd (&j->out_fd);
  close_fd (&j->err_fd);
  close_fd (&j->meta_fd);
  stdin_feed_close (&j->in);
  stdin_feed_close (&j->script);
  if (j->lost)
    {
      char why[128];
      if (WIFSIGNALED (j->wait_status))
        snprintf (why, sizeof why, "killed by signal %d", WTERMSIG (j->wait_status));
      else
        snprintf (why, sizeof why, "exited with status %d", WEXITSTATUS (j->wait_status));
      send_error (j->id, "the job was lost: its leader was %s before the command "
                  "ended (what the command started was killed)", why);
      j->reported = true;
      return;
    }
  sup_begin (&out_msg, SUP_EXITED);
  sup_put_u32 (&out_msg, SUP_F_JOB, j->id);
  if (WIFSIGNALED (j->wait_status))
    sup_put_u32 (&out_msg, SUP_F_SIGNAL, (uint32_t) WTERMSIG (j->wait_status));
  else
    sup_put_u32 (&out_msg, SUP_F_EXIT_CODE, (uint32_t) WEXITSTATUS (j->wait_status));
  send_msg ();
  j->reported = true;
}

static void
release_if_done (struct job *j)
{
  if (j->reported && j->leader == 0)
    {
      release_fds (j);
      *j = (struct job){ .id = 0 };
    }
}

/* Reap whatever died: for a leader, its job's end is known. */
static void
reap (void)
{
  int ws;
  pid_t r;
  while ((r = waitpid (-1, &ws, WNOHANG)) > 0)
    for (size_t i = 0; i < SUP_MAX_JOBS; i++)
      {
        struct job *j = &jobs[i];
        if (!j->id || j->leader != r)
          continue;
        j->leader = 0;
        /* A leader writes the status before it exits: read it now if it
         * is there, whichever of the two we noticed first. */
        if (!j->exited && j->status_fd >= 0
            && read (j->status_fd, &j->wait_status, sizeof j->wait_status)
                   == sizeof j->wait_status)
          j->exited = true;
        close_fd (&j->status_fd);
        if (!j->exited)
          {
            j->exited = j->lost = true;
            j->wait_status = ws;
          }
        j->drain_until_ms = monotonic_ms () + DRAIN_IDLE_MS;
      }
}

/* At SIGCHLD: reap, then kill every orphan of a dead leader with its tree
 * (and reap those).  A leader that dies meanwhile is reaped too; the
 * orphans it leaves are next SIGCHLD's. */
static void
reap_and_sweep (void)
{
  reap ();
  pid_t keep[SUP_MAX_JOBS];
  size_t n = 0;
  for (size_t i = 0; i < SUP_MAX_JOBS; i++)
    if (jobs[i].id && jobs[i].leader > 0)
      keep[n++] = jobs[i].leader;
  process_tree_kill_orphans (keep, n);
  reap ();
}

/* ---- a docker container's pid 1 ---- */

/* The broker went away: what it ran goes, as with a local sandbox's end
 * (a dead daemon's jobs must not outlive it), and the container is clean
 * for the next one. */
static void
drop_jobs (void)
{
  for (size_t i = 0; i < SUP_MAX_JOBS; i++)
    {
      struct job *j = &jobs[i];
      if (!j->id)
        continue;
      release_fds (j);
      *j = (struct job){ .id = 0 };
    }
  process_tree_kill_orphans (NULL, 0); /* every leader and its tree */
  while (waitpid (-1, NULL, WNOHANG) > 0)
    ;
}

/* A connection to the broker's socket, made by the broker: its listener
 * is outside our pid namespace (SO_PEERCRED shows pid 0).  A listener of
 * something in the container (it cannot be at our path, a read-only
 * mount, but should it be) is refused.  -1 when none is there yet. */
static int
connect_broker (void)
{
  struct sockaddr_un sa = { .sun_family = AF_UNIX, .sun_path = SUP_CONTAINER_SOCKET };
  int fd = socket (AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  struct ucred cred;
  socklen_t len = sizeof cred;
  if (fd < 0 || connect (fd, (struct sockaddr *) &sa, sizeof sa) < 0
      || getsockopt (fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0 || cred.pid != 0
      || fcntl (fd, F_SETFL, 0) < 0 || dup2 (fd, CONTROL_FD) < 0)
    {
      if (fd >= 0)
        close (fd);
      return -1;
    }
  close (fd);
  broker_gone = false;
  return 0;
}

/* A command in a container gets the container's environment (the image's
 * and docker.env, as the engine gave it to us, its pid 1) beneath the
 * session's, as an engine exec would. */
static void
with_container_env (struct sup_msg *m)
{
  extern char **environ;
  for (char **e = environ; *e && m->envc < SUP_MAX_ENV; e++)
    {
      size_t n = strcspn (*e, "=");
      bool set = false;
      for (uint32_t i = 0; i < m->envc && !set; i++)
        set = !strncmp (m->envp[i], *e, n) && m->envp[i][n] == '=';
      if (!set)
        m->envp[m->envc++] = *e;
    }
  m->envp[m->envc] = NULL;
}

/* Until a broker connects (at start it is there; after it left, the next
 * one may take long: tried less and less often), the orphans of what ran
 * are still swept, and SIGTERM (docker stop) still ends the container. */
static void
await_broker (int sfd)
{
  for (int wait_ms = 10; connect_broker () < 0;
       wait_ms = wait_ms * 2 < CONNECT_RETRY_MS ? wait_ms * 2 : CONNECT_RETRY_MS)
    {
      struct pollfd p = { .fd = sfd, .events = POLLIN };
      if (poll (&p, 1, wait_ms) > 0)
        {
          struct signalfd_siginfo si;
          while (read (sfd, &si, sizeof si) > 0)
            if (si.ssi_signo != SIGCHLD)
              _exit (0);
          reap_and_sweep ();
        }
    }
}

/* ---- a process of a singularity instance ---- */

/* The token on stdin, whole, within a bound.  0, or -1. */
static int
read_token (char *token)
{
  size_t got = 0;
  long long until = monotonic_ms () + 30000;
  while (got < SUP_TOKEN_LEN)
    {
      struct pollfd p = { .fd = 0, .events = POLLIN };
      long long left = until - monotonic_ms ();
      if (left <= 0 || poll (&p, 1, (int) left) <= 0)
        return -1;
      ssize_t n = read (0, token + got, SUP_TOKEN_LEN - got);
      if (n <= 0)
        return -1;
      got += (size_t) n;
    }
  return 0;
}

/* Connected, the token is the first message. */
static int
connect_instance (const char *token)
{
  long long until = monotonic_ms () + 30000;
  for (int wait_ms = 10; connect_broker () < 0;
       wait_ms = wait_ms * 2 < CONNECT_RETRY_MS ? wait_ms * 2 : CONNECT_RETRY_MS)
    {
      if (monotonic_ms () >= until)
        return -1;
      poll (NULL, 0, wait_ms);
    }
  return send (CONTROL_FD, token, SUP_TOKEN_LEN, MSG_NOSIGNAL) == SUP_TOKEN_LEN ? 0 : -1;
}

int
main (int argc, char **argv)
{
  container_init = argc > 1 && !strcmp (argv[1], EXEC_INIT_FLAG);
  instance = argc > 1 && !strcmp (argv[1], EXEC_INSTANCE_FLAG);
  char token[SUP_TOKEN_LEN];
  if (instance && read_token (token) < 0)
    {
      fprintf (stderr, "airlock-supervisor " EXEC_INSTANCE_FLAG ": no token on "
               "stdin; it is started by airlock in a singularity instance, not "
               "by hand\n");
      return 2;
    }
  if (container_init && getpid () != 1)
    {
      fprintf (stderr, "airlock-supervisor " EXEC_INIT_FLAG ": the pid 1 of "
               "airlock's docker containers, not run by hand\n");
      return 2;
    }
  int type = 0;
  socklen_t len = sizeof type;
  if (!container_init && !instance
      && (getsockopt (CONTROL_FD, SOL_SOCKET, SO_TYPE, &type, &len) < 0
          || type != SOCK_SEQPACKET))
    {
      fprintf (stderr, "airlock-supervisor: fd 0 must be the broker's "
               "seqpacket socket; it is started by airlock, not by hand\n");
      return 2;
    }
  /* Sandboxed commands run as our uid: they must not ptrace us. */
  prctl (PR_SET_DUMPABLE, 0, 0, 0, 0);
  prctl (PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
  signal (SIGPIPE, SIG_IGN);
  sigset_t chld;
  sigemptyset (&chld);
  sigaddset (&chld, SIGCHLD);
  if (container_init || instance)
    {
      /* As pid 1 we get only the signals we handle: SIGTERM (docker stop)
       * ends the container at once.  In an instance, SIGTERM, SIGINT or
       * SIGHUP (instance stop, the exec client's end) end the jobs too. */
      sigaddset (&chld, SIGTERM);
      sigaddset (&chld, SIGINT);
      if (instance)
        sigaddset (&chld, SIGHUP);
    }
  sigprocmask (SIG_BLOCK, &chld, NULL);
  int sfd = signalfd (-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK);
  static uint8_t buf[AL_MAX_MESSAGE];
  static struct sup_msg msg;
  if (container_init)
    await_broker (sfd);
  if (instance && connect_instance (token) < 0)
    {
      fprintf (stderr, "airlock-supervisor " EXEC_INSTANCE_FLAG ": cannot reach "
               "the broker at " SUP_CONTAINER_SOCKET "\n");
      return 1;
    }

  for (;;)
    {
      if (broker_gone && instance)
        {
          drop_jobs (); /* a daemon that died must leave nothing running */
          return 0;
        }
      if (broker_gone)
        {
          drop_jobs ();
          await_broker (sfd);
        }
      struct pollfd p[2 + 6 * SUP_MAX_JOBS];
      struct job *owner[2 + 6 * SUP_MAX_JOBS];
      size_t n = 0;
      p[n] = (struct pollfd){ .fd = CONTROL_FD, .events = POLLIN };
      owner[n++] = NULL;
      p[n] = (struct pollfd){ .fd = sfd, .events = POLLIN };
      owner[n++] = NULL;
      long long wake = -1;
      for (size_t i = 0; i < SUP_MAX_JOBS; i++)
        {
          struct job *j = &jobs[i];
          if (!j->id)
            continue;
          int fds[6] = { j->out_fd, j->err_fd, j->meta_fd, j->status_fd,
                         j->in.len ? j->in.fd : -1,
                         j->script.len ? j->script.fd : -1 };
          for (int k = 0; k < 6; k++)
            if (fds[k] >= 0)
              {
                p[n] = (struct pollfd){ .fd = fds[k], .events = k >= 4 ? POLLOUT : POLLIN };
                owner[n++] = j;
              }
          if (j->exited && !j->reported)
            {
              long long left = j->drain_until_ms - monotonic_ms ();
              wake = wake < 0 || left < wake ? (left < 0 ? 0 : left) : wake;
            }
        }
      if (poll (p, n, (int) wake) < 0 && errno != EINTR)
        return 1;
      for (size_t i = 0; i < n; i++)
        {
          if (!p[i].revents)
            continue;
          struct job *j = owner[i];
          if (p[i].fd == CONTROL_FD)
            {
              ssize_t r = recv (CONTROL_FD, buf, sizeof buf, MSG_TRUNC);
              if (r <= 0 && !container_init && !instance)
                return 0; /* the broker closed the session */
              if (r <= 0)
                {
                  broker_gone = true;
                  break;
                }
              const char *why;
              if ((size_t) r > sizeof buf || sup_decode (buf, (size_t) r, &msg, &why) < 0)
                send_error (0, "malformed request: %s", (size_t) r > sizeof buf ? "too large" : why);
              else
                {
                  if ((container_init || instance) && msg.type == SUP_SPAWN)
                    with_container_env (&msg);
                  handle_request (&msg);
                }
            }
          else if (p[i].fd == sfd)
            {
              struct signalfd_siginfo si;
              while (read (sfd, &si, sizeof si) > 0)
                if (si.ssi_signo != SIGCHLD)
                  {
                    if (instance)
                      drop_jobs (); /* not pid 1: nothing else kills them */
                    return 0; /* SIGTERM of a container's pid 1 */
                  }
              reap_and_sweep ();
            }
          else if (j && p[i].fd == j->out_fd)
            forward_output (j, &j->out_fd, 1);
          else if (j && p[i].fd == j->err_fd)
            forward_output (j, &j->err_fd, 2);
          else if (j && p[i].fd == j->meta_fd)
            forward_output (j, &j->meta_fd, 3);
          else if (j && p[i].fd == j->in.fd)
            stdin_feed_pump (&j->in);
          else if (j && p[i].fd == j->script.fd)
            stdin_feed_pump (&j->script);
          else if (j && p[i].fd == j->status_fd)
            {
              if (read (j->status_fd, &j->wait_status, sizeof j->wait_status)
                  == sizeof j->wait_status)
                {
                  j->exited = true;
                  j->drain_until_ms = monotonic_ms () + DRAIN_IDLE_MS;
                }
              close_fd (&j->status_fd);
            }
        }
      for (size_t i = 0; i < SUP_MAX_JOBS; i++)
        if (jobs[i].id)
          {
            maybe_report_exit (&jobs[i]);
            release_if_done (&jobs[i]);
          }
    }
}
