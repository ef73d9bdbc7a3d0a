/* SPDX-License-Identifier: MIT */
/* Where the audit log (and the broker's other private state) lives, and
 * making its directories: apart from audit_log.c so that the thin `airlock`
 * client, which needs the paths but never writes the log, links neither
 * PCRE2 (redaction) nor libunistring.  See audit_log.h. */
#define _GNU_SOURCE
#include "audit_log.h"
#include "xalloc.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int
audit_log_make_dirs (const char *dir, char **err)
{
  char *p = xstrdup (dir);
  int rc = 0;
  for (char *slash = p + 1;; slash++)
    {
      slash = strchr (slash, '/');
      if (slash)
        *slash = '\0';
      if (*p && mkdir (p, 0700) < 0 && errno != EEXIST)
        {
          rc = -errno;
          if (err)
            *err = xasprintf ("cannot create %s: %s", p, strerror (errno));
          break;
        }
      if (!slash)
        break;
      *slash = '/';
    }
  free (p);
  return rc;
}

char *
audit_log_state_dir (const char *xdg_state_home, const char *home, char **err)
{
  /* The XDG spec: a relative value is invalid and is ignored. */
  if (xdg_state_home && xdg_state_home[0] == '/')
    return xasprintf ("%s/airlock", xdg_state_home);
  if (home && home[0] == '/')
    return xasprintf ("%s/.local/state/airlock", home);
  if (err)
    *err = xstrdup ("no state directory: neither XDG_STATE_HOME nor HOME is "
                    "an absolute path");
  return NULL;
}
