/* SPDX-License-Identifier: MIT */
/* The broker's preparation of a sandbox with `network: allowlist`. */
#ifndef AIRLOCK_BROKER_EGRESS_PREPARE_H
#define AIRLOCK_BROKER_EGRESS_PREPARE_H

struct airlock_config;
struct local_run;

/* For a sandbox with network ALLOWLIST: check configuration c's policy
 * (egress_check) and set r->egress_policy and r->egress_resolv_conf (a
 * file in the runtime directory naming the stack's resolver); hash gets
 * the policy's hash.  0, or -1 and *err.  egress_prepared_free frees
 * what it set. */
int egress_prepare (const struct airlock_config *c, struct local_run *r,
                    char hash[17], char **err);
void egress_prepared_free (struct local_run *r);

#endif
