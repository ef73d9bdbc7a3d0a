/* SPDX-License-Identifier: MIT */
/* airlock: the unprivileged broker's command line.  A thin client: it
 * links libc and cJSON only, talks to the per-user daemon, and runs the
 * daemon program (airlock-daemon, airlock_daemon.c) for what needs the
 * approval gate's rules or the backends: `airlock daemon` itself and
 * `airlock policy`.  Loading fewer libraries is most of what a short
 * command costs. */
#include <stdio.h>
#include <string.h>

#include "client_commands.h"
#include "config_command.h"
#include "run_command.h"

static const char usage[]
    = "Usage: airlock COMMAND [OPTION]...\n"
      "Run an agent's commands somewhere safe.\n"
      "\n"
      "Commands:\n"
      "  run -- CMD [ARG]...       run one command in a fresh local sandbox\n"
      "  session ls|open|close     named sessions, kept by a per-user daemon\n"
      "  exec SESSION -- COMMAND   run a shell command line in a session\n"
      "  shell SESSION             type commands into a session\n"
      "  attach SESSION JOB        our terminal on a running job again\n"
      "  cp SRC S:DST, cp S:SRC DST  copy files into or out of session S\n"
      "  serve                     the JSON-lines API on stdin/stdout\n"
      "  mcp                       an MCP server on stdin/stdout, for agents\n"
      "  policy check -- COMMAND   what the approval gate decides, and why\n"
      "  config show               the effective settings and their origins\n"
      "  cache ls|prune|fetch      the SIF cache of the singularity backend\n"
      "  daemon status|stop        the per-user daemon that owns the sessions\n"
      "\n"
      "  airlock COMMAND --help   options of a command\n"
      "  airlock --version        version\n"
      "See airlock(1).\n";

int
main (int argc, char **argv)
{
  if (argc < 2 || !strcmp (argv[1], "--help") || !strcmp (argv[1], "-h"))
    {
      fputs (usage, argc < 2 ? stderr : stdout);
      return argc < 2 ? 2 : 0;
    }
  if (!strcmp (argv[1], "--version"))
    {
      printf ("airlock %s\n", AIRLOCK_VERSION);
      return 0;
    }
  if (!strcmp (argv[1], "run"))
    return run_command (argc - 1, argv + 1);
  if (!strcmp (argv[1], "session"))
    return session_command (argc - 1, argv + 1);
  if (!strcmp (argv[1], "exec"))
    return exec_command (argc - 1, argv + 1);
  if (!strcmp (argv[1], "cp"))
    return cp_command (argc - 1, argv + 1);
  if (!strcmp (argv[1], "shell"))
    return shell_command (argc - 1, argv + 1);
  if (!strcmp (argv[1], "attach"))
    return attach_command (argc - 1, argv + 1);
  if (!strcmp (argv[1], "serve"))
    return serve_command (argc - 1, argv + 1);
  if (!strcmp (argv[1], "mcp"))
    return mcp_command (argc - 1, argv + 1);
  if (!strcmp (argv[1], "policy"))
    return exec_daemon_program (argv, 2);
  if (!strcmp (argv[1], "config"))
    return config_command (argc - 1, argv + 1);
  if (!strcmp (argv[1], "cache"))
    return cache_command (argc - 1, argv + 1);
  if (!strcmp (argv[1], "daemon"))
    return daemon_command (argc, argv);
  fprintf (stderr, "airlock: unknown command '%s'\nTry 'airlock --help'.\n",
           argv[1]);
  return 2;
}
