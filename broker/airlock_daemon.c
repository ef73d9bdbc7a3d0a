/* SPDX-License-Identifier: MIT */
/* airlock-daemon: the part of airlock that needs the approval gate or the
 * backends (PCRE2 and libunistring for the gate, libcurl for docker): the
 * per-user daemon itself, and `airlock policy`.  The `airlock` command
 * (airlock.c, which links libc and cJSON only) runs it for those, and
 * starts it when it needs the daemon; it keeps the name it was called by,
 * so that ps shows "airlock daemon". */
#include <curl/curl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon.h"
#include "policy_command.h"

static const char daemon_usage[]
    = "Usage: airlock daemon [--idle-exit SEC]   run the daemon in the foreground\n"
      "       airlock daemon status              is it running: pid, version, sessions\n"
      "       airlock daemon stop                close its sessions and stop it\n";

static int
daemon_command (int argc, char **argv)
{
  int idle = 60;
  for (int i = 1; i < argc; i++)
    if (!strcmp (argv[i], "--idle-exit") && i + 1 < argc)
      idle = atoi (argv[++i]);
    else
      {
        bool help = !strcmp (argv[i], "--help");
        fputs (daemon_usage, help ? stdout : stderr);
        return help ? 0 : 2;
      }
  const char *env = getenv ("AIRLOCK_DAEMON_IDLE_EXIT");
  if (env && *env)
    idle = atoi (env);
  /* Once, before any thread: the daytona backend's workers use libcurl,
   * whose global set-up is not thread-safe. */
  if (curl_global_init (CURL_GLOBAL_DEFAULT) != CURLE_OK)
    {
      fputs ("airlock daemon: cannot initialise libcurl\n", stderr);
      return 1;
    }
  return daemon_main (idle);
}

int
main (int argc, char **argv)
{
  if (argc >= 2 && !strcmp (argv[1], "daemon"))
    return daemon_command (argc - 1, argv + 1);
  if (argc >= 2 && !strcmp (argv[1], "policy"))
    return policy_command (argc - 1, argv + 1);
  if (argc == 2 && !strcmp (argv[1], "--version"))
    {
      printf ("airlock-daemon %s\n", AIRLOCK_VERSION);
      return 0;
    }
  fputs ("Usage: airlock daemon [--idle-exit SEC] | airlock policy ...\n"
         "airlock-daemon is the daemon and the approval gate of airlock, run "
         "by the airlock command; see airlock(1).\n", stderr);
  return 2;
}
