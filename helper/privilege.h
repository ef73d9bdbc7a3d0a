/* SPDX-License-Identifier: MIT */
/* Privilege state of the helper: which mode it runs in, and the only ways
 * that state may change (always downwards, tracked here, never inferred
 * from geteuid()). */
#ifndef AIRLOCK_HELPER_PRIVILEGE_H
#define AIRLOCK_HELPER_PRIVILEGE_H

#include <stdbool.h>
#include <sys/types.h>

#include "protocol.h"

/* The values are the protocol's: the STARTED report sends the mode as is. */
enum priv_mode {
  PRIV_NONE = AL_PRIV_UNPRIVILEGED, /* unprivileged user namespaces only */
  PRIV_SETUID = AL_PRIV_SETUID,     /* setuid root, called by a non-root user */
  PRIV_FILECAPS = AL_PRIV_FILECAPS, /* file capabilities: exactly sys_admin,
                                       dac_override, setuid, setgid */
  PRIV_ROOT = AL_PRIV_ROOT,         /* called by root itself */
};

struct caller {
  uid_t uid; /* the real ids of whoever ran us: the only ids ever mapped */
  gid_t gid;
  enum priv_mode mode;
};

/* Identify the mode, refuse unexpected privilege, reduce the permitted set
 * to what the mode needs with nothing effective, and make file access use
 * the caller's identity (fsuid/fsgid).  Dies on any inconsistency. */
void priv_init (struct caller *c);

bool priv_is_privileged (const struct caller *c);

/* Make exactly these capabilities effective (a -1 terminated list), or none
 * with priv_lower().  No-ops in PRIV_NONE. */
void priv_raise (const struct caller *c, ...);
void priv_lower (const struct caller *c);

/* Run cgroup operations as real root (setuid/root mode only): cgroupfs
 * gives new groups to the creator's fsuid, which must not be the caller. */
void priv_fsuid_root (const struct caller *c, bool root);

/* clone() into new namespaces (flags include CLONE_NEWUSER).  In the
 * privileged modes the clone happens with euid 0, so the new user namespace
 * is owned by root: the caller gets no capability over it, cannot ptrace
 * the setup, and cannot setns into it later.  Returns as clone() does. */
pid_t priv_clone_root_owned (const struct caller *c, int flags);

/* Parent side, after the sandbox is started: become the caller for good and
 * hold no capability in any set. */
void priv_drop_monitor (const struct caller *c);

/* Sandbox side, first thing after the uid/gid maps exist: become the caller
 * inside the new user namespace while keeping that namespace's
 * capabilities for the setup still to do. */
void priv_enter_sandbox_identity (const struct caller *c);

/* Sandbox side, last privileged step: empty every capability set including
 * bounding and ambient, and verify it. */
void priv_drop_sandbox (void);

#endif
