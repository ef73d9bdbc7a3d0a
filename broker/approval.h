/* SPDX-License-Identifier: MIT */
/* The broker's side of the approval gate: where the rules, the user's
 * allowlist and the audit log live, keeping them fresh, and recording
 * every decision.  The decision itself is policy/gate.c's. */
#ifndef AIRLOCK_BROKER_APPROVAL_H
#define AIRLOCK_BROKER_APPROVAL_H

#include <stdbool.h>

#include "approval_client.h"
#include "config.h"
#include "gate.h"

#ifndef AIRLOCK_DEFAULT_RULES
#define AIRLOCK_DEFAULT_RULES "/usr/local/share/airlock/default.rules"
#endif
#ifndef AIRLOCK_ADMIN_RULES
#define AIRLOCK_ADMIN_RULES "/etc/airlock/policy.rules"
#endif

struct approval;

/* Load rules and allowlist and open the audit log; NULL with *err.  A
 * broken rule file is an error, never "no rules". */
struct approval *approval_open (const struct airlock_config *cfg, char **err);
void approval_close (struct approval *a);

/* Reload the rule files or the allowlist when they changed on disk.  On
 * error the previous rules stay and *err says what is wrong. */
int approval_refresh (struct approval *a, char **err);

const struct ruleset *approval_rules (const struct approval *a);

/* approval_default_mode_name (approval_client.h) as a mode. */
enum gate_mode approval_default_mode (const struct airlock_config *cfg,
                                      bool have_terminal);

/* Decide for one command: fills the context from the configuration
 * (deny globs and bypass of cfg, a session's snapshot; NULL: the one
 * approval_open had), home, the permanent allowlist, and the caller's
 * mode, risk and session approvals; terminal: it runs on one (exec
 * "pty", gate_context.terminal). */
void approval_decide (struct approval *a, const struct airlock_config *cfg,
                      enum gate_mode mode,
                      bool host_access, const struct id_set *session,
                      const char *command, const char *input, bool terminal,
                      struct gate_decision *d);

/* Write one audit record.  0, or -1 with *err: the caller must then
 * refuse the command (an unrecorded decision does not run). */
int approval_record (struct approval *a, const char *session,
                     const char *backend, const char *command,
                     const struct gate_decision *d, const char *decision,
                     const char *decided_by, char **err);

/* "always": add the rules of d to the user's allowlist file. */
int approval_remember (struct approval *a, const struct gate_decision *d,
                       char **err);

#endif
