/* SPDX-License-Identifier: MIT */
/* The allowlist of a configuration, made ready for a sandbox: the policy
 * airlock-egress reads, checked, and the resolv.conf the sandbox mounts. */
#define _GNU_SOURCE
#include "egress_prepare.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "egress_network.h"
#include "egress_client.h"
#include "installed_file.h"
#include "local.h"
#include "runtime_dir.h"
#include "xprintf.h"

static char *
egress_policy_json (const struct airlock_config *c)
{
  cJSON *o = cJSON_CreateObject ();
  static const char *const lists[][2] = { { "network.allow", "allow" },
                                          { "network.allow_ranges", "allow_ranges" },
                                          { "network.upstream_ranges", "upstream_ranges" } };
  for (size_t i = 0; i < sizeof lists / sizeof *lists; i++)
    {
      cJSON *a = cJSON_AddArrayToObject (o, lists[i][1]);
      for (const char *const *v = config_list (c, lists[i][0]); v && *v; v++)
        cJSON_AddItemToArray (a, cJSON_CreateString (*v));
    }
  cJSON *map = cJSON_AddObjectToObject (o, "resolve");
  for (const char *const *kv = config_list (c, "network.resolve"); kv && *kv; kv++)
    {
      const char *eq = strchr (*kv, '=');
      if (!eq)
        continue;
      char *name = strndup (*kv, (size_t) (eq - *kv));
      cJSON_AddStringToObject (map, name, eq + 1);
      free (name);
    }
  char *text = cJSON_PrintUnformatted (o);
  cJSON_Delete (o);
  if (!text)
    abort ();
  return text;
}

int
egress_prepare (const struct airlock_config *c, struct local_run *r,
                char hash[17], char **err)
{
  if (installed_file_check (egress_path (), X_OK, "AIRLOCK_EGRESS", err) < 0)
    return -1;
  char *policy = egress_policy_json (c);
  if (egress_check (policy, hash, err) < 0)
    {
      free (policy);
      return -1;
    }
  char dir[4096];
  if (runtime_dir (dir, sizeof dir, err) < 0)
    {
      free (policy);
      return -1;
    }
  /* Written anew each time (a rename, so a sandbox starting meanwhile
   * sees the old file or the new one, whole). */
  char *path = xprintf ("%s/resolv.conf", dir);
  char *tmp = xprintf ("%s/.resolv.conf.%d", dir, (int) getpid ());
  int fd = open (tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
  static const char text[] = "# airlock: the network allowlist's resolver\n"
                             "nameserver " EGRESS_RESOLVER_TEXT "\n";
  bool ok = fd >= 0 && write (fd, text, sizeof text - 1) == (ssize_t) (sizeof text - 1);
  if (fd >= 0)
    ok = close (fd) == 0 && ok;
  if (!ok || rename (tmp, path) < 0)
    {
      *err = xprintf ("network allowlist: cannot write %s: %s", path, strerror (errno));
      unlink (tmp);
      free (tmp), free (path), free (policy);
      return -1;
    }
  free (tmp);
  r->egress_policy = policy;
  r->egress_resolv_conf = path;
  return 0;
}

void
egress_prepared_free (struct local_run *r)
{
  free (r->egress_policy);
  free (r->egress_resolv_conf);
  r->egress_policy = r->egress_resolv_conf = NULL;
}
