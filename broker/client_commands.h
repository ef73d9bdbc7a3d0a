/* SPDX-License-Identifier: MIT */
/* CLI commands served by the per-user daemon. */
#ifndef AIRLOCK_BROKER_CLIENT_COMMANDS_H
#define AIRLOCK_BROKER_CLIENT_COMMANDS_H

/* A connection to the daemon, starting it if needed; -1 on failure (the
 * reason is printed). */
int connect_daemon (void);

int session_command (int argc, char **argv);
int exec_command (int argc, char **argv);
int shell_command (int argc, char **argv);
int serve_command (int argc, char **argv);
int daemon_command (int argc, char **argv);

#endif
