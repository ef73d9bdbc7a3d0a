/* SPDX-License-Identifier: MIT */
/* /etc/airlock/helper.conf: what the administrator allows the helper to
 * grant.  Root-owned, refused when group- or other-writable; a missing
 * file means the safe defaults below. */
#ifndef AIRLOCK_HELPER_CONF_H
#define AIRLOCK_HELPER_CONF_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#ifndef HELPER_CONF
#define HELPER_CONF "/etc/airlock/helper.conf"
#endif

struct helper_conf {
  bool group_set;          /* group = NAME|GID: only its members may run us */
  gid_t group;
  uint64_t memory_default; /* memory = bytes when the request names none */
  uint64_t memory_max;     /* max_memory */
  uint32_t pids_default;   /* pids */
  uint32_t pids_max;       /* max_pids */
  uint32_t time_max;       /* max_time, seconds; 0 = no limit */
  uint32_t nofile;         /* nofile: RLIMIT_NOFILE in the sandbox */
  uint64_t fsize;          /* max_file_size: RLIMIT_FSIZE in the sandbox */
  bool allow_host_network; /* allow_host_network = yes|no */
};

/* Load HELPER_CONF (or the defaults).  Dies with the file, line and reason
 * on any problem. */
void helper_conf_load (struct helper_conf *conf);

#endif
