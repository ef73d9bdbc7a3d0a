/* SPDX-License-Identifier: MIT */
/* See process_tree.h. */
#define _GNU_SOURCE
#include "process_tree.h"
#include "monotonic_ms.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#define MAX_PROCS 8192

void
process_tree_exec (char *const *argv, char *const *envp, const char *cwd,
                   const int fds[5], bool controlling_tty)
{
  setsid ();
  /* The command dies with its leader (the rest of the tree is found by
   * pid 1, which adopts it: see process_tree_kill_orphans). */
  prctl (PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
  int n = fds[4] >= 0 ? 5 : 4;
  for (int i = 0; i < n; i++)
    if (dup2 (fds[i], i) < 0)
      _exit (126);
  close_range ((unsigned) n, ~0U, 0);
  if (controlling_tty && ioctl (0, TIOCSCTTY, 0) < 0)
    {
      dprintf (2, "airlock: cannot take the terminal: %s\n", strerror (errno));
      _exit (126);
    }
  sigset_t none;
  sigemptyset (&none);
  sigprocmask (SIG_SETMASK, &none, NULL);
  signal (SIGPIPE, SIG_DFL);
  if (cwd && chdir (cwd) < 0)
    {
      dprintf (2, "airlock: cannot enter %s: %s\n", cwd, strerror (errno));
      _exit (126);
    }
  if (envp)
    {
      extern char **environ;
      environ = (char **) envp;
    }
  execvp (argv[0], argv);
  int e = errno;
  dprintf (2, "airlock: %s: %s\n", argv[0], strerror (e));
  _exit (e == ENOENT ? 127 : 126);
}

/* One scan of /proc: every process's pid, parent and state letter. */
struct proc_table {
  size_t n;
  pid_t pid[MAX_PROCS], ppid[MAX_PROCS];
  char state[MAX_PROCS];
};

/* /proc rather than /proc/PID/task/TID/children: that one needs a kernel
 * option. */
static void
scan (struct proc_table *t)
{
  t->n = 0;
  DIR *d = opendir ("/proc");
  for (struct dirent *e; d && (e = readdir (d)) && t->n < MAX_PROCS;)
    {
      char path[300], buf[512];
      if (e->d_name[0] < '1' || e->d_name[0] > '9')
        continue;
      snprintf (path, sizeof path, "/proc/%s/stat", e->d_name);
      int fd = open (path, O_RDONLY | O_CLOEXEC);
      ssize_t r = fd >= 0 ? read (fd, buf, sizeof buf - 1) : -1;
      if (fd >= 0)
        close (fd);
      if (r <= 0)
        continue;
      buf[r] = '\0';
      char *paren = strrchr (buf, ')'); /* the name may hold anything */
      int pp;
      char st;
      if (paren && sscanf (paren + 1, " %c %d", &st, &pp) == 2)
        {
          t->pid[t->n] = atoi (e->d_name);
          t->ppid[t->n] = pp;
          t->state[t->n++] = st;
        }
    }
  if (d)
    closedir (d);
}

static bool
listed (pid_t p, const pid_t *set, size_t n)
{
  for (size_t i = 0; i < n; i++)
    if (set[i] == p)
      return true;
  return false;
}

/* Every descendant of root in t (at most max), leaving out the subtrees
 * of the children of root listed in keep; zombies too when with_zombies. */
static size_t
collect (const struct proc_table *t, pid_t root, const pid_t *keep,
         size_t nkeep, bool with_zombies, pid_t *out, size_t max)
{
  size_t found = 0;
  /* Breadth first from root: out[] doubles as the queue.  A zombie has no
   * children (they were reparented when it died), so leaving zombies out
   * of the queue loses nothing below them. */
  for (size_t q = 0;; q++)
    {
      pid_t parent = q == 0 ? root : out[q - 1];
      for (size_t i = 0; i < t->n && found < max; i++)
        if (t->ppid[i] == parent && (q > 0 || !listed (t->pid[i], keep, nkeep))
            && (with_zombies || (t->state[i] != 'Z' && t->state[i] != 'X')))
          out[found++] = t->pid[i];
      if (q >= found)
        break;
    }
  return found;
}

size_t
process_tree_descendants (pid_t root, pid_t *out, size_t max)
{
  static struct proc_table t;
  scan (&t);
  return collect (&t, root, NULL, 0, true, out, max);
}

/* SIGKILL every live descendant of ours outside keep's subtrees, again
 * and again (a process forking while we kill cannot outrun us) until none
 * is left alive.  Nothing is reaped here: the exit statuses belong to the
 * caller's own wait loop (reaping them here once lost the command's own
 * status, and its job never ended).  A zombie counts as gone.  Bounded: a
 * process that cannot be killed (EPERM) is not waited for, and one that
 * does not die (stuck in the kernel) is given up after KILL_WAIT_MS, the
 * scans spaced out so that this never spins. */
#define KILL_WAIT_MS 2000
static bool
kill_all (const pid_t *keep, size_t nkeep)
{
  static struct proc_table t;
  static pid_t pids[MAX_PROCS];
  long long give_up = monotonic_ms () + KILL_WAIT_MS;
  for (long nap_us = 500;; nap_us = nap_us < 50000 ? nap_us * 2 : 50000)
    {
      scan (&t);
      size_t n = collect (&t, getpid (), keep, nkeep, false, pids, MAX_PROCS);
      size_t alive = 0;
      for (size_t i = 0; i < n; i++)
        if (kill (pids[i], SIGKILL) == 0)
          alive++;
      if (alive == 0)
        return true;
      if (monotonic_ms () >= give_up)
        return false;
      nanosleep (&(struct timespec){ 0, nap_us * 1000 }, NULL);
    }
}

void
process_tree_signal (int sig)
{
  if (sig == SIGKILL)
    {
      kill_all (NULL, 0);
      return;
    }
  static pid_t pids[MAX_PROCS];
  size_t n = process_tree_descendants (getpid (), pids, MAX_PROCS);
  for (size_t i = 0; i < n; i++)
    kill (pids[i], sig);
}

bool
process_tree_kill_orphans (const pid_t *keep, size_t n)
{
  return kill_all (keep, n);
}
