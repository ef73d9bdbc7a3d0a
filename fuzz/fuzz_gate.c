/* SPDX-License-Identifier: MIT */
/* libFuzzer harness for the approval gate as a whole (policy/gate.c with
 * policy/rules.c, the tokenizer and the shipped policy/default.rules): the
 * gate judges command lines an agent wrote, so any bytes at all.
 *
 * Beyond "no crash, no sanitizer report, no leak", every input C checks
 * the gate's promise that harmless text never softens a verdict: for each
 * prefix P in `true; `, `: ; ` and `cd . && `, the decision for P+C is at
 * least as strict as the one for C (gate_strictness: allow < needs
 * approval < refused as too complex < blocked by a rule).  It also checks
 * that a decision is a pure function of the text (a second decision is the
 * same).
 *
 * The rules: AIRLOCK_FUZZ_RULES, else the shipped file of the source tree
 * this was built from (FUZZ_DEFAULT_RULES).
 *
 * Build: make build/fuzz_gate
 * Run:   build/fuzz_gate -max_total_time=120 fuzz/corpus/gate */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gate.h"

#ifndef FUZZ_DEFAULT_RULES
#define FUZZ_DEFAULT_RULES "policy/default.rules"
#endif

static struct ruleset *rules;

static const char *const prefixes[] = { "true; ", ": ; ", "cd . && " };

int
LLVMFuzzerInitialize (int *argc, char ***argv)
{
  (void) argc;
  (void) argv;
  const char *path = getenv ("AIRLOCK_FUZZ_RULES");
  char *err = NULL;
  rules = ruleset_load (path ? path : FUZZ_DEFAULT_RULES, NULL, &err);
  if (!rules)
    {
      fprintf (stderr, "fuzz_gate: %s\n", err);
      exit (2);
    }
  return 0;
}

static void
decide (const char *text, struct gate_decision *d)
{
  /* ask: a dangerous rule gives GATE_ASK, not a denial like a block */
  struct gate_context ctx = { .mode = GATE_MODE_ASK, .host_access = true,
                              .home = "/home/agent" };
  gate_decide (rules, &ctx, text, d);
}

static void
report (const char *what, const char *c, size_t size,
        const struct gate_decision *a, const char *text_b,
        const struct gate_decision *b)
{
  fprintf (stderr, "fuzz_gate: %s\n  C   = [%.*s] -> %s (%d)\n  P+C = [%s] -> "
           "%s (%d)\n", what, (int) size, c, a->decided_by,
           gate_strictness (a), text_b, b->decided_by, gate_strictness (b));
  abort ();
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  /* the gate takes C strings: a NUL ends the command as it would at the
   * API (JSON strings cannot hold one anyway) */
  char *c = malloc (size + 1);
  if (!c)
    return 0;
  memcpy (c, data, size);
  c[size] = '\0';

  struct gate_decision base, again;
  decide (c, &base);
  decide (c, &again);
  if (base.verdict != again.verdict
      || strcmp (base.decided_by, again.decided_by) != 0
      || base.n_rules != again.n_rules)
    report ("the same command, two decisions", c, size, &base, c, &again);

  for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++)
    {
      size_t pl = strlen (prefixes[i]);
      char *pc = malloc (pl + strlen (c) + 1);
      if (!pc)
        break;
      memcpy (pc, prefixes[i], pl);
      strcpy (pc + pl, c);
      struct gate_decision d;
      decide (pc, &d);
      if (gate_strictness (&d) < gate_strictness (&base))
        report ("a harmless prefix softened the verdict", c, size, &base, pc,
                &d);
      free (pc);
    }
  free (c);
  return 0;
}
