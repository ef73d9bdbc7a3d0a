/* SPDX-License-Identifier: MIT */
/* CLI commands served by the per-user daemon, and the way to it. */
#ifndef AIRLOCK_BROKER_CLIENT_COMMANDS_H
#define AIRLOCK_BROKER_CLIENT_COMMANDS_H

#include <cjson/cJSON.h>
#include <stddef.h>

/* A connection to the daemon, starting it if needed; -1 on failure (the
 * reason is printed, after "WHO: "). */
int connect_daemon (const char *who);

/* One connection's reading side. */
struct daemon_conn {
  int fd;
  char buf[1 << 16];
  size_t len;
  char *line;
};
/* Send req (taken) and read the next message: its answer, for a request
 * that gets one at once.  NULL when the daemon went away. */
cJSON *daemon_call (struct daemon_conn *c, cJSON *req);
/* The next message (an event, or the answer after them); NULL when the
 * daemon went away. */
cJSON *daemon_read (struct daemon_conn *c);
/* Send req (taken) without waiting for its answer: 0, or -1. */
int daemon_send (int fd, cJSON *req);

/* Say the error of a daemon's answer r ("airlock WHAT: message"): 1. */
int print_error (const cJSON *r, const char *what);

/* Run the daemon program (airlock-daemon: the daemon, the approval gate,
 * the backends; AIRLOCK_DAEMON overrides where it is) with argv, for
 * `airlock daemon` and `airlock policy`.  Returns only when it could not
 * be run: status, after saying why. */
int exec_daemon_program (char **argv, int status);

int session_command (int argc, char **argv);
int exec_command (int argc, char **argv);
int shell_command (int argc, char **argv);
/* airlock attach SESSION JOB (attach_command.c) */
int attach_command (int argc, char **argv);
int serve_command (int argc, char **argv);
/* airlock mcp: the tools over the Model Context Protocol (mcp_server.c) */
int mcp_command (int argc, char **argv);
/* airlock cp SRC SESSION:DST | SESSION:SRC DST (cp_command.c) */
int cp_command (int argc, char **argv);
/* airlock cache ls|prune [--all]|fetch IMAGE (cache_command.c) */
int cache_command (int argc, char **argv);
/* argv[1] is "daemon": status and stop here, the rest by the daemon
 * program. */
int daemon_command (int argc, char **argv);

#endif
