/* SPDX-License-Identifier: MIT */
/* airlock cp: files into and out of a session's sandbox, through the
 * daemon's upload and download ops (docs/api.md). */
#define _GNU_SOURCE
#include <cjson/cJSON.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client_commands.h"

static const char cp_usage[]
    = "Usage: airlock cp [--timeout SEC] SRC SESSION:DST   (upload)\n"
      "       airlock cp [--timeout SEC] SESSION:SRC DST   (download)\n"
      "Copies a file or a directory (modes kept) into or out of a session's\n"
      "sandbox.  In the sandbox, paths are relative to the session's working\n"
      "directory and must stay in its workdir or /tmp.  An existing directory\n"
      "as the destination takes the copy under its own name; a download never\n"
      "overwrites a file on this host.  A local path with a colon: write ./a:b.\n";

/* "SESSION:path": the session's name (1-64 of letters, digits, -_.) and
 * the path after the colon; NULL for a local path. */
static char *
remote (const char *arg, const char **path)
{
  size_t n = strspn (arg, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.");
  if (n == 0 || n > 64 || arg[n] != ':')
    return NULL;
  *path = arg + n + 1;
  return strndup (arg, n);
}

/* The daemon runs elsewhere: it gets absolute paths. */
static char *
absolute (const char *p)
{
  if (p[0] == '/')
    return strdup (p);
  char *cwd = getcwd (NULL, 0), *out = NULL;
  if (cwd && asprintf (&out, "%s/%s", cwd, p) < 0)
    out = NULL;
  free (cwd);
  return out;
}

int
cp_command (int argc, char **argv)
{
  static const struct option opts[] = { { "timeout", required_argument, NULL, 't' },
                                        { "help", no_argument, NULL, 'h' },
                                        { NULL, 0, NULL, 0 } };
  double timeout = 0;
  int o;
  while ((o = getopt_long (argc, argv, "+t:h", opts, NULL)) != -1)
    {
      char *end = NULL;
      if (o == 'h')
        {
          fputs (cp_usage, stdout);
          return 0;
        }
      if (o != 't' || (timeout = strtod (optarg, &end)) <= 0 || *end)
        {
          fputs (cp_usage, stderr);
          return 2;
        }
    }
  if (argc - optind != 2)
    {
      fputs (cp_usage, stderr);
      return 2;
    }
  const char *src = argv[optind], *dst = argv[optind + 1], *spath = NULL, *dpath = NULL;
  char *ss = remote (src, &spath), *ds = remote (dst, &dpath);
  if (!ss == !ds)
    {
      fprintf (stderr, "airlock cp: %s\n%s", ss ? "both paths are in a session: one "
               "must be a local path" : "one path must be SESSION:PATH", cp_usage);
      free (ss);
      free (ds);
      return 2;
    }
  bool up = ds != NULL;
  char *local = absolute (up ? src : dst);
  cJSON *req = cJSON_CreateObject ();
  cJSON_AddStringToObject (req, "op", up ? "upload" : "download");
  cJSON_AddStringToObject (req, "session", up ? ds : ss);
  cJSON_AddStringToObject (req, "path", up ? dpath : spath);
  cJSON_AddStringToObject (req, up ? "source" : "dest", local ? local : "");
  if (timeout > 0)
    cJSON_AddNumberToObject (req, "timeout", timeout);
  free (local);
  free (ss);
  free (ds);
  struct daemon_conn c = { .fd = connect_daemon ("airlock cp") };
  if (c.fd < 0)
    {
      cJSON_Delete (req);
      return 1;
    }
  cJSON *r = daemon_call (&c, req);
  int rc = 0;
  if (!cJSON_IsTrue (cJSON_GetObjectItem (r, "ok")))
    rc = print_error (r, "cp");
  const cJSON *w;
  cJSON_ArrayForEach (w, cJSON_GetObjectItem (r, "skipped"))
    if (cJSON_IsString (w))
      fprintf (stderr, "airlock cp: skipped %s\n", w->valuestring);
  cJSON_Delete (r);
  free (c.line);
  close (c.fd);
  return rc;
}
