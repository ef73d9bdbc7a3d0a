/* SPDX-License-Identifier: MIT */
/* `airlock run`: parse the command line into a local_run and run it. */
#define _GNU_SOURCE
#include "run_command.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "approval_client.h"
#include "approval_prompt.h"
#include "client_commands.h"
#include "config.h"
#include "egress_prepare.h"
#include "local.h"
#include "sandbox_options.h"

#ifndef HELPER_PATH
#define HELPER_PATH "/usr/local/libexec/airlock/airlock-helper"
#endif

#define DEFAULT_PATH "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

static const char run_usage[]
    = "Usage: airlock run [OPTION]... -- COMMAND [ARG]...\n"
      "Run one command in a fresh local sandbox and exit with its status.\n"
      "\n"
      "  --workdir DIR        read-write workspace and working directory\n"
      "                       (default: the current directory)\n"
      "  --rootfs DIR         use DIR, a directory you own holding an unpacked\n"
      "                       image, as / instead of the host's system dirs\n"
      "  --timeout SEC        kill the sandbox after SEC seconds (exit 124)\n"
      "  --network MODE       loopback (default), none, host (only where\n"
      "                       the administrator allows it), or allowlist\n"
      "                       (only the names of network.allow: docs/network.md)\n"
      "  --env NAME=VALUE     add to the sandbox's clean environment\n"
      "  --ro-bind SRC[:DST]  make SRC visible read-only at DST (default SRC)\n"
      "  --bind SRC[:DST]     make SRC visible read-write at DST\n"
      "  --memory BYTES       memory limit (K, M, G suffixes)\n"
      "  --pids N             limit on the number of processes\n"
      "  -v, --verbose        report which limits applied\n"
      "  -h, --help           show this help\n"
      "\n"
      "Exit status: the command's; 128+N if it died of signal N; 124 on\n"
      "timeout; 125 if the sandbox could not be set up; 126/127 if the\n"
      "command could not be run / was not found; 77 if the approval gate\n"
      "refused it (see airlock policy check).  See airlock(1).\n";

static int
usage_error (const char *fmt, const char *arg)
{
  fprintf (stderr, "airlock run: ");
  fprintf (stderr, fmt, arg);
  fprintf (stderr, "\nTry 'airlock run --help'.\n");
  return 2;
}

/* A path as the helper wants it: absolute and without symlinks, "." or
 * "..".  The helper refuses symlinks, so resolve them here, unprivileged. */
static char *
resolve (const char *path, const char *what)
{
  char *real = realpath (path, NULL);
  if (!real)
    fprintf (stderr, "airlock run: %s %s: %s\n", what, path, strerror (errno));
  return real;
}

static int
bind_option (struct al_bind *binds, uint32_t *n, const char *spec)
{
  char *err = add_bind (binds, n, spec);
  if (!err)
    return 0;
  int rc = usage_error ("%s", err);
  free (err);
  return rc;
}

/* argv as one shell command line, for the approval gate: words quoted
 * where the shell would otherwise split or expand them. */
static char *
command_line (char *const *argv)
{
  char *out = NULL;
  size_t len = 0;
  FILE *f = open_memstream (&out, &len);
  if (!f)
    return NULL;
  for (size_t i = 0; argv[i]; i++)
    {
      const char *w = argv[i];
      bool plain = *w && strspn (w, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                    "0123456789-_./=:,+@%") == strlen (w);
      if (i)
        fputc (' ', f);
      if (plain)
        fputs (w, f);
      else
        {
          fputc ('\'', f);
          for (; *w; w++)
            if (*w == '\'')
              fputs ("'\\''", f);
            else
              fputc (*w, f);
          fputc ('\'', f);
        }
    }
  fclose (f);
  return out;
}

/* A judge request for command (docs/api.md, judge), with a copy of the
 * client's env. */
static cJSON *
judge_request (const char *command, const char *mode, const char *answer,
               const cJSON *client_env)
{
  cJSON *req = cJSON_CreateObject ();
  cJSON_AddStringToObject (req, "op", "judge");
  cJSON_AddStringToObject (req, "command", command);
  cJSON_AddStringToObject (req, "approval", mode);
  if (answer)
    cJSON_AddStringToObject (req, "answer", answer);
  cJSON_AddItemToObject (req, "client_env", cJSON_Duplicate (client_env, 1));
  return req;
}

static const char *
field (const cJSON *r, const char *key)
{
  const cJSON *v = cJSON_GetObjectItemCaseSensitive (r, key);
  return cJSON_IsString (v) ? v->valuestring : NULL;
}

/* --network allowlist: the configuration's network.* keys, checked by
 * airlock-egress (administrator caps included) before anything runs. */
static int
prepare_allowlist (struct local_run *r)
{
  char *err = NULL, hash[17];
  struct airlock_config *cfg = config_load (&err);
  if (!cfg || egress_prepare (cfg, r, hash, &err) < 0)
    {
      fprintf (stderr, "airlock run: %s\n", err ? err : "out of memory");
      free (err);
      config_free (cfg);
      return AIRLOCK_EXIT_SETUP;
    }
  config_free (cfg);
  return 0;
}

/* The approval gate for a one-shot run: 0 to run, else the exit status.
 * The daemon judges (it keeps the rules compiled, and writes the audit
 * record: an unrecorded decision does not run); the person at the
 * terminal, when there is one to ask, is asked here. */
static int
run_gate (char *const *argv)
{
  char *err = NULL;
  struct airlock_config *cfg = config_load (&err);
  if (!cfg)
    {
      fprintf (stderr, "airlock run: %s\n", err ? err : "out of memory");
      free (err);
      return AIRLOCK_EXIT_SETUP;
    }
  const char *mode = approval_default_mode_name (cfg, approval_tty_available ());
  /* (the configuration is read once per run: the env sent with every
     request comes from it too) */
  cJSON *client_env = config_client_env (cfg);
  config_free (cfg);
  if (!strcmp (mode, "ask")) /* no API client here to answer */
    mode = "deny";
  char *command = command_line (argv);
  static struct daemon_conn c;
  if (!command || (c.fd = connect_daemon ("airlock run")) < 0)
    {
      if (!command)
        fputs ("airlock run: out of memory\n", stderr);
      free (command);
      cJSON_Delete (client_env);
      return AIRLOCK_EXIT_SETUP;
    }
  cJSON *r = daemon_call (&c, judge_request (command, mode, NULL, client_env));
  const char *verdict = field (r, "verdict");
  if (verdict && !strcmp (verdict, "ask"))
    {
      const char *lines[16];
      size_t n = 0;
      const cJSON *rule;
      cJSON_ArrayForEach (rule, cJSON_GetObjectItemCaseSensitive (r, "rules"))
        if (n < 16 && field (rule, "description"))
          lines[n++] = field (rule, "description");
      const cJSON *t = cJSON_GetObjectItemCaseSensitive (r, "timeout_ms");
      const char *answer = approval_prompt (command, lines, n,
                                            cJSON_IsNumber (t) ? (long long) t->valuedouble
                                                               : 60000);
      cJSON_Delete (r);
      r = daemon_call (&c, judge_request (command, mode, answer, client_env));
      verdict = field (r, "verdict");
    }
  free (c.line);
  close (c.fd);
  cJSON_Delete (client_env);
  int rc = 0;
  const cJSON *rules = cJSON_GetObjectItemCaseSensitive (r, "rules");
  if (field (r, "warning"))
    fprintf (stderr, "airlock run: %s\n", field (r, "warning"));
  if (!cJSON_IsTrue (cJSON_GetObjectItemCaseSensitive (r, "ok")) || !verdict)
    {
      const char *msg = field (cJSON_GetObjectItemCaseSensitive (r, "error"), "message");
      fprintf (stderr, "airlock run: %s\n", msg ? msg : "the daemon went away");
      rc = AIRLOCK_EXIT_SETUP;
    }
  else if (strcmp (verdict, "allow"))
    {
      const char *msg = field (r, "message");
      fprintf (stderr, "airlock run: %s\n", msg ? msg : "denied");
      rc = EXIT_DENIED;
    }
  else if (field (r, "decided_by") && !strcmp (field (r, "decided_by"), "mode-approve")
           && isatty (2))
    fprintf (stderr, "airlock run: approval mode \"approve\": running a "
             "command that needs approval (%s)\n",
             field (cJSON_GetArrayItem (rules, 0), "id") ?: "?");
  cJSON_Delete (r);
  free (command);
  return rc;
}

int
run_command (int argc, char **argv)
{
  static struct local_run r;
  static const char *env[AL_MAX_ENV + 1];
  uint32_t nenv = 0;
  const char *workdir = ".";
  enum { O_WORKDIR = 256, O_ROOTFS, O_TIMEOUT, O_NETWORK, O_ENV, O_RO_BIND,
         O_BIND, O_MEMORY, O_PIDS };
  static const struct option opts[] = {
    { "workdir", required_argument, NULL, O_WORKDIR },
    { "rootfs", required_argument, NULL, O_ROOTFS },
    { "timeout", required_argument, NULL, O_TIMEOUT },
    { "network", required_argument, NULL, O_NETWORK },
    { "env", required_argument, NULL, O_ENV },
    { "ro-bind", required_argument, NULL, O_RO_BIND },
    { "bind", required_argument, NULL, O_BIND },
    { "memory", required_argument, NULL, O_MEMORY },
    { "pids", required_argument, NULL, O_PIDS },
    { "verbose", no_argument, NULL, 'v' },
    { "help", no_argument, NULL, 'h' },
    { NULL, 0, NULL, 0 },
  };
  /* The sandbox's environment starts clean: only these pass in. */
  env[nenv++] = "PATH=" DEFAULT_PATH;
  const char *term = getenv ("TERM");
  static char term_entry[256];
  if (term && snprintf (term_entry, sizeof term_entry, "TERM=%s", term)
                  < (int) sizeof term_entry)
    env[nenv++] = term_entry;

  int c, rc;
  uint64_t v;
  optind = 1;
  while ((c = getopt_long (argc, argv, "+vh", opts, NULL)) != -1)
    switch (c)
      {
      case O_WORKDIR: workdir = optarg; break;
      case O_ROOTFS:
        if (!(r.rootfs = resolve (optarg, "--rootfs")))
          return 2;
        break;
      case O_TIMEOUT:
        if (!parse_number (optarg, &v, false) || v > UINT32_MAX)
          return usage_error ("--timeout wants whole seconds, not '%s'", optarg);
        r.timeout_sec = (uint32_t) v;
        break;
      case O_NETWORK:
        if (!strcmp (optarg, "loopback"))
          r.network = AL_NET_LOOPBACK;
        else if (!strcmp (optarg, "none"))
          r.network = AL_NET_NONE;
        else if (!strcmp (optarg, "host"))
          r.network = AL_NET_HOST;
        else if (!strcmp (optarg, "allowlist"))
          r.network = AL_NET_ALLOWLIST;
        else
          return usage_error ("--network is loopback, none, host or allowlist, "
                              "not '%s'", optarg);
        break;
      case O_ENV:
        if (!strchr (optarg, '=') || optarg[0] == '=')
          return usage_error ("--env wants NAME=VALUE, not '%s'", optarg);
        if (nenv >= AL_MAX_ENV)
          return usage_error ("too many --env%s", "");
        env[nenv++] = optarg;
        break;
      case O_RO_BIND:
        if ((rc = bind_option (r.binds_ro, &r.n_binds_ro, optarg)))
          return rc;
        break;
      case O_BIND:
        if ((rc = bind_option (r.binds_rw, &r.n_binds_rw, optarg)))
          return rc;
        break;
      case O_MEMORY:
        if (!parse_number (optarg, &r.memory_max, true) || r.memory_max == 0)
          return usage_error ("--memory wants a size like 512M, not '%s'", optarg);
        if (r.memory_max < MEMORY_MIN)
          return usage_error ("--memory %s is too small: at least 16M (less cannot "
                              "run a shell)", optarg);
        break;
      case O_PIDS:
        if (!parse_number (optarg, &v, false) || v == 0 || v > UINT32_MAX)
          return usage_error ("--pids wants a positive number, not '%s'", optarg);
        r.pids_max = (uint32_t) v;
        break;
      case 'v': r.verbose = true; break;
      case 'h': fputs (run_usage, stdout); return 0;
      default: return usage_error ("%s", "unknown option");
      }
  if (optind >= argc)
    return usage_error ("%s", "no command given (airlock run -- COMMAND)");
  if (!(r.workdir = resolve (workdir, "--workdir")))
    return 2;
  struct stat st;
  if (stat (r.workdir, &st) < 0 || !S_ISDIR (st.st_mode))
    return usage_error ("--workdir %s is not a directory", r.workdir);

  static char home[PATH_MAX + 8];
  snprintf (home, sizeof home, "HOME=%s", r.workdir);
  if (nenv < AL_MAX_ENV)
    env[nenv++] = home;
  env[nenv] = NULL;
  r.envp = env;
  r.argv = (const char **) argv + optind;
  /* What the sandbox may show, and airlock's own directories masked. */
  char *why = sandbox_view_check (&r);
  if (why)
    {
      fprintf (stderr, "airlock run: %s\n", why);
      free (why);
      return AIRLOCK_EXIT_SETUP;
    }
  if ((rc = run_gate (argv + optind)))
    return rc;
  if (r.network == AL_NET_ALLOWLIST && (rc = prepare_allowlist (&r)))
    return rc;
  r.helper = getenv ("AIRLOCK_HELPER");
  if (!r.helper || !*r.helper)
    r.helper = HELPER_PATH;
  rc = local_run (&r);
  egress_prepared_free (&r);
  sandbox_view_free (&r);
  return rc;
}
