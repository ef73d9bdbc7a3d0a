/* SPDX-License-Identifier: MIT */
/* Rules, allowlist and audit log of the approval gate, for the daemon and
 * the one-shot `airlock run`. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "approval.h"
#include "audit_log.h"
#include "protected_paths.h"
#include "installed_file.h"
#include "runtime_dir.h"
#include "xalloc.h"
#include "xprintf.h"

struct file_stamp
{
  bool exists;
  dev_t dev;
  ino_t ino;
  off_t size;
  struct timespec mtime;
};

struct approval
{
  const struct airlock_config *cfg;
  char *default_rules, *admin_rules, *allowlist_path, *home;
  struct file_stamp default_st, admin_st, allow_st;
  struct ruleset *rs;
  struct id_set always;
  struct audit_log *log;
};

/* $XDG_STATE_HOME/airlock, else ~/.local/state/airlock. */
static char *
state_dir (char **err)
{
  return audit_log_state_dir (getenv ("XDG_STATE_HOME"), config_home_dir (),
                              err);
}

/* The directory of the user's config file: config.json and allowlist. */
static char *
config_dir (void)
{
  char *p = config_user_path ();
  char *slash = p ? strrchr (p, '/') : NULL;
  if (slash && slash != p)
    *slash = '\0';
  return p;
}

static void
stamp (const char *path, struct file_stamp *st)
{
  struct stat s;
  *st = (struct file_stamp){ 0 };
  if (path && stat (path, &s) == 0)
    *st = (struct file_stamp){ true, s.st_dev, s.st_ino, s.st_size, s.st_mtim };
}

static bool
changed (const char *path, const struct file_stamp *old)
{
  struct file_stamp now;
  stamp (path, &now);
  return memcmp (&now, old, sizeof now) != 0;
}

/* The allowlist: one rule id per line, '#' comments. */
static int
load_allowlist (struct approval *a, char **err)
{
  id_set_clear (&a->always);
  stamp (a->allowlist_path, &a->allow_st);
  FILE *f = a->allowlist_path ? fopen (a->allowlist_path, "re") : NULL;
  if (!f)
    {
      if (!a->allowlist_path || errno == ENOENT)
        return 0;
      *err = xprintf ("%s: %s", a->allowlist_path, strerror (errno));
      return -1;
    }
  char *line = NULL;
  size_t cap = 0;
  while (getline (&line, &cap, f) > 0)
    {
      char *id = line + strspn (line, " \t");
      id[strcspn (id, " \t\r\n#")] = '\0';
      if (*id)
        id_set_add (&a->always, id);
    }
  free (line);
  fclose (f);
  return 0;
}

static int
load_rules (struct approval *a, char **err)
{
  struct ruleset *rs = ruleset_load (a->default_rules, a->admin_rules, err);
  char *missing = NULL;
  if (!rs && installed_file_check (a->default_rules, R_OK, "AIRLOCK_DEFAULT_RULES",
                                   &missing) < 0)
    {
      free (*err);
      *err = missing;
    }
  if (!rs)
    return -1;
  ruleset_free (a->rs);
  a->rs = rs;
  stamp (a->default_rules, &a->default_st);
  stamp (a->admin_rules, &a->admin_st);
  return 0;
}

struct approval *
approval_open (const struct airlock_config *cfg, char **err)
{
  struct approval *a = calloc (1, sizeof *a);
  if (!a)
    return NULL;
  a->cfg = cfg;
  /* Tests point the shipped file elsewhere; never the admin's file, which
   * is compiled in so that nothing a user sets can hide it. */
  const char *def = getenv ("AIRLOCK_DEFAULT_RULES");
  a->default_rules = strdup (def && *def ? def : AIRLOCK_DEFAULT_RULES);
  a->admin_rules = strdup (AIRLOCK_ADMIN_RULES);
  const char *h = config_home_dir ();
  a->home = h ? strdup (h) : NULL;
  char *cdir = config_dir ();
  a->allowlist_path = cdir ? xprintf ("%s/allowlist", cdir) : NULL;
  free (cdir);
  char *sdir = state_dir (err);
  if (sdir && load_rules (a, err) == 0 && load_allowlist (a, err) == 0)
    a->log = audit_log_open (sdir, 1 << 20, 5, err);
  free (sdir);
  if (!a->log)
    {
      approval_close (a);
      return NULL;
    }
  return a;
}

void
approval_close (struct approval *a)
{
  if (!a)
    return;
  ruleset_free (a->rs);
  id_set_clear (&a->always);
  if (a->log)
    audit_log_close (a->log);
  free (a->default_rules);
  free (a->admin_rules);
  free (a->allowlist_path);
  free (a->home);
  free (a);
}

int
approval_refresh (struct approval *a, char **err)
{
  if ((changed (a->default_rules, &a->default_st)
       || changed (a->admin_rules, &a->admin_st))
      && load_rules (a, err) < 0)
    return -1;
  if (changed (a->allowlist_path, &a->allow_st))
    return load_allowlist (a, err);
  return 0;
}

const struct ruleset *
approval_rules (const struct approval *a)
{
  return a->rs;
}

enum gate_mode
approval_default_mode (const struct airlock_config *cfg, bool have_terminal)
{
  int m = gate_mode_parse (config_string (cfg, "policy.mode"));
  if (m < 0) /* "auto" */
    return have_terminal ? GATE_MODE_INTERACTIVE : GATE_MODE_DENY;
  if (m == GATE_MODE_INTERACTIVE && !have_terminal)
    return GATE_MODE_DENY; /* nobody is there to answer */
  return (enum gate_mode) m;
}

void
approval_decide (struct approval *a, const struct airlock_config *cfg,
                 enum gate_mode mode, bool host_access,
                 const struct id_set *session, const char *command,
                 const char *input, struct gate_decision *d)
{
  if (!cfg)
    cfg = a->cfg;
  struct gate_context ctx = {
    .mode = mode,
    .host_access = host_access,
    .bypass = config_bool (cfg, "policy.bypass"),
    .user_deny = config_list (cfg, "policy.deny"),
    .home = a->home,
    .always = &a->always,
    .session = session,
  };
  gate_decide_input (a->rs, &ctx, command, input, d);
}

int
approval_record (struct approval *a, const char *session, const char *backend,
                 const char *command, const struct gate_decision *d,
                 const char *decision, const char *decided_by, char **err)
{
  const char *ids[GATE_MAX_RULES];
  for (size_t i = 0; i < d->n_rules; i++)
    ids[i] = d->rules[i]->id;
  struct audit_entry e = {
    .session = session,
    .backend = backend,
    .command = command,
    .decision = decision,
    .decided_by = decided_by,
    .reason = d->deny_glob,
    .rules = ids,
    .n_rules = d->n_rules,
  };
  return audit_log_write (a->log, &e, err);
}

int
approval_remember (struct approval *a, const struct gate_decision *d,
                   char **err)
{
  if (!a->allowlist_path)
    {
      *err = strdup ("no home directory: cannot keep an allowlist");
      return -1;
    }
  /* ~/.config/airlock and whatever of it is missing, private. */
  char *dir = strdup (a->allowlist_path);
  *strrchr (dir, '/') = '\0';
  for (char *p = dir + 1;; p++)
    if (*p == '/' || *p == '\0')
      {
        char c = *p;
        *p = '\0';
        if (mkdir (dir, 0700) < 0 && errno != EEXIST)
          {
            *err = xprintf ("cannot create %s: %s", dir, strerror (errno));
            free (dir);
            return -1;
          }
        if (!(*p = c))
          break;
      }
  free (dir);
  int fd = open (a->allowlist_path,
                 O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0)
    {
      *err = xprintf ("%s: %s", a->allowlist_path, strerror (errno));
      return -1;
    }
  int rc = 0;
  for (size_t i = 0; i < d->n_rules && rc == 0; i++)
    {
      char *line = xprintf ("%s\n", d->rules[i]->id);
      if (!line || write (fd, line, strlen (line)) != (ssize_t) strlen (line))
        {
          *err = xprintf ("%s: %s", a->allowlist_path, strerror (errno));
          rc = -1;
        }
      free (line);
    }
  close (fd);
  return rc < 0 ? -1 : load_allowlist (a, err);
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
  char *dirs[PROTECTED_MAX] = { config_dir (), state_dir (&serr), NULL };
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
