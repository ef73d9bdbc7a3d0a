/* SPDX-License-Identifier: MIT */
/* A client of the managed Modal gateway (a tool gateway that hosts Modal
 * sandboxes for the user: HTTPS + JSON, bearer token), over libcurl with
 * cJSON bodies.  The gateway is a private service with no published spec:
 * the protocol here is inferred from Hermes' client (remote-apis.md §3);
 * GET /v1/entitlement and the exec poll's ?offset= are the test double's
 * own (tests/doubles/README.md, "modal-gateway"), and a poll answer
 * without nextOffset is read as the whole output so far.
 *
 * One struct modal_gateway per thread that uses it (a curl easy handle is
 * not shared).  Every call retries connection errors, 502/503/504 and 429
 * (after its Retry-After) with a bounded backoff and jitter: each request
 * is safe to repeat (create carries an idempotency key, an exec start the
 * client's execId).  The token travels in the Authorization header only:
 * never in a URL, argv, a log line or error text. */
#ifndef AIRLOCK_BACKENDS_MODAL_GATEWAY_H
#define AIRLOCK_BACKENDS_MODAL_GATEWAY_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MODAL_GATEWAY_DEFAULT_URL "https://modal-gateway.nousresearch.com"
#define MODAL_GATEWAY_TOKEN_ENV "TOOL_GATEWAY_USER_TOKEN"

struct modal_gateway;

/* url: the gateway's origin (NULL or "": MODAL_GATEWAY_URL, else the
 * default), trailing slashes stripped; token copied.  NULL only when out
 * of memory. */
struct modal_gateway *modal_gateway_new (const char *url, const char *token);
void modal_gateway_free (struct modal_gateway *g);
const char *modal_gateway_origin (const struct modal_gateway *g);

struct modal_gateway_reply {
  long status;       /* the HTTP status of the last attempt */
  char *body;        /* NUL-terminated */
  size_t len;
  cJSON *json;       /* the body parsed, when it is JSON */
  unsigned attempts;
};

/* One request: method, path ("/v1/..."), a JSON body or NULL, an
 * idempotency key or NULL.  The whole call (every attempt and wait) ends
 * by deadline_ms (monotonic; 0: 60 s from now) or when *cancel turns
 * non-zero.  0 when an answer came (any status), -1 with *err when none
 * did. */
int modal_gateway_call (struct modal_gateway *g, const char *method, const char *path,
                        const cJSON *body, const char *idempotency_key, uint64_t deadline_ms,
                        const volatile int *cancel, struct modal_gateway_reply *r, char **err);
void modal_gateway_reply_free (struct modal_gateway_reply *r);

/* The answer's "code" ("" when none). */
const char *modal_gateway_reply_code (const struct modal_gateway_reply *r);
/* 404 sandbox_terminated or sandbox_not_found: the sandbox is gone. */
bool modal_gateway_sandbox_gone (const struct modal_gateway_reply *r);
/* A sentence for an error answer to what ("creating the sandbox"): 401
 * names TOOL_GATEWAY_USER_TOKEN (never its value), 403 says entitlement
 * or quota, 404 of the sandbox says it is gone and never re-created,
 * 429 and 5xx say what they are.  malloc'd. */
char *modal_gateway_error_text (const struct modal_gateway *g,
                                const struct modal_gateway_reply *r, const char *what);

/* GET /v1/entitlement: 1 entitled, 0 not, -1 with *err (no answer, an
 * error status, or an answer that does not say: all count as "not"). */
int modal_gateway_entitlement (struct modal_gateway *g, char **err);

struct modal_gateway_sandbox_spec {
  const char *image;        /* required */
  const char *cwd;          /* NULL: the gateway's default */
  unsigned cpu_milli;       /* 0: the gateway's default (each below too) */
  unsigned memory_mib;
  unsigned timeout_s;       /* the sandbox's lifetime */
  unsigned idle_timeout_s;
};

/* POST /v1/sandboxes with x-idempotency-key: key (a retried create gives
 * the same sandbox).  0 with *id (malloc'd), -1 with *err. */
int modal_gateway_create (struct modal_gateway *g, const struct modal_gateway_sandbox_spec *spec,
                          const char *key, char **id, char **err);

/* POST /v1/sandboxes/ID/terminate {"snapshotBeforeTerminate": snapshot};
 * a sandbox already gone counts as done.  0, or -1 with *err. */
int modal_gateway_terminate (struct modal_gateway *g, const char *sandbox_id, bool snapshot,
                             char **err);

/* An exec's state as an answer gave it. */
struct modal_gateway_exec {
  char status[16];      /* running, completed, failed, cancelled, timeout */
  bool terminal;
  int returncode;       /* when terminal */
  char *output;         /* this answer's output bytes (malloc'd, may hold NUL) */
  size_t output_len;
  bool has_next;        /* the answer had nextOffset (an offset read) */
  uint64_t next_offset;
  uint64_t output_length; /* outputLength: all the output's bytes (0: not said) */
};
void modal_gateway_exec_clear (struct modal_gateway_exec *x);

/* What an exec call came to: OK (*x filled), REFUSED (an error answer:
 * *err says it, gone when the sandbox is), UNREACHABLE (no answer: *err). */
enum modal_gateway_result { MG_UNREACHABLE = -1, MG_REFUSED = 0, MG_OK = 1 };

struct modal_gateway_exec_request {
  const char *exec_id;      /* the client's uuid: a repeat never runs twice */
  const char *command;      /* a shell string */
  const char *cwd;          /* NULL: none sent */
  uint64_t timeout_ms;      /* 0: none sent */
  const char *stdin_data;   /* NULL: none sent */
};

enum modal_gateway_result modal_gateway_exec_start (struct modal_gateway *g, const char *sandbox_id,
                                                    const struct modal_gateway_exec_request *rq,
                                                    uint64_t deadline_ms, const volatile int *cancel,
                                                    struct modal_gateway_exec *x, bool *gone,
                                                    char **err);
/* GET .../execs/EXEC?offset=N&limit=M (offset read: output from byte N,
 * 4 MiB at most; then x->next_offset < x->output_length says more is
 * there). */
enum modal_gateway_result modal_gateway_exec_poll (struct modal_gateway *g, const char *sandbox_id,
                                                   const char *exec_id, uint64_t offset,
                                                   uint64_t deadline_ms, const volatile int *cancel,
                                                   struct modal_gateway_exec *x, bool *gone,
                                                   char **err);
/* POST .../execs/EXEC/cancel. */
enum modal_gateway_result modal_gateway_exec_cancel (struct modal_gateway *g, const char *sandbox_id,
                                                     const char *exec_id, uint64_t deadline_ms,
                                                     const volatile int *cancel, bool *gone,
                                                     char **err);

/* The "output" string of a JSON object's text, decoded with its NUL
 * bytes (cJSON's strings end at the first): malloc'd, *len its length;
 * NULL when there is none.  Exposed for tests. */
char *modal_gateway_json_string_field (const char *json, size_t len, const char *key,
                                       size_t *out_len);

/* A random version-4 uuid into buf (37 bytes). */
void modal_gateway_uuid (char buf[37]);

#endif
