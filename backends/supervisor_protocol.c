/* SPDX-License-Identifier: MIT */
/* Decoder and encoder helpers for the broker <-> supervisor messages. */
#include "supervisor_protocol.h"

#include <string.h>

bool
sup_term_ok (const char *term)
{
  size_t n = strlen (term);
  return n >= 1 && n <= SUP_MAX_TERM
         && strspn (term, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                          "0123456789._+-") == n;
}

enum kind { K_U32 = 1, K_STR, K_PATH, K_BYTES };

static const struct {
  uint8_t kind;
  uint8_t repeat;
} fields[SUP_F_LAST_ + 1] = {
  [SUP_F_JOB] = { K_U32, 0 },     [SUP_F_ARGV] = { K_STR, 1 },
  [SUP_F_ENV] = { K_STR, 1 },     [SUP_F_CWD] = { K_PATH, 0 },
  [SUP_F_STDIN] = { K_U32, 0 },   [SUP_F_DATA] = { K_BYTES, 0 },
  [SUP_F_EOF] = { K_U32, 0 },     [SUP_F_SIGNAL] = { K_U32, 0 },
  [SUP_F_PID] = { K_U32, 0 },     [SUP_F_STREAM] = { K_U32, 0 },
  [SUP_F_EXIT_CODE] = { K_U32, 0 }, [SUP_F_MESSAGE] = { K_STR, 0 },
  [SUP_F_SCRIPT] = { K_U32, 0 },   [SUP_F_ROWS] = { K_U32, 0 },
  [SUP_F_COLS] = { K_U32, 0 },     [SUP_F_TERM] = { K_STR, 0 },
};

#define BIT(f) (UINT32_C (1) << (f))
#define PTY_FIELDS (BIT (SUP_F_ROWS) | BIT (SUP_F_COLS) | BIT (SUP_F_TERM))
/* For each message: the fields it may carry, and those it must. */
static const struct {
  uint32_t allowed, required;
} messages[] = {
  [SUP_SPAWN - AL_MSG_SUP_FIRST]
  = { BIT (SUP_F_JOB) | BIT (SUP_F_ARGV) | BIT (SUP_F_ENV) | BIT (SUP_F_CWD)
          | BIT (SUP_F_STDIN) | BIT (SUP_F_SCRIPT) | PTY_FIELDS,
      BIT (SUP_F_JOB) | BIT (SUP_F_ARGV) | BIT (SUP_F_CWD) },
  [SUP_STDIN - AL_MSG_SUP_FIRST]
  = { BIT (SUP_F_JOB) | BIT (SUP_F_DATA) | BIT (SUP_F_EOF), BIT (SUP_F_JOB) },
  [SUP_SIGNAL - AL_MSG_SUP_FIRST]
  = { BIT (SUP_F_JOB) | BIT (SUP_F_SIGNAL), BIT (SUP_F_JOB) | BIT (SUP_F_SIGNAL) },
  [SUP_PING - AL_MSG_SUP_FIRST] = { 0, 0 },
  [SUP_STARTED - AL_MSG_SUP_FIRST]
  = { BIT (SUP_F_JOB) | BIT (SUP_F_PID), BIT (SUP_F_JOB) | BIT (SUP_F_PID) },
  [SUP_OUTPUT - AL_MSG_SUP_FIRST]
  = { BIT (SUP_F_JOB) | BIT (SUP_F_STREAM) | BIT (SUP_F_DATA),
      BIT (SUP_F_JOB) | BIT (SUP_F_STREAM) | BIT (SUP_F_DATA) },
  [SUP_EXITED - AL_MSG_SUP_FIRST]
  = { BIT (SUP_F_JOB) | BIT (SUP_F_EXIT_CODE) | BIT (SUP_F_SIGNAL),
      BIT (SUP_F_JOB) },
  [SUP_PONG - AL_MSG_SUP_FIRST] = { 0, 0 },
  [SUP_ERROR - AL_MSG_SUP_FIRST]
  = { BIT (SUP_F_JOB) | BIT (SUP_F_MESSAGE), BIT (SUP_F_MESSAGE) },
  [SUP_SCRIPT - AL_MSG_SUP_FIRST]
  = { BIT (SUP_F_JOB) | BIT (SUP_F_DATA) | BIT (SUP_F_EOF), BIT (SUP_F_JOB) },
  [SUP_RESIZE - AL_MSG_SUP_FIRST]
  = { BIT (SUP_F_JOB) | BIT (SUP_F_ROWS) | BIT (SUP_F_COLS),
      BIT (SUP_F_JOB) | BIT (SUP_F_ROWS) | BIT (SUP_F_COLS) },
};

#define FAIL(msg)                                                              \
  do                                                                           \
    {                                                                          \
      *why = (msg);                                                            \
      return -1;                                                               \
    }                                                                          \
  while (0)

static const char *
copy (struct sup_msg *m, size_t *used, const uint8_t *p, size_t n)
{
  if (n + 1 > sizeof m->arena - *used)
    return NULL;
  char *s = m->arena + *used;
  memcpy (s, p, n);
  s[n] = '\0';
  *used += n + 1;
  return s;
}

static int
store (struct sup_msg *m, size_t *used, const struct al_field *f,
       const char **why)
{
  const char *s = NULL;
  uint32_t u = 0;
  switch (fields[f->type].kind)
    {
    case K_U32:
      if (f->len != 4)
        FAIL ("u32 field with a length other than 4");
      u = al_u32 (f->value);
      break;
    case K_PATH:
      if (!al_path_ok (f->value, f->len))
        FAIL ("path is not absolute and canonical, or too long");
      /* fall through */
    case K_STR:
      if (f->len > AL_MAX_STRING || memchr (f->value, 0, f->len))
        FAIL ("string field too long or contains a NUL byte");
      if (!(s = copy (m, used, f->value, f->len)))
        FAIL ("strings exceed the decode arena");
      break;
    case K_BYTES:
      if (f->len > SUP_MAX_DATA)
        FAIL ("data field longer than the limit");
      m->data = f->value;
      m->data_len = f->len;
      return 0;
    }
  switch (f->type)
    {
    case SUP_F_JOB:
      if (u == 0)
        FAIL ("job 0 does not exist");
      m->job = u;
      break;
    case SUP_F_ARGV:
      if (m->argc >= SUP_MAX_ARGV)
        FAIL ("too many arguments");
      m->argv[m->argc++] = s;
      break;
    case SUP_F_ENV:
      if (m->envc >= SUP_MAX_ENV)
        FAIL ("too many environment entries");
      if (s[0] == '=' || !strchr (s, '='))
        FAIL ("environment entry is not NAME=value");
      m->envp[m->envc++] = s;
      break;
    case SUP_F_CWD: m->cwd = s; break;
    case SUP_F_MESSAGE: m->message = s; break;
    case SUP_F_STDIN:
    case SUP_F_EOF:
    case SUP_F_SCRIPT:
      if (u > 1)
        FAIL ("flag is not 0 or 1");
      *(f->type == SUP_F_STDIN ? &m->stdin_mode
        : f->type == SUP_F_EOF ? &m->eof : &m->script) = u;
      break;
    case SUP_F_SIGNAL:
      if (u < 1 || u > 64)
        FAIL ("signal number out of range");
      m->signal = u;
      break;
    case SUP_F_PID: m->pid = u; break;
    case SUP_F_STREAM:
      if (u < 1 || u > 3)
        FAIL ("stream is not 1, 2 or 3");
      m->stream = u;
      break;
    case SUP_F_ROWS:
    case SUP_F_COLS:
      if (u < 1 || u > SUP_MAX_PTY_SIDE)
        FAIL ("terminal rows or columns out of range");
      *(f->type == SUP_F_ROWS ? &m->rows : &m->cols) = u;
      break;
    case SUP_F_TERM:
      if (!sup_term_ok (s))
        FAIL ("terminal type is not a short name");
      m->term = s;
      break;
    case SUP_F_EXIT_CODE:
      if (u > 255)
        FAIL ("exit code out of range");
      m->exit_code = u;
      break;
    }
  return 0;
}

int
sup_decode (const uint8_t *buf, size_t len, struct sup_msg *m,
            const char **why)
{
  struct al_reader r;
  uint64_t mask = 0;
  for (int t = AL_MSG_SUP_FIRST; t <= SUP_MSG_LAST_; t++)
    mask |= UINT64_C (1) << t;
  if (al_read_header (&r, buf, len, mask, why) < 0)
    return -1;
  size_t used = 0;
  memset (m, 0, offsetof (struct sup_msg, arena));
  m->type = r.type;
  m->message = "";
  uint32_t allowed = messages[r.type - AL_MSG_SUP_FIRST].allowed;
  struct al_field f;
  int more;
  while ((more = al_read_field (&r, &f, why)) > 0)
    {
      if (f.type > SUP_F_LAST_ || !fields[f.type].kind)
        FAIL ("unknown field type");
      if (!(allowed & BIT (f.type)))
        FAIL ("field not allowed in this message type");
      if (!fields[f.type].repeat && (m->present & BIT (f.type)))
        FAIL ("duplicate field");
      m->present |= BIT (f.type);
      if (store (m, &used, &f, why) < 0)
        return -1;
    }
  if (more < 0)
    return -1;
  uint32_t required = messages[r.type - AL_MSG_SUP_FIRST].required;
  if ((m->present & required) != required)
    FAIL ("a required field is missing");
  if (m->type == SUP_EXITED
      && SUP_HAS (m, SUP_F_EXIT_CODE) == SUP_HAS (m, SUP_F_SIGNAL))
    FAIL ("exited needs exactly one of exit code and signal");
  uint32_t pty = m->present & PTY_FIELDS;
  if (m->type == SUP_SPAWN && pty && pty != PTY_FIELDS)
    FAIL ("a terminal needs rows, columns and type together");
  m->argv[m->argc] = NULL;
  m->envp[m->envc] = NULL;
  return 0;
}

