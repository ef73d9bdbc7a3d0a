/* SPDX-License-Identifier: MIT */
/* What the command-line client needs of the approval gate's broker side
 * without the gate itself (which needs PCRE2 and libunistring, and lives
 * in the daemon): the default mode, and airlock's own directories that
 * no sandbox may see.  See approval.h for the rest. */
#ifndef AIRLOCK_BROKER_APPROVAL_CLIENT_H
#define AIRLOCK_BROKER_APPROVAL_CLIENT_H

#include <stdbool.h>

#include "config.h"
#include "protected_paths.h"

/* The name of the mode a caller gets when it does not say: policy.mode,
 * where "auto" is "interactive" with a terminal and "deny" without, and
 * "interactive" without a terminal is "deny" (nobody is there to
 * answer). */
const char *approval_default_mode_name (const struct airlock_config *cfg,
                                        bool have_terminal);

/* $XDG_STATE_HOME/airlock, else ~/.local/state/airlock (the audit log);
 * malloc'd, NULL with *err. */
char *approval_state_dir (char **err);
/* The directory of the user's config file (config.json, the allowlist);
 * malloc'd, NULL without a home directory. */
char *approval_config_dir (void);

/* airlock's own configuration, state and runtime directories, which no
 * sandbox may see (policy/protected_paths.h: a sandboxed command could
 * read or rewrite the policy, or reach the daemon's socket and approve
 * itself).  Each is created (0700) when missing, so that a sandbox shown
 * its parent cannot create it, then found as it is now.  Free with
 * approval_protected_free. */
void approval_protected_dirs (struct protected_dirs *p);
void approval_protected_free (struct protected_dirs *p);

#endif
