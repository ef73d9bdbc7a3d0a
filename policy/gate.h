/* SPDX-License-Identifier: MIT */
/* The approval gate: one decision per command, the same on every backend.
 *
 * Order (issue 4; each step ends the evaluation when it decides):
 *   1. administrator deny rules          -> deny   (every backend, every mode)
 *   2. hard blocks                       -> deny   (unless the admin set
 *                                                   isolated_guards admin and
 *                                                   the sandbox is isolated)
 *      (1 and 2 count only rules that really matched)
 *   -. a command too long or complex to parse or match completely -> deny
 *   3. the user's deny globs             -> deny   (every backend)
 *   -- an isolated sandbox without host access stops here, allowed, unless
 *      the admin set isolated_guards full --
 *   4. bypass (only where the admin allows it)      -> allow
 *   5. dangerous rules not matched                  -> allow
 *   6. every matched rule on the permanent or session allowlist -> allow
 *   7. the mode: deny -> deny; approve -> allow (if the admin allows the
 *      mode, else deny); interactive/ask -> ask someone. */
#ifndef AIRLOCK_POLICY_GATE_H
#define AIRLOCK_POLICY_GATE_H

#include <stdbool.h>
#include <stddef.h>

#include "rules.h"

enum gate_mode
{
  GATE_MODE_INTERACTIVE, /* a person at a terminal answers */
  GATE_MODE_ASK,         /* the API client answers */
  GATE_MODE_DENY,        /* nobody can answer: fail closed */
  GATE_MODE_APPROVE,     /* explicit opt-in for unattended jobs */
};

/* "interactive", "ask", "deny", "approve"; -1 for anything else. */
int gate_mode_parse (const char *text);
const char *gate_mode_name (enum gate_mode m);

enum gate_verdict
{
  GATE_ALLOW,
  GATE_DENY,
  GATE_ASK, /* someone must answer before it runs */
};

/* A set of rule ids (the permanent allowlist, or a session's approvals). */
struct id_set
{
  char **ids;
  size_t n, cap;
};
bool id_set_has (const struct id_set *s, const char *id);
int id_set_add (struct id_set *s, const char *id); /* 0, or -1: no memory */
void id_set_clear (struct id_set *s);

struct gate_context
{
  enum gate_mode mode;
  /* The sandbox reaches the host (host filesystem or network, or no
   * sandbox at all): the full gate applies. */
  bool host_access;
  bool bypass;                  /* the user asked for it (policy.bypass) */
  const char *const *user_deny; /* globs (fnmatch, case-insensitive), or NULL */
  const char *home;             /* folded to ~ by the rules */
  const struct id_set *always;  /* the user's permanent allowlist, or NULL */
  const struct id_set *session; /* this session's approvals, or NULL */
  /* The command runs on a terminal (exec "pty"): what is typed there is
   * data the gate never sees (gate_decide_input). */
  bool terminal;
};

#define GATE_MAX_RULES 16

struct gate_decision
{
  enum gate_verdict verdict;
  /* Who or what decided: "too-complex", "admin-deny", "hard-block", "user-deny",
   * "isolated", "bypass", "no-rule", "allowlist", "session-approval",
   * "mode-deny", "mode-approve", "approve-mode-forbidden", or for
   * GATE_ASK "pending". */
  const char *decided_by;
  /* The rules that decided: for deny, the deny/block rules; for ask and
   * approvals, the dangerous rules still needing an answer; for an
   * allowlisted command, the allowlisted ones. */
  const struct rule *rules[GATE_MAX_RULES];
  size_t n_rules;
  const char *deny_glob; /* step 3: which glob */
  bool bypass_refused;   /* bypass asked for but not allowed by the admin */
  bool truncated;        /* the parser hit a limit (the text was odd) */
};

/* Decide for one command.  Always decides: a parse that runs out of
 * memory denies. */
void gate_decide (const struct ruleset *rs, const struct gate_context *ctx,
                  const char *command, struct gate_decision *out);

/* The same for a command given input on stdin (an exec's stdin, data
 * written to a job): when the command runs a shell or an interpreter
 * that could execute that input, the input is judged as a command line
 * too, and the stricter decision wins (an ask covers both's rules).
 * On a terminal (ctx->terminal), such a command runs whatever is typed:
 * arbitrary code, the dangerous rule GATE_TERMINAL_RULE, allowed on the
 * isolated floor and otherwise approved like any dangerous rule (the
 * allowlists, bypass, the mode). */
#define GATE_TERMINAL_RULE "terminal-interpreter"
void gate_decide_input (const struct ruleset *rs,
                        const struct gate_context *ctx, const char *command,
                        const char *input, struct gate_decision *out);

/* How strict a decision is, to compare two decisions made in the same
 * context (the gate's promise: adding harmless text to a command never
 * makes its decision less strict):
 *   GATE_STRICT_ALLOW     allowed, no rule needed an answer (no-rule,
 *                         isolated, bypass)
 *   GATE_STRICT_APPROVAL  a dangerous rule matched: needs or had an answer
 *                         (pending, mode-deny, mode-approve,
 *                         approve-mode-forbidden, allowlist,
 *                         session-approval, and the answers)
 *   GATE_STRICT_REFUSED   refused because it could not be judged
 *                         (too-complex, out-of-memory)
 *   GATE_STRICT_BLOCKED   refused by a rule nobody can approve
 *                         (hard-block, admin-deny, user-deny) */
enum gate_strictness
{
  GATE_STRICT_ALLOW,
  GATE_STRICT_APPROVAL,
  GATE_STRICT_REFUSED,
  GATE_STRICT_BLOCKED,
};
enum gate_strictness gate_strictness (const struct gate_decision *d);

/* What to tell the agent or person about a denial (malloc'd): what
 * matched and why it is refused, and that rephrasing will not help. */
char *gate_denial_message (const struct gate_decision *d);

#endif
