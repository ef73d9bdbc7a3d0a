/* SPDX-License-Identifier: MIT */
/* Whether the kernel killed something of a sandbox for want of memory:
 * the OOM-kill counter of the memory cgroup a process is in, read from
 * the host (cgroup v1 memory.oom_control, v2 memory.events). */
#ifndef AIRLOCK_BACKENDS_CGROUP_OOM_H
#define AIRLOCK_BACKENDS_CGROUP_OOM_H

#include <sys/types.h>

/* A descriptor of pid's counter file, -1 when there is none to read.  Only
 * meaningful when the sandbox has a memory cgroup of its own: otherwise
 * the counter is its parent's (the user's session), shared with others. */
int cgroup_oom_open (pid_t pid);
/* The counter now, -1 when it cannot be read (the group is gone). */
long long cgroup_oom_kills (int fd);

#endif
