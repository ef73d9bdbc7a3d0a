/* SPDX-License-Identifier: MIT */
/* A job's output spool (see spool.h). */
#define _GNU_SOURCE
#include "spool.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "xprintf.h"

/* One index record: from byte `start` on, the bytes are stream's. */
struct record {
  uint64_t start;
  uint32_t stream;
  uint32_t pad;
};

struct spool {
  unsigned refs;
  char *path, *index_path;
  int fd, index_fd;      /* -1 once finished: reads open the file again */
  uint64_t size, dropped, cap;
  uint64_t records;
  int last_stream;
  int err;               /* errno of the failed write; 0: none */
  bool capped, finished, given_away;
  char *message;         /* spool_error's text, rebuilt when asked */
};

struct spool *
spool_new (const char *dir, uint64_t cap, char **err)
{
  struct spool *sp = calloc (1, sizeof *sp);
  if (!sp)
    {
      *err = xprintf ("out of memory");
      return NULL;
    }
  sp->refs = 1;
  sp->cap = cap;
  sp->fd = sp->index_fd = -1;
  sp->path = xprintf ("%s/airlock-job-XXXXXX", dir);
  if (sp->path && (sp->fd = mkostemp (sp->path, O_CLOEXEC)) >= 0)
    {
      sp->index_path = xprintf ("%s.index", sp->path);
      if (sp->index_path)
        sp->index_fd = open (sp->index_path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC
                             | O_NOFOLLOW, 0600);
    }
  if (sp->index_fd < 0)
    {
      *err = xprintf ("cannot create a job's output spool in %s: %s", dir,
                      strerror (errno));
      if (sp->fd >= 0)
        unlink (sp->path);
      spool_unref (sp);
      return NULL;
    }
  return sp;
}

struct spool *
spool_ref (struct spool *sp)
{
  sp->refs++;
  return sp;
}

static void
close_fd (int *fd)
{
  if (*fd >= 0)
    close (*fd);
  *fd = -1;
}

void
spool_unref (struct spool *sp)
{
  if (!sp || --sp->refs)
    return;
  close_fd (&sp->fd);
  close_fd (&sp->index_fd);
  if (sp->index_path)
    unlink (sp->index_path);
  if (sp->path && !sp->given_away)
    unlink (sp->path);
  free (sp->index_path);
  free (sp->path);
  free (sp->message);
  free (sp);
}

/* Write buf at off: the bytes that reached the file (all of them, or
 * fewer with *err set). */
static size_t
write_at (int fd, const void *buf, size_t n, uint64_t off, int *err)
{
  const char *p = buf;
  size_t done = 0;
  while (done < n)
    {
      ssize_t w = pwrite (fd, p + done, n - done, (off_t) (off + done));
      if (w < 0 && errno == EINTR)
        continue;
      if (w <= 0)
        {
          *err = w < 0 ? errno : ENOSPC;
          break;
        }
      done += (size_t) w;
    }
  return done;
}

bool
spool_append (struct spool *sp, int stream, const void *data, size_t n)
{
  if (sp->finished || n == 0)
    return !sp->err && !sp->capped;
  size_t keep = n;
  if (sp->err || sp->capped)
    keep = 0;
  else if (sp->cap && sp->size + n > sp->cap)
    {
      keep = (size_t) (sp->cap - sp->size);
      sp->capped = true;
    }
  if (keep && stream != sp->last_stream)
    {
      /* The index first: bytes with no record would be mislabelled. */
      struct record r = { .start = sp->size, .stream = (uint32_t) stream };
      if (write_at (sp->index_fd, &r, sizeof r, sp->records * sizeof r, &sp->err)
          < sizeof r)
        keep = 0;
      else
        {
          sp->records++;
          sp->last_stream = stream;
        }
    }
  if (keep)
    {
      /* A short write keeps what reached the disk: the file and size
       * agree, the rest is dropped and counted. */
      keep = write_at (sp->fd, data, keep, sp->size, &sp->err);
      sp->size += keep;
    }
  sp->dropped += n - keep;
  return !sp->err && !sp->capped;
}

void
spool_finish (struct spool *sp)
{
  sp->finished = true;
  close_fd (&sp->fd);
  close_fd (&sp->index_fd);
}

bool
spool_finished (const struct spool *sp)
{
  return sp->finished;
}

uint64_t
spool_size (const struct spool *sp)
{
  return sp->size;
}

uint64_t
spool_dropped (const struct spool *sp)
{
  return sp->dropped;
}

const char *
spool_path (const struct spool *sp)
{
  return sp->path;
}

const char *
spool_error (const struct spool *sp)
{
  if (!sp->err && !sp->capped)
    return NULL;
  struct spool *w = (struct spool *) sp; /* the text is a cache */
  free (w->message);
  if (sp->err)
    w->message = xprintf ("the output spool %s could not be written (%s): it "
                          "holds the first %" PRIu64 " bytes; %" PRIu64
                          " later bytes were not kept", sp->path,
                          strerror (sp->err), sp->size, sp->dropped);
  else
    w->message = xprintf ("the output spool reached its cap of %" PRIu64
                          " bytes (jobs.spool_max): %" PRIu64
                          " later bytes were not kept", sp->cap, sp->dropped);
  return w->message ? w->message : "the output spool is incomplete";
}

const char *
spool_give_away (struct spool *sp)
{
  sp->given_away = true;
  return sp->path;
}

/* A descriptor for reading f: the open one while the job runs, else the
 * file opened again (closed by the caller when *opened). */
static int
reader (const struct spool *sp, bool index, bool *opened)
{
  int fd = index ? sp->index_fd : sp->fd;
  *opened = fd < 0;
  if (fd < 0)
    fd = open (index ? sp->index_path : sp->path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  return fd;
}

ssize_t
spool_read (struct spool *sp, uint64_t offset, void *buf, size_t max)
{
  if (offset >= sp->size || max == 0)
    return 0;
  if (max > sp->size - offset)
    max = (size_t) (sp->size - offset);
  bool opened;
  int fd = reader (sp, false, &opened);
  if (fd < 0)
    return -1;
  ssize_t n;
  do
    n = pread (fd, buf, max, (off_t) offset);
  while (n < 0 && errno == EINTR);
  int e = errno;
  if (opened)
    close (fd);
  errno = e;
  return n;
}

static bool
read_record (int fd, uint64_t i, struct record *r)
{
  return pread (fd, r, sizeof *r, (off_t) (i * sizeof *r)) == (ssize_t) sizeof *r;
}

struct spool_cursor
spool_cursor_at (struct spool *sp, uint64_t offset)
{
  /* Past the end of a running job's output: it waits there. */
  struct spool_cursor c = { .offset = offset };
  bool opened;
  int fd = sp->records > 1 ? reader (sp, true, &opened) : -1;
  if (fd < 0)
    return c;
  /* The last record that starts at or before offset: a binary search. */
  uint64_t lo = 0, hi = sp->records - 1;
  while (lo < hi)
    {
      uint64_t mid = lo + (hi - lo + 1) / 2;
      struct record r;
      if (!read_record (fd, mid, &r))
        break;
      if (r.start <= c.offset)
        lo = mid;
      else
        hi = mid - 1;
    }
  c.record = lo;
  if (opened)
    close (fd);
  return c;
}

ssize_t
spool_read_labelled (struct spool *sp, struct spool_cursor *c, void *buf,
                     size_t max, int *stream)
{
  if (c->offset >= sp->size || sp->records == 0)
    return 0;
  bool opened;
  int fd = reader (sp, true, &opened);
  if (fd < 0)
    return -1;
  struct record r, next;
  uint64_t end = sp->size;
  bool ok = read_record (fd, c->record, &r);
  /* Skip records that end at or before the cursor. */
  while (ok && c->record + 1 < sp->records && read_record (fd, c->record + 1, &next)
         && next.start <= c->offset)
    {
      c->record++;
      r = next;
    }
  if (ok && c->record + 1 < sp->records && read_record (fd, c->record + 1, &next))
    end = next.start;
  if (opened)
    close (fd);
  if (!ok)
    {
      errno = EIO;
      return -1;
    }
  *stream = (int) r.stream;
  size_t want = end - c->offset < max ? (size_t) (end - c->offset) : max;
  ssize_t n = spool_read (sp, c->offset, buf, want);
  if (n > 0)
    c->offset += (uint64_t) n;
  return n;
}
