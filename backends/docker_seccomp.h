/* SPDX-License-Identifier: MIT */
/* airlock's seccomp baseline (helper/seccomp_table.h) as a Docker seccomp
 * profile, for HostConfig.SecurityOpt "seccomp=<json>". */
#ifndef AIRLOCK_BACKENDS_DOCKER_SECCOMP_H
#define AIRLOCK_BACKENDS_DOCKER_SECCOMP_H

#include <cjson/cJSON.h>

/* The profile: allow by default, deny the table's calls with their errno.
 * NULL only when out of memory. */
cJSON *docker_seccomp_profile (void);

#endif
