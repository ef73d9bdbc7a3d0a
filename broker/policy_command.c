/* SPDX-License-Identifier: MIT */
/* `airlock policy`: ask the approval gate without running anything.
 *   check [--mode M] [--isolated] -- COMMAND   the decision and the rules
 *   rules                                       every rule in force
 *   test                                        run every rule's own cases */
#define _GNU_SOURCE
#include <getopt.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "approval.h"
#include "config.h"
#include "gate.h"
#include "policy_command.h"

static const char usage[]
    = "Usage: airlock policy check [--mode MODE] [--isolated] -- COMMAND\n"
      "       airlock policy rules\n"
      "       airlock policy test\n"
      "check: what the approval gate would decide for COMMAND (a shell command\n"
      "line), and which rules match; nothing runs and nothing is logged.\n"
      "  --mode MODE   interactive, ask, deny or approve (default: policy.mode,\n"
      "                auto meaning interactive at a terminal)\n"
      "  --isolated    judge it for an isolated sandbox without host access\n"
      "                (a container without host mounts, a cloud sandbox)\n"
      "rules: list the rules in force.  test: run every rule's match and\n"
      "no-match cases (after editing a policy file).\n"
      "Exit status of check: 0 allowed, 1 refused, 3 needs approval, 2 error.\n";

static const char *const action_names[] = { "deny", "block", "approve" };

static struct ruleset *
load (char **err)
{
  const char *def = getenv ("AIRLOCK_DEFAULT_RULES");
  return ruleset_load (def && *def ? def : AIRLOCK_DEFAULT_RULES,
                       AIRLOCK_ADMIN_RULES, err);
}

static int
check (int argc, char **argv, struct airlock_config *cfg, struct ruleset *rs)
{
  static const struct option opts[] = {
    { "mode", required_argument, NULL, 'm' },
    { "isolated", no_argument, NULL, 'i' },
    { NULL, 0, NULL, 0 },
  };
  int mode = (int) approval_default_mode (cfg, isatty (0));
  bool isolated = false;
  optind = 1;
  for (int o; (o = getopt_long (argc, argv, "+", opts, NULL)) != -1;)
    if (o == 'm' && (mode = gate_mode_parse (optarg)) >= 0)
      ;
    else if (o == 'i')
      isolated = true;
    else
      {
        fputs (usage, stderr);
        return 2;
      }
  if (optind >= argc)
    {
      fputs (usage, stderr);
      return 2;
    }
  size_t len = 1;
  for (int i = optind; i < argc; i++)
    len += strlen (argv[i]) + 1;
  char *command = calloc (1, len);
  for (int i = optind; i < argc; i++)
    {
      strcat (command, argv[i]);
      if (i + 1 < argc)
        strcat (command, " ");
    }
  const char *home = getenv ("HOME");
  struct gate_context ctx = {
    .mode = (enum gate_mode) mode,
    .host_access = !isolated,
    .bypass = config_bool (cfg, "policy.bypass"),
    .user_deny = config_list (cfg, "policy.deny"),
    .home = home,
  };
  /* The permanent allowlist is not read here: check shows what the rules
   * say about the command itself. */
  struct gate_decision d;
  gate_decide (rs, &ctx, command, &d);
  free (command);
  static const char *const verdicts[] = { "allow", "deny", "ask" };
  printf ("%s (%s; mode %s%s)\n", verdicts[d.verdict], d.decided_by,
          gate_mode_name ((enum gate_mode) mode),
          isolated ? ", isolated sandbox" : "");
  for (size_t i = 0; i < d.n_rules; i++)
    printf ("  %-6s %-28s %s  [%s]\n", action_names[d.rules[i]->action],
            d.rules[i]->id, d.rules[i]->description, d.rules[i]->origin);
  if (d.deny_glob)
    printf ("  policy.deny glob: %s\n", d.deny_glob);
  if (d.bypass_refused)
    printf ("  note: policy.bypass is set but the administrator does not allow "
            "it\n");
  return d.verdict == GATE_ALLOW ? 0 : d.verdict == GATE_DENY ? 1 : 3;
}

int
policy_command (int argc, char **argv)
{
  if (argc < 2 || !strcmp (argv[1], "--help"))
    {
      fputs (usage, argc < 2 ? stderr : stdout);
      return argc < 2 ? 2 : 0;
    }
  char *err = NULL;
  struct airlock_config *cfg = config_load (&err);
  struct ruleset *rs = cfg ? load (&err) : NULL;
  if (!rs)
    {
      fprintf (stderr, "airlock policy: %s\n", err ? err : "out of memory");
      free (err);
      config_free (cfg);
      return 2;
    }
  int rc = 2;
  if (!strcmp (argv[1], "check"))
    rc = check (argc - 1, argv + 1, cfg, rs);
  else if (!strcmp (argv[1], "rules") && argc == 2)
    {
      size_t cases, n = ruleset_count (rs, &cases);
      const struct rules_settings *set = ruleset_settings (rs);
      static const char *const guards[] = { "full", "floor", "admin" };
      printf ("%zu rules (%zu cases); allow_bypass %s, allow_approve_mode %s, "
              "isolated_guards %s, approval_timeout %us\n",
              n, cases, set->allow_bypass ? "yes" : "no",
              set->allow_approve_mode ? "yes" : "no",
              guards[set->isolated_guards], set->approval_timeout);
      rc = 0;
      for (size_t i = 0; i < n; i++)
        {
          const struct rule *r = ruleset_rule (rs, i);
          printf ("%-7s %-28s %s\n", action_names[r->action], r->id,
                  r->description);
        }
    }
  else if (!strcmp (argv[1], "test") && argc == 2)
    {
      char *report = NULL;
      size_t cases, n = ruleset_count (rs, &cases);
      int failures = ruleset_check_cases (rs, &report);
      if (report)
        fputs (report, stdout);
      printf ("%zu rules, %zu cases: %d failed\n", n, cases, failures);
      free (report);
      rc = failures ? 1 : 0;
    }
  else
    fputs (usage, stderr);
  ruleset_free (rs);
  config_free (cfg);
  return rc;
}
