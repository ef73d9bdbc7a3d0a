/* SPDX-License-Identifier: MIT */
/* The sandbox's file system: a new root on an empty tmpfs (or the caller's
 * own --rootfs), filled with read-only binds of the system directories,
 * the workspace, the requested binds, a private /tmp, a fresh /proc and a
 * minimal /dev, then made the root with pivot_root. */
#ifndef AIRLOCK_HELPER_SANDBOX_FS_H
#define AIRLOCK_HELPER_SANDBOX_FS_H

#include <stdint.h>

#include "privilege.h"
#include "protocol.h"

/* Runs in the sandbox's first process, in its new user and mount
 * namespaces with their capabilities, as the caller.  Dies on failure. */
void fs_build_root (const struct al_run *req, const struct caller *c,
                    uint64_t tmpfs_bytes);

#endif
