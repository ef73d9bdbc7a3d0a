/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
#include "sandbox_options.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "approval_client.h"
#include "protected_paths.h"
#include "xprintf.h"

bool
parse_number (const char *s, uint64_t *out, bool sizes)
{
  char *end;
  errno = 0;
  if (*s < '0' || *s > '9')
    return false;
  unsigned long long v = strtoull (s, &end, 10);
  int shift = 0;
  if (sizes && *end)
    {
      const char *units = "KMGT";
      const char *u = strchr (units, *end);
      if (!u || end[1])
        return false;
      shift = 10 * (int) (u - units + 1);
      end++;
    }
  if (errno || *end || (shift && v > (UINT64_MAX >> shift)))
    return false;
  *out = (uint64_t) v << shift;
  return true;
}

char *
add_bind (struct al_bind *binds, uint32_t *n, const char *spec)
{
  char *msg = NULL;
  if (*n >= AL_MAX_BINDS)
    return asprintf (&msg, "at most %d binds of each kind", AL_MAX_BINDS) < 0 ? NULL : msg;
  char *copy = strdup (spec);
  if (!copy)
    return NULL;
  char *colon = strchr (copy, ':');
  if (colon)
    *colon = '\0';
  char *src = realpath (copy, NULL);
  if (!src)
    {
      if (asprintf (&msg, "bind source %s: %s", copy, strerror (errno)) < 0)
        msg = NULL;
      free (copy);
      return msg;
    }
  const char *dst = colon ? colon + 1 : src;
  if (!al_path_ok ((const uint8_t *) dst, strlen (dst)))
    {
      if (asprintf (&msg, "bind destination '%s' must be an absolute path "
                    "without '.', '..' or '//'", dst) < 0)
        msg = NULL;
      free (copy);
      free (src);
      return msg;
    }
  binds[*n].src = src;
  binds[*n].dst = strdup (dst);
  free (copy);
  (*n)++;
  return NULL;
}

/* Why dst may not be a mount point of the sandbox, or NULL. */
static const char *
destination_refused (const char *dst, bool host_system)
{
  if (!strcmp (dst, "/"))
    return "it would replace the sandbox's whole root";
  if (protected_path_contains ("/proc", dst) || protected_path_contains ("/dev", dst))
    return "it would cover the sandbox's own /proc or /dev";
  if (!host_system)
    return NULL; /* --rootfs: the rest of / is the caller's own image */
  if (protected_path_contains ("/etc", dst))
    return "it would cover the host's /etc, whose secrets and /etc/airlock "
           "are masked (a sandbox that needs its own /etc can use --rootfs)";
  static const char *const system[] = { "/usr", "/bin", "/sbin", "/lib",
                                        "/lib32", "/lib64", "/libx32", NULL };
  for (const char *const *d = system; *d; d++)
    if (!strcmp (dst, *d))
      return "it would replace one of the host's system directories";
  return NULL;
}

static int
add_mask (void *ctx, const char *sandbox_path, const char *host_path, char **err)
{
  (void) host_path;
  struct local_run *r = ctx;
  for (uint32_t i = 0; i < r->n_masks; i++)
    if (!strcmp (r->masks[i], sandbox_path))
      return 0;
  if (r->n_masks >= AL_MAX_MASKS)
    {
      *err = xprintf ("more than %d places in the sandbox show airlock's own "
                      "directories; use fewer binds that contain them",
                      AL_MAX_MASKS);
      return -1;
    }
  if (!(r->masks[r->n_masks] = strdup (sandbox_path)))
    return -1;
  r->n_masks++;
  return 0;
}

char *
sandbox_view_check (struct local_run *r)
{
  bool host_system = r->rootfs == NULL;
  const char *why = destination_refused (r->workdir, host_system);
  if (why)
    return xprintf ("--workdir %s: %s", r->workdir, why);
  for (int rw = 0; rw < 2; rw++)
    for (uint32_t i = 0; i < (rw ? r->n_binds_rw : r->n_binds_ro); i++)
      {
        const struct al_bind *b = rw ? &r->binds_rw[i] : &r->binds_ro[i];
        if ((why = destination_refused (b->dst, host_system)))
          return xprintf ("bind %s:%s: %s", b->src, b->dst, why);
      }
  struct protected_dirs p;
  approval_protected_dirs (&p);
  char *err = NULL;
  int rc = protected_check_source (&p, r->workdir, r->workdir, true, add_mask, r, &err);
  for (int rw = 0; rc == 0 && rw < 2; rw++)
    for (uint32_t i = 0; rc == 0 && i < (rw ? r->n_binds_rw : r->n_binds_ro); i++)
      {
        const struct al_bind *b = rw ? &r->binds_rw[i] : &r->binds_ro[i];
        rc = protected_check_source (&p, b->src, b->dst, rw, add_mask, r, &err);
      }
  if (rc == 0 && r->rootfs)
    rc = protected_check_source (&p, r->rootfs, "/", false, add_mask, r, &err);
  approval_protected_free (&p);
  /* Nothing may be mounted inside a mask: its mount point would be made
   * in airlock's own directory on the host. */
  for (int rw = 0; rc == 0 && rw < 2; rw++)
    for (uint32_t i = 0; rc == 0 && i < (rw ? r->n_binds_rw : r->n_binds_ro); i++)
      for (uint32_t m = 0; rc == 0 && m < r->n_masks; m++)
        {
          const struct al_bind *b = rw ? &r->binds_rw[i] : &r->binds_ro[i];
          if (protected_path_contains (r->masks[m], b->dst))
            {
              err = xprintf ("bind %s:%s: it would be inside %s, where the "
                             "sandbox sees airlock's own directory (masked)",
                             b->src, b->dst, r->masks[m]);
              rc = -1;
            }
        }
  if (rc < 0)
    sandbox_view_free (r);
  return rc < 0 ? (err ? err : strdup ("out of memory")) : NULL;
}

void
sandbox_view_free (struct local_run *r)
{
  for (uint32_t i = 0; i < r->n_masks; i++)
    free ((char *) r->masks[i]);
  r->n_masks = 0;
}
