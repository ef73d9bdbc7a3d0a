/* SPDX-License-Identifier: MIT */
/* A Modal sandbox's life through backends/modal_api.c alone, for
 * tests/modal.bats against the Modal double:
 *
 *   airlock-modal-driver start [options]         print the sandbox's ids
 *   airlock-modal-driver router SANDBOX TASK     print the router's URL
 *   airlock-modal-driver alive SANDBOX           "running" or "ended: WHY"
 *   airlock-modal-driver terminate SANDBOX
 *   airlock-modal-driver life [options]          start, --pause S, router,
 *                                                alive, terminate, alive:
 *                                                one process, one token
 *
 * options: --image I (default debian:bookworm-slim, or an im- id), --app A,
 * --name N, --timeout S, --idle-timeout S, --cpu MILLI, --memory MB,
 * --block-network, --cidr C (repeatable), --env K=V (repeatable),
 * --workdir D, --start-timeout S.  Credentials and the server come from
 * the environment as the daemon gets them (MODAL_TOKEN_ID,
 * MODAL_TOKEN_SECRET, MODAL_SERVER_URL, MODAL_ENVIRONMENT), never argv.
 * Progress lines go to stderr as "progress: LINE"; errors as "error:
 * TEXT", exit 1; a router call for a sandbox Modal no longer knows exits
 * 3 ("gone: TEXT").  The router JWT is never printed: its exp only. */
#define _GNU_SOURCE
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "modal_api.h"

#define MAX_LIST 32

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

struct args {
  struct modal_sandbox_spec spec;
  const char *env[MAX_LIST + 1], *cidrs[MAX_LIST + 1];
  size_t nenv, ncidr;
  unsigned pause_s;
};

/* Options from argv[from]: 0, or 2 (usage). */
static int
parse_options (struct args *g, int argc, char **argv, int from)
{
  g->spec = (struct modal_sandbox_spec){ .app_name = "airlock", .image = "debian:bookworm-slim",
                                         .start_timeout_s = 60, .progress = progress,
                                         .env = g->env, .allowed_cidrs = g->cidrs };
  for (int i = from; i < argc; i++)
    {
      const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
      if (!strcmp (a, "--block-network"))
        {
          g->spec.block_network = true;
          continue;
        }
      if (!v)
        {
          fprintf (stderr, "%s needs a value\n", a);
          return 2;
        }
      i++;
      unsigned n = (unsigned) strtoul (v, NULL, 10);
      if (!strcmp (a, "--image"))
        g->spec.image = v;
      else if (!strcmp (a, "--app"))
        g->spec.app_name = v;
      else if (!strcmp (a, "--name"))
        g->spec.name = v;
      else if (!strcmp (a, "--workdir"))
        g->spec.workdir = v;
      else if (!strcmp (a, "--timeout"))
        g->spec.timeout_secs = n;
      else if (!strcmp (a, "--idle-timeout"))
        g->spec.idle_timeout_secs = n;
      else if (!strcmp (a, "--cpu"))
        g->spec.milli_cpu = n;
      else if (!strcmp (a, "--memory"))
        g->spec.memory_mb = n;
      else if (!strcmp (a, "--start-timeout"))
        g->spec.start_timeout_s = n;
      else if (!strcmp (a, "--pause"))
        g->pause_s = n;
      else if (!strcmp (a, "--env") && g->nenv < MAX_LIST)
        g->env[g->nenv++] = v;
      else if (!strcmp (a, "--cidr") && g->ncidr < MAX_LIST)
        g->cidrs[g->ncidr++] = v;
      else
        {
          fprintf (stderr, "unknown option %s\n", a);
          return 2;
        }
    }
  return 0;
}

static int
do_start (struct modal_api *api, struct args *g, struct modal_sandbox *sb)
{
  char *err = NULL;
  if (modal_sandbox_start (api, &g->spec, sb, &err) < 0)
    return fail (err);
  printf ("{\"app_id\":\"%s\",\"image_id\":\"%s\",\"sandbox_id\":\"%s\",\"task_id\":\"%s\"}\n",
          sb->app_id, sb->image_id, sb->sandbox_id, sb->task_id);
  fflush (stdout);
  return 0;
}

static int
do_router (struct modal_api *api, const struct modal_sandbox *sb)
{
  char *url = NULL, *jwt = NULL, *err = NULL;
  long long exp = 0;
  bool gone = false;
  if (modal_router_access (api, sb, &url, &jwt, &exp, &gone, &err) < 0)
    {
      if (!gone)
        return fail (err);
      fprintf (stderr, "gone: %s\n", err ? err : "");
      free (err);
      return 3;
    }
  printf ("{\"url\":\"%s\",\"jwt\":%s,\"exp_in\":%lld}\n", url, *jwt ? "true" : "false",
          exp ? exp - (long long) time (NULL) : 0);
  fflush (stdout);
  explicit_bzero (jwt, strlen (jwt));
  free (jwt);
  free (url);
  return 0;
}

static int
do_alive (struct modal_api *api, const struct modal_sandbox *sb)
{
  char *why = NULL, *err = NULL;
  int r = modal_sandbox_alive (api, sb, &why, &err);
  if (r < 0)
    return fail (err);
  if (r)
    puts ("running");
  else
    printf ("ended: %s\n", why);
  fflush (stdout);
  free (why);
  return 0;
}

static int
do_terminate (struct modal_api *api, const struct modal_sandbox *sb)
{
  char *err = NULL;
  if (modal_sandbox_terminate (api, sb, &err) < 0)
    return fail (err);
  puts ("terminated");
  fflush (stdout);
  return 0;
}

/* start, a pause (a short-lived token expires), router, alive, terminate,
 * alive: all through one struct modal_api. */
static int
do_life (struct modal_api *api, struct args *g)
{
  struct modal_sandbox sb = { 0 };
  int rc = do_start (api, g, &sb);
  if (rc)
    return rc;
  if (g->pause_s)
    sleep (g->pause_s);
  if (!(rc = do_router (api, &sb)) && !(rc = do_alive (api, &sb))
      && !(rc = do_terminate (api, &sb)))
    rc = do_alive (api, &sb);
  modal_sandbox_clear (&sb);
  return rc;
}

int
main (int argc, char **argv)
{
  if (argc < 2)
    {
      fputs ("usage: airlock-modal-driver start|life [options] | router SANDBOX TASK | "
             "alive SANDBOX | terminate SANDBOX\n",
             stderr);
      return 2;
    }
  const char *cmd = argv[1];
  struct args g = { 0 };
  struct modal_sandbox sb = { 0 };
  bool lifecycle = !strcmp (cmd, "start") || !strcmp (cmd, "life");
  if (lifecycle && parse_options (&g, argc, argv, 2))
    return 2;
  if (!lifecycle)
    {
      int need = !strcmp (cmd, "router") ? 4 : 3;
      if (argc != need)
        {
          fprintf (stderr, "%s: wrong number of arguments\n", cmd);
          return 2;
        }
      sb.sandbox_id = argv[2];
      sb.task_id = need == 4 ? argv[3] : NULL;
    }
  curl_global_init (CURL_GLOBAL_DEFAULT);
  struct modal_api_options o = { .server_url = getenv ("MODAL_SERVER_URL"),
                                 .token_id = getenv ("MODAL_TOKEN_ID"),
                                 .token_secret = getenv ("MODAL_TOKEN_SECRET"),
                                 .source = "MODAL_TOKEN_ID/MODAL_TOKEN_SECRET",
                                 .environment = getenv ("MODAL_ENVIRONMENT") };
  struct modal_api *api = modal_api_new (&o);
  if (!api)
    return fail (NULL);
  int rc;
  if (!strcmp (cmd, "start"))
    {
      rc = do_start (api, &g, &sb);
      modal_sandbox_clear (&sb);
    }
  else if (!strcmp (cmd, "life"))
    rc = do_life (api, &g);
  else if (!strcmp (cmd, "router"))
    rc = do_router (api, &sb);
  else if (!strcmp (cmd, "alive"))
    rc = do_alive (api, &sb);
  else if (!strcmp (cmd, "terminate"))
    rc = do_terminate (api, &sb);
  else
    {
      fprintf (stderr, "unknown command %s\n", cmd);
      rc = 2;
    }
  modal_api_free (api);
  curl_global_cleanup ();
  return rc;
}
