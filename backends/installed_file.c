/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
#include "installed_file.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "xprintf.h"

const char *
installed_file_hint (const char *path, const char *env, char *buf, size_t size)
{
  const char *set = getenv (env);
  if (set && *set && !strcmp (set, path))
    snprintf (buf, size, "named by %s", env);
  else
    snprintf (buf, size, "the path this airlock was built with: install "
              "airlock with the same PREFIX, or set %s to where it is", env);
  return buf;
}

int
installed_file_check (const char *path, int mode, const char *env, char **err)
{
  if (access (path, mode) == 0 || (errno != ENOENT && errno != ENOTDIR))
    return 0;
  int e = errno;
  char hint[256];
  *err = xprintf ("%s: %s (%s)", path, strerror (e),
                  installed_file_hint (path, env, hint, sizeof hint));
  return -1;
}
