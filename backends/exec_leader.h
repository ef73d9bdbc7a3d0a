/* SPDX-License-Identifier: MIT */
/* The job leader of docker sessions: `airlock-supervisor --job`, run by
 * the Docker Engine's exec API for every command.
 *
 * Docker's exec gives a command stdin, stdout and stderr, no fd 3 (the
 * session's metadata channel), no way to signal it and nothing that finds
 * the processes it left behind.  So the broker never execs the command
 * itself: it execs this leader, which is a child subreaper (every
 * descendant of the command, even one that called setsid() or
 * double-forked, stays below it) and speaks a small framed protocol on
 * the exec's own stdio:
 *
 *   stdin  (broker -> leader): SCRIPT data ... SCRIPT_END (first, with
 *                              --script), STDIN data, STDIN_EOF, SIGNAL n
 *   stdout (leader -> broker): OUT, ERR, META (the job's fds 1, 2, 3),
 *                              then EXIT once the command ended and its
 *                              output is drained
 *   stderr: the leader's own complaints, shown as the job's stderr
 *
 * A frame is one type byte, a 4-byte big-endian length, the payload.
 * End of file on the leader's stdin without STDIN_EOF means the broker is
 * gone: the leader kills the whole tree at once.  dockerd delivers that
 * end whatever closed the attach connection (it copies the hijacked
 * stream into the exec's stdin pipe and closes the pipe at EOF or error),
 * so a broker killed by SIGKILL takes its commands with it within a
 * moment; lifecycle.bats holds it to that.  The leader exits once the tree
 * is empty, so the exec lives as long as anything the command started. */
#ifndef AIRLOCK_BACKENDS_EXEC_LEADER_H
#define AIRLOCK_BACKENDS_EXEC_LEADER_H

#include <stdint.h>

#define EXEC_LEADER_FLAG "--job"
#define EXEC_LEADER_STDIN_FLAG "--stdin" /* else the command gets /dev/null */
/* The command reads its script on fd 4 (backend.h), a pipe the leader
 * fills from SCRIPT frames: the script is never in the exec's Cmd, which
 * the host shows to anyone who can see the process (ps, docker inspect). */
#define EXEC_LEADER_SCRIPT_FLAG "--script"
/* The container's own command and pid 1 (HostConfig.Init is off: docker's
 * tini would reap orphans but leave them running): it reaps whatever it
 * inherits and kills it with its tree, since the job leaders are exec'd
 * from outside and a live leader keeps its own orphans, so anything
 * reparented to pid 1 is left over from a dead leader. */
#define EXEC_INIT_FLAG "--init"

#define XL_HEADER 5
#define XL_MAX_PAYLOAD 65536

enum exec_leader_frame {
  XL_OUT = 1,
  XL_ERR = 2,
  XL_META = 3,
  XL_EXIT = 'x',      /* u32 exit code, u32 signal (0: exited) */
  XL_STDIN = 'i',
  XL_STDIN_EOF = 'e', /* no payload */
  XL_SIGNAL = 'k',    /* u8 signal number */
  XL_SCRIPT = 's',
  XL_SCRIPT_END = 'z', /* no payload */
};

static inline void
xl_put_header (uint8_t h[XL_HEADER], uint8_t type, uint32_t len)
{
  h[0] = type;
  h[1] = (uint8_t) (len >> 24);
  h[2] = (uint8_t) (len >> 16);
  h[3] = (uint8_t) (len >> 8);
  h[4] = (uint8_t) len;
}

static inline uint32_t
xl_get_u32 (const uint8_t *p)
{
  return (uint32_t) p[0] << 24 | (uint32_t) p[1] << 16 | (uint32_t) p[2] << 8 | p[3];
}

/* argv: EXEC_LEADER_FLAG [EXEC_LEADER_STDIN_FLAG] [EXEC_LEADER_SCRIPT_FLAG]
 *       -- COMMAND ARGS... */
int exec_leader_main (int argc, char **argv);
int exec_leader_init (void);

#endif
