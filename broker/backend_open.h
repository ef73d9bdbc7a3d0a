/* SPDX-License-Identifier: MIT */
/* From configuration to a running backend session: the one place that
 * knows every backend's options (api.c's open and the CLI go through it). */
#ifndef AIRLOCK_BROKER_BACKEND_OPEN_H
#define AIRLOCK_BROKER_BACKEND_OPEN_H

#include "backend.h"
#include "config.h"

struct backend_open_request
{
  const struct airlock_config *cfg;
  const char *backend;  /* "local", "docker", ... */
  const char *session;  /* the session's name (labels, logs) */
  const char *workdir;  /* absolute, symlinks resolved: the caller's
                           working directory on this host */
  const char *owner_id; /* who owns the sandbox: the daemon's runtime
                           directory, so sandboxes of a dead daemon can be
                           recognised as orphans */
  /* Progress of a slow start (pulling an image), a line at a time; NULL:
   * none wanted. */
  void (*progress) (void *ctx, const char *line);
  void *progress_ctx;
};

struct backend_opened
{
  const struct backend_ops *ops;
  struct backend_session *bs;
  char *cwd; /* malloc'd: the session's first working directory, as the
                sandbox sees it */
};

#define BACKEND_NOT_IMPLEMENTED (-2)

/* 0, or -1 with *err (malloc'd; names what failed and how to fix it);
 * BACKEND_NOT_IMPLEMENTED for a backend this version does not have (or
 * a modal configuration that resolved, to a way not built yet). */
int backend_open (const struct backend_open_request *rq,
                  struct backend_opened *out, char **err);

/* Sandboxes left behind by daemons that died (docker containers): removed
 * once stopped or idle too long.  The daemon calls it at start and every
 * minute; is_open tells whether one of its sessions is open. */
void backend_reap_orphans (const struct airlock_config *cfg, const char *owner_id,
                           bool (*is_open) (void *ctx, const char *session),
                           void *ctx);

/* Why an open session reaches the host (for the open reply); NULL when it
 * does not, or its backend does not say. */
const char *backend_reach_reasons (const struct backend_ops *ops,
                                   struct backend_session *bs);

/* What the person opening the session should be warned of (the open
 * reply's "warnings"); NULL: nothing. */
const char *backend_warning (const struct backend_ops *ops,
                             struct backend_session *bs);

#endif
