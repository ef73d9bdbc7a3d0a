/* SPDX-License-Identifier: MIT */
/* Does a Docker session reach the host?  See docker_risk.h.
 *
 * The judgment fails closed: whatever cannot be judged (an unknown volume
 * driver, a local-driver option this code does not know, a mount source
 * that is neither a path nor a volume name) counts as host access, with a
 * reason saying so.  A read-only mount is host access too: reading the
 * host's files is already reaching it.
 *
 * Named volumes of the "local" driver.  The driver mounts `device` with
 * `mount -t TYPE -o O`, so:
 *   - `o` holding `bind` or `rbind`, or `type=none` (a bind in practice):
 *     host access, the device is a host path;
 *   - a `device` that is an absolute path (a host directory, or a block
 *     device such as /dev/sdb1 whose file system is then shared): host
 *     access;
 *   - `type=tmpfs`: memory, isolated;
 *   - a network file system (nfs, nfs4, cifs, smb3): isolated, unless its
 *     server is this host (addr= or the device's host part is a loopback
 *     name or address), which would re-export the host's own files.  A
 *     remote share is another machine, not this host; whether it should be
 *     mounted at all is the administrator's call, not this judgment's;
 *   - any other type (overlay, ext4, ...): cannot be judged, host access.
 * Options other than type, o, device and size are refused by the local
 * driver; here they mean "cannot judge".
 *
 * Socket exposure compares both the mounted path and the socket path
 * lexically and with symlinks resolved (the longest existing prefix
 * through realpath), because /var/run is usually a symlink to /run.  A
 * hard link to the socket elsewhere is not detected; that path is still
 * a host path, so the session counts as having host access anyway.
 *
 * docker_has_host_access() sets *why to NULL when the answer is false. */
#define _GNU_SOURCE
#include "docker_risk.h"
#include "xalloc.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_SOCKET "/var/run/docker.sock"

/* ---- allocation: a judgment cannot be made without memory ---- */

/* ---- reasons: a growing "; "-separated list ---- */

struct reasons
{
  char *text;   /* NULL until the first reason */
  size_t count;
};

static void __attribute__ ((format (printf, 2, 3)))
add_reason (struct reasons *r, const char *fmt, ...)
{
  va_list ap;
  char *item;
  va_start (ap, fmt);
  int n = vasprintf (&item, fmt, ap);
  va_end (ap);
  if (n < 0)
    oom ();
  if (!r->text)
    r->text = item;
  else
    {
      char *joined;
      if (asprintf (&joined, "%s; %s", r->text, item) < 0)
        oom ();
      free (r->text);
      free (item);
      r->text = joined;
    }
  r->count++;
}

/* ---- mount sources ---- */

static const char *
skip_space (const char *s)
{
  while (isspace ((unsigned char) *s))
    s++;
  return s;
}

bool
docker_source_is_host_path (const char *source)
{
  if (!source)
    return false;
  /* Leading blanks would be trimmed by some front ends; judge what is
     left rather than call " /etc" a volume name. */
  const char *s = skip_space (source);
  if (s[0] == '/' || s[0] == '~')
    return true;
  if (!strcmp (s, ".") || !strcmp (s, ".."))
    return true;
  if (!strncmp (s, "./", 2) || !strncmp (s, "../", 3)
      || !strncmp (s, ".\\", 2) || !strncmp (s, "..\\", 3))
    return true;
  /* Windows: a drive ("C:\x", "c:/x") or a UNC share ("\\server\x"). */
  if (isalpha ((unsigned char) s[0]) && s[1] == ':'
      && (s[2] == '\\' || s[2] == '/'))
    return true;
  if (s[0] == '\\')
    return true;
  return false;
}

/* What the Engine accepts as a local volume name:
   [a-zA-Z0-9][a-zA-Z0-9_.-]* (the Engine also wants two characters; a
   one-character name is refused by Docker itself, so it is let through
   here rather than reported as host access). */
static bool
is_volume_name (const char *s)
{
  if (!isalnum ((unsigned char) s[0]))
    return false;
  for (s++; *s; s++)
    if (!isalnum ((unsigned char) *s) && *s != '_' && *s != '.' && *s != '-')
      return false;
  return true;
}

/* ---- paths: lexical and resolved forms ---- */

/* Collapse "//", "/./" and "/x/.." of an absolute path; NULL if the
   path is not absolute. */
static char *
lexical_normalize (const char *path)
{
  if (path[0] != '/')
    return NULL;
  size_t len = strlen (path);
  char *out = malloc (len + 2);
  if (!out)
    oom ();
  size_t o = 0;
  const char *p = path;
  while (*p)
    {
      while (*p == '/')
        p++;
      if (!*p)
        break;
      size_t n = strcspn (p, "/");
      if (n == 1 && p[0] == '.')
        ;
      else if (n == 2 && p[0] == '.' && p[1] == '.')
        {
          while (o > 0 && out[o - 1] != '/')
            o--;
          if (o > 0)
            o--;        /* drop the separator too */
        }
      else
        {
          out[o++] = '/';
          memcpy (out + o, p, n);
          o += n;
        }
      p += n;
    }
  if (o == 0)
    out[o++] = '/';
  out[o] = '\0';
  return out;
}

/* realpath of the longest existing prefix, with the rest appended
   lexically: /var/run/docker.sock resolves to /run/docker.sock even
   where no daemon runs.  NULL when no prefix resolves (relative paths
   resolve against the current directory). */
static char *
resolve_existing_prefix (const char *path)
{
  char *work = xstrdup (path);
  size_t len = strlen (work);
  for (;;)
    {
      char *real = realpath (work, NULL);
      if (real)
        {
          char *rest = (char *) path + strlen (work);
          char *joined;
          if (!*rest)
            joined = real;
          else
            {
              if (asprintf (&joined, "%s%s%s", real,
                            (real[strlen (real) - 1] == '/' || *rest == '/')
                            ? "" : "/", rest) < 0)
                oom ();
              free (real);
            }
          free (work);
          char *norm = lexical_normalize (joined);
          free (joined);
          return norm;
        }
      /* Drop the last component and try its parent. */
      while (len > 0 && work[len - 1] == '/')
        work[--len] = '\0';
      while (len > 0 && work[len - 1] != '/')
        work[--len] = '\0';
      while (len > 1 && work[len - 1] == '/')
        work[--len] = '\0';
      if (len == 0)
        {
          free (work);
          return NULL;
        }
    }
}

/* True when `inner` is `outer` or lies below it (both normalized). */
static bool
path_within (const char *inner, const char *outer)
{
  if (!strcmp (outer, "/"))
    return inner[0] == '/';
  size_t n = strlen (outer);
  return !strncmp (inner, outer, n) && (inner[n] == '\0' || inner[n] == '/');
}

/* The forms a path is compared under: lexical and resolved. */
struct path_forms
{
  char *form[2];
};

static void
path_forms_get (const char *path, struct path_forms *f)
{
  f->form[0] = lexical_normalize (path);
  f->form[1] = resolve_existing_prefix (path);
}

static void
path_forms_free (struct path_forms *f)
{
  free (f->form[0]);
  free (f->form[1]);
}

static bool
forms_expose (const struct path_forms *host, const struct path_forms *sock)
{
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 2; j++)
      if (host->form[i] && sock->form[j]
          && path_within (sock->form[j], host->form[i]))
        return true;
  return false;
}

bool
docker_path_exposes_socket (const char *host_path, const char *socket)
{
  if (!host_path || !*host_path)
    return false;
  if (!socket || !*socket)
    socket = DEFAULT_SOCKET;
  /* DOCKER_HOST spelling. */
  if (!strncmp (socket, "unix://", 7))
    socket += 7;

  struct path_forms host, sock;
  path_forms_get (host_path, &host);
  path_forms_get (socket, &sock);
  bool exposed = forms_expose (&host, &sock);
  path_forms_free (&host);
  path_forms_free (&sock);
  return exposed;
}

/* ---- named volumes ---- */

/* The value of KEY in NULL-terminated "key=value" options, or NULL. */
static const char *
opt_value (const char *const *opts, const char *key)
{
  size_t n = strlen (key);
  for (; opts && *opts; opts++)
    if (!strncmp (*opts, key, n) && (*opts)[n] == '=')
      return *opts + n + 1;
  return NULL;
}

/* Does a comma-separated mount option list hold `word` exactly? */
static bool
has_mount_option (const char *list, const char *word)
{
  size_t n = strlen (word);
  for (const char *p = list; p && *p;)
    {
      size_t len = strcspn (p, ",");
      if (len == n && !strncmp (p, word, n))
        return true;
      p += len;
      if (*p == ',')
        p++;
    }
  return false;
}

/* The value of `addr=` in a mount option list, copied. */
static char *
mount_option_value (const char *list, const char *key)
{
  size_t n = strlen (key);
  for (const char *p = list; p && *p;)
    {
      size_t len = strcspn (p, ",");
      if (len > n && !strncmp (p, key, n) && p[n] == '=')
        return strndup (p + n + 1, len - n - 1);
      p += len;
      if (*p == ',')
        p++;
    }
  return NULL;
}

static bool
is_loopback_host (const char *h)
{
  if (!h)
    return false;
  if (h[0] == '[')
    h++;
  return !strncasecmp (h, "localhost", 9) || !strncmp (h, "127.", 4)
         || !strncmp (h, "::1", 3) || !strncmp (h, "0.0.0.0", 7)
         || !strncmp (h, "::ffff:127.", 11);
}

/* The server named by a network file system's device: "host:/export"
   (nfs) or "//host/share" (cifs). */
static char *
device_server (const char *device)
{
  if (!device)
    return NULL;
  if (!strncmp (device, "//", 2) || !strncmp (device, "\\\\", 2))
    return strndup (device + 2, strcspn (device + 2, "/\\"));
  const char *colon = strrchr (device, ':');
  if (colon && colon != device)
    return strndup (device, (size_t) (colon - device));
  return NULL;
}

static bool
is_network_fs (const char *type)
{
  static const char *const types[] = { "nfs", "nfs4", "cifs", "smb3",
                                       NULL };
  for (const char *const *t = types; *t; t++)
    if (!strcmp (type, *t))
      return true;
  return false;
}

static void
judge_named_volume (const struct docker_mount_fact *m, const char *sock,
                    struct reasons *r)
{
  const char *name = m->source;
  const char *target = m->target ? m->target : "?";

  if (m->driver && strcmp (m->driver, "local") != 0)
    {
      add_reason (r, "volume %s:%s uses driver '%s', which cannot be judged",
                  name, target, m->driver);
      return;
    }

  const char *const *opts = m->driver_opts;
  for (const char *const *o = opts; o && *o; o++)
    {
      size_t klen = strcspn (*o, "=");
      if ((*o)[klen] != '=')
        {
          add_reason (r, "volume %s:%s has driver option '%s' without a "
                      "value, which cannot be judged", name, target, *o);
          return;
        }
      if (!((klen == 4 && !strncmp (*o, "type", 4))
            || (klen == 1 && !strncmp (*o, "o", 1))
            || (klen == 6 && !strncmp (*o, "device", 6))
            || (klen == 4 && !strncmp (*o, "size", 4))))
        {
          add_reason (r, "volume %s:%s has driver option '%.*s', which "
                      "cannot be judged", name, target, (int) klen, *o);
          return;
        }
    }

  const char *type = opt_value (opts, "type");
  const char *o = opt_value (opts, "o");
  const char *device = opt_value (opts, "device");
  bool bind = has_mount_option (o, "bind") || has_mount_option (o, "rbind")
              || (type && !strcmp (type, "none"));

  /* A share's device ("//server/share") is no host path: judged first. */
  if (!bind && type && is_network_fs (type))
    {
      char *addr = mount_option_value (o, "addr");
      char *server = device_server (device);
      if (is_loopback_host (addr) || is_loopback_host (server))
        add_reason (r, "volume %s:%s mounts a %s share served by this host",
                    name, target, type);
      free (addr);
      free (server);
      return;
    }
  if (bind || (device && device[0] == '/'))
    {
      add_reason (r, "volume %s:%s binds host path %s", name, target,
                  device ? device : "(no device)");
      if (device && docker_path_exposes_socket (device, sock))
        add_reason (r, "volume %s:%s exposes the Docker socket", name,
                    target);
      return;
    }
  if (!type || !strcmp (type, "tmpfs"))
    return;     /* no options (or only o/size): a directory Docker owns */
  add_reason (r, "volume %s:%s mounts file system type '%s', which cannot "
              "be judged", name, target, type);
}

/* ---- the judgment ---- */

static void
judge_mount (const struct docker_mount_fact *m, const char *sock,
             struct reasons *r)
{
  const char *target = m->target ? m->target : "?";
  if (!m->source || !*skip_space (m->source))
    return;     /* an anonymous volume */
  if (docker_source_is_host_path (m->source))
    {
      add_reason (r, "volume %s:%s binds a host path", m->source, target);
      if (docker_path_exposes_socket (skip_space (m->source), sock))
        add_reason (r, "volume %s:%s exposes the Docker socket", m->source,
                    target);
      return;
    }
  if (!is_volume_name (m->source))
    {
      add_reason (r, "mount source '%s' is neither a host path nor a volume "
                  "name, which cannot be judged", m->source);
      return;
    }
  judge_named_volume (m, sock, r);
}

static void
list_reason (struct reasons *r, const char *what, const char *const *items)
{
  if (!items || !*items)
    return;
  size_t len = 1;
  for (const char *const *i = items; *i; i++)
    len += strlen (*i) + 4;
  char *list = malloc (len);
  if (!list)
    oom ();
  list[0] = '\0';
  for (const char *const *i = items; *i; i++)
    {
      if (i != items)
        strcat (list, ", ");
      strcat (list, **i ? *i : "''");
    }
  add_reason (r, "%s: %s", what, list);
  free (list);
}

bool
docker_has_host_access (const struct docker_risk_facts *f, char **why)
{
  struct reasons r = { NULL, 0 };

  if (!f)
    add_reason (&r, "no facts about the container were given");
  else
    {
      const char *sock = f->docker_socket;
      for (size_t i = 0; i < f->n_mounts && f->mounts; i++)
        judge_mount (&f->mounts[i], sock, &r);
      if (f->n_mounts && !f->mounts)
        add_reason (&r, "mounts were counted but not given");
      if (f->privileged)
        add_reason (&r, "privileged");
      if (f->pid_host)
        add_reason (&r, "host PID namespace (pid=host)");
      if (f->network_host)
        add_reason (&r, "host network (network=host)");
      if (f->ipc_host)
        add_reason (&r, "host IPC namespace (ipc=host)");
      if (f->uts_host)
        add_reason (&r, "host UTS namespace (uts=host)");
      if (f->userns_host)
        add_reason (&r, "host user namespace (userns=host)");
      list_reason (&r, "capabilities added", f->cap_add);
      list_reason (&r, "host devices", f->devices);
    }

  if (why)
    *why = r.text;
  else
    free (r.text);
  return r.count > 0;
}
