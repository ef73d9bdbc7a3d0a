/* Backend selection: configuration in, a live backend session out. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend_open.h"
#include "local_session.h"
#include "sandbox_options.h"

static char *
msg (const char *fmt, const char *a, const char *b)
{
  char *m = NULL;
  if (asprintf (&m, fmt, a, b) < 0)
    m = NULL;
  return m;
}

static void
free_bind (struct al_bind *b)
{
  free ((char *) b->src);
  free ((char *) b->dst);
}

/* The local sandbox: the helper with the supervisor as pid 1, the
 * workdir bound read-write. */
static int
open_local (const struct backend_open_request *rq, struct backend_opened *out,
            char **err)
{
  const struct airlock_config *cfg = rq->cfg;
  static const char *env[] = { "PATH=/usr/local/bin:/usr/bin:/bin", NULL };
  struct local_session_options o = { .log_fd = 2 };
  o.run.helper = getenv ("AIRLOCK_HELPER");
  if (!o.run.helper || !*o.run.helper)
    o.run.helper = HELPER_PATH;
  o.supervisor = getenv ("AIRLOCK_SUPERVISOR");
  o.run.workdir = rq->workdir;
  o.run.envp = env;
  const char *net = config_string (cfg, "local.network");
  o.run.network = !strcmp (net, "none")   ? AL_NET_NONE
                  : !strcmp (net, "host") ? AL_NET_HOST
                                          : AL_NET_LOOPBACK;
  o.run.pids_max = (uint32_t) config_int (cfg, "local.pids");
  const char *mem = config_string (cfg, "local.memory");
  if (mem && !parse_number (mem, &o.run.memory_max, true))
    {
      *err = strdup ("configuration: local.memory: not a size");
      return -1;
    }
  /* The sandbox's option strings need to live only until
   * local_session_open returns: it sends them to the helper at once. */
  char *rootfs = NULL;
  const char *rootfs_cfg = config_string (cfg, "local.rootfs");
  if (rootfs_cfg && !(rootfs = realpath (rootfs_cfg, NULL)))
    {
      *err = msg ("configuration: local.rootfs %s: %s", rootfs_cfg,
                  strerror (errno));
      return -1;
    }
  o.run.rootfs = rootfs;
  char *e = NULL;
  const char *const *rw = config_list (cfg, "local.binds");
  const char *const *ro = config_list (cfg, "local.ro_binds");
  for (; !e && rw && *rw; rw++)
    e = add_bind (o.run.binds_rw, &o.run.n_binds_rw, *rw);
  for (; !e && ro && *ro; ro++)
    e = add_bind (o.run.binds_ro, &o.run.n_binds_ro, *ro);
  if (!e)
    out->bs = local_session_open (&o, &e);
  free (rootfs);
  for (uint32_t i = 0; i < o.run.n_binds_rw; i++)
    free_bind (&o.run.binds_rw[i]);
  for (uint32_t i = 0; i < o.run.n_binds_ro; i++)
    free_bind (&o.run.binds_ro[i]);
  if (!out->bs)
    {
      *err = e ? e : strdup ("cannot start the local sandbox");
      return -1;
    }
  out->ops = local_session_ops ();
  out->cwd = strdup (rq->workdir);
  return 0;
}

int
backend_open (const struct backend_open_request *rq, struct backend_opened *out,
              char **err)
{
  *out = (struct backend_opened){ 0 };
  *err = NULL;
  if (!strcmp (rq->backend, "local"))
    return open_local (rq, out, err);
  *err = msg ("backend \"%s\" is not available yet; use \"local\"%s",
              rq->backend, "");
  return -1;
}
