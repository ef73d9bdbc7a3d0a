/* SPDX-License-Identifier: MIT */
/* The SIF cache's options (backends/sif_cache.h) from a configuration:
 * for the singularity backend's open and the daemon's `cache` op. */
#ifndef AIRLOCK_BROKER_SIF_OPTIONS_H
#define AIRLOCK_BROKER_SIF_OPTIONS_H

#include <stdbool.h>

#include "config.h"
#include "sif_cache.h"

struct sif_options
{
  struct sif_cache_options o; /* points into the fields below */
  char *exe, *cache_dir;
};

/* singularity.cache_dir (or its default: /scratch/$USER/airlock/sif, else
 * the state directory's sif), cache_max, disk_floor, build_timeout; with
 * need_exe, the executable too (singularity.executable, else apptainer,
 * else singularity, in the daemon's PATH).  The build's environment is the
 * daemon's minus APPTAINER_* and SINGULARITY_* (o.env NULL).  0, or -1 with
 * *err (malloc'd). */
int sif_options_init (struct sif_options *so, const struct airlock_config *cfg,
                      bool need_exe, char **err);
void sif_options_free (struct sif_options *so);

#endif
