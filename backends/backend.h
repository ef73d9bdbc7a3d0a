/* SPDX-License-Identifier: MIT */
/* What every execution backend implements (local, docker, ssh,
 * singularity, modal, daytona).  The session layer above (broker/) is
 * written once against this: it builds the shell script of each command,
 * bounds the output, runs timeouts and background jobs; a backend only
 * keeps a sandbox alive and runs processes in it. */
#ifndef AIRLOCK_BACKENDS_BACKEND_H
#define AIRLOCK_BACKENDS_BACKEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct backend_session;

enum backend_event_type {
  BACKEND_STARTED, /* job, pid */
  BACKEND_OUTPUT,  /* job, stream (1 stdout, 2 stderr, 3 metadata from the
                      shell wrapper on the job's fd 3), data, len */
  BACKEND_EXITED,  /* job, exit_code or signal (>0): its output is complete */
  BACKEND_ERROR,   /* job (0: the session), message */
  BACKEND_FILE_DONE, /* job: a file_put or file_get's ticket; message:
                        NULL when it is done, else why it failed */
};

struct backend_event {
  enum backend_event_type type;
  uint32_t job;
  uint32_t pid;
  int stream;
  const uint8_t *data; /* valid until the next call on the session */
  size_t len;
  int exit_code;
  int signal;
  const char *message;
};

/* The descriptor on which a command finds its script. */
#define BACKEND_SCRIPT_FD 4

/* One command: argv run with exactly envp, in cwd.  The session layer
 * passes a fixed loader, ["bash", "-c", SHELL_SCRIPT_LOADER], and the
 * command's script (the session wrapper around the user's command): any
 * user of the machine can read a process's argv (ps, /proc/PID/cmdline),
 * so no command text or secret may ever be there, nor in anything the
 * backend's host shows of the process (docker inspect).  The backend
 * gives the script to the command on BACKEND_SCRIPT_FD, as a pipe or file
 * that reads to its end: bash reads it whole before it runs any of it,
 * so a pipe must be written while bash reads it (a script may be several
 * MiB, more than a pipe holds).  The command's fds are then 0-2 (stdio),
 * 3 (the metadata stream) and 4 (the script), nothing else. */
/* A terminal for a job: its window and TERM (checked by the caller:
 * 1..1000 each side, a short [A-Za-z0-9._+-] name). */
struct backend_pty {
  unsigned rows, cols;
  const char *term;
};

struct backend_spawn {
  uint32_t job; /* chosen by the caller, unique among live jobs */
  const char *const *argv;
  const char *const *envp;
  const char *cwd;
  bool stdin_pipe; /* else /dev/null */
  /* NULL: pipes.  Else the command runs on a new pseudo-terminal of the
   * sandbox (its stdin, stdout and stderr, and controlling terminal):
   * its output is one stream (1), its input goes to the terminal and the
   * end of input is the terminal's EOF character.  Only for a backend
   * with a resize op. */
  const struct backend_pty *pty;
  const char *script; /* NULL: fd 4 is not open */
  size_t script_len;
  /* The job's deadline (0: none) and the grace between TERM and KILL:
   * the session layer enforces both; a remote backend enforces them on
   * the remote side too, for when the host cannot be reached. */
  uint64_t timeout_ms;
  uint32_t grace_ms;
};

/* ops->signal's answer when the host cannot be reached: the kill is
 * retried when it can; the session layer ends the job now, with its stop
 * cause, and reports kill_pending. */
#define BACKEND_KILL_PENDING 1

/* What the sandbox can reach, for the approval gate's risk context. */
struct backend_reach {
  bool host_filesystem; /* some host path is writable from inside */
  bool host_network;
  bool isolated;        /* a separate kernel-enforced sandbox (namespaces,
                           container, remote machine) */
};

/* What a sandbox is, as every result reports it (ARCHITECTURE.md:
 * posture): what was set up and, where the host can see it, what the
 * sandbox's first process really has.  Never more than that. */
struct backend_posture {
  const char *isolation;     /* "namespaces" (local), "container" (docker) */
  const char *namespaces[8]; /* NULL-terminated: "user", "mount", "pid", ... */
  bool seccomp;              /* a seccomp filter is on */
  bool no_new_privs;
  int capabilities;          /* effective capabilities; -1: not known */
  const char *network;       /* "loopback", "none", "host", "bridge",
                                "allowlist" */
  const char *network_policy; /* allowlist: its hash (egress_policy_hash) */
  const char *privilege;     /* how the sandbox was made: "setuid",
                                "file-capabilities", "unprivileged",
                                "docker-engine" */
  bool verified;             /* seccomp, no_new_privs, capabilities and the
                                pid and user namespaces were read from /proc
                                of the sandbox's first process */
};

struct backend_ops {
  const char *name;
  /* 0: a job's stdin streams while it runs.  Else the most bytes a job's
   * stdin may hold, all of it taken before the job starts (a backend
   * whose remote side takes stdin only with the start: managed Modal). */
  size_t stdin_max;
  /* Kill every process of the job (its whole tree, including processes
   * that left its session or process group) with sig.  0, -errno, or
   * BACKEND_KILL_PENDING. */
  int (*signal) (struct backend_session *s, uint32_t job, int sig);
  int (*spawn) (struct backend_session *s, const struct backend_spawn *sp,
                char **err);
  int (*write_stdin) (struct backend_session *s, uint32_t job,
                      const void *data, size_t n, bool eof);
  /* A terminal job's new window size (the kernel tells its foreground
   * group: SIGWINCH).  NULL: the backend runs no job on a terminal, and
   * the session layer refuses backend_spawn.pty (never pipes instead). */
  int (*resize) (struct backend_session *s, uint32_t job, unsigned rows,
                 unsigned cols);
  /* Without resize: why the backend gives no terminal, for the
   * not_supported answer (NULL: "not yet"). */
  const char *no_pty_why;
  /* A descriptor that becomes readable when next_event() has something. */
  int (*event_fd) (struct backend_session *s);
  /* 1: *ev filled; 0: nothing yet; -1: the session is lost (*err says why;
   * it is never silently re-created). */
  int (*next_event) (struct backend_session *s, struct backend_event *ev,
                     char **err);
  /* 0 when the sandbox answers; -1 with *err. */
  int (*health) (struct backend_session *s, char **err);
  void (*reach) (struct backend_session *s, struct backend_reach *r);
  /* 0 with *p filled; -1 with *err when the sandbox is not what it was
   * set up to be (then the session must not be used).  NULL: the backend
   * claims nothing. */
  int (*posture) (struct backend_session *s, struct backend_posture *p,
                  char **err);
  /* How many processes the kernel has killed in the sandbox for want of
   * memory (its own memory cgroup's count); -1: not known.  NULL: never
   * known. */
  long long (*oom_kills) (struct backend_session *s);
  /* Optional (NULL: files move through jobs only): a whole file moved
   * by the backend's own files API, outside any job, for a remote
   * sandbox whose jobs' stdin and stdout are slow.  Asynchronous: 0 now,
   * then one BACKEND_FILE_DONE event for ticket (chosen by the caller);
   * or -1 with *err.  The call ends within timeout_ms (0: an hour).
   * file_put: the host file host_path (read when the transfer runs; it
   * must stay until the event) becomes a new file in the sandbox at an
   * unguessable path the backend picks, written into remote (remote_size
   * bytes at most) before the call returns; the caller removes it.
   * file_get: the sandbox's file remote is written to the host file
   * host_path (created 0600), and then removed from the sandbox, whatever
   * the outcome. */
  int (*file_put) (struct backend_session *s, uint32_t ticket, const char *host_path,
                   uint64_t timeout_ms, char *remote, size_t remote_size, char **err);
  int (*file_get) (struct backend_session *s, uint32_t ticket, const char *remote,
                   const char *host_path, uint64_t timeout_ms, char **err);
  /* End the session: no process, mount or file of it is left behind. */
  void (*close) (struct backend_session *s);
};

#endif
