/* SPDX-License-Identifier: MIT */
/* The protobuf wire format, by hand: an encoder into a growing buffer and
 * a decoder that walks the fields of a message.  For the few messages of
 * the Modal client (gRPC), whose field numbers come from the schema it
 * follows; no descriptors, no reflection, no code generation.
 *
 * Encoder: writes exactly what it is told, a default value included
 * (proto3 presence is the caller's: an `optional` field that is set is
 * put, one that is not set is not).  A failed allocation, or growing past
 * PB_ENC_MAX, makes the encoder fail for good (e->failed): check once at
 * the end.  Submessages, map entries included, are written between
 * pb_begin and pb_end, which backpatches the length.
 *
 * Decoder: pb_next hands over one field at a time (number, wire type,
 * value or the bytes of a length-delimited field, which point into the
 * caller's buffer: nothing is copied or allocated).  Unknown fields are
 * the caller's to ignore: every wire type that can be skipped (0, 1, 2, 5)
 * is already skipped over by pb_next.  Malformed input is an error, never
 * a read out of bounds: a truncated or over-long varint (over 10 bytes,
 * or over 64 bits), a length past the end, groups (wire types 3, 4) and
 * wire types 6, 7, field number 0.  A submessage is entered with pb_sub,
 * at most PB_MAX_DEPTH deep.  Packed repeated scalars and zigzag (sint)
 * types are not handled: the Modal messages do not use them. */
#ifndef AIRLOCK_BACKENDS_PROTOBUF_WIRE_H
#define AIRLOCK_BACKENDS_PROTOBUF_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PB_MAX_DEPTH 32
#define PB_ENC_MAX ((size_t) 1 << 30) /* what one encoder may grow to */

enum pb_wire_type {
  PB_WIRE_VARINT = 0,
  PB_WIRE_FIXED64 = 1,
  PB_WIRE_LEN = 2,
  PB_WIRE_FIXED32 = 5,
};

/* ---- encoder ---- */

struct pb_enc {
  uint8_t *buf; /* malloc'd; the caller takes it, or pb_enc_free */
  size_t len, cap;
  bool failed;  /* out of memory or too big: the output is unusable */
};

/* Zeroing the struct is enough to start; pb_enc_free releases (and zeroes). */
void pb_enc_free (struct pb_enc *e);

void pb_put_uint64 (struct pb_enc *e, uint32_t field, uint64_t v);
void pb_put_uint32 (struct pb_enc *e, uint32_t field, uint32_t v);
/* int32 and enums: a negative value is sign-extended (10 bytes on the wire) */
void pb_put_int32 (struct pb_enc *e, uint32_t field, int32_t v);
void pb_put_int64 (struct pb_enc *e, uint32_t field, int64_t v);
void pb_put_enum (struct pb_enc *e, uint32_t field, int32_t v);
void pb_put_bool (struct pb_enc *e, uint32_t field, bool v);
void pb_put_fixed32 (struct pb_enc *e, uint32_t field, uint32_t v);
void pb_put_fixed64 (struct pb_enc *e, uint32_t field, uint64_t v);
void pb_put_float (struct pb_enc *e, uint32_t field, float v);
void pb_put_double (struct pb_enc *e, uint32_t field, double v);
void pb_put_bytes (struct pb_enc *e, uint32_t field, const void *p, size_t n);
void pb_put_string (struct pb_enc *e, uint32_t field, const char *s);
/* An already-encoded message as a submessage field. */
void pb_put_message (struct pb_enc *e, uint32_t field, const struct pb_enc *sub);

/* A submessage in place: put its fields between the two calls.
 *   size_t m = pb_begin (e, 5); pb_put_uint32 (e, 2, 512); pb_end (e, m); */
size_t pb_begin (struct pb_enc *e, uint32_t field);
void pb_end (struct pb_enc *e, size_t mark);

/* One entry of a map<string, string> field: {key = 1, value = 2}. */
void pb_put_map_entry (struct pb_enc *e, uint32_t field, const char *key,
                       const char *value);

/* The raw pieces, for what the helpers above do not cover. */
void pb_put_tag (struct pb_enc *e, uint32_t field, enum pb_wire_type wt);
void pb_put_varint (struct pb_enc *e, uint64_t v);

/* ---- decoder ---- */

struct pb_slice {
  const uint8_t *p; /* into the decoded buffer; not NUL-terminated */
  size_t n;
};

struct pb_field {
  uint32_t number;
  enum pb_wire_type wire;
  uint64_t bits;         /* varint, fixed32 or fixed64: the raw value */
  struct pb_slice bytes; /* PB_WIRE_LEN: the field's bytes */
};

struct pb_reader {
  const uint8_t *start, *p, *end;
  unsigned depth;     /* 0 for the outermost message */
  const char *error;  /* static text, set on the first error */
  size_t error_at;    /* byte offset of the error, from start */
};

void pb_reader_init (struct pb_reader *r, const void *buf, size_t n);

/* The next field into *f: 1; the end of the message: 0; malformed input:
 * -1 with r->error (and every later call -1 too). */
int pb_next (struct pb_reader *r, struct pb_field *f);

/* Enter the submessage held by f (a PB_WIRE_LEN field just read from
 * parent): 0, or -1 with parent->error when f is not length-delimited or
 * the nesting is deeper than PB_MAX_DEPTH.  The child's errors stay in the
 * child; pb_sub_error copies one up to the parent (with its offset). */
int pb_sub (struct pb_reader *parent, const struct pb_field *f, struct pb_reader *child);
int pb_sub_error (struct pb_reader *parent, const struct pb_reader *child);

/* Typed reads of a field pb_next returned: 0, or -1 with r->error when
 * its wire type does not fit (e.g. a string sent as a varint).  The
 * narrowing ones keep the low bits, as protobuf does. */
int pb_read_uint64 (struct pb_reader *r, const struct pb_field *f, uint64_t *v);
int pb_read_uint32 (struct pb_reader *r, const struct pb_field *f, uint32_t *v);
int pb_read_int64 (struct pb_reader *r, const struct pb_field *f, int64_t *v);
int pb_read_int32 (struct pb_reader *r, const struct pb_field *f, int32_t *v);
int pb_read_bool (struct pb_reader *r, const struct pb_field *f, bool *v);
int pb_read_fixed32 (struct pb_reader *r, const struct pb_field *f, uint32_t *v);
int pb_read_fixed64 (struct pb_reader *r, const struct pb_field *f, uint64_t *v);
int pb_read_float (struct pb_reader *r, const struct pb_field *f, float *v);
int pb_read_double (struct pb_reader *r, const struct pb_field *f, double *v);
int pb_read_bytes (struct pb_reader *r, const struct pb_field *f, struct pb_slice *v);
/* A string: as bytes, but one holding a NUL byte is refused (C strings). */
int pb_read_string (struct pb_reader *r, const struct pb_field *f, struct pb_slice *v);
/* A string's copy, NUL-terminated (malloc'd; NULL when out of memory). */
char *pb_slice_dup (struct pb_slice s);

/* One entry of a map<string, string> (or <string, bytes>) field: key and
 * value slices (empty when absent, as protobuf has it).  The key is read
 * as a string (no NUL byte), the value as bytes: pb_slice_dup of a value
 * with a NUL in it would cut it short, so check with memchr if it matters. */
int pb_read_map_entry (struct pb_reader *r, const struct pb_field *f,
                       struct pb_slice *key, struct pb_slice *value);

/* "malformed protobuf at byte N: why" (malloc'd, NULL when out of memory). */
char *pb_error_text (const struct pb_reader *r);

#endif
