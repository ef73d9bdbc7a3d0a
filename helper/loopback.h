/* SPDX-License-Identifier: MIT */
/* Loopback networking inside the sandbox's own network namespace. */
#ifndef AIRLOCK_HELPER_LOOPBACK_H
#define AIRLOCK_HELPER_LOOPBACK_H

/* Bring `lo` up; must run in the new network namespace with CAP_NET_ADMIN
 * there, after the environment is cleared and before pivot_root.  Dies on
 * failure. */
void loopback_up (void);

#endif
