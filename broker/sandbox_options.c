#define _GNU_SOURCE
#include "sandbox_options.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool
parse_number (const char *s, uint64_t *out, bool sizes)
{
  char *end;
  errno = 0;
  if (*s < '0' || *s > '9')
    return false;
  unsigned long long v = strtoull (s, &end, 10);
  int shift = 0;
  if (sizes && *end)
    {
      const char *units = "KMGT";
      const char *u = strchr (units, *end);
      if (!u || end[1])
        return false;
      shift = 10 * (int) (u - units + 1);
      end++;
    }
  if (errno || *end || (shift && v > (UINT64_MAX >> shift)))
    return false;
  *out = (uint64_t) v << shift;
  return true;
}

char *
add_bind (struct al_bind *binds, uint32_t *n, const char *spec)
{
  char *msg = NULL;
  if (*n >= AL_MAX_BINDS)
    return asprintf (&msg, "at most %d binds of each kind", AL_MAX_BINDS) < 0 ? NULL : msg;
  char *copy = strdup (spec);
  if (!copy)
    return NULL;
  char *colon = strchr (copy, ':');
  if (colon)
    *colon = '\0';
  char *src = realpath (copy, NULL);
  if (!src)
    {
      if (asprintf (&msg, "bind source %s: %s", copy, strerror (errno)) < 0)
        msg = NULL;
      free (copy);
      return msg;
    }
  const char *dst = colon ? colon + 1 : src;
  if (!al_path_ok ((const uint8_t *) dst, strlen (dst)))
    {
      if (asprintf (&msg, "bind destination '%s' must be an absolute path "
                    "without '.', '..' or '//'", dst) < 0)
        msg = NULL;
      free (copy);
      free (src);
      return msg;
    }
  binds[*n].src = src;
  binds[*n].dst = strdup (dst);
  free (copy);
  (*n)++;
  return NULL;
}
