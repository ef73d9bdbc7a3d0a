/* SPDX-License-Identifier: MIT */
/* Backend selection: configuration in, a live backend session out. */
#define _GNU_SOURCE
#include <errno.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "approval.h"
#include "approval_client.h"
#include "backend_open.h"
#include "egress_prepare.h"
#include "docker_engine.h"
#include "daytona_session.h"
#include "docker_session.h"
#include "fnv1a.h"
#include "installed_file.h"
#include "local_session.h"
#include "modal_mode.h"
#ifdef HAVE_MODAL_SESSION
#include "modal_session.h"
#endif
#ifdef HAVE_MODAL_MANAGED
#include "modal_managed_session.h"
#endif
#include "sandbox_options.h"
#include "singularity_session.h"
#include "size_text.h"
#include "ssh_session.h"
#include "xprintf.h"

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
  if (!o.supervisor || !*o.supervisor)
    o.supervisor = SUPERVISOR_PATH;
  if (installed_file_check (o.run.helper, X_OK, "AIRLOCK_HELPER", err) < 0
      || installed_file_check (o.supervisor, R_OK, "AIRLOCK_SUPERVISOR", err) < 0)
    return -1;
  o.run.workdir = rq->workdir;
  o.run.envp = env;
  const char *net = config_string (cfg, "local.network");
  o.run.network = !strcmp (net, "none")        ? AL_NET_NONE
                  : !strcmp (net, "host")      ? AL_NET_HOST
                  : !strcmp (net, "allowlist") ? AL_NET_ALLOWLIST
                                               : AL_NET_LOOPBACK;
  o.session = rq->session;
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
  /* What the sandbox may show; airlock's own directories masked. */
  if (!e)
    e = sandbox_view_check (&o.run);
  char hash[17];
  if (!e && o.run.network == AL_NET_ALLOWLIST)
    egress_prepare (cfg, &o.run, hash, &e);
  if (!e)
    out->bs = local_session_open (&o, &e);
  egress_prepared_free (&o.run);
  sandbox_view_free (&o.run);
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

/* The opener's environment as modal_mode.c reads it: the variables the
 * client passed (config_getenv), and HOME (the daemon's user is the
 * opener). */
static char **
modal_envp (const struct airlock_config *cfg)
{
  static const char *const names[]
      = { "MODAL_TOKEN_ID", "MODAL_TOKEN_SECRET", "MODAL_PROFILE", "MODAL_CONFIG_PATH", NULL };
  char **envp = calloc (6, sizeof *envp);
  size_t n = 0;
  for (const char *const *v = names; envp && *v; v++)
    if (config_getenv (cfg, *v) && (envp[n] = xprintf ("%s=%s", *v, config_getenv (cfg, *v))))
      n++;
  if (envp && getenv ("HOME"))
    envp[n] = xprintf ("HOME=%s", getenv ("HOME"));
  return envp;
}

static void
free_envp (char **envp)
{
  for (size_t i = 0; envp && envp[i]; i++)
    {
      explicit_bzero (envp[i], strlen (envp[i]));
      free (envp[i]);
    }
  free (envp);
}

#ifdef HAVE_MODAL_SESSION
/* Direct: the user's own credentials, a sandbox of modal.* settings. */
static int
open_modal_direct (const struct backend_open_request *rq, char **envp,
                   struct backend_opened *out, char **err)
{
  const struct airlock_config *cfg = rq->cfg;
  struct modal_credentials cr = { 0 };
  if (modal_load_direct_credentials ((const char *const *) envp, NULL, &cr, err) < 0)
    return -1;
  const char *server = config_getenv (cfg, "MODAL_SERVER_URL");
  if (server && *server && strncmp (server, "https://", 8) && strncmp (server, "http://", 7))
    {
      modal_credentials_clear (&cr);
      *err = xprintf ("modal: MODAL_SERVER_URL must be an https:// URL (like "
                      "https://api.modal.com:443)");
      return -1;
    }
  uint64_t mem = 0;
  const char *m = config_string (cfg, "modal.memory");
  if (m)
    size_parse (m, &mem);
  const char *const *cidrs = config_list (cfg, "modal.allow_cidrs");
  bool blocked = !strcmp (config_string (cfg, "modal.network"), "blocked");
  struct modal_session_options o = {
    .api = {
      .server_url = server && *server ? server : NULL,
      .token_id = cr.token_id,
      .token_secret = cr.token_secret,
      .source = cr.source,
      .environment = config_getenv (cfg, "MODAL_ENVIRONMENT"),
    },
    .spec = {
      .app_name = config_string (cfg, "modal.app"),
      .image = config_string (cfg, "modal.image"),
      .timeout_secs = (unsigned) config_int (cfg, "modal.timeout"),
      .idle_timeout_secs = (unsigned) config_int (cfg, "modal.idle_timeout"),
      .milli_cpu = (unsigned) config_int (cfg, "modal.cpus") * 1000,
      .memory_mb = (unsigned) ((mem + (1 << 20) - 1) >> 20),
      .block_network = blocked,
      .allowed_cidrs = blocked && cidrs && *cidrs ? cidrs : NULL,
      .workdir = config_string (cfg, "modal.workdir"),
      .start_timeout_s = (unsigned) config_int (cfg, "modal.start_timeout"),
      .lease_secs = (unsigned) config_int (cfg, "modal.lease"),
      .progress = rq->progress,
      .progress_ctx = rq->progress_ctx,
    },
    .workdir = config_string (cfg, "modal.workdir"),
    .session = rq->session,
  };
  out->bs = modal_session_open (&o, &out->cwd, err);
  modal_credentials_clear (&cr);
  if (!out->bs)
    return -1;
  out->ops = modal_session_ops ();
  return 0;
}
#endif

/* Modal: the mode is resolved here, at session creation, so a setup
 * that cannot work fails now with what to fix, not at the first command.
 * Managed needs the gateway's entitlement: a query that fails counts as
 * not entitled (fail closed). */
static int
open_modal (const struct backend_open_request *rq, struct backend_opened *out, char **err)
{
  const struct airlock_config *cfg = rq->cfg;
  (void) out; /* (a build without a modal session layer) */
  enum modal_mode mode;
  if (modal_mode_parse (config_string (cfg, "modal.mode"), &mode) < 0)
    {
      *err = strdup ("configuration: modal.mode must be auto, direct or managed");
      return -1;
    }
  char **envp = modal_envp (cfg);
  if (!envp)
    {
      *err = strdup ("out of memory");
      return -1;
    }
  char *why = NULL;
  const char *origin = config_getenv (cfg, "MODAL_GATEWAY_URL");
  const char *token = config_getenv (cfg, "TOOL_GATEWAY_USER_TOKEN");
  struct modal_inputs in = {
    .mode = mode,
    .has_direct = modal_has_direct_credentials ((const char *const *) envp, NULL, &why),
    .entitlement = MODAL_QUERY_FAILED,
    .gateway_origin = origin && *origin,
    .gateway_token = token && *token,
  };
  in.direct_why_not = why;
#ifdef HAVE_MODAL_MANAGED
  if (mode != MODAL_DIRECT && in.gateway_origin && in.gateway_token)
    {
      char *eerr = NULL;
      int e = modal_gateway_entitled (origin, token, &eerr);
      in.entitlement = e == 1 ? MODAL_ENTITLED : e == 0 ? MODAL_NOT_ENTITLED : MODAL_QUERY_FAILED;
      free (eerr);
    }
#endif
  enum modal_backend b = modal_resolve (&in, err);
  free (why);
  int rc = -1;
  if (b == MODAL_NONE)
    ;
#ifdef HAVE_MODAL_MANAGED
  else if (b == MODAL_USE_MANAGED)
    {
      uint64_t mem = 0;
      const char *m = config_string (cfg, "modal.memory");
      if (m)
        size_parse (m, &mem);
      struct modal_managed_options mo = {
        .gateway_url = origin,
        .token = token,
        .image = config_string (cfg, "modal.image"),
        .cpu_milli = (unsigned) config_int (cfg, "modal.cpus") * 1000,
        .memory_mib = (unsigned) ((mem + (1 << 20) - 1) >> 20),
        .timeout_s = (unsigned) config_int (cfg, "modal.timeout"),
        .idle_timeout_s = (unsigned) config_int (cfg, "modal.idle_timeout"),
        .cwd = config_string (cfg, "modal.workdir"),
        .session = rq->session,
        .progress = rq->progress,
        .progress_ctx = rq->progress_ctx,
      };
      out->bs = modal_managed_open (&mo, &out->cwd, err);
      if (out->bs)
        {
          out->ops = modal_managed_ops ();
          rc = 0;
        }
    }
#endif
#ifdef HAVE_MODAL_SESSION
  else if (b == MODAL_USE_DIRECT)
    rc = open_modal_direct (rq, envp, out, err);
#endif
  else
    {
      *err = msg ("modal: the %s way is configured correctly, but this build has no "
                  "session layer for it yet%s", modal_backend_name (b), "");
      rc = BACKEND_NOT_IMPLEMENTED;
    }
  free_envp (envp);
  return rc;
}

/* Set once this daemon opened a docker session: from then on its
 * reaper looks after docker containers too. */
static bool docker_used;

static char *
docker_socket_from (const struct airlock_config *cfg, char **err)
{
  bool explicit = strcmp (config_origin (cfg, "docker.socket"), "default") != 0;
  return docker_socket_choose (config_string (cfg, "docker.socket"), explicit,
                               config_getenv (cfg, "DOCKER_HOST"), err);
}

/* A container of the local Docker Engine.  docker.allow_docker_socket
 * counts only from the administrator's system file: the socket is root
 * on the host, users cannot grant it to themselves. */
static int
open_docker (const struct backend_open_request *rq, struct backend_opened *out,
             char **err)
{
  const struct airlock_config *cfg = rq->cfg;
  struct docker_session_options o = {
    .image = config_string (cfg, "docker.image"),
    .pull = config_bool (cfg, "docker.pull"),
    .network = config_bool (cfg, "docker.network"),
    .pids_limit = config_int (cfg, "docker.pids_limit"),
    .user = config_string (cfg, "docker.user"),
    .read_only_rootfs = config_bool (cfg, "docker.read_only_rootfs"),
    .cap_add = config_list (cfg, "docker.cap_add"),
    .volumes = config_list (cfg, "docker.volumes"),
    .mount_workdir = config_bool (cfg, "docker.mount_workdir"),
    .workdir = rq->workdir,
    .admin_allows_socket = config_bool_admin (cfg, "docker.allow_docker_socket"),
    .session = rq->session,
    .owner_id = rq->owner_id,
    .supervisor = getenv ("AIRLOCK_SUPERVISOR"),
    .progress = rq->progress,
    .progress_ctx = rq->progress_ctx,
  };
  if (!o.supervisor || !*o.supervisor)
    o.supervisor = SUPERVISOR_PATH;
  const char *mem = config_string (cfg, "docker.memory");
  if (mem && !parse_number (mem, &o.memory, true))
    {
      *err = strdup ("configuration: docker.memory: not a size");
      return -1;
    }
  const char *cpus = config_string (cfg, "docker.cpus");
  if (cpus)
    o.nano_cpus = (int64_t) (strtod (cpus, NULL) * 1e9);
  uint64_t tmpfs = 0;
  char tmpfs_size[32];
  if (!parse_number (config_string (cfg, "docker.tmpfs_size"), &tmpfs, true))
    {
      *err = strdup ("configuration: docker.tmpfs_size: not a size");
      return -1;
    }
  snprintf (tmpfs_size, sizeof tmpfs_size, "%llu", (unsigned long long) tmpfs);
  o.tmpfs_size = tmpfs_size;
  /* airlock's own files stay out of the container, as out of any sandbox:
   * masked where a mount shows them (docker_container.c). */
  struct protected_dirs protected;
  approval_protected_dirs (&protected);
  o.protected = &protected;
  /* The container's environment: docker.env, then the forwarded names
   * from the environment of the client that opened the session. */
  const char *const *env = config_list (cfg, "docker.env");
  const char *const *fwd = config_list (cfg, "docker.forward_env");
  size_t n = 0;
  for (const char *const *e = env; *e; e++)
    n++;
  for (const char *const *f = fwd; *f; f++)
    n++;
  char **all = calloc (n + 1, sizeof *all);
  char *sock = all ? docker_socket_from (cfg, err) : NULL;
  if (!sock)
    {
      free (all);
      approval_protected_free (&protected);
      if (!*err)
        *err = strdup ("out of memory");
      return -1;
    }
  o.socket = sock;
  n = 0;
  for (const char *const *e = env; *e; e++)
    all[n++] = strdup (*e);
  for (const char *const *f = fwd; *f; f++)
    if (config_getenv (cfg, *f) && asprintf (&all[n], "%s=%s", *f, config_getenv (cfg, *f)) >= 0)
      n++;
  o.env = (const char *const *) all;
  docker_used = true;
  out->bs = docker_session_open (&o, &out->cwd, err);
  approval_protected_free (&protected);
  for (size_t i = 0; i < n; i++)
    free (all[i]);
  free (all);
  free (sock);
  if (!out->bs)
    return -1;
  out->ops = docker_session_ops ();
  return 0;
}

/* A remote host over OpenSSH: the user's ssh setup (config, agent,
 * known_hosts) plus what airlock's configuration says. */
static int
open_ssh (const struct backend_open_request *rq, struct backend_opened *out,
          char **err)
{
  const struct airlock_config *cfg = rq->cfg;
  const char *host = config_string (cfg, "ssh.host");
  if (!host)
    {
      *err = strdup ("the ssh backend needs a host: --host [USER@]HOST[:PORT], "
                     "the open field \"host\", or ssh.host in the configuration");
      return -1;
    }
  bool port_set = strcmp (config_origin (cfg, "ssh.port"), "default") != 0;
  struct ssh_session_options o = {
    .target = {
      .program = config_string (cfg, "ssh.program"),
      .host = host,
      .user = config_string (cfg, "ssh.user"),
      /* unset: ssh's choice (~/.ssh/config may name another port) */
      .port = port_set ? (int) config_int (cfg, "ssh.port") : 0,
      .key = config_string (cfg, "ssh.key"),
      .config = config_string (cfg, "ssh.config"),
      .known_hosts = config_string (cfg, "ssh.known_hosts"),
      .strict = config_string (cfg, "ssh.strict_host_key_checking"),
      .options = config_list (cfg, "ssh.options"),
      .connect_timeout = (int) config_int (cfg, "ssh.connect_timeout"),
      .alive_interval = (int) config_int (cfg, "ssh.server_alive_interval"),
      .alive_count = (int) config_int (cfg, "ssh.server_alive_count"),
      .control_persist = (int) config_int (cfg, "ssh.control_persist"),
    },
    .runtime_dir = rq->owner_id,
    .session = rq->session,
    .remote_dir = config_string (cfg, "ssh.remote_dir"),
    .workdir = config_string (cfg, "ssh.workdir"),
    .job_ttl_s = config_int (cfg, "ssh.job_ttl"),
    .disposable = config_bool (cfg, "ssh.disposable"),
  };
  out->bs = ssh_session_open (&o, &out->cwd, err);
  if (!out->bs)
    return -1;
  out->ops = ssh_session_ops ();
  return 0;
}

/* An Apptainer or Singularity instance (docs/singularity.md). */
static int
open_singularity (const struct backend_open_request *rq, struct backend_opened *out,
                  char **err)
{
  const struct airlock_config *cfg = rq->cfg;
  struct singularity_session_options o = {
    .executable = config_string (cfg, "singularity.executable"),
    .image = config_string (cfg, "singularity.image"),
    .network = config_bool (cfg, "singularity.network"),
    .memory = config_string (cfg, "singularity.memory"),
    .cpus = config_string (cfg, "singularity.cpus"),
    .pids_limit = config_int (cfg, "singularity.pids_limit"),
    .binds = config_list (cfg, "singularity.binds"),
    .mount_workdir = config_bool (cfg, "singularity.mount_workdir"),
    .workdir = rq->workdir,
    .persistent = config_bool (cfg, "singularity.persistent"),
    .start_timeout_s = (int) config_int (cfg, "singularity.start_timeout"),
    .session = rq->session,
    .owner_id = rq->owner_id,
    .supervisor = getenv ("AIRLOCK_SUPERVISOR"),
    .cache_dir = config_string (cfg, "singularity.cache_dir"),
    .cache_max = config_size (cfg, "singularity.cache_max"),
    .disk_floor = config_size (cfg, "singularity.disk_floor"),
    .build_timeout_s = config_int (cfg, "singularity.build_timeout"),
    .progress = rq->progress,
    .progress_ctx = rq->progress_ctx,
  };
  if (!o.supervisor || !*o.supervisor)
    o.supervisor = SUPERVISOR_PATH;
  if (installed_file_check (o.supervisor, R_OK, "AIRLOCK_SUPERVISOR", err) < 0)
    return -1;
  char *serr = NULL;
  char *state = approval_state_dir (&serr); /* the overlay's place */
  free (serr);
  o.state_dir = state;
  struct protected_dirs protected;
  approval_protected_dirs (&protected);
  o.protected = &protected;
  /* singularity.env, then the forwarded names from the environment of the
   * client that opened the session. */
  const char *const *env = config_list (cfg, "singularity.env");
  const char *const *fwd = config_list (cfg, "singularity.forward_env");
  size_t n = 0;
  for (const char *const *e = env; *e; e++)
    n++;
  for (const char *const *f = fwd; *f; f++)
    n++;
  char **all = calloc (n + 1, sizeof *all);
  n = 0;
  for (const char *const *e = env; all && *e; e++)
    if ((all[n] = strdup (*e)))
      n++;
  for (const char *const *f = fwd; all && *f; f++)
    if (config_getenv (cfg, *f) && asprintf (&all[n], "%s=%s", *f, config_getenv (cfg, *f)) >= 0)
      n++;
  o.env = (const char *const *) all;
  if (all)
    out->bs = singularity_session_open (&o, &out->cwd, err);
  else
    *err = strdup ("out of memory");
  approval_protected_free (&protected);
  for (size_t i = 0; all && i < n; i++)
    free (all[i]);
  free (all);
  free (state);
  if (!out->bs)
    return -1;
  out->ops = singularity_session_ops ();
  return 0;
}

/* Whole GiB, rounded up (Daytona's unit); 0 for unset. */
static int
gib_up (const char *size)
{
  uint64_t b = 0;
  if (!size || !size_parse (size, &b))
    return 0;
  return (int) ((b + (1ULL << 30) - 1) >> 30);
}

/* The credential of the client that opens: the API key in the variable
 * daytona.api_key_env names, else a JWT with its organization.  Only
 * pointers into the client's environment: nothing copied here. */
static int
daytona_credentials (const struct airlock_config *cfg, struct daytona_auth *a,
                     char **err)
{
  const char *key_var = config_string (cfg, "daytona.api_key_env");
  const char *key = config_getenv (cfg, key_var);
  const char *jwt = config_getenv (cfg, "DAYTONA_JWT_TOKEN");
  const char *org = config_getenv (cfg, "DAYTONA_ORGANIZATION_ID");
  *a = (struct daytona_auth){ 0 };
  if (key && *key)
    {
      a->api_key = key;
      a->source = key_var;
      return 0;
    }
  if (jwt && *jwt)
    {
      if (!org || !*org)
        {
          *err = xprintf ("daytona: DAYTONA_JWT_TOKEN is set but DAYTONA_ORGANIZATION_ID "
                          "is not: a JWT needs the id of its organization in "
                          "DAYTONA_ORGANIZATION_ID (or use an API key in %s instead)",
                          key_var);
          return -1;
        }
      a->jwt = jwt;
      a->organization_id = org;
      a->source = "DAYTONA_JWT_TOKEN";
      return 0;
    }
  *err = xprintf ("daytona: no credentials: set %s to a Daytona API key (create one at "
                  "https://app.daytona.io/dashboard/keys) in the environment of the "
                  "command that opens the session (an API client: in its open's "
                  "client_env), or DAYTONA_JWT_TOKEN with DAYTONA_ORGANIZATION_ID",
                  key_var);
  return -1;
}

/* A Daytona cloud sandbox (docs/daytona.md): options from the
 * configuration and the opener's environment, then
 * daytona_session_open. */
static int
open_daytona (const struct backend_open_request *rq, struct backend_opened *out,
              char **err)
{
  const struct airlock_config *cfg = rq->cfg;
  struct daytona_session_options o = {
    .keep = config_bool (cfg, "daytona.keep"),
    .workdir = config_string (cfg, "daytona.workdir"),
    .session = rq->session,
    .sandbox = {
      .image = config_string (cfg, "daytona.image"),
      .snapshot = config_string (cfg, "daytona.snapshot"),
      .target = config_string (cfg, "daytona.target"),
      .cpus = (int) config_int (cfg, "daytona.cpus"),
      .memory_gb = gib_up (config_string (cfg, "daytona.memory")),
      .disk_gb = gib_up (config_string (cfg, "daytona.disk")),
      .auto_stop_min = (int) config_int (cfg, "daytona.auto_stop"),
      .auto_archive_min = (int) config_int (cfg, "daytona.auto_archive"),
      .start_timeout_s = (int) config_int (cfg, "daytona.start_timeout"),
      .progress = rq->progress,
      .progress_ctx = rq->progress_ctx,
    },
  };
  if (daytona_credentials (cfg, &o.auth, err) < 0)
    return -1;
  /* Daytona refuses resources with a snapshot: said here, with the keys. */
  if (o.sandbox.snapshot
      && (o.sandbox.cpus || o.sandbox.memory_gb || o.sandbox.disk_gb))
    {
      *err = xprintf ("configuration: daytona.snapshot cannot be combined with "
                      "daytona.cpus, daytona.memory or daytona.disk (Daytona sizes a "
                      "snapshot's sandbox itself): unset those, or daytona.snapshot "
                      "to build from daytona.image");
      return -1;
    }
  if (o.sandbox.snapshot)
    o.sandbox.image = NULL;
  /* The endpoint and region: the configuration, else the variables the
   * Daytona SDKs read, else the public service. */
  o.api_url = config_string (cfg, "daytona.api_url");
  const char *url_var = NULL;
  if (!strcmp (config_origin (cfg, "daytona.api_url"), "default"))
    {
      const char *names[] = { "DAYTONA_API_URL", "DAYTONA_SERVER_URL" };
      for (size_t i = 0; i < 2 && !url_var; i++)
        {
          const char *v = config_getenv (cfg, names[i]);
          if (v && *v)
            {
              o.api_url = v;
              url_var = names[i];
            }
        }
    }
  if (url_var && strncmp (o.api_url, "https://", 8) && strncmp (o.api_url, "http://", 7))
    {
      *err = xprintf ("daytona: %s must be an http:// or https:// URL (like "
                      "https://app.daytona.io/api)", url_var);
      return -1;
    }
  if (!o.sandbox.target)
    {
      const char *t = config_getenv (cfg, "DAYTONA_TARGET");
      o.sandbox.target = t && *t ? t : NULL;
    }
  /* Its name and airlock's labels: the same owner and session find it
   * again (daytona.keep); nobody else's is ever touched. */
  uint64_t h = fnv1a64 (FNV1A64_INIT, rq->owner_id, strlen (rq->owner_id));
  char owner[9];
  snprintf (owner, sizeof owner, "%08llx", (unsigned long long) (h & 0xffffffffULL));
  char *name = xprintf ("airlock-%s-%s", owner, rq->session);
  const char *const *extra = config_list (cfg, "daytona.labels");
  const char *const *env = config_list (cfg, "daytona.env");
  const char *const *fwd = config_list (cfg, "daytona.forward_env");
  size_t nl = 2, ne = 0;
  for (const char *const *l = extra; *l; l++)
    nl++;
  for (const char *const *e = env; *e; e++)
    ne++;
  for (const char *const *f = fwd; *f; f++)
    ne++;
  char **labels = calloc (nl + 1, sizeof *labels);
  char **all_env = calloc (ne + 1, sizeof *all_env);
  int rc = -1;
  if (!name || !labels || !all_env
      || !(labels[0] = xprintf ("airlock.owner=%s", owner))
      || !(labels[1] = xprintf ("airlock.session=%s", rq->session)))
    {
      *err = strdup ("out of memory");
      goto out;
    }
  nl = 2;
  for (const char *const *l = extra; *l; l++)
    if ((labels[nl] = strdup (*l)))
      nl++;
  ne = 0;
  for (const char *const *e = env; *e; e++)
    if ((all_env[ne] = strdup (*e)))
      ne++;
  for (const char *const *f = fwd; *f; f++)
    if (config_getenv (cfg, *f) && (all_env[ne] = xprintf ("%s=%s", *f, config_getenv (cfg, *f))))
      ne++;
  o.sandbox.name = name;
  o.sandbox.labels = (const char *const *) labels;
  o.sandbox.env = (const char *const *) all_env;
#ifdef HAVE_DAYTONA_SESSION
  out->bs = daytona_session_open (&o, &out->cwd, err);
  if (out->bs)
    {
      out->ops = daytona_session_ops ();
      rc = 0;
    }
#else
  (void) out;
  *err = xprintf ("daytona: the configuration and credentials are fine, but this "
                  "build has no daytona session layer yet");
  rc = BACKEND_NOT_IMPLEMENTED;
#endif
out:
  for (size_t i = 0; labels && labels[i]; i++)
    free (labels[i]);
  for (size_t i = 0; all_env && all_env[i]; i++)
    {
      explicit_bzero (all_env[i], strlen (all_env[i]));
      free (all_env[i]);
    }
  free (labels);
  free (all_env);
  free (name);
  return rc;
}

/* Whether another daemon still serves at its runtime directory. */
static bool
owner_alive (void *ctx, const char *owner)
{
  (void) ctx;
  struct sockaddr_un sa = { .sun_family = AF_UNIX };
  if ((size_t) snprintf (sa.sun_path, sizeof sa.sun_path, "%s/daemon.sock", owner)
      >= sizeof sa.sun_path)
    return true; /* cannot tell: leave it */
  int fd = socket (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  bool alive = fd < 0 || connect (fd, (struct sockaddr *) &sa, sizeof sa) == 0;
  if (fd >= 0)
    close (fd);
  return alive;
}

void
backend_reap_orphans (const struct airlock_config *cfg, const char *owner_id,
                      bool (*is_open) (void *ctx, const char *session),
                      void *ctx)
{
  if (!docker_used && strcmp (config_string (cfg, "backend"), "docker"))
    return;
  char *err = NULL;
  char *sock = docker_socket_from (cfg, &err);
  struct docker_reap_request rq = {
    .socket = sock, .owner_id = owner_id,
    .idle_timeout_s = config_int (cfg, "session.idle_timeout"),
    .is_open = is_open, .owner_alive = owner_alive, .ctx = ctx,
  };
  if (sock && docker_reap_orphans (&rq, &err) < 0 && docker_used)
    fprintf (stderr, "airlock daemon: docker orphan reaper: %s\n", err ? err : "failed");
  free (err);
  free (sock);
}

const char *
backend_reach_reasons (const struct backend_ops *ops, struct backend_session *bs)
{
  if (ops == singularity_session_ops ())
    return singularity_session_risk_reasons (bs);
  return ops == docker_session_ops () ? docker_session_risk_reasons (bs) : NULL;
}

const char *
backend_warning (const struct backend_ops *ops, struct backend_session *bs)
{
  if (ops == singularity_session_ops ())
    return singularity_session_warning (bs);
  return ops == docker_session_ops () ? docker_session_warning (bs) : NULL;
}

int
backend_open (const struct backend_open_request *rq, struct backend_opened *out,
              char **err)
{
  *out = (struct backend_opened){ 0 };
  *err = NULL;
  if (!strcmp (rq->backend, "local"))
    return open_local (rq, out, err);
  if (!strcmp (rq->backend, "modal"))
    return open_modal (rq, out, err);
  if (!strcmp (rq->backend, "docker"))
    return open_docker (rq, out, err);
  if (!strcmp (rq->backend, "ssh"))
    return open_ssh (rq, out, err);
  if (!strcmp (rq->backend, "singularity"))
    return open_singularity (rq, out, err);
  if (!strcmp (rq->backend, "daytona"))
    return open_daytona (rq, out, err);
  *err = msg ("backend \"%s\" is not available yet; use \"local\", "
              "\"docker\", \"ssh\", \"singularity\" or \"daytona\"%s", rq->backend, "");
  return BACKEND_NOT_IMPLEMENTED;
}
