/* SPDX-License-Identifier: MIT */
/* The per-user runtime directory of the daemon: its socket, lock, log and
 * the list of sessions it owned. */
#define _GNU_SOURCE
#include "runtime_dir.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "audit_log.h"
#include "config.h"

static int __attribute__ ((format (printf, 2, 3)))
fail (char **err, const char *fmt, ...)
{
  va_list ap;
  va_start (ap, fmt);
  if (vasprintf (err, fmt, ap) < 0)
    *err = NULL;
  va_end (ap);
  return -1;
}

/* This host's name as one path component: hosts that share an NFS home
 * must not share a daemon. */
static void
host_component (char *out, size_t size)
{
  char host[HOST_NAME_MAX + 1] = "";
  if (gethostname (host, sizeof host) < 0 || !host[0])
    snprintf (host, sizeof host, "localhost");
  host[sizeof host - 1] = '\0';
  for (char *c = host; *c; c++)
    if (!strchr ("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                 "0123456789.-_", *c))
      *c = '_';
  snprintf (out, size, "%s", host);
}

/* Every directory on the way to path (each prefix; the caller checks both
 * the path as spelled and as resolved) must belong to root or to us and not be writable by anyone
 * else, unless it is sticky (/tmp): otherwise another user could rename
 * or replace a component and put their own directory, or socket, in our
 * daemon's place. */
static int
check_prefixes (const char *path, const char *dir, char **err)
{
  char p[PATH_MAX];
  snprintf (p, sizeof p, "%s", path);
  for (char *slash = p;; slash++)
    {
      /* The last component is checked by the caller, more strictly. */
      if (!(slash = strchr (slash, '/')))
        return 0;
      *slash = '\0';
      struct stat st;
      const char *at = *p ? p : "/";
      if (lstat (at, &st) < 0)
        return fail (err, "%s: cannot check %s: %s", dir, at, strerror (errno));
      if (st.st_uid != 0 && st.st_uid != getuid ())
        return fail (err, "the runtime directory %s is not safe: %s belongs to "
                     "uid %u, neither you nor root, who could replace it; set "
                     "XDG_RUNTIME_DIR to a directory of your own (mode 0700)",
                     dir, at, (unsigned) st.st_uid);
      if (S_ISDIR (st.st_mode) && (st.st_mode & 022) && !(st.st_mode & S_ISVTX))
        return fail (err, "the runtime directory %s is not safe: %s is writable "
                     "by group or others (mode %03o); chmod go-w it, or set "
                     "XDG_RUNTIME_DIR to a directory of your own (mode 0700)",
                     dir, at, (unsigned) (st.st_mode & 07777));
      *slash = '/';
    }
}

/* $XDG_RUNTIME_DIR/airlock (per user, made by logind), or, without it
 * (su, cron, ssh without logind), ${XDG_STATE_HOME:-~/.local/state}/
 * airlock/run-HOST: in the user's own tree, where no other user can create
 * it first, as /tmp/airlock-UID could be.  The directory must be ours, a
 * real directory and 0700: anyone else able to enter it could talk to our
 * daemon or replace its socket. */
int
runtime_dir (char *out, size_t size, char **err)
{
  const char *xdg = getenv ("XDG_RUNTIME_DIR");
  if (xdg && *xdg == '/')
    snprintf (out, size, "%s/airlock", xdg);
  else
    {
      char *state = audit_log_state_dir (getenv ("XDG_STATE_HOME"),
                                         config_home_dir (), err);
      if (!state)
        return -1;
      char host[HOST_NAME_MAX + 1];
      host_component (host, sizeof host);
      snprintf (out, size, "%s/run-%s", state, host);
      int rc = audit_log_make_dirs (state, err);
      free (state);
      if (rc < 0)
        return -1;
    }
  struct sockaddr_un sa;
  size_t longest = strlen (out) + 1 + sizeof DAEMON_SOCKET;
  if (longest > sizeof sa.sun_path)
    return fail (err, "the runtime directory %s is too long for a unix socket "
                 "(%zu bytes with /" DAEMON_SOCKET ", at most %zu); set "
                 "XDG_RUNTIME_DIR to a shorter directory of your own (mode "
                 "0700)", out, longest, sizeof sa.sun_path);
  if (mkdir (out, 0700) < 0 && errno != EEXIST)
    return fail (err, "cannot create %s: %s", out, strerror (errno));
  char real[PATH_MAX];
  if (check_prefixes (out, out, err) < 0
      || (realpath (out, real) && check_prefixes (real, out, err) < 0))
    return -1;
  struct stat st;
  if (lstat (out, &st) < 0 || !S_ISDIR (st.st_mode) || st.st_uid != getuid ()
      || (st.st_mode & 077))
    return fail (err, "the runtime directory %s must be a directory owned by "
                 "you (uid %u) with mode 0700, and it is not: remove it and "
                 "try again (if it is not yours, its owner or an administrator "
                 "must)", out, (unsigned) getuid ());
  return 0;
}
