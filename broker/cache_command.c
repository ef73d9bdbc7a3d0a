/* SPDX-License-Identifier: MIT */
/* airlock cache ls|prune [--all]|fetch IMAGE: the singularity backend's
 * SIF cache, through the daemon's op "cache" (docs/api.md), configured as
 * a session would be (the client's AIRLOCK_* variables go along). */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "client_commands.h"
#include "config.h"
#include "size_text.h"

static const char cache_usage[]
    = "Usage: airlock cache ls\n"
      "       airlock cache prune [--all]\n"
      "       airlock cache fetch IMAGE\n"
      "The singularity backend's SIFs, built once from docker://, oras:// and\n"
      "library:// images (see docs/cache.md).\n"
      "  ls            each SIF: image, size, last use, state, path; the total\n"
      "                and the cap (singularity.cache_max)\n"
      "  prune         evict the least recently used SIFs down to the cap\n"
      "  prune --all   remove every SIF no session uses\n"
      "  fetch IMAGE   build IMAGE's SIF now (e.g. on a login node), progress\n"
      "                on stderr; prints its path\n";

static const char *
when (double t, char *buf, size_t size)
{
  time_t s = (time_t) t;
  struct tm tm;
  if (t <= 0 || !localtime_r (&s, &tm) || !strftime (buf, size, "%Y-%m-%d %H:%M", &tm))
    snprintf (buf, size, "-");
  return buf;
}

static double
num (const cJSON *o, const char *key)
{
  const cJSON *v = cJSON_GetObjectItemCaseSensitive (o, key);
  return cJSON_IsNumber (v) ? v->valuedouble : 0;
}

static const char *
str (const cJSON *o, const char *key, const char *dflt)
{
  const cJSON *v = cJSON_GetObjectItemCaseSensitive (o, key);
  return cJSON_IsString (v) ? v->valuestring : dflt;
}

static void
print_ls (const cJSON *r)
{
  char s[SIZE_TEXT_MAX], t[32];
  const cJSON *e;
  int n = 0;
  cJSON_ArrayForEach (e, cJSON_GetObjectItemCaseSensitive (r, "entries"))
    {
      if (!n++)
        printf ("%-40s %8s  %-16s  %-9s %s\n", "IMAGE", "SIZE", "LAST USED", "STATE", "PATH");
      size_format_approx ((uint64_t) num (e, "size"), s, sizeof s);
      char state[64];
      snprintf (state, sizeof state, "%s%s", str (e, "state", "?"),
                cJSON_IsTrue (cJSON_GetObjectItemCaseSensitive (e, "in_use")) ? ",in-use" : "");
      printf ("%-40s %8s  %-16s  %-9s %s\n", str (e, "image", "(no record)"), s,
              when (num (e, "last_used"), t, sizeof t), state, str (e, "path", "?"));
    }
  char cap[SIZE_TEXT_MAX];
  size_format_approx ((uint64_t) num (r, "total"), s, sizeof s);
  size_format_approx ((uint64_t) num (r, "cache_max"), cap, sizeof cap);
  printf ("%d SIF%s, %s of %s (singularity.cache_max), in %s\n", n, n == 1 ? "" : "s", s,
          cap, str (r, "cache_dir", "?"));
}

int
cache_command (int argc, char **argv)
{
  if (argc < 2 || !strcmp (argv[1], "--help") || !strcmp (argv[1], "-h"))
    {
      fputs (cache_usage, argc < 2 ? stderr : stdout);
      return argc < 2 ? 2 : 0;
    }
  const char *verb = argv[1];
  cJSON *req = cJSON_CreateObject ();
  cJSON_AddStringToObject (req, "op", "cache");
  cJSON_AddStringToObject (req, "action", verb);
  bool ok = false;
  if (!strcmp (verb, "ls"))
    ok = argc == 2;
  else if (!strcmp (verb, "prune"))
    {
      ok = argc == 2 || (argc == 3 && !strcmp (argv[2], "--all"));
      if (argc == 3)
        cJSON_AddBoolToObject (req, "all", true);
    }
  else if (!strcmp (verb, "fetch"))
    {
      ok = argc == 3 && argv[2][0] != '-';
      /* a local file named relative to here: the daemon's cwd is not ours */
      char *real = ok && !strstr (argv[2], "://") && argv[2][0] != '/'
                       ? realpath (argv[2], NULL) : NULL;
      if (ok)
        cJSON_AddStringToObject (req, "image", real ? real : argv[2]);
      free (real);
    }
  if (!ok)
    {
      cJSON_Delete (req);
      fputs (cache_usage, stderr);
      return 2;
    }
  cJSON_AddItemToObject (req, "client_env", config_client_env (NULL));
  struct daemon_conn c = { .fd = connect_daemon ("airlock cache") };
  if (c.fd < 0)
    {
      cJSON_Delete (req);
      return 1;
    }
  cJSON *r = daemon_call (&c, req);
  bool prune = !strcmp (verb, "prune");
  for (const cJSON *ev; (ev = cJSON_GetObjectItem (r, "event"))
                        && cJSON_IsString (ev) && !strcmp (ev->valuestring, "progress");)
    {
      /* what prune removes is its output; a build's progress is not */
      const char *m = str (r, "message", NULL);
      if (m && prune)
        printf ("%s\n", m);
      else if (m)
        fprintf (stderr, "airlock: %s\n", m);
      fflush (stdout);
      cJSON_Delete (r);
      r = daemon_read (&c);
    }
  int rc = 0;
  if (!cJSON_IsTrue (cJSON_GetObjectItem (r, "ok")))
    rc = print_error (r, "cache");
  else if (!strcmp (verb, "ls"))
    print_ls (r);
  else if (prune)
    {
      char s[SIZE_TEXT_MAX];
      size_format_approx ((uint64_t) num (r, "freed"), s, sizeof s);
      int n = (int) num (r, "removed");
      printf ("removed %d SIF%s, %s freed\n", n, n == 1 ? "" : "s", n ? s : "nothing");
    }
  else
    {
      if (!cJSON_IsTrue (cJSON_GetObjectItem (r, "built")))
        fprintf (stderr, "airlock: %s: %s\n", argv[2],
                 strstr (argv[2], "://") ? "already in the cache"
                                         : "a local image, used in place");
      printf ("%s\n", str (r, "path", "?"));
    }
  cJSON_Delete (r);
  free (c.line);
  close (c.fd);
  return rc;
}
