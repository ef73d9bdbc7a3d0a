/* SPDX-License-Identifier: MIT */
/* The airlock wire protocol: encoder and pure decoder (see protocol.h). */
#include "protocol.h"

#include <string.h>

enum value_kind { K_NONE = 0, K_U32, K_U64, K_STR, K_PATH, K_PAIR };

struct field_rule {
  uint8_t msg;    /* the one message type this field may appear in */
  uint8_t kind;   /* how its value is encoded */
  uint8_t repeat; /* may appear more than once */
};

/* The closed set of fields.  A type with no rule here is unknown. */
static const struct field_rule rules[] = {
  [AL_F_ARGV] = { AL_MSG_RUN, K_STR, 1 },
  [AL_F_ENV] = { AL_MSG_RUN, K_STR, 1 },
  [AL_F_WORKDIR] = { AL_MSG_RUN, K_PATH, 0 },
  [AL_F_ROOTFS] = { AL_MSG_RUN, K_PATH, 0 },
  [AL_F_BIND_RO] = { AL_MSG_RUN, K_PAIR, 1 },
  [AL_F_BIND_RW] = { AL_MSG_RUN, K_PAIR, 1 },
  [AL_F_NETWORK] = { AL_MSG_RUN, K_U32, 0 },
  [AL_F_TIMEOUT_SEC] = { AL_MSG_RUN, K_U32, 0 },
  [AL_F_MEMORY_MAX] = { AL_MSG_RUN, K_U64, 0 },
  [AL_F_PIDS_MAX] = { AL_MSG_RUN, K_U32, 0 },
  [AL_F_AS_INIT] = { AL_MSG_RUN, K_U32, 0 },
  [AL_F_MASK] = { AL_MSG_RUN, K_PATH, 1 },
  [AL_F_EVENT] = { AL_MSG_REPORT, K_U32, 0 },
  [AL_F_PID] = { AL_MSG_REPORT, K_U32, 0 },
  [AL_F_LIMITS] = { AL_MSG_REPORT, K_U32, 0 },
  [AL_F_EXIT_CODE] = { AL_MSG_REPORT, K_U32, 0 },
  [AL_F_SIGNAL] = { AL_MSG_REPORT, K_U32, 0 },
  [AL_F_TIMED_OUT] = { AL_MSG_REPORT, K_U32, 0 },
  [AL_F_STEP] = { AL_MSG_REPORT, K_U32, 0 },
  [AL_F_ERRNO] = { AL_MSG_REPORT, K_U32, 0 },
  [AL_F_MESSAGE] = { AL_MSG_REPORT, K_STR, 0 },
  [AL_F_PRIVILEGE] = { AL_MSG_REPORT, K_U32, 0 },
};
#define N_RULES (sizeof rules / sizeof rules[0])

static uint32_t
rd32 (const uint8_t *p)
{
  return (uint32_t) p[0] | (uint32_t) p[1] << 8 | (uint32_t) p[2] << 16
         | (uint32_t) p[3] << 24;
}

static uint16_t
rd16 (const uint8_t *p)
{
  return (uint16_t) (p[0] | p[1] << 8);
}

static uint64_t
rd64 (const uint8_t *p)
{
  return (uint64_t) rd32 (p) | (uint64_t) rd32 (p + 4) << 32;
}

/* A path the helper accepts: absolute, canonical ("/" alone, or "/a/b" with
 * no empty, "." or ".." component and no trailing slash), no NUL. */
bool
al_path_ok (const uint8_t *p, size_t n)
{
  if (n == 0 || n > AL_MAX_PATH || p[0] != '/' || memchr (p, 0, n))
    return false;
  if (n == 1)
    return true;
  size_t start = 1;
  for (size_t i = 1; i <= n; i++)
    {
      if (i < n && p[i] != '/')
        continue;
      size_t clen = i - start;
      if (clen == 0 || (clen == 1 && p[start] == '.')
          || (clen == 2 && p[start] == '.' && p[start + 1] == '.'))
        return false;
      start = i + 1;
    }
  return true;
}

struct decoder {
  struct al_message *out;
  size_t arena_used;
};

static const char *
arena_copy (struct decoder *d, const uint8_t *p, size_t n)
{
  if (n + 1 > sizeof d->out->arena - d->arena_used)
    return NULL;
  char *s = d->out->arena + d->arena_used;
  memcpy (s, p, n);
  s[n] = '\0';
  d->arena_used += n + 1;
  return s;
}

#define FAIL(msg)                                                              \
  do                                                                           \
    {                                                                          \
      *why = (msg);                                                            \
      return -1;                                                               \
    }                                                                          \
  while (0)

/* Store one validated field value into the message struct. */
static int
store_field (struct decoder *d, uint16_t type, const uint8_t *v, uint32_t n,
             const char **why)
{
  struct al_run *run = &d->out->u.run;
  struct al_report *rep = &d->out->u.report;
  const char *s = NULL, *s2 = NULL;
  uint32_t u = 0;
  uint64_t u64 = 0;

  switch (rules[type].kind)
    {
    case K_U32:
      if (n != 4)
        FAIL ("u32 field with a length other than 4");
      u = rd32 (v);
      break;
    case K_U64:
      if (n != 8)
        FAIL ("u64 field with a length other than 8");
      u64 = rd64 (v);
      break;
    case K_STR:
      if (n > AL_MAX_STRING)
        FAIL ("string field longer than the limit");
      if (memchr (v, 0, n))
        FAIL ("string field contains a NUL byte");
      s = arena_copy (d, v, n);
      break;
    case K_PATH:
      if (!al_path_ok (v, n))
        FAIL ("path is not absolute and canonical, or too long");
      s = arena_copy (d, v, n);
      break;
    case K_PAIR:
      {
        if (n < 4)
          FAIL ("pair field shorter than its first length");
        uint32_t a = rd32 (v);
        if (a > n - 4)
          FAIL ("pair field's first length overruns the field");
        if (!al_path_ok (v + 4, a) || !al_path_ok (v + 4 + a, n - 4 - a))
          FAIL ("bind path is not absolute and canonical, or too long");
        s = arena_copy (d, v + 4, a);
        s2 = arena_copy (d, v + 4 + a, n - 4 - a);
        if (!s2)
          FAIL ("strings exceed the decode arena");
        break;
      }
    default:
      FAIL ("field has no value kind");
    }
  if ((rules[type].kind >= K_STR) && !s)
    FAIL ("strings exceed the decode arena");

  switch (type)
    {
    case AL_F_ARGV:
      if (run->argc >= AL_MAX_ARGV)
        FAIL ("too many arguments");
      run->argv[run->argc++] = s;
      break;
    case AL_F_ENV:
      if (run->envc >= AL_MAX_ENV)
        FAIL ("too many environment entries");
      if (s[0] == '=' || !strchr (s, '='))
        FAIL ("environment entry is not NAME=value");
      run->envp[run->envc++] = s;
      break;
    case AL_F_WORKDIR: run->workdir = s; break;
    case AL_F_ROOTFS: run->rootfs = s; break;
    case AL_F_BIND_RO:
    case AL_F_BIND_RW:
      {
        struct al_bind *b = type == AL_F_BIND_RO ? run->binds_ro : run->binds_rw;
        uint32_t *nb = type == AL_F_BIND_RO ? &run->n_binds_ro : &run->n_binds_rw;
        if (*nb >= AL_MAX_BINDS)
          FAIL ("too many bind mounts");
        b[*nb].src = s;
        b[*nb].dst = s2;
        (*nb)++;
        break;
      }
    case AL_F_NETWORK:
      if (u > AL_NET_ALLOWLIST)
        FAIL ("unknown network mode");
      run->network = u;
      break;
    case AL_F_TIMEOUT_SEC: run->timeout_sec = u; break;
    case AL_F_MEMORY_MAX: run->memory_max = u64; break;
    case AL_F_PIDS_MAX: run->pids_max = u; break;
    case AL_F_AS_INIT:
      if (u > 1)
        FAIL ("as-init flag is not 0 or 1");
      run->as_init = u;
      break;
    case AL_F_MASK:
      if (run->n_masks >= AL_MAX_MASKS)
        FAIL ("too many masks");
      run->masks[run->n_masks++] = s;
      break;
    case AL_F_EVENT: rep->event = u; break;
    case AL_F_PID: rep->pid = u; break;
    case AL_F_LIMITS: rep->limits = u; break;
    case AL_F_EXIT_CODE: rep->exit_code = u; break;
    case AL_F_SIGNAL: rep->signal = u; break;
    case AL_F_TIMED_OUT: rep->timed_out = u; break;
    case AL_F_STEP: rep->step = u; break;
    case AL_F_ERRNO: rep->err = u; break;
    case AL_F_MESSAGE: rep->message = s; break;
    case AL_F_PRIVILEGE: rep->privilege = u; break;
    default: FAIL ("unknown field");
    }
  if (type >= AL_F_EVENT)
    rep->present |= UINT64_C (1) << (type - AL_F_EVENT);
  return 0;
}

#define HAS(rep, f) (((rep)->present >> ((f) - AL_F_EVENT)) & 1)

/* Cross-field rules, checked once every field is in. */
static int
check_complete (const struct al_message *m, const char **why)
{
  if (m->type == AL_MSG_RUN)
    {
      if (m->u.run.argc == 0)
        FAIL ("run request without a command");
      if (!m->u.run.workdir)
        FAIL ("run request without a workdir");
      return 0;
    }
  const struct al_report *r = &m->u.report;
  if (!HAS (r, AL_F_EVENT))
    FAIL ("report without an event");
  if (HAS (r, AL_F_EXIT_CODE) && r->exit_code > 255)
    FAIL ("exit code out of range");
  if (HAS (r, AL_F_SIGNAL) && (r->signal < 1 || r->signal > 64))
    FAIL ("signal number out of range");
  if (r->timed_out > 1)
    FAIL ("timed-out flag is not 0 or 1");
  switch (r->event)
    {
    case AL_EV_STARTED:
      if (!HAS (r, AL_F_PID) || !HAS (r, AL_F_LIMITS) || r->pid == 0)
        FAIL ("started report without a pid or limits");
      if (r->limits < AL_LIMITS_RLIMIT || r->limits > AL_LIMITS_CGROUP_V2)
        FAIL ("unknown limits kind");
      if (r->privilege < AL_PRIV_UNPRIVILEGED || r->privilege > AL_PRIV_ROOT)
        FAIL ("started report without a known privilege mode");
      return 0;
    case AL_EV_SETUP_FAILED:
      if (!HAS (r, AL_F_STEP) || r->step < 1 || r->step > AL_STEP_MAX_)
        FAIL ("setup-failed report without a valid step");
      return 0;
    case AL_EV_EXITED:
      if (HAS (r, AL_F_EXIT_CODE) == HAS (r, AL_F_SIGNAL))
        FAIL ("exited report needs exactly one of exit code and signal");
      return 0;
    case AL_EV_TAP:
      return 0;
    default:
      FAIL ("unknown event");
    }
}

int
al_read_header (struct al_reader *r, const uint8_t *buf, size_t len,
                uint64_t type_mask, const char **why)
{
  if (len < AL_HEADER_SIZE)
    FAIL ("message shorter than the header");
  if (rd32 (buf) != AL_MAGIC)
    FAIL ("bad magic: not an airlock message");
  if (rd16 (buf + 4) != AL_VERSION)
    FAIL ("unsupported protocol version");
  r->type = rd16 (buf + 6);
  if (r->type >= 64 || !(type_mask >> r->type & 1))
    FAIL ("unknown message type");
  if (rd32 (buf + 8) != len)
    FAIL ("header length disagrees with the message size");
  if (len > AL_MAX_MESSAGE)
    FAIL ("message larger than the limit");
  if (rd32 (buf + 12) != 0)
    FAIL ("reserved header bits set");
  r->buf = buf;
  r->len = len;
  r->off = AL_HEADER_SIZE;
  r->nfields = 0;
  return 0;
}

int
al_read_field (struct al_reader *r, struct al_field *f, const char **why)
{
  if (r->off >= r->len)
    return 0;
  if (r->len - r->off < AL_FIELD_HEADER_SIZE)
    FAIL ("truncated field header");
  if (++r->nfields > AL_MAX_FIELDS)
    FAIL ("too many fields");
  const uint8_t *p = r->buf + r->off;
  f->type = rd16 (p);
  f->len = rd32 (p + 4);
  if (rd16 (p + 2) != 0)
    FAIL ("reserved field bits set");
  r->off += AL_FIELD_HEADER_SIZE;
  if (f->len > r->len - r->off)
    FAIL ("field length overruns the message");
  f->value = r->buf + r->off;
  r->off += f->len;
  return 1;
}

uint32_t
al_u32 (const uint8_t *p)
{
  return rd32 (p);
}

int
al_decode (const uint8_t *buf, size_t len, struct al_message *out,
           const char **why)
{
  struct al_reader r;
  uint64_t mask = UINT64_C (1) << AL_MSG_RUN | UINT64_C (1) << AL_MSG_REPORT;
  if (al_read_header (&r, buf, len, mask, why) < 0)
    return -1;
  memset (&out->u, 0, sizeof out->u);
  out->type = r.type;
  if (r.type == AL_MSG_REPORT)
    out->u.report.message = "";
  struct decoder d = { .out = out, .arena_used = 0 };
  uint64_t seen = 0;
  struct al_field f;
  int more;
  while ((more = al_read_field (&r, &f, why)) > 0)
    {
      if (f.type >= N_RULES || rules[f.type].kind == K_NONE)
        FAIL ("unknown field type");
      if (rules[f.type].msg != r.type)
        FAIL ("field not allowed in this message type");
      /* Every field type is < 64: one bit each. */
      if (!rules[f.type].repeat && (seen >> f.type & 1))
        FAIL ("duplicate field");
      seen |= UINT64_C (1) << f.type;
      if (store_field (&d, f.type, f.value, f.len, why) < 0)
        return -1;
    }
  return more < 0 ? -1 : check_complete (out, why);
}

/* Encoder */

static void
wr32 (uint8_t *p, uint32_t v)
{
  p[0] = (uint8_t) v;
  p[1] = (uint8_t) (v >> 8);
  p[2] = (uint8_t) (v >> 16);
  p[3] = (uint8_t) (v >> 24);
}

static void
wr16 (uint8_t *p, uint16_t v)
{
  p[0] = (uint8_t) v;
  p[1] = (uint8_t) (v >> 8);
}

void
al_begin (struct al_writer *w, enum al_msg_type type)
{
  memset (w->buf, 0, AL_HEADER_SIZE);
  wr16 (w->buf + 6, (uint16_t) type);
  w->len = AL_HEADER_SIZE;
  w->failed = false;
}

/* Reserve a field of n value bytes and return where the value goes. */
static uint8_t *
put_field (struct al_writer *w, enum al_field_type f, size_t n)
{
  if (w->failed || n > AL_MAX_MESSAGE
      || AL_FIELD_HEADER_SIZE + n > sizeof w->buf - w->len)
    {
      w->failed = true;
      return NULL;
    }
  uint8_t *p = w->buf + w->len;
  wr16 (p, (uint16_t) f);
  wr16 (p + 2, 0);
  wr32 (p + 4, (uint32_t) n);
  w->len += AL_FIELD_HEADER_SIZE + n;
  return p + AL_FIELD_HEADER_SIZE;
}

void
al_put_u32 (struct al_writer *w, enum al_field_type f, uint32_t v)
{
  uint8_t *p = put_field (w, f, 4);
  if (p)
    wr32 (p, v);
}

void
al_put_u64 (struct al_writer *w, enum al_field_type f, uint64_t v)
{
  uint8_t *p = put_field (w, f, 8);
  if (p)
    {
      wr32 (p, (uint32_t) v);
      wr32 (p + 4, (uint32_t) (v >> 32));
    }
}

void
al_put_bytes (struct al_writer *w, enum al_field_type f, const void *data,
              size_t n)
{
  uint8_t *p = put_field (w, f, n);
  if (p)
    memcpy (p, data, n);
}

void
al_put_str (struct al_writer *w, enum al_field_type f, const char *s)
{
  al_put_bytes (w, f, s, strlen (s));
}

void
al_put_pair (struct al_writer *w, enum al_field_type f, const char *a,
             const char *b)
{
  size_t na = strlen (a), nb = strlen (b);
  uint8_t *p = put_field (w, f, 4 + na + nb);
  if (p)
    {
      wr32 (p, (uint32_t) na);
      memcpy (p + 4, a, na);
      memcpy (p + 4 + na, b, nb);
    }
}

size_t
al_finish (struct al_writer *w)
{
  if (w->failed)
    return 0;
  wr32 (w->buf, AL_MAGIC);
  wr16 (w->buf + 4, AL_VERSION);
  wr32 (w->buf + 8, (uint32_t) w->len);
  wr32 (w->buf + 12, 0);
  return w->len;
}

const char *
al_step_name (uint32_t step)
{
  static const char *const names[] = {
    [AL_STEP_PRIVILEGE] = "privilege check",
    [AL_STEP_REQUEST] = "reading the request",
    [AL_STEP_CONFIG] = "helper.conf",
    [AL_STEP_VALIDATE] = "validating the request",
    [AL_STEP_LIMITS] = "resource limits",
    [AL_STEP_NAMESPACES] = "creating namespaces",
    [AL_STEP_ID_MAPS] = "uid/gid maps",
    [AL_STEP_ROOTFS] = "building the new root",
    [AL_STEP_BIND] = "bind mounts",
    [AL_STEP_WORKDIR] = "workspace",
    [AL_STEP_PIVOT] = "switching root",
    [AL_STEP_LOOPBACK] = "network",
    [AL_STEP_CAPS] = "dropping capabilities",
    [AL_STEP_SECCOMP] = "seccomp filter",
    [AL_STEP_EXEC] = "starting the command",
    [AL_STEP_MONITOR] = "monitoring the sandbox",
  };
  if (step < 1 || step > AL_STEP_MAX_)
    return "unknown step";
  return names[step];
}
