/* SPDX-License-Identifier: MIT */
/* Sessions of the singularity backend: one Apptainer (or Singularity)
 * instance per session, in which airlock-supervisor runs as a long-lived
 * `exec instance://NAME`; commands are its jobs, as in a local or docker
 * session (see singularity_session.c and docs/singularity.md). */
#ifndef AIRLOCK_BACKENDS_SINGULARITY_SESSION_H
#define AIRLOCK_BACKENDS_SINGULARITY_SESSION_H

#include <stdbool.h>
#include <stdint.h>

#include "backend.h"

struct protected_dirs;

struct singularity_session_options {
  const char *executable;   /* NULL: apptainer, else singularity, from PATH */
  const char *image;        /* a .sif, a directory, or a docker:// etc. ref */
  bool network;             /* the host's network; false: only lo */
  const char *memory, *cpus; /* as configured (checked), or NULL */
  long long pids_limit;     /* 0: none */
  const char *const *binds; /* SRC[:DST[:ro|rw]], NULL-terminated or NULL */
  const char *const *env;   /* NAME=VALUE, NULL-terminated or NULL */
  bool mount_workdir;
  const char *workdir;      /* the caller's host working directory */
  bool persistent;          /* an overlay directory instead of a tmpfs */
  int start_timeout_s;      /* instance start's deadline */
  const char *state_dir;    /* for the overlay directory; NULL: none known */
  const char *session;
  const char *owner_id;     /* the daemon's runtime directory */
  const char *supervisor;   /* the static airlock-supervisor */
  const struct protected_dirs *protected;
  /* The SIF cache (backends/sif_cache.h), for references. */
  const char *cache_dir;
  uint64_t cache_max, disk_floor;
  long long build_timeout_s;
  void (*progress) (void *ctx, const char *line);
  void *progress_ctx;
};

/* Start the session's instance and its supervisor.  NULL with *err
 * (malloc'd, NULL on entry).  *cwd: where the session starts. */
struct backend_session *singularity_session_open (const struct singularity_session_options *o,
                                                  char **cwd, char **err);
const struct backend_ops *singularity_session_ops (void);

/* Why the instance reaches the host (NULL: it does not). */
const char *singularity_session_risk_reasons (struct backend_session *s);
/* What could not be applied, or NULL. */
const char *singularity_session_warning (struct backend_session *s);

#endif
