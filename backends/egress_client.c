/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
#include "egress_client.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "monotonic_ms.h"
#include "xprintf.h"

#ifndef EGRESS_PATH
#error "EGRESS_PATH: where airlock-egress is installed (the Makefile sets it)"
#endif

/* airlock-egress is ready in milliseconds; a bound for a loaded machine. */
#define EGRESS_READY_MS 10000
#define EGRESS_STOP_MS 2000

extern char **environ;

ssize_t
egress_recv_report (int sock, void *buf, size_t cap, int *fd)
{
  union
  {
    struct cmsghdr align;
    char buf[CMSG_SPACE (sizeof (int) * 4)];
  } ctl;
  struct iovec iov = { .iov_base = buf, .iov_len = cap };
  struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1,
                       .msg_control = ctl.buf, .msg_controllen = sizeof ctl.buf };
  *fd = -1;
  ssize_t n;
  do
    n = recvmsg (sock, &mh, MSG_CMSG_CLOEXEC | MSG_TRUNC);
  while (n < 0 && errno == EINTR);
  if (n < 0)
    return n;
  for (struct cmsghdr *c = CMSG_FIRSTHDR (&mh); c; c = CMSG_NXTHDR (&mh, c))
    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS)
      {
        size_t count = (c->cmsg_len - CMSG_LEN (0)) / sizeof (int);
        for (size_t i = 0; i < count; i++)
          {
            int got;
            memcpy (&got, CMSG_DATA (c) + i * sizeof got, sizeof got);
            if (*fd < 0)
              *fd = got;
            else
              close (got);
          }
      }
  if (mh.msg_flags & MSG_CTRUNC)
    {
      /* More descriptors than anyone sends: none of them is trusted. */
      if (*fd >= 0)
        close (*fd);
      *fd = -1;
    }
  return n;
}

const char *
egress_path (void)
{
  const char *p = getenv ("AIRLOCK_EGRESS");
  return p && *p ? p : EGRESS_PATH;
}

static void
close_pair (int p[2])
{
  for (int i = 0; i < 2; i++)
    if (p[i] >= 0)
      close (p[i]);
}

/* Read what fd gives until end of file or the deadline; malloc'd, NUL
 * terminated, at most cap bytes kept. */
static char *
read_until_eof (int fd, long long deadline_ms, size_t cap)
{
  char *buf = calloc (1, cap + 1);
  size_t len = 0;
  if (!buf)
    abort ();
  for (;;)
    {
      long long left = deadline_ms - monotonic_ms ();
      struct pollfd p = { .fd = fd, .events = POLLIN };
      if (left <= 0 || poll (&p, 1, (int) left) <= 0)
        break;
      char chunk[512];
      ssize_t n = read (fd, chunk, sizeof chunk);
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0)
        break;
      size_t keep = (size_t) n < cap - len ? (size_t) n : cap - len;
      memcpy (buf + len, chunk, keep);
      len += keep;
    }
  buf[len] = '\0';
  return buf;
}

/* Start airlock-egress with stdin, stdout and stderr as given (-1:
 * inherited) and the tap as fd 3 (-1: none).  Its pid, or -1. */
static pid_t
spawn_egress (char *const argv[], int in, int out, int err, int tap)
{
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init (&fa);
  /* dup2 onto the same number would leave close-on-exec set. */
  int tap_high = tap >= 0 ? fcntl (tap, F_DUPFD_CLOEXEC, 10) : -1;
  int fds[] = { in, out, err, tap_high };
  for (int i = 0; i < 4; i++)
    if (fds[i] >= 0)
      posix_spawn_file_actions_adddup2 (&fa, fds[i], i);
  posix_spawnattr_t at;
  posix_spawnattr_init (&at);
  sigset_t none;
  sigemptyset (&none);
  posix_spawnattr_setsigmask (&at, &none);
  posix_spawnattr_setflags (&at, POSIX_SPAWN_SETSIGMASK);
  pid_t pid;
  int rc = posix_spawn (&pid, argv[0], &fa, &at, argv, environ);
  posix_spawn_file_actions_destroy (&fa);
  posix_spawnattr_destroy (&at);
  if (tap_high >= 0)
    close (tap_high);
  if (rc != 0)
    {
      errno = rc;
      return -1;
    }
  return pid;
}

static void
reap (pid_t pid, int *status)
{
  while (waitpid (pid, status, 0) < 0 && errno == EINTR)
    ;
}

int
egress_check (const char *policy_json, char hash[17], char **err)
{
  const char *path = egress_path ();
  char *argv[] = { (char *) path, "--check", NULL };
  int in[2] = { -1, -1 }, out[2] = { -1, -1 }, er[2] = { -1, -1 };
  if (pipe2 (in, O_CLOEXEC) < 0 || pipe2 (out, O_CLOEXEC) < 0 || pipe2 (er, O_CLOEXEC) < 0)
    {
      *err = xprintf ("network allowlist: pipe: %s", strerror (errno));
      close_pair (in), close_pair (out), close_pair (er);
      return -1;
    }
  pid_t pid = spawn_egress (argv, in[0], out[1], er[1], -1);
  int spawn_errno = errno;
  close (in[0]), close (out[1]), close (er[1]);
  if (pid < 0)
    {
      *err = xprintf ("network allowlist: cannot run %s: %s (install airlock, "
                      "or point AIRLOCK_EGRESS at airlock-egress)", path,
                      strerror (spawn_errno));
      close (in[1]), close (out[0]), close (er[0]);
      return -1;
    }
  /* The policy is small (config lists); the pipe holds it whole. */
  size_t len = strlen (policy_json);
  signal (SIGPIPE, SIG_IGN);
  bool sent = write (in[1], policy_json, len) == (ssize_t) len && write (in[1], "\n", 1) == 1;
  close (in[1]);
  long long deadline = monotonic_ms () + EGRESS_READY_MS;
  char *said = read_until_eof (out[0], deadline, 64);
  char *why = read_until_eof (er[0], deadline, 2048);
  close (out[0]), close (er[0]);
  int status = 0;
  kill (pid, SIGKILL); /* it has answered, or it never will */
  reap (pid, &status);
  int rc = -1;
  if (sent && strlen (said) >= 16 && WIFEXITED (status) && WEXITSTATUS (status) == 0)
    {
      memcpy (hash, said, 16);
      hash[16] = '\0';
      rc = 0;
    }
  else
    {
      size_t n = strlen (why);
      while (n && why[n - 1] == '\n')
        why[--n] = '\0';
      const char *text = strncmp (why, "airlock-egress: ", 16) ? why : why + 16;
      *err = xprintf ("network allowlist: %s", *text ? text : "airlock-egress did not check the policy");
    }
  free (said);
  free (why);
  return rc;
}

/* The kernel's tun/tap device is the misc character device 10:200. */
static bool
is_tap (int fd)
{
  struct stat st;
  return fstat (fd, &st) == 0 && S_ISCHR (st.st_mode)
         && major (st.st_rdev) == 10 && minor (st.st_rdev) == 200;
}

int
egress_start (int tap, const char *policy_json, const char *session,
              const char *backend, struct egress *e, char **err)
{
  *e = (struct egress) { .control = -1 };
  if (tap < 0 || !is_tap (tap))
    {
      if (tap >= 0)
        close (tap);
      *err = xprintf ("network allowlist: the helper sent something that is "
                      "not a tap device");
      return -1;
    }
  const char *path = egress_path ();
  char *argv[] = { (char *) path, "--session", (char *) (session ? session : ""),
                   "--backend", (char *) backend, NULL };
  int in[2] = { -1, -1 }, out[2] = { -1, -1 };
  if (pipe2 (in, O_CLOEXEC) < 0 || pipe2 (out, O_CLOEXEC) < 0)
    {
      *err = xprintf ("network allowlist: pipe: %s", strerror (errno));
      close_pair (in), close_pair (out), close (tap);
      return -1;
    }
  pid_t pid = spawn_egress (argv, in[0], out[1], -1, tap);
  int spawn_errno = errno;
  close (in[0]), close (out[1]), close (tap);
  if (pid < 0)
    {
      *err = xprintf ("network allowlist: cannot run %s: %s", path, strerror (spawn_errno));
      close (in[1]), close (out[0]);
      return -1;
    }
  e->pid = pid;
  e->control = in[1];
  size_t len = strlen (policy_json);
  signal (SIGPIPE, SIG_IGN);
  bool sent = write (in[1], policy_json, len) == (ssize_t) len && write (in[1], "\n", 1) == 1;
  char *said = read_until_eof (out[0], monotonic_ms () + EGRESS_READY_MS, 64);
  close (out[0]);
  if (!sent || strncmp (said, "ready ", 6) || strlen (said) < 22)
    {
      *err = xprintf ("network allowlist: airlock-egress did not start (its "
                      "reason, if any, is in the log above)");
      free (said);
      egress_stop (e);
      return -1;
    }
  memcpy (e->hash, said + 6, 16);
  e->hash[16] = '\0';
  free (said);
  return 0;
}

void
egress_stop (struct egress *e)
{
  if (e->control >= 0)
    close (e->control);
  e->control = -1;
  if (e->pid <= 0)
    return;
  long long deadline = monotonic_ms () + EGRESS_STOP_MS;
  int status;
  while (waitpid (e->pid, &status, WNOHANG) == 0)
    {
      if (monotonic_ms () >= deadline)
        {
          kill (e->pid, SIGKILL);
          reap (e->pid, &status);
          break;
        }
      struct timespec ts = { 0, 10 * 1000 * 1000 };
      nanosleep (&ts, NULL);
    }
  e->pid = 0;
}
