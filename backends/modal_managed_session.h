/* SPDX-License-Identifier: MIT */
/* Sessions of the modal backend in managed mode: commands in a Modal
 * sandbox hosted by a tool gateway (HTTPS + JSON, modal_gateway.h), see
 * modal_managed_session.c.
 *
 * What managed mode cannot do: the gateway returns one merged output, so
 * a command's stderr cannot be told from its stdout (all of it arrives as
 * stream 1), and that output is text (bytes that are not UTF-8 arrive as
 * U+FFFD); it takes a command's stdin only when the command starts, so a
 * command with a stdin pipe starts once its stdin is closed (4 MiB at
 * most). */
#ifndef AIRLOCK_BACKENDS_MODAL_MANAGED_SESSION_H
#define AIRLOCK_BACKENDS_MODAL_MANAGED_SESSION_H

#include "backend.h"

struct modal_managed_options {
  const char *gateway_url;  /* NULL: MODAL_GATEWAY_URL, else the default */
  const char *token;        /* NULL: TOOL_GATEWAY_USER_TOKEN */
  const char *image;        /* NULL: debian:12 */
  unsigned cpu_milli;       /* 0: the gateway's default (each below too) */
  unsigned memory_mib;
  unsigned timeout_s;       /* the sandbox's lifetime */
  unsigned idle_timeout_s;
  const char *cwd;          /* the first working directory; NULL: the
                               sandbox's (asked with `pwd`) */
  const char *session;      /* for messages */
  void (*progress) (void *ctx, const char *line);
  void *progress_ctx;
};

/* Entitlement (fail closed: not entitled, or the query failed, is an
 * error), then create the sandbox (one idempotency key per session: a
 * retried create never makes a second one).  NULL with *err (malloc'd);
 * *cwd: the first working directory. */
struct backend_session *modal_managed_open (const struct modal_managed_options *o, char **cwd,
                                            char **err);
const struct backend_ops *modal_managed_ops (void);

/* 1 entitled, 0 not, -1 with *err (the query failed: counts as not). */
int modal_gateway_entitled (const char *gateway_url, const char *token, char **err);

#endif
