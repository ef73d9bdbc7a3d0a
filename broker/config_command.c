/* SPDX-License-Identifier: MIT */
/* `airlock config show [--json]`: the settings a session opened now would
 * get, each with where it came from (docs/config.md). */
#include "config_command.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"

static const char usage[]
    = "Usage: airlock config show [--json]\n"
      "The effective settings (what `airlock session open` would use now):\n"
      "each key, its value and its origin (default, a file, or an environment\n"
      "variable).  --json: one JSON object, nested by section, without origins.\n"
      "Values that may be secrets are shown as \"<hidden>\".\n";

int
config_command (int argc, char **argv)
{
  bool json = argc == 3 && !strcmp (argv[2], "--json");
  if (argc >= 2 && !strcmp (argv[1], "--help"))
    {
      fputs (usage, stdout);
      return 0;
    }
  if (argc < 2 || strcmp (argv[1], "show") || (argc == 3 && !json) || argc > 3)
    {
      fputs (usage, stderr);
      return 2;
    }
  char *err = NULL;
  struct airlock_config *cfg = config_load (&err);
  if (!cfg)
    {
      fprintf (stderr, "airlock config: %s\n", err);
      free (err);
      return 1;
    }
  char *text = json ? config_to_json (cfg) : config_describe (cfg);
  fputs (text, stdout);
  if (json)
    fputc ('\n', stdout);
  free (text);
  config_free (cfg);
  return 0;
}
