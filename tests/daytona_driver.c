/* SPDX-License-Identifier: MIT */
/* A Daytona sandbox's life through backends/daytona_sandbox.c alone, for
 * tests/daytona.bats against the Daytona double (the daemon's open and
 * close go through the same calls, plus the session layer):
 *
 *   airlock-daytona-driver acquire NAME [options]   print the sandbox as JSON
 *   airlock-daytona-driver release ID [--keep]       stop (keep) or delete
 *   airlock-daytona-driver state ID                  print its state
 *
 * options: --image IMG | --snapshot SNAP, --label K=V (repeatable),
 * --env K=V (repeatable), --cpus N, --memory GB, --disk GB,
 * --auto-stop MIN, --start-timeout S, --release (release at once after,
 * with --keep: stopped).  The API URL and the credential come from the
 * environment as the daemon gets them: DAYTONA_API_URL, DAYTONA_API_KEY or
 * DAYTONA_JWT_TOKEN + DAYTONA_ORGANIZATION_ID.  Progress lines go to
 * stderr as "progress: LINE"; errors as "error: TEXT", exit 1. */
#define _GNU_SOURCE
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daytona_sandbox.h"

static void
progress (void *ctx, const char *line)
{
  (void) ctx;
  fprintf (stderr, "progress: %s\n", line);
}

static int
fail (char *err)
{
  fprintf (stderr, "error: %s\n", err ? err : "failed");
  free (err);
  return 1;
}

int
main (int argc, char **argv)
{
  if (argc < 3)
    {
      fputs ("usage: airlock-daytona-driver acquire|release|state NAME-OR-ID [options]\n",
             stderr);
      return 2;
    }
  curl_global_init (CURL_GLOBAL_DEFAULT);
  const char *cmd = argv[1];
  const char *labels[32] = { 0 }, *env[32] = { 0 };
  size_t nl = 0, ne = 0;
  struct daytona_sandbox_options o = { .name = argv[2], .image = "debian:bookworm-slim",
                                       .start_timeout_s = 60, .progress = progress,
                                       .labels = labels, .env = env };
  bool keep = false, release = false;
  for (int i = 3; i < argc; i++)
    {
      const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
      if (!strcmp (a, "--keep"))
        keep = true;
      else if (!strcmp (a, "--release"))
        release = true;
      else if (!v)
        {
          fprintf (stderr, "%s needs a value\n", a);
          return 2;
        }
      else
        {
          i++;
          if (!strcmp (a, "--image"))
            o.image = v;
          else if (!strcmp (a, "--snapshot"))
            o.snapshot = v, o.image = NULL;
          else if (!strcmp (a, "--label") && nl < 31)
            labels[nl++] = v;
          else if (!strcmp (a, "--env") && ne < 31)
            env[ne++] = v;
          else if (!strcmp (a, "--cpus"))
            o.cpus = atoi (v);
          else if (!strcmp (a, "--memory"))
            o.memory_gb = atoi (v);
          else if (!strcmp (a, "--disk"))
            o.disk_gb = atoi (v);
          else if (!strcmp (a, "--auto-stop"))
            o.auto_stop_min = atoi (v);
          else if (!strcmp (a, "--start-timeout"))
            o.start_timeout_s = atoi (v);
          else
            {
              fprintf (stderr, "unknown option %s\n", a);
              return 2;
            }
        }
    }
  const char *url = getenv ("DAYTONA_API_URL");
  const char *key = getenv ("DAYTONA_API_KEY"), *jwt = getenv ("DAYTONA_JWT_TOKEN");
  struct daytona_auth auth = { .api_key = key && *key ? key : NULL,
                               .jwt = jwt && *jwt ? jwt : NULL,
                               .organization_id = getenv ("DAYTONA_ORGANIZATION_ID"),
                               .source = key && *key ? "DAYTONA_API_KEY" : "DAYTONA_JWT_TOKEN" };
  struct daytona_http *h = daytona_http_new (url ? url : "https://app.daytona.io/api", &auth);
  if (!h)
    return fail (NULL);
  char *err = NULL;
  int rc = 0;
  struct daytona_sandbox sb = { 0 };
  if (!strcmp (cmd, "acquire"))
    {
      if (daytona_sandbox_acquire (h, &o, &sb, &err) < 0)
        rc = fail (err);
      else
        {
          printf ("{\"id\":\"%s\",\"name\":\"%s\",\"state\":\"%s\",\"toolbox_url\":\"%s\","
                  "\"reused\":%s}\n",
                  sb.id, sb.name, sb.state, sb.toolbox_url, sb.reused ? "true" : "false");
          fflush (stdout);
          if (release && daytona_sandbox_release (h, &sb, keep, 60, &err) < 0)
            rc = fail (err);
        }
    }
  else if (!strcmp (cmd, "release") || !strcmp (cmd, "state"))
    {
      sb.id = strdup (argv[2]);
      sb.name = strdup (argv[2]);
      if (!strcmp (cmd, "release"))
        {
          if (daytona_sandbox_release (h, &sb, keep, 60, &err) < 0)
            rc = fail (err);
        }
      else
        {
          bool gone = false;
          char *st = daytona_sandbox_state (h, &sb, &gone, &err);
          if (st)
            printf ("%s\n", st);
          else if (gone)
            {
              printf ("gone\n");
              free (err);
            }
          else
            rc = fail (err);
          free (st);
        }
    }
  else
    {
      fprintf (stderr, "unknown command %s\n", cmd);
      rc = 2;
    }
  daytona_sandbox_clear (&sb);
  daytona_http_free (h);
  curl_global_cleanup ();
  return rc;
}
