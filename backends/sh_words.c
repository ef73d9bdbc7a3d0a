/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
#include "sh_words.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "xprintf.h"

char *
sh_quote (const char *s)
{
  size_t n = 2;
  for (const char *p = s; *p; p++)
    n += *p == '\'' ? 4 : 1;
  char *q = malloc (n + 1), *o = q;
  if (!q)
    return NULL;
  *o++ = '\'';
  for (const char *p = s; *p; p++)
    if (*p == '\'')
      o = stpcpy (o, "'\\''");
    else
      *o++ = *p;
  *o++ = '\'';
  *o = 0;
  return q;
}

/* Appends s to *buf (of *len bytes, room *cap); false when out of memory
 * (then *buf is freed). */
static bool
append (char **buf, size_t *len, size_t *cap, const char *s)
{
  size_t n = strlen (s);
  if (*len + n + 1 > *cap)
    {
      *cap = (*len + n + 1) * 2;
      char *b = realloc (*buf, *cap);
      if (!b)
        {
          free (*buf);
          *buf = NULL;
          return false;
        }
      *buf = b;
    }
  memcpy (*buf + *len, s, n + 1);
  *len += n;
  return true;
}

char *
sh_argv_words (const char *const *argv)
{
  size_t len = 0, cap = 1;
  char *out = calloc (1, 1);
  for (const char *const *a = argv; out && a && *a; a++)
    {
      char *q = sh_quote (*a);
      bool ok = q && append (&out, &len, &cap, " ") && append (&out, &len, &cap, q);
      free (q);
      if (!ok)
        {
          free (out);
          return NULL;
        }
    }
  return out;
}

static bool
name_ok (const char *e, size_t n)
{
  if (!n || (e[0] >= '0' && e[0] <= '9'))
    return false;
  for (size_t i = 0; i < n; i++)
    if (!(e[i] == '_' || (e[i] >= 'a' && e[i] <= 'z') || (e[i] >= 'A' && e[i] <= 'Z')
          || (e[i] >= '0' && e[i] <= '9')))
      return false;
  return true;
}

char *
sh_export_lines (const char *const *envp)
{
  size_t len = 0, cap = 1;
  char *out = calloc (1, 1);
  for (const char *const *e = envp; out && e && *e; e++)
    {
      const char *eq = strchr (*e, '=');
      if (!eq || !name_ok (*e, (size_t) (eq - *e)))
        continue;
      char *q = sh_quote (eq + 1);
      char *line = q ? xprintf ("export %.*s=%s\n", (int) (eq - *e), *e, q) : NULL;
      free (q);
      bool ok = line && append (&out, &len, &cap, line);
      free (line);
      if (!ok)
        {
          free (out);
          return NULL;
        }
    }
  return out;
}
