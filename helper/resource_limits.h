/* SPDX-License-Identifier: MIT */
/* Resource limits of one sandbox: a pids and memory cgroup when the helper
 * is root and the host offers the controllers, else rlimits. */
#ifndef AIRLOCK_HELPER_RESOURCE_LIMITS_H
#define AIRLOCK_HELPER_RESOURCE_LIMITS_H

#include <stdint.h>
#include <sys/types.h>

#include "helper_conf.h"
#include "privilege.h"
#include "protocol.h"

struct limits {
  enum al_limits kind;
  uint64_t memory;
  uint32_t pids;
  char group[80];            /* the cgroup's name under .../airlock/ */
  const char *const *bases;  /* controller directories holding airlock/ */
};

/* Choose and, for cgroups, create the group with its limits.  Falls back to
 * rlimits (never fails) when cgroups are not available to us. */
void limits_prepare (struct limits *l, const struct caller *c, uint64_t memory,
                     uint32_t pids);

/* Put the sandbox's first process in the group before it runs anything. */
void limits_attach (const struct limits *l, const struct caller *c, pid_t pid);

/* As root: remove the groups of sandboxes that are over (see the invariant
 * in resource_limits.c).  Groups are not removed when their sandbox ends. */
void limits_sweep (const struct limits *l, const struct caller *c);

/* In the sandbox: core dumps off, nofile and fsize from helper.conf, and
 * the pids/memory rlimits when no cgroup holds those. */
void limits_apply_rlimits (const struct limits *l, const struct helper_conf *conf);

#endif
