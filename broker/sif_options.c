/* SPDX-License-Identifier: MIT */
#include <stdlib.h>
#include <string.h>

#include "sif_options.h"
#include "xprintf.h"

int
sif_options_init (struct sif_options *so, const struct airlock_config *cfg,
                  bool need_exe, char **err)
{
  memset (so, 0, sizeof *so);
  const char *dir = config_string (cfg, "singularity.cache_dir");
  so->cache_dir = dir ? strdup (dir) : sif_cache_default_dir (err);
  if (!so->cache_dir)
    return -1;
  if (need_exe
      && !(so->exe = sif_find_executable (config_string (cfg, "singularity.executable"),
                                          NULL, &so->o.kind, err)))
    {
      sif_options_free (so);
      return -1;
    }
  so->o.exe = so->exe;
  so->o.cache_dir = so->cache_dir;
  so->o.cache_max = config_size (cfg, "singularity.cache_max");
  so->o.disk_floor = config_size (cfg, "singularity.disk_floor");
  so->o.build_timeout = (int) config_int (cfg, "singularity.build_timeout");
  return 0;
}

void
sif_options_free (struct sif_options *so)
{
  free (so->exe);
  free (so->cache_dir);
  memset (so, 0, sizeof *so);
}
