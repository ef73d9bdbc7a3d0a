/* SPDX-License-Identifier: MIT */
/* The JSON-lines API (docs/api.md): one request object per line, answered
 * by one response object, or for a foreground exec by output events and
 * then a result, all carrying the request's "id".  A malformed line gets an
 * error object naming the problem and the connection stays usable. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon.h"
#include "api_internal.h"
#include "backend_open.h"
#include "output_window.h"
#include "session_files.h"
#include "spool.h"
#include "supervisor_protocol.h"
#include "xprintf.h"

#define JOB_READ_MAX (1 << 20)
/* A client following a job's output is sent more from the spool only
 * while less than this is queued for it: a slow or stalled reader costs
 * the daemon this much memory, not the size of the output. */
#define STREAM_QUEUE_MAX (256 * 1024)
#define STREAM_CHUNK (64 * 1024)
/* Finished foreground commands a session keeps for attach and job_output
 * (besides jobs.finished_ttl): the last few, not every command. */
#define FINISHED_COMMANDS_KEPT 16

/* A foreground exec asked for while the session was busy: commands of a
 * session run one after another, in the order they came. */
struct queued {
  struct client *c;
  cJSON *req;
  bool gated; /* the approval gate let it through already */
  struct queued *next;
};

static struct daemon *the_daemon;

/* A client following a job's output: the client of a foreground exec, or
 * one that attached.  It reads the job's spool at its own pace (pump);
 * the final answer goes after the last output before it. */
struct pending {
  struct client *c;
  cJSON *id;
  cJSON *posture; /* what the command runs under, for its result */
  struct session *s;
  struct session_exec *e; /* the foreground exec while it runs, else NULL */
  uint32_t job;
  bool attach;            /* answered with "end" once the job has ended */
  struct spool *spool;    /* a reference */
  struct spool_cursor cur;
  /* per stream: the start of a character cut at a chunk's end */
  unsigned char carry[2][4];
  size_t carry_len[2];
  uint64_t carry_at[2];   /* its offset in the spool */
  cJSON *result;          /* the final answer, once known */
  struct pending *next;
};
static struct pending *pendings;

cJSON *
reply (const cJSON *id, bool ok)
{
  cJSON *r = cJSON_CreateObject ();
  if (id)
    cJSON_AddItemToObject (r, "id", cJSON_Duplicate (id, true));
  cJSON_AddBoolToObject (r, "ok", ok);
  return r;
}

void
send_error (struct client *c, const cJSON *id, const char *code,
            const char *fmt, ...)
{
  char msg[1024];
  va_list ap;
  va_start (ap, fmt);
  vsnprintf (msg, sizeof msg, fmt, ap);
  va_end (ap);
  cJSON *r = reply (id, false);
  cJSON *e = cJSON_AddObjectToObject (r, "error");
  cJSON_AddStringToObject (e, "code", code);
  cJSON_AddStringToObject (e, "message", msg);
  client_send (c, r);
}

/* Field access with the errors the API promises: missing or wrong type. */
const char *
want_string (struct client *c, const cJSON *req, const cJSON *id,
             const char *key, bool required, bool *bad)
{
  const cJSON *v = cJSON_GetObjectItemCaseSensitive (req, key);
  if (!v && !required)
    return NULL;
  if (!v)
    send_error (c, id, "missing_field", "field \"%s\" is required", key);
  else if (!cJSON_IsString (v))
    send_error (c, id, "wrong_type", "field \"%s\" must be a string", key);
  else
    return v->valuestring;
  *bad = true;
  return NULL;
}

double
want_number (struct client *c, const cJSON *req, const cJSON *id,
             const char *key, double dflt, double min, double max, bool *bad)
{
  const cJSON *v = cJSON_GetObjectItemCaseSensitive (req, key);
  if (!v)
    return dflt;
  if (!cJSON_IsNumber (v) || v->valuedouble < min || v->valuedouble > max)
    {
      send_error (c, id, "wrong_type", "field \"%s\" must be a number from %g to %g",
                  key, min, max);
      *bad = true;
      return dflt;
    }
  return v->valuedouble;
}

static bool
want_bool (struct client *c, const cJSON *req, const cJSON *id,
           const char *key, bool *bad)
{
  const cJSON *v = cJSON_GetObjectItemCaseSensitive (req, key);
  if (!v)
    return false;
  if (!cJSON_IsBool (v))
    {
      send_error (c, id, "wrong_type", "field \"%s\" must be true or false", key);
      *bad = true;
      return false;
    }
  return cJSON_IsTrue (v);
}

static const cJSON *
want_object (struct client *c, const cJSON *req, const cJSON *id,
             const char *key, bool *bad)
{
  const cJSON *v = cJSON_GetObjectItemCaseSensitive (req, key);
  if (!v || cJSON_IsObject (v))
    return v;
  send_error (c, id, "wrong_type", "field \"%s\" must be an object", key);
  *bad = true;
  return NULL;
}

/* An env object of a request, {"NAME": "value"}, as NULL-terminated
 * "NAME=value" strings (malloc'd); NULL and *bad with an error sent.
 * Values are never echoed: they may be secrets. */
static char **
want_env (struct client *c, const cJSON *req, const cJSON *id, bool *bad)
{
  const cJSON *obj = want_object (c, req, id, "env", bad);
  if (!obj)
    return NULL;
  size_t n = 0, bytes = 0;
  const cJSON *v;
  cJSON_ArrayForEach (v, obj)
    {
      if (!session_env_name_ok (v->string))
        {
          send_error (c, id, "bad_request", "env: \"%.64s\" is not a name a "
                      "command's environment may set (letters, digits and _, "
                      "not starting with a digit; not AIRLOCK_*, BASH_ENV, ENV, "
                      "SHELLOPTS, BASHOPTS or PS4)", v->string);
          *bad = true;
          return NULL;
        }
      if (!cJSON_IsString (v))
        {
          send_error (c, id, "wrong_type", "env: the value of %s must be a string",
                      v->string);
          *bad = true;
          return NULL;
        }
      n++;
      bytes += strlen (v->string) + strlen (v->valuestring) + 2;
    }
  if (n > SESSION_MAX_ENV || bytes > SESSION_MAX_ENV_BYTES)
    {
      send_error (c, id, "bad_request", "env: at most %d variables and %d bytes",
                  SESSION_MAX_ENV, SESSION_MAX_ENV_BYTES);
      *bad = true;
      return NULL;
    }
  char **env = calloc (n + 1, sizeof *env);
  n = 0;
  cJSON_ArrayForEach (v, obj)
    if (env && asprintf (&env[n], "%s=%s", v->string, v->valuestring) >= 0)
      n++;
  return env;
}

/* The posture a result ran under (docs/api.md): never more than the
 * backend set up and, where it could, checked. */
static cJSON *
posture_json (const struct dsession *s, enum gate_mode mode)
{
  const struct backend_posture *p = &s->posture;
  cJSON *o = cJSON_CreateObject ();
  cJSON_AddStringToObject (o, "backend", s->backend);
  cJSON *iso = cJSON_AddObjectToObject (o, "isolation");
  if (p->isolation)
    {
      cJSON_AddStringToObject (iso, "kind", p->isolation);
      cJSON *ns = cJSON_AddArrayToObject (iso, "namespaces");
      for (size_t i = 0; i < 8 && p->namespaces[i]; i++)
        cJSON_AddItemToArray (ns, cJSON_CreateString (p->namespaces[i]));
      cJSON_AddBoolToObject (iso, "seccomp", p->seccomp);
      cJSON_AddBoolToObject (iso, "no_new_privs", p->no_new_privs);
      if (p->capabilities >= 0)
        cJSON_AddNumberToObject (iso, "capabilities", p->capabilities);
      else
        cJSON_AddNullToObject (iso, "capabilities");
      cJSON_AddStringToObject (iso, "network", p->network ? p->network : "unknown");
      if (p->network_policy)
        cJSON_AddStringToObject (iso, "network_policy", p->network_policy);
      cJSON_AddBoolToObject (iso, "verified", p->verified);
    }
  else
    cJSON_AddStringToObject (iso, "kind", "none claimed");
  if (p->privilege)
    cJSON_AddStringToObject (o, "privilege", p->privilege);
  else
    cJSON_AddNullToObject (o, "privilege");
  cJSON_AddStringToObject (o, "gate", gate_mode_name (mode));
  cJSON_AddStringToObject (o, "config_hash", s->config_hash);
  return o;
}

/* Whether the request may use session s: it has no owner, it is shared,
 * or the request carries its owner (an error is sent when not). */
static bool
owner_may_use (struct client *c, const struct dsession *s, const cJSON *req, const cJSON *id)
{
  bool bad = false;
  const char *o = want_string (c, req, id, "owner", false, &bad);
  if (bad)
    return false;
  if (!s->owner || s->shared || (o && !strcmp (o, s->owner)))
    return true;
  send_error (c, id, "not_owner",
              "session \"%s\" belongs to another client, which opened it unshared: "
              "open a session of your own (or have its owner open it shared)", s->name);
  return false;
}

struct dsession *
want_session (struct daemon *d, struct client *c, const cJSON *req,
              const cJSON *id, bool *bad)
{
  const char *name = want_string (c, req, id, "session", true, bad);
  if (!name)
    return NULL;
  struct dsession *s = daemon_find (d, name);
  if (!s && daemon_is_lost (d, name))
    send_error (c, id, "session_lost",
                "session \"%s\" was lost (its daemon or sandbox ended); close it "
                "and open it again", name);
  else if (!s)
    send_error (c, id, "no_session", "no session \"%s\" (open it first)", name);
  else if (!owner_may_use (c, s, req, id))
    s = NULL;
  if (!s)
    *bad = true;
  return s;
}

/* ---- open / close / list ---- */

static bool
valid_name (const char *n)
{
  size_t len = strlen (n);
  if (len == 0 || len > 64)
    return false;
  for (const char *p = n; *p; p++)
    if (!(*p >= 'a' && *p <= 'z') && !(*p >= 'A' && *p <= 'Z')
        && !(*p >= '0' && *p <= '9') && !strchr ("-_.", *p))
      return false;
  return true;
}

void
api_progress (void *ctx, const char *line)
{
  struct api_progress *p = ctx;
  cJSON *ev = cJSON_CreateObject ();
  if (p->id)
    cJSON_AddItemToObject (ev, "id", cJSON_Duplicate (p->id, true));
  cJSON_AddStringToObject (ev, "event", "progress");
  cJSON_AddStringToObject (ev, "message", line);
  client_send (p->c, ev);
  client_flush (p->c);
}

/* The open request's fields image, network and memory, as keys of the
 * backend cfg resolved to, added to settings.  NULL when some were
 * added, "" when there were none, else the problem (malloc'd).  A
 * backend that cannot do what was asked is an error: never another
 * isolation than the one asked for. */
/* The open field host, [USER@]HOST[:PORT] (HOST may be [v6]), as ssh.user,
 * ssh.host and ssh.port in settings.  NULL, or the problem (malloc'd). */
static char *
ssh_host_field (const char *b, const cJSON *v, cJSON *settings, bool *any)
{
  if (!cJSON_IsString (v))
    return xprintf ("field \"host\" must be a string");
  if (strcmp (b, "ssh"))
    return xprintf ("the %s backend has no host (\"host\" is for the ssh backend)", b);
  const char *val = v->valuestring, *at = strrchr (val, '@');
  const char *h = at ? at + 1 : val;
  const char *end = h[0] == '[' ? strchr (h, ']') : strrchr (h, ':');
  const char *colon = h[0] == '[' ? (end && end[1] == ':' ? end + 1 : NULL) : end;
  if (h[0] == '[' && (!end || (end[1] && end[1] != ':')))
    return xprintf ("host \"%s\": expected [USER@]HOST[:PORT]", val);
  char *user = at ? strndup (val, (size_t) (at - val)) : NULL;
  char *host = h[0] == '[' ? strndup (h + 1, (size_t) (end - h - 1))
               : strndup (h, colon ? (size_t) (colon - h) : strlen (h));
  char *e = NULL;
  long port = colon ? strtol (colon + 1, &e, 10) : 0;
  char *problem = NULL;
  if (!host || !*host || (at && (!user || !*user)) || (colon && (!*(colon + 1) || *e)))
    problem = xprintf ("host \"%s\": expected [USER@]HOST[:PORT]", val);
  else if (cJSON_GetObjectItemCaseSensitive (settings, "ssh.host")
           || (user && cJSON_GetObjectItemCaseSensitive (settings, "ssh.user"))
           || (colon && cJSON_GetObjectItemCaseSensitive (settings, "ssh.port")))
    problem = xprintf ("the ssh host is given twice: as \"host\" and in \"config\"");
  else
    {
      cJSON_AddStringToObject (settings, "ssh.host", host);
      if (user)
        cJSON_AddStringToObject (settings, "ssh.user", user);
      if (colon)
        cJSON_AddNumberToObject (settings, "ssh.port", (double) port);
      *any = true;
    }
  free (user);
  free (host);
  return problem;
}

static char *
backend_shorthands (const struct airlock_config *cfg, const cJSON *req,
                    cJSON *settings)
{
  const char *b = config_string (cfg, "backend");
  static const char *const fields[] = { "image", "network", "memory" };
  bool any = false;
  for (size_t i = 0; i < 3; i++)
    {
      const cJSON *v = cJSON_GetObjectItemCaseSensitive (req, fields[i]);
      if (!v)
        continue;
      if (!cJSON_IsString (v))
        return xprintf ("field \"%s\" must be a string", fields[i]);
      const char *val = v->valuestring;
      char key[64];
      cJSON *item = cJSON_CreateString (val);
      snprintf (key, sizeof key, "%s.%s", b, fields[i]);
      bool ok = true;
      if (!strcmp (fields[i], "image"))
        ok = strcmp (b, "local") && strcmp (b, "ssh");
      else if (!strcmp (fields[i], "memory"))
        ok = !strcmp (b, "local") || !strcmp (b, "docker") || !strcmp (b, "singularity");
      else if (!strcmp (val, "allowlist") && strcmp (b, "local"))
        {
          /* Refused, never run unfiltered: the one failure worse than none. */
          cJSON_Delete (item);
          return xprintf ("network \"allowlist\": the %s backend cannot enforce "
                          "an allowlist (only the local backend can: "
                          "docs/network.md); nothing was opened", b);
        }
      else if (!strcmp (b, "singularity"))
        {
          /* singularity.network false: a namespace with only lo. */
          cJSON_Delete (item);
          item = cJSON_CreateBool (!strcmp (val, "host"));
          if (strcmp (val, "host") && strcmp (val, "none") && strcmp (val, "loopback"))
            return xprintf ("network \"%s\": the singularity backend has none, "
                            "loopback (both: only lo) or host", val);
        }
      else if (!strcmp (b, "docker"))
        {
          /* docker.network false is network mode none: only lo. */
          ok = strcmp (val, "host") != 0;
          cJSON_Delete (item);
          item = cJSON_CreateBool (!strcmp (val, "bridge"));
          if (strcmp (val, "bridge") && strcmp (val, "none") && strcmp (val, "loopback"))
            return xprintf ("network \"%s\": the docker backend has none, "
                            "loopback (both: only lo) or bridge", val);
        }
      else
        ok = !strcmp (b, "local");
      if (!ok)
        {
          cJSON_Delete (item);
          return xprintf ("the %s backend cannot set %s \"%s\"", b, fields[i], val);
        }
      if (cJSON_GetObjectItemCaseSensitive (settings, key))
        {
          cJSON_Delete (item);
          return xprintf ("%s is given twice: as \"%s\" and in \"config\"", key,
                          fields[i]);
        }
      cJSON_AddItemToObject (settings, key, item);
      any = true;
    }
  const cJSON *host = cJSON_GetObjectItemCaseSensitive (req, "host");
  char *problem = host ? ssh_host_field (b, host, settings, &any) : NULL;
  if (problem)
    return problem;
  return any ? NULL : xprintf ("%s", "");
}

/* The settings of one open: the request's own (config, and the fields
 * backend and idle_timeout, which are short for two of its keys) over the
 * client's AIRLOCK_* variables over the files, read now. */
static struct airlock_config *
open_config (struct client *c, const cJSON *req, const cJSON *id,
             const char *backend, double idle, bool *bad)
{
  const cJSON *settings = want_object (c, req, id, "config", bad);
  const cJSON *cenv = *bad ? NULL : want_object (c, req, id, "client_env", bad);
  if (*bad)
    return NULL;
  cJSON *all = settings ? cJSON_Duplicate (settings, true) : cJSON_CreateObject ();
  if (backend)
    cJSON_AddStringToObject (all, "backend", backend);
  if (idle > 0)
    cJSON_AddNumberToObject (all, "session.idle_timeout", idle);
  char *err = NULL;
  char **envp = cenv ? config_env_from_json (cenv, &err) : NULL;
  static const char *const no_env[] = { NULL };
  const char *const *use_env = cenv ? (const char *const *) envp : no_env;
  struct airlock_config *cfg = NULL;
  if (!err)
    cfg = config_load_with (use_env, all, "the open request", &err);
  /* image, network and memory mean a key of whichever backend that
   * resolved to: read again with them. */
  if (cfg && !(err = backend_shorthands (cfg, req, all)))
    {
      config_free (cfg);
      cfg = config_load_with (use_env, all, "the open request", &err);
    }
  else if (cfg && !*err)
    {
      free (err);
      err = NULL;
    }
  else if (cfg)
    {
      config_free (cfg);
      cfg = NULL;
    }
  config_env_free (envp);
  cJSON_Delete (all);
  if (!cfg)
    {
      send_error (c, id, "config_error", "%s", err ? err : "bad configuration");
      *bad = true;
    }
  free (err);
  return cfg;
}

static void
free_dsession (struct dsession *ds)
{
  if (!ds)
    return;
  config_free (ds->cfg);
  free (ds->config_hash);
  free (ds->name);
  free (ds->owner);
  free (ds->backend);
  free (ds);
}

static void
op_open (struct daemon *d, struct client *c, const cJSON *req, const cJSON *id)
{
  bool bad = false;
  const char *name = want_string (c, req, id, "session", true, &bad);
  /* Optional here, required below for a backend that shares a host
   * directory (all but ssh, whose working directory is ssh.workdir). */
  const char *workdir = bad ? NULL : want_string (c, req, id, "workdir", false, &bad);
  const char *backend = bad ? NULL : want_string (c, req, id, "backend", false, &bad);
  const char *approval = bad ? NULL : want_string (c, req, id, "approval", false, &bad);
  double idle = bad ? 0 : want_number (c, req, id, "idle_timeout", 0, 1, 30 * 86400.0, &bad);
  char **env = bad ? NULL : want_env (c, req, id, &bad);
  const char *owner = bad ? NULL : want_string (c, req, id, "owner", false, &bad);
  bool share = !bad && want_bool (c, req, id, "share", &bad);
  if (bad)
    {
      config_env_free (env);
      return;
    }
  struct dsession *ds = NULL;
  struct session *s = NULL;
  char *real = NULL, *err = NULL;
  int mode = approval ? gate_mode_parse (approval) : 0;
  if (mode < 0)
    {
      send_error (c, id, "bad_request", "field \"approval\" must be one of "
                  "\"interactive\", \"ask\", \"deny\", \"approve\"");
      goto out;
    }
  if (!valid_name (name))
    {
      send_error (c, id, "bad_request",
                  "session names are 1-64 letters, digits, '-', '_' or '.'");
      goto out;
    }
  if (owner && (!*owner || strlen (owner) > 128))
    {
      send_error (c, id, "bad_request", "an owner is 1 to 128 characters");
      goto out;
    }
  if (daemon_find (d, name))
    {
      send_error (c, id, "session_exists", "session \"%s\" is already open", name);
      goto out;
    }
  if (workdir && workdir[0] != '/')
    {
      send_error (c, id, "bad_request", "workdir must be an absolute path");
      goto out;
    }
  if (workdir && !(real = realpath (workdir, NULL)))
    {
      send_error (c, id, "bad_request", "workdir %s: %s", workdir, strerror (errno));
      goto out;
    }
  ds = calloc (1, sizeof *ds);
  if (!ds || !(ds->cfg = open_config (c, req, id, backend, idle, &bad)))
    {
      if (!ds)
        send_error (c, id, "busy", "out of memory");
      goto out;
    }
  /* ssh and daytona share no host directory: their working directory is
   * the remote one. */
  const char *be = config_string (ds->cfg, "backend");
  if (!workdir && strcmp (be, "ssh") && strcmp (be, "daytona"))
    {
      send_error (c, id, "missing_field", "field \"workdir\" is required for the %s "
                  "backend (the host directory the session shares)",
                  config_string (ds->cfg, "backend"));
      goto out;
    }
  if (!approval)
    mode = (int) approval_default_mode (ds->cfg, false);
  ds->name = strdup (name);
  ds->owner = owner ? strdup (owner) : NULL;
  ds->shared = share;
  ds->backend = strdup (config_string (ds->cfg, "backend"));
  ds->config_hash = config_hash (ds->cfg);
  struct api_progress prog = { c, id };
  struct backend_open_request orq = { .cfg = ds->cfg, .backend = ds->backend,
                                      .session = name, .workdir = real,
                                      .owner_id = d->dir,
                                      .progress = api_progress,
                                      .progress_ctx = &prog };
  struct backend_opened bo;
  struct backend_reach reach = { 0 };
  int orc = backend_open (&orq, &bo, &err);
  if (orc == 0)
    {
      bo.ops->reach (bo.bs, &reach);
      ds->posture.capabilities = -1;
      if (bo.ops->posture && bo.ops->posture (bo.bs, &ds->posture, &err) < 0)
        {
          bo.ops->close (bo.bs);
          free (bo.cwd);
          orc = -1;
        }
    }
  if (orc == 0)
    {
      char *what = NULL;
      if (!strcmp (ds->backend, "docker")
          && asprintf (&what, "image %s", config_string (ds->cfg, "docker.image")) < 0)
        what = NULL;
      if (!strcmp (ds->backend, "ssh")
          && asprintf (&what, "host %s", config_string (ds->cfg, "ssh.host")) < 0)
        what = NULL;
      if (!strcmp (ds->backend, "singularity")
          && asprintf (&what, "image %s", config_string (ds->cfg, "singularity.image")) < 0)
        what = NULL;
      if (!strcmp (ds->backend, "daytona")
          && asprintf (&what, "Daytona %s %s",
                       config_string (ds->cfg, "daytona.snapshot") ? "snapshot" : "image",
                       config_string (ds->cfg, "daytona.snapshot")
                           ? config_string (ds->cfg, "daytona.snapshot")
                           : config_string (ds->cfg, "daytona.image")) < 0)
        what = NULL;
      struct session_limits lim = {
        .timeout_sec = (uint32_t) config_int (ds->cfg, "exec.timeout"),
        .max_output_chars = (size_t) config_int (ds->cfg, "exec.max_output_chars"),
        .grace_ms = 2000,
        .spill_dir = d->dir, /* the daemon's runtime dir: 0700, ours */
        .spool_max = config_size (ds->cfg, "jobs.spool_max"),
        .spool_full_stops = !strcmp (config_string (ds->cfg, "jobs.on_spool_full"), "stop"),
        .keep_finished = FINISHED_COMMANDS_KEPT,
        .env = (const char *const *) env,
        .what = what,
        .memory_limit = !strcmp (ds->backend, "docker")  ? config_string (ds->cfg, "docker.memory")
                        : !strcmp (ds->backend, "local") ? config_string (ds->cfg, "local.memory")
                        : !strcmp (ds->backend, "singularity")
                            ? config_string (ds->cfg, "singularity.memory")
                        : !strcmp (ds->backend, "daytona")
                            ? config_string (ds->cfg, "daytona.memory")
                            : NULL,
      };
      s = session_open (name, bo.ops, bo.bs, bo.cwd, &lim, &err);
      free (what);
      free (bo.cwd);
    }
  if (!s)
    {
      send_error (c, id, orc == BACKEND_NOT_IMPLEMENTED ? "not_implemented" : "backend_error",
                  "%s", err ? err : "cannot open the session");
      goto out;
    }
  ds->s = s;
  /* Anything short of an isolated sandbox without a way to the host gets
   * the whole gate. */
  ds->host_access = !reach.isolated || reach.host_filesystem || reach.host_network;
  ds->mode = (enum gate_mode) mode;
  daemon_forget_lost (d, name);
  daemon_add (d, ds);
  cJSON *r = reply (id, true);
  cJSON_AddStringToObject (r, "session", name);
  cJSON_AddStringToObject (r, "backend", ds->backend);
  cJSON_AddStringToObject (r, "cwd", session_cwd (s));
  cJSON_AddBoolToObject (r, "host_access", ds->host_access);
  const char *why = backend_reach_reasons (bo.ops, bo.bs);
  if (why)
    cJSON_AddStringToObject (r, "host_access_why", why);
  const char *warning = backend_warning (bo.ops, bo.bs);
  if (warning)
    cJSON_AddItemToArray (cJSON_AddArrayToObject (r, "warnings"),
                          cJSON_CreateString (warning));
  cJSON_AddStringToObject (r, "approval", gate_mode_name (ds->mode));
  cJSON_AddStringToObject (r, "config_hash", ds->config_hash);
  cJSON_AddItemToObject (r, "posture", posture_json (ds, ds->mode));
  client_send (c, r);
  ds = NULL;
out:
  free_dsession (ds);
  free (real);
  free (err);
  config_env_free (env);
}

static void
op_close (struct daemon *d, struct client *c, const cJSON *req, const cJSON *id)
{
  bool bad = false;
  const char *name = want_string (c, req, id, "session", true, &bad);
  bool force = !bad && want_bool (c, req, id, "force", &bad);
  if (bad)
    return;
  struct dsession *s = daemon_find (d, name);
  if (!s && daemon_is_lost (d, name))
    daemon_forget_lost (d, name);
  else if (!s)
    return send_error (c, id, "no_session", "no session \"%s\"", name);
  else if (!force && !owner_may_use (c, s, req, id))
    return;
  else
    daemon_remove (d, s);
  client_send (c, reply (id, true));
}

static void
op_list (struct daemon *d, struct client *c, const cJSON *req, const cJSON *id)
{
  bool bad = false;
  const char *owner = want_string (c, req, id, "owner", false, &bad);
  if (bad)
    return;
  cJSON *r = reply (id, true);
  cJSON *arr = cJSON_AddArrayToObject (r, "sessions");
  long long now = session_now_ms ();
  for (struct dsession *s = d->sessions; s; s = s->next)
    {
      cJSON *o = cJSON_CreateObject ();
      cJSON_AddStringToObject (o, "session", s->name);
      cJSON_AddStringToObject (o, "backend", s->backend);
      cJSON_AddStringToObject (o, "state", session_busy (s->s) ? "busy" : "idle");
      cJSON_AddStringToObject (o, "cwd", session_cwd (s->s));
      cJSON_AddNumberToObject (o, "idle_ms", (double) (now - session_idle_since (s->s)));
      struct job_info jobs[256];
      cJSON_AddNumberToObject (o, "jobs", (double) session_jobs (s->s, jobs, 256));
      cJSON_AddStringToObject (o, "config_hash", s->config_hash);
      cJSON_AddItemToObject (o, "posture", posture_json (s, s->mode));
      cJSON_AddStringToObject (o, "access", !s->owner                                  ? "open"
                                            : owner && !strcmp (owner, s->owner) ? "yours"
                                            : s->shared                          ? "shared"
                                                                                 : "other");
      cJSON_AddItemToArray (arr, o);
    }
  for (size_t i = 0; i < d->nlost; i++)
    {
      cJSON *o = cJSON_CreateObject ();
      cJSON_AddStringToObject (o, "session", d->lost[i]);
      cJSON_AddStringToObject (o, "state", "lost");
      cJSON_AddItemToArray (arr, o);
    }
  client_send (c, r);
}

/* ---- exec ---- */

static void run_queue (struct session *s);

static const char *const state_names[] = { "running", "exited", "killed" };

static void
add_job (cJSON *o, const struct job_info *j)
{
  cJSON_AddNumberToObject (o, "job", j->id);
  cJSON_AddStringToObject (o, "command", j->command ? j->command : "");
  cJSON_AddStringToObject (o, "state", state_names[j->state]);
  if (j->state == JOB_RUNNING || j->cause == JOB_END_LOST)
    cJSON_AddNullToObject (o, "exit_code");
  else
    cJSON_AddNumberToObject (o, "exit_code", j->exit_code);
  if (j->state == JOB_RUNNING)
    cJSON_AddNullToObject (o, "cause");
  else
    cJSON_AddStringToObject (o, "cause", session_job_end_name (j->cause));
  if (j->lost)
    cJSON_AddStringToObject (o, "error", j->lost);
  if (j->spool_error)
    cJSON_AddStringToObject (o, "spool_error", j->spool_error);
  if (j->kill_pending)
    cJSON_AddTrueToObject (o, "kill_pending");
  if (j->pty)
    cJSON_AddTrueToObject (o, "pty"); /* for attach: keys and a window, or output only */
}

static void
free_pending (struct pending *p)
{
  cJSON_Delete (p->id);
  cJSON_Delete (p->posture);
  free (p);
}

/* The mode an exec is judged in: its own approval field, else the
 * session's (api_gate has checked the field). */
static enum gate_mode
exec_mode (const struct dsession *s, const cJSON *req)
{
  const cJSON *m = cJSON_GetObjectItemCaseSensitive (req, "approval");
  int v = cJSON_IsString (m) ? gate_mode_parse (m->valuestring) : -1;
  return v < 0 ? s->mode : (enum gate_mode) v;
}

static void
unlink_pending (struct pending *p)
{
  for (struct pending **q = &pendings; *q; q = &(*q)->next)
    if (*q == p)
      {
        *q = p->next;
        break;
      }
  cJSON_Delete (p->result);
  spool_unref (p->spool);
  free_pending (p);
}

/* Where a client that has everything so far would resume (job_output,
 * attach): before any character still held back. */
static uint64_t
next_offset (const struct pending *p)
{
  uint64_t at = p->cur.offset;
  for (int k = 0; k < 2; k++)
    if (p->carry_len[k] && p->carry_at[k] < at)
      at = p->carry_at[k];
  return at;
}

static void
send_output (struct pending *p, int stream, const unsigned char *raw, size_t n)
{
  char *text = NULL;
  size_t len = output_window_sanitize_utf8 (raw, n, &text);
  if (text && len)
    {
      cJSON *ev = cJSON_CreateObject ();
      cJSON_AddItemToObject (ev, "id", cJSON_Duplicate (p->id, true));
      cJSON_AddStringToObject (ev, "event", "output");
      cJSON_AddStringToObject (ev, "stream", stream == 2 ? "stderr" : "stdout");
      cJSON_AddStringToObject (ev, "data", text);
      cJSON_AddNumberToObject (ev, "next_offset", (double) next_offset (p));
      client_send (p->c, ev);
    }
  free (text);
}

/* The end of an attach: how the job ended, as far as it has. */
static cJSON *
attach_end (struct pending *p)
{
  struct job_info j;
  if (session_job_info (p->s, p->job, &j) < 0)
    {
      cJSON *r = reply (p->id, false);
      cJSON *e = cJSON_AddObjectToObject (r, "error");
      cJSON_AddStringToObject (e, "code", "no_job");
      cJSON_AddStringToObject (e, "message", "the job is gone (pruned)");
      return r;
    }
  if (j.state == JOB_RUNNING)
    return NULL;
  cJSON *r = reply (p->id, true);
  cJSON_AddStringToObject (r, "event", "end");
  add_job (r, &j);
  return r;
}

/* Send what the client can take now of the job's output, and its final
 * answer once all the output before it is out. */
static void
pump (struct pending *p)
{
  static unsigned char buf[STREAM_CHUNK + 4];
  while (client_queued (p->c) < STREAM_QUEUE_MAX)
    {
      int stream = 1;
      ssize_t n = spool_read_labelled (p->spool, &p->cur, buf + 4, STREAM_CHUNK, &stream);
      if (n < 0)
        {
          /* Never a silent gap: say so, and go on from the end. */
          char *m = xprintf ("airlock: the output from byte %llu on could not "
                             "be read from %s: %s\n",
                             (unsigned long long) p->cur.offset,
                             spool_path (p->spool), strerror (errno));
          p->cur = spool_cursor_at (p->spool, spool_size (p->spool));
          if (m)
            send_output (p, 2, (const unsigned char *) m, strlen (m));
          free (m);
          continue;
        }
      if (n == 0)
        break;
      int k = stream - 1;
      /* The held-back start of a character goes before the new bytes. */
      size_t held = p->carry_len[k];
      unsigned char *chunk = buf + 4 - held;
      memcpy (chunk, p->carry[k], held);
      size_t total = held + (size_t) n;
      size_t whole = output_window_complete_utf8 (chunk, total);
      p->carry_len[k] = total - whole;
      memcpy (p->carry[k], chunk + whole, p->carry_len[k]);
      if (p->carry_len[k] && !held)
        p->carry_at[k] = p->cur.offset - p->carry_len[k];
      send_output (p, stream, chunk, whole);
    }
  if (p->e || !spool_finished (p->spool) || p->cur.offset < spool_size (p->spool)
      || client_queued (p->c) >= STREAM_QUEUE_MAX)
    return;
  if (p->attach && !p->result)
    p->result = attach_end (p);
  if (!p->result)
    return;
  /* Characters cut short at the very end: shown as such. */
  for (int k = 0; k < 2; k++)
    if (p->carry_len[k])
      {
        size_t held = p->carry_len[k];
        p->carry_len[k] = 0;
        send_output (p, k + 1, p->carry[k], held);
      }
  if (p->attach)
    cJSON_AddNumberToObject (p->result, "next_offset", (double) p->cur.offset);
  client_send (p->c, p->result);
  p->result = NULL;
  unlink_pending (p);
}

static void
on_output (void *ctx, struct session_exec *e)
{
  (void) e;
  pump (ctx);
}

static void
on_done (void *ctx, struct session_exec *e, const struct exec_result *res)
{
  (void) e;
  struct pending *p = ctx;
  bool lost = res->cause == JOB_END_LOST;
  cJSON *r = reply (p->id, !lost);
  cJSON_AddStringToObject (r, "event", "result");
  if (lost)
    {
      /* The backend lost the command: an error, never an exit code. */
      cJSON *err = cJSON_AddObjectToObject (r, "error");
      cJSON_AddStringToObject (err, "code", "job_lost");
      cJSON_AddStringToObject (err, "message", res->lost ? res->lost : "lost");
      cJSON_AddNullToObject (r, "exit_code");
    }
  else
    cJSON_AddNumberToObject (r, "exit_code", res->exit_code);
  cJSON_AddNumberToObject (r, "job", res->job);
  cJSON_AddStringToObject (r, "cause", session_job_end_name (res->cause));
  cJSON_AddStringToObject (r, "stdout", res->stdout_text ? res->stdout_text : "");
  cJSON_AddStringToObject (r, "stderr", res->stderr_text ? res->stderr_text : "");
  cJSON_AddStringToObject (r, "output", res->output ? res->output : "");
  cJSON_AddBoolToObject (r, "truncated", res->truncated);
  if (res->spill_path)
    cJSON_AddStringToObject (r, "spill_path", res->spill_path);
  else
    cJSON_AddNullToObject (r, "spill_path");
  if (res->spool_error)
    cJSON_AddStringToObject (r, "spool_error", res->spool_error);
  else
    cJSON_AddNullToObject (r, "spool_error");
  cJSON_AddStringToObject (r, "cwd", res->cwd ? res->cwd : "");
  cJSON_AddNumberToObject (r, "duration_ms", (double) res->duration_ms);
  cJSON_AddBoolToObject (r, "timed_out", res->timed_out);
  cJSON_AddBoolToObject (r, "interrupted", res->interrupted);
  cJSON_AddBoolToObject (r, "oom_killed", res->oom_killed);
  if (res->kill_pending)
    cJSON_AddTrueToObject (r, "kill_pending");
  cJSON_AddItemToObject (r, "posture", p->posture);
  p->posture = NULL;
  p->result = r;
  p->e = NULL;
  struct session *sess = p->s;
  pump (p);
  run_queue (sess);
}

static const struct session_callbacks exec_callbacks = { on_output, on_done };

/* exec's "pty": {"rows", "cols", "term"}, each optional (24x80,
 * xterm-256color), nothing else.  False when absent or bad (*bad). */
static bool
want_pty (struct client *c, const cJSON *req, const cJSON *id,
          struct backend_pty *pty, bool *bad)
{
  const cJSON *o = cJSON_GetObjectItemCaseSensitive (req, "pty");
  if (!o)
    return false;
  *pty = (struct backend_pty){ .rows = 24, .cols = 80, .term = "xterm-256color" };
  if (!cJSON_IsObject (o))
    {
      send_error (c, id, "wrong_type", "field \"pty\" must be an object "
                  "({\"rows\", \"cols\", \"term\"}, each optional)");
      return !(*bad = true);
    }
  const cJSON *f;
  cJSON_ArrayForEach (f, o)
    if (strcmp (f->string, "rows") && strcmp (f->string, "cols")
        && strcmp (f->string, "term"))
      {
        send_error (c, id, "unknown_field", "unknown field \"%.64s\" in \"pty\" "
                    "(it takes: rows, cols, term)", f->string);
        return !(*bad = true);
      }
  double rows = want_number (c, o, id, "rows", 24, 1, SUP_MAX_PTY_SIDE, bad);
  double cols = *bad ? 0 : want_number (c, o, id, "cols", 80, 1, SUP_MAX_PTY_SIDE, bad);
  const char *term = *bad ? NULL : want_string (c, o, id, "term", false, bad);
  if (*bad)
    return false;
  if (rows != (unsigned) rows || cols != (unsigned) cols)
    {
      send_error (c, id, "wrong_type", "\"rows\" and \"cols\" of \"pty\" must be "
                  "whole numbers");
      return !(*bad = true);
    }
  if (term && !sup_term_ok (term))
    {
      send_error (c, id, "bad_request", "\"term\" of \"pty\" must be a name of 1 "
                  "to %d letters, digits and . _ + -", SUP_MAX_TERM);
      return !(*bad = true);
    }
  pty->rows = (unsigned) rows;
  pty->cols = (unsigned) cols;
  if (term)
    pty->term = term;
  return true;
}

static void
op_exec (struct daemon *d, struct client *c, const cJSON *req, const cJSON *id,
         bool gated)
{
  bool bad = false;
  struct dsession *s = want_session (d, c, req, id, &bad);
  const char *command = bad ? NULL : want_string (c, req, id, "command", true, &bad);
  const char *cwd = bad ? NULL : want_string (c, req, id, "cwd", false, &bad);
  const char *in = bad ? NULL : want_string (c, req, id, "stdin", false, &bad);
  double timeout = bad ? 0 : want_number (c, req, id, "timeout", 0, 0.001, 86400, &bad);
  bool background = !bad && want_bool (c, req, id, "background", &bad);
  struct backend_pty pty;
  bool on_pty = !bad && want_pty (c, req, id, &pty, &bad);
  char **env = bad ? NULL : want_env (c, req, id, &bad);
  if (bad)
    return;
  config_env_free (env); /* checked now; taken again when it starts */
  if (cwd && cwd[0] != '/')
    return send_error (c, id, "bad_request", "cwd must be an absolute path");
  /* The approval gate, before anything runs or waits its turn. */
  if (!gated)
    {
      char *shown = NULL;
      if (in && *in && asprintf (&shown, "%s  # stdin: %.200s%s", command, in,
                                 strlen (in) > 200 ? "..." : "") < 0)
        shown = NULL;
      bool go = api_gate (d, s, c, req, id, command, in, shown ? shown : command);
      free (shown);
      if (!go)
        return;
    }
  if (!background && session_busy_foreground (s->s))
    {
      struct queued *q = calloc (1, sizeof *q), **tail = &s->queue;
      if (!q)
        return send_error (c, id, "busy", "out of memory");
      q->c = c;
      q->gated = true;
      q->req = cJSON_Duplicate (req, true);
      while (*tail)
        tail = &(*tail)->next;
      *tail = q;
      return;
    }
  env = want_env (c, req, id, &bad);
  struct exec_request rq = { .command = command, .cwd = cwd, .stdin_data = in,
                             .stdin_len = in ? strlen (in) : 0,
                             /* at least 1 ms: 0 would mean the default */
                             .timeout_ms = timeout > 0 && timeout < 0.001 ? 1
                                           : (uint64_t) (timeout * 1000 + 0.5),
                             .background = background,
                             .env = (const char *const *) env,
                             .pty = on_pty ? &pty : NULL };
  struct pending *p = NULL;
  if (!background)
    {
      p = calloc (1, sizeof *p);
      if (!p)
        {
          config_env_free (env);
          return send_error (c, id, "busy", "out of memory");
        }
      p->c = c;
      p->id = id ? cJSON_Duplicate (id, true) : cJSON_CreateNull ();
      p->posture = posture_json (s, exec_mode (s, req));
    }
  char *err = NULL;
  uint32_t job = 0;
  struct session_exec *e = NULL;
  int rc = session_exec (s->s, &rq, background ? NULL : &exec_callbacks, p, &e, &job, &err);
  config_env_free (env);
  if (rc < 0)
    {
      send_error (c, id, rc == -EBUSY ? "busy" : rc == -ENOTSUP ? "not_supported"
                  : "backend_error", "%s", err ? err : strerror (-rc));
      free (err);
      if (p)
        free_pending (p);
      return;
    }
  if (background)
    {
      cJSON *r = reply (id, true);
      cJSON_AddNumberToObject (r, "job", job);
      cJSON_AddItemToObject (r, "posture", posture_json (s, exec_mode (s, req)));
      return client_send (c, r);
    }
  p->e = e;
  p->s = s->s;
  p->job = job;
  p->spool = spool_ref (session_exec_spool (e));
  p->next = pendings;
  pendings = p;
  /* The job's id first: a client that loses its connection can come
   * back for the rest (attach, job_output) by it. */
  cJSON *ev = reply (id, true);
  cJSON_AddStringToObject (ev, "event", "started");
  cJSON_AddNumberToObject (ev, "job", job);
  client_send (c, ev);
}

/* attach: the output of a job (running or finished) from an offset, live
 * as it comes, then its end. */
static void
op_attach (struct daemon *d, struct client *c, const cJSON *req, const cJSON *id)
{
  bool bad = false;
  struct dsession *s = want_session (d, c, req, id, &bad);
  uint32_t job = bad ? 0 : (uint32_t) want_number (c, req, id, "job", 0, 1, 1e9, &bad);
  double off = bad ? 0 : want_number (c, req, id, "offset", 0, 0, 9e15, &bad);
  if (bad)
    return;
  if (!cJSON_GetObjectItemCaseSensitive (req, "job"))
    return send_error (c, id, "missing_field", "field \"job\" is required");
  struct spool *sp = session_job_spool (s->s, job);
  if (!sp)
    return send_error (c, id, "no_job", "no job %u in this session", job);
  struct pending *p = calloc (1, sizeof *p);
  if (!p)
    {
      spool_unref (sp);
      return send_error (c, id, "busy", "out of memory");
    }
  p->c = c;
  p->id = id ? cJSON_Duplicate (id, true) : cJSON_CreateNull ();
  p->s = s->s;
  p->job = job;
  p->attach = true;
  p->spool = sp;
  p->cur = spool_cursor_at (sp, (uint64_t) off);
  p->next = pendings;
  pendings = p;
  pump (p);
}

static void
op_interrupt (struct daemon *d, struct client *c, const cJSON *req,
              const cJSON *id)
{
  bool bad = false;
  struct dsession *s = want_session (d, c, req, id, &bad);
  if (bad)
    return;
  bool any = false;
  for (struct pending *p = pendings; p; p = p->next)
    if (p->e && p->s == s->s)
      {
        session_interrupt (p->e);
        any = true;
      }
  cJSON *r = reply (id, true);
  cJSON_AddBoolToObject (r, "interrupted", any);
  client_send (c, r);
}

/* ---- background jobs ---- */


/* Data for a job's stdin is judged like a command when the job runs a
 * shell or interpreter that would execute it. */
static bool
gate_job_stdin (struct daemon *d, struct dsession *s, struct client *c,
                const cJSON *req, const cJSON *id, uint32_t job,
                const char *data)
{
  struct job_info jobs[256];
  size_t n = session_jobs (s->s, jobs, 256);
  const char *command = NULL;
  for (size_t i = 0; i < n; i++)
    if (jobs[i].id == job)
      /* Keys typed on a terminal are data: its interpreter was judged
       * at its exec (GATE_TERMINAL_RULE). */
      command = jobs[i].pty ? NULL : jobs[i].command;
  if (!command || !*data)
    return true; /* no such job (op_job answers that), or a terminal's */
  char *shown = NULL;
  if (asprintf (&shown, "stdin of job %u (%s): %s", job, command, data) < 0)
    return false;
  bool go = api_gate (d, s, c, req, id, command, data, shown);
  free (shown);
  return go;
}

/* job_wait: an answer once the job is not running, or its timeout is
 * over; nothing polls (the daemon's loop checks after session events). */
struct wait {
  struct client *c;
  cJSON *id;
  struct session *s;
  uint32_t job;
  long long deadline; /* -1: none */
  struct wait *next;
};
static struct wait *waits;

static bool
job_state (struct session *s, uint32_t job, struct job_info *out)
{
  return session_job_info (s, job, out) == 0;
}

static void
answer_wait (struct client *c, const cJSON *id, const struct job_info *j,
             bool timed_out)
{
  cJSON *r = reply (id, true);
  add_job (r, j);
  cJSON_AddNumberToObject (r, "output_bytes", (double) j->output_bytes);
  cJSON_AddBoolToObject (r, "timed_out", timed_out);
  client_send (c, r);
}

static void
job_wait (struct client *c, struct dsession *s, const cJSON *id, uint32_t job,
          double timeout, bool bad)
{
  if (bad)
    return;
  struct job_info j;
  if (!job_state (s->s, job, &j))
    return send_error (c, id, "no_job", "no job %u in this session", job);
  if (j.state != JOB_RUNNING || timeout == 0)
    return answer_wait (c, id, &j, j.state == JOB_RUNNING);
  struct wait *w = calloc (1, sizeof *w);
  if (!w)
    return send_error (c, id, "busy", "out of memory");
  w->c = c;
  w->id = id ? cJSON_Duplicate (id, true) : NULL;
  w->s = s->s;
  w->job = job;
  w->deadline = timeout < 0 ? -1 : session_now_ms () + (long long) (timeout * 1000 + 0.5);
  w->next = waits;
  waits = w;
}

static void
drop_wait (struct wait **at)
{
  struct wait *w = *at;
  *at = w->next;
  cJSON_Delete (w->id);
  free (w);
}

long long
api_next_deadline (void)
{
  long long best = files_next_deadline ();
  for (struct wait *w = waits; w; w = w->next)
    if (w->deadline >= 0 && (best < 0 || w->deadline < best))
      best = w->deadline;
  return best;
}

void
api_waits_tick (struct daemon *d)
{
  (void) d;
  files_tick ();
  /* Clients following output: what their connections can take now. */
  for (struct pending *p = pendings, *next; p; p = next)
    {
      next = p->next;
      pump (p);
    }
  long long now = session_now_ms ();
  for (struct wait **at = &waits; *at;)
    {
      struct wait *w = *at;
      struct job_info j;
      if (!job_state (w->s, w->job, &j))
        {
          send_error (w->c, w->id, "no_job", "job %u is gone (pruned)", w->job);
          drop_wait (at);
        }
      else if (j.state != JOB_RUNNING || (w->deadline >= 0 && now >= w->deadline))
        {
          answer_wait (w->c, w->id, &j, j.state == JOB_RUNNING);
          drop_wait (at);
        }
      else
        at = &w->next;
    }
}

static void
op_job (struct daemon *d, struct client *c, const char *op, const cJSON *req,
        const cJSON *id, bool gated)
{
  bool bad = false;
  struct dsession *s = want_session (d, c, req, id, &bad);
  if (bad)
    return;
  if (!strcmp (op, "jobs"))
    {
      struct job_info jobs[256];
      size_t n = session_jobs (s->s, jobs, 256);
      cJSON *r = reply (id, true);
      cJSON *arr = cJSON_AddArrayToObject (r, "jobs");
      for (size_t i = 0; i < n; i++)
        {
          cJSON *o = cJSON_CreateObject ();
          add_job (o, &jobs[i]);
          cJSON_AddItemToArray (arr, o);
        }
      return client_send (c, r);
    }
  uint32_t job = (uint32_t) want_number (c, req, id, "job", 0, 1, 1e9, &bad);
  if (bad)
    return;
  if (!cJSON_GetObjectItemCaseSensitive (req, "job"))
    return send_error (c, id, "missing_field", "field \"job\" is required");
  if (!strcmp (op, "job_wait"))
    return job_wait (c, s, id, job, want_number (c, req, id, "timeout", -1, 0, 86400, &bad),
                     bad);
  int rc;
  cJSON *r = reply (id, true);
  if (!strcmp (op, "job_output"))
    {
      double off = want_number (c, req, id, "offset", 0, 0, 9e15, &bad);
      if (bad)
        return cJSON_Delete (r);
      char *data = NULL;
      size_t len = 0;
      struct job_info info;
      rc = session_job_read (s->s, job, (uint64_t) off, JOB_READ_MAX, &data, &len, &info);
      if (rc == 0)
        {
          char *copy = strndup (data ? data : "", len);
          cJSON_AddStringToObject (r, "data", copy ? copy : "");
          free (copy);
          cJSON_AddNumberToObject (r, "next_offset", (double) info.output_bytes);
          add_job (r, &info);
        }
      free (data);
    }
  else if (!strcmp (op, "job_stdin"))
    {
      const char *data = want_string (c, req, id, "data", true, &bad);
      bool eof = !bad && want_bool (c, req, id, "eof", &bad);
      if (bad)
        return cJSON_Delete (r);
      if (!gated && !gate_job_stdin (d, s, c, req, id, job, data))
        return cJSON_Delete (r);
      rc = session_job_write (s->s, job, data, strlen (data), eof);
    }
  else if (!strcmp (op, "resize"))
    {
      double rows = want_number (c, req, id, "rows", 0, 1, SUP_MAX_PTY_SIDE, &bad);
      double cols = bad ? 0 : want_number (c, req, id, "cols", 0, 1, SUP_MAX_PTY_SIDE, &bad);
      if (!bad && (!cJSON_GetObjectItemCaseSensitive (req, "rows")
                   || !cJSON_GetObjectItemCaseSensitive (req, "cols")))
        {
          bad = true;
          send_error (c, id, "missing_field", "fields \"rows\" and \"cols\" are required");
        }
      if (bad)
        return cJSON_Delete (r);
      rc = session_job_resize (s->s, job, (unsigned) rows, (unsigned) cols);
      if (rc == -ENOTTY)
        {
          cJSON_Delete (r);
          return send_error (c, id, "bad_request", "job %u does not run on a terminal "
                             "(exec with \"pty\")", job);
        }
    }
  else
    rc = session_job_kill (s->s, job);
  if (rc < 0)
    {
      cJSON_Delete (r);
      return send_error (c, id, rc == -ENOENT ? "no_job" : "job_error",
                         rc == -ENOENT ? "no job %u in this session"
                         : rc == -ESRCH ? "job %u is not running, or its stdin is closed"
                                        : "job %u: the operation failed", job);
    }
  client_send (c, r);
}

/* ---- dispatch ---- */

/* Start the next waiting command of the session whose exec just ended. */
static void
run_queue (struct session *sess)
{
  struct daemon *d = the_daemon;
  for (struct dsession *ds = d ? d->sessions : NULL; ds; ds = ds->next)
    if (ds->s == sess && ds->queue && !session_busy_foreground (sess))
      {
        struct queued *q = ds->queue;
        ds->queue = q->next;
        op_exec (d, q->c, q->req, cJSON_GetObjectItemCaseSensitive (q->req, "id"),
                 q->gated);
        cJSON_Delete (q->req);
        free (q);
        return;
      }
}

/* The fields each operation takes, besides id and op: any other is an
 * error, never silently ignored (a typo'd timeout must not run with the
 * default). */
static const struct
{
  const char *op;
  const char *const fields[16];
} op_fields[] = {
  { "ping", { NULL } },
  { "status", { NULL } },
  { "shutdown", { NULL } },
  { "open", { "session", "workdir", "backend", "image", "network", "memory", "host",
              "approval", "config", "client_env", "env", "idle_timeout", "owner", "share",
              NULL } },
  { "close", { "session", "owner", "force", NULL } },
  { "list", { "owner", NULL } },
  { "exec", { "session", "command", "cwd", "stdin", "timeout", "background", "env",
              "pty", "approval", "owner", NULL } },
  { "answer", { "approval", "answer", NULL } },
  { "judge", { "command", "approval", "answer", "client_env", NULL } },
  { "interrupt", { "session", "owner", NULL } },
  { "jobs", { "session", "owner", NULL } },
  { "job_output", { "session", "job", "offset", "owner", NULL } },
  { "job_stdin", { "session", "job", "data", "eof", "owner", NULL } },
  { "job_wait", { "session", "job", "timeout", "owner", NULL } },
  { "kill", { "session", "job", "owner", NULL } },
  { "resize", { "session", "job", "rows", "cols", "owner", NULL } },
  { "attach", { "session", "job", "offset", "owner", NULL } },
  { "upload", { "session", "path", "source", "data", "mode", "timeout", "owner", NULL } },
  { "download", { "session", "path", "dest", "timeout", "owner", NULL } },
  { "cache", { "action", "image", "all", "client_env", NULL } },
};

static bool
known_fields (struct client *c, const cJSON *req, const cJSON *id, const char *op)
{
  size_t i = 0, n = sizeof op_fields / sizeof op_fields[0];
  while (i < n && strcmp (op_fields[i].op, op))
    i++;
  if (i == n)
    {
      send_error (c, id, "unknown_op", "unknown op \"%s\"", op);
      return false;
    }
  const cJSON *f;
  cJSON_ArrayForEach (f, req)
    {
      bool known = !strcmp (f->string, "id") || !strcmp (f->string, "op");
      for (const char *const *k = op_fields[i].fields; !known && *k; k++)
        known = !strcmp (*k, f->string);
      if (!known)
        {
          char list[256] = "";
          for (const char *const *k = op_fields[i].fields; *k; k++)
            snprintf (list + strlen (list), sizeof list - strlen (list), "%s%s",
                      *list ? ", " : "", *k);
          send_error (c, id, "unknown_field",
                      "unknown field \"%.64s\" for op \"%s\" (%s%s)", f->string, op,
                      *list ? "it takes: " : "it takes no other fields", list);
          return false;
        }
      for (const cJSON *g = f->next; g; g = g->next)
        if (!strcmp (g->string, f->string))
          {
            send_error (c, id, "bad_request", "field \"%.64s\" is given twice",
                        f->string);
            return false;
          }
    }
  return true;
}

static void
op_status (struct daemon *d, struct client *c, const cJSON *id)
{
  cJSON *r = reply (id, true);
  cJSON_AddNumberToObject (r, "pid", (double) getpid ());
  cJSON_AddStringToObject (r, "version", AIRLOCK_VERSION);
  cJSON_AddStringToObject (r, "runtime_dir", d->dir);
  cJSON_AddNumberToObject (r, "uptime_ms", (double) (session_now_ms () - d->started_ms));
  size_t n = 0;
  for (struct dsession *s = d->sessions; s; s = s->next)
    n++;
  cJSON_AddNumberToObject (r, "sessions", (double) n);
  size_t clients = 0;
  for (size_t i = 0; i < MAX_CLIENTS; i++)
    clients += d->clients[i] != NULL;
  cJSON_AddNumberToObject (r, "clients", (double) clients);
  cJSON_AddNumberToObject (r, "idle_exit_s", d->idle_exit_sec);
  client_send (c, r);
}

void
api_handle (struct daemon *d, struct client *c, const char *line, size_t len)
{
  the_daemon = d;
  while (len && (line[len - 1] == '\r' || line[len - 1] == ' '))
    len--;
  if (len == 0)
    return;
  const char *end = NULL;
  cJSON *req = cJSON_ParseWithLengthOpts (line, len, &end, false);
  if (!req)
    return send_error (c, NULL, "bad_json", "malformed JSON near byte %ld",
                       end ? (long) (end - line) : 0L);
  while (end && end < line + len && (*end == ' ' || *end == '\t'))
    end++;
  if (end && end < line + len)
    {
      cJSON_Delete (req);
      return send_error (c, NULL, "bad_json",
                         "one JSON object per line: more follows at byte %ld",
                         (long) (end - line));
    }
  const cJSON *id = cJSON_GetObjectItemCaseSensitive (req, "id");
  const cJSON *op = cJSON_GetObjectItemCaseSensitive (req, "op");
  if (!cJSON_IsObject (req))
    send_error (c, NULL, "bad_request", "a request is a JSON object");
  else if (!op)
    send_error (c, id, "missing_field", "field \"op\" is required");
  else if (!cJSON_IsString (op))
    send_error (c, id, "wrong_type", "field \"op\" must be a string");
  else if (!known_fields (c, req, id, op->valuestring))
    ;
  else if (!strcmp (op->valuestring, "ping"))
    client_send (c, reply (id, true));
  else if (!strcmp (op->valuestring, "status"))
    op_status (d, c, id);
  else if (!strcmp (op->valuestring, "shutdown"))
    {
      client_send (c, reply (id, true));
      d->stop = true;
    }
  else if (!strcmp (op->valuestring, "open"))
    op_open (d, c, req, id);
  else if (!strcmp (op->valuestring, "close"))
    op_close (d, c, req, id);
  else if (!strcmp (op->valuestring, "list"))
    op_list (d, c, req, id);
  else if (!strcmp (op->valuestring, "exec"))
    op_exec (d, c, req, id, false);
  else if (!strcmp (op->valuestring, "answer"))
    api_op_answer (d, c, req, id);
  else if (!strcmp (op->valuestring, "judge"))
    api_op_judge (d, c, req, id);
  else if (!strcmp (op->valuestring, "interrupt"))
    op_interrupt (d, c, req, id);
  else if (!strcmp (op->valuestring, "attach"))
    op_attach (d, c, req, id);
  else if (!strcmp (op->valuestring, "jobs") || !strcmp (op->valuestring, "job_output")
           || !strcmp (op->valuestring, "job_stdin") || !strcmp (op->valuestring, "kill")
           || !strcmp (op->valuestring, "job_wait") || !strcmp (op->valuestring, "resize"))
    op_job (d, c, op->valuestring, req, id, false);
  else if (!strcmp (op->valuestring, "upload") || !strcmp (op->valuestring, "download"))
    api_op_files (d, c, op->valuestring, req, id);
  else if (!strcmp (op->valuestring, "cache"))
    api_op_cache (d, c, req, id);
  cJSON_Delete (req);
}

void
api_resume_approved (struct daemon *d, struct client *c, const cJSON *req,
                     const cJSON *id)
{
  const cJSON *op = cJSON_GetObjectItemCaseSensitive (req, "op");
  if (!strcmp (op->valuestring, "exec"))
    op_exec (d, c, req, id, true);
  else
    op_job (d, c, op->valuestring, req, id, true);
}

void
api_client_gone (struct daemon *d, struct client *c)
{
  api_approval_client_gone (d, c);
  api_files_client_gone (c);
  for (struct dsession *ds = d->sessions; ds; ds = ds->next)
    for (struct queued **q = &ds->queue; *q;)
      if ((*q)->c == c)
        {
          struct queued *gone = *q;
          *q = gone->next;
          cJSON_Delete (gone->req);
          free (gone);
        }
      else
        q = &(*q)->next;
  /* Its foreground commands are interrupted, or go on as background jobs
   * (jobs.on_client_gone); nothing more is sent to it. */
  for (struct pending *p = pendings, *next; p; p = next)
    {
      next = p->next;
      if (p->c != c)
        continue;
      if (p->e)
        {
          const char *keep = NULL;
          for (struct dsession *ds = d->sessions; ds; ds = ds->next)
            if (ds->s == p->s)
              keep = config_string (ds->cfg, "jobs.on_client_gone");
          session_exec_detach (p->e, keep && !strcmp (keep, "background"));
        }
      unlink_pending (p);
    }
  for (struct wait **w = &waits; *w;)
    if ((*w)->c == c)
      drop_wait (w);
    else
      w = &(*w)->next;
}

bool
api_client_waiting (struct daemon *d, struct client *c)
{
  if (api_approval_waiting (c) || api_files_waiting (c))
    return true;
  for (struct pending *p = pendings; p; p = p->next)
    if (p->c == c)
      return true;
  for (struct wait *w = waits; w; w = w->next)
    if (w->c == c)
      return true;
  for (struct dsession *ds = d->sessions; ds; ds = ds->next)
    for (struct queued *q = ds->queue; q; q = q->next)
      if (q->c == c)
        return true;
  return false;
}

void
api_session_gone (struct session *s, const char *why)
{
  if (the_daemon)
    api_approval_session_gone (the_daemon, s);
  files_session_gone (s, why);
  for (struct dsession *ds = the_daemon ? the_daemon->sessions : NULL; ds; ds = ds->next)
    while (ds->s == s && ds->queue)
      {
        struct queued *q = ds->queue;
        ds->queue = q->next;
        send_error (q->c, cJSON_GetObjectItemCaseSensitive (q->req, "id"),
                    "session_lost", "%s", why);
        cJSON_Delete (q->req);
        free (q);
      }
  for (struct wait **w = &waits; *w;)
    if ((*w)->s == s)
      {
        send_error ((*w)->c, (*w)->id, "session_lost", "%s", why);
        drop_wait (w);
      }
    else
      w = &(*w)->next;
  for (struct pending *p = pendings, *next; p; p = next)
    {
      next = p->next;
      if (p->s != s || (!p->e && !p->attach))
        continue; /* a finished command's output and result still go out */
      if (p->e)
        session_exec_detach (p->e, true); /* its sandbox goes anyway */
      send_error (p->c, p->id, "session_lost", "%s", why);
      unlink_pending (p);
    }
}
