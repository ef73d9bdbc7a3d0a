/* SPDX-License-Identifier: MIT */
/* Shell state carried between the commands of a session.
 *
 * Each command of a session is a fresh `bash -c SCRIPT` in the sandbox.
 * The scripts built here make it look like one long-lived shell: exported
 * variables, functions, aliases and the working directory persist.  The
 * state lives with the caller (the session layer), not in the sandbox:
 *
 *   - every script that saves reports the state on fd 3, the caller's
 *     metadata channel, as its last act (see shell_state_take for the
 *     format), written by bash builtins only;
 *   - the caller keeps it (struct shell_state) only when the report
 *     arrived whole, so a command killed at any point, or one that
 *     `exec`s another program, leaves the previous state whole;
 *   - the next script carries it and restores it.
 *
 * So a command costs one process, bash: no temporary file, no `mv`, no
 * command substitution.  Variables whose name starts with AIRLOCK_ are the
 * session's identity, given by the caller with every command: they are
 * never part of the state.  Shell options, traps, non-exported variables
 * and jobs do not persist.
 *
 * The scripts are never a process's argument (any user of the machine
 * reads those): bash runs SHELL_SCRIPT_LOADER, and reads the script to its
 * end from fd 4 before running any of it (backends/backend.h).  Every
 * script closes fd 4 first.  When fd 3 is open as the script starts, it
 * is the caller's metadata channel: the command script runs the command
 * with fd 3 closed (neither the command nor anything it starts holds it)
 * and reports the state on it as its last act; the job script closes it.
 *
 * The scripts need bash 4.4 or later (the bootstrap checks).  They never
 * read stdin.  Exit status: the command's; 125 when the bootstrap finds an
 * older bash or no channel to report on; 126 when the working directory
 * cannot be entered (the command does not run and nothing is saved). */
#ifndef AIRLOCK_BROKER_SHELL_STATE_H
#define AIRLOCK_BROKER_SHELL_STATE_H

#include <stddef.h>

/* bash's -c argument for every script: read fd 4 to its end, then run
   it (so a pipe works, written while bash reads).  eval, not `.`: at the
   top of a sourced file `return` would end the script, where `bash -c`
   refuses it.  bash 5.2 reads `$(< file)` without a fork (`read` and
   `mapfile` would read a pipe one byte per system call); older bash forks
   once for it. */
#define SHELL_SCRIPT_LOADER "eval -- \"$(< /dev/fd/4)\""

/* Exit status of a script whose working directory cannot be entered. */
#define SHELL_EXIT_NO_CWD 126
/* Exit status of the bootstrap when bash is older than 4.4 or fd 3 is not
   open. */
#define SHELL_EXIT_NO_STATE 125

/* The most bytes of a state report (fd 3) the caller keeps: a larger
   state is not saved (the caller says so). */
#define SHELL_REPORT_MAX (1 << 20)

/* What the session's shell carries from one command to the next. */
struct shell_state
{
  char *snapshot; /* bash source: `export -p` (AIRLOCK_* dropped),
                     `declare -f`, the export and readonly marks of
                     functions, `alias -p`; NULL before the bootstrap */
  char *cwd;      /* the working directory, physical, absolute */
};

/* Script run once when a session opens: check bash, capture the shell's
   exports/functions/aliases, cd to initial_cwd, and report the state.  Run
   it as `bash -l -c` so that what is captured is the login environment.
   initial_cwd NULL or "": where the shell starts.  Variables
   AIRLOCK_ENV_NAME=value of its environment are exported as NAME after the
   login files ran, and saved: the session's own env.  */
char *shell_bootstrap_script (const char *initial_cwd);

/* Script for one command: restore st (silently), cd to cwd (cwd NULL or
   "": st->cwd; exit 126 with a message on stderr if it does not exist),
   run `command` as bash would run it as a script, then, whatever
   happened, report exports + functions + aliases (minus AIRLOCK_*) and
   `pwd -P` and exit with the command's status.  cwd may be absolute, "~"
   or "~/..." (from the restored $HOME), or relative to st->cwd.  Variables
   AIRLOCK_ENV_NAME=value of its environment are exported as NAME over the
   restored state, for this command only: they are left out of the report.
   st NULL or empty: nothing to restore.  */
char *shell_command_script (const struct shell_state *st, const char *cwd,
                            const char *command);

/* Script for a background job: restore st and cd exactly as
   shell_command_script does (126 with the same message when cwd cannot be
   entered), close fd 3, run `command`, and exit with its status.  It never
   reports anything: a long job that ends after later commands must not
   overwrite the state they saved, and exports, functions, aliases or a cd
   inside it are lost with it.  */
char *shell_job_script (const struct shell_state *st, const char *cwd,
                        const char *command);

/* A script's report, all it wrote on fd 3 (untrusted: the sandbox can
   forge it), is three parts, each ended by a NUL byte:
     `export -p` NUL `declare -f; declare -Fx; declare -Fr; alias -p` NUL
     `pwd -P` NUL
   (bash strings hold no NUL).  When it is whole (exactly three NULs, the
   last one its last byte, an absolute cwd, at most SHELL_REPORT_MAX
   bytes), st is replaced by it, with the export lines of AIRLOCK_* and
   the wrapper's own __airlock_* names dropped, and 1 is returned.  Else
   st is left as it was: 0; -1 when out of memory. */
int shell_state_take (struct shell_state *st, const char *report, size_t len);

void shell_state_free (struct shell_state *st);

/* Quote s for bash as one word (single quotes, ' as '\''). */
char *shell_quote (const char *s);

/* Every function returns a malloc'd string, NULL only on allocation
   failure.  command must not be NULL. */

#endif
