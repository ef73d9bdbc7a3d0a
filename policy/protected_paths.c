/* SPDX-License-Identifier: MIT */
/* airlock's own directories in a sandbox's view (see protected_paths.h). */
#define _GNU_SOURCE
#include "protected_paths.h"

#include <stdlib.h>
#include <string.h>

#include "xalloc.h"

bool
protected_path_contains (const char *outer, const char *inner)
{
  size_t n = strlen (outer);
  if (n == 1 && outer[0] == '/')
    return true;
  return !strncmp (outer, inner, n) && (inner[n] == '\0' || inner[n] == '/');
}

/* What follows src in path (path lies in src): "" or "/a/b". */
static const char *
below (const char *src, const char *path)
{
  if (strcmp (src, "/"))
    return path + strlen (src);
  return strcmp (path, "/") ? path : "";
}

char *
protected_host_path (const char *src, const char *dst, const char *at)
{
  const char *rest = below (dst, at);
  return xasprintf ("%s%s", *rest && !strcmp (src, "/") ? "" : src, rest);
}

/* Another protected directory hides d already: it contains d (or is the
 * same directory, listed earlier), and a mask of it covers d's. */
static bool
covered (const struct protected_dirs *p, size_t i)
{
  for (size_t j = 0; j < p->n; j++)
    if (j != i && p->d[j].exists
        && protected_path_contains (p->d[j].path, p->d[i].path)
        && (strcmp (p->d[j].path, p->d[i].path) || j < i))
      return true;
  return false;
}

int
protected_check_source (const struct protected_dirs *p, const char *src,
                        const char *dst, bool rw, protected_mask_fn mask,
                        void *ctx, char **err)
{
  for (size_t i = 0; i < p->n; i++)
    {
      const struct protected_dir *d = &p->d[i];
      if (protected_path_contains (d->path, src))
        {
          *err = xasprintf ("%s lies inside airlock's %s directory %s, which "
                            "no sandbox may see; use a directory outside it",
                            src, d->what, d->path);
          return -1;
        }
      for (size_t k = 0; rw && k < d->n_links; k++)
        if (protected_path_contains (src, d->links[k]))
          {
            *err = xasprintf ("%s would let the sandbox redirect airlock's %s "
                              "directory: %s, on the way to it, is a symlink "
                              "that a command could point elsewhere; bind %s "
                              "read-only, use a directory that does not hold "
                              "the symlink, or replace it with the directory "
                              "it points to", src, d->what, d->links[k], src);
            return -1;
          }
      if (!protected_path_contains (src, d->path))
        continue;
      if (!d->exists)
        {
          if (!rw)
            continue; /* nothing there, and nothing can be made there */
          *err = xasprintf ("airlock's %s directory %s does not exist and "
                            "could not be created, and a command given %s "
                            "could create it; create it (mkdir -p -m 0700 %s) "
                            "or use a directory that does not contain it",
                            d->what, d->path, src, d->path);
          return -1;
        }
      if (covered (p, i))
        continue;
      char *at = xasprintf ("%s%s", strcmp (dst, "/") ? dst : "",
                            below (src, d->path));
      int rc = mask (ctx, at, d->path, err);
      free (at);
      if (rc < 0)
        return -1;
    }
  return 0;
}
