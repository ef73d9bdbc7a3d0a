/* SPDX-License-Identifier: MIT */
/* Messages between the broker and a session's supervisor, the unprivileged
 * pid 1 of a local session sandbox.  Same framing as helper/protocol.h;
 * its own closed sets of message and field types.  The broker treats
 * every message as untrusted: code in the sandbox can reach the
 * supervisor, and so could forge anything it sends. */
#ifndef AIRLOCK_SUPERVISOR_PROTOCOL_H
#define AIRLOCK_SUPERVISOR_PROTOCOL_H

#include "protocol.h"

#define SUP_MAX_ARGV 256
#define SUP_MAX_ENV 512
#define SUP_MAX_DATA 65536 /* bytes of one stdin or output chunk */
#define SUP_MAX_JOBS 256   /* jobs alive at once in one session */
#define SUP_MAX_PTY_SIDE 1000 /* rows or columns of a job's terminal */
#define SUP_MAX_TERM 32       /* bytes of a TERM name */

/* The flag that makes the supervisor a docker container's own command and
 * pid 1 (HostConfig.Init is off: docker's tini would reap orphans but
 * leave them running; supervisor.c kills them with their tree). */
#define EXEC_INIT_FLAG "--init"

/* The flag that makes the supervisor a process of an Apptainer or
 * Singularity instance, started by `exec instance://NAME`: not pid 1 (the
 * instance has its own init), a child subreaper instead; it connects to
 * SUP_CONTAINER_SOCKET as in a docker container, after reading on its
 * stdin the token it proves itself with (SUP_TOKEN_LEN hex digits, the
 * first message it sends); it kills every job with its tree and exits
 * when the broker goes away. */
#define EXEC_INSTANCE_FLAG "--instance"
#define SUP_TOKEN_LEN 64

/* In a docker session's container, the supervisor (its pid 1, started
 * with EXEC_INIT_FLAG) connects to the broker's socket here: a directory
 * of the session's, bind-mounted read-only (docker_container.c). */
#define SUP_CONTAINER_DIR "/.airlock-control"
#define SUP_CONTAINER_SOCKET SUP_CONTAINER_DIR "/supervisor.sock"

enum sup_msg_type {
  /* broker -> supervisor */
  SUP_SPAWN = AL_MSG_SUP_FIRST, /* JOB, ARGV+, ENV*, CWD, STDIN, SCRIPT,
                                   ROWS+COLS+TERM: on a terminal (all three
                                   or none) */
  SUP_STDIN,                    /* JOB, DATA, EOF */
  SUP_SIGNAL,                   /* JOB, SIGNAL: every process of the job */
  SUP_PING,                     /* nothing */
  /* supervisor -> broker */
  SUP_STARTED,                  /* JOB, PID */
  SUP_OUTPUT,                   /* JOB, STREAM, DATA */
  SUP_EXITED,                   /* JOB, EXIT_CODE or SIGNAL: the job's first
                                   process ended and its output is drained */
  SUP_PONG,                     /* nothing */
  SUP_ERROR,                    /* JOB (0: none), MESSAGE */
  /* broker -> supervisor */
  SUP_SCRIPT,                   /* JOB, DATA, EOF: the job's script, in
                                   order, after SUP_SPAWN with SCRIPT 1 */
  SUP_RESIZE,                   /* JOB, ROWS, COLS: a terminal job's window */
  SUP_MSG_LAST_ = SUP_RESIZE,
};

enum sup_field_type {
  SUP_F_JOB = 1,       /* u32, 1.. */
  SUP_F_ARGV = 2,      /* string, repeated */
  SUP_F_ENV = 3,       /* string NAME=value, repeated */
  SUP_F_CWD = 4,       /* absolute path */
  SUP_F_STDIN = 5,     /* u32 0: /dev/null, 1: a pipe fed by SUP_STDIN */
  SUP_F_DATA = 6,      /* bytes, <= SUP_MAX_DATA */
  SUP_F_EOF = 7,       /* u32 0/1 */
  SUP_F_SIGNAL = 8,    /* u32 1..64 */
  SUP_F_PID = 9,       /* u32 */
  SUP_F_STREAM = 10,   /* u32 1: stdout, 2: stderr, 3: the job's fd 3,
                          metadata from the session's shell wrapper */
  SUP_F_EXIT_CODE = 11,/* u32 0..255 */
  SUP_F_MESSAGE = 12,  /* string */
  SUP_F_SCRIPT = 13,   /* u32 1: fd 4 is a pipe fed by SUP_SCRIPT (never
                          argv: any user can read a process's argv) */
  SUP_F_ROWS = 14,     /* u32 1..SUP_MAX_PTY_SIDE */
  SUP_F_COLS = 15,     /* u32 1..SUP_MAX_PTY_SIDE */
  SUP_F_TERM = 16,     /* string 1..SUP_MAX_TERM of [A-Za-z0-9._+-] */
  SUP_F_LAST_ = SUP_F_TERM,
};

struct sup_msg {
  uint16_t type;
  uint32_t present; /* bit per field type */
  uint32_t job, stdin_mode, eof, signal, pid, stream, exit_code, script;
  uint32_t rows, cols;
  const char *term; /* NULL: the job has no terminal */
  const char *argv[SUP_MAX_ARGV + 1];
  uint32_t argc;
  const char *envp[SUP_MAX_ENV + 1];
  uint32_t envc;
  const char *cwd;
  const char *message;
  const uint8_t *data; /* points into the decoded buffer */
  uint32_t data_len;
  char arena[AL_MAX_MESSAGE + AL_MAX_FIELDS];
};

#define SUP_HAS(m, f) (((m)->present >> (f)) & 1)

/* Decode one message: 0, or -1 with *why set.  Pure, like al_decode(). */
int sup_decode (const uint8_t *buf, size_t len, struct sup_msg *m,
                const char **why);

/* A terminal type the supervisor may put in TERM: a short name of
 * [A-Za-z0-9._+-], nothing a terminfo lookup could take for a path. */
bool sup_term_ok (const char *term);

/* Encoding on top of al_writer (same framing, this family's numbers). */
static inline void
sup_put_bytes (struct al_writer *w, enum sup_field_type f, const void *data,
               size_t n)
{
  al_put_bytes (w, (enum al_field_type) f, data, n);
}
static inline void
sup_begin (struct al_writer *w, enum sup_msg_type t)
{
  al_begin (w, (enum al_msg_type) t);
}
static inline void
sup_put_u32 (struct al_writer *w, enum sup_field_type f, uint32_t v)
{
  al_put_u32 (w, (enum al_field_type) f, v);
}
static inline void
sup_put_str (struct al_writer *w, enum sup_field_type f, const char *s)
{
  al_put_str (w, (enum al_field_type) f, s);
}

#endif
