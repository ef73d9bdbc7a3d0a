/* SPDX-License-Identifier: MIT */
/* A small client of the Docker Engine API over its unix socket: JSON
 * requests through libcurl.
 * Never the docker CLI: its start-up alone costs tens of milliseconds a
 * call, and what is on its command line is visible to every user in
 * /proc.  Errors are sentences that name what failed and the fix. */
#ifndef AIRLOCK_BACKENDS_DOCKER_ENGINE_H
#define AIRLOCK_BACKENDS_DOCKER_ENGINE_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>

/* The API version spoken: Debian 12's docker.io (20.10) speaks it, and
 * later engines still accept it. */
#define DOCKER_API_VERSION "1.41"
#define DOCKER_DEFAULT_SOCKET "/var/run/docker.sock"

struct docker_engine;

struct docker_response {
  long status;  /* HTTP status */
  char *body;   /* NUL-terminated */
  size_t len;
  cJSON *json;  /* the body parsed, when it is JSON */
};

/* Which socket to use: an explicitly configured one (explicit: it did
 * not come from the built-in default), else DOCKER_HOST when it is a
 * unix:// address, else the default.  NULL with *err for a DOCKER_HOST
 * that is not a unix socket. */
char *docker_socket_choose (const char *configured, bool explicit,
                            const char *docker_host, char **err);

/* No I/O yet; NULL only when out of memory. */
struct docker_engine *docker_engine_new (const char *socket_path);
void docker_engine_free (struct docker_engine *e);
const char *docker_engine_socket (const struct docker_engine *e);

/* GET /_ping: 0 when a Docker Engine answers, else -1 with *err saying
 * why (not running, permission denied, not an engine). */
int docker_engine_ping (struct docker_engine *e, char **err);

/* One request.  body: JSON (may be NULL).  0 when an HTTP answer came
 * (any status: check r->status), -1 with *err when none did. */
int docker_call (struct docker_engine *e, const char *method, const char *path,
                 const cJSON *body, struct docker_response *r, char **err);
/* The same with a raw body of the given content type. */
int docker_call_raw (struct docker_engine *e, const char *method,
                     const char *path, const void *body, size_t len,
                     const char *content_type, struct docker_response *r,
                     char **err);
/* A request whose answer is a stream of JSON lines (pulls): each line is
 * handed to on_line as it arrives.  No overall timeout. */
int docker_call_lines (struct docker_engine *e, const char *method,
                       const char *path,
                       void (*on_line) (void *ctx, const char *line),
                       void *ctx, struct docker_response *r, char **err);
void docker_response_free (struct docker_response *r);

/* What the engine said about a failed request: its "message", else the
 * body, else the status. Valid while r is. */
const char *docker_response_message (struct docker_response *r);

#endif
