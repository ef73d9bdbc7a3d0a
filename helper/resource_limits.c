/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
#include "resource_limits.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/magic.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "util.h"

static const char *const v1_bases[] = { "/sys/fs/cgroup/pids",
                                        "/sys/fs/cgroup/memory", NULL };
static const char *const v2_bases[] = { "/sys/fs/cgroup", NULL };

static bool
is_fs (const char *path, long magic)
{
  struct statfs sf;
  return statfs (path, &sf) == 0 && sf.f_type == magic;
}

/* Open (creating if needed) BASE/airlock/GROUP; fd or -errno. */
static int
make_group (const char *base, const char *group, bool v2)
{
  cleanup_fd int bfd = open (base, O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (bfd < 0)
    return -errno;
  if (v2)
    write_knob (bfd, "cgroup.subtree_control", "+pids +memory");
  if (mkdirat (bfd, "airlock", 0755) < 0 && errno != EEXIST)
    return -errno;
  cleanup_fd int afd
      = openat (bfd, "airlock", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (afd < 0)
    return -errno;
  if (v2 && write_knob (afd, "cgroup.subtree_control", "+pids +memory") < 0)
    return -EOPNOTSUPP;
  if (mkdirat (afd, group, 0755) < 0)
    return -errno;
  int gfd = openat (afd, group, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  return gfd < 0 ? -errno : gfd;
}

static void
remove_group (const char *base, const char *group)
{
  char path[256];
  snprintf (path, sizeof path, "%s/airlock/%s", base, group);
  rmdir (path);
}

/* Write the limits into an open group; false when a required one fails. */
static bool
set_limits (int gfd, bool v2, bool is_pids, const struct limits *l)
{
  char v[32];
  if (v2 || is_pids)
    {
      snprintf (v, sizeof v, "%" PRIu32, l->pids);
      if (write_knob (gfd, "pids.max", v) < 0)
        return false;
    }
  if (v2 || !is_pids)
    {
      snprintf (v, sizeof v, "%" PRIu64, l->memory);
      if (write_knob (gfd, v2 ? "memory.max" : "memory.limit_in_bytes", v) < 0)
        return false;
      /* Swap is best effort: not every host accounts it. */
      write_knob (gfd, v2 ? "memory.swap.max" : "memory.memsw.limit_in_bytes",
                  v2 ? "0" : v);
    }
  return true;
}

void
limits_prepare (struct limits *l, const struct caller *c, uint64_t memory,
                uint32_t pids)
{
  l->kind = AL_LIMITS_RLIMIT;
  l->memory = memory;
  l->pids = pids;
  /* Only real root may own the group: cgroupfs hands a new group to its
   * creator, and a caller-owned group would let the caller lift its own
   * limits.  File-capability mode therefore uses rlimits. */
  if (c->mode != PRIV_SETUID && c->mode != PRIV_ROOT)
    return;

  bool v2 = is_fs ("/sys/fs/cgroup", CGROUP2_SUPER_MAGIC);
  const char *const *bases = v2 ? v2_bases : v1_bases;
  for (size_t i = 0; bases[i]; i++)
    if (!v2 && !is_fs (bases[i], CGROUP_SUPER_MAGIC))
      return;

  uint64_t rnd = 0;
  if (getrandom (&rnd, sizeof rnd, 0) != sizeof rnd)
    return;
  snprintf (l->group, sizeof l->group, "%d-%016" PRIx64, (int) getpid (), rnd);

  priv_fsuid_root (c, true);
  for (size_t i = 0; bases[i]; i++)
    {
      int gfd = make_group (bases[i], l->group, v2);
      bool ok = gfd >= 0 && set_limits (gfd, v2, i == 0, l);
      if (gfd >= 0)
        close (gfd);
      if (!ok)
        {
          for (size_t j = 0; j <= i; j++)
            remove_group (bases[j], l->group);
          priv_fsuid_root (c, false);
          return;
        }
    }
  l->kind = v2 ? AL_LIMITS_CGROUP_V2 : AL_LIMITS_CGROUP_V1;
  l->bases = bases;
  priv_fsuid_root (c, false);
}

void
limits_attach (const struct limits *l, const struct caller *c, pid_t pid)
{
  if (l->kind == AL_LIMITS_RLIMIT)
    return;
  priv_fsuid_root (c, true);
  char v[32];
  snprintf (v, sizeof v, "%d", (int) pid);
  for (size_t i = 0; l->bases[i]; i++)
    {
      char path[256];
      snprintf (path, sizeof path, "%s/airlock/%s", l->bases[i], l->group);
      cleanup_fd int gfd = open (path, O_PATH | O_DIRECTORY | O_CLOEXEC);
      int rc = gfd < 0 ? -errno : write_knob (gfd, "cgroup.procs", v);
      if (rc < 0)
        {
          kill (pid, SIGKILL);
          fail (AL_STEP_LIMITS, -rc, "cannot move the sandbox into %s", path);
        }
    }
  priv_fsuid_root (c, false);
}

/* Invariant: a group is removed only once it is empty and the helper that
 * made it (the pid its name starts with) is gone, so that nothing can be
 * attached to it any more: only its creator attaches.  No root process
 * waits for each sandbox to end; every start sweeps instead, so a group
 * outlives its sandbox (or a killed helper) until the next start.  A pid
 * reused meanwhile only delays the removal (kill() then does not say
 * ESRCH); a populated group refuses rmdir (EBUSY). */
void
limits_sweep (const struct limits *l, const struct caller *c)
{
  if (l->kind == AL_LIMITS_RLIMIT)
    return;
  priv_fsuid_root (c, true);
  for (size_t i = 0; l->bases[i]; i++)
    {
      char path[256];
      snprintf (path, sizeof path, "%s/airlock", l->bases[i]);
      int fd = open (path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      DIR *d = fd >= 0 ? fdopendir (fd) : NULL;
      for (struct dirent *e; d && (e = readdir (d));)
        {
          char *end;
          long pid = strtol (e->d_name, &end, 10);
          if (pid > 0 && pid <= INT_MAX && *end == '-' && pid != getpid ()
              && kill ((pid_t) pid, 0) < 0 && errno == ESRCH)
            unlinkat (dirfd (d), e->d_name, AT_REMOVEDIR);
        }
      if (d)
        closedir (d);
      else if (fd >= 0)
        close (fd);
    }
  priv_fsuid_root (c, false);
}

static void
lower_limit (int resource, rlim_t value)
{
  struct rlimit rl;
  if (getrlimit (resource, &rl) < 0)
    fail (AL_STEP_LIMITS, errno, "getrlimit");
  if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < value)
    value = rl.rlim_max;
  rl.rlim_cur = rl.rlim_max = value;
  if (setrlimit (resource, &rl) < 0)
    fail (AL_STEP_LIMITS, errno, "setrlimit %d", resource);
}

void
limits_apply_rlimits (const struct limits *l, const struct helper_conf *conf)
{
  lower_limit (RLIMIT_CORE, 0);
  lower_limit (RLIMIT_NOFILE, conf->nofile);
  lower_limit (RLIMIT_FSIZE, conf->fsize);
  if (l->kind == AL_LIMITS_RLIMIT)
    {
      /* RLIMIT_NPROC counts per user namespace, so in our fresh one it
       * bounds this sandbox alone.  RLIMIT_AS bounds each process. */
      lower_limit (RLIMIT_NPROC, l->pids);
#ifndef __SANITIZE_ADDRESS__ /* ASan's shadow mappings exceed any such limit */
      lower_limit (RLIMIT_AS, l->memory);
#endif
    }
}
