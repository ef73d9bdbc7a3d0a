/* SPDX-License-Identifier: MIT */
/* The built-in seccomp filter every sandbox gets, installed last, just
 * before execve.  The broker may stack stricter filters on top of it; the
 * kernel then applies the most restrictive answer, so it can never loosen
 * this one. */
#ifndef AIRLOCK_HELPER_SECCOMP_BASELINE_H
#define AIRLOCK_HELPER_SECCOMP_BASELINE_H

/* Load the baseline filter into the calling thread (NO_NEW_PRIVS is already
 * set by the caller).  Returns 0, or -errno with *what set to a static
 * string naming what failed. */
int seccomp_apply_baseline (const char **what);

#endif
