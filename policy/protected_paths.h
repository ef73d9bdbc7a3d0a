/* SPDX-License-Identifier: MIT */
/* airlock's own directories in a sandbox's view.
 *
 * The configuration (rules, allowlist), the state (the audit log) and the
 * runtime directory (the daemon's socket, through which a command could
 * answer its own approval) must never be visible to a sandbox.  A sandbox
 * shown a host directory that contains one of them (a workdir of $HOME,
 * of /tmp) is not refused: it sees each as an empty read-only directory (a
 * mask), and the backend pins every directory between the bind's root
 * and a mask, so that a command cannot rename a masked directory's parent
 * away and create a fresh airlock directory for the daemon to read.
 *
 * Refused, with a message naming the path and the fix, is what masking
 * cannot make safe: a host directory inside one of them, and, when it is
 * writable, a directory holding a symlink on the way to one (a command
 * could point it elsewhere) or the place where a missing one would be
 * created (a command could create it).
 *
 * Pure path arithmetic on canonical paths, no I/O: the broker finds the
 * directories (broker/approval.c), the backends apply the masks (the
 * helper's AL_F_MASK, tmpfs mounts in a docker container). */
#ifndef AIRLOCK_POLICY_PROTECTED_PATHS_H
#define AIRLOCK_POLICY_PROTECTED_PATHS_H

#include <stdbool.h>
#include <stddef.h>

#define PROTECTED_MAX 3

struct protected_dir {
  const char *what; /* "configuration", "state (audit log)", ... */
  char *path;       /* canonical: where it is, or would be created */
  bool exists;      /* a directory now */
  char **links;     /* the symlinks met on the way to it, each where it is
                       (canonical directory + name) */
  size_t n_links;
};

struct protected_dirs {
  struct protected_dir d[PROTECTED_MAX];
  size_t n;
};

/* One mask: hide sandbox_path (where host_path, a protected directory,
 * appears).  0, or -1 with *err (malloc'd). */
typedef int (*protected_mask_fn) (void *ctx, const char *sandbox_path,
                                  const char *host_path, char **err);

/* One source of a sandbox's view: the host path src (canonical) shown at
 * dst, writable or not.  Calls mask() for each protected directory inside
 * src that another protected directory does not already cover.  0, or -1
 * with *err (malloc'd): src cannot be shown safely, or mask() failed. */
int protected_check_source (const struct protected_dirs *p, const char *src,
                            const char *dst, bool rw, protected_mask_fn mask,
                            void *ctx, char **err);

/* The host path shown at sandbox path `at` by a source src shown at dst
 * (at is dst or below it); malloc'd. */
char *protected_host_path (const char *src, const char *dst, const char *at);

/* inner is outer or lies below it (canonical paths). */
bool protected_path_contains (const char *outer, const char *inner);

#endif
