/* SPDX-License-Identifier: MIT */
/* The docker backend's orphan reaper (see docker_session.h).
 *
 * A daemon that dies leaves its containers behind (their commands die
 * with it: the container's supervisor kills every job's tree when the
 * daemon's end of its socket closes).  Such a container is kept a while, running, so
 * that reopening the session soon reuses it (restarted first, so that
 * nothing of its earlier life runs on: docker_container_up); once
 * stopped, or older than the idle lifetime, it is removed.  The original never removed running
 * ones, so they lived for ever. */
#define _GNU_SOURCE
#include <curl/curl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "docker_container.h"
#include "docker_engine.h"
#include "docker_session.h"

static const char *
label (const cJSON *labels, const char *name)
{
  const cJSON *v = cJSON_GetObjectItemCaseSensitive (labels, name);
  return cJSON_IsString (v) ? v->valuestring : NULL;
}

/* The job leader's volumes (docker_container.c) of this user's containers
 * that were removed without their volumes: nothing uses a dangling one. */
static void
reap_volumes (struct docker_engine *e)
{
  char filter[128];
  snprintf (filter, sizeof filter, "{\"dangling\":[\"true\"],\"label\":[\""
            DOCKER_LABEL_USER "=%u\"]}", (unsigned) getuid ());
  char *esc = curl_easy_escape (NULL, filter, 0);
  char *path = NULL, *err = NULL;
  if (!esc || asprintf (&path, "/volumes?filters=%s", esc) < 0)
    path = NULL;
  curl_free (esc);
  struct docker_response r;
  if (path && docker_call (e, "GET", path, NULL, &r, &err) == 0)
    {
      const cJSON *v;
      cJSON_ArrayForEach (v, cJSON_GetObjectItemCaseSensitive (r.json, "Volumes"))
        {
          const cJSON *name = cJSON_GetObjectItemCaseSensitive (v, "Name");
          char *del = cJSON_IsString (name) ? curl_easy_escape (NULL, name->valuestring, 0) : NULL;
          char *dpath = NULL;
          struct docker_response d;
          if (del && asprintf (&dpath, "/volumes/%s", del) >= 0
              && docker_call (e, "DELETE", dpath, NULL, &d, &err) == 0)
            docker_response_free (&d); /* 409: in use after all; kept */
          free (err);
          err = NULL;
          curl_free (del);
          free (dpath);
        }
      docker_response_free (&r);
    }
  free (err);
  free (path);
}

int
docker_reap_orphans (const struct docker_reap_request *rq, char **err)
{
  struct docker_engine *e = docker_engine_new (rq->socket);
  if (!e)
    return -1;
  char filter[128];
  snprintf (filter, sizeof filter, "{\"label\":[\"" DOCKER_LABEL_USER "=%u\"]}",
            (unsigned) getuid ());
  char *esc = curl_easy_escape (NULL, filter, 0);
  char *path = NULL;
  if (!esc || asprintf (&path, "/containers/json?all=true&filters=%s", esc) < 0)
    path = NULL;
  curl_free (esc);
  struct docker_response r;
  int removed = -1;
  if (path && docker_call (e, "GET", path, NULL, &r, err) == 0)
    {
      removed = 0;
      long long now = (long long) time (NULL);
      const cJSON *c;
      const cJSON *list = r.status == 200 ? r.json : NULL;
      cJSON_ArrayForEach (c, list)
        {
          const cJSON *labels = cJSON_GetObjectItemCaseSensitive (c, "Labels");
          const cJSON *id = cJSON_GetObjectItemCaseSensitive (c, "Id");
          const cJSON *state = cJSON_GetObjectItemCaseSensitive (c, "State");
          const cJSON *created = cJSON_GetObjectItemCaseSensitive (c, "Created");
          const char *owner = label (labels, DOCKER_LABEL_OWNER);
          const char *session = label (labels, DOCKER_LABEL_SESSION);
          if (!cJSON_IsString (id) || !owner || !session)
            continue;
          bool orphan = !strcmp (owner, rq->owner_id)
                            ? !rq->is_open (rq->ctx, session)
                            : !rq->owner_alive (rq->ctx, owner);
          bool running = cJSON_IsString (state) && !strcmp (state->valuestring, "running");
          bool old = cJSON_IsNumber (created)
                     && now - (long long) created->valuedouble > rq->idle_timeout_s;
          if (!orphan || (running && !old))
            continue;
          struct docker_container victim = { .eng = e, .id = strdup (id->valuestring) };
          fprintf (stderr, "airlock: removing orphaned container of session %s "
                   "(owner %s, %s)\n", session, owner, running ? "idle too long" : "stopped");
          docker_container_remove (&victim); /* frees victim.id */
          if (!strcmp (owner, rq->owner_id))
            docker_control_dir_remove (owner, session);
          removed++;
        }
      if (r.status != 200)
        {
          *err = strdup (docker_response_message (&r));
          removed = -1;
        }
      docker_response_free (&r);
    }
  if (removed >= 0)
    reap_volumes (e);
  free (path);
  docker_engine_free (e);
  return removed;
}
