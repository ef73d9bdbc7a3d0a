/* SPDX-License-Identifier: MIT */
/* The per-user daemon that owns named sessions, and what its API handlers
 * (api.c) need of it. */
#ifndef AIRLOCK_BROKER_DAEMON_H
#define AIRLOCK_BROKER_DAEMON_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>

#include "approval.h"
#include "config.h"
#include "session.h"

#define MAX_CLIENTS 64
#define MAX_LINE (4 << 20) /* one JSON request */

struct client;

struct dsession {
  char *name;
  char *backend;
  struct session *s;
  /* The configuration resolved when it was opened, kept for its life:
   * a daemon never answers with settings it happened to start with. */
  struct airlock_config *cfg;
  char *config_hash;
  struct backend_posture posture;
  struct queued *queue; /* foreground execs waiting their turn (api.c) */
  /* The approval gate's view of it: does the sandbox reach the host (the
   * full gate), the mode execs get unless they say, and the rules
   * approved for the rest of the session. */
  bool host_access;
  enum gate_mode mode;
  struct id_set approvals;
  /* The client that opened it with an owner (an MCP client): only requests
   * carrying the same owner may use it, unless it was opened shared.
   * Cooperative, not a security boundary: every client is the same user. */
  char *owner;
  bool shared;
  struct dsession *next;
};

struct daemon {
  int listen_fd;
  long long started_ms;
  struct client *clients[MAX_CLIENTS];
  struct dsession *sessions;
  char **lost; /* sessions a previous daemon owned: reported, never re-made */
  size_t nlost;
  struct airlock_config *cfg;
  struct approval *approval;
  char dir[4096];
  long long idle_since;
  int idle_exit_sec;
  bool stop;
};

/* Queue one JSON message (and its newline) to the client; takes msg. */
void client_send (struct client *c, cJSON *msg);
/* Write what is queued without waiting (progress during a long request). */
void client_flush (struct client *c);
/* Bytes queued for the client and not yet written. */
size_t client_queued (const struct client *c);

/* When the next job_wait times out (ms, session_now_ms's clock), -1:
 * none; and answering those that are over (ended jobs, timeouts). */
long long api_next_deadline (void);
void api_waits_tick (struct daemon *d);

/* Handle one request line. */
void api_handle (struct daemon *d, struct client *c, const char *line,
                 size_t len);
/* A client went away: its running foreground execs are interrupted or go
 * on as background jobs (jobs.on_client_gone), its queued ones are
 * dropped, nothing more is sent to it. */
void api_client_gone (struct daemon *d, struct client *c);
/* Whether the client still waits for an exec result. */
bool api_client_waiting (struct daemon *d, struct client *c);
/* A session is going: its waiting clients get an error, not silence. */
void api_session_gone (struct session *s, const char *why);

struct dsession *daemon_find (struct daemon *d, const char *name);
bool daemon_is_lost (struct daemon *d, const char *name);
void daemon_forget_lost (struct daemon *d, const char *name);
int daemon_add (struct daemon *d, struct dsession *ds);
void daemon_remove (struct daemon *d, struct dsession *ds);

/* Run the daemon in the foreground (airlock daemon). */
int daemon_main (int idle_exit_sec);

#endif
