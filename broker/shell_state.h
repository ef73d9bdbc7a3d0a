/* SPDX-License-Identifier: MIT */
/* Shell state carried between the commands of a session.
 *
 * Each command of a session is a fresh `bash -c SCRIPT` in the sandbox.
 * The scripts built here make it look like one long-lived shell: exported
 * variables, functions, aliases and the working directory persist, kept in
 * a private state directory inside the sandbox:
 *
 *   STATE_DIR/snapshot  bash source: `export -p`, `declare -f`, the export
 *                       and readonly marks of functions, `alias -p`
 *   STATE_DIR/cwd       the working directory (`pwd -P`) and one newline
 *
 * Both files are replaced atomically (temporary file + mv), so a command
 * killed at any point leaves the previous state whole.  Variables whose
 * name starts with AIRLOCK_ are the session's identity, given by the caller
 * with every command: they are never written to the snapshot.
 * Shell options, traps, non-exported variables and jobs do not persist.
 *
 * The scripts are never a process's argument (any user of the machine
 * reads those): bash runs SHELL_SCRIPT_LOADER, and reads the script to its
 * end from fd 4 before running any of it (backends/backend.h).  Every
 * script closes fd 4 first.  When fd 3 is open as the script starts, it
 * is the caller's metadata channel: the command script runs the command
 * with fd 3 closed (neither the command nor anything it starts holds it)
 * and, like the bootstrap, writes the final working directory to it, one
 * line, as its last act; the job script closes it.
 *
 * The scripts need bash 4.4 or later.  They never read stdin.  Exit status:
 * the command's; 125 when the bootstrap cannot make or use the state
 * directory; 126 when the working directory cannot be entered (the command
 * does not run and nothing is saved). */
#ifndef AIRLOCK_BROKER_SHELL_STATE_H
#define AIRLOCK_BROKER_SHELL_STATE_H

/* bash's -c argument for every script: read fd 4 to its end, then run
   it (so a pipe works, written while bash reads).  eval, not `.`: at the
   top of a sourced file `return` would end the script, where `bash -c`
   refuses it. */
#define SHELL_SCRIPT_LOADER "eval -- \"$(< /dev/fd/4)\""

/* Exit status of a script whose working directory cannot be entered. */
#define SHELL_EXIT_NO_CWD 126
/* Exit status of the bootstrap when the state directory is unusable. */
#define SHELL_EXIT_NO_STATE 125

/* Script run once when a session opens: make state_dir (0700, refusing an
   existing one that is a symlink or not ours), capture the shell's
   exports/functions/aliases into the snapshot, cd to initial_cwd and record
   it.  Run it as `bash -l -c` so that what is captured is the login
   environment.  initial_cwd NULL or "": where the shell starts.  Variables
   AIRLOCK_ENV_NAME=value of its environment are exported as NAME after the
   login files ran, and saved: the session's own env.  */
char *shell_bootstrap_script (const char *state_dir, const char *initial_cwd);

/* Script for one command: restore the snapshot (silently), cd to cwd
   (cwd NULL or "": the last recorded one; exit 126 with a message on stderr
   if it does not exist), run `command` as bash would run it as a script,
   then, whatever happened, save exports + functions + aliases (minus
   AIRLOCK_*) and `pwd -P` atomically and exit with the command's status.
   cwd may be absolute, "~" or "~/..." (from the restored $HOME), or
   relative to the last recorded directory.  Variables AIRLOCK_ENV_NAME=value
   of its environment are exported as NAME over the restored state, for
   this command only: they are left out of the save.  */
char *shell_command_script (const char *state_dir, const char *cwd,
                            const char *command);

/* Script for a background job: restore the snapshot and cd exactly as
   shell_command_script does (126 with the same message when cwd cannot be
   entered), close fd 3, run `command`, and exit with its status.  It never
   saves anything and never reports on fd 3: a long job that ends after
   later commands must not overwrite the state they saved, and exports,
   functions, aliases or a cd inside it are lost with it.  */
char *shell_job_script (const char *state_dir, const char *cwd,
                        const char *command);

/* Quote s for bash as one word (single quotes, ' as '\''). */
char *shell_quote (const char *s);

/* Paths of the state files, for callers that read them back. */
char *shell_cwd_file (const char *state_dir);
char *shell_snapshot_file (const char *state_dir);

/* Every function returns a malloc'd string, NULL only on allocation
   failure.  state_dir and command must not be NULL. */

#endif
