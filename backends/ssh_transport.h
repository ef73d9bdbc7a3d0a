/* SPDX-License-Identifier: MIT */
/* The OpenSSH client as the ssh backend's transport: its argv (never a
 * shell string), one persistent master per host (ControlMaster, a hashed
 * ControlPath in a 0700 directory), the fixed remote bootstrap every
 * channel runs, and ssh's failures put in words. */
#ifndef AIRLOCK_BACKENDS_SSH_TRANSPORT_H
#define AIRLOCK_BACKENDS_SSH_TRANSPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct ssh_target {
  const char *program;      /* the ssh client; NULL: "ssh" from PATH */
  const char *host;
  const char *user;         /* NULL: ssh's choice */
  int port;                 /* 0: ssh's choice */
  const char *key;          /* identity file, or NULL */
  const char *config;       /* -F, or NULL */
  const char *known_hosts;  /* UserKnownHostsFile, or NULL */
  const char *strict;       /* StrictHostKeyChecking: "accept-new", "yes" */
  const char *const *options; /* extra "Key=Value", NULL-terminated or NULL */
  int connect_timeout, alive_interval, alive_count, control_persist;
  char *control_dir;        /* RUNTIME/ssh, made 0700 (ssh_target_init) */
  char settings_id[17];     /* the control socket: control_dir/ID */
};

/* The one remote command of every channel: it reads a length line, then
 * that many bytes of sh code, from its stdin, and runs them. */
#define SSH_REMOTE_BOOTSTRAP "exec sh -c 'read -r n && eval \"$(head -c \"$n\")\"'"

/* Make runtime_dir/ssh (0700, ours).  0, or -1 with *err. */
int ssh_target_init (struct ssh_target *t, const char *runtime_dir, char **err);
void ssh_target_clear (struct ssh_target *t);

/* "user@host:port" for messages (malloc'd). */
char *ssh_target_name (const struct ssh_target *t);

/* A running ssh: stdin to write, stdout and stderr to read (all
 * non-blocking, close-on-exec), and a pidfd for its end. */
struct ssh_proc {
  pid_t pid;
  int pidfd, in, out, err;
};

/* Start ssh with the remote bootstrap (control: NULL), or a control
 * command ("check", "exit") of the master.  verbose: -v (for the list
 * of identities tried).  0, or -1 with *err. */
int ssh_spawn (const struct ssh_target *t, const char *control, bool verbose,
               struct ssh_proc *p, char **err);
/* Start `ssh -tt` over the master running remote_command (a path, never
 * a script), on a new local terminal of rows x cols with TERM=term: its
 * stdin and stdout are the terminal, its stderr a pipe (p->err); *ptm is
 * the terminal's master (non-blocking, close-on-exec), for its output,
 * its input and its window.  0, or -1 with *err. */
int ssh_spawn_tty (const struct ssh_target *t, const char *remote_command,
                   const char *term, unsigned rows, unsigned cols,
                   struct ssh_proc *p, int *ptm, char **err);
/* Close what is open; kill (SIGKILL) and reap a process still running. */
void ssh_proc_end (struct ssh_proc *p, bool kill_it);
/* Reap an exited ssh: its exit status (255: ssh's own failure), or -1. */
int ssh_proc_reap (struct ssh_proc *p);

/* Run ssh synchronously: input written, stdout and stderr gathered,
 * bounded by timeout_ms (then killed).  The exit status, or -1 with *err
 * (spawn failure or timeout); *out and *errout malloc'd, NUL-terminated. */
int ssh_run (const struct ssh_target *t, const char *control, bool verbose,
             const void *input, size_t input_len, int timeout_ms,
             char **out, char **errout, char **err);

/* ssh's stderr after a failure (exit 255), in words naming the host and
 * what to do; NULL when it is not one ssh explains (malloc'd). */
char *ssh_explain (const struct ssh_target *t, const char *ssh_stderr);

/* The identities ssh tried, from `ssh -v` output: "the key ~/.ssh/x, the
 * agent's key ..." (malloc'd), or NULL. */
char *ssh_identities_tried (const char *verbose_stderr);

#endif
