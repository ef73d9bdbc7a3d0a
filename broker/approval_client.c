/* SPDX-License-Identifier: MIT */
/* The approval gate's parts the thin client needs: see approval_client.h. */
#define _GNU_SOURCE
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "approval_client.h"
#include "audit_log.h"
#include "runtime_dir.h"
#include "xalloc.h"

const char *
approval_default_mode_name (const struct airlock_config *cfg,
                            bool have_terminal)
{
  static const char *const modes[] = { "interactive", "ask", "deny",
                                       "approve" };
  const char *m = config_string (cfg, "policy.mode");
  for (size_t i = 0; m && i < sizeof modes / sizeof *modes; i++)
    if (!strcmp (m, modes[i]))
      return i == 0 && !have_terminal ? "deny" : modes[i];
  return have_terminal ? "interactive" : "deny"; /* "auto" */
}

char *
approval_state_dir (char **err)
{
  return audit_log_state_dir (getenv ("XDG_STATE_HOME"), config_home_dir (),
                              err);
}

char *
approval_config_dir (void)
{
  char *p = config_user_path ();
  char *slash = p ? strrchr (p, '/') : NULL;
  if (slash && slash != p)
    *slash = '\0';
  return p;
}

/* Resolve path one component at a time, as the kernel would, noting where
 * each symlink on the way is; past a missing component, lexically (that
 * is where it would be created). */
static void
find_protected (struct protected_dir *d, const char *what, const char *path)
{
  *d = (struct protected_dir){ .what = what };
  char *cwd = path[0] == '/' ? NULL : getcwd (NULL, 0);
  char *spelled = xasprintf ("%s/%s", cwd ? cwd : "", path);
  free (cwd);
  char *real = xstrdup ("");
  bool missing = false;
  char *save = NULL;
  for (char *c = strtok_r (spelled, "/", &save); c; c = strtok_r (NULL, "/", &save))
    {
      if (!strcmp (c, "."))
        continue;
      if (!strcmp (c, ".."))
        {
          *(strrchr (real, '/') ? strrchr (real, '/') : real) = '\0';
          continue;
        }
      char *next = xasprintf ("%s/%s", real, c);
      free (real);
      real = next;
      struct stat st;
      if (missing || lstat (real, &st) < 0)
        missing = true;
      else if (S_ISLNK (st.st_mode))
        {
          d->links = xreallocarray (d->links, d->n_links + 1, sizeof *d->links);
          d->links[d->n_links++] = xstrdup (real);
          char *target = realpath (real, NULL);
          if (target)
            {
              free (real);
              real = target;
            }
          else
            missing = true; /* dangling: where it is stands for it */
        }
    }
  free (spelled);
  struct stat st;
  d->exists = !missing && stat (real, &st) == 0 && S_ISDIR (st.st_mode);
  d->path = *real ? real : (free (real), xstrdup ("/"));
}

void
approval_protected_dirs (struct protected_dirs *p)
{
  *p = (struct protected_dirs){ 0 };
  char *serr = NULL, *rterr = NULL;
  char rt[PATH_MAX] = "";
  char *dirs[PROTECTED_MAX] = { approval_config_dir (), approval_state_dir (&serr), NULL };
  /* A runtime directory that is not safely ours is not our daemon's; it
   * is still hidden where it would be. */
  runtime_dir (rt, sizeof rt, &rterr);
  if (rt[0])
    dirs[2] = xstrdup (rt);
  free (serr);
  free (rterr);
  static const char *const what[] = { "configuration", "state (audit log)",
                                      "runtime (daemon socket)" };
  for (size_t i = 0; i < PROTECTED_MAX; i++)
    {
      if (!dirs[i])
        continue;
      /* Made now if missing, so that no sandbox shown the parent can make
       * one, e.g. a config.json where there was none.  When that fails
       * (not ours to create), find_protected says it is missing. */
      char *ignored = NULL;
      audit_log_make_dirs (dirs[i], &ignored);
      free (ignored);
      find_protected (&p->d[p->n++], what[i], dirs[i]);
      free (dirs[i]);
    }
}

void
approval_protected_free (struct protected_dirs *p)
{
  for (size_t i = 0; i < p->n; i++)
    {
      free (p->d[i].path);
      for (size_t k = 0; k < p->d[i].n_links; k++)
        free (p->d[i].links[k]);
      free (p->d[i].links);
    }
  *p = (struct protected_dirs){ 0 };
}
