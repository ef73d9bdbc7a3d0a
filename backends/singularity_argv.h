/* SPDX-License-Identifier: MIT */
/* What the singularity backend runs, as pure functions (unit-tested in
 * tests/unit/test_singularity_argv.c): the executable's version and the
 * flags it has, the argv of `instance start`, `exec`, `instance stop`,
 * and the environment every apptainer process gets. */
#ifndef AIRLOCK_BACKENDS_SINGULARITY_ARGV_H
#define AIRLOCK_BACKENDS_SINGULARITY_ARGV_H

#include <stdbool.h>
#include <stddef.h>

enum sg_kind { SG_APPTAINER, SG_SINGULARITY };

struct sg_version {
  enum sg_kind kind;
  bool ce;              /* SingularityCE (Sylabs) */
  int major, minor, patch;
};

/* The first line of `EXE --version`: "apptainer version 1.3.4",
 * "singularity-ce version 3.11.5", "singularity version 3.8.7" (a suffix
 * such as "-1.el8" is ignored).  0, or -1 when it is none of those. */
int sg_version_parse (const char *text, struct sg_version *v);

/* "apptainer 1.3.4" (malloc'd). */
char *sg_version_text (const struct sg_version *v);

/* The base set of flags (--containall --no-home --cleanenv --net
 * --network --writable-tmpfs --overlay --bind --no-privs
 * --drop-caps): Apptainer 1.0, Singularity 3.0.  Older: NULL, else the
 * minimum as text for the error. */
const char *sg_version_too_old (const struct sg_version *v);
/* --memory, --cpus, --pids-limit: Apptainer 1.1.0, SingularityCE 3.10.0. */
bool sg_has_limits (const struct sg_version *v);

struct sg_bind {
  const char *src, *dst; /* absolute, on the host and in the instance */
  bool read_only;
};

struct sg_start {
  const char *exe;
  const struct sg_version *version;
  bool host_network;       /* else --net --network none */
  const char *overlay;     /* a directory: --overlay; NULL: --writable-tmpfs */
  bool root;               /* we are uid 0: --no-privs --drop-caps ALL */
  const char *memory, *cpus; /* NULL: none */
  long long pids_limit;    /* 0: none */
  const char *control_dir; /* bound read-only at SUP_CONTAINER_DIR */
  const struct sg_bind *binds;
  size_t n_binds;
  const char *image, *name;
};

/* `EXE instance start ...` (NULL-terminated, malloc'd strings; free with
 * sg_argv_free).  *warning (malloc'd, NULL when none): each hardening or
 * limit configured that this version cannot apply, and why.  NULL only
 * when out of memory. */
char **sg_start_argv (const struct sg_start *o, char **warning);

/* `EXE exec --cleanenv instance://NAME
 *  SUP_CONTAINER_DIR/airlock-supervisor --instance`. */
char **sg_exec_argv (const char *exe, const char *name);

/* `EXE instance stop [--force] NAME`; `EXE instance list --json [NAME]`
 * (NULL: all of ours). */
char **sg_stop_argv (const char *exe, const char *name, bool force);
char **sg_list_argv (const char *exe, const char *name);

void sg_argv_free (char **argv);

/* The environment of every apptainer process: envp (the daemon's) without
 * any APPTAINER_*, SINGULARITY_*, APPTAINERENV_* or SINGULARITYENV_*
 * variable (a stray APPTAINER_BIND would silently change the isolation),
 * plus APPTAINER_CONFIGDIR and SINGULARITY_CONFIGDIR = config_dir when it
 * is not NULL, and extra ("NAME=value", NULL-terminated or NULL).
 * malloc'd, NULL-terminated; free with sg_argv_free. */
char **sg_child_env (const char *const *envp, const char *config_dir,
                     const char *const *extra);

/* airlock-HASH-SESSION, HASH the 8 hex digits of FNV-1a over the
 * daemon's runtime directory (which daemon's it is).  NULL when the
 * session's name has a character apptainer does not take in a name. */
char *sg_instance_name (const char *owner_id, const char *session);

/* The variables of env ("NAME=value") as the exec client passes them
 * into the instance under --cleanenv: APPTAINERENV_NAME=value (apptainer)
 * or SINGULARITYENV_NAME=value, in its environment, never its argv.
 * malloc'd, NULL-terminated (sg_argv_free); NULL when out of memory. */
char **sg_env_passed (const struct sg_version *v, const char *const *env);

/* The supervisor's name in the control directory. */
#define SG_SUPERVISOR_NAME "airlock-supervisor"

#endif
