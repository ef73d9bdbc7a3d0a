/* SPDX-License-Identifier: MIT */
/* airlock-helper: the only privileged program of airlock.
 *
 * It runs one command in a fresh sandbox for the broker that called it, and
 * reads top to bottom in the order it executes:
 *
 *   main: sanitize -> privilege mode -> read one request -> validate it
 *         against the caller and helper.conf -> limits -> clone into new
 *         namespaces -> write uid/gid maps -> attach the cgroup -> release
 *         the child -> drop every privilege -> monitor until exit.
 *   sandbox_main (the child, pid 1 of the new pid namespace):
 *         become the caller -> lo up -> build the root, pivot_root -> drop
 *         every capability -> setsid, rlimits -> seccomp -> fork the
 *         command and reap until it exits.
 *
 * Threat model (SECURITY.md): the caller and the pipe are untrusted.  A
 * local user, through this program, can do nothing that an unprivileged
 * user namespace would not allow, plus only what helper.conf adds. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <linux/capability.h>
#include <linux/magic.h>
#include <linux/if_tun.h>
#include <net/if.h>
#include <net/route.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "helper_conf.h"
#include "resource_limits.h"
#include "privilege.h"
#include "egress_addresses.h"
#include "protocol.h"
#include "sandbox_fs.h"
#include "seccomp_baseline.h"
#include "util.h"

extern char **environ;

/* Child exits and stop requests, blocked from the start: a stop request
 * during setup waits for the monitor instead of killing us half-way (with
 * a sandbox cloned and not yet watched); the monitor then collects them. */
static sigset_t monitored_signals;

/* What the validated request asks, within helper.conf's bounds. */
struct plan {
  const struct al_run *req;
  uint32_t timeout_sec;
  uint64_t memory;
  uint32_t pids;
};

/* ---- 1. Sanitize: before any decision is taken ---- */

/* fds 0-2 must be open, or our own files would land on them and a later
 * write "to stderr" would hit them. */
static void
ensure_std_fds (void)
{
  for (int fd = 0; fd < 3; fd++)
    if (fcntl (fd, F_GETFD) < 0)
      {
        int n = open ("/dev/null", O_RDWR);
        if (n != fd)
          _exit (EXIT_SETUP_FAILED);
      }
}

/* Signal dispositions and the mask are inherited from the caller: an
 * ignored SIGCHLD would break waitpid(), a blocked SIGKILL-free set would
 * hide our own children's deaths. */
static void
reset_signals (void)
{
  for (int sig = 1; sig < NSIG; sig++)
    if (sig != SIGKILL && sig != SIGSTOP)
      signal (sig, SIG_DFL);
  sigset_t none;
  sigemptyset (&none);
  sigprocmask (SIG_SETMASK, &none, NULL);
}

static void
sanitize_process (int argc, char **argv)
{
  ensure_std_fds ();
  /* Since Linux 5.18 an empty argv arrives as { "", NULL }. */
  if (argc < 1 || !argv[0] || !*argv[0])
    fail (AL_STEP_PRIVILEGE, 0, "started with an empty argument list");
  if (argc > 1)
    {
      if (!strcmp (argv[1], "--version"))
        {
          dprintf (1, "airlock-helper %s (protocol %d)\n", AIRLOCK_VERSION,
                   AL_VERSION);
          _exit (0);
        }
      fail (AL_STEP_PRIVILEGE, 0,
            "takes no arguments: it is started by `airlock run` (see "
            "airlock-helper(8))");
    }
  /* Nothing the caller put in the environment reaches any decision or any
   * child.  (No linked library reads it before main().) */
  clearenv ();
  reset_signals ();
  signal (SIGPIPE, SIG_IGN);
  sigemptyset (&monitored_signals);
  for (int s = 0, list[] = { SIGCHLD, SIGINT, SIGTERM, SIGHUP, SIGQUIT }; s < 5; s++)
    sigaddset (&monitored_signals, list[s]);
  sigprocmask (SIG_BLOCK, &monitored_signals, NULL);
  umask (022);
  if (prctl (PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
    fail (AL_STEP_PRIVILEGE, errno, "PR_SET_NO_NEW_PRIVS");
  /* Non-dumpable: the caller may not ptrace us or read our memory. */
  prctl (PR_SET_DUMPABLE, 0, 0, 0, 0);
}

/* fd 3 must be the broker's end of a SOCK_SEQPACKET socket pair; every
 * other inherited descriptor is closed. */
static void
open_channel (void)
{
  int type = 0, domain = 0;
  socklen_t len = sizeof type;
  if (getsockopt (CHANNEL_FD, SOL_SOCKET, SO_TYPE, &type, &len) < 0
      || getsockopt (CHANNEL_FD, SOL_SOCKET, SO_DOMAIN, &domain, &len) < 0
      || type != SOCK_SEQPACKET || domain != AF_UNIX)
    fail (AL_STEP_REQUEST, 0,
          "fd 3 is not a unix seqpacket socket: airlock-helper is started by "
          "`airlock run`, not by hand");
  if (fcntl (CHANNEL_FD, F_SETFD, FD_CLOEXEC) < 0)
    fail (AL_STEP_REQUEST, errno, "fd 3");
  channel_fd = CHANNEL_FD;
  close_range (CHANNEL_FD + 1, ~0U, 0);
}

/* ---- 2. One request, bounded ---- */

static void
read_request (struct al_message *msg)
{
  static uint8_t buf[AL_MAX_MESSAGE];
  union {
    struct cmsghdr align;
    char buf[CMSG_SPACE (sizeof (int) * 16)];
  } control;
  struct iovec iov = { .iov_base = buf, .iov_len = sizeof buf };
  struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1,
                       .msg_control = control.buf,
                       .msg_controllen = sizeof control.buf };
  ssize_t n;
  do
    n = recvmsg (channel_fd, &mh, MSG_CMSG_CLOEXEC);
  while (n < 0 && errno == EINTR);
  if (n < 0)
    fail (AL_STEP_REQUEST, errno, "cannot read the request");
  /* This protocol carries no descriptors: close any we were sent. */
  for (struct cmsghdr *c = CMSG_FIRSTHDR (&mh); c; c = CMSG_NXTHDR (&mh, c))
    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS)
      {
        int *fds = (int *) CMSG_DATA (c);
        size_t nfds = (c->cmsg_len - CMSG_LEN (0)) / sizeof (int);
        for (size_t i = 0; i < nfds; i++)
          close (fds[i]);
        fail (AL_STEP_REQUEST, 0, "unexpected file descriptors in the request");
      }
  if (n == 0)
    fail (AL_STEP_REQUEST, 0, "the broker closed the channel without a request");
  if (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC))
    fail (AL_STEP_REQUEST, 0, "request larger than %d bytes", AL_MAX_MESSAGE);
  const char *why = NULL;
  if (al_decode (buf, (size_t) n, msg, &why) < 0)
    fail (AL_STEP_REQUEST, 0, "malformed request: %s", why);
  if (msg->type != AL_MSG_RUN)
    fail (AL_STEP_REQUEST, 0, "malformed request: not a run request");
}

/* ---- 3. Validate against the caller and helper.conf ---- */

static bool
caller_in_group (const struct caller *c, gid_t g)
{
  if (c->gid == g)
    return true;
  gid_t groups[NGROUPS_MAX];
  int n = getgroups (NGROUPS_MAX, groups);
  for (int i = 0; i < n; i++)
    if (groups[i] == g)
      return true;
  return false;
}

/* path is dir or lies below it (dir is n bytes, without a trailing /). */
static bool
path_under (const char *path, const char *dir, size_t n)
{
  return !strncmp (path, dir, n) && (path[n] == '\0' || path[n] == '/');
}

/* A mount at or below /proc or /dev would cover what this helper puts
 * there (the sandbox's own procfs, the device list); the broker refuses
 * these first, this is the backstop. */
static void
refuse_proc_dev (const char *dst)
{
  if (path_under (dst, "/proc", 5) || path_under (dst, "/dev", 4))
    fail (AL_STEP_VALIDATE, EINVAL, "cannot mount %s over the sandbox's own "
          "/proc or /dev", dst);
}

static void
validate (const struct al_run *req, const struct caller *c,
          const struct helper_conf *conf, struct plan *p)
{
  p->req = req;
  if (conf->group_set && c->mode != PRIV_ROOT && !caller_in_group (c, conf->group))
    fail (AL_STEP_VALIDATE, EPERM,
          "helper.conf allows only members of group %u to use airlock",
          (unsigned) conf->group);
  if (req->network == AL_NET_HOST && !conf->allow_host_network)
    fail (AL_STEP_VALIDATE, EPERM,
          "host networking is not allowed here (an administrator can set "
          "allow_host_network = yes in " HELPER_CONF ")");
  if (!strcmp (req->workdir, "/"))
    fail (AL_STEP_VALIDATE, EINVAL,
          "the workspace cannot be / (choose a project directory with --workdir)");
  if (!*req->argv[0])
    fail (AL_STEP_VALIDATE, EINVAL, "empty command name");
  refuse_proc_dev (req->workdir);
  for (uint32_t i = 0; i < req->n_binds_ro; i++)
    refuse_proc_dev (req->binds_ro[i].dst);
  for (uint32_t i = 0; i < req->n_binds_rw; i++)
    refuse_proc_dev (req->binds_rw[i].dst);

  p->memory = req->memory_max ? req->memory_max : conf->memory_default;
  if (p->memory > conf->memory_max)
    fail (AL_STEP_VALIDATE, EINVAL,
          "memory limit %llu exceeds max_memory %llu of helper.conf",
          (unsigned long long) p->memory, (unsigned long long) conf->memory_max);
  p->pids = req->pids_max ? req->pids_max : conf->pids_default;
  if (p->pids > conf->pids_max)
    fail (AL_STEP_VALIDATE, EINVAL, "pids limit %u exceeds max_pids %u of helper.conf",
          p->pids, conf->pids_max);
  p->timeout_sec = req->timeout_sec;
  if (conf->time_max && (p->timeout_sec == 0 || p->timeout_sec > conf->time_max))
    p->timeout_sec = conf->time_max;
}

/* ---- 4. The sandbox side (the cloned child, pid 1) ---- */

/* Runs in pid 1's vfork() child (or as pid 1 itself, as_init).  It only
 * changes what vfork does not share (signal dispositions, cwd, the
 * descriptor table), points environ at the request's (pid 1 never reads it
 * again) and ends in execve or _exit; pid 1 is suspended until then.  No
 * stdio: a message is formatted on the stack and written whole. */
static noreturn void
exec_command (const struct al_run *req)
{
  char msg[AL_MAX_PATH + 256];
  int code = 126;
  reset_signals ();
  if (chdir (req->workdir) < 0)
    snprintf (msg, sizeof msg, "airlock: cannot enter %s: %s\n", req->workdir,
              strerror (errno));
  else
    {
      /* Invariant: the command holds fds 0-2 and nothing of ours. */
      close_range (3, ~0U, 0);
      environ = (char **) req->envp;
      execvp (req->argv[0], (char *const *) req->argv);
      code = errno == ENOENT ? 127 : 126;
      snprintf (msg, sizeof msg, "airlock: %s: %s\n", req->argv[0], strerror (errno));
    }
  write_all (2, msg, strlen (msg));
  _exit (code);
}

/* pid 1: reap everything; when the command itself exits, hand its wait
 * status to the monitor and leave, which kills whatever it left behind. */
static noreturn void
init_loop (pid_t command, int status_fd)
{
  for (;;)
    {
      int ws;
      pid_t r = waitpid (-1, &ws, 0);
      if (r == command)
        {
          write_all (status_fd, &ws, sizeof ws);
          _exit (0);
        }
      if (r < 0 && errno != EINTR)
        _exit (EXIT_SETUP_FAILED);
    }
}

/* `lo` up, through a socket opened in the process that already lives in
 * the new network namespace: it can only ever see and change that one. */
static void
loopback_up (void)
{
  struct ifreq ifr = { .ifr_name = "lo" };
  cleanup_fd int sk = socket (AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (sk < 0 || ioctl (sk, SIOCGIFFLAGS, &ifr) < 0)
    fail (AL_STEP_LOOPBACK, errno, "cannot find lo");
  ifr.ifr_flags |= IFF_UP;
  if (ioctl (sk, SIOCSIFFLAGS, &ifr) < 0)
    fail (AL_STEP_LOOPBACK, errno, "cannot bring lo up");
}

/* network: allowlist.  A tap device made here lives in this new network
 * namespace (the kernel puts it where /dev/net/tun was opened) and can
 * never touch the host's.  It gets helper/egress_addresses.h's address and
 * routes; its fd goes to the broker, whose stack is then the only thing the
 * sandbox's packets can reach.  Invariant: this runs before the capability
 * drop, and the sandbox's /dev has no net/tun to open another. */
static void
tap_up (void)
{
  struct ifreq ifr = { .ifr_name = EGRESS_TAP_NAME, .ifr_flags = IFF_TAP | IFF_NO_PI };
  cleanup_fd int tap = open ("/dev/net/tun", O_RDWR | O_CLOEXEC);
  if (tap < 0 || ioctl (tap, TUNSETIFF, &ifr) < 0)
    fail (AL_STEP_LOOPBACK, errno, "cannot create a tap device from /dev/net/tun "
          "(udev makes it mode 0666 on Debian; an administrator can do the same)");
  cleanup_fd int sk = socket (AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in me = { .sin_family = AF_INET, .sin_addr.s_addr = htonl (EGRESS_SANDBOX) },
    gw = { .sin_family = AF_INET, .sin_addr.s_addr = htonl (EGRESS_GATEWAY) },
    host = { .sin_family = AF_INET, .sin_addr.s_addr = INADDR_BROADCAST };
  memcpy (&ifr.ifr_addr, &me, sizeof me);
  bool ok = sk >= 0 && ioctl (sk, SIOCSIFADDR, &ifr) == 0;
  memcpy (&ifr.ifr_netmask, &host, sizeof host); /* a /32: every destination is routed */
  ok = ok && ioctl (sk, SIOCSIFNETMASK, &ifr) == 0 && ioctl (sk, SIOCGIFFLAGS, &ifr) == 0;
  ifr.ifr_flags |= IFF_UP;
  ok = ok && ioctl (sk, SIOCSIFFLAGS, &ifr) == 0;
  struct rtentry rt = { .rt_flags = RTF_UP | RTF_HOST, .rt_dev = ifr.ifr_name };
  memcpy (&rt.rt_dst, &gw, sizeof gw);
  memcpy (&rt.rt_genmask, &host, sizeof host);
  ok = ok && ioctl (sk, SIOCADDRT, &rt) == 0;
  rt = (struct rtentry) { .rt_flags = RTF_UP | RTF_GATEWAY, .rt_dev = ifr.ifr_name };
  memcpy (&rt.rt_gateway, &gw, sizeof gw);
  rt.rt_dst.sa_family = rt.rt_genmask.sa_family = AF_INET;
  if (!ok || ioctl (sk, SIOCADDRT, &rt) < 0)
    fail (AL_STEP_LOOPBACK, errno, "cannot address the tap device");
  static struct al_writer w;
  al_begin (&w, AL_MSG_REPORT);
  al_put_u32 (&w, AL_F_EVENT, AL_EV_TAP);
  if (!channel_send (&w, tap))
    fail (AL_STEP_LOOPBACK, errno, "cannot hand the tap device to the broker");
}

static noreturn void
sandbox_main (const struct plan *p, const struct caller *c,
              const struct helper_conf *conf, const struct limits *l,
              int go_fd, int status_fd)
{
  prctl (PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
  reset_signals ();
  char go;
  /* The monitor writes one byte once our maps and cgroup are in place.
   * End of file instead means it died: there is nobody to report to. */
  if (read (go_fd, &go, 1) != 1)
    _exit (EXIT_SETUP_FAILED);

  priv_enter_sandbox_identity (c);
  /* Non-dumpable from here in every mode: the command, which runs as the
   * same uid, must not ptrace or read the memory of its pid 1. */
  prctl (PR_SET_DUMPABLE, 0, 0, 0, 0);
  /* The identity change cleared the parent-death signal; set it again and
   * then make sure the monitor did not die in between. */
  prctl (PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
  struct pollfd pf = { .fd = go_fd, .events = POLLIN };
  if (poll (&pf, 1, 0) > 0 && (pf.revents & (POLLHUP | POLLERR)))
    _exit (EXIT_SETUP_FAILED);
  close (go_fd);

  /* A cgroup namespace made now is rooted at the sandbox's own group. */
  if (unshare (CLONE_NEWCGROUP) < 0)
    fail (AL_STEP_NAMESPACES, errno, "cgroup namespace");
  if (p->req->network == AL_NET_LOOPBACK || p->req->network == AL_NET_ALLOWLIST)
    loopback_up ();
  if (p->req->network == AL_NET_ALLOWLIST)
    tap_up ();
  if (sethostname ("airlock", 7) < 0)
    fail (AL_STEP_NAMESPACES, errno, "sethostname");
  fs_build_root (p->req, c, p->memory);

  priv_drop_sandbox ();
  if (setsid () < 0)
    fail (AL_STEP_EXEC, errno, "setsid");
  limits_apply_rlimits (l, conf);
  const char *what = NULL;
  int rc = seccomp_apply_baseline (&what);
  if (rc < 0)
    fail (AL_STEP_SECCOMP, -rc, "%s", what ? what : "cannot load the filter");

  if (p->req->as_init)
    {
      /* The command is pid 1 itself.  One byte tells the monitor that
       * setup is over: pid 1's own exit status is now the command's. */
      write_all (status_fd, "E", 1);
      exec_command (p->req);
    }
  /* vfork: copying pid 1's page tables for a child that only execs cost
   * more than the rest of the setup on some virtual machines. */
  pid_t command = vfork ();
  if (command < 0)
    fail (AL_STEP_EXEC, errno, "vfork");
  if (command == 0)
    exec_command (p->req);
  /* The channel was for setup failures only; pid 1 needs just status_fd. */
  close (channel_fd);
  channel_fd = -1;
  init_loop (command, status_fd);
}

/* ---- 5. The parent side: maps, release, drop, monitor ---- */

/* Map the caller's own ids and nothing else; deny setgroups first (a gid
 * map without it would let the sandbox drop a group that denies access). */
static void
write_id_maps (const struct caller *c, pid_t pid)
{
  char path[32], map[64];
  snprintf (path, sizeof path, "/proc/%d", (int) pid);
  /* CAP_SYS_ADMIN: the kernel wants it over the new namespace from whoever
   * writes its maps, and with file capabilities we are not its owner. */
  priv_raise (c, CAP_DAC_OVERRIDE, CAP_SETUID, CAP_SETGID, CAP_SETFCAP,
              CAP_SYS_ADMIN, -1);
  cleanup_fd int dir = open (path, O_PATH | O_DIRECTORY | O_CLOEXEC);
  struct statfs sf;
  /* The knobs must be procfs itself, not something mounted over it. */
  if (dir < 0 || fstatfs (dir, &sf) < 0 || sf.f_type != PROC_SUPER_MAGIC)
    fail (AL_STEP_ID_MAPS, errno, "cannot open %s on procfs", path);
  int rc = write_knob (dir, "setgroups", "deny");
  if (rc == 0)
    {
      snprintf (map, sizeof map, "%u %u 1\n", (unsigned) c->uid, (unsigned) c->uid);
      rc = write_knob (dir, "uid_map", map);
    }
  if (rc == 0)
    {
      snprintf (map, sizeof map, "%u %u 1\n", (unsigned) c->gid, (unsigned) c->gid);
      rc = write_knob (dir, "gid_map", map);
    }
  priv_lower (c);
  if (rc < 0)
    fail (AL_STEP_ID_MAPS, -rc, "cannot write the uid/gid maps of the sandbox");
}

static void
report_started (pid_t pid, const struct limits *l, const struct caller *c)
{
  static struct al_writer w;
  al_begin (&w, AL_MSG_REPORT);
  al_put_u32 (&w, AL_F_EVENT, AL_EV_STARTED);
  al_put_u32 (&w, AL_F_PID, (uint32_t) pid);
  al_put_u32 (&w, AL_F_LIMITS, l->kind);
  al_put_u32 (&w, AL_F_PRIVILEGE, c->mode); /* enum priv_mode is the wire's */
  channel_send (&w, -1);
}

static void
report_exit (int code, int sig, bool timed_out)
{
  static struct al_writer w;
  al_begin (&w, AL_MSG_REPORT);
  al_put_u32 (&w, AL_F_EVENT, AL_EV_EXITED);
  if (sig)
    al_put_u32 (&w, AL_F_SIGNAL, (uint32_t) sig);
  else
    al_put_u32 (&w, AL_F_EXIT_CODE, (uint32_t) code);
  al_put_u32 (&w, AL_F_TIMED_OUT, timed_out);
  channel_send (&w, -1);
}

/* Wait for pid 1.  A timeout, or SIGINT/SIGTERM/SIGHUP sent to us, kills
 * pid 1, and with it, by the kernel's rule for pid namespaces, every
 * process of the sandbox, including those that called setsid(). */
static noreturn void
monitor (pid_t child, int status_fd, uint32_t timeout_sec, const sigset_t *sigs)
{
  struct timespec deadline;
  clock_gettime (CLOCK_MONOTONIC, &deadline);
  deadline.tv_sec += timeout_sec;
  bool timed_out = false, armed = timeout_sec > 0;
  int stop_sig = 0, ws = 0;
  for (;;)
    {
      struct timespec now, left;
      clock_gettime (CLOCK_MONOTONIC, &now);
      left.tv_sec = deadline.tv_sec - now.tv_sec;
      left.tv_nsec = deadline.tv_nsec - now.tv_nsec;
      if (left.tv_nsec < 0)
        {
          left.tv_sec--;
          left.tv_nsec += 1000000000L;
        }
      if (left.tv_sec < 0)
        left.tv_sec = left.tv_nsec = 0;
      int sig = sigtimedwait (sigs, NULL, armed ? &left : NULL);
      if (sig < 0 && errno == EAGAIN)
        {
          timed_out = true;
          armed = false;
          kill (child, SIGKILL);
        }
      else if (sig == SIGCHLD)
        {
          if (waitpid (child, &ws, WNOHANG) == child)
            break;
        }
      else if (sig > 0)
        {
          stop_sig = stop_sig ? stop_sig : sig;
          kill (child, SIGKILL);
        }
    }

  int cmd_status;
  ssize_t n = read (status_fd, &cmd_status, sizeof cmd_status);
  if (n == 1) /* pid 1 was the command (as_init) */
    {
      cmd_status = ws;
      n = sizeof cmd_status;
    }
  if (n == sizeof cmd_status && !timed_out && !stop_sig)
    {
      if (WIFSIGNALED (cmd_status))
        report_exit (0, WTERMSIG (cmd_status), false);
      else
        report_exit (WEXITSTATUS (cmd_status), 0, false);
      _exit (0);
    }
  if (timed_out || stop_sig)
    {
      report_exit (0, stop_sig ? stop_sig : SIGKILL, timed_out);
      _exit (0);
    }
  /* pid 1 ended without a status: either it reported a setup failure
   * itself (and exited 125), or something killed it. */
  if (WIFEXITED (ws) && WEXITSTATUS (ws) == EXIT_SETUP_FAILED)
    _exit (EXIT_SETUP_FAILED);
  if (WIFSIGNALED (ws))
    report_exit (0, WTERMSIG (ws), false);
  else
    fail (AL_STEP_MONITOR, 0, "the sandbox's init exited with %d unexpectedly",
          WEXITSTATUS (ws));
  _exit (0);
}

static void
clone_failed (int err)
{
  if (err == EPERM || err == ENOSPC || err == EUSERS)
    fail (AL_STEP_NAMESPACES, err,
          "this host does not let unprivileged users create user namespaces "
          "(see sysctl user.max_user_namespaces, "
          "kernel.unprivileged_userns_clone, or AppArmor's userns "
          "restriction); an administrator can install the helper with "
          "`make install-setuid` or `make install-caps`");
  fail (AL_STEP_NAMESPACES, err, "clone");
}

int
main (int argc, char **argv)
{
  static struct al_message request;
  struct caller caller;
  struct helper_conf conf;
  struct plan plan;
  struct limits limits;

  sanitize_process (argc, argv);
  priv_init (&caller);
  open_channel ();
  read_request (&request);
  helper_conf_load (&conf);
  validate (&request.u.run, &caller, &conf, &plan);
  limits_prepare (&limits, &caller, plan.memory, plan.pids);

  int go[2], status[2];
  if (pipe2 (go, O_CLOEXEC) < 0 || pipe2 (status, O_CLOEXEC) < 0)
    fail (AL_STEP_NAMESPACES, errno, "pipe");
  pid_t ppid = getppid ();

  /* Unprivileged, our child's /proc files must stay ours so that we can
   * write its maps; there is no privilege in this process to protect. */
  if (caller.mode == PRIV_NONE)
    prctl (PR_SET_DUMPABLE, 1, 0, 0, 0);
  int flags = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC
              | CLONE_NEWUTS | (plan.req->network == AL_NET_HOST ? 0 : CLONE_NEWNET);
  pid_t child = priv_clone_root_owned (&caller, flags | SIGCHLD);
  if (child == 0)
    {
      close (go[1]);
      close (status[0]);
      sandbox_main (&plan, &caller, &conf, &limits, go[0], status[1]);
    }
  int clone_errno = errno;
  prctl (PR_SET_DUMPABLE, 0, 0, 0, 0);
  if (child < 0)
    clone_failed (clone_errno);
  close (go[0]);
  close (status[1]);

  write_id_maps (&caller, child);
  limits_attach (&limits, &caller, child);
  if (!write_all (go[1], "g", 1))
    fail (AL_STEP_NAMESPACES, errno, "cannot release the sandbox");
  /* While the sandbox sets itself up: the groups of earlier ones. */
  limits_sweep (&limits, &caller);

  priv_drop_monitor (&caller);
  /* If the broker dies, so do we, and our death kills pid 1 (its
   * parent-death signal), which takes the whole sandbox with it. */
  prctl (PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
  if (getppid () != ppid)
    {
      kill (child, SIGKILL);
      _exit (EXIT_SETUP_FAILED);
    }
  report_started (child, &limits, &caller);
  monitor (child, status[0], plan.timeout_sec, &monitored_signals);
}
