/* SPDX-License-Identifier: MIT */
/* A job on a terminal of the sandbox, driven from ours (pty_relay.c):
 * `airlock exec --pty`, `airlock shell` on a terminal, `airlock attach`. */
#ifndef AIRLOCK_BROKER_PTY_RELAY_H
#define AIRLOCK_BROKER_PTY_RELAY_H

#include <cjson/cJSON.h>
#include <stdbool.h>

#include "approval_prompt.h"
#include "client_commands.h"

/* pty_relay_run's answer when the session's backend gives no terminal
 * (the error "not_supported", said already). */
#define PTY_RELAY_NOT_SUPPORTED (-3)

/* The detach keys of `airlock attach`: Ctrl-\ twice in a row.  A single
 * Ctrl-\ still reaches the job (after a second without another). */
#define PTY_RELAY_DETACH_KEY '\034'
#define PTY_RELAY_DETACH_NAME "Ctrl-\\ Ctrl-\\"

/* Add exec's "pty" to req: our window (24x80 without a terminal on
 * stdin) and our TERM when it is a plain name. */
void pty_relay_request (cJSON *req);

/* Send the exec req (taken) and relay until its result: our terminal is
 * raw meanwhile (restored on every way out), stdin is typed, SIGWINCH is
 * a resize, SIGINT, SIGTERM and SIGHUP interrupt the command.  The
 * command's exit status, 1 on an error answer (EXIT_DENIED when the gate
 * refused, PTY_RELAY_NOT_SUPPORTED when the backend has no terminal), -1
 * when the daemon went away.  on_approval answers an approval event
 * before the command starts; *cwd, if asked, gets the session's cwd
 * after it (malloc'd). */
int pty_relay_run (struct daemon_conn *c, const char *session, cJSON *req,
                   void (*on_approval) (struct daemon_conn *c, const cJSON *m),
                   char **cwd);

/* Follow job's output from its start (the attach op), live, to its end.
 * With keys, what we type goes to the job (our terminal raw if it is
 * one, resized to ours, SIGWINCH a resize) and PTY_RELAY_DETACH_NAME
 * leaves it; without, only its output (stderr to ours).  SIGINT, SIGTERM
 * and SIGHUP leave it too: the job runs on.  The job's exit status, 0
 * after a detach, 1 on an error answer or a job lost, -1 when the
 * daemon went away. */
int pty_relay_attach (struct daemon_conn *c, const char *session, int job, bool keys);

#endif
