/* SPDX-License-Identifier: MIT */
/* The interactive approval mode: a person at the terminal answers. */
#ifndef AIRLOCK_BROKER_APPROVAL_PROMPT_H
#define AIRLOCK_BROKER_APPROVAL_PROMPT_H

#include <stdbool.h>
#include <stddef.h>

/* Exit status of a command-line client whose command the gate refused
 * (sysexits' EX_NOPERM): it did not run. */
#define EXIT_DENIED 77

/* Whether a controlling terminal can be asked at all. */
bool approval_tty_available (void);

/* Show the command (control characters made visible) and the reasons,
 * and read once / session / always / deny from /dev/tty.  End of input or
 * no terminal: "deny"; silence until the deadline: "timeout" (a denial
 * too, recorded as such). */
const char *approval_prompt (const char *command, const char *const *rules,
                             size_t n_rules, long long timeout_ms);

#endif
