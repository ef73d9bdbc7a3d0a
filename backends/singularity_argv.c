/* SPDX-License-Identifier: MIT */
/* See singularity_argv.h.  Flag names and the versions that have them:
 * docs/singularity.md. */
#define _GNU_SOURCE
#include "singularity_argv.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fnv1a.h"
#include "supervisor_protocol.h"
#include "xprintf.h"

int
sg_version_parse (const char *text, struct sg_version *v)
{
  static const struct {
    const char *prefix;
    enum sg_kind kind;
    bool ce;
  } kinds[] = {
    { "apptainer version ", SG_APPTAINER, false },
    { "singularity-ce version ", SG_SINGULARITY, true },
    { "singularity version ", SG_SINGULARITY, false },
  };
  *v = (struct sg_version){ 0 };
  while (text && isspace ((unsigned char) *text))
    text++;
  for (size_t i = 0; text && i < sizeof kinds / sizeof *kinds; i++)
    {
      size_t n = strlen (kinds[i].prefix);
      if (strncmp (text, kinds[i].prefix, n))
        continue;
      int used = 0;
      const char *p = text + n;
      if (!isdigit ((unsigned char) *p)
          || sscanf (p, "%d.%d%n", &v->major, &v->minor, &used) != 2)
        return -1;
      if (p[used] == '.' && isdigit ((unsigned char) p[used + 1]))
        v->patch = atoi (p + used + 1);
      v->kind = kinds[i].kind;
      v->ce = kinds[i].ce;
      return 0;
    }
  return -1;
}

char *
sg_version_text (const struct sg_version *v)
{
  return xprintf ("%s %d.%d.%d",
                  v->kind == SG_APPTAINER ? "apptainer"
                  : v->ce                 ? "singularity-ce"
                                          : "singularity",
                  v->major, v->minor, v->patch);
}

static bool
at_least (const struct sg_version *v, int major, int minor, int patch)
{
  if (v->major != major)
    return v->major > major;
  if (v->minor != minor)
    return v->minor > minor;
  return v->patch >= patch;
}

const char *
sg_version_too_old (const struct sg_version *v)
{
  if (v->kind == SG_APPTAINER)
    return at_least (v, 1, 0, 0) ? NULL : "apptainer 1.0";
  return at_least (v, 3, 0, 0) ? NULL : "singularity 3.0";
}

bool
sg_has_limits (const struct sg_version *v)
{
  /* Apptainer 1.1.0; SingularityCE 3.10.0 (the last Singularity before
   * the split, 3.8, has none). */
  return v->kind == SG_APPTAINER ? at_least (v, 1, 1, 0) : at_least (v, 3, 10, 0);
}

/* ---- argv ---- */

struct argv_builder {
  char **v;
  size_t n, cap;
  bool oom;
};

static void
add_owned (struct argv_builder *b, char *s)
{
  if (!s || b->oom)
    {
      free (s);
      b->oom = true;
      return;
    }
  if (b->n + 2 > b->cap)
    {
      size_t cap = b->cap ? b->cap * 2 : 32;
      char **v = realloc (b->v, cap * sizeof *v);
      if (!v)
        {
          free (s);
          b->oom = true;
          return;
        }
      b->v = v;
      b->cap = cap;
    }
  b->v[b->n++] = s;
  b->v[b->n] = NULL;
}

static void
add (struct argv_builder *b, const char *s)
{
  add_owned (b, strdup (s));
}

static char **
finish (struct argv_builder *b)
{
  if (b->oom || !b->v)
    {
      sg_argv_free (b->v);
      return NULL;
    }
  return b->v;
}

void
sg_argv_free (char **argv)
{
  for (char **p = argv; p && *p; p++)
    free (*p);
  free (argv);
}

char **
sg_start_argv (const struct sg_start *o, char **warning)
{
  struct argv_builder b = { 0 };
  *warning = NULL;
  add (&b, o->exe);
  add (&b, "instance");
  add (&b, "start");
  /* A new mount, pid and ipc namespace, minimal /dev, an empty /tmp and
   * home instead of the host's; no host home; a clean environment. */
  add (&b, "--containall");
  add (&b, "--no-home");
  add (&b, "--cleanenv");
  if (!o->host_network)
    {
      /* --net alone means bridge, which needs root or CNI. */
      add (&b, "--net");
      add (&b, "--network");
      add (&b, "none");
    }
  if (o->overlay)
    {
      add (&b, "--overlay");
      add (&b, o->overlay);
    }
  else
    add (&b, "--writable-tmpfs");
  if (o->root)
    {
      add (&b, "--no-privs");
      add (&b, "--drop-caps");
      add (&b, "ALL");
    }
  bool limits = o->memory || o->cpus || o->pids_limit > 0;
  if (limits && sg_has_limits (o->version))
    {
      if (o->memory)
        {
          add (&b, "--memory");
          add (&b, o->memory);
        }
      if (o->cpus)
        {
          add (&b, "--cpus");
          add (&b, o->cpus);
        }
      if (o->pids_limit > 0)
        {
          add (&b, "--pids-limit");
          add_owned (&b, xprintf ("%lld", o->pids_limit));
        }
    }
  else if (limits)
    {
      char *have = sg_version_text (o->version);
      *warning = xprintf ("%s has no resource limit flags (--memory, --cpus, "
                          "--pids-limit: Apptainer 1.1, SingularityCE 3.10): %s%s%s%s%s "
                          "not applied; the instance is not limited",
                          have ? have : "this version",
                          o->memory ? "singularity.memory" : "",
                          o->memory && (o->cpus || o->pids_limit > 0) ? ", " : "",
                          o->cpus ? "singularity.cpus" : "",
                          o->cpus && o->pids_limit > 0 ? ", " : "",
                          o->pids_limit > 0 ? "singularity.pids_limit" : "");
      free (have);
      if (!*warning)
        b.oom = true;
    }
  add (&b, "--bind");
  add_owned (&b, xprintf ("%s:%s:ro", o->control_dir, SUP_CONTAINER_DIR));
  for (size_t i = 0; i < o->n_binds; i++)
    {
      add (&b, "--bind");
      add_owned (&b, xprintf ("%s:%s:%s", o->binds[i].src, o->binds[i].dst,
                              o->binds[i].read_only ? "ro" : "rw"));
    }
  add (&b, o->image);
  add (&b, o->name);
  char **v = finish (&b);
  if (!v)
    {
      free (*warning);
      *warning = NULL;
    }
  return v;
}

char **
sg_exec_argv (const char *exe, const char *name)
{
  struct argv_builder b = { 0 };
  add (&b, exe);
  add (&b, "exec");
  add (&b, "--cleanenv");
  add_owned (&b, xprintf ("instance://%s", name));
  add (&b, SUP_CONTAINER_DIR "/" SG_SUPERVISOR_NAME);
  add (&b, EXEC_INSTANCE_FLAG);
  return finish (&b);
}

char **
sg_stop_argv (const char *exe, const char *name, bool force)
{
  struct argv_builder b = { 0 };
  add (&b, exe);
  add (&b, "instance");
  add (&b, "stop");
  if (force)
    add (&b, "--force");
  add (&b, name);
  return finish (&b);
}

char **
sg_list_argv (const char *exe, const char *name)
{
  struct argv_builder b = { 0 };
  add (&b, exe);
  add (&b, "instance");
  add (&b, "list");
  add (&b, "--json");
  if (name)
    add (&b, name);
  return finish (&b);
}

/* ---- environment ---- */

static bool
theirs (const char *var)
{
  static const char *const prefixes[] = { "APPTAINER_", "SINGULARITY_", "APPTAINERENV_",
                                          "SINGULARITYENV_" };
  for (size_t i = 0; i < sizeof prefixes / sizeof *prefixes; i++)
    if (!strncmp (var, prefixes[i], strlen (prefixes[i])))
      return true;
  return false;
}

char **
sg_child_env (const char *const *envp, const char *config_dir,
              const char *const *extra)
{
  struct argv_builder b = { 0 };
  for (const char *const *e = envp; e && *e; e++)
    if (!theirs (*e))
      add (&b, *e);
  if (config_dir)
    {
      add_owned (&b, xprintf ("APPTAINER_CONFIGDIR=%s", config_dir));
      add_owned (&b, xprintf ("SINGULARITY_CONFIGDIR=%s", config_dir));
    }
  for (const char *const *e = extra; e && *e; e++)
    add (&b, *e);
  if (!b.v && !b.oom && !(b.v = calloc (1, sizeof *b.v)))
    b.oom = true;
  return finish (&b);
}

char *
sg_instance_name (const char *owner_id, const char *session)
{
  if (!*session)
    return NULL;
  for (const char *p = session; *p; p++)
    if (!isalnum ((unsigned char) *p) && !strchr ("_.-", *p))
      return NULL;
  uint64_t h = fnv1a64 (FNV1A64_INIT, owner_id, strlen (owner_id));
  return xprintf ("airlock-%08llx-%s", (unsigned long long) (h & 0xffffffffULL),
                  session);
}

char **
sg_env_passed (const struct sg_version *v, const char *const *env)
{
  struct argv_builder b = { 0 };
  const char *prefix = v->kind == SG_APPTAINER ? "APPTAINERENV_" : "SINGULARITYENV_";
  for (const char *const *e = env; e && *e; e++)
    add_owned (&b, xprintf ("%s%s", prefix, *e));
  if (!b.v && !b.oom && !(b.v = calloc (1, sizeof *b.v)))
    b.oom = true;
  return finish (&b);
}
