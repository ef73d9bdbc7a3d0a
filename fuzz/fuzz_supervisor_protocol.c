/* SPDX-License-Identifier: MIT */
/* libFuzzer harness for sup_decode() (backends/supervisor_protocol.c): the
 * broker decodes what a sandbox's supervisor sends, and code in the
 * sandbox could forge any of it.
 *
 * Beyond "no crash, no sanitizer report", every input checks:
 *   - a rejection carries a non-empty `why`;
 *   - decoding is a pure function of the bytes (again, into a struct
 *     holding the previous input's message: the same answer);
 *   - an accepted message obeys the documented invariants (job >= 1,
 *     argv/envp NULL-terminated and bounded, strings inside the arena,
 *     scalars in range, a terminal's rows, columns and type together and
 *     each bounded, exited with exactly one of code and signal);
 *   - it re-encodes with the sup_put_* API into a message that decodes
 *     to the same content.
 *
 * Build: clang -g -O1 -fsanitize=fuzzer,address,undefined -Ihelper -Ibackends \
 *          fuzz/fuzz_supervisor_protocol.c backends/supervisor_protocol.c \
 *          helper/protocol.c -o build/fuzz_supervisor_protocol */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "supervisor_protocol.h"

static struct sup_msg first, second;
static struct al_writer w;

#define CHECK(cond)                                                            \
  do                                                                           \
    {                                                                          \
      if (!(cond))                                                             \
        {                                                                      \
          fprintf (stderr, "fuzz_supervisor_protocol: invariant failed: %s "  \
                   "(%s:%d)\n", #cond, __FILE__, __LINE__);                    \
          abort ();                                                            \
        }                                                                      \
    }                                                                          \
  while (0)

static void
check_str (const struct sup_msg *m, const char *s)
{
  const char *end = m->arena + sizeof m->arena;
  CHECK (s != NULL && s >= m->arena && s < end);
  CHECK (memchr (s, 0, (size_t) (end - s)) != NULL);
}

static void
check_msg (const struct sup_msg *m)
{
  CHECK (m->type >= SUP_SPAWN && m->type <= SUP_MSG_LAST_);
  CHECK ((m->present >> (SUP_F_LAST_ + 1)) == 0);
  if (SUP_HAS (m, SUP_F_JOB))
    CHECK (m->job >= 1);
  CHECK (m->argc <= SUP_MAX_ARGV && m->argv[m->argc] == NULL);
  for (uint32_t i = 0; i < m->argc; i++)
    check_str (m, m->argv[i]);
  CHECK (m->envc <= SUP_MAX_ENV && m->envp[m->envc] == NULL);
  for (uint32_t i = 0; i < m->envc; i++)
    {
      check_str (m, m->envp[i]);
      CHECK (m->envp[i][0] != '=' && strchr (m->envp[i], '='));
    }
  if (m->cwd)
    CHECK (m->cwd[0] == '/');
  if (SUP_HAS (m, SUP_F_MESSAGE))
    check_str (m, m->message);
  else
    CHECK (m->message && !m->message[0]);
  CHECK (m->data_len <= SUP_MAX_DATA);
  CHECK (m->stdin_mode <= 1 && m->eof <= 1 && m->script <= 1);
  CHECK (SUP_HAS (m, SUP_F_SIGNAL) ? m->signal >= 1 && m->signal <= 64 : m->signal == 0);
  CHECK (SUP_HAS (m, SUP_F_STREAM) ? m->stream >= 1 && m->stream <= 3 : m->stream == 0);
  CHECK (m->exit_code <= 255);
  if (SUP_HAS (m, SUP_F_ROWS))
    CHECK (m->rows >= 1 && m->rows <= SUP_MAX_PTY_SIDE);
  if (SUP_HAS (m, SUP_F_COLS))
    CHECK (m->cols >= 1 && m->cols <= SUP_MAX_PTY_SIDE);
  if (m->term)
    {
      check_str (m, m->term);
      CHECK (sup_term_ok (m->term));
    }
  if (m->type == SUP_SPAWN)
    {
      CHECK (m->argc >= 1 && m->cwd);
      /* A terminal is whole or absent. */
      CHECK (SUP_HAS (m, SUP_F_ROWS) == SUP_HAS (m, SUP_F_COLS));
      CHECK (SUP_HAS (m, SUP_F_ROWS) == (m->term != NULL));
    }
  if (m->type == SUP_RESIZE)
    CHECK (m->rows && m->cols && !m->term);
  if (m->type == SUP_EXITED)
    CHECK (SUP_HAS (m, SUP_F_EXIT_CODE) != SUP_HAS (m, SUP_F_SIGNAL));
}

static bool
same_str (const char *a, const char *b)
{
  return !a || !b ? a == b : !strcmp (a, b);
}

static void
check_same (const struct sup_msg *a, const struct sup_msg *b)
{
  CHECK (a->type == b->type && a->present == b->present);
  CHECK (a->job == b->job && a->stdin_mode == b->stdin_mode && a->eof == b->eof
         && a->signal == b->signal && a->pid == b->pid && a->stream == b->stream
         && a->exit_code == b->exit_code && a->script == b->script
         && a->rows == b->rows && a->cols == b->cols);
  CHECK (a->argc == b->argc && a->envc == b->envc);
  for (uint32_t i = 0; i < a->argc; i++)
    CHECK (same_str (a->argv[i], b->argv[i]));
  for (uint32_t i = 0; i < a->envc; i++)
    CHECK (same_str (a->envp[i], b->envp[i]));
  CHECK (same_str (a->cwd, b->cwd) && same_str (a->message, b->message)
         && same_str (a->term, b->term));
  CHECK (a->data_len == b->data_len
         && (!a->data_len || !memcmp (a->data, b->data, a->data_len)));
}

/* Every field the message carries, with the sup_put_* API. */
static size_t
encode (const struct sup_msg *m)
{
  sup_begin (&w, (enum sup_msg_type) m->type);
  const struct
  {
    enum sup_field_type f;
    uint32_t v;
  } scalars[] = {
    { SUP_F_JOB, m->job },       { SUP_F_STDIN, m->stdin_mode }, { SUP_F_EOF, m->eof },
    { SUP_F_SIGNAL, m->signal }, { SUP_F_PID, m->pid },          { SUP_F_STREAM, m->stream },
    { SUP_F_EXIT_CODE, m->exit_code }, { SUP_F_SCRIPT, m->script },
    { SUP_F_ROWS, m->rows },     { SUP_F_COLS, m->cols },
  };
  for (size_t i = 0; i < sizeof scalars / sizeof scalars[0]; i++)
    if (SUP_HAS (m, scalars[i].f))
      sup_put_u32 (&w, scalars[i].f, scalars[i].v);
  for (uint32_t i = 0; i < m->argc; i++)
    sup_put_str (&w, SUP_F_ARGV, m->argv[i]);
  for (uint32_t i = 0; i < m->envc; i++)
    sup_put_str (&w, SUP_F_ENV, m->envp[i]);
  if (SUP_HAS (m, SUP_F_CWD))
    sup_put_str (&w, SUP_F_CWD, m->cwd);
  if (SUP_HAS (m, SUP_F_MESSAGE))
    sup_put_str (&w, SUP_F_MESSAGE, m->message);
  if (SUP_HAS (m, SUP_F_TERM))
    sup_put_str (&w, SUP_F_TERM, m->term);
  if (SUP_HAS (m, SUP_F_DATA))
    sup_put_bytes (&w, SUP_F_DATA, m->data, m->data_len);
  return al_finish (&w);
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  const char *why1 = NULL, *why2 = NULL;
  int rc1 = sup_decode (data, size, &first, &why1);
  int rc2 = sup_decode (data, size, &second, &why2);
  CHECK (rc1 == rc2);
  if (rc1 != 0)
    {
      CHECK (rc1 == -1 && why1 && why1[0] && why1 == why2);
      return 0;
    }
  check_msg (&first);
  check_same (&first, &second);
  size_t n = encode (&first);
  CHECK (n >= AL_HEADER_SIZE);
  const char *why = NULL;
  if (sup_decode (w.buf, n, &second, &why) != 0)
    {
      fprintf (stderr, "fuzz_supervisor_protocol: re-encoded message rejected: %s\n", why);
      abort ();
    }
  check_same (&first, &second);
  return 0;
}
