/* SPDX-License-Identifier: MIT */
/* airlock-probe: run by the tests inside the sandbox.
 *
 *   airlock-probe SUBCOMMAND [ARGS]
 *
 * A "try" subcommand attempts one operation and prints exactly one line:
 * "blocked ERRNAME" (exit 0) when it failed, "allowed" (exit 1) when it
 * worked.  Operations that may kill the process (foreign ABIs) run in a
 * child; if it dies of a signal the line is "blocked SIGNAME".  Exit 2 means
 * a usage error or that the probe could not set itself up (message on
 * stderr, nothing on stdout).
 *
 * Where a call cannot succeed without privilege, it is made harmless
 * instead: kexec and init-module pass invalid arguments, so outside a
 * sandbox (or as root) they say "blocked EINVAL"/"blocked ENOEXEC"; only
 * EPERM means the filter (or a missing capability) stopped them.  Do not run
 * "tiocsti" outside a sandbox from an interactive terminal: it types an "x"
 * into it.
 *
 * Info subcommands (exit 0): "fds", "caps", "ids".
 *
 * Self-contained on purpose: it uses no airlock header. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/bpf.h>
#include <linux/io_uring.h>
#include <linux/keyctl.h>
#include <linux/perf_event.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef UFFD_USER_MODE_ONLY
#define UFFD_USER_MODE_ONLY 1
#endif
#ifndef AF_VSOCK
#define AF_VSOCK 40
#endif
#ifndef AF_ALG
#define AF_ALG 38
#endif
/* mseal is newer than the Debian 12 headers; it is 462 on every
 * architecture that numbers new syscalls in step. */
#ifndef __NR_mseal
#define __NR_mseal 462
#endif

/* ---- reporting ---- */

static int
blocked_errno (int err)
{
  const char *name = strerrorname_np (err);
  if (name)
    printf ("blocked %s\n", name);
  else
    printf ("blocked errno%d\n", err);
  return 0;
}

static int
allowed (void)
{
  printf ("allowed\n");
  return 1;
}

/* Report a raw syscall result (-1 with errno on failure). */
static int
report (long r)
{
  return r == -1 ? blocked_errno (errno) : allowed ();
}

static int
setup_failed (const char *what)
{
  fprintf (stderr, "airlock-probe: %s: %s\n", what, strerror (errno));
  return 2;
}

/* Run fn in a child that cannot dump core; relay its verdict, or report
 * the signal that killed it (SIGSYS: the seccomp filter killed it). */
static int
in_child (int (*fn) (void))
{
  fflush (stdout);
  pid_t pid = fork ();
  if (pid < 0)
    return setup_failed ("fork");
  if (pid == 0)
    {
      struct rlimit none = { 0, 0 };
      setrlimit (RLIMIT_CORE, &none);
      prctl (PR_SET_DUMPABLE, 0, 0, 0, 0);
      int code = fn ();
      fflush (stdout);
      _exit (code);
    }
  int status;
  if (waitpid (pid, &status, 0) < 0)
    return setup_failed ("waitpid");
  if (WIFSIGNALED (status))
    {
      const char *name = sigabbrev_np (WTERMSIG (status));
      printf ("blocked SIG%s\n", name ? name : "?");
      return 0;
    }
  return WEXITSTATUS (status);
}

/* After a successful fork-like syscall: the child leaves at once. */
static int
report_clone (long r)
{
  if (r == 0)
    _exit (0);
  if (r > 0)
    waitpid ((pid_t) r, NULL, __WALL);
  return report (r);
}

/* ---- namespaces and mounts ---- */

static int
try_unshare_user (void)
{
  return report (unshare (CLONE_NEWUSER));
}

static int
try_clone_newuser (void)
{
  return report_clone (syscall (SYS_clone, CLONE_NEWUSER | SIGCHLD, 0, 0, 0,
                                0));
}

static int
try_clone3 (void)
{
  /* clone3 with a new user namespace: the bypass a clone(2) filter misses
   * when clone3 is allowed. */
  struct /* struct clone_args, version 0 */
  {
    uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack,
        stack_size, tls;
  } args = { .flags = CLONE_NEWUSER, .exit_signal = SIGCHLD };
  return report_clone (syscall (SYS_clone3, &args, sizeof args));
}

static int
try_mount (void)
{
  if (mkdir ("/tmp/x", 0700) < 0 && errno != EEXIST)
    return setup_failed ("mkdir /tmp/x");
  if (mount ("tmpfs", "/tmp/x", "tmpfs", MS_NOSUID | MS_NODEV, "size=64k")
      < 0)
    return blocked_errno (errno);
  umount2 ("/tmp/x", MNT_DETACH);
  return allowed ();
}

static int
try_open_tree (void)
{
  /* Without OPEN_TREE_CLONE this needs no privilege: only a filter stops
   * it. */
  return report (syscall (SYS_open_tree, AT_FDCWD, "/", OPEN_TREE_CLOEXEC));
}

static int
try_fsopen (void)
{
  return report (syscall (SYS_fsopen, "tmpfs", FSOPEN_CLOEXEC));
}

static int
try_setns (void)
{
  int fd = open ("/proc/self/ns/uts", O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return setup_failed ("open /proc/self/ns/uts");
  return report (setns (fd, CLONE_NEWUTS));
}

/* ---- kernel attack surface ---- */

static int
try_keyctl (void)
{
  return report (syscall (SYS_keyctl, KEYCTL_GET_KEYRING_ID,
                          KEY_SPEC_SESSION_KEYRING, 0));
}

static int
try_bpf (void)
{
  union bpf_attr attr;
  memset (&attr, 0, sizeof attr);
  attr.map_type = BPF_MAP_TYPE_ARRAY;
  attr.key_size = 4;
  attr.value_size = 4;
  attr.max_entries = 1;
  return report (syscall (SYS_bpf, BPF_MAP_CREATE, &attr, sizeof attr));
}

static int
try_perf_event_open (void)
{
  struct perf_event_attr attr;
  memset (&attr, 0, sizeof attr);
  attr.size = sizeof attr;
  attr.type = PERF_TYPE_SOFTWARE;
  attr.config = PERF_COUNT_SW_TASK_CLOCK;
  attr.disabled = 1;
  attr.exclude_kernel = 1;
  attr.exclude_hv = 1;
  return report (syscall (SYS_perf_event_open, &attr, 0, -1, -1, 0));
}

static int
try_userfaultfd (void)
{
  /* User-mode-only faults: allowed to anyone unless a filter says no. */
  return report (syscall (SYS_userfaultfd, O_CLOEXEC | UFFD_USER_MODE_ONLY));
}

static int
try_io_uring (void)
{
  struct io_uring_params params;
  memset (&params, 0, sizeof params);
  return report (syscall (SYS_io_uring_setup, 1, &params));
}

static int
try_kexec (void)
{
  /* Flags naming no architecture: EINVAL once past the privilege check. */
  return report (syscall (SYS_kexec_load, 0, 0, NULL, 0xffff0000ul));
}

static int
try_init_module (void)
{
  /* An empty image: ENOEXEC once past the privilege check. */
  return report (syscall (SYS_init_module, NULL, 0, ""));
}

static int
try_personality (void)
{
  /* ADDR_NO_RANDOMIZE: not one of the values Docker allows. */
  int old = personality (0xffffffff);
  if (personality (ADDR_NO_RANDOMIZE) == -1)
    return blocked_errno (errno);
  personality (old);
  return allowed ();
}

static int
try_socket (int family)
{
  int fd = socket (family, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  return report (fd < 0 ? -1 : 0);
}

static int
try_mseal (void)
{
  /* A syscall newer than Debian 12's libseccomp; len 0 is a no-op. */
  return report (syscall (__NR_mseal, 0, 0, 0));
}

static int
try_ptrace (const char *arg)
{
  char *end;
  errno = 0;
  long pid = strtol (arg, &end, 10);
  if (errno || *end || pid <= 0 || pid > INT_MAX)
    {
      fprintf (stderr, "airlock-probe: bad pid '%s'\n", arg);
      return 2;
    }
  if (ptrace (PTRACE_ATTACH, (pid_t) pid, NULL, NULL) < 0)
    return blocked_errno (errno);
  waitpid ((pid_t) pid, NULL, __WALL);
  ptrace (PTRACE_DETACH, (pid_t) pid, NULL, NULL);
  return allowed ();
}

/* ---- foreign syscall ABIs ---- */

#ifdef __x86_64__
static int
x32_getpid (void)
{
  return report (syscall (0x40000000 | __NR_getpid));
}

static int
i386_getpid (void)
{
  long r = 20; /* getpid in the i386 table */
  __asm__ volatile ("int $0x80"
                    : "+a"(r)
                    :
                    : "memory", "r8", "r9", "r10", "r11");
  if (r < 0 && r > -4096)
    return blocked_errno ((int) -r);
  return allowed ();
}
#endif

static int
try_foreign_abi (const char *which)
{
#ifdef __x86_64__
  return in_child (strcmp (which, "x32") == 0 ? x32_getpid : i386_getpid);
#else
  fprintf (stderr, "airlock-probe: %s: only meaningful on x86_64\n", which);
  return 2;
#endif
}

/* ---- terminals ---- */

/* Open a new pty and return its slave (the master fd goes to *master).
 * With ctty, the slave becomes our controlling terminal, which TIOCSTI
 * requires: the caller must have called setsid() first. */
static int
open_pty_slave (int *master, int ctty)
{
  *master = posix_openpt (O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (*master < 0 || grantpt (*master) < 0 || unlockpt (*master) < 0)
    return -1;
  const char *name = ptsname (*master);
  if (name == NULL)
    return -1;
  int fd = open (name, O_RDWR | O_CLOEXEC | (ctty ? 0 : O_NOCTTY));
  if (fd >= 0 && ctty && ioctl (fd, TIOCSCTTY, 0) < 0)
    return -1;
  return fd;
}

/* The terminal an attacker would aim at: our stdin, else /dev/tty, else a
 * fresh pty. */
static int
some_tty (void)
{
  if (isatty (0))
    return 0;
  int fd = open ("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (fd >= 0)
    return fd;
  int master;
  return open_pty_slave (&master, 0);
}

static unsigned long tty_request;

static int
tty_ioctl_on (int fd)
{
  char c = 'x';
  if (tty_request == TIOCLINUX)
    c = 6; /* TIOCL_GETSHIFTSTATE: harmless if it ever reached a console */
  return report (syscall (SYS_ioctl, fd, tty_request, &c));
}

static int
try_tty_ioctl (unsigned long request)
{
  tty_request = request;
  int fd = some_tty ();
  if (fd < 0)
    return setup_failed ("no terminal to test");
  return tty_ioctl_on (fd);
}

/* TIOCSTI on a pty that is our controlling terminal, in a new session, so
 * that the kernel itself would let it through: only the filter, or the
 * dev.tty.legacy_tiocsti=0 sysctl (then EIO), stops it. */
static int
tiocsti_own_pty (void)
{
  int master;
  if (setsid () < 0)
    return setup_failed ("setsid");
  int fd = open_pty_slave (&master, 1);
  if (fd < 0)
    return setup_failed ("open a pty");
  return tty_ioctl_on (fd);
}

static int
try_tiocsti_pty (unsigned long request)
{
  tty_request = request;
  return in_child (tiocsti_own_pty);
}

/* ---- info ---- */

static int
show_fds (void)
{
  DIR *dir = opendir ("/proc/self/fd");
  if (dir == NULL)
    return setup_failed ("opendir /proc/self/fd");
  int self = dirfd (dir), shown = 0;
  struct dirent *e;
  while ((e = readdir (dir)) != NULL)
    {
      char *end;
      long fd = strtol (e->d_name, &end, 10);
      if (e->d_name[0] == '.' || *end || fd <= 2 || fd == self)
        continue;
      char target[PATH_MAX];
      ssize_t n = readlinkat (self, e->d_name, target, sizeof target - 1);
      target[n < 0 ? 0 : n] = '\0';
      printf ("%ld -> %s\n", fd, n < 0 ? "?" : target);
      shown++;
    }
  closedir (dir);
  if (shown == 0)
    printf ("fds: none\n");
  return 0;
}

static int
show_caps (void)
{
  static const char *const keys[] = {
    "CapInh:", "CapPrm:", "CapEff:", "CapBnd:", "CapAmb:", "NoNewPrivs:",
    "Seccomp:",
  };
  FILE *f = fopen ("/proc/self/status", "re");
  if (f == NULL)
    return setup_failed ("open /proc/self/status");
  char line[256];
  while (fgets (line, sizeof line, f))
    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++)
      if (strncmp (line, keys[i], strlen (keys[i])) == 0)
        fputs (line, stdout);
  fclose (f);
  return 0;
}

static int
show_ids (void)
{
  static gid_t groups[NGROUPS_MAX];
  int n = getgroups (NGROUPS_MAX, groups);
  if (n < 0)
    return setup_failed ("getgroups");
  printf ("%u %u %u %u\n", getuid (), getgid (), geteuid (), getegid ());
  printf ("groups:");
  for (int i = 0; i < n; i++)
    printf (" %u", groups[i]);
  printf ("\n");
  return 0;
}

/* ---- dispatch ---- */

static const struct
{
  const char *name;
  int (*fn) (void);
} simple[] = {
  { "unshare-user", try_unshare_user },
  { "clone-newuser", try_clone_newuser },
  { "clone3", try_clone3 },
  { "mount", try_mount },
  { "open-tree", try_open_tree },
  { "fsopen", try_fsopen },
  { "setns", try_setns },
  { "keyctl", try_keyctl },
  { "bpf", try_bpf },
  { "perf-event-open", try_perf_event_open },
  { "userfaultfd", try_userfaultfd },
  { "io-uring", try_io_uring },
  { "kexec", try_kexec },
  { "init-module", try_init_module },
  { "personality", try_personality },
  { "mseal", try_mseal },
  { "fds", show_fds },
  { "caps", show_caps },
  { "ids", show_ids },
};

static int
usage (void)
{
  fprintf (stderr, "usage: airlock-probe SUBCOMMAND [ARGS]\n  tries:");
  for (size_t i = 0; i < sizeof simple / sizeof *simple; i++)
    fprintf (stderr, " %s", simple[i].name);
  fprintf (stderr, " tiocsti tiocsti-high tiocsti-pty tiocsti-pty-high"
                   " tioclinux af-alg af-vsock x32 i386 'ptrace PID'\n");
  return 2;
}

int
main (int argc, char **argv)
{
  /* The 64-bit request with high bits set, which the kernel truncates to
   * TIOCSTI (CVE-2019-10063). */
  const unsigned long tiocsti_high = TIOCSTI | 0xffffffff00000000ul;

  if (argc < 2)
    return usage ();
  const char *cmd = argv[1];
  if (strcmp (cmd, "ptrace") == 0)
    return argc == 3 ? try_ptrace (argv[2]) : usage ();
  if (argc != 2)
    return usage ();

  for (size_t i = 0; i < sizeof simple / sizeof *simple; i++)
    if (strcmp (cmd, simple[i].name) == 0)
      return simple[i].fn ();
  if (strcmp (cmd, "tiocsti") == 0)
    return try_tty_ioctl (TIOCSTI);
  if (strcmp (cmd, "tiocsti-high") == 0)
    return try_tty_ioctl (tiocsti_high);
  if (strcmp (cmd, "tiocsti-pty") == 0)
    return try_tiocsti_pty (TIOCSTI);
  if (strcmp (cmd, "tiocsti-pty-high") == 0)
    return try_tiocsti_pty (tiocsti_high);
  if (strcmp (cmd, "tioclinux") == 0)
    return try_tty_ioctl (TIOCLINUX);
  if (strcmp (cmd, "af-alg") == 0)
    return try_socket (AF_ALG);
  if (strcmp (cmd, "af-vsock") == 0)
    return try_socket (AF_VSOCK);
  if (strcmp (cmd, "x32") == 0 || strcmp (cmd, "i386") == 0)
    return try_foreign_abi (cmd);
  return usage ();
}
