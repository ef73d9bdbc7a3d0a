/* SPDX-License-Identifier: MIT */
/* The broker's side of `network: allowlist`: take the tap device the
 * helper hands over, and run airlock-egress on it for as long as the
 * sandbox lives.  The stack itself, and every decision, are in
 * airlock-egress (backends/egress_main.c); this only starts, checks and
 * stops it. */
#ifndef AIRLOCK_BACKENDS_EGRESS_CLIENT_H
#define AIRLOCK_BACKENDS_EGRESS_CLIENT_H

#include <stddef.h>
#include <sys/types.h>


struct egress
{
  pid_t pid;    /* 0: not running */
  int control;  /* its stdin: closing it stops it */
  char hash[17];
};

/* recv() of one helper report on the seqpacket channel sock.  A report
 * may carry one descriptor (the tap, with AL_EV_TAP): it is returned in
 * *fd, else *fd is -1; any other descriptors are closed. */
ssize_t egress_recv_report (int sock, void *buf, size_t cap, int *fd);

/* Where airlock-egress is: AIRLOCK_EGRESS, else the installed path. */
const char *egress_path (void);

/* Check a policy, administrator caps included, before any sandbox starts:
 * `airlock-egress --check`.  0 with its hash in hash, or -1 and *err
 * (malloc'd: the reason airlock-egress gives). */
int egress_check (const char *policy_json, char hash[17], char **err);

/* Start airlock-egress on the tap (checked to be a tun/tap device first)
 * and wait, bounded, until it is ready.  The tap is closed here either
 * way.  0, or -1 and *err. */
int egress_start (int tap, const char *policy_json, const char *session,
                  const char *backend, struct egress *e, char **err);

/* Stop it (end of its stdin, then SIGKILL after a grace) and reap it.
 * Safe on a zeroed or stopped struct. */
void egress_stop (struct egress *e);

#endif
