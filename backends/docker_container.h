/* SPDX-License-Identifier: MIT */
/* The container of a docker session: what it is created as (hardening,
 * limits, mounts, labels), whether an existing one can be reused, and
 * its removal.  Internal to the docker backend. */
#ifndef AIRLOCK_BACKENDS_DOCKER_CONTAINER_H
#define AIRLOCK_BACKENDS_DOCKER_CONTAINER_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "docker_engine.h"
#include "docker_session.h"

/* Where the supervisor (the container's pid 1) is copied in the
 * container: an anonymous volume of its own, so that a read-only root
 * filesystem does not stop the copy. */
#define DOCKER_LEADER_DIR "/.airlock"
#define DOCKER_LEADER_PATH DOCKER_LEADER_DIR "/airlock-supervisor"

struct docker_container {
  struct docker_engine *eng;
  char *name;       /* airlock-UID-OWNERHASH-SESSION */
  char *id;
  char *image;
  char *control_dir; /* where the broker listens for the supervisor (on
                        this host; SUP_CONTAINER_DIR in the container) */
  bool pull;
  void (*progress) (void *ctx, const char *line);
  void *progress_ctx;
  long long progress_at_ms; /* the last throttled line */
  cJSON *body;      /* the create request, labels and config hash included */
  uint8_t *tar;     /* the supervisor, as the archive PUT into it */
  size_t tar_len;
  bool host_access;
  char *reasons;    /* why it reaches the host, or NULL */
  char *warning;    /* for the person opening it (root inside), or NULL */
  bool reused;
};

/* Everything short of the container itself: the engine answers, the
 * mounts are judged, the create request is built.  -1 with *err. */
int docker_container_plan (struct docker_container *c,
                           const struct docker_session_options *o, char **err);
/* Reuse the session's existing container when its config hash matches,
 * else (re)create and start it.  -1 with *err; nothing half-made is left. */
int docker_container_up (struct docker_container *c, char **err);
/* Create and start a new one, whatever exists (after it vanished). */
int docker_container_create (struct docker_container *c, char **err);
/* The directory of a session's supervisor socket (control_dir), with
 * what is in it, once its container is gone. */
void docker_control_dir_remove (const char *owner_id, const char *session);
/* Remove it (and its anonymous volumes), whatever state it is in. */
void docker_container_remove (struct docker_container *c);
void docker_container_clear (struct docker_container *c);

/* The labels. */
#define DOCKER_LABEL_SESSION "airlock.session"
#define DOCKER_LABEL_USER "airlock.user"
#define DOCKER_LABEL_OWNER "airlock.owner"
#define DOCKER_LABEL_HASH "airlock.config-hash"

#endif
