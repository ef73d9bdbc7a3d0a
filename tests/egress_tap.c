/* SPDX-License-Identifier: MIT */
/* Test tool (root): what the helper and the broker will do for a sandbox
 * with `network: allowlist`, so that airlock-egress can be tested alone
 * (tests/egress.bats).
 *
 *   airlock-egress-tap --policy FILE --resolv FILE -- EGRESS [ARGS...]
 *
 * A child enters a new network and mount namespace, makes the tap eth0
 * there (10.99.0.100/32, routes to and via 10.99.0.1, lo up), binds FILE
 * over /etc/resolv.conf, sends the tap fd to the parent (SCM_RIGHTS) and
 * then only holds the namespaces (run clients in them with
 * `nsenter -t PID -n -m`).  The parent, in the host's namespaces, starts
 * EGRESS with the tap on fd 3 and the policy (plus a newline) on fd 0,
 * waits for its ready line and prints
 *   ready HASH NSPID EGRESSPID
 * on stdout.  On SIGTERM or SIGINT it closes the
 * egress's fd 0 (its stop signal), waits for it (10 s at most), ends the
 * namespace holder and exits with the egress's exit status (or 100 + the
 * signal that killed it, 99 on a timeout). */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "egress_addresses.h"

static void __attribute__ ((noreturn))
die (const char *what)
{
  fprintf (stderr, "airlock-egress-tap: %s: %s\n", what, strerror (errno));
  exit (98);
}

static void
run (const char *const argv[])
{
  pid_t p = fork ();
  if (p < 0)
    die ("fork");
  if (p == 0)
    {
      execvp (argv[0], (char *const *) argv);
      _exit (127);
    }
  int st;
  if (waitpid (p, &st, 0) < 0 || !WIFEXITED (st) || WEXITSTATUS (st) != 0)
    {
      fprintf (stderr, "airlock-egress-tap: %s %s %s failed\n", argv[0],
               argv[1], argv[2]);
      exit (98);
    }
}

/* In the new namespaces: the tap, configured as the helper will. */
static int
make_tap (const char *resolv)
{
  if (unshare (CLONE_NEWNET | CLONE_NEWNS) < 0)
    die ("unshare");
  if (mount (NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
    die ("mount --make-rprivate /");
  if (mount (resolv, "/etc/resolv.conf", NULL, MS_BIND, NULL) < 0)
    die ("bind the resolv.conf");
  int fd = open ("/dev/net/tun", O_RDWR | O_CLOEXEC);
  if (fd < 0)
    die ("/dev/net/tun");
  struct ifreq ifr;
  memset (&ifr, 0, sizeof ifr);
  ifr.ifr_flags = IFF_TAP | IFF_NO_PI;
  snprintf (ifr.ifr_name, sizeof ifr.ifr_name, "eth0");
  if (ioctl (fd, TUNSETIFF, &ifr) < 0)
    die ("TUNSETIFF");
  run ((const char *[]) { "ip", "link", "set", "lo", "up", NULL });
  run ((const char *[]) { "ip", "link", "set", "eth0", "mtu", "1500", "up",
                          NULL });
  char sandbox[32], gateway[INET_ADDRSTRLEN];
  struct in_addr a = { .s_addr = htonl (EGRESS_SANDBOX) };
  snprintf (sandbox, sizeof sandbox, "%s/32", inet_ntoa (a));
  a.s_addr = htonl (EGRESS_GATEWAY);
  snprintf (gateway, sizeof gateway, "%s", inet_ntoa (a));
  run ((const char *[]) { "ip", "addr", "add", sandbox, "dev", "eth0", NULL });
  run ((const char *[]) { "ip", "route", "add", gateway, "dev", "eth0", NULL });
  run ((const char *[]) { "ip", "route", "add", "default", "via", gateway,
                          "dev", "eth0", NULL });
  return fd;
}

static void
send_fd (int sock, int fd)
{
  char byte = 't';
  struct iovec iov = { .iov_base = &byte, .iov_len = 1 };
  union
  {
    char buf[CMSG_SPACE (sizeof (int))];
    struct cmsghdr align;
  } u;
  struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1,
                      .msg_control = u.buf, .msg_controllen = sizeof u.buf };
  struct cmsghdr *c = CMSG_FIRSTHDR (&m);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN (sizeof (int));
  memcpy (CMSG_DATA (c), &fd, sizeof fd);
  if (sendmsg (sock, &m, 0) != 1)
    die ("sendmsg");
}

static int
recv_fd (int sock)
{
  char byte;
  struct iovec iov = { .iov_base = &byte, .iov_len = 1 };
  union
  {
    char buf[CMSG_SPACE (sizeof (int))];
    struct cmsghdr align;
  } u;
  struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1,
                      .msg_control = u.buf, .msg_controllen = sizeof u.buf };
  if (recvmsg (sock, &m, MSG_CMSG_CLOEXEC) != 1)
    return -1;
  struct cmsghdr *c = CMSG_FIRSTHDR (&m);
  if (!c || c->cmsg_type != SCM_RIGHTS)
    return -1;
  int fd;
  memcpy (&fd, CMSG_DATA (c), sizeof fd);
  return fd;
}

static char *
slurp (const char *path)
{
  FILE *f = fopen (path, "r");
  if (!f)
    die (path);
  char *buf = NULL;
  size_t len = 0;
  FILE *m = open_memstream (&buf, &len);
  char chunk[4096];
  size_t n;
  while ((n = fread (chunk, 1, sizeof chunk, f)) > 0)
    fwrite (chunk, 1, n, m);
  fclose (f);
  fclose (m);
  /* one line: newlines inside become spaces */
  for (size_t i = 0; i < len; i++)
    if (buf[i] == '\n')
      buf[i] = ' ';
  return buf;
}

int
main (int argc, char **argv)
{
  const char *policy = NULL, *resolv = NULL;
  int i = 1;
  for (; i < argc; i++)
    {
      if (!strcmp (argv[i], "--policy") && i + 1 < argc)
        policy = argv[++i];
      else if (!strcmp (argv[i], "--resolv") && i + 1 < argc)
        resolv = argv[++i];
      else if (!strcmp (argv[i], "--"))
        {
          i++;
          break;
        }
      else
        break;
    }
  if (!policy || !resolv || i >= argc)
    {
      fprintf (stderr, "usage: airlock-egress-tap --policy FILE --resolv "
               "FILE -- EGRESS [ARGS...]\n");
      return 98;
    }
  char *policy_text = slurp (policy);

  sigset_t sigs;
  sigemptyset (&sigs);
  sigaddset (&sigs, SIGTERM);
  sigaddset (&sigs, SIGINT);
  sigaddset (&sigs, SIGCHLD);
  sigprocmask (SIG_BLOCK, &sigs, NULL);
  int sfd = signalfd (-1, &sigs, SFD_CLOEXEC);

  int sp[2];
  if (socketpair (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) < 0)
    die ("socketpair");
  pid_t holder = fork ();
  if (holder < 0)
    die ("fork");
  if (holder == 0)
    {
      prctl (PR_SET_PDEATHSIG, SIGKILL);
      close (sp[0]);
      int tap = make_tap (resolv);
      send_fd (sp[1], tap);
      close (tap);
      /* Hold the namespaces until the parent says (closes sp) or dies. */
      char b;
      while (read (sp[1], &b, 1) < 0 && errno == EINTR)
        ;
      _exit (0);
    }
  close (sp[1]);
  int tap = recv_fd (sp[0]);
  if (tap < 0)
    {
      fprintf (stderr, "airlock-egress-tap: no tap fd from the namespace\n");
      return 98;
    }

  int in[2], out[2];
  if (pipe2 (in, O_CLOEXEC) < 0 || pipe2 (out, O_CLOEXEC) < 0)
    die ("pipe");
  pid_t eg = fork ();
  if (eg < 0)
    die ("fork");
  if (eg == 0)
    {
      sigprocmask (SIG_UNBLOCK, &sigs, NULL);
      if (dup2 (in[0], 0) < 0 || dup2 (out[1], 1) < 0 || dup2 (tap, 3) < 0)
        die ("dup2");
      execv (argv[i], argv + i);
      die (argv[i]);
    }
  close (in[0]);
  close (out[1]);
  close (tap);
  size_t plen = strlen (policy_text);
  if (write (in[1], policy_text, plen) != (ssize_t) plen
      || write (in[1], "\n", 1) != 1)
    fprintf (stderr, "airlock-egress-tap: cannot write the policy: %s\n",
             strerror (errno));
  free (policy_text);

  /* The ready line, bounded by 10 s. */
  char line[128];
  size_t len = 0;
  struct pollfd p = { .fd = out[0], .events = POLLIN };
  while (len + 1 < sizeof line && poll (&p, 1, 10000) == 1)
    {
      ssize_t n = read (out[0], line + len, sizeof line - 1 - len);
      if (n <= 0)
        break;
      len += (size_t) n;
      if (memchr (line, '\n', len))
        break;
    }
  line[len] = '\0';
  char *nl = strchr (line, '\n');
  if (nl && !strncmp (line, "ready ", 6))
    {
      *nl = '\0';
      printf ("%s %d %d\n", line, (int) holder, (int) eg);
      fflush (stdout);
    }
  else
    close (in[1]); /* no ready line: it is ending; collect its status */

  /* Until told to stop, or the egress ends by itself. */
  int status = -1;
  struct pollfd w[1] = { { .fd = sfd, .events = POLLIN } };
  for (;;)
    {
      pid_t r = waitpid (eg, &status, WNOHANG);
      if (r == eg)
        break;
      if (poll (w, 1, 1000) < 0 && errno != EINTR)
        break;
      if (w[0].revents)
        {
          struct signalfd_siginfo si;
          if (read (sfd, &si, sizeof si) == sizeof si
              && si.ssi_signo != SIGCHLD)
            break;
        }
    }
  if (status == -1)
    {
      close (in[1]);
      for (int t = 0; t < 100; t++)
        {
          if (waitpid (eg, &status, WNOHANG) == eg)
            break;
          status = -1;
          usleep (100000);
        }
    }
  kill (holder, SIGKILL);
  waitpid (holder, NULL, 0);
  if (status == -1)
    {
      kill (eg, SIGKILL);
      waitpid (eg, NULL, 0);
      fprintf (stderr, "airlock-egress-tap: the egress did not stop\n");
      return 99;
    }
  if (WIFSIGNALED (status))
    return 100 + WTERMSIG (status);
  return WEXITSTATUS (status);
}
