/* SPDX-License-Identifier: MIT */
/* See process_tree.h. */
#define _GNU_SOURCE
#include "process_tree.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_PROCS 8192

void
process_tree_exec (char *const *argv, char *const *envp, const char *cwd,
                   const int fds[5])
{
  setsid ();
  int n = fds[4] >= 0 ? 5 : 4;
  for (int i = 0; i < n; i++)
    if (dup2 (fds[i], i) < 0)
      _exit (126);
  close_range ((unsigned) n, ~0U, 0);
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

/* /proc rather than /proc/PID/task/TID/children: that one needs a kernel
 * option. */
size_t
process_tree_descendants (pid_t root, pid_t *out, size_t max)
{
  static pid_t pid[MAX_PROCS], ppid[MAX_PROCS];
  size_t n = 0, found = 0;
  DIR *d = opendir ("/proc");
  for (struct dirent *e; d && (e = readdir (d)) && n < MAX_PROCS;)
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
      if (paren && sscanf (paren + 1, " %*c %d", &pp) == 1)
        {
          pid[n] = atoi (e->d_name);
          ppid[n++] = pp;
        }
    }
  if (d)
    closedir (d);
  /* Breadth first from root: out[] doubles as the queue. */
  for (size_t q = 0, parent_i = 0;; q++)
    {
      pid_t parent = q == 0 ? root : out[parent_i++];
      for (size_t i = 0; i < n && found < max; i++)
        if (ppid[i] == parent)
          out[found++] = pid[i];
      if (parent_i >= found)
        break;
    }
  return found;
}

void
process_tree_signal (int sig)
{
  static pid_t pids[MAX_PROCS];
  for (int round = 0; round < 1000; round++)
    {
      size_t n = process_tree_descendants (getpid (), pids, MAX_PROCS);
      if (n == 0)
        return;
      for (size_t i = 0; i < n; i++)
        kill (pids[i], sig);
      if (sig != SIGKILL)
        return;
      while (waitpid (-1, NULL, WNOHANG) > 0)
        ;
      nanosleep (&(struct timespec){ 0, 5 * 1000 * 1000 }, NULL);
    }
}
