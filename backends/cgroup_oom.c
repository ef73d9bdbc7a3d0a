/* SPDX-License-Identifier: MIT */
/* See cgroup_oom.h. */
#define _GNU_SOURCE
#include "cgroup_oom.h"

#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int
cgroup_oom_open (pid_t pid)
{
  char path[4200], line[4096];
  snprintf (path, sizeof path, "/proc/%d/cgroup", (int) pid);
  FILE *f = fopen (path, "re");
  if (!f)
    return -1;
  int fd = -1;
  while (fd < 0 && fgets (line, sizeof line, f))
    {
      line[strcspn (line, "\n")] = '\0';
      char *rest = strchr (line, ':');
      char *group = rest ? strchr (rest + 1, ':') : NULL;
      if (!group)
        continue;
      *group++ = '\0';
      rest++;
      /* v1: "N:memory:/path" (the controller may share a line with
       * others, "memory,foo"); v2: "0::/path". */
      bool v1 = !strcmp (rest, "memory") || !strncmp (rest, "memory,", 7)
                || strstr (rest, ",memory");
      if (v1)
        snprintf (path, sizeof path, "/sys/fs/cgroup/memory%s/memory.oom_control", group);
      else if (!*rest && !strcmp (line, "0"))
        snprintf (path, sizeof path, "/sys/fs/cgroup%s/memory.events", group);
      else
        continue;
      fd = open (path, O_RDONLY | O_CLOEXEC);
    }
  fclose (f);
  return fd;
}

long long
cgroup_oom_kills (int fd)
{
  char buf[1024];
  ssize_t n = fd >= 0 ? pread (fd, buf, sizeof buf - 1, 0) : -1;
  if (n <= 0)
    return -1;
  buf[n] = '\0';
  for (char *p = buf; p && *p; p = strchr (p, '\n') ? strchr (p, '\n') + 1 : NULL)
    if (!strncmp (p, "oom_kill ", 9))
      return strtoll (p + 9, NULL, 10);
  return -1;
}
