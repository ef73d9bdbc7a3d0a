/* SPDX-License-Identifier: MIT */
/* `airlock exec --pty` (pty_relay.c): a command on a terminal of the
 * sandbox, driven from ours. */
#ifndef AIRLOCK_BROKER_PTY_RELAY_H
#define AIRLOCK_BROKER_PTY_RELAY_H

#include <cjson/cJSON.h>

#include "approval_prompt.h"
#include "client_commands.h"

/* Add exec's "pty" to req: our window (24x80 without a terminal on
 * stdin) and our TERM when it is a plain name. */
void pty_relay_request (cJSON *req);

/* Send the exec req (taken) and relay until its result: our terminal is
 * raw meanwhile (restored on every way out), stdin is typed, SIGWINCH is
 * a resize, SIGINT, SIGTERM and SIGHUP interrupt the command.  The
 * command's exit status, 1 on an error answer (EXIT_DENIED when the gate
 * refused), -1 when the daemon went away.  on_approval answers an
 * approval event before the command starts. */
int pty_relay_run (struct daemon_conn *c, const char *session, cJSON *req,
                   void (*on_approval) (struct daemon_conn *c, const cJSON *m));

#endif
