/* SPDX-License-Identifier: MIT */
/* Sessions of the docker backend: one hardened container of the local
 * Docker Engine per session, whose pid 1 is airlock-supervisor; commands
 * are its jobs, as in a local session (see docker_session.c). */
#ifndef AIRLOCK_BACKENDS_DOCKER_SESSION_H
#define AIRLOCK_BACKENDS_DOCKER_SESSION_H

#include <stdbool.h>
#include <stdint.h>

#include "backend.h"

struct protected_dirs;

struct docker_session_options {
  const char *socket;       /* the Engine's unix socket */
  const char *image;
  bool pull;                /* pull a missing image (progress on stderr,
                               and to progress() when set) */
  /* Progress of a long step (an image pull), one line at a time. */
  void (*progress) (void *ctx, const char *line);
  void *progress_ctx;
  bool network;             /* false: network mode none */
  uint64_t memory;          /* bytes; 0: no limit */
  int64_t nano_cpus;        /* 0: no limit */
  long long pids_limit;
  const char *user;         /* NULL: the caller's uid:gid */
  bool read_only_rootfs;    /* the image's files read-only (tmpfs stay
                               writable) */
  const char *const *cap_add;   /* NULL-terminated or NULL */
  const char *const *volumes;   /* SOURCE:DEST[:ro|:rw], NULL-terminated */
  const char *const *env;       /* NAME=VALUE, NULL-terminated */
  const char *tmpfs_size;       /* size of the /tmp tmpfs (e.g. "512m") */
  bool mount_workdir;       /* bind workdir at the same path, and start there */
  const char *workdir;      /* the caller's host working directory */
  bool admin_allows_socket; /* from the administrator's configuration only */
  const char *session;      /* labels and the container's name */
  const char *owner_id;     /* the daemon's runtime dir: whose it is */
  const char *supervisor;   /* the static airlock-supervisor to copy in */
  /* airlock's own directories, masked wherever a host path mounted shows
   * them (policy/protected_paths.h); NULL: none. */
  const struct protected_dirs *protected;
};

/* Create (or reuse) the session's container.  NULL with *err (malloc'd;
 * *err must be NULL on entry).  *cwd: where the session starts. */
struct backend_session *docker_session_open (const struct docker_session_options *o,
                                             char **cwd, char **err);
const struct backend_ops *docker_session_ops (void);

/* Why the container reaches the host (NULL: it does not). */
const char *docker_session_risk_reasons (struct backend_session *s);
/* What the person opening the session should know (the container runs
 * as root), or NULL. */
const char *docker_session_warning (struct backend_session *s);

/* The orphan reaper: containers of this user's sessions that no longer
 * exist are removed, stopped ones at once, running ones once older than
 * idle_timeout_s.  A container is an orphan when its owner (label
 * airlock.owner) is owner_id and is_open says its session is not open, or
 * when its owner is another daemon that owner_alive says is gone.
 * Returns how many were removed, or -1 with *err. */
struct docker_reap_request {
  const char *socket;
  const char *owner_id;
  long long idle_timeout_s;
  bool (*is_open) (void *ctx, const char *session);
  bool (*owner_alive) (void *ctx, const char *owner_id);
  void *ctx;
};
int docker_reap_orphans (const struct docker_reap_request *rq, char **err);

#endif
