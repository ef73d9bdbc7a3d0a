/* SPDX-License-Identifier: MIT */
/* The approval gate's rules are data: a shipped default file
 * (policy/default.rules, installed as DEFAULT_RULES) and the
 * administrator's file (ADMIN_RULES, /etc/airlock/policy.rules), which may
 * add rules, disable shipped ones and set the gate's administrator
 * settings.  The format is documented in docs/policy.md. */
#ifndef AIRLOCK_POLICY_RULES_H
#define AIRLOCK_POLICY_RULES_H

#include <stdbool.h>
#include <stddef.h>

#include "shell_parse.h"

struct egress_rule;  /* egress_policy.h */
struct egress_cidr;

enum rule_action
{
  RULE_DENY,    /* administrator deny: refused before anything else, in every
                   mode and on every backend; only the admin file has them */
  RULE_BLOCK,   /* hard block: refused; never approvable */
  RULE_APPROVE, /* dangerous: runs only when approved */
};

/* How much of the gate an isolated sandbox (a container without host
 * access, a cloud sandbox) gets. */
enum isolated_guards
{
  GUARDS_FULL,  /* the whole gate, as on the host */
  GUARDS_FLOOR, /* administrator deny rules and hard blocks (the default) */
  GUARDS_ADMIN, /* administrator deny rules only */
};

struct rule
{
  char *id;          /* [a-z0-9-]+, unique */
  char *description; /* one line, shown to the person asked */
  enum rule_action action;
  char *origin;      /* "FILE:LINE" of its `rule` line */
};

/* Administrator settings (`set KEY VALUE` lines of the admin file). */
struct rules_settings
{
  bool allow_bypass;        /* `set allow_bypass yes`: users may switch the
                               dangerous rules off (default no) */
  bool allow_approve_mode;  /* `set allow_approve_mode no` forbids the
                               auto-approve mode (default yes) */
  enum isolated_guards isolated_guards; /* `set isolated_guards full|floor|admin` */
  unsigned approval_timeout; /* `set approval_timeout SECONDS` (default 60,
                                1..3600): unanswered asks are denied */
  /* The caps on a sandbox's network allowlist (`network-allow PATTERN`,
   * `network-range CIDR`; egress_policy_check_caps): none given, no cap. */
  struct egress_rule *network_allow;
  size_t n_network_allow;
  struct egress_cidr *network_ranges;
  size_t n_network_ranges;
};

struct ruleset;

/* Load the default file, then the admin file when admin_path exists (a
 * missing admin file is not an error; an unreadable one is).  Every
 * pattern is compiled and every rule's cases are NOT run here (see
 * ruleset_check_cases).  NULL with *err (malloc'd, "FILE:LINE: what is
 * wrong") on any error: a broken rule file never means "no rules". */
struct ruleset *ruleset_load (const char *default_path, const char *admin_path,
                              char **err);
void ruleset_free (struct ruleset *rs);

const struct rules_settings *ruleset_settings (const struct ruleset *rs);

/* Every enabled rule matching the parsed command, in file order (admin
 * deny first, then block, then approve), at most max; returns how many
 * matched in all (may exceed max).  home: the user's home directory,
 * folded to "~" like $HOME and ${HOME} (NULL: none). */
size_t ruleset_match (const struct ruleset *rs, const struct shell_parse *p,
                      const char *home, const struct rule **out, size_t max);

/* ruleset_match, also telling in *gave_up whether matching gave up on
 * this command (a PCRE2 limit, or the work budget of one of its subjects
 * spent): the rules it could not finish are reported as matching (fail
 * closed), so a gate can say "too complex to judge" rather than name
 * them. */
size_t ruleset_match_checked (const struct ruleset *rs,
                              const struct shell_parse *p, const char *home,
                              const struct rule **out, size_t max,
                              bool *gave_up);

/* A rule a command matched; sure is false when it only counts as
 * matching because matching gave up (so a gate may still trust the sure
 * ones: a hard block that really matched is a hard block). */
struct rule_hit
{
  const struct rule *rule;
  bool sure;
};

/* ruleset_match_checked, with each hit's certainty. */
size_t ruleset_match_hits (const struct ruleset *rs,
                           const struct shell_parse *p, const char *home,
                           struct rule_hit *out, size_t max, bool *gave_up);

/* Look a rule up by id (NULL: none, or disabled). */
const struct rule *ruleset_find (const struct ruleset *rs, const char *id);

/* Run every rule's `match` and `no-match` cases; 0 when all pass, else the
 * number of failures with *report (malloc'd, one line per failure). */
int ruleset_check_cases (const struct ruleset *rs, char **report);

/* The number of enabled rules and of cases, for reports. */
size_t ruleset_count (const struct ruleset *rs, size_t *n_cases);

/* The text of the i-th case of the enabled rules (0 <= i < n_cases of
 * ruleset_count), escapes resolved (it may hold NUL bytes: *len); NULL
 * past the end. */
const char *ruleset_case (const struct ruleset *rs, size_t i, size_t *len);

/* Case text as rule files write it: \n \t \r \e \\ and \xHH are escapes,
 * any other backslash stands for itself (malloc'd; *len gets the length,
 * which counts NUL bytes written as \x00). */
char *rules_unescape_case (const char *s, size_t *len);

/* The i-th enabled rule (0 <= i < ruleset_count), in file order. */
const struct rule *ruleset_rule (const struct ruleset *rs, size_t i);

#endif
