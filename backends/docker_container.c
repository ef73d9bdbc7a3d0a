/* SPDX-License-Identifier: MIT */
/* The container of a docker session (see docker_container.h).
 *
 * Hardening, always: the caller's own uid:gid (root only when docker.user
 * says so, with a warning), every capability dropped (only docker.cap_add
 * comes back), no-new-privileges, airlock's own seccomp baseline
 * (docker_seccomp.c) instead of the engine's default, tmpfs /tmp,
 * /var/tmp and /run with nosuid and nodev and a size, a pids limit,
 * our supervisor as pid 1 (it runs the session's commands, see
 * docker_session.c), no network unless configured, a
 * read-only root filesystem when docker.read_only_rootfs says so, mounts
 * given as Mounts (a missing bind source is an error, never a directory
 * docker creates as root).  The supervisor is copied into an anonymous
 * volume of its own (removed with the container), which a read-only root
 * filesystem still accepts; the directory of its socket is bound
 * read-only.
 * Environment values travel in the create body only, never on a command
 * line.
 *
 * The config hash (label airlock.config-hash) is FNV-1a 64 over the create
 * request and the supervisor binary copied in.  It is no security
 * boundary (anyone who can write labels can use the socket, which is
 * root): a mismatch only means "replace rather than reuse". */
#define _GNU_SOURCE
#include "docker_container.h"

#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>

#include "docker_risk.h"
#include "docker_seccomp.h"
#include "fnv1a.h"
#include "protected_paths.h"
#include "supervisor_protocol.h"
#include "xprintf.h"

#define SUPERVISOR_MAX (64 << 20)

/* ---- the supervisor, as a one-file tar archive ---- */

static void
octal (char *field, size_t size, unsigned long long v)
{
  snprintf (field, size, "%0*llo", (int) size - 1, v);
}

static int
load_supervisor_tar (struct docker_container *c, const char *path, char **err)
{
  int fd = open (path, O_RDONLY | O_CLOEXEC);
  struct stat st;
  if (fd < 0 || fstat (fd, &st) < 0 || !S_ISREG (st.st_mode)
      || st.st_size <= 0 || st.st_size > SUPERVISOR_MAX)
    {
      *err = xprintf ("cannot read the supervisor %s: %s (set "
                      "AIRLOCK_SUPERVISOR or reinstall airlock)", path,
                      fd < 0 ? strerror (errno) : "not a regular file of sane size");
      if (fd >= 0)
        close (fd);
      return -1;
    }
  size_t size = (size_t) st.st_size;
  size_t padded = (size + 511) / 512 * 512;
  c->tar_len = 512 + padded + 1024; /* header, data, two zero blocks */
  c->tar = calloc (1, c->tar_len);
  if (!c->tar)
    {
      close (fd);
      *err = xprintf ("out of memory");
      return -1;
    }
  char *h = (char *) c->tar;
  /* ustar: name, mode, uid, gid, size, mtime, checksum, type, magic. */
  snprintf (h, 100, "%s", DOCKER_LEADER_PATH + sizeof DOCKER_LEADER_DIR);
  octal (h + 100, 8, 0755);
  octal (h + 108, 8, 0);
  octal (h + 116, 8, 0);
  octal (h + 124, 12, size);
  octal (h + 136, 12, 0);
  h[156] = '0';
  memcpy (h + 257, "ustar", 6);
  memcpy (h + 263, "00", 2);
  memset (h + 148, ' ', 8);
  unsigned sum = 0;
  for (int i = 0; i < 512; i++)
    sum += (unsigned char) h[i];
  snprintf (h + 148, 8, "%06o", sum);
  for (size_t off = 0; off < size;)
    {
      ssize_t n = read (fd, c->tar + 512 + off, size - off);
      if (n <= 0)
        {
          *err = xprintf ("cannot read the supervisor %s: %s", path,
                          n < 0 ? strerror (errno) : "it shrank");
          close (fd);
          return -1;
        }
      off += (size_t) n;
    }
  close (fd);
  return 0;
}

/* ---- mounts and their judgment ---- */

struct mount_spec {
  char *source, *target;
  bool read_only, host_path;
  char *driver;
  char **opts; /* K=V, NULL-terminated */
};

static void
free_mounts (struct mount_spec *m, size_t n)
{
  for (size_t i = 0; i < n; i++)
    {
      free (m[i].source);
      free (m[i].target);
      free (m[i].driver);
      for (char **o = m[i].opts; o && *o; o++)
        free (*o);
      free (m[i].opts);
    }
  free (m);
}

/* SOURCE:DEST[:ro|:rw]; a relative host path is taken from the workdir. */
static int
parse_volume (const char *spec, const char *workdir, struct mount_spec *m,
              char **err)
{
  char *s = strdup (spec);
  if (!s)
    return -1;
  size_t n = strlen (s);
  if (n > 3 && (!strcmp (s + n - 3, ":ro") || !strcmp (s + n - 3, ":rw")))
    {
      m->read_only = s[n - 2] == 'r' && s[n - 1] == 'o';
      s[n - 3] = '\0';
    }
  char *colon = strrchr (s, ':');
  if (!colon || colon == s || colon[1] != '/')
    {
      *err = xprintf ("docker.volumes: \"%s\" is not SOURCE:DEST[:ro] with an "
                      "absolute DEST", spec);
      free (s);
      return -1;
    }
  *colon = '\0';
  m->target = strdup (colon + 1);
  m->host_path = docker_source_is_host_path (s);
  if (m->host_path && s[0] != '/')
    {
      if (s[0] == '~' || (s[1] == ':' && (s[2] == '\\' || s[2] == '/')))
        {
          *err = xprintf ("docker.volumes: \"%s\": the source must be an "
                          "absolute path on this host", spec);
          free (s);
          return -1;
        }
      char *abs = xprintf ("%s/%s", workdir, s);
      free (s);
      s = abs;
    }
  if (m->host_path)
    {
      /* Symlinks resolved: what is judged is what gets mounted. */
      char *real = realpath (s, NULL);
      if (!real)
        {
          *err = xprintf ("docker.volumes: \"%s\": %s: %s", spec, s,
                          strerror (errno));
          free (s);
          return -1;
        }
      free (s);
      s = real;
    }
  m->source = s;
  return 0;
}

/* A named volume's driver and options, from GET /volumes/{name}. */
static int
inspect_volume (struct docker_engine *e, struct mount_spec *m, char **err)
{
  char *esc = curl_easy_escape (NULL, m->source, 0);
  char *path = esc ? xprintf ("/volumes/%s", esc) : NULL;
  curl_free (esc);
  struct docker_response r;
  int rc = path ? docker_call (e, "GET", path, NULL, &r, err) : -1;
  free (path);
  if (rc < 0)
    return -1;
  if (r.status == 404)
    {
      docker_response_free (&r); /* created at first use, plain local */
      return 0;
    }
  if (r.status != 200)
    {
      *err = xprintf ("cannot inspect volume %s: %s", m->source,
                      docker_response_message (&r));
      docker_response_free (&r);
      return -1;
    }
  const cJSON *drv = cJSON_GetObjectItemCaseSensitive (r.json, "Driver");
  const cJSON *opts = cJSON_GetObjectItemCaseSensitive (r.json, "Options");
  m->driver = strdup (cJSON_IsString (drv) ? drv->valuestring : "?");
  size_t n = 0;
  const cJSON *o;
  m->opts = calloc ((size_t) cJSON_GetArraySize (opts) + 1, sizeof *m->opts);
  cJSON_ArrayForEach (o, opts)
    if (m->opts && cJSON_IsString (o))
      m->opts[n++] = xprintf ("%s=%s", o->string, o->valuestring);
  docker_response_free (&r);
  return 0;
}

/* The socket is root on the host: a mount that exposes it needs the
 * administrator's consent, whatever the user configured. */
static int
refuse_socket (const struct mount_spec *m, const char *socket, bool allowed,
               char **err)
{
  const char *host = m->host_path ? m->source : NULL;
  bool bind = false;
  for (char **o = m->opts; o && *o; o++)
    if (!strncmp (*o, "device=", 7) && (*o)[7] == '/')
      host = *o + 7, bind = true;
  if (!host || allowed || !docker_path_exposes_socket (host, socket))
    return 0;
  *err = xprintf ("docker.volumes: %s %s exposes the Docker socket %s in the "
                  "container, and access to it is root on this host; only an "
                  "administrator can allow that (docker.allow_docker_socket "
                  "in the system configuration)",
                  bind ? "volume" : "host path", m->source, socket);
  return -1;
}

/* ---- airlock's own directories, masked ---- */

static bool
has_target (const cJSON *mounts, const char *target)
{
  const cJSON *j;
  cJSON_ArrayForEach (j, mounts)
    {
      const cJSON *t = cJSON_GetObjectItemCaseSensitive (j, "Target");
      if (cJSON_IsString (t) && !strcmp (t->valuestring, target))
        return true;
    }
  return false;
}

static void
add_mount (cJSON *mounts, const char *type, const char *source,
           const char *target, bool read_only)
{
  cJSON *j = cJSON_CreateObject ();
  cJSON_AddStringToObject (j, "Type", type);
  if (source)
    cJSON_AddStringToObject (j, "Source", source);
  cJSON_AddStringToObject (j, "Target", target);
  cJSON_AddBoolToObject (j, "ReadOnly", read_only);
  if (!source)
    {
      cJSON *t = cJSON_AddObjectToObject (j, "TmpfsOptions");
      cJSON_AddNumberToObject (t, "SizeBytes", 4096);
      cJSON_AddNumberToObject (t, "Mode", 0555);
    }
  cJSON_AddItemToArray (mounts, j);
}

struct mask_ctx {
  cJSON *mounts;
  const char *source, *target; /* the host-path mount that shows it */
  bool read_only;
};

/* An empty read-only tmpfs at `at`, and every directory between the
 * mount's target and it bound onto itself (same source, same
 * read-only-ness; docker mounts parents first), so that in the container
 * renaming one fails with EBUSY: a command cannot move the masked
 * directory's parent away and create a fresh one for the daemon to read.
 * A place already mounted on is a mount point anyway. */
static int
mask_in_container (void *ctx, const char *at, const char *host, char **err)
{
  (void) host;
  (void) err;
  struct mask_ctx *c = ctx;
  char *y = strdup (at);
  if (!y)
    return -1;
  char *from = y + (strcmp (c->target, "/") ? strlen (c->target) + 1 : 1);
  for (char *slash = from; (slash = strchr (slash, '/')); *slash++ = '/')
    {
      *slash = '\0';
      char *src = protected_host_path (c->source, c->target, y);
      if (!has_target (c->mounts, y))
        add_mount (c->mounts, "bind", src, y, c->read_only);
      free (src);
    }
  free (y);
  if (!has_target (c->mounts, at))
    add_mount (c->mounts, "tmpfs", NULL, at, true);
  return 0;
}

/* Each host path mounted (the workdir, a host-path volume, a volume bound
 * to a host device path) shows none of airlock's own directories
 * unmasked, or the session is refused (policy/protected_paths.h). */
static int
mask_protected (const struct docker_session_options *o,
                const struct mount_spec *m, size_t n, cJSON *mounts, char **err)
{
  if (!o->protected)
    return 0;
  for (size_t i = 0; i < n; i++)
    {
      const char *host = m[i].host_path ? m[i].source : NULL;
      for (char **opt = m[i].opts; opt && *opt; opt++)
        if (!strncmp (*opt, "device=", 7) && (*opt)[7] == '/')
          host = *opt + 7;
      if (!host)
        continue;
      char *real = realpath (host, NULL);
      struct mask_ctx c = { .mounts = mounts, .source = real ? real : host,
                            .target = m[i].target, .read_only = m[i].read_only };
      char *why = NULL;
      int rc = protected_check_source (o->protected, c.source, c.target,
                                       !m[i].read_only, mask_in_container, &c, &why);
      free (real);
      if (rc < 0)
        {
          *err = xprintf ("docker: %s", why ? why : "out of memory");
          free (why);
          return -1;
        }
    }
  return 0;
}

static int
judge_mounts (struct docker_container *c, const struct docker_session_options *o,
              cJSON *mounts, char **err)
{
  size_t n = 0;
  for (const char *const *v = o->volumes; v && *v; v++)
    n++;
  if (o->mount_workdir)
    n++;
  struct mount_spec *m = calloc (n + 1, sizeof *m);
  struct docker_mount_fact *facts = calloc (n + 1, sizeof *facts);
  int rc = m && facts ? 0 : -1;
  size_t k = 0;
  if (rc == 0 && o->mount_workdir)
    {
      m[k].source = strdup (o->workdir);
      m[k].target = strdup (o->workdir);
      m[k++].host_path = true;
    }
  for (const char *const *v = o->volumes; rc == 0 && v && *v; v++, k++)
    if ((rc = parse_volume (*v, o->workdir, &m[k], err)) == 0 && !m[k].host_path)
      rc = inspect_volume (c->eng, &m[k], err);
  for (size_t i = 0; rc == 0 && i < k; i++)
    rc = refuse_socket (&m[i], o->socket, o->admin_allows_socket, err);
  for (size_t i = 0; rc == 0 && i < k; i++)
    {
      facts[i] = (struct docker_mount_fact){ .source = m[i].source,
                                             .target = m[i].target,
                                             .read_only = m[i].read_only,
                                             .driver = m[i].driver,
                                             .driver_opts = (const char *const *) m[i].opts };
      cJSON *j = cJSON_CreateObject ();
      cJSON_AddStringToObject (j, "Type", m[i].host_path ? "bind" : "volume");
      cJSON_AddStringToObject (j, "Source", m[i].source);
      cJSON_AddStringToObject (j, "Target", m[i].target);
      cJSON_AddBoolToObject (j, "ReadOnly", m[i].read_only);
      cJSON_AddItemToArray (mounts, j);
    }
  if (rc == 0)
    rc = mask_protected (o, m, k, mounts, err);
  if (rc == 0)
    {
      struct docker_risk_facts f = { .mounts = facts, .n_mounts = k,
                                     .cap_add = o->cap_add,
                                     .docker_socket = o->socket };
      c->host_access = docker_has_host_access (&f, &c->reasons);
    }
  else if (!*err)
    *err = xprintf ("out of memory");
  free (facts);
  free_mounts (m, k);
  return rc;
}

/* ---- the create request ---- */

/* docker.user names root: "root" or uid 0, with or without a group.  (A
 * name the image's passwd maps to 0 is not seen here.) */
static bool
user_is_root (const char *user)
{
  size_t n = strcspn (user, ":");
  if (n == 4 && !strncmp (user, "root", 4))
    return true;
  if (n == 0)
    return false;
  for (size_t i = 0; i < n; i++)
    if (user[i] != '0')
      return false;
  return true;
}

static cJSON *
string_array (const char *const *items)
{
  cJSON *a = cJSON_CreateArray ();
  for (const char *const *i = items; i && *i; i++)
    cJSON_AddItemToArray (a, cJSON_CreateString (*i));
  return a;
}

/* docker's names: [a-zA-Z0-9][a-zA-Z0-9_.-]*; session names fit. */
static char *
container_name (const struct docker_session_options *o)
{
  uint64_t h = fnv1a64 (FNV1A64_INIT, o->owner_id, strlen (o->owner_id));
  return xprintf ("airlock-%u-%08llx-%s", (unsigned) getuid (),
                  (unsigned long long) (h & 0xffffffffULL), o->session);
}

/* OWNER/docker/session-SESSION: a session may be named "..". */
static char *
control_dir_path (const char *owner_id, const char *session)
{
  return xprintf ("%s/docker/session-%s", owner_id, session);
}

/* The session's directory for the supervisor's socket: under the daemon's
 * runtime directory, which is ours and 0700 (runtime_dir()), so no other
 * user of this host reaches it.  The session's directory itself is 0711:
 * the container may run as another uid (docker.user) and must get to the
 * socket in it.  Fixed per session, so that the create request (and its
 * config hash) stays the same for a daemon that reuses the container. */
static int
make_control_dir (struct docker_container *c, const char *owner, const char *session,
                  char **err)
{
  char *parent = xprintf ("%s/docker", owner);
  c->control_dir = parent ? control_dir_path (owner, session) : NULL;
  const char *dirs[2] = { parent, c->control_dir };
  const mode_t modes[2] = { 0700, 0711 };
  for (int i = 0; i < 2; i++)
    {
      struct stat st;
      if (!dirs[i])
        {
          *err = xprintf ("out of memory");
          free (parent);
          return -1;
        }
      bool made = (mkdir (dirs[i], modes[i]) == 0 || errno == EEXIST)
                  && lstat (dirs[i], &st) == 0;
      bool ours = made && S_ISDIR (st.st_mode) && st.st_uid == getuid ();
      if (!ours || chmod (dirs[i], modes[i]) < 0)
        {
          *err = xprintf ("cannot make the session's directory %s: %s", dirs[i],
                          made && !ours ? "not a directory of ours" : strerror (errno));
          free (parent);
          return -1;
        }
    }
  free (parent);
  return 0;
}

void
docker_control_dir_remove (const char *owner_id, const char *session)
{
  char *dir = control_dir_path (owner_id, session);
  char *sock = dir ? xprintf ("%s/%s", dir, SUP_CONTAINER_SOCKET + sizeof SUP_CONTAINER_DIR) : NULL;
  if (sock)
    unlink (sock);
  if (dir)
    rmdir (dir);
  free (sock);
  free (dir);
}

int
docker_container_plan (struct docker_container *c,
                       const struct docker_session_options *o, char **err)
{
  *c = (struct docker_container){ 0 };
  if (!(c->eng = docker_engine_new (o->socket)) || !(c->image = strdup (o->image))
      || !(c->name = container_name (o)))
    {
      *err = xprintf ("out of memory");
      return -1;
    }
  c->pull = o->pull;
  c->progress = o->progress;
  c->progress_ctx = o->progress_ctx;
  if (docker_engine_ping (c->eng, err) < 0
      || load_supervisor_tar (c, o->supervisor, err) < 0
      || make_control_dir (c, o->owner_id, o->session, err) < 0)
    return -1;

  cJSON *b = c->body = cJSON_CreateObject ();
  cJSON_AddStringToObject (b, "Image", o->image);
  const char *cmd[] = { DOCKER_LEADER_PATH, EXEC_INIT_FLAG, NULL };
  cJSON_AddItemToObject (b, "Cmd", string_array (cmd));
  cJSON_AddItemToObject (b, "Entrypoint", cJSON_CreateArray ()); /* the image's is not ours */
  cJSON_AddItemToObject (b, "Env", string_array (o->env));
  /* The caller's uid:gid unless docker.user names another: root in a
   * container is root of the host's kernel, one bug away from the host. */
  char ids[48];
  snprintf (ids, sizeof ids, "%u:%u", (unsigned) getuid (), (unsigned) getgid ());
  const char *user = o->user && *o->user ? o->user : ids;
  cJSON_AddStringToObject (b, "User", user);
  bool configured = user != ids;
  if (user_is_root (user)
      && !(c->warning = xprintf ("the container runs as root (%s%s%s): root in "
                                 "a container is root of the host's kernel, "
                                 "one kernel bug or misconfiguration away from "
                                 "the host; %s",
                                 configured ? "docker.user is \"" : "you are root",
                                 configured ? user : "", configured ? "\"" : "",
                                 configured ? "unset docker.user to run as your "
                                              "own uid:gid"
                                            : "set docker.user to an "
                                              "unprivileged user")))
    {
      *err = xprintf ("out of memory");
      return -1;
    }
  cJSON_AddStringToObject (b, "WorkingDir", o->mount_workdir ? o->workdir : "/");
  cJSON_AddBoolToObject (b, "NetworkDisabled", !o->network);
  cJSON *labels = cJSON_AddObjectToObject (b, "Labels");
  char uid[32];
  snprintf (uid, sizeof uid, "%u", (unsigned) getuid ());
  cJSON_AddStringToObject (labels, DOCKER_LABEL_SESSION, o->session);
  cJSON_AddStringToObject (labels, DOCKER_LABEL_USER, uid);
  cJSON_AddStringToObject (labels, DOCKER_LABEL_OWNER, o->owner_id);

  cJSON *hc = cJSON_AddObjectToObject (b, "HostConfig");
  const char *drop[] = { "ALL", NULL };
  cJSON_AddItemToObject (hc, "CapDrop", string_array (drop));
  cJSON_AddItemToObject (hc, "CapAdd", string_array (o->cap_add));
  cJSON *profile = docker_seccomp_profile ();
  char *ptext = profile ? cJSON_PrintUnformatted (profile) : NULL;
  char *seccomp = ptext ? xprintf ("seccomp=%s", ptext) : NULL;
  cJSON_Delete (profile);
  free (ptext);
  if (!seccomp)
    {
      *err = xprintf ("out of memory");
      return -1;
    }
  const char *secopt[] = { "no-new-privileges", seccomp, NULL };
  cJSON_AddItemToObject (hc, "SecurityOpt", string_array (secopt));
  free (seccomp);
  cJSON_AddBoolToObject (hc, "ReadonlyRootfs", o->read_only_rootfs);
  cJSON *tmpfs = cJSON_AddObjectToObject (hc, "Tmpfs");
  char *tmp = xprintf ("rw,nosuid,nodev,size=%s", o->tmpfs_size ? o->tmpfs_size : "512m");
  cJSON_AddStringToObject (tmpfs, "/tmp", tmp);
  free (tmp);
  cJSON_AddStringToObject (tmpfs, "/var/tmp", "rw,nosuid,nodev,size=256m");
  cJSON_AddStringToObject (tmpfs, "/run", "rw,nosuid,nodev,noexec,size=64m");
  cJSON_AddNumberToObject (hc, "PidsLimit", (double) o->pids_limit);
  if (o->memory)
    cJSON_AddNumberToObject (hc, "Memory", (double) o->memory);
  if (o->nano_cpus)
    cJSON_AddNumberToObject (hc, "NanoCpus", (double) o->nano_cpus);
  cJSON_AddStringToObject (hc, "NetworkMode", o->network ? "bridge" : "none");
  cJSON_AddBoolToObject (hc, "Init", false); /* our own pid 1: the supervisor */
  cJSON_AddBoolToObject (hc, "Privileged", false);
  cJSON *restart = cJSON_AddObjectToObject (hc, "RestartPolicy");
  cJSON_AddStringToObject (restart, "Name", "no");
  cJSON *mounts = cJSON_AddArrayToObject (hc, "Mounts");
  /* Labelled, so that the reaper finds it should the container be
   * removed without its volumes (docker rm -f without -v). */
  cJSON *leader = cJSON_CreateObject ();
  cJSON_AddStringToObject (leader, "Type", "volume");
  cJSON_AddStringToObject (leader, "Target", DOCKER_LEADER_DIR);
  cJSON *vlabels = cJSON_AddObjectToObject (
      cJSON_AddObjectToObject (leader, "VolumeOptions"), "Labels");
  cJSON_AddStringToObject (vlabels, DOCKER_LABEL_USER, uid);
  cJSON_AddItemToArray (mounts, leader);
  add_mount (mounts, "bind", c->control_dir, SUP_CONTAINER_DIR, true);
  if (judge_mounts (c, o, mounts, err) < 0)
    return -1;

  char *text = cJSON_PrintUnformatted (b);
  if (!text)
    {
      *err = xprintf ("out of memory");
      return -1;
    }
  uint64_t h = fnv1a64 (FNV1A64_INIT, text, strlen (text));
  h = fnv1a64 (h, c->tar, c->tar_len);
  free (text);
  char hash[20];
  snprintf (hash, sizeof hash, "%016llx", (unsigned long long) h);
  cJSON_AddStringToObject (labels, DOCKER_LABEL_HASH, hash);
  return 0;
}

/* ---- lifecycle ---- */

/* One line of the engine's pull stream, for the daemon's log and the
 * person waiting.  Byte counters ("Downloading 12MB/80MB") change many
 * times a second: the caller gets at most one of those a second, and
 * every other status line. */
static void
pull_progress (void *ctx, const char *line)
{
  struct docker_container *c = ctx;
  const char *image = c->image;
  cJSON *j = cJSON_Parse (line);
  const cJSON *st = cJSON_GetObjectItemCaseSensitive (j, "status");
  const cJSON *id = cJSON_GetObjectItemCaseSensitive (j, "id");
  const cJSON *pr = cJSON_GetObjectItemCaseSensitive (j, "progress");
  const cJSON *er = cJSON_GetObjectItemCaseSensitive (j, "error");
  if (cJSON_IsString (er))
    fprintf (stderr, "airlock: pulling %s: error: %s\n", image, er->valuestring);
  else if (cJSON_IsString (st))
    fprintf (stderr, "airlock: pulling %s: %s%s%s%s%s\n", image,
             cJSON_IsString (id) ? id->valuestring : "", cJSON_IsString (id) ? ": " : "",
             st->valuestring, cJSON_IsString (pr) ? " " : "",
             cJSON_IsString (pr) ? pr->valuestring : "");
  struct timespec now;
  clock_gettime (CLOCK_MONOTONIC, &now);
  long long ms = (long long) now.tv_sec * 1000 + now.tv_nsec / 1000000;
  bool counter = cJSON_IsString (pr);
  if (c->progress && (cJSON_IsString (er) || cJSON_IsString (st))
      && (!counter || ms - c->progress_at_ms >= 1000))
    {
      if (counter)
        c->progress_at_ms = ms;
      char *text = cJSON_IsString (er)
                       ? xprintf ("pulling %s: error: %s", image, er->valuestring)
                       : xprintf ("pulling %s: %s%s%s%s%s", image,
                                  cJSON_IsString (id) ? id->valuestring : "",
                                  cJSON_IsString (id) ? ": " : "", st->valuestring,
                                  counter ? " " : "", counter ? pr->valuestring : "");
      if (text)
        c->progress (c->progress_ctx, text);
      free (text);
    }
  cJSON_Delete (j);
}

/* The last "error" of a pull's stream, which ends with HTTP 200 anyway. */
static char *
pull_error (const char *body)
{
  char *last = NULL;
  for (const char *line = body; line && *line;)
    {
      const char *nl = strchr (line, '\n');
      size_t n = nl ? (size_t) (nl - line) : strlen (line);
      cJSON *j = cJSON_ParseWithLength (line, n);
      const cJSON *er = cJSON_GetObjectItemCaseSensitive (j, "error");
      if (cJSON_IsString (er))
        {
          free (last);
          last = strdup (er->valuestring);
        }
      cJSON_Delete (j);
      line = nl ? nl + 1 : NULL;
    }
  return last;
}

static int
pull (struct docker_container *c, char **err)
{
  /* Without a tag the API pulls every tag of the repository. */
  const char *slash = strrchr (c->image, '/');
  const char *colon = strrchr (slash ? slash : c->image, ':');
  bool tagged = colon || strchr (c->image, '@');
  char *esc = curl_easy_escape (NULL, c->image, 0);
  char *path = esc ? xprintf ("/images/create?fromImage=%s%s", esc,
                              tagged ? "" : "&tag=latest")
                   : NULL;
  curl_free (esc);
  fprintf (stderr, "airlock: image %s is not present: pulling it\n", c->image);
  struct docker_response r;
  if (c->progress)
    {
      char *text = xprintf ("image %s is not present: pulling it", c->image);
      if (text)
        c->progress (c->progress_ctx, text);
      free (text);
    }
  int rc = path ? docker_call_lines (c->eng, "POST", path, pull_progress, c, &r, err) : -1;
  free (path);
  if (rc < 0)
    return -1;
  char *why = r.status == 200 ? pull_error (r.body) : NULL;
  if (r.status != 200 || why)
    {
      *err = xprintf ("image %s is not present and pulling it failed: %s; "
                      "load it (docker pull/load/import) or set docker.image",
                      c->image, why ? why : docker_response_message (&r));
      rc = -1;
    }
  free (why);
  docker_response_free (&r);
  return rc;
}

void
docker_container_remove (struct docker_container *c)
{
  const char *what = c->id ? c->id : c->name;
  char *path = xprintf ("/containers/%s?force=true&v=true", what);
  struct docker_response r;
  char *err = NULL;
  if (path && docker_call (c->eng, "DELETE", path, NULL, &r, &err) == 0)
    {
      if (r.status != 204 && r.status != 404)
        fprintf (stderr, "airlock: cannot remove container %s: %s\n", what,
                 docker_response_message (&r));
      docker_response_free (&r);
    }
  else if (err)
    fprintf (stderr, "airlock: cannot remove container %s: %s\n", what, err);
  free (err);
  free (path);
  free (c->id);
  c->id = NULL;
}

static int
simple_call (struct docker_container *c, const char *method, const char *fmt,
             const void *body, size_t len, const char *ctype, long ok,
             const char *what, char **err)
{
  char *path = xprintf (fmt, c->id);
  struct docker_response r;
  int rc = path ? docker_call_raw (c->eng, method, path, body, len, ctype, &r, err) : -1;
  free (path);
  if (rc < 0)
    return -1;
  if (r.status != ok && !(ok == 204 && r.status == 304))
    {
      *err = xprintf ("cannot %s container %s: %s", what, c->name,
                      docker_response_message (&r));
      rc = -1;
    }
  docker_response_free (&r);
  return rc;
}

int
docker_container_create (struct docker_container *c, char **err)
{
  char *path = xprintf ("/containers/create?name=%s", c->name);
  struct docker_response r = { 0 };
  int rc = path ? docker_call (c->eng, "POST", path, c->body, &r, err) : -1;
  if (rc == 0 && r.status == 404 && c->pull)
    {
      docker_response_free (&r);
      rc = pull (c, err);
      if (rc == 0)
        rc = docker_call (c->eng, "POST", path, c->body, &r, err);
    }
  free (path);
  if (rc < 0)
    return -1;
  const cJSON *id = cJSON_GetObjectItemCaseSensitive (r.json, "Id");
  if (r.status == 404)
    *err = xprintf ("image %s is not present (%s): load it (docker pull, "
                    "docker load or docker import), set docker.image, or "
                    "enable docker.pull", c->image, docker_response_message (&r));
  else if (r.status == 409)
    *err = xprintf ("cannot create container %s: %s (another airlock daemon "
                    "of yours may be creating it right now)", c->name,
                    docker_response_message (&r));
  else if (r.status != 201 || !cJSON_IsString (id))
    *err = xprintf ("cannot create the session's container from %s: %s",
                    c->image, docker_response_message (&r));
  else
    c->id = strdup (id->valuestring);
  docker_response_free (&r);
  if (!c->id)
    return -1;
  /* Made: from here on a failure removes it again. */
  if (simple_call (c, "PUT", "/containers/%s/archive?path=" DOCKER_LEADER_DIR, c->tar, c->tar_len,
                   "application/x-tar", 200, "copy the supervisor into", err) < 0
      || simple_call (c, "POST", "/containers/%s/start", NULL, 0, NULL, 204,
                      "start", err) < 0)
    {
      docker_container_remove (c);
      return -1;
    }
  return 0;
}

int
docker_container_up (struct docker_container *c, char **err)
{
  char *path = xprintf ("/containers/%s/json", c->name);
  struct docker_response r;
  int rc = path ? docker_call (c->eng, "GET", path, NULL, &r, err) : -1;
  free (path);
  if (rc < 0)
    return -1;
  if (r.status == 200)
    {
      const cJSON *cfg = cJSON_GetObjectItemCaseSensitive (r.json, "Config");
      const cJSON *labels = cJSON_GetObjectItemCaseSensitive (cfg, "Labels");
      const cJSON *have = cJSON_GetObjectItemCaseSensitive (labels, DOCKER_LABEL_HASH);
      const cJSON *want = cJSON_GetObjectItemCaseSensitive (
          cJSON_GetObjectItemCaseSensitive (c->body, "Labels"), DOCKER_LABEL_HASH);
      const cJSON *id = cJSON_GetObjectItemCaseSensitive (r.json, "Id");
      c->id = cJSON_IsString (id) ? strdup (id->valuestring) : NULL;
      bool same = cJSON_IsString (have) && cJSON_IsString (want)
                  && !strcmp (have->valuestring, want->valuestring);
      docker_response_free (&r);
      /* Reused only restarted: a container must hold no process of an
       * earlier life (a job leader of a daemon that died, whatever a
       * command left behind).  Not cleaned by a one-shot exec killing
       * all but pid 1: that could not tell one process from another that
       * took its name, and could not kill a process of another uid.  A restart ends the container's pid
       * namespace, whatever ran in it; the image's layer, the volumes and
       * the job leader's copy are kept, the tmpfs mounts (/tmp, /var/tmp,
       * /run) start empty, as after a reboot.  t=0: nothing of that life
       * deserves a grace period. */
      char *why = NULL;
      if (c->id && same
          && simple_call (c, "POST", "/containers/%s/restart?t=0", NULL, 0, NULL,
                          204, "restart", &why) == 0)
        {
          c->reused = true;
          return 0;
        }
      if (why)
        fprintf (stderr, "airlock: replacing container %s: %s\n", c->name, why);
      free (why);
      docker_container_remove (c); /* another configuration: replaced */
    }
  else
    docker_response_free (&r);
  return docker_container_create (c, err);
}

void
docker_container_clear (struct docker_container *c)
{
  docker_engine_free (c->eng);
  free (c->name);
  free (c->id);
  free (c->image);
  free (c->control_dir);
  cJSON_Delete (c->body);
  free (c->tar);
  free (c->reasons);
  free (c->warning);
  *c = (struct docker_container){ 0 };
}
