/* SPDX-License-Identifier: MIT */
/* libFuzzer harness for shell_parse() and policy_normalize()
 * (policy/shell_parse.c, policy/normalize.c): the approval gate reads
 * command lines an agent wrote, so any bytes at all.
 *
 * Beyond "no crash, no sanitizer report, no leak", every input checks:
 *   - the documented shape of the result: n_words >= 1, words and path
 *     non-NULL, words NULL-terminated, a known connector, known
 *     redirection operators with non-NULL targets, bounded depth;
 *   - shell_command_text joins the words with single spaces;
 *   - work <= SHELL_PARSE_WORK_PER_BYTE * (len + 1): time is linear in
 *     the input, so no input can make the gate hang (abort otherwise);
 *   - parsing is a pure function of the bytes: a second parse gives the
 *     same commands, the same work, and policy_normalize() gives the same
 *     normalized text.
 *
 * Build: make build/fuzz_shell_parse
 * Run:   build/fuzz_shell_parse -max_total_time=120 fuzz/corpus/shell_parse */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shell_parse.h"

#define CHECK(cond)                                                            \
  do                                                                           \
    {                                                                          \
      if (!(cond))                                                             \
        {                                                                      \
          fprintf (stderr, "fuzz_shell_parse: invariant failed: %s (%s:%d)\n", \
                   #cond, __FILE__, __LINE__);                                 \
          abort ();                                                            \
        }                                                                      \
    }                                                                          \
  while (0)

/* Nesting is at most 64 levels; a few more for wrapped commands' lists. */
#define MAX_DEPTH 80

static bool
known (const char *s, const char *const *set)
{
  for (; *set; set++)
    if (strcmp (s, *set) == 0)
      return true;
  return false;
}

static const char *const connectors[] = {
  ";", "&", "|", "|&", "&&", "||", "\n", "", NULL,
};

static const char *const redirect_ops[] = {
  "<", ">", ">>", ">|", "<>", "&>", "&>>", ">&", "<&", "<<", "<<-", "<<<",
  NULL,
};

static void
check_command (const struct shell_command *c)
{
  CHECK (c->n_words >= 1);
  CHECK (c->words != NULL && c->path != NULL);
  size_t total = 0;
  for (size_t i = 0; i < c->n_words; i++)
    {
      CHECK (c->words[i] != NULL);
      total += strlen (c->words[i]) + 1;
    }
  CHECK (c->words[c->n_words] == NULL);
  CHECK (c->connector != NULL && known (c->connector, connectors));
  CHECK (c->depth <= MAX_DEPTH);
  for (size_t i = 0; i < c->n_redirs; i++)
    {
      const char *op = c->redirs[i].op;
      CHECK (op != NULL && c->redirs[i].target != NULL);
      CHECK (known (op + strspn (op, "0123456789"), redirect_ops));
    }
  if (c->redirs == NULL)
    CHECK (c->n_redirs == 0);

  char *text = shell_command_text (c);
  CHECK (text != NULL);
  CHECK (strlen (text) == total - 1);
  CHECK (strncmp (text, c->words[0], strlen (c->words[0])) == 0);
  free (text);
}

static void
check_same (const struct shell_parse *a, const struct shell_parse *b)
{
  CHECK (a->n_cmds == b->n_cmds && a->work == b->work
         && a->truncated == b->truncated);
  CHECK (strcmp (a->normalized, b->normalized) == 0);
  for (size_t i = 0; i < a->n_cmds; i++)
    {
      const struct shell_command *x = &a->cmds[i], *y = &b->cmds[i];
      CHECK (x->n_words == y->n_words && x->n_redirs == y->n_redirs);
      CHECK (x->list == y->list && x->depth == y->depth
             && x->wrapped == y->wrapped && x->heredoc == y->heredoc);
      CHECK (strcmp (x->connector, y->connector) == 0);
      CHECK (strcmp (x->path, y->path) == 0);
      for (size_t k = 0; k < x->n_words; k++)
        CHECK (strcmp (x->words[k], y->words[k]) == 0);
    }
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  const char *text = (const char *) data;
  struct shell_parse *p = shell_parse (text, size);
  CHECK (p != NULL && p->normalized != NULL);
  if (p->work > SHELL_PARSE_WORK_PER_BYTE * (size + 1))
    {
      fprintf (stderr, "fuzz_shell_parse: work %llu for %zu bytes\n", p->work,
               size);
      abort ();
    }
  CHECK (p->n_cmds == 0 || p->cmds != NULL);
  for (size_t i = 0; i < p->n_cmds; i++)
    check_command (&p->cmds[i]);

  struct shell_parse *q = shell_parse (text, size);
  CHECK (q != NULL);
  check_same (p, q);
  shell_parse_free (q);

  char *n = policy_normalize (text, size);
  CHECK (n != NULL && strcmp (n, p->normalized) == 0);
  free (n);

  shell_parse_free (p);
  return 0;
}
