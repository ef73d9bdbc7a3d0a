/* SPDX-License-Identifier: MIT */
/* What the API's handler files (api.c, api_approval.c) share. */
#ifndef AIRLOCK_BROKER_API_INTERNAL_H
#define AIRLOCK_BROKER_API_INTERNAL_H

#include <cjson/cJSON.h>
#include <stdbool.h>

#include "daemon.h"

/* A response object carrying the request's id. */
cJSON *reply (const cJSON *id, bool ok);
void send_error (struct client *c, const cJSON *id, const char *code,
                 const char *fmt, ...) __attribute__ ((format (printf, 4, 5)));

/* Field access with the errors the API promises (api.c): a missing or
 * mistyped field answers the client and sets *bad. */
const char *want_string (struct client *c, const cJSON *req, const cJSON *id,
                         const char *key, bool required, bool *bad);
double want_number (struct client *c, const cJSON *req, const cJSON *id,
                    const char *key, double dflt, double min, double max, bool *bad);
struct dsession *want_session (struct daemon *d, struct client *c,
                               const cJSON *req, const cJSON *id, bool *bad);

/* ops upload and download (api_files.c): answered once the transfer is
 * over; a client that goes away stops its transfers. */
void api_op_files (struct daemon *d, struct client *c, const char *op,
                   const cJSON *req, const cJSON *id);
void api_files_client_gone (struct client *c);
bool api_files_waiting (struct client *c);

/* op "cache": ls, prune and fetch of the SIF cache (api_cache.c). */
void api_op_cache (struct daemon *d, struct client *c, const cJSON *req,
                   const cJSON *id);

/* The approval gate in front of every exec and every write to a job's
 * stdin (api_approval.c): command is judged, with input (stdin) when the
 * command would run it; shown is what the audit log and the person see.
 * Returns true
 * when the command may start now; otherwise it has answered the client
 * (denied) or asked it (the exec resumes through api_exec_approved once
 * answered). */
bool api_gate (struct daemon *d, struct dsession *s, struct client *c,
               const cJSON *req, const cJSON *id, const char *command,
               const char *input, const char *shown);
/* Carry out a request (exec, job_stdin) the gate has let through, as if
 * just received (api.c). */
void api_resume_approved (struct daemon *d, struct client *c,
                          const cJSON *req, const cJSON *id);
void api_op_answer (struct daemon *d, struct client *c, const cJSON *req,
                    const cJSON *id);
/* op "judge": the gate's verdict on a command for a fresh local sandbox
 * that reaches the host (`airlock run`), recorded in the audit log once
 * decided; "ask" (unrecorded) when it needs an answer the request did not
 * bring.  The rules and the configuration are kept between calls and
 * read again only when their files change. */
void api_op_judge (struct daemon *d, struct client *c, const cJSON *req,
                   const cJSON *id);
/* Unanswered asks past their deadline are denied. */
void api_approval_tick (struct daemon *d);
/* Asks of a client or session that went away are denied. */
void api_approval_client_gone (struct daemon *d, struct client *c);
void api_approval_session_gone (struct daemon *d, struct session *s);
bool api_approval_waiting (struct client *c);

/* Progress of a long request (an image pull, a SIF build): an event
 * {"id":…,"event":"progress","message":line} to the client at once.
 * ctx is a struct api_progress. */
struct api_progress
{
  struct client *c;
  const cJSON *id;
};
void api_progress (void *ctx, const char *line);

#endif
