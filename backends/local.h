/* SPDX-License-Identifier: MIT */
/* The local backend: one command in a fresh namespace sandbox on this
 * host, built by airlock-helper.  The broker never holds privilege; it
 * only starts the helper and speaks the wire protocol with it. */
#ifndef AIRLOCK_BACKENDS_LOCAL_H
#define AIRLOCK_BACKENDS_LOCAL_H

#include <stdbool.h>
#include <stdint.h>

#include "protocol.h"

struct local_run {
  const char *helper;  /* path of airlock-helper */
  const char *workdir; /* absolute, canonical */
  const char *rootfs;  /* NULL: the host's system directories */
  const char **argv;   /* NULL-terminated */
  const char **envp;   /* NULL-terminated, the sandbox's whole environment */
  struct al_bind binds_ro[AL_MAX_BINDS];
  uint32_t n_binds_ro;
  struct al_bind binds_rw[AL_MAX_BINDS];
  uint32_t n_binds_rw;
  uint32_t network;    /* enum al_network */
  /* network ALLOWLIST (egress_prepare): airlock-egress's policy and the
   * resolv.conf the sandbox gets, naming airlock-egress's resolver. */
  char *egress_policy;
  char *egress_resolv_conf;
  uint32_t timeout_sec;
  uint64_t memory_max; /* 0: helper.conf's default */
  uint32_t pids_max;   /* 0: helper.conf's default */
  bool as_init;        /* the command is the sandbox's pid 1 (a supervisor) */
  const char *masks[AL_MAX_MASKS]; /* sandbox paths hidden after the binds
                                      (airlock's own directories) */
  uint32_t n_masks;
  bool verbose;        /* say on stderr which limits applied */
};

/* What the helper's STARTED report says, as words for results and -v:
 * its privilege mode (enum al_privilege: "unprivileged", "setuid",
 * "file-capabilities", "root") and how pids and memory are bounded (enum
 * al_limits).  "unknown" for a value outside the enums. */
const char *local_privilege_name (uint32_t privilege);
const char *local_limits_name (uint32_t limits);

/* Exit codes beyond the command's own. */
#define AIRLOCK_EXIT_TIMEOUT 124
#define AIRLOCK_EXIT_SETUP 125

/* Run the command with the caller's stdin/stdout/stderr.  Returns the
 * command's exit code, 128+N when it died of signal N, 124 on timeout, 125
 * when the sandbox could not be set up (the reason is on stderr). */
int local_run (const struct local_run *r);

/* The pieces local_run() and local sessions share. */
#include <signal.h>
#include <sys/types.h>
/* Encode r as the helper's run request; false if it exceeds the limits. */
bool local_build_request (const struct local_run *r, struct al_writer *w);
/* Start the helper with fd 3 = their_end of the channel and stdio[0..2]
 * (NULL: ours), restoring old_mask in the child.  Returns its pid, or -1
 * with errno set after saying why on stdio[2] (or our stderr). */
pid_t local_spawn_helper (const char *helper, int their_end,
                          const int stdio[3], const sigset_t *old_mask);

#endif
