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
#include "file_stamp.h"
#include "protected_paths.h"
#include "installed_file.h"
#include "runtime_dir.h"
#include "xalloc.h"
#include "xprintf.h"

struct approval
{
  const struct airlock_config *cfg;
  char *default_rules, *admin_rules, *allowlist_path, *home;
  struct file_stamp default_st, admin_st, allow_st;
  uint64_t default_hash, admin_hash; /* of what rs was compiled from */
  struct ruleset *rs;
  struct id_set always;
  struct audit_log *log;
};

/* The allowlist: one rule id per line, '#' comments. */
static int
load_allowlist (struct approval *a, char **err)
{
  id_set_clear (&a->always);
  file_stamp (a->allowlist_path, &a->allow_st);
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

/* Compile the rule files.  Stamped and hashed first: a change while they
 * are read is seen at the next refresh, never lost. */
static int
load_rules (struct approval *a, char **err)
{
  struct file_stamp def_st, admin_st;
  file_stamp (a->default_rules, &def_st);
  file_stamp (a->admin_rules, &admin_st);
  uint64_t def_hash = file_hash (a->default_rules);
  uint64_t admin_hash = file_hash (a->admin_rules);
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
  a->default_st = def_st;
  a->admin_st = admin_st;
  a->default_hash = def_hash;
  a->admin_hash = admin_hash;
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
  char *cdir = approval_config_dir ();
  a->allowlist_path = cdir ? xprintf ("%s/allowlist", cdir) : NULL;
  free (cdir);
  char *sdir = approval_state_dir (err);
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
  bool def = file_stamp_changed (a->default_rules, &a->default_st);
  bool admin = file_stamp_changed (a->admin_rules, &a->admin_st);
  if (def || admin)
    {
      /* Touched, or rewritten with the same text: no new rules. */
      struct file_stamp def_st, admin_st;
      file_stamp (a->default_rules, &def_st);
      file_stamp (a->admin_rules, &admin_st);
      if (file_hash (a->default_rules) == a->default_hash
          && file_hash (a->admin_rules) == a->admin_hash)
        {
          a->default_st = def_st;
          a->admin_st = admin_st;
        }
      else if (load_rules (a, err) < 0)
        return -1;
    }
  if (file_stamp_changed (a->allowlist_path, &a->allow_st))
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
  int m = gate_mode_parse (approval_default_mode_name (cfg, have_terminal));
  return m < 0 ? GATE_MODE_DENY : (enum gate_mode) m;
}

void
approval_decide (struct approval *a, const struct airlock_config *cfg,
                 enum gate_mode mode, bool host_access,
                 const struct id_set *session, const char *command,
                 const char *input, bool terminal, struct gate_decision *d)
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
    .terminal = terminal,
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
