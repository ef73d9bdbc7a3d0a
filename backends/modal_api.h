/* SPDX-License-Identifier: MIT */
/* Modal's control plane (service modal.client.ModalClient, over gRPC:
 * grpc_call.h, messages: backends/modal.proto) for one sandbox's life:
 * credentials to an auth token (refreshed before its exp), the app and
 * the image (a build's log lines told to progress), the sandbox created
 * and waited for until it has a task, the task's command router (its URL
 * and JWT, refreshed), and the end (terminate).
 *
 * Modal does not support third-party gRPC clients: this follows the
 * public schema at modal-client commit 69519aef (JS SDK 0.9-0.11), and a
 * change there can break it (docs/modal.md).
 *
 * One struct modal_api per thread that uses it (its CURL handle is not
 * shared).  Every call retries UNAVAILABLE, DEADLINE_EXCEEDED, INTERNAL,
 * UNKNOWN and CANCELLED with the same idempotency key (grpc_unary_retry),
 * within its deadline; UNAUTHENTICATED once refreshes the auth token and
 * tries again.  Tokens travel in metadata only: never in argv, a log
 * line or error text. */
#ifndef AIRLOCK_BACKENDS_MODAL_API_H
#define AIRLOCK_BACKENDS_MODAL_API_H

#include <stdbool.h>
#include <stdint.h>

struct modal_api_options {
  const char *server_url;   /* MODAL_SERVER_URL, or NULL:
                               https://api.modal.com:443 */
  const char *token_id;     /* MODAL_TOKEN_ID or the profile's */
  const char *token_secret;
  const char *source;       /* where they came from, for errors:
                               "MODAL_TOKEN_ID/MODAL_TOKEN_SECRET" or
                               "~/.modal.toml (profile default)" */
  const char *environment;  /* MODAL_ENVIRONMENT, or NULL */
  const char *ca_file;      /* for https, or NULL: the system's */
  const volatile int *cancel; /* non-zero ends calls early, or NULL */
};

struct modal_api;

/* Strings copied.  NULL only when out of memory. */
struct modal_api *modal_api_new (const struct modal_api_options *o);
void modal_api_free (struct modal_api *a);

struct modal_sandbox_spec {
  const char *app_name;       /* modal.app ("airlock") */
  const char *image;          /* a registry image ("FROM image"), or an
                                 image id ("im-...") used as it is */
  const char *name;           /* the sandbox's name (unique per app), or
                                 NULL */
  unsigned timeout_secs;      /* its maximum lifetime (modal.timeout) */
  unsigned idle_timeout_secs; /* 0: none */
  unsigned milli_cpu;         /* 0: Modal's default */
  unsigned memory_mb;         /* 0: Modal's default */
  bool block_network;         /* network_access BLOCKED, else OPEN */
  const char *const *allowed_cidrs; /* NULL-ended: ALLOWLIST instead */
  const char *const *env;     /* "NAME=value", NULL-ended: the sandbox's
                                 environment (environment_variables) */
  const char *workdir;        /* or NULL */
  unsigned start_timeout_s;   /* building and scheduling (0: 600) */
  /* The sandbox's lease on its daemon: its entrypoint ends it (and
   * everything in it) once MODAL_LEASE_FILE is this many seconds old;
   * the session touches the file well before (0: no lease, the entrypoint
   * sleeps until the sandbox's timeout). */
  unsigned lease_secs;
  void (*progress) (void *ctx, const char *line);
  void *progress_ctx;
};

struct modal_sandbox {
  char *app_id;
  char *image_id;
  char *sandbox_id;
  char *task_id;
};

/* App (get or create), image (get or create; a build is joined until it
 * ends, its log lines to progress; a failed build is an error with the
 * tail of its log), sandbox (entrypoint `sleep infinity`), then its task
 * id (polled every 500 ms until set; a sandbox that ended first is an
 * error with its result).  0 with *sb filled, or -1 with *err (malloc'd):
 * UNAUTHENTICATED names the credential source, PERMISSION_DENIED,
 * RESOURCE_EXHAUSTED (quota), NOT_FOUND say what they mean; a sandbox
 * created before a later step failed is terminated. */
int modal_sandbox_start (struct modal_api *a, const struct modal_sandbox_spec *s,
                         struct modal_sandbox *sb, char **err);

/* The task's command router: its URL (https://...) and a JWT for
 * "authorization: Bearer"; *exp_unix from the JWT's exp claim (0: none
 * given).  0, or -1 with *err; NOT_FOUND sets *gone. */
int modal_router_access (struct modal_api *a, const struct modal_sandbox *sb, char **url,
                         char **jwt, long long *exp_unix, bool *gone, char **err);

/* Still running?  1 running, 0 ended (*why: its result, malloc'd), -1
 * with *err (no answer).  A sandbox Modal no longer knows is ended. */
int modal_sandbox_alive (struct modal_api *a, const struct modal_sandbox *sb, char **why,
                         char **err);

/* Terminate (gone already is not an error).  0, or -1 with *err. */
int modal_sandbox_terminate (struct modal_api *a, const struct modal_sandbox *sb, char **err);

void modal_sandbox_clear (struct modal_sandbox *sb);

/* The file whose age the lease watches, in the sandbox. */
#define MODAL_LEASE_FILE "/tmp/.airlock-lease"

/* A JWT's exp claim (seconds since the epoch), or 0 when it has none or
 * is not a JWT: the token's payload is only read, never trusted. */
long long modal_jwt_exp (const char *jwt);

/* The error text of a failed call: "CODE: message" with what it was
 * doing, and for UNAUTHENTICATED the credential source.  malloc'd. */
struct grpc_result;
char *modal_error_text (const struct modal_api *a, const struct grpc_result *r,
                        const char *what);

#endif
