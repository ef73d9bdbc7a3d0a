/* SPDX-License-Identifier: MIT */
/* libFuzzer harness for al_decode() (helper/protocol.c).
 *
 * Beyond "no crash, no sanitizer report", every input checks:
 *   - a rejection carries a non-empty `why`;
 *   - decoding is a pure function of the bytes: decoding again into a
 *     struct that holds other, stale content gives the same answer;
 *   - an accepted message obeys the documented invariants (argc >= 1,
 *     argv/envp NULL-terminated, every string NUL-terminated inside the
 *     arena, paths absolute and canonical, scalars in range);
 *   - an accepted message re-encodes with the al_put_* API into no more
 *     bytes than the input, decodes again to the same content, and
 *     re-encoding that gives the same bytes (the encoding is canonical).
 *
 * Build: clang -g -O1 -fsanitize=fuzzer,address,undefined -Ihelper \
 *          fuzz/fuzz_protocol.c helper/protocol.c -o build/fuzz_protocol */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "protocol.h"

/* ~260 KiB each: static, never on the stack. */
static struct al_message first, second;
static struct al_writer w1, w2;

#define CHECK(cond)                                                            \
  do                                                                           \
    {                                                                          \
      if (!(cond))                                                             \
        {                                                                      \
          fprintf (stderr, "fuzz_protocol: invariant failed: %s (%s:%d)\n",   \
                   #cond, __FILE__, __LINE__);                                 \
          abort ();                                                            \
        }                                                                      \
    }                                                                          \
  while (0)

#define HAS(r, f) (((r)->present >> ((f) - AL_F_EVENT)) & 1)

/* A decoded string: non-NULL, starts inside the arena and ends (NUL) there. */
static void
check_str (const struct al_message *m, const char *s, size_t max)
{
  const char *end = m->arena + sizeof m->arena;
  CHECK (s != NULL);
  CHECK (s >= m->arena && s < end);
  const char *nul = memchr (s, 0, (size_t) (end - s));
  CHECK (nul != NULL);
  CHECK ((size_t) (nul - s) <= max);
}

/* Written independently of protocol.c's path_ok(), on purpose: absolute,
 * no empty, "." or ".." component, no trailing slash unless "/" itself. */
static void
check_path (const struct al_message *m, const char *p)
{
  check_str (m, p, AL_MAX_PATH);
  size_t n = strlen (p);
  CHECK (n >= 1 && p[0] == '/');
  if (n == 1)
    return;
  CHECK (p[n - 1] != '/');
  CHECK (strstr (p, "//") == NULL);
  CHECK (strstr (p, "/./") == NULL);
  CHECK (strstr (p, "/../") == NULL);
  CHECK (!(n >= 2 && strcmp (p + n - 2, "/.") == 0));
  CHECK (!(n >= 3 && strcmp (p + n - 3, "/..") == 0));
}

static void
check_run (const struct al_message *m)
{
  const struct al_run *r = &m->u.run;
  CHECK (r->argc >= 1 && r->argc <= AL_MAX_ARGV);
  CHECK (r->argv[r->argc] == NULL);
  for (uint32_t i = 0; i < r->argc; i++)
    check_str (m, r->argv[i], AL_MAX_STRING);
  CHECK (r->envc <= AL_MAX_ENV);
  CHECK (r->envp[r->envc] == NULL);
  for (uint32_t i = 0; i < r->envc; i++)
    {
      check_str (m, r->envp[i], AL_MAX_STRING);
      CHECK (r->envp[i][0] != '=' && strchr (r->envp[i], '=') != NULL);
    }
  check_path (m, r->workdir);
  if (r->rootfs)
    check_path (m, r->rootfs);
  CHECK (r->n_binds_ro <= AL_MAX_BINDS && r->n_binds_rw <= AL_MAX_BINDS);
  for (uint32_t i = 0; i < r->n_binds_ro; i++)
    {
      check_path (m, r->binds_ro[i].src);
      check_path (m, r->binds_ro[i].dst);
    }
  for (uint32_t i = 0; i < r->n_binds_rw; i++)
    {
      check_path (m, r->binds_rw[i].src);
      check_path (m, r->binds_rw[i].dst);
    }
  CHECK (r->network <= AL_NET_ALLOWLIST);
  CHECK (r->n_masks <= AL_MAX_MASKS);
  for (uint32_t i = 0; i < r->n_masks; i++)
    check_path (m, r->masks[i]);
}

static void
check_report (const struct al_message *m)
{
  const struct al_report *r = &m->u.report;
  CHECK ((r->present >> (AL_F_PRIVILEGE - AL_F_EVENT + 1)) == 0);
  CHECK (HAS (r, AL_F_EVENT));
  CHECK (r->exit_code <= 255 && r->timed_out <= 1);
  if (HAS (r, AL_F_SIGNAL))
    CHECK (r->signal >= 1 && r->signal <= 64);
  else
    CHECK (r->signal == 0);
  if (HAS (r, AL_F_MESSAGE))
    check_str (m, r->message, AL_MAX_STRING);
  else
    CHECK (r->message != NULL && r->message[0] == '\0');
  switch (r->event)
    {
    case AL_EV_STARTED:
      CHECK (HAS (r, AL_F_PID) && r->pid != 0);
      CHECK (r->limits >= AL_LIMITS_RLIMIT && r->limits <= AL_LIMITS_CGROUP_V2);
      CHECK (r->privilege >= AL_PRIV_UNPRIVILEGED && r->privilege <= AL_PRIV_ROOT);
      break;
    case AL_EV_SETUP_FAILED:
      CHECK (r->step >= 1 && r->step <= AL_STEP_MAX_);
      CHECK (strcmp (al_step_name (r->step), "unknown step") != 0);
      break;
    case AL_EV_EXITED:
      CHECK (HAS (r, AL_F_EXIT_CODE) != HAS (r, AL_F_SIGNAL));
      break;
    case AL_EV_TAP: /* no fields of its own: the descriptor rides outside */
      break;
    default:
      CHECK (!"unknown event accepted");
    }
}

static bool
same_str (const char *a, const char *b)
{
  if (!a || !b)
    return a == b;
  return strcmp (a, b) == 0;
}

static void
check_same (const struct al_message *a, const struct al_message *b)
{
  CHECK (a->type == b->type);
  if (a->type == AL_MSG_RUN)
    {
      const struct al_run *x = &a->u.run, *y = &b->u.run;
      CHECK (x->argc == y->argc && x->envc == y->envc);
      for (uint32_t i = 0; i < x->argc; i++)
        CHECK (same_str (x->argv[i], y->argv[i]));
      for (uint32_t i = 0; i < x->envc; i++)
        CHECK (same_str (x->envp[i], y->envp[i]));
      CHECK (same_str (x->workdir, y->workdir));
      CHECK (same_str (x->rootfs, y->rootfs));
      CHECK (x->n_binds_ro == y->n_binds_ro && x->n_binds_rw == y->n_binds_rw);
      for (uint32_t i = 0; i < x->n_binds_ro; i++)
        CHECK (same_str (x->binds_ro[i].src, y->binds_ro[i].src)
               && same_str (x->binds_ro[i].dst, y->binds_ro[i].dst));
      for (uint32_t i = 0; i < x->n_binds_rw; i++)
        CHECK (same_str (x->binds_rw[i].src, y->binds_rw[i].src)
               && same_str (x->binds_rw[i].dst, y->binds_rw[i].dst));
      CHECK (x->network == y->network && x->timeout_sec == y->timeout_sec
             && x->memory_max == y->memory_max && x->pids_max == y->pids_max);
      CHECK (x->n_masks == y->n_masks);
      for (uint32_t i = 0; i < x->n_masks; i++)
        CHECK (same_str (x->masks[i], y->masks[i]));
    }
  else
    {
      const struct al_report *x = &a->u.report, *y = &b->u.report;
      CHECK (x->present == y->present && x->event == y->event
             && x->pid == y->pid && x->limits == y->limits
             && x->exit_code == y->exit_code && x->signal == y->signal
             && x->timed_out == y->timed_out && x->step == y->step
             && x->err == y->err && x->privilege == y->privilege);
      CHECK (same_str (x->message, y->message));
    }
}

/* Re-encode a decoded message.  Zero scalars are left out (they decode to
 * zero anyway), so the result is never longer than the original. */
static size_t
encode (struct al_writer *w, const struct al_message *m)
{
  al_begin (w, (enum al_msg_type) m->type);
  if (m->type == AL_MSG_RUN)
    {
      const struct al_run *r = &m->u.run;
      for (uint32_t i = 0; i < r->argc; i++)
        al_put_str (w, AL_F_ARGV, r->argv[i]);
      for (uint32_t i = 0; i < r->envc; i++)
        al_put_str (w, AL_F_ENV, r->envp[i]);
      al_put_str (w, AL_F_WORKDIR, r->workdir);
      if (r->rootfs)
        al_put_str (w, AL_F_ROOTFS, r->rootfs);
      for (uint32_t i = 0; i < r->n_binds_ro; i++)
        al_put_pair (w, AL_F_BIND_RO, r->binds_ro[i].src, r->binds_ro[i].dst);
      for (uint32_t i = 0; i < r->n_binds_rw; i++)
        al_put_pair (w, AL_F_BIND_RW, r->binds_rw[i].src, r->binds_rw[i].dst);
      if (r->network)
        al_put_u32 (w, AL_F_NETWORK, r->network);
      if (r->timeout_sec)
        al_put_u32 (w, AL_F_TIMEOUT_SEC, r->timeout_sec);
      if (r->memory_max)
        al_put_u64 (w, AL_F_MEMORY_MAX, r->memory_max);
      if (r->pids_max)
        al_put_u32 (w, AL_F_PIDS_MAX, r->pids_max);
      for (uint32_t i = 0; i < r->n_masks; i++)
        al_put_str (w, AL_F_MASK, r->masks[i]);
    }
  else
    {
      const struct al_report *r = &m->u.report;
      const struct
      {
        enum al_field_type f;
        uint32_t v;
      } scalars[] = {
        { AL_F_EVENT, r->event },         { AL_F_PID, r->pid },
        { AL_F_LIMITS, r->limits },       { AL_F_EXIT_CODE, r->exit_code },
        { AL_F_SIGNAL, r->signal },       { AL_F_TIMED_OUT, r->timed_out },
        { AL_F_STEP, r->step },           { AL_F_ERRNO, r->err },
        { AL_F_PRIVILEGE, r->privilege },
      };
      for (size_t i = 0; i < sizeof scalars / sizeof scalars[0]; i++)
        if (HAS (r, scalars[i].f))
          al_put_u32 (w, scalars[i].f, scalars[i].v);
      if (HAS (r, AL_F_MESSAGE))
        al_put_str (w, AL_F_MESSAGE, r->message);
    }
  return al_finish (w);
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  const char *why1 = NULL, *why2 = NULL;
  int rc1 = al_decode (data, size, &first, &why1);

  /* `second` still holds the previous input's message: stale state must
   * not change the outcome. */
  int rc2 = al_decode (data, size, &second, &why2);
  CHECK (rc1 == rc2);
  if (rc1 != 0)
    {
      CHECK (rc1 == -1);
      CHECK (why1 != NULL && why1[0] != '\0');
      CHECK (why1 == why2);
      return 0;
    }
  CHECK (first.type == AL_MSG_RUN || first.type == AL_MSG_REPORT);
  CHECK (size >= AL_HEADER_SIZE && size <= AL_MAX_MESSAGE);
  if (first.type == AL_MSG_RUN)
    check_run (&first);
  else
    check_report (&first);
  check_same (&first, &second);

  size_t n1 = encode (&w1, &first);
  CHECK (n1 >= AL_HEADER_SIZE && n1 <= size);
  const char *why = NULL;
  if (al_decode (w1.buf, n1, &second, &why) != 0)
    {
      fprintf (stderr, "fuzz_protocol: re-encoded message rejected: %s\n",
               why);
      abort ();
    }
  check_same (&first, &second);

  size_t n2 = encode (&w2, &second);
  CHECK (n2 == n1 && memcmp (w1.buf, w2.buf, n1) == 0);
  return 0;
}
