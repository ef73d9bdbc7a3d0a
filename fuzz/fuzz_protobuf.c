/* SPDX-License-Identifier: MIT */
/* libFuzzer harness for what the Modal client reads off the network: the
 * protobuf decoder (backends/protobuf_wire.c) and the gRPC response frame
 * reassembler (grpc_frames_* in backends/grpc_call.c).  The first byte
 * picks which (even: decoder, odd: reassembler).
 *
 * Decoder: every field of the message is walked, and every
 * length-delimited field is entered as a submessage too, as deep as the
 * decoder allows (PB_MAX_DEPTH); typed reads are tried on every field.
 * Beyond sanitizer findings it aborts when a field's bytes lie outside
 * the input, an error comes without its text, the nesting goes past the
 * bound, or a message that decodes cleanly, encoded again field by field,
 * is longer than the input or decodes to other fields.
 *
 * Reassembler: byte 1 sets the size limit (1..256 bytes, or the default),
 * byte 2 how many chunk sizes follow (0..7), then those sizes, then the
 * body, fed in chunks of those sizes in turn.  It aborts when the messages
 * (count, sizes, contents) or the outcome differ from feeding the body
 * whole, or the buffer grows past one frame within the limit.
 *
 * Build: make build/fuzz_protobuf
 * Run:   build/fuzz_protobuf -max_total_time=60 fuzz/corpus/protobuf */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grpc_call.h"
#include "protobuf_wire.h"

static const uint8_t *input_start, *input_end;

#define CHECK(cond)                                                                  \
  do                                                                                 \
    {                                                                                \
      if (!(cond))                                                                   \
        {                                                                            \
          fprintf (stderr, "fuzz_protobuf: %s:%d: %s\n", __FILE__, __LINE__, #cond); \
          abort ();                                                                  \
        }                                                                            \
    }                                                                                \
  while (0)

/* ---- decoder ---- */

static void
try_reads (struct pb_reader *r, const struct pb_field *f)
{
  /* each read fails on the wrong wire type, on a copy: r goes on */
  struct pb_reader c = *r;
  uint64_t u;
  int64_t i;
  uint32_t u32;
  int32_t i32;
  bool b;
  float fl;
  double d;
  struct pb_slice s, k, v;
  int ok = pb_read_uint64 (&c, f, &u) == 0;
  CHECK (ok == (f->wire == PB_WIRE_VARINT));
  c = *r;
  pb_read_int64 (&c, f, &i), c = *r;
  pb_read_uint32 (&c, f, &u32), c = *r;
  pb_read_int32 (&c, f, &i32), c = *r;
  pb_read_bool (&c, f, &b), c = *r;
  CHECK ((pb_read_float (&c, f, &fl) == 0) == (f->wire == PB_WIRE_FIXED32));
  c = *r;
  CHECK ((pb_read_double (&c, f, &d) == 0) == (f->wire == PB_WIRE_FIXED64));
  c = *r;
  if (pb_read_string (&c, f, &s) == 0)
    {
      CHECK (s.p >= input_start && s.p + s.n <= input_end);
      CHECK (!memchr (s.p, 0, s.n));
      char *dup = pb_slice_dup (s);
      CHECK (dup && strlen (dup) == s.n);
      free (dup);
    }
  else
    CHECK (c.error);
  c = *r;
  if (pb_read_map_entry (&c, f, &k, &v) == 0)
    CHECK (k.n <= f->bytes.n && v.n <= f->bytes.n);
  else
    CHECK (c.error);
}

/* Walk r; enter every length-delimited field.  The fields seen, counted. */
static unsigned
walk (struct pb_reader *r)
{
  struct pb_field f;
  unsigned n = 0;
  int rc;
  CHECK (r->depth <= PB_MAX_DEPTH);
  while ((rc = pb_next (r, &f)) > 0)
    {
      n++;
      CHECK (f.number >= 1 && f.number < (1u << 29));
      if (f.wire == PB_WIRE_LEN)
        {
          CHECK (f.bytes.p >= input_start && f.bytes.p + f.bytes.n <= input_end);
          struct pb_reader sub;
          if (pb_sub (r, &f, &sub) == 0)
            walk (&sub);
          else
            {
              CHECK (r->error && r->depth == PB_MAX_DEPTH);
              return n;
            }
        }
      else
        CHECK (f.wire == PB_WIRE_VARINT || f.wire == PB_WIRE_FIXED32
               || f.wire == PB_WIRE_FIXED64);
      try_reads (r, &f);
    }
  if (rc < 0)
    {
      CHECK (r->error && *r->error);
      CHECK (r->error_at <= (size_t) (r->end - r->start));
      CHECK (pb_next (r, &f) == -1);
    }
  return n;
}

/* A clean message again, field by field: not longer, the same fields. */
static void
reencode (const uint8_t *data, size_t size)
{
  struct pb_reader r, r2;
  struct pb_field f, g;
  struct pb_enc e = { 0 };
  pb_reader_init (&r, data, size);
  while (pb_next (&r, &f) > 0)
    if (f.wire == PB_WIRE_VARINT)
      pb_put_uint64 (&e, f.number, f.bits);
    else if (f.wire == PB_WIRE_FIXED32)
      pb_put_fixed32 (&e, f.number, (uint32_t) f.bits);
    else if (f.wire == PB_WIRE_FIXED64)
      pb_put_fixed64 (&e, f.number, f.bits);
    else
      pb_put_bytes (&e, f.number, f.bytes.p, f.bytes.n);
  CHECK (!e.failed);
  CHECK (e.len <= size);
  pb_reader_init (&r, data, size);
  pb_reader_init (&r2, e.buf, e.len);
  while (pb_next (&r, &f) > 0)
    {
      CHECK (pb_next (&r2, &g) == 1);
      CHECK (f.number == g.number && f.wire == g.wire && f.bits == g.bits);
      CHECK (f.bytes.n == g.bytes.n && (!f.bytes.n || !memcmp (f.bytes.p, g.bytes.p, f.bytes.n)));
    }
  CHECK (pb_next (&r2, &g) == 0);
  pb_enc_free (&e);
}

static void
fuzz_decoder (const uint8_t *data, size_t size)
{
  struct pb_reader r;
  input_start = data;
  input_end = data + size;
  pb_reader_init (&r, data, size);
  walk (&r);
  if (!r.error)
    reencode (data, size);
}

/* ---- reassembler ---- */

struct seen {
  unsigned n;
  uint64_t hash; /* FNV-1a over sizes and bytes */
};

static int
on_message (void *ctx, const uint8_t *msg, size_t len)
{
  struct seen *s = ctx;
  s->n++;
  s->hash = (s->hash ^ len) * 1099511628211u;
  for (size_t i = 0; i < len; i++)
    s->hash = (s->hash ^ msg[i]) * 1099511628211u;
  return 0;
}

static int
feed_all (struct grpc_frames *f, const uint8_t *body, size_t n, const uint8_t *sizes,
          size_t nsizes)
{
  size_t max = f->max_message ? f->max_message : GRPC_DEFAULT_MAX_MESSAGE;
  int rc = 0;
  for (size_t off = 0, i = 0; off < n && rc == 0; i++)
    {
      size_t chunk = nsizes ? sizes[i % nsizes] : n;
      if (chunk == 0)
        chunk = 1;
      if (chunk > n - off)
        chunk = n - off;
      rc = grpc_frames_feed (f, body + off, chunk);
      CHECK (f->cap <= 5 + max);
      off += chunk;
    }
  if (rc == 0)
    rc = grpc_frames_end (f);
  if (rc < 0)
    CHECK (f->error && (f->code == GRPC_INTERNAL || f->code == GRPC_RESOURCE_EXHAUSTED));
  return rc;
}

static void
fuzz_frames (const uint8_t *data, size_t size)
{
  if (size < 2)
    return;
  size_t max = data[0] ? (size_t) data[0] : 0;
  size_t nsizes = data[1] % 8;
  if (size < 2 + nsizes)
    return;
  const uint8_t *sizes = data + 2;
  const uint8_t *body = sizes + nsizes;
  size_t n = size - 2 - nsizes;

  struct seen split = { 0, 14695981039346656037u }, whole = split;
  struct grpc_frames a = { .max_message = max, .on_message = on_message, .ctx = &split };
  struct grpc_frames b = { .max_message = max, .on_message = on_message, .ctx = &whole };
  int ra = feed_all (&a, body, n, sizes, nsizes);
  int rb = feed_all (&b, body, n, NULL, 0);
  CHECK (ra == rb);
  CHECK (split.n == whole.n && split.hash == whole.hash && a.count == split.n);
  CHECK (a.code == b.code);
  grpc_frames_free (&a);
  grpc_frames_free (&b);
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  if (size == 0)
    return 0;
  if (data[0] & 1)
    fuzz_frames (data + 1, size - 1);
  else
    fuzz_decoder (data + 1, size - 1);
  return 0;
}
