/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
#include "helper_conf.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <libgen.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "util.h"

#define CONF_MAX_BYTES 65536

static const struct helper_conf defaults = {
  .group_set = false,
  .memory_default = UINT64_C (2) << 30,
  .memory_max = UINT64_C (8) << 30,
  .pids_default = 256,
  .pids_max = 4096,
  .time_max = 0,
  .nofile = 4096,
  .fsize = UINT64_C (16) << 30,
  .allow_host_network = false,
};

#define CONF_FAIL(line, fmt, ...)                                              \
  fail (AL_STEP_CONFIG, 0, HELPER_CONF ":%d: " fmt, line, ##__VA_ARGS__)

/* A size: digits with an optional K, M, G or T suffix (powers of 1024). */
static bool
parse_size (const char *s, uint64_t *out)
{
  char *end;
  errno = 0;
  if (!isdigit ((unsigned char) *s))
    return false;
  unsigned long long v = strtoull (s, &end, 10);
  if (errno)
    return false;
  int shift = 0;
  switch (*end)
    {
    case 'K': shift = 10; end++; break;
    case 'M': shift = 20; end++; break;
    case 'G': shift = 30; end++; break;
    case 'T': shift = 40; end++; break;
    default: break;
    }
  if (*end || (shift && v > (UINT64_MAX >> shift)))
    return false;
  *out = (uint64_t) v << shift;
  return true;
}

static bool
parse_u32 (const char *s, uint32_t *out)
{
  uint64_t v;
  if (!parse_size (s, &v) || v > UINT32_MAX || strpbrk (s, "KMGT"))
    return false;
  *out = (uint32_t) v;
  return true;
}

static void
parse_group (const char *value, struct helper_conf *conf, int line)
{
  uint32_t gid;
  if (parse_u32 (value, &gid))
    conf->group = (gid_t) gid;
  else
    {
      struct group gr, *res = NULL;
      char buf[4096];
      if (getgrnam_r (value, &gr, buf, sizeof buf, &res) != 0 || !res)
        CONF_FAIL (line, "group '%s' does not exist", value);
      conf->group = res->gr_gid;
    }
  conf->group_set = true;
}

static void
parse_line (char *key, char *value, struct helper_conf *conf, int line)
{
  bool ok = true;
  if (!strcmp (key, "group"))
    parse_group (value, conf, line);
  else if (!strcmp (key, "memory"))
    ok = parse_size (value, &conf->memory_default);
  else if (!strcmp (key, "max_memory"))
    ok = parse_size (value, &conf->memory_max);
  else if (!strcmp (key, "pids"))
    ok = parse_u32 (value, &conf->pids_default);
  else if (!strcmp (key, "max_pids"))
    ok = parse_u32 (value, &conf->pids_max);
  else if (!strcmp (key, "max_time"))
    ok = parse_u32 (value, &conf->time_max);
  else if (!strcmp (key, "nofile"))
    ok = parse_u32 (value, &conf->nofile);
  else if (!strcmp (key, "max_file_size"))
    ok = parse_size (value, &conf->fsize);
  else if (!strcmp (key, "allow_host_network"))
    {
      ok = !strcmp (value, "yes") || !strcmp (value, "no");
      conf->allow_host_network = !strcmp (value, "yes");
    }
  else
    CONF_FAIL (line, "unknown key '%s'", key);
  if (!ok)
    CONF_FAIL (line, "bad value '%s' for %s", value, key);
}

static char *
trim (char *s)
{
  while (isspace ((unsigned char) *s))
    s++;
  char *e = s + strlen (s);
  while (e > s && isspace ((unsigned char) e[-1]))
    *--e = '\0';
  return s;
}

/* The file and its directory must be root's alone: anyone who could write
 * either could grant themselves host networking or lift the limits. */
static void
check_owner (int fd, const char *what)
{
  struct stat st;
  if (fstat (fd, &st) < 0)
    fail (AL_STEP_CONFIG, errno, "cannot stat %s", what);
  if (st.st_uid != 0 || (st.st_mode & (S_IWGRP | S_IWOTH)))
    fail (AL_STEP_CONFIG, 0,
          "%s must be owned by root and not writable by group or others "
          "(chown root: and chmod go-w it)", what);
}

void
helper_conf_load (struct helper_conf *conf)
{
  *conf = defaults;
  char dir[] = HELPER_CONF;
  cleanup_fd int dfd = open (dirname (dir), O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0 && errno == ENOENT)
    return;
  if (dfd < 0)
    fail (AL_STEP_CONFIG, errno, "cannot open the directory of " HELPER_CONF);
  check_owner (dfd, "the directory of " HELPER_CONF);
  const char *base = strrchr (HELPER_CONF, '/') + 1;
  cleanup_fd int fd = openat (dfd, base, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0 && errno == ENOENT)
    return;
  if (fd < 0)
    fail (AL_STEP_CONFIG, errno,
          "cannot read " HELPER_CONF " (it must be readable by all: chmod 644)");
  check_owner (fd, HELPER_CONF);

  static char text[CONF_MAX_BYTES + 1];
  size_t len = 0;
  for (;;)
    {
      ssize_t r = read (fd, text + len, sizeof text - 1 - len);
      if (r < 0 && errno == EINTR)
        continue;
      if (r < 0)
        fail (AL_STEP_CONFIG, errno, "cannot read " HELPER_CONF);
      if (r == 0)
        break;
      len += (size_t) r;
      if (len == sizeof text - 1)
        fail (AL_STEP_CONFIG, 0, HELPER_CONF " is larger than 64 KiB");
    }
  text[len] = '\0';
  if (memchr (text, '\0', len))
    fail (AL_STEP_CONFIG, 0, HELPER_CONF " contains a NUL byte");

  int line = 0;
  for (char *l = text, *next; l; l = next)
    {
      line++;
      next = strchr (l, '\n');
      if (next)
        *next++ = '\0';
      char *hash = strchr (l, '#');
      if (hash)
        *hash = '\0';
      l = trim (l);
      if (!*l)
        continue;
      char *eq = strchr (l, '=');
      if (!eq)
        CONF_FAIL (line, "expected 'key = value'");
      *eq = '\0';
      parse_line (trim (l), trim (eq + 1), conf, line);
    }
  if (conf->memory_default > conf->memory_max)
    conf->memory_default = conf->memory_max;
  if (conf->pids_default > conf->pids_max)
    conf->pids_default = conf->pids_max;
}
