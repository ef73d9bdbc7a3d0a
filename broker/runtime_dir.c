/* The per-user runtime directory of the daemon: its socket, lock, log and
 * the list of sessions it owned. */
#define _GNU_SOURCE
#include "runtime_dir.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* $XDG_RUNTIME_DIR/airlock, or /tmp/airlock-UID when that is unset.  The
 * directory must be ours, a real directory and 0700: anyone else able to
 * enter it could talk to our daemon or replace its socket. */
int
runtime_dir (char *out, size_t size, char **err)
{
  const char *xdg = getenv ("XDG_RUNTIME_DIR");
  if (xdg && *xdg == '/')
    snprintf (out, size, "%s/airlock", xdg);
  else
    snprintf (out, size, "/tmp/airlock-%u", (unsigned) getuid ());
  if (mkdir (out, 0700) < 0 && errno != EEXIST)
    {
      if (asprintf (err, "cannot create %s: %s", out, strerror (errno)) < 0)
        *err = NULL;
      return -1;
    }
  struct stat st;
  if (lstat (out, &st) < 0 || !S_ISDIR (st.st_mode) || st.st_uid != getuid ()
      || (st.st_mode & 077))
    {
      if (asprintf (err, "%s must be a directory owned by you with mode 0700 "
                    "(remove it and try again)", out) < 0)
        *err = NULL;
      return -1;
    }
  return 0;
}
