/* SPDX-License-Identifier: MIT */
/* The approval gate's audit log.  See audit_log.h.
 *
 * Every write runs under an flock() on the opened state directory:
 *   lock -> is our fd still STATE_DIR/audit.log? (another writer may have
 *   rotated it) else reopen -> rotate if this line would pass max_bytes ->
 *   one write() -> on a short write, cut the file back -> unlock.
 * flock() locks belong to an open file description, which a forked child
 * shares with its parent; a handle used in a new process therefore takes
 * its own description of the directory first. */
#define _GNU_SOURCE
#include "audit_log.h"
#include "redact.h"
#include "xalloc.h"

#include <cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <unistr.h>

/* Bytes kept of the short fields and of a reason. */
#define FIELD_MAX 256
#define REASON_MAX 4096
/* "audit.log." + up to 4 digits */
#define NAME_MAX_LEN 32

struct audit_log
{
  char *dir;
  char *path;             /* dir/audit.log */
  size_t max_bytes;
  unsigned keep;
  int dirfd;              /* locked around each write */
  pid_t dirfd_pid;        /* the process dirfd was opened in */
  int fd;                 /* audit.log, O_APPEND */
  dev_t dev;
  ino_t ino;
  pthread_mutex_t lock;   /* flock() does not exclude threads */
};

/* ---- allocation and messages ---- */

/* Set *err (when err is given) and return -code. */
static int __attribute__ ((format (printf, 3, 4)))
fail (char **err, int code, const char *fmt, ...)
{
  if (err)
    {
      va_list ap;
      va_start (ap, fmt);
      if (vasprintf (err, fmt, ap) < 0)
        oom ();
      va_end (ap);
    }
  return -code;
}

/* ---- text ---- */

/* A valid UTF-8 copy of at most max bytes of s (bad bytes become U+FFFD;
   a cut never splits a character).  *cut tells whether bytes were
   dropped. */
static char *
clean_text (const char *s, size_t max, bool *cut)
{
  size_t len = strlen (s);
  /* U+FFFD is 3 bytes for 1 bad byte. */
  char *out = malloc (3 * (len < max ? len : max) + 4);
  if (!out)
    oom ();
  size_t o = 0, i = 0;
  *cut = false;
  while (i < len)
    {
      ucs4_t uc;
      int n = u8_mbtoucr (&uc, (const uint8_t *) s + i, len - i);
      size_t in = n > 0 ? (size_t) n : 1;
      size_t outlen = n > 0 ? (size_t) n : 3;
      if (o + outlen > max)
        {
          *cut = true;
          break;
        }
      if (n > 0)
        memcpy (out + o, s + i, in);
      else
        memcpy (out + o, "\xef\xbf\xbd", 3);
      o += outlen;
      i += in;
    }
  out[o] = '\0';
  return out;
}

static void
add_text (cJSON *obj, const char *key, const char *value, size_t max)
{
  if (!value)
    {
      if (!cJSON_AddNullToObject (obj, key))
        oom ();
      return;
    }
  bool cut;
  char *clean = clean_text (value, max, &cut);
  if (!cJSON_AddStringToObject (obj, key, clean))
    oom ();
  free (clean);
}

static void
rfc3339_now (char buf[32])
{
  struct timespec ts;
  struct tm tm;
  clock_gettime (CLOCK_REALTIME, &ts);
  gmtime_r (&ts.tv_sec, &tm);
  size_t n = strftime (buf, 32, "%Y-%m-%dT%H:%M:%S", &tm);
  snprintf (buf + n, 32 - n, ".%03ldZ", ts.tv_nsec / 1000000);
}

char *
audit_entry_to_json (const struct audit_entry *e, char **err)
{
  if (!e || !e->decision || !*e->decision)
    {
      fail (err, EINVAL, "audit entry without a decision");
      return NULL;
    }
  if (!e->decided_by || !*e->decided_by)
    {
      fail (err, EINVAL, "audit entry without decided_by");
      return NULL;
    }
  if (e->n_rules && !e->rules)
    {
      fail (err, EINVAL, "audit entry counts rules but gives none");
      return NULL;
    }

  cJSON *obj = cJSON_CreateObject ();
  if (!obj)
    oom ();
  char now[32];
  rfc3339_now (now);
  if (!cJSON_AddStringToObject (obj, "time", now))
    oom ();
  add_text (obj, "session", e->session, FIELD_MAX);
  add_text (obj, "backend", e->backend, FIELD_MAX);

  if (!e->command)
    add_text (obj, "command", NULL, 0);
  else
    {
      /* Redact before cutting: a cut token might no longer look like
         one. */
      char *redacted = redact_secrets (e->command);
      bool cut;
      char *clean = clean_text (redacted, AUDIT_COMMAND_MAX, &cut);
      if (!cJSON_AddStringToObject (obj, "command", clean))
        oom ();
      if (cut && (!cJSON_AddTrueToObject (obj, "command_truncated")
                  || !cJSON_AddNumberToObject (obj, "command_bytes",
                                               (double) strlen (redacted))))
        oom ();
      free (clean);
      free (redacted);
    }

  cJSON *rules = cJSON_AddArrayToObject (obj, "rules");
  if (!rules)
    oom ();
  for (size_t i = 0; i < e->n_rules; i++)
    if (e->rules[i])
      {
        bool cut;
        char *id = clean_text (e->rules[i], FIELD_MAX, &cut);
        cJSON *item = cJSON_CreateString (id);
        free (id);
        if (!item || !cJSON_AddItemToArray (rules, item))
          oom ();
      }

  add_text (obj, "decision", e->decision, FIELD_MAX);
  add_text (obj, "decided_by", e->decided_by, FIELD_MAX);
  if (e->reason)
    {
      char *redacted = redact_secrets (e->reason);
      add_text (obj, "reason", redacted, REASON_MAX);
      free (redacted);
    }
  if (e->network)
    {
      const struct audit_network *n = e->network;
      cJSON *net = cJSON_AddObjectToObject (obj, "network");
      if (!net)
        oom ();
      add_text (net, "name", n->name, FIELD_MAX);
      add_text (net, "address", n->address, FIELD_MAX);
      if (n->port ? !cJSON_AddNumberToObject (net, "port", (double) n->port)
                  : !cJSON_AddNullToObject (net, "port"))
        oom ();
      add_text (net, "sni", n->sni, FIELD_MAX);
      add_text (net, "host", n->host, FIELD_MAX);
      add_text (net, "fake_address", n->fake_address, FIELD_MAX);
    }
  if (e->suppressed
      && !cJSON_AddNumberToObject (obj, "suppressed", (double) e->suppressed))
    oom ();
  if (!cJSON_AddNumberToObject (obj, "pid", (double) getpid ())
      || !cJSON_AddNumberToObject (obj, "uid", (double) getuid ()))
    oom ();

  char *line = cJSON_PrintUnformatted (obj);
  cJSON_Delete (obj);
  if (!line)
    oom ();
  return line;
}

/* ---- the directory ---- */

static int
open_dir (struct audit_log *l, char **err)
{
  int fd = open (l->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0)
    return fail (err, errno, "cannot open %s: %s", l->dir, strerror (errno));
  struct stat st;
  if (fstat (fd, &st) < 0)
    {
      int e = errno;
      close (fd);
      return fail (err, e, "cannot stat %s: %s", l->dir, strerror (e));
    }
  if (st.st_uid != geteuid ())
    {
      close (fd);
      return fail (err, EPERM, "%s belongs to uid %u, not to this user "
                   "(uid %u)", l->dir, (unsigned) st.st_uid,
                   (unsigned) geteuid ());
    }
  if (st.st_mode & 022)
    {
      close (fd);
      return fail (err, EPERM, "%s is writable by group or others (mode "
                   "%03o): chmod 700 it", l->dir,
                   (unsigned) (st.st_mode & 07777));
    }
  if (l->dirfd >= 0)
    close (l->dirfd);
  l->dirfd = fd;
  l->dirfd_pid = getpid ();
  return 0;
}

/* ---- the file ---- */

static int
open_file (struct audit_log *l, char **err)
{
  /* O_NONBLOCK: a FIFO planted there fails (ENXIO) instead of blocking. */
  int fd = openat (l->dirfd, AUDIT_LOG_NAME,
                   O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW
                   | O_NOCTTY | O_NONBLOCK, 0600);
  if (fd < 0)
    {
      int e = errno;
      if (e == ELOOP)
        return fail (err, e, "%s is a symbolic link: refused", l->path);
      return fail (err, e, "cannot open %s: %s", l->path, strerror (e));
    }
  struct stat st;
  const char *wrong = NULL;
  if (fstat (fd, &st) < 0)
    wrong = "cannot be examined";
  else if (!S_ISREG (st.st_mode))
    wrong = "is not a regular file";
  else if (st.st_uid != geteuid ())
    wrong = "belongs to another user";
  else if (st.st_nlink != 1)
    wrong = "has other hard links";
  if (wrong)
    {
      close (fd);
      return fail (err, EPERM, "%s %s: refused", l->path, wrong);
    }
  if ((st.st_mode & 0777) != 0600 && fchmod (fd, 0600) < 0)
    {
      int e = errno;
      close (fd);
      return fail (err, e, "cannot chmod %s: %s", l->path, strerror (e));
    }
  if (l->fd >= 0)
    close (l->fd);
  l->fd = fd;
  l->dev = st.st_dev;
  l->ino = st.st_ino;
  return 0;
}

/* Another writer may have rotated or removed the file. */
static int
reopen_if_replaced (struct audit_log *l, char **err)
{
  struct stat st;
  if (fstatat (l->dirfd, AUDIT_LOG_NAME, &st, AT_SYMLINK_NOFOLLOW) == 0
      && st.st_dev == l->dev && st.st_ino == l->ino)
    return 0;
  return open_file (l, err);
}

static int
rotate (struct audit_log *l, char **err)
{
  char from[NAME_MAX_LEN], to[NAME_MAX_LEN];
  if (l->keep == 0)
    {
      if (unlinkat (l->dirfd, AUDIT_LOG_NAME, 0) < 0 && errno != ENOENT)
        return fail (err, errno, "cannot remove %s: %s", l->path,
                     strerror (errno));
      return open_file (l, err);
    }
  snprintf (to, sizeof to, AUDIT_LOG_NAME ".%u", l->keep);
  if (unlinkat (l->dirfd, to, 0) < 0 && errno != ENOENT)
    return fail (err, errno, "cannot remove %s/%s: %s", l->dir, to,
                 strerror (errno));
  for (unsigned i = l->keep; i > 0; i--)
    {
      if (i > 1)
        snprintf (from, sizeof from, AUDIT_LOG_NAME ".%u", i - 1);
      else
        snprintf (from, sizeof from, AUDIT_LOG_NAME);
      snprintf (to, sizeof to, AUDIT_LOG_NAME ".%u", i);
      if (renameat (l->dirfd, from, l->dirfd, to) < 0 && errno != ENOENT)
        return fail (err, errno, "cannot rename %s/%s to %s: %s", l->dir,
                     from, to, strerror (errno));
    }
  return open_file (l, err);
}

/* ---- the API ---- */

struct audit_log *
audit_log_open (const char *state_dir, size_t max_bytes, unsigned keep,
                char **err)
{
  if (!state_dir || state_dir[0] != '/')
    {
      fail (err, EINVAL, "audit log directory '%s' is not an absolute path",
            state_dir ? state_dir : "(none)");
      return NULL;
    }
  if (keep > AUDIT_LOG_MAX_KEEP)
    {
      fail (err, EINVAL, "audit log: cannot keep %u old files (at most %u)",
            keep, AUDIT_LOG_MAX_KEEP);
      return NULL;
    }
  if (audit_log_make_dirs (state_dir, err) < 0)
    return NULL;

  struct audit_log *l = calloc (1, sizeof *l);
  if (!l)
    oom ();
  l->dir = strdup (state_dir);
  if (!l->dir)
    oom ();
  l->path = xasprintf ("%s%s" AUDIT_LOG_NAME, state_dir,
                       state_dir[strlen (state_dir) - 1] == '/' ? "" : "/");
  l->max_bytes = max_bytes ? max_bytes : AUDIT_LOG_DEFAULT_MAX_BYTES;
  l->keep = keep;
  l->dirfd = l->fd = -1;
  pthread_mutex_init (&l->lock, NULL);
  if (open_dir (l, err) < 0 || open_file (l, err) < 0)
    {
      audit_log_close (l);
      return NULL;
    }
  return l;
}

static int
lock_dir (struct audit_log *l, char **err)
{
  if (l->dirfd_pid != getpid ())
    {
      /* A forked child: take a description of our own (see the top). */
      int rc = open_dir (l, err);
      if (rc < 0)
        return rc;
    }
  while (flock (l->dirfd, LOCK_EX) < 0)
    if (errno != EINTR)
      return fail (err, errno, "cannot lock %s: %s", l->dir,
                   strerror (errno));
  return 0;
}

/* The line, written once; a part-written line is cut off again. */
static int
append_line (struct audit_log *l, const char *line, size_t len, char **err)
{
  struct stat st;
  if (fstat (l->fd, &st) < 0)
    return fail (err, errno, "cannot stat %s: %s", l->path,
                 strerror (errno));
  if (st.st_size > 0 && (uint64_t) st.st_size + len > l->max_bytes)
    {
      int rc = rotate (l, err);
      if (rc < 0)
        return rc;
      st.st_size = 0;
    }

  ssize_t n;
  do
    n = write (l->fd, line, len);
  while (n < 0 && errno == EINTR);
  if (n == (ssize_t) len)
    return 0;

  int e = errno;
  if (n >= 0)
    {
      /* A short write: the next one says why (ENOSPC, EFBIG, ...). */
      ssize_t m = write (l->fd, line + n, len - (size_t) n);
      e = m < 0 ? errno : ENOSPC;
    }
  if (ftruncate (l->fd, st.st_size) < 0)
    return fail (err, e, "cannot write to %s: %s (and a partial line may "
                 "remain: %s)", l->path, strerror (e), strerror (errno));
  return fail (err, e, "cannot write to %s: %s", l->path, strerror (e));
}

int
audit_log_write (struct audit_log *l, const struct audit_entry *e, char **err)
{
  if (err)
    *err = NULL;
  if (!l)
    return fail (err, EINVAL, "audit log is not open");
  char *json = audit_entry_to_json (e, err);
  if (!json)
    return -EINVAL;
  size_t len = strlen (json);
  char *line = realloc (json, len + 2);
  if (!line)
    oom ();
  line[len++] = '\n';
  line[len] = '\0';

  pthread_mutex_lock (&l->lock);
  int rc = lock_dir (l, err);
  if (rc == 0)
    {
      rc = reopen_if_replaced (l, err);
      if (rc == 0)
        rc = append_line (l, line, len, err);
      flock (l->dirfd, LOCK_UN);
    }
  pthread_mutex_unlock (&l->lock);
  free (line);
  return rc;
}

void
audit_log_close (struct audit_log *l)
{
  if (!l)
    return;
  if (l->fd >= 0)
    close (l->fd);
  if (l->dirfd >= 0)
    close (l->dirfd);
  pthread_mutex_destroy (&l->lock);
  free (l->dir);
  free (l->path);
  free (l);
}

const char *
audit_log_path (const struct audit_log *l)
{
  return l ? l->path : NULL;
}
