/* SPDX-License-Identifier: MIT */
/* The approval gate's decision for one command (order in gate.h). */
#define _GNU_SOURCE
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gate.h"

static const char *const mode_names[]
    = { "interactive", "ask", "deny", "approve" };

int
gate_mode_parse (const char *text)
{
  for (int i = 0; i < 4; i++)
    if (text && !strcmp (text, mode_names[i]))
      return i;
  return -1;
}

const char *
gate_mode_name (enum gate_mode m)
{
  return (unsigned) m < 4 ? mode_names[m] : "?";
}

bool
id_set_has (const struct id_set *s, const char *id)
{
  for (size_t i = 0; s && i < s->n; i++)
    if (!strcmp (s->ids[i], id))
      return true;
  return false;
}

int
id_set_add (struct id_set *s, const char *id)
{
  if (id_set_has (s, id))
    return 0;
  if (s->n == s->cap)
    {
      size_t cap = s->cap ? 2 * s->cap : 8;
      char **ids = realloc (s->ids, cap * sizeof *ids);
      if (!ids)
        return -1;
      s->ids = ids;
      s->cap = cap;
    }
  if (!(s->ids[s->n] = strdup (id)))
    return -1;
  s->n++;
  return 0;
}

void
id_set_clear (struct id_set *s)
{
  for (size_t i = 0; i < s->n; i++)
    free (s->ids[i]);
  free (s->ids);
  *s = (struct id_set){ 0 };
}

/* A glob of the user's deny list against the whole normalized text and
 * against each simple command (so "sudo *" also catches /usr/bin/sudo
 * and sudo inside $(...)). */
static const char *
user_denied (const struct shell_parse *p, const char *const *globs)
{
  for (const char *const *g = globs; g && *g; g++)
    {
      if (!fnmatch (*g, p->normalized, FNM_CASEFOLD))
        return *g;
      for (size_t i = 0; i < p->n_cmds; i++)
        {
          char *text = shell_command_text (&p->cmds[i]);
          bool hit = text && !fnmatch (*g, text, FNM_CASEFOLD);
          free (text);
          if (hit)
            return *g;
        }
    }
  return NULL;
}

static void
keep (struct gate_decision *d, const struct rule *r)
{
  if (d->n_rules < GATE_MAX_RULES)
    d->rules[d->n_rules++] = r;
}

static void
decide (struct gate_decision *d, enum gate_verdict v, const char *by)
{
  d->verdict = v;
  d->decided_by = by;
}

/* Step 7: a dangerous rule nobody approved yet, by the mode. */
static void
decide_by_mode (const struct rules_settings *set, const struct gate_context *ctx,
                struct gate_decision *d)
{
  switch (ctx->mode)
    {
    case GATE_MODE_APPROVE:
      if (set->allow_approve_mode)
        return decide (d, GATE_ALLOW, "mode-approve");
      return decide (d, GATE_DENY, "approve-mode-forbidden");
    case GATE_MODE_INTERACTIVE:
    case GATE_MODE_ASK:
      return decide (d, GATE_ASK, "pending");
    case GATE_MODE_DENY:
    default:
      return decide (d, GATE_DENY, "mode-deny");
    }
}

/* Decide for a parsed command (p is the gate's to free). */
static void
decide_parsed (const struct ruleset *rs, const struct gate_context *ctx,
               struct shell_parse *p, struct gate_decision *d)
{
  *d = (struct gate_decision){ 0 };
  if (!p)
    return decide (d, GATE_DENY, "out-of-memory");
  d->truncated = p->truncated;
  const struct rules_settings *set = ruleset_settings (rs);
  struct rule_hit hits[64];
  bool gave_up = false;
  size_t n = ruleset_match_hits (rs, p, ctx->home, hits, 64, &gave_up);
  if (n > 64)
    n = 64; /* deny and block rules come first: none of them is lost */
  bool unsure = gave_up || p->truncated;

  /* 1-2: administrator deny rules, then hard blocks, that really
   * matched: what could not be judged does not hide what could. */
  for (size_t i = 0; i < n; i++)
    if (hits[i].rule->action == RULE_DENY && hits[i].sure)
      keep (d, hits[i].rule);
  if (d->n_rules)
    {
      shell_parse_free (p);
      return decide (d, GATE_DENY, "admin-deny");
    }
  bool floor = ctx->host_access || set->isolated_guards != GUARDS_ADMIN;
  for (size_t i = 0; floor && i < n; i++)
    if (hits[i].rule->action == RULE_BLOCK && hits[i].sure)
      keep (d, hits[i].rule);
  if (d->n_rules)
    {
      shell_parse_free (p);
      return decide (d, GATE_DENY, "hard-block");
    }
  /* 0: a command the parser or the matcher could not finish judging is
   * not run: naming the rules it might match would only mislead. */
  if (unsure)
    {
      shell_parse_free (p);
      return decide (d, GATE_DENY, "too-complex");
    }

  /* 3: the user's own deny list says what the agent may do, wherever it
   * runs. */
  d->deny_glob = user_denied (p, ctx->user_deny);
  shell_parse_free (p);
  if (d->deny_glob)
    return decide (d, GATE_DENY, "user-deny");
  if (!ctx->host_access && set->isolated_guards != GUARDS_FULL)
    return decide (d, GATE_ALLOW, "isolated");

  /* 4: bypass, only where the administrator allows it. */
  if (ctx->bypass && set->allow_bypass)
    return decide (d, GATE_ALLOW, "bypass");
  d->bypass_refused = ctx->bypass;

  /* 5-6: dangerous rules, less those already approved. */
  const struct rule *listed[GATE_MAX_RULES];
  size_t n_listed = 0;
  bool by_session = false;
  for (size_t i = 0; i < n; i++)
    {
      const struct rule *r = hits[i].rule;
      if (r->action != RULE_APPROVE)
        continue;
      bool always = id_set_has (ctx->always, r->id);
      bool session = !always && id_set_has (ctx->session, r->id);
      if (always || session)
        {
          by_session |= session;
          if (n_listed < GATE_MAX_RULES)
            listed[n_listed++] = r;
        }
      else
        keep (d, r);
    }
  if (!d->n_rules)
    {
      for (size_t i = 0; i < n_listed; i++)
        keep (d, listed[i]);
      return decide (d, GATE_ALLOW,
                     !n_listed     ? "no-rule"
                     : by_session ? "session-approval"
                                  : "allowlist");
    }

  /* 7: the mode. */
  decide_by_mode (set, ctx, d);
}

/* An interpreter on a terminal: steps 3- to 7 for the one built-in rule
 * its typed input amounts to (the command line was judged already). */
static void
decide_terminal (const struct ruleset *rs, const struct gate_context *ctx,
                 struct gate_decision *d)
{
  static const struct rule terminal_rule = {
    .id = GATE_TERMINAL_RULE,
    .description = "an interactive shell or interpreter on a terminal: what is "
                   "typed there runs unjudged, as arbitrary code",
    .action = RULE_APPROVE,
    .origin = "built in",
  };
  const struct rules_settings *set = ruleset_settings (rs);
  *d = (struct gate_decision){ 0 };
  if (!ctx->host_access && set->isolated_guards != GUARDS_FULL)
    return decide (d, GATE_ALLOW, "isolated");
  if (ctx->bypass && set->allow_bypass)
    return decide (d, GATE_ALLOW, "bypass");
  d->bypass_refused = ctx->bypass;
  keep (d, &terminal_rule);
  if (id_set_has (ctx->always, GATE_TERMINAL_RULE))
    return decide (d, GATE_ALLOW, "allowlist");
  if (id_set_has (ctx->session, GATE_TERMINAL_RULE))
    return decide (d, GATE_ALLOW, "session-approval");
  decide_by_mode (set, ctx, d);
}

void
gate_decide (const struct ruleset *rs, const struct gate_context *ctx,
             const char *command, struct gate_decision *d)
{
  decide_parsed (rs, ctx, shell_parse (command, strlen (command)), d);
}

enum gate_strictness
gate_strictness (const struct gate_decision *d)
{
  static const char *const blocked[]
      = { "hard-block", "admin-deny", "user-deny", NULL };
  static const char *const refused[] = { "too-complex", "out-of-memory", NULL };
  static const char *const free_to_run[]
      = { "no-rule", "isolated", "bypass", NULL };
  for (const char *const *b = blocked; *b; b++)
    if (!strcmp (d->decided_by, *b))
      return GATE_STRICT_BLOCKED;
  for (const char *const *r = refused; *r; r++)
    if (!strcmp (d->decided_by, *r))
      return GATE_STRICT_REFUSED;
  for (const char *const *f = free_to_run; *f; f++)
    if (!strcmp (d->decided_by, *f))
      return GATE_STRICT_ALLOW;
  return GATE_STRICT_APPROVAL;
}

char *
gate_denial_message (const struct gate_decision *d)
{
  char *why = NULL;
  size_t len = 0;
  FILE *f = open_memstream (&why, &len);
  if (!f)
    return NULL;
  if (!strcmp (d->decided_by, "admin-deny"))
    fputs ("refused by the administrator's policy", f);
  else if (!strcmp (d->decided_by, "hard-block"))
    fputs ("blocked: this command is never allowed", f);
  else if (!strcmp (d->decided_by, "user-deny"))
    fprintf (f, "refused by your deny list (policy.deny: \"%s\")", d->deny_glob);
  else if (!strcmp (d->decided_by, "mode-deny"))
    fputs ("needs approval, and nobody can approve it here (approval mode "
           "deny)", f);
  else if (!strcmp (d->decided_by, "approve-mode-forbidden"))
    fputs ("needs approval; the administrator does not allow the automatic "
           "approval mode", f);
  else if (!strcmp (d->decided_by, "too-complex"))
    fputs ("refused: the command is too long or too complex to judge; split "
           "it into simpler commands or put it in a script file", f);
  else if (!strcmp (d->decided_by, "timeout"))
    fputs ("needs approval and none came in time (silence is not consent)", f);
  else if (!strcmp (d->decided_by, "person") || !strcmp (d->decided_by, "client"))
    fputs ("denied by the person asked", f);
  else
    fprintf (f, "denied (%s)", d->decided_by);
  for (size_t i = 0; i < d->n_rules; i++)
    fprintf (f, "%s%s (%s)", i ? "; " : ": ", d->rules[i]->description,
             d->rules[i]->id);
  fputs (".  Do not retry it, rephrase it or reach the same result another "
         "way; ask the person you work for.", f);
  fclose (f);
  return why;
}

/* What the command runs its stdin as: each language the tokenizer found a
 * reader of (a shell without a script, python3 -, psql without -c ...),
 * plus "sh" for xargs and env, whose input becomes a command's words.
 * At most max; 0 when none reads it as code.  A parse that fails or is
 * truncated counts as a shell reading it (gate_decide refuses it anyway). */
static size_t
input_langs (const char *command, const char **langs, size_t max)
{
  struct shell_parse *p = shell_parse (command, strlen (command));
  size_t n = 0;
  if (!p || p->truncated)
    langs[n++] = "sh";
  for (size_t i = 0; p && i < p->n_cmds; i++)
    {
      const char *l = p->cmds[i].stdin_lang;
      const char *name = p->cmds[i].words[0];
      if (!l && (!strcmp (name, "xargs") || !strcmp (name, "env")))
        l = "sh";
      bool dup = !l;
      for (size_t k = 0; k < n && !dup; k++)
        dup = !strcmp (langs[k], l);
      if (!dup && n < max)
        langs[n++] = l;
    }
  shell_parse_free (p);
  return n;
}

/* One decision covering two: the stricter wins; when both need an
 * answer, one answer covers the rules of both. */
static void
merge (struct gate_decision *d, const struct gate_decision *in)
{
  if (in->verdict == GATE_ALLOW || d->verdict == GATE_DENY)
    return;
  if (in->verdict == GATE_DENY || d->verdict == GATE_ALLOW)
    {
      *d = *in;
      return;
    }
  for (size_t i = 0; i < in->n_rules; i++)
    {
      bool dup = false;
      for (size_t j = 0; j < d->n_rules; j++)
        dup |= d->rules[j] == in->rules[i];
      if (!dup)
        keep (d, in->rules[i]);
    }
}

void
gate_decide_input (const struct ruleset *rs, const struct gate_context *ctx,
                   const char *command, const char *input,
                   struct gate_decision *d)
{
  gate_decide (rs, ctx, command, d);
  const char *langs[16];
  size_t n = d->verdict == GATE_DENY ? 0 : input_langs (command, langs, 16);
  if (n && ctx->terminal)
    {
      struct gate_decision typed;
      decide_terminal (rs, ctx, &typed);
      /* Allowed both ways: the record names the rule that needed the
       * allowance (a mode, an allowlist), not "no rule". */
      if (d->verdict == GATE_ALLOW && typed.verdict == GATE_ALLOW
          && gate_strictness (d) == GATE_STRICT_ALLOW)
        *d = typed;
      else if (d->verdict == GATE_ALLOW && typed.verdict == GATE_ALLOW)
        for (size_t i = 0; i < typed.n_rules; i++)
          keep (d, typed.rules[i]);
      else
        merge (d, &typed);
    }
  if (d->verdict == GATE_DENY || !input || !*input)
    return;
  for (size_t i = 0; i < n && d->verdict != GATE_DENY; i++)
    {
      struct gate_decision in;
      decide_parsed (rs, ctx, shell_parse_script (langs[i], input,
                                                  strlen (input)),
                     &in);
      merge (d, &in);
    }
}
