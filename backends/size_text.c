/* SPDX-License-Identifier: MIT */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "size_text.h"

static const char units[] = "KMGT";

bool
size_parse (const char *s, uint64_t *bytes)
{
  uint64_t v = 0;
  const char *p = s;
  if (!isdigit ((unsigned char) *p))
    return false;
  for (; isdigit ((unsigned char) *p); p++)
    {
      if (v > (UINT64_MAX - 9) / 10)
        return false;
      v = v * 10 + (uint64_t) (*p - '0');
    }
  int shift = 0;
  if (*p)
    {
      const char *u = strchr (units, toupper ((unsigned char) *p));
      if (!u || p[1])
        return false;
      shift = 10 * (int) (u - units + 1);
    }
  if (v == 0 || (shift && v > (UINT64_MAX >> shift)))
    return false;
  *bytes = v << shift;
  return true;
}

void
size_format (uint64_t n, char *buf, size_t size)
{
  int u = -1;
  while (u < 3 && n >= 1024 && n % 1024 == 0)
    {
      n /= 1024;
      u++;
    }
  snprintf (buf, size, "%llu%s", (unsigned long long) n,
            u < 0 ? " bytes" : (char[]){ units[u], '\0' });
}

void
size_format_approx (uint64_t n, char *buf, size_t size)
{
  if (n < 1024)
    {
      snprintf (buf, size, "%llu bytes", (unsigned long long) n);
      return;
    }
  int u = 0;
  double v = (double) n / 1024;
  while (u < 3 && v >= 1024)
    {
      v /= 1024;
      u++;
    }
  /* "2G", not "2.0G"; 100 and over without a fraction */
  int len = snprintf (buf, size, v >= 100 ? "%.0f" : "%.1f", v);
  if (len >= 2 && (size_t) len < size && !strcmp (buf + len - 2, ".0"))
    len -= 2;
  if (len >= 0 && (size_t) len + 1 < size)
    {
      buf[len] = units[u];
      buf[len + 1] = '\0';
    }
}
