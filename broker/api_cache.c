/* SPDX-License-Identifier: MIT */
/* op "cache": the singularity backend's SIF cache (backends/sif_cache.h):
 * ls, prune, fetch.  Configured like an open (the files and the client's
 * AIRLOCK_* variables), so `airlock cache` sees the cache its sessions
 * use.  A fetch blocks the daemon as a session's open does, with
 * progress events. */
#include <stdlib.h>
#include <string.h>

#include "api_internal.h"
#include "config.h"
#include "sif_options.h"


static void
cache_ls (struct client *c, const cJSON *id, const struct sif_options *so)
{
  struct sif_cache_entry *e = NULL;
  size_t n = 0;
  uint64_t total = 0;
  char *err = NULL;
  if (sif_cache_list (&so->o, &e, &n, &total, &err) < 0)
    {
      send_error (c, id, "cache_error", "%s", err ? err : "out of memory");
      free (err);
      return;
    }
  cJSON *r = reply (id, true);
  cJSON_AddStringToObject (r, "cache_dir", so->o.cache_dir);
  cJSON_AddNumberToObject (r, "total", (double) total);
  cJSON_AddNumberToObject (r, "cache_max", (double) so->o.cache_max);
  cJSON_AddNumberToObject (r, "disk_floor", (double) so->o.disk_floor);
  cJSON *list = cJSON_AddArrayToObject (r, "entries");
  for (size_t i = 0; i < n; i++)
    {
      cJSON *x = cJSON_CreateObject ();
      if (e[i].ref)
        cJSON_AddStringToObject (x, "image", e[i].ref);
      else
        cJSON_AddNullToObject (x, "image");
      cJSON_AddStringToObject (x, "path", e[i].path);
      cJSON_AddNumberToObject (x, "size", (double) e[i].size);
      cJSON_AddStringToObject (x, "state", e[i].state);
      cJSON_AddBoolToObject (x, "in_use", e[i].in_use);
      cJSON_AddNumberToObject (x, "built_at", e[i].built_at);
      cJSON_AddNumberToObject (x, "last_used", e[i].last_used);
      cJSON_AddItemToArray (list, x);
    }
  sif_cache_entries_free (e, n);
  client_send (c, r);
}

void
api_op_cache (struct daemon *d, struct client *c, const cJSON *req, const cJSON *id)
{
  (void) d;
  bool bad = false;
  const char *action = want_string (c, req, id, "action", true, &bad);
  const char *image = bad ? NULL : want_string (c, req, id, "image", false, &bad);
  if (bad)
    return;
  const cJSON *all = cJSON_GetObjectItemCaseSensitive (req, "all");
  const cJSON *cenv = cJSON_GetObjectItemCaseSensitive (req, "client_env");
  bool fetch = !strcmp (action, "fetch"), prune = !strcmp (action, "prune");
  if (!fetch && !prune && strcmp (action, "ls"))
    return send_error (c, id, "bad_request", "field \"action\" must be one of \"ls\", "
                       "\"prune\", \"fetch\"");
  if (fetch != (image != NULL))
    return send_error (c, id, fetch ? "missing_field" : "bad_request",
                       fetch ? "field \"image\" is required for fetch"
                             : "field \"image\" is for fetch only");
  if (all && !cJSON_IsBool (all))
    return send_error (c, id, "wrong_type", "field \"all\" must be true or false");
  if (all && !prune)
    return send_error (c, id, "bad_request", "field \"all\" is for prune only");
  if (cenv && !cJSON_IsObject (cenv))
    return send_error (c, id, "wrong_type", "field \"client_env\" must be an object");

  char *err = NULL;
  char **envp = cenv ? config_env_from_json (cenv, &err) : NULL;
  static const char *const no_env[] = { NULL };
  struct airlock_config *cfg = NULL;
  if (!err)
    cfg = config_load_with (cenv ? (const char *const *) envp : no_env, NULL, NULL, &err);
  config_env_free (envp);
  struct sif_options so;
  if (!cfg)
    {
      send_error (c, id, "config_error", "%s", err ? err : "bad configuration");
      free (err);
      return;
    }
  /* a bad reference is an error before a missing executable; a local
   * image needs none */
  int is_ref = fetch ? sif_image_is_ref (image, &err) : 0;
  if (is_ref < 0 || sif_options_init (&so, cfg, is_ref == 1, &err) < 0)
    {
      send_error (c, id, "cache_error", "%s", err ? err : "out of memory");
      free (err);
      config_free (cfg);
      return;
    }
  struct api_progress p = { c, id };
  if (!strcmp (action, "ls"))
    cache_ls (c, id, &so);
  else if (prune)
    {
      size_t removed = 0;
      uint64_t freed = 0;
      if (sif_cache_prune (&so.o, cJSON_IsTrue (all), api_progress, &p, &removed,
                           &freed, &err) < 0)
        send_error (c, id, "cache_error", "%s", err ? err : "out of memory");
      else
        {
          cJSON *r = reply (id, true);
          cJSON_AddNumberToObject (r, "removed", (double) removed);
          cJSON_AddNumberToObject (r, "freed", (double) freed);
          client_send (c, r);
        }
    }
  else
    {
      char *path = NULL;
      bool built = false;
      if (sif_cache_fetch (&so.o, image, api_progress, &p, &path, &built, &err) < 0)
        send_error (c, id, "cache_error", "%s", err ? err : "out of memory");
      else
        {
          cJSON *r = reply (id, true);
          cJSON_AddStringToObject (r, "image", image);
          cJSON_AddStringToObject (r, "path", path);
          cJSON_AddBoolToObject (r, "built", built);
          client_send (c, r);
        }
      free (path);
    }
  free (err);
  sif_options_free (&so);
  config_free (cfg);
}
