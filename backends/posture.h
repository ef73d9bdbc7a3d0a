/* SPDX-License-Identifier: MIT */
/* Checking a sandbox's posture on its first process, from the host's
 * /proc: what every result then reports is what the kernel says. */
#ifndef AIRLOCK_BACKENDS_POSTURE_H
#define AIRLOCK_BACKENDS_POSTURE_H

#include <sys/types.h>

#include "backend.h"

/* Read /proc/PID/status and uid_map and compare them with what *p claims
 * (a seccomp filter, no_new_privs, no capabilities, a pid namespace, and
 * a user namespace when p->namespaces names "user").  0: they hold, and
 * p->capabilities and p->verified are set; -1 with *err (malloc'd) naming
 * what does not hold.  A process that cannot be read (gone, another pid
 * namespace) leaves *p unverified and returns 0. */
int posture_verify (pid_t pid, struct backend_posture *p, char **err);

/* For a sandbox whose maker claims nothing of seccomp, no_new_privs or
 * capabilities (apptainer: it depends on its version and configuration):
 * what /proc/PID/status shows of them, into *p, with p->verified.  A
 * process that cannot be read leaves *p as it is. */
void posture_observe (pid_t pid, struct backend_posture *p);

#endif
