/* SPDX-License-Identifier: MIT */
/* A job's output spool: every byte the job wrote to stdout and stderr, in
 * the order the session layer received it, in one file on disk, addressed
 * by byte offset (ARCHITECTURE.md, "The job lifecycle").  Whatever the
 * clients do, a job costs the daemon a fixed amount of memory: a slow
 * client reads from the spool when it can, a client that went away costs
 * nothing, and a new one can re-attach at any offset.
 *
 * Beside the bytes, an index records where the stream changes (stdout to
 * stderr and back), so that a reader can label what it reads.  The index
 * is an unlinked temporary file: one 16-byte record per change.
 *
 * Nothing is ever dropped silently: past the size cap, or when the disk
 * is full, later bytes are counted, not kept, and spool_error() says what
 * happened and from which offset.  Every backend feeds the same spool
 * (the local supervisor's pipes, docker's exec stream, and the remote
 * backends' own offsets), so this is the session layer's interface, not a
 * local detail.
 *
 * A spool is shared by reference (the session's job and the clients still
 * streaming it); the file is removed when the last reference goes unless
 * it was handed to a client (spool_give_away), who then owns it. */
#ifndef AIRLOCK_BROKER_SPOOL_H
#define AIRLOCK_BROKER_SPOOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct spool;

/* A reader's position: the next byte's offset and the index record that
 * covers it.  Start at { 0, 0 } (or spool_cursor_at for another offset). */
struct spool_cursor {
  uint64_t offset;
  uint64_t record;
};

/* A new, empty spool file (0600, name "airlock-job-XXXXXX") in dir;
 * cap: the most bytes kept (0: no cap).  NULL with *err. */
struct spool *spool_new (const char *dir, uint64_t cap, char **err);
struct spool *spool_ref (struct spool *sp);
/* Drop a reference; the last one closes the spool and, unless it was
 * given away, removes its file. */
void spool_unref (struct spool *sp);

/* Append what the job wrote on stream 1 (stdout) or 2 (stderr).  Returns
 * true while everything is kept; false once bytes are being dropped (the
 * cap, or a write error: see spool_error). */
bool spool_append (struct spool *sp, int stream, const void *data, size_t n);
/* No more bytes will come: close the writing side. */
void spool_finish (struct spool *sp);
bool spool_finished (const struct spool *sp);

/* Bytes kept: the offset the next kept byte will have. */
uint64_t spool_size (const struct spool *sp);
/* Bytes written by the job but not kept (past the cap or after an error). */
uint64_t spool_dropped (const struct spool *sp);
/* What went wrong, in words for the client, or NULL. */
const char *spool_error (const struct spool *sp);
const char *spool_path (const struct spool *sp);

/* The file now belongs to the caller's client: it is never removed by
 * airlock.  Returns its path. */
const char *spool_give_away (struct spool *sp);

/* Up to max raw bytes from offset (fewer at the end): the count, or -1
 * with errno. */
ssize_t spool_read (struct spool *sp, uint64_t offset, void *buf, size_t max);

/* A cursor at offset (past the end: reads return 0 until output reaches
 * it). */
struct spool_cursor spool_cursor_at (struct spool *sp, uint64_t offset);
/* Up to max bytes at the cursor that all belong to one stream (*stream 1
 * or 2), and advance the cursor: the count (0 at the end), or -1. */
ssize_t spool_read_labelled (struct spool *sp, struct spool_cursor *c,
                             void *buf, size_t max, int *stream);

#endif
