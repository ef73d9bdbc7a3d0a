/* SPDX-License-Identifier: MIT */
/* The session layer, written once above every backend: a named session is
 * one backend sandbox kept alive between commands; each command is a
 * fresh `bash` wrapped so that exports, functions, aliases and the
 * working directory carry over.  Every command is a job: its output goes
 * to an on-disk spool (spool.h) that clients read by offset, and, for a
 * foreground command, to head+tail windows for its result; timeouts,
 * interrupts and kills take one path (TERM to the whole tree, a grace
 * period, KILL), and every job's end is reported once, with its cause.
 *
 * Event-driven: the daemon polls session_fd() and calls session_process()
 * when it is readable or session_deadline() has passed. */
#ifndef AIRLOCK_BROKER_SESSION_H
#define AIRLOCK_BROKER_SESSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backend.h"

struct session;
struct session_exec;

struct session_limits {
  uint32_t timeout_sec;      /* default per-command timeout (180) */
  size_t max_output_chars;   /* head+tail window (50,000) */
  uint32_t grace_ms;         /* TERM -> KILL on timeout or interrupt */
  const char *spill_dir;     /* where the jobs' output spools go */
  uint64_t spool_max;        /* bytes a job's spool keeps (0: no cap) */
  bool spool_full_stops;     /* a job whose spool is full is stopped */
  /* Finished foreground commands kept for re-reading by offset (the
   * oldest beyond this many are forgotten before their ttl). */
  unsigned keep_finished;
  /* "NAME=value" the session starts with, over the defaults (PATH, LANG,
   * ...); NULL-terminated, or NULL.  Copied. */
  const char *const *env;
  /* What the sandbox is, for messages ("image debian:12"); NULL: "the
   * sandbox". */
  const char *what;
  /* Its memory limit as configured ("20M"), for the message of an OOM
   * kill; NULL: none set here (helper.conf's, or the host's). */
  const char *memory_limit;
};

/* At most this many variables in a session's or a command's env. */
#define SESSION_MAX_ENV 64
#define SESSION_MAX_ENV_BYTES (64 * 1024)

struct exec_request {
  const char *command;
  const char *cwd;          /* NULL: the session's current one */
  const void *stdin_data;   /* NULL: no stdin */
  size_t stdin_len;
  uint64_t timeout_ms;      /* 0: the session's default */
  bool background;
  /* "NAME=value" set for this command only (never saved in the session's
   * state); NULL-terminated, or NULL. */
  const char *const *env;
  /* NULL: pipes.  Else the command runs on a terminal of the sandbox
   * (backend_spawn.pty), with TERM set for it only; a backend without
   * one refuses (-ENOTSUP, its name in *err).  Its stdin is open while it
   * runs (job_stdin), foreground or not. */
  const struct backend_pty *pty;
};

/* How a job ended (ARCHITECTURE.md: reported once, with its cause). */
enum job_end {
  JOB_END_NONE,             /* still running */
  JOB_END_EXITED,           /* by itself (any exit code or signal) */
  JOB_END_TIMED_OUT,
  JOB_END_INTERRUPTED,
  JOB_END_KILLED,           /* the kill operation */
  JOB_END_LOST,             /* the backend lost it: no exit status */
};
const char *session_job_end_name (enum job_end e);

struct exec_result {
  uint32_t job;
  enum job_end cause;
  /* JOB_END_LOST: why (the backend's words); the exit code means nothing */
  const char *lost;
  int exit_code;            /* 124 timeout, 130 interrupt, 128+N signal */
  bool timed_out, interrupted;
  bool oom_killed;          /* the kernel killed it for want of memory: 137 */
  bool kill_pending;        /* timed out or stopped while the sandbox could
                               not be reached: the kill is retried when it
                               can be */
  char *stdout_text, *stderr_text, *output; /* bounded, UTF-8 */
  bool truncated;
  size_t total_chars;       /* of the merged output */
  char *spill_path;         /* the full merged stream when truncated, or
                               NULL: now the client's file */
  const char *spool_error;  /* the spool is incomplete: why; or NULL */
  char *cwd;                /* after the command */
  long long duration_ms;
};

struct session_callbacks {
  /* More output is in the job's spool (session_exec_spool). */
  void (*output) (void *ctx, struct session_exec *e);
  /* The command finished; r is valid during the call only. */
  void (*done) (void *ctx, struct session_exec *e, const struct exec_result *r);
};

enum job_state { JOB_RUNNING, JOB_EXITED, JOB_KILLED };

struct job_info {
  uint32_t id;
  const char *command;
  enum job_state state;
  enum job_end cause;
  bool foreground;          /* a foreground command (finished, or whose
                               client is waiting for it) */
  int exit_code;
  long long started_ms, ended_ms;
  uint64_t output_bytes;    /* in the spool (job_read: the next offset) */
  const char *spool_error;  /* NULL, or why the spool is incomplete */
  const char *lost;         /* JOB_END_LOST: why */
  bool kill_pending;        /* see exec_result */
  bool pty;                 /* it runs on a terminal */
};

/* Open a session on a backend session that is already up: runs the shell
 * bootstrap (synchronously).  Takes ownership of bs.  NULL with *err. */
struct session *session_open (const char *name, const struct backend_ops *ops,
                              struct backend_session *bs, const char *cwd,
                              const struct session_limits *limits, char **err);
const char *session_name (const struct session *s);
const char *session_cwd (const struct session *s);
/* The working directory it was opened in (the sandbox's view of the
 * workdir): with /tmp, where the files API may write (session_files.h). */
const char *session_workdir (const struct session *s);
const struct backend_ops *session_backend (const struct session *s);
long long session_idle_since (const struct session *s); /* ms; now if busy */
bool session_busy (const struct session *s); /* a foreground exec or a running job */
bool session_busy_foreground (const struct session *s);

/* Start a command.  Foreground: one at a time per session (-EBUSY).
 * Background: returns at once; *job_id set. */
int session_exec (struct session *s, const struct exec_request *rq,
                  const struct session_callbacks *cb, void *ctx,
                  struct session_exec **e, uint32_t *job_id, char **err);
/* Stop a foreground exec: it finishes with 130. */
void session_interrupt (struct session_exec *e);
/* Its client went away: forget the callbacks.  keep_running: the command
 * goes on as a background job (its result is dropped; its output stays in
 * the spool); else it is interrupted. */
void session_exec_detach (struct session_exec *e, bool keep_running);
uint32_t session_exec_job (const struct session_exec *e);
/* The job's spool, while the exec is running. */
struct spool *session_exec_spool (struct session_exec *e);

int session_fd (const struct session *s);
long long session_deadline (const struct session *s); /* ms, -1: none */
/* Handle what is ready.  -1 with *err when the session is lost. */
int session_process (struct session *s, char **err);

/* A name a session or command env may set: a shell variable name, not
 * AIRLOCK_* (the session's identity) and not one of bash's own that would
 * run code or break the wrapper (BASH_ENV, ENV, SHELLOPTS, BASHOPTS, PS4). */
bool session_env_name_ok (const char *name);

/* Jobs by id: background jobs, and foreground commands (running, or
 * finished and kept).  session_job_spool: a new reference, or NULL. */
int session_job_info (struct session *s, uint32_t id, struct job_info *info);
struct spool *session_job_spool (struct session *s, uint32_t id);
int session_job_read (struct session *s, uint32_t id, uint64_t offset,
                      size_t max, char **data, size_t *len,
                      struct job_info *info);
int session_job_write (struct session *s, uint32_t id, const void *data,
                       size_t n, bool eof);
int session_job_kill (struct session *s, uint32_t id);
/* A terminal job's window: -ENOENT no such job, -ESRCH it ended, -ENOTTY
 * it has no terminal. */
int session_job_resize (struct session *s, uint32_t id, unsigned rows,
                        unsigned cols);
/* The background jobs (foreground commands are not listed). */
size_t session_jobs (struct session *s, struct job_info *out, size_t max);
/* Drop finished jobs older than ttl_ms. */
void session_prune_jobs (struct session *s, long long ttl_ms);

/* A job of the session layer's own (the files API, session_files.h): a
 * fixed bash script (never any user's text; what it works on comes in
 * env, "NAME=value", each seen by the script as AIRLOCK_ENV_NAME), run
 * through the backend like any command, so it has the sandbox's own
 * permissions and view, and the spool, kill path and timeout apply.  It
 * is not listed among the jobs and restores or saves no shell state; its
 * output goes only to its spool (session_exec_spool) and cb; cb->done
 * gets the exit status and cause (no output windows), then the job is
 * forgotten.  session_exec_detach(e, false) stops it without a word. */
int session_job_script (struct session *s, const char *what, const char *script,
                        const char *const *env, bool with_stdin, uint64_t timeout_ms,
                        const struct session_callbacks *cb, void *ctx,
                        struct session_exec **e, char **err);
/* Its stdin: -ESRCH once it ended or its stdin is closed. */
int session_job_script_write (struct session_exec *e, const void *data,
                              size_t n, bool eof);

/* Whole files moved by the backend's own files API, outside any job
 * (backend_ops file_put / file_get; session_has_file_api says whether
 * this session's backend has one).  done(ctx, NULL) once it is done, or
 * done(ctx, why) when it failed; never called after session_file_cancel
 * or session_close.  0 with *ticket, or -1 with *err. */
typedef void (*session_file_fn) (void *ctx, const char *error);
bool session_has_file_api (const struct session *s);
int session_file_put (struct session *s, const char *host_path, uint64_t timeout_ms,
                      char *remote, size_t remote_size, session_file_fn done, void *ctx,
                      uint32_t *ticket, char **err);
int session_file_get (struct session *s, const char *remote, const char *host_path,
                      uint64_t timeout_ms, session_file_fn done, void *ctx,
                      uint32_t *ticket, char **err);
void session_file_cancel (struct session *s, uint32_t ticket);
/* A new empty host file (0600) where the session's spools go, for what a
 * transfer holds on the host: its path (malloc'd), or NULL with *err. */
char *session_temp_file (struct session *s, char **err);

/* Close: every process, mount and file of the session goes. */
void session_close (struct session *s);

long long session_now_ms (void);

#endif
