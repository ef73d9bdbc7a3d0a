/* SPDX-License-Identifier: MIT */
/* The host's side of the files API (session_files.h): a tar stream made
 * from a host path, a piece at a time, for an upload; and a download's
 * tar stream, which comes from the sandbox and so is hostile, written
 * under one host path and nowhere else.  libarchive, daemon only.
 *
 * Both run a bounded step at a time, so that the daemon's loop goes on
 * between steps and memory stays bounded whatever the size. */
#ifndef AIRLOCK_BROKER_FILES_HOST_H
#define AIRLOCK_BROKER_FILES_HOST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* ---- upload: a host file or directory as a tar stream ---- */

struct files_packer;

/* source: an absolute host path, a file or a directory (followed when it
 * is itself a symlink; symlinks under it are kept as symlinks); its name
 * in the stream is its own (files_packer_name).  NULL with *code and
 * *err (malloc'd). */
struct files_packer *files_packer_new_path (const char *source, char **code,
                                            char **err);
/* One file of n bytes, with mode, named name. */
struct files_packer *files_packer_new_data (const char *name, const void *data,
                                            size_t n, unsigned mode, char **err);
const char *files_packer_name (const struct files_packer *p);
/* Make at least want bytes of the stream ready (fewer at its end): 0, or
 * -1 with *err (a host file could not be read). */
int files_packer_fill (struct files_packer *p, size_t want, char **err);
/* What is ready: up to *len bytes at the returned pointer. */
const void *files_packer_peek (const struct files_packer *p, size_t *len);
void files_packer_consume (struct files_packer *p, size_t n);
/* Everything of the stream was made (and consumed, when peek says 0). */
bool files_packer_done (const struct files_packer *p);
void files_packer_counts (const struct files_packer *p, uint64_t *files,
                          uint64_t *bytes);
void files_packer_free (struct files_packer *p);

/* ---- download: a hostile tar stream under one host path ---- */

struct files_unpacker;

/* The stream's bytes, as libarchive's read callbacks: the count at *buf,
 * 0 at its end, -1 on error. */
typedef ssize_t (*files_read_fn) (void *ctx, const void **buf);

/* The most bytes an inline download (no dest) returns. */
#define FILES_INLINE_MAX (1 << 20)

/* dest: an absolute host path that does not exist (what the stream's one
 * top entry becomes) or an existing directory (it goes in there, under
 * its own name, which must not exist).  NULL dest: the stream must hold
 * one regular file of at most FILES_INLINE_MAX bytes, kept in memory.
 * Nothing existing is ever overwritten.  Checked now, before any byte
 * comes: NULL with *code and *err. */
struct files_unpacker *files_unpacker_new (const char *dest, files_read_fn rd,
                                           void *ctx, char **code, char **err);
/* Write up to budget bytes more: 1 when the stream is all written, 0 when
 * there is more, -1 with *code and *err. */
int files_unpacker_step (struct files_unpacker *u, size_t budget, char **code,
                         char **err);
/* Where the top entry went (after the first step). */
const char *files_unpacker_dest (const struct files_unpacker *u);
void files_unpacker_counts (const struct files_unpacker *u, uint64_t *files,
                            uint64_t *bytes);
/* Entries not written, each said in words (symlinks leading out, special
 * files): NULL-terminated. */
const char *const *files_unpacker_skipped (const struct files_unpacker *u,
                                           size_t *n);
/* An inline download's file: its bytes and mode. */
const void *files_unpacker_data (const struct files_unpacker *u, size_t *len,
                                 unsigned *mode);
void files_unpacker_free (struct files_unpacker *u);

/* Base64 (RFC 4648, with padding), for the API's inline data.  The
 * encoder's result is NUL-terminated; the decoder takes no whitespace:
 * -1 on anything else. */
char *files_base64_encode (const void *data, size_t n);
ssize_t files_base64_decode (const char *text, unsigned char **out);

#endif
