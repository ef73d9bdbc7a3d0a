/* SPDX-License-Identifier: MIT */
/* A job's process tree, seen from its leader (a child subreaper): start
 * the command at its root, kill the whole tree.  Used by the supervisor's
 * job leaders, in local sandboxes and docker containers alike. */
#ifndef AIRLOCK_BACKENDS_PROCESS_TREE_H
#define AIRLOCK_BACKENDS_PROCESS_TREE_H

#include <stdbool.h>
#include <stdnoreturn.h>
#include <stddef.h>
#include <sys/types.h>

/* In the leader's freshly forked child: become the job's command.  A new
 * session, killed when the leader dies (PR_SET_PDEATHSIG); with
 * controlling_tty, fds[0] is a terminal's slave that becomes the new
 * session's controlling terminal (then the command is its session leader
 * and Ctrl-C or a window change reach its foreground group); fds[0..4] as
 * fds 0-4 (stdin, stdout, stderr, the metadata stream 3 and the script,
 * BACKEND_SCRIPT_FD; fds[4] may be -1: then fd 4 is closed), every other
 * fd closed; signals unblocked, SIGPIPE default; then cwd (NULL: stay)
 * and exec argv with envp (NULL: this environment).  The fds given must
 * all be above 4.  Never returns: exit 126 (127 when not found) with a
 * message on fd 2. */
noreturn void process_tree_exec (char *const *argv, char *const *envp,
                                 const char *cwd, const int fds[5],
                                 bool controlling_tty);

/* Every descendant of root (pids in out[], at most max), from a scan of
 * /proc. */
size_t process_tree_descendants (pid_t root, pid_t *out, size_t max);

/* Send sig to every descendant of the calling process.  The caller must
 * be a child subreaper, so that orphans of the tree stay below it.
 * SIGKILL repeats until no descendant is left alive, so a process forking
 * while we kill cannot outrun us; it reaps nothing (the caller's wait loop
 * gets every status, its command's included) and gives up after about two
 * seconds on what does not die. */
void process_tree_signal (int sig);

/* SIGKILL, as above, every descendant of the caller except the children
 * listed in keep and their trees.  For a pid 1 whose children other than
 * keep (its live job leaders) can only be orphans of a dead leader.  False
 * when something was left alive. */
bool process_tree_kill_orphans (const pid_t *keep, size_t n);

#endif
