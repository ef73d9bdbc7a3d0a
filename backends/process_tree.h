/* Killing a whole process tree from its subreaper: shared by the local
 * supervisor's job leaders and the docker backend's (exec_leader.c). */
#ifndef AIRLOCK_BACKENDS_PROCESS_TREE_H
#define AIRLOCK_BACKENDS_PROCESS_TREE_H

#include <stddef.h>
#include <sys/types.h>

/* Every descendant of root (pids in out[], at most max), from a scan of
 * /proc. */
size_t process_tree_descendants (pid_t root, pid_t *out, size_t max);

/* Send sig to every descendant of the calling process.  The caller must
 * be a child subreaper, so that orphans of the tree stay below it.
 * SIGKILL repeats (reaping in between) until the tree is empty, so a
 * process forking while we kill cannot outrun us. */
void process_tree_signal (int sig);

#endif
