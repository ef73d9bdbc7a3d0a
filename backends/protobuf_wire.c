/* SPDX-License-Identifier: MIT */
/* The protobuf wire codec (see protobuf_wire.h). */
#define _GNU_SOURCE
#include "protobuf_wire.h"
#include "xprintf.h"

#include <stdlib.h>
#include <string.h>

#define FIELD_MAX ((1u << 29) - 1)

/* ---- encoder ---- */

void
pb_enc_free (struct pb_enc *e)
{
  free (e->buf);
  *e = (struct pb_enc){ 0 };
}

/* Room for n more bytes; false (and e->failed for good) when there is none. */
static bool
reserve (struct pb_enc *e, size_t n)
{
  if (e->failed)
    return false;
  if (n > PB_ENC_MAX - e->len)
    {
      e->failed = true;
      return false;
    }
  if (e->len + n <= e->cap)
    return true;
  size_t cap = e->cap ? e->cap : 64;
  while (cap < e->len + n)
    cap *= 2;
  uint8_t *p = realloc (e->buf, cap);
  if (!p)
    {
      e->failed = true;
      return false;
    }
  e->buf = p;
  e->cap = cap;
  return true;
}

static void
put_raw (struct pb_enc *e, const void *p, size_t n)
{
  if (n && reserve (e, n))
    {
      memcpy (e->buf + e->len, p, n);
      e->len += n;
    }
}

/* The varint of v into out (10 bytes at most): its length. */
static size_t
varint_bytes (uint64_t v, uint8_t out[10])
{
  size_t n = 0;
  while (v >= 0x80)
    {
      out[n++] = (uint8_t) (v | 0x80);
      v >>= 7;
    }
  out[n++] = (uint8_t) v;
  return n;
}

void
pb_put_varint (struct pb_enc *e, uint64_t v)
{
  uint8_t b[10];
  put_raw (e, b, varint_bytes (v, b));
}

void
pb_put_tag (struct pb_enc *e, uint32_t field, enum pb_wire_type wt)
{
  if (field == 0 || field > FIELD_MAX)
    {
      e->failed = true; /* a caller's bug: never put on the wire */
      return;
    }
  pb_put_varint (e, (uint64_t) field << 3 | (uint64_t) wt);
}

void
pb_put_uint64 (struct pb_enc *e, uint32_t field, uint64_t v)
{
  pb_put_tag (e, field, PB_WIRE_VARINT);
  pb_put_varint (e, v);
}

void
pb_put_uint32 (struct pb_enc *e, uint32_t field, uint32_t v)
{
  pb_put_uint64 (e, field, v);
}

void
pb_put_int64 (struct pb_enc *e, uint32_t field, int64_t v)
{
  pb_put_uint64 (e, field, (uint64_t) v);
}

void
pb_put_int32 (struct pb_enc *e, uint32_t field, int32_t v)
{
  pb_put_uint64 (e, field, (uint64_t) (int64_t) v);
}

void
pb_put_enum (struct pb_enc *e, uint32_t field, int32_t v)
{
  pb_put_int32 (e, field, v);
}

void
pb_put_bool (struct pb_enc *e, uint32_t field, bool v)
{
  pb_put_uint64 (e, field, v ? 1 : 0);
}

void
pb_put_fixed32 (struct pb_enc *e, uint32_t field, uint32_t v)
{
  uint8_t b[4];
  for (int i = 0; i < 4; i++)
    b[i] = (uint8_t) (v >> (8 * i));
  pb_put_tag (e, field, PB_WIRE_FIXED32);
  put_raw (e, b, 4);
}

void
pb_put_fixed64 (struct pb_enc *e, uint32_t field, uint64_t v)
{
  uint8_t b[8];
  for (int i = 0; i < 8; i++)
    b[i] = (uint8_t) (v >> (8 * i));
  pb_put_tag (e, field, PB_WIRE_FIXED64);
  put_raw (e, b, 8);
}

void
pb_put_float (struct pb_enc *e, uint32_t field, float v)
{
  uint32_t bits;
  memcpy (&bits, &v, 4);
  pb_put_fixed32 (e, field, bits);
}

void
pb_put_double (struct pb_enc *e, uint32_t field, double v)
{
  uint64_t bits;
  memcpy (&bits, &v, 8);
  pb_put_fixed64 (e, field, bits);
}

void
pb_put_bytes (struct pb_enc *e, uint32_t field, const void *p, size_t n)
{
  pb_put_tag (e, field, PB_WIRE_LEN);
  pb_put_varint (e, n);
  put_raw (e, p, n);
}

void
pb_put_string (struct pb_enc *e, uint32_t field, const char *s)
{
  pb_put_bytes (e, field, s, strlen (s));
}

void
pb_put_message (struct pb_enc *e, uint32_t field, const struct pb_enc *sub)
{
  if (sub->failed)
    e->failed = true;
  pb_put_bytes (e, field, sub->buf, sub->len);
}

/* A submessage's length is not known until its end: one byte is kept for
 * it (most are under 128 bytes), and pb_end moves the contents up when
 * the length needs more. */
size_t
pb_begin (struct pb_enc *e, uint32_t field)
{
  pb_put_tag (e, field, PB_WIRE_LEN);
  put_raw (e, "", 1);
  return e->len;
}

void
pb_end (struct pb_enc *e, size_t mark)
{
  if (e->failed || mark == 0 || mark > e->len)
    {
      e->failed = true;
      return;
    }
  uint8_t b[10];
  size_t body = e->len - mark;
  size_t n = varint_bytes (body, b);
  if (n > 1 && !reserve (e, n - 1))
    return;
  memmove (e->buf + mark - 1 + n, e->buf + mark, body);
  memcpy (e->buf + mark - 1, b, n);
  e->len += n - 1;
}

void
pb_put_map_entry (struct pb_enc *e, uint32_t field, const char *key, const char *value)
{
  size_t m = pb_begin (e, field);
  pb_put_string (e, 1, key);
  pb_put_string (e, 2, value);
  pb_end (e, m);
}

/* ---- decoder ---- */

void
pb_reader_init (struct pb_reader *r, const void *buf, size_t n)
{
  const uint8_t *b = buf ? buf : (const uint8_t *) ""; /* NULL + 0 is UB */
  *r = (struct pb_reader){ .start = b, .p = b, .end = b + (buf ? n : 0) };
}

static int
fail (struct pb_reader *r, const uint8_t *at, const char *why)
{
  if (!r->error)
    {
      r->error = why;
      r->error_at = (size_t) (at - r->start);
    }
  r->p = r->end;
  return -1;
}

static int
get_varint (struct pb_reader *r, uint64_t *v)
{
  const uint8_t *at = r->p;
  uint64_t x = 0;
  for (unsigned i = 0; i < 10; i++)
    {
      if (r->p >= r->end)
        return fail (r, at, "truncated varint");
      uint8_t b = *r->p++;
      if (i == 9 && b > 1)
        return fail (r, at, b & 0x80 ? "varint over 10 bytes" : "varint over 64 bits");
      x |= (uint64_t) (b & 0x7f) << (7 * i);
      if (!(b & 0x80))
        {
          *v = x;
          return 0;
        }
    }
  return fail (r, at, "varint over 10 bytes"); /* not reached */
}

static int
get_fixed (struct pb_reader *r, unsigned n, uint64_t *v)
{
  if ((size_t) (r->end - r->p) < n)
    return fail (r, r->p, n == 4 ? "truncated fixed32" : "truncated fixed64");
  uint64_t x = 0;
  for (unsigned i = 0; i < n; i++)
    x |= (uint64_t) r->p[i] << (8 * i);
  r->p += n;
  *v = x;
  return 0;
}

int
pb_next (struct pb_reader *r, struct pb_field *f)
{
  if (r->error)
    return -1;
  if (r->p >= r->end)
    return 0;
  const uint8_t *at = r->p;
  uint64_t tag;
  if (get_varint (r, &tag) < 0)
    return -1;
  if (tag > UINT32_MAX)
    return fail (r, at, "field tag over 32 bits");
  *f = (struct pb_field){ .number = (uint32_t) (tag >> 3), .wire = tag & 7 };
  if (f->number == 0)
    return fail (r, at, "field number 0");
  switch ((unsigned) (tag & 7))
    {
    case PB_WIRE_VARINT:
      return get_varint (r, &f->bits) < 0 ? -1 : 1;
    case PB_WIRE_FIXED64:
      return get_fixed (r, 8, &f->bits) < 0 ? -1 : 1;
    case PB_WIRE_FIXED32:
      return get_fixed (r, 4, &f->bits) < 0 ? -1 : 1;
    case PB_WIRE_LEN:
      {
        uint64_t n;
        if (get_varint (r, &n) < 0)
          return -1;
        if (n > (uint64_t) (r->end - r->p))
          return fail (r, at, "length past the end of the message");
        f->bytes = (struct pb_slice){ r->p, (size_t) n };
        r->p += n;
        return 1;
      }
    case 3:
    case 4:
      return fail (r, at, "group (wire type 3 or 4): not supported");
    default:
      return fail (r, at, "invalid wire type 6 or 7");
    }
}

int
pb_sub (struct pb_reader *parent, const struct pb_field *f, struct pb_reader *child)
{
  if (f->wire != PB_WIRE_LEN)
    return fail (parent, parent->p, "a submessage field is not length-delimited");
  if (parent->depth >= PB_MAX_DEPTH)
    return fail (parent, f->bytes.p, "submessages nested too deep");
  pb_reader_init (child, f->bytes.p, f->bytes.n);
  child->depth = parent->depth + 1;
  return 0;
}

int
pb_sub_error (struct pb_reader *parent, const struct pb_reader *child)
{
  const char *why = child->error ? child->error : "malformed submessage";
  if (parent->error)
    return -1;
  /* the child's bytes lie inside the parent's buffer */
  fail (parent, child->start + child->error_at, why);
  return -1;
}

static int
want (struct pb_reader *r, const struct pb_field *f, enum pb_wire_type wt)
{
  if (f->wire == wt)
    return 0;
  static const char *const why[] = {
    [PB_WIRE_VARINT] = "a field's wire type is not varint as expected",
    [PB_WIRE_FIXED64] = "a field's wire type is not fixed64 as expected",
    [PB_WIRE_LEN] = "a field's wire type is not length-delimited as expected",
    [PB_WIRE_FIXED32] = "a field's wire type is not fixed32 as expected",
  };
  /* the field was read already: point at what follows it */
  return fail (r, r->p, why[wt]);
}

int
pb_read_uint64 (struct pb_reader *r, const struct pb_field *f, uint64_t *v)
{
  if (want (r, f, PB_WIRE_VARINT) < 0)
    return -1;
  *v = f->bits;
  return 0;
}

int
pb_read_uint32 (struct pb_reader *r, const struct pb_field *f, uint32_t *v)
{
  uint64_t x;
  if (pb_read_uint64 (r, f, &x) < 0)
    return -1;
  *v = (uint32_t) x;
  return 0;
}

int
pb_read_int64 (struct pb_reader *r, const struct pb_field *f, int64_t *v)
{
  uint64_t x;
  if (pb_read_uint64 (r, f, &x) < 0)
    return -1;
  *v = (int64_t) x;
  return 0;
}

int
pb_read_int32 (struct pb_reader *r, const struct pb_field *f, int32_t *v)
{
  uint64_t x;
  if (pb_read_uint64 (r, f, &x) < 0)
    return -1;
  *v = (int32_t) (uint32_t) x;
  return 0;
}

int
pb_read_bool (struct pb_reader *r, const struct pb_field *f, bool *v)
{
  uint64_t x;
  if (pb_read_uint64 (r, f, &x) < 0)
    return -1;
  *v = x != 0;
  return 0;
}

int
pb_read_fixed32 (struct pb_reader *r, const struct pb_field *f, uint32_t *v)
{
  if (want (r, f, PB_WIRE_FIXED32) < 0)
    return -1;
  *v = (uint32_t) f->bits;
  return 0;
}

int
pb_read_fixed64 (struct pb_reader *r, const struct pb_field *f, uint64_t *v)
{
  if (want (r, f, PB_WIRE_FIXED64) < 0)
    return -1;
  *v = f->bits;
  return 0;
}

int
pb_read_float (struct pb_reader *r, const struct pb_field *f, float *v)
{
  uint32_t bits;
  if (pb_read_fixed32 (r, f, &bits) < 0)
    return -1;
  memcpy (v, &bits, 4);
  return 0;
}

int
pb_read_double (struct pb_reader *r, const struct pb_field *f, double *v)
{
  uint64_t bits;
  if (pb_read_fixed64 (r, f, &bits) < 0)
    return -1;
  memcpy (v, &bits, 8);
  return 0;
}

int
pb_read_bytes (struct pb_reader *r, const struct pb_field *f, struct pb_slice *v)
{
  if (want (r, f, PB_WIRE_LEN) < 0)
    return -1;
  *v = f->bytes;
  return 0;
}

int
pb_read_string (struct pb_reader *r, const struct pb_field *f, struct pb_slice *v)
{
  if (pb_read_bytes (r, f, v) < 0)
    return -1;
  if (v->n && memchr (v->p, '\0', v->n))
    return fail (r, v->p, "a string field holds a NUL byte");
  return 0;
}

char *
pb_slice_dup (struct pb_slice s)
{
  char *c = malloc (s.n + 1);
  if (!c)
    return NULL;
  if (s.n)
    memcpy (c, s.p, s.n);
  c[s.n] = '\0';
  return c;
}

int
pb_read_map_entry (struct pb_reader *r, const struct pb_field *f, struct pb_slice *key,
                   struct pb_slice *value)
{
  struct pb_reader e;
  struct pb_field g;
  *key = *value = (struct pb_slice){ (const uint8_t *) "", 0 };
  if (pb_sub (r, f, &e) < 0)
    return -1;
  while (pb_next (&e, &g) > 0)
    if ((g.number == 1 && pb_read_string (&e, &g, key) < 0)
        || (g.number == 2 && pb_read_bytes (&e, &g, value) < 0))
      break;
  return e.error ? pb_sub_error (r, &e) : 0;
}

char *
pb_error_text (const struct pb_reader *r)
{
  return xprintf ("malformed protobuf at byte %zu: %s", r->error_at,
                  r->error ? r->error : "no error");
}
