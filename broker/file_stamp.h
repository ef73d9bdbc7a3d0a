/* SPDX-License-Identifier: MIT */
/* Has a file changed since it was read?  The daemon keeps what it made of
 * its files (the compiled rules, a configuration) and looks again only
 * when one changed: a stat per use (device, inode, size, mtime), and the
 * contents' hash when the stat differs, so that a file rewritten with the
 * same text costs no rebuild. */
#ifndef AIRLOCK_BROKER_FILE_STAMP_H
#define AIRLOCK_BROKER_FILE_STAMP_H

#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fnv1a.h"

struct file_stamp
{
  bool exists;
  dev_t dev;
  ino_t ino;
  off_t size;
  struct timespec mtime;
};

/* path's stamp now; a missing file (or no path) has exists false. */
static inline void
file_stamp (const char *path, struct file_stamp *st)
{
  struct stat s;
  *st = (struct file_stamp){ 0 };
  if (path && stat (path, &s) == 0)
    *st = (struct file_stamp){ true, s.st_dev, s.st_ino, s.st_size, s.st_mtim };
}

static inline bool
file_stamp_changed (const char *path, const struct file_stamp *old)
{
  struct file_stamp now;
  file_stamp (path, &now);
  return now.exists != old->exists || now.dev != old->dev || now.ino != old->ino
         || now.size != old->size || now.mtime.tv_sec != old->mtime.tv_sec
         || now.mtime.tv_nsec != old->mtime.tv_nsec;
}

/* FNV-1a of the file's bytes; 0 when it cannot be read (missing). */
static inline uint64_t
file_hash (const char *path)
{
  int fd = path ? open (path, O_RDONLY | O_CLOEXEC) : -1;
  if (fd < 0)
    return 0;
  uint64_t h = FNV1A64_INIT;
  char buf[16384];
  for (ssize_t n; (n = read (fd, buf, sizeof buf)) > 0;)
    h = fnv1a64 (h, buf, (size_t) n);
  close (fd);
  return h;
}

#endif
