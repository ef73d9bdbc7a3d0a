/* SPDX-License-Identifier: MIT */
/* A Daytona sandbox's life: found by its labels or created, started and
 * waited for, and stopped or deleted at the end (Daytona's REST API,
 * through daytona_http.h).  Used by daytona_session.c at open and close,
 * on the daemon's thread. */
#ifndef AIRLOCK_BACKENDS_DAYTONA_SANDBOX_H
#define AIRLOCK_BACKENDS_DAYTONA_SANDBOX_H

#include <stdbool.h>
#include <stdint.h>

#include "daytona_http.h"

struct daytona_sandbox_options {
  const char *name;          /* the sandbox's name: unique per owner and
                                session ("airlock-<8 hex>-<session>") */
  const char *const *labels; /* "key=value", NULL-ended: the ones airlock
                                finds it again by, then daytona.labels */
  const char *image;         /* an image: created from buildInfo
                                "FROM <image>\n"; or NULL */
  const char *snapshot;      /* a snapshot's name or id; or NULL (both
                                NULL: the organization's default) */
  const char *target;        /* region, or NULL */
  int cpus;                  /* 0: the server's default; image only */
  int memory_gb, disk_gb;    /* 0: the server's default; image only */
  const char *const *env;    /* "NAME=value", NULL-ended: the sandbox's
                                environment (daytona.env, forward_env) */
  int auto_stop_min;         /* 0: never */
  int auto_archive_min;      /* 0: the server's default */
  int start_timeout_s;       /* waiting for "started" */
  void (*progress) (void *ctx, const char *line);
  void *progress_ctx;
};

struct daytona_sandbox {
  char *id;
  char *name;
  char *state;               /* as last seen */
  char *toolbox_url;         /* toolboxProxyUrl + "/" + id: the base of
                                every toolbox call */
  bool reused;               /* found by label, not created */
};

/* The sandbox of these options: one with the same labels and name is
 * reused (a stopped one started, an archived one restored, each step
 * told to progress), else one is created; then waited for until
 * "started" (error and build_failed end it with the server's reason).
 * 0 with *sb filled, or -1 with *err (malloc'd). */
int daytona_sandbox_acquire (struct daytona_http *h,
                             const struct daytona_sandbox_options *o,
                             struct daytona_sandbox *sb, char **err);

/* Its state now ("started", "stopped", ...), or NULL with *err; a
 * sandbox that no longer exists gives NULL with *gone true. */
char *daytona_sandbox_state (struct daytona_http *h,
                             const struct daytona_sandbox *sb, bool *gone,
                             char **err);

/* Start a stopped (or restore an archived) sandbox and wait for it. */
int daytona_sandbox_start (struct daytona_http *h, struct daytona_sandbox *sb,
                           int timeout_s, char **err);

/* The end of a session: deleted, or only stopped when keep (so a later
 * open reuses it).  Waits at most timeout_s; a sandbox already gone is
 * not an error. */
int daytona_sandbox_release (struct daytona_http *h, struct daytona_sandbox *sb,
                             bool keep, int timeout_s, char **err);

void daytona_sandbox_clear (struct daytona_sandbox *sb);

#endif
