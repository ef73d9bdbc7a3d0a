/* SPDX-License-Identifier: MIT */
/* The SIF cache: see sif_cache.h and docs/cache.md. */
#define _GNU_SOURCE
#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <nettle/sha2.h>

#include "audit_log.h"
#include "monotonic_ms.h"
#include "sif_cache.h"
#include "size_text.h"
#include "xprintf.h"

extern char **environ;

/* Longest reference taken; real ones are far shorter. */
#define REF_MAX 1024
/* Longest build output line forwarded as one progress line. */
#define LINE_MAX_FWD 1024
/* A record is a few hundred bytes. */
#define RECORD_MAX 65536

typedef void (*progress_fn) (void *ctx, const char *line);

struct run
{
  const struct sif_cache_options *o;
  progress_fn progress;
  void *pctx;
};

static void say (const struct run *r, const char *fmt, ...)
    __attribute__ ((format (printf, 2, 3)));
static void
say (const struct run *r, const char *fmt, ...)
{
  if (!r->progress)
    return;
  va_list ap;
  va_start (ap, fmt);
  char *s = NULL;
  if (vasprintf (&s, fmt, ap) >= 0)
    {
      r->progress (r->pctx, s);
      free (s);
    }
  va_end (ap);
}

static int fail (char **err, const char *fmt, ...)
    __attribute__ ((format (printf, 2, 3)));
static int
fail (char **err, const char *fmt, ...)
{
  va_list ap;
  va_start (ap, fmt);
  char *s = NULL;
  if (vasprintf (&s, fmt, ap) < 0)
    s = NULL;
  va_end (ap);
  if (err)
    {
      free (*err);
      *err = s;
    }
  else
    free (s);
  return -1;
}

static double
now_s (void)
{
  struct timespec ts;
  clock_gettime (CLOCK_REALTIME, &ts);
  /* milliseconds: two uses within a second keep their order */
  return (double) ts.tv_sec + (double) (ts.tv_nsec / 1000000) / 1000;
}

static const char *
sz (uint64_t n, char buf[SIZE_TEXT_MAX])
{
  size_format_approx (n, buf, SIZE_TEXT_MAX);
  return buf;
}

/* ---- names and checks ---- */

void
sif_cache_name (const char *ref, char out[33])
{
  uint8_t h[SHA256_DIGEST_SIZE];
  struct sha256_ctx ctx;
  sha256_init (&ctx);
  sha256_update (&ctx, strlen (ref), (const uint8_t *) ref);
  sha256_digest (&ctx, sizeof h, h);
  for (int i = 0; i < 16; i++)
    snprintf (out + 2 * i, 3, "%02x", h[i]);
}

static bool
is_hex_name (const char *s, size_t n)
{
  for (size_t i = 0; i < n; i++)
    if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
      return false;
  return true;
}

int
sif_image_is_ref (const char *image, char **err)
{
  static const char *const schemes[] = { "docker://", "oras://", "library://" };
  const char *sep = strstr (image, "://");
  if (!*image)
    return fail (err, "the image is empty: give a .sif file, a directory, or a "
                 "docker://, oras:// or library:// reference");
  if (!sep)
    return 0;
  size_t len = strlen (image);
  for (size_t i = 0; i < 3; i++)
    if (!strncmp (image, schemes[i], strlen (schemes[i])))
      {
        const char *rest = image + strlen (schemes[i]);
        if (!*rest || len > REF_MAX)
          return fail (err, "image reference '%.80s': %s", image,
                       *rest ? "too long" : "names no image");
        for (const char *p = rest; *p; p++)
          if ((unsigned char) *p <= ' ' || *p == 0x7f)
            return fail (err, "image reference '%.80s' has a space or a control "
                         "character", image);
        return 1;
      }
  return fail (err, "image '%.80s': unsupported scheme '%.*s': use docker://, "
               "oras:// or library://, or a local .sif file or directory",
               image, (int) (sep - image > 20 ? 20 : sep - image + 3), image);
}

char *
sif_check_file (const char *path, uint64_t want_size)
{
  int fd = open (path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0)
    return errno == ENOENT ? xprintf ("missing")
                           : xprintf ("unreadable (%s)", strerror (errno));
  struct stat st;
  char head[41];
  char *why = NULL;
  if (fstat (fd, &st) < 0 || !S_ISREG (st.st_mode))
    why = xprintf ("corrupt (not a regular file)");
  else if (pread (fd, head, sizeof head, 0) != (ssize_t) sizeof head
           || memcmp (head + 32, "SIF_MAGIC", 9))
    why = xprintf ("corrupt (no SIF magic)");
  else if (want_size && (uint64_t) st.st_size != want_size)
    why = xprintf ("corrupt (%llu bytes, its record says %llu)",
                   (unsigned long long) st.st_size, (unsigned long long) want_size);
  close (fd);
  return why;
}

bool
sif_floor_ok (uint64_t avail, uint64_t expected, uint64_t floor)
{
  return avail >= expected && avail - expected >= floor;
}

char *
sif_scratch_user_dir (void)
{
  struct passwd *pw = getpwuid (geteuid ());
  if (!pw || !pw->pw_name || strchr (pw->pw_name, '/'))
    return NULL;
  char *p = xprintf ("/scratch/%s", pw->pw_name);
  struct stat st;
  if (p && lstat (p, &st) == 0 && S_ISDIR (st.st_mode) && st.st_uid == geteuid ()
      && access (p, W_OK | X_OK) == 0)
    return p;
  free (p);
  return NULL;
}

char *
sif_cache_default_dir (char **err)
{
  char *scratch = sif_scratch_user_dir ();
  if (scratch)
    {
      char *p = xprintf ("%s/airlock/sif", scratch);
      free (scratch);
      return p;
    }
  const char *home = getenv ("HOME");
  struct passwd *pw = home && home[0] == '/' ? NULL : getpwuid (getuid ());
  if (pw)
    home = pw->pw_dir;
  char *serr = NULL;
  char *state = audit_log_state_dir (getenv ("XDG_STATE_HOME"), home, &serr);
  if (!state)
    {
      fail (err, "no place for the SIF cache: no writable /scratch/$USER, and %s; set "
            "singularity.cache_dir", serr ? serr : "no state directory");
      free (serr);
      return NULL;
    }
  char *p = xprintf ("%s/sif", state);
  free (state);
  return p;
}

static bool
executable_file (const char *p)
{
  struct stat st;
  return stat (p, &st) == 0 && S_ISREG (st.st_mode) && access (p, X_OK) == 0;
}

/* name in the absolute directories of path_env; malloc'd or NULL */
static char *
search_path (const char *name, const char *path_env)
{
  char *copy = strdup (path_env), *save = NULL, *found = NULL;
  for (char *d = copy ? strtok_r (copy, ":", &save) : NULL; d && !found;
       d = strtok_r (NULL, ":", &save))
    {
      /* a relative entry would depend on the daemon's cwd */
      if (d[0] != '/')
        continue;
      char *p = xprintf ("%s/%s", d, name);
      if (p && executable_file (p))
        found = p;
      else
        free (p);
    }
  free (copy);
  return found;
}

char *
sif_find_executable (const char *configured, const char *path_env,
                     const char **kind, char **err)
{
  if (!path_env)
    path_env = getenv ("PATH");
  if (!path_env)
    path_env = "/usr/local/bin:/usr/bin:/bin";
  char *found = NULL;
  if (configured && *configured)
    {
      if (strchr (configured, '/'))
        {
          if (configured[0] != '/')
            fail (err, "singularity.executable '%s': give an absolute path or a "
                  "name to look up in PATH", configured);
          else if (!executable_file (configured))
            fail (err, "singularity.executable %s: not an executable file (install "
                  "Apptainer: https://apptainer.org/docs/admin/main/installation.html)",
                  configured);
          else
            found = strdup (configured);
        }
      else if (!(found = search_path (configured, path_env)))
        fail (err, "singularity.executable '%s' is not in PATH (%s): install "
              "Apptainer (https://apptainer.org/docs/admin/main/installation.html) "
              "or give its path", configured, path_env);
    }
  else if (!(found = search_path ("apptainer", path_env))
           && !(found = search_path ("singularity", path_env)))
    fail (err, "neither apptainer nor singularity is in PATH (%s): install "
          "Apptainer (https://apptainer.org/docs/admin/main/installation.html), "
          "load its module (`module load apptainer` on many clusters), or set "
          "singularity.executable to its path", path_env);
  if (found)
    {
      const char *base = strrchr (found, '/') + 1;
      *kind = strncmp (base, "singularity", 11) ? "apptainer" : "singularity";
    }
  return found;
}

/* ---- directories and locks ---- */

/* mkdir -p (new components 0700), then: a directory of ours that nobody
 * else can write (a SIF planted there would run in our sessions). */
static int
ensure_dir (const char *path, const char *what, char **err)
{
  char *p = strdup (path);
  if (!p)
    return fail (err, "out of memory");
  for (char *s = strchr (p + 1, '/');; s = strchr (s + 1, '/'))
    {
      if (s)
        *s = '\0';
      if (mkdir (p, 0700) < 0 && errno != EEXIST)
        {
          int e = errno;
          fail (err, "%s %s: cannot create %s: %s", what, path, p, strerror (e));
          free (p);
          return -1;
        }
      if (!s)
        break;
      *s = '/';
    }
  free (p);
  struct stat st;
  if (lstat (path, &st) < 0)
    return fail (err, "%s %s: %s", what, path, strerror (errno));
  if (!S_ISDIR (st.st_mode))
    return fail (err, "%s %s is not a directory", what, path);
  if (st.st_uid != geteuid () || (st.st_mode & 022))
    return fail (err, "%s %s is not safe: %s (mode %04o); a SIF put there by someone "
                 "else would run in your sessions: `chmod go-w %s`, or choose another "
                 "singularity.cache_dir", what, path,
                 st.st_uid != geteuid () ? "not owned by you" : "others may write it",
                 (unsigned) (st.st_mode & 07777), path);
  return 0;
}

/* Open and flock DIR/PREFIXNAME; the fd, or -1 (errno EWOULDBLOCK when
 * op has LOCK_NB and it is held).  The file may be unlinked by its
 * holder (eviction): the lock counts only when the path still names the
 * file locked, so it is tried again then. */
static int
lock_at (const char *dir, const char *prefix, const char *name, int op, bool create)
{
  char path[PATH_MAX];
  snprintf (path, sizeof path, "%s/%s%s", dir, prefix, name);
  for (int tries = 0; tries < 100; tries++)
    {
      int fd = open (path, O_RDWR | O_CLOEXEC | O_NOFOLLOW | (create ? O_CREAT : 0), 0600);
      if (fd < 0)
        return -1;
      if (flock (fd, op) < 0)
        {
          int e = errno;
          close (fd);
          errno = e;
          return -1;
        }
      struct stat a, b;
      if (fstat (fd, &a) == 0 && stat (path, &b) == 0 && a.st_ino == b.st_ino
          && a.st_dev == b.st_dev)
        return fd;
      close (fd);
      if (!create)
        {
          errno = ENOENT;
          return -1;
        }
    }
  errno = EAGAIN;
  return -1;
}

/* ---- records ---- */

struct record
{
  char *ref;
  uint64_t size;
  double built_at, last_used;
};

static int
read_record (const char *dir, const char *name, struct record *r)
{
  memset (r, 0, sizeof *r);
  char path[PATH_MAX];
  snprintf (path, sizeof path, "%s/%s.json", dir, name);
  int fd = open (path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0)
    return -1;
  char *buf = malloc (RECORD_MAX + 1);
  ssize_t n = buf ? read (fd, buf, RECORD_MAX) : -1;
  close (fd);
  if (n <= 0)
    {
      free (buf);
      return -1;
    }
  buf[n] = '\0';
  cJSON *j = cJSON_Parse (buf);
  free (buf);
  const cJSON *ref = cJSON_GetObjectItemCaseSensitive (j, "ref");
  const cJSON *size = cJSON_GetObjectItemCaseSensitive (j, "size");
  const cJSON *built = cJSON_GetObjectItemCaseSensitive (j, "built_at");
  const cJSON *used = cJSON_GetObjectItemCaseSensitive (j, "last_used");
  int rc = -1;
  if (cJSON_IsString (ref) && cJSON_IsNumber (size) && size->valuedouble >= 1
      && cJSON_IsNumber (built) && cJSON_IsNumber (used))
    {
      r->ref = strdup (ref->valuestring);
      r->size = (uint64_t) size->valuedouble;
      r->built_at = built->valuedouble;
      r->last_used = used->valuedouble;
      rc = r->ref ? 0 : -1;
    }
  cJSON_Delete (j);
  return rc;
}

/* Atomically (temp file, fsync, rename). */
static int
write_record (const char *dir, const char *name, const struct record *r, char **err)
{
  cJSON *j = cJSON_CreateObject ();
  cJSON_AddStringToObject (j, "ref", r->ref);
  cJSON_AddNumberToObject (j, "size", (double) r->size);
  cJSON_AddNumberToObject (j, "built_at", r->built_at);
  cJSON_AddNumberToObject (j, "last_used", r->last_used);
  char *text = cJSON_PrintUnformatted (j);
  cJSON_Delete (j);
  char tmp[PATH_MAX], path[PATH_MAX];
  snprintf (tmp, sizeof tmp, "%s/.tmp-%s.json-%ld", dir, name, (long) getpid ());
  snprintf (path, sizeof path, "%s/%s.json", dir, name);
  int fd = text ? open (tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600) : -1;
  bool ok = fd >= 0;
  if (ok)
    {
      size_t n = strlen (text);
      ok = write (fd, text, n) == (ssize_t) n && write (fd, "\n", 1) == 1 && fsync (fd) == 0;
      ok = close (fd) == 0 && ok;
      ok = ok && rename (tmp, path) == 0;
    }
  int e = errno;
  free (text);
  if (!ok)
    {
      unlink (tmp);
      return fail (err, "cannot write the cache record %s: %s", path, strerror (e));
    }
  return 0;
}

static void
fsync_dir (const char *dir)
{
  int fd = open (dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0)
    {
      fsync (fd);
      close (fd);
    }
}

/* ---- the build ---- */

static int
rm_one (const char *p, const struct stat *st, int flag, struct FTW *f)
{
  (void) st, (void) flag, (void) f;
  remove (p);
  return 0;
}

static void
rm_tree (const char *p)
{
  nftw (p, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* The build's environment: env, without the variables that would change
 * what is built or where (all of APPTAINER*_ / SINGULARITY*_ when env is
 * this process's own), plus the build's tmp and cache dirs. */
static char **
build_env (const struct sif_cache_options *o, const char *bdir)
{
  const char *const *base = o->env ? o->env : (const char *const *) environ;
  size_t n = 0;
  while (base[n])
    n++;
  char **env = calloc (n + 3, sizeof *env);
  if (!env)
    return NULL;
  size_t k = 0;
  for (size_t i = 0; i < n; i++)
    {
      const char *v = base[i];
      bool ours = !strncmp (v, "APPTAINER", 9) || !strncmp (v, "SINGULARITY", 11);
      if (ours && !o->env)
        continue;
      const char *eq = strchr (v, '=');
      size_t len = eq ? (size_t) (eq - v) : strlen (v);
      if (ours && len > 7 && (!strncmp (v + len - 7, "_TMPDIR", 7)
                              || (len > 9 && !strncmp (v + len - 9, "_CACHEDIR", 9))))
        continue;
      env[k++] = (char *) v;
    }
  const char *pfx = o->kind && !strcmp (o->kind, "singularity") ? "SINGULARITY" : "APPTAINER";
  env[k++] = xprintf ("%s_TMPDIR=%s/tmp", pfx, bdir);
  env[k++] = xprintf ("%s_CACHEDIR=%s/cache", pfx, bdir);
  if (!env[k - 1] || !env[k - 2])
    {
      free (env[k - 1]);
      free (env[k - 2]);
      free (env);
      return NULL;
    }
  return env;
}

static void
free_build_env (char **env)
{
  size_t k = 0;
  while (env[k])
    k++;
  free (env[k - 1]);
  free (env[k - 2]);
  free (env);
}

/* Forward complete lines of buf[0..*len) (all of it when flush). */
static void
forward_lines (const struct run *r, char *buf, size_t *len, bool flush, char *last,
               size_t last_size)
{
  size_t start = 0;
  for (size_t i = 0; i <= *len; i++)
    {
      bool end = i < *len ? buf[i] == '\n' : (flush && i > start);
      if (!end && i - start < LINE_MAX_FWD)
        continue;
      size_t l = i - start;
      while (l && (buf[start + l - 1] == '\r' || buf[start + l - 1] == ' '))
        l--;
      if (l)
        {
          char *line = strndup (buf + start, l);
          for (char *p = line; p && *p; p++)
            if ((unsigned char) *p < ' ' && *p != '\t')
              *p = '?';
          if (line)
            {
              say (r, "%s", line);
              snprintf (last, last_size, "%s", line);
            }
          free (line);
        }
      start = i < *len && buf[i] == '\n' ? i + 1 : i;
    }
  memmove (buf, buf + start, *len - start);
  *len -= start;
}

/* Run EXE build OUT REF in its own process group, its output forwarded,
 * at most build_timeout seconds; the group is killed at the end whatever
 * happened (nothing of a build outlives it). */
static int
run_build (const struct run *r, const char *ref, const char *name, const char *out,
           char **err)
{
  const struct sif_cache_options *o = r->o;
  char *scratch = NULL, *user = NULL;
  if (o->scratch_dir)
    scratch = strdup (o->scratch_dir);
  else if ((user = sif_scratch_user_dir ()))
    scratch = xprintf ("%s/airlock/build", user);
  else
    scratch = xprintf ("%s/.build", o->cache_dir);
  free (user);
  if (!scratch || ensure_dir (scratch, "the build scratch directory", err) < 0)
    {
      free (scratch);
      return -1;
    }
  char *bdir = xprintf ("%s/build-%s-%ld", scratch, name, (long) getpid ());
  free (scratch);
  char *tmpd = bdir ? xprintf ("%s/tmp", bdir) : NULL;
  char *cached = bdir ? xprintf ("%s/cache", bdir) : NULL;
  if (bdir)
    rm_tree (bdir);
  if (!tmpd || !cached || mkdir (bdir, 0700) < 0 || mkdir (tmpd, 0700) < 0
      || mkdir (cached, 0700) < 0)
    {
      fail (err, "cannot make the build directory %s: %s", bdir ? bdir : "?",
            strerror (errno));
      if (bdir)
        rm_tree (bdir);
      free (bdir), free (tmpd), free (cached);
      return -1;
    }
  free (tmpd), free (cached);

  char **env = build_env (o, bdir);
  int pfd[2] = { -1, -1 };
  pid_t pid = -1;
  int rc = -1;
  posix_spawn_file_actions_t fa;
  posix_spawnattr_t at;
  posix_spawn_file_actions_init (&fa);
  posix_spawnattr_init (&at);
  if (env && pipe2 (pfd, O_CLOEXEC) == 0)
    {
      sigset_t none, all;
      sigemptyset (&none);
      sigfillset (&all);
      posix_spawn_file_actions_addopen (&fa, 0, "/dev/null", O_RDONLY, 0);
      posix_spawn_file_actions_adddup2 (&fa, pfd[1], 1);
      posix_spawn_file_actions_adddup2 (&fa, pfd[1], 2);
      posix_spawn_file_actions_addchdir_np (&fa, bdir);
      posix_spawnattr_setflags (&at, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK
                                         | POSIX_SPAWN_SETSIGDEF);
      posix_spawnattr_setpgroup (&at, 0);
      posix_spawnattr_setsigmask (&at, &none);
      posix_spawnattr_setsigdefault (&at, &all);
      char *argv[] = { (char *) o->exe, "build", (char *) out, (char *) ref, NULL };
      int e = posix_spawn (&pid, o->exe, &fa, &at, argv, env);
      if (e)
        {
          pid = -1;
          fail (err, "cannot run %s: %s", o->exe, strerror (e));
        }
    }
  else
    fail (err, "cannot start the build: %s", strerror (errno));
  posix_spawn_file_actions_destroy (&fa);
  posix_spawnattr_destroy (&at);
  if (pfd[1] >= 0)
    close (pfd[1]);

  if (pid > 0)
    {
      long long deadline = monotonic_ms () + (long long) o->build_timeout * 1000;
      char buf[2 * LINE_MAX_FWD + 1], last[256] = "";
      size_t len = 0;
      bool eof = false, timed_out = false;
      fcntl (pfd[0], F_SETFL, O_NONBLOCK);
      for (;;)
        {
          siginfo_t si = { 0 };
          bool exited = waitid (P_PID, (id_t) pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0
                        && si.si_pid == pid;
          if (!exited && !timed_out && monotonic_ms () >= deadline)
            {
              timed_out = true;
              kill (-pid, SIGKILL);
            }
          if (exited)
            /* stragglers of the build (its pid is not reaped yet, so
             * the group id cannot be anyone else's) */
            kill (-pid, SIGKILL);
          struct pollfd p = { .fd = pfd[0], .events = POLLIN };
          if (!eof && poll (&p, 1, exited ? 0 : 200) > 0)
            {
              ssize_t n;
              while ((n = read (pfd[0], buf + len, sizeof buf - 1 - len)) > 0)
                {
                  len += (size_t) n;
                  forward_lines (r, buf, &len, false, last, sizeof last);
                }
              if (n == 0)
                eof = true;
            }
          else if (eof && !exited)
            usleep (100 * 1000);
          if (exited)
            break;
        }
      forward_lines (r, buf, &len, true, last, sizeof last);
      int st = 0;
      while (waitpid (pid, &st, 0) < 0 && errno == EINTR)
        ;
      if (timed_out)
        fail (err, "building %s took over singularity.build_timeout (%d s): stopped; "
              "raise it for a large image, or build ahead of time with `airlock cache "
              "fetch`", ref, o->build_timeout);
      else if (WIFEXITED (st) && WEXITSTATUS (st) == 0)
        rc = 0;
      else if (WIFEXITED (st))
        fail (err, "%s build %s failed (exit %d)%s%s", o->exe, ref, WEXITSTATUS (st),
              *last ? ": " : "", last);
      else
        fail (err, "%s build %s was killed by signal %d", o->exe, ref, WTERMSIG (st));
    }
  if (pfd[0] >= 0)
    close (pfd[0]);
  if (env)
    free_build_env (env);
  rm_tree (bdir);
  free (bdir);
  return rc;
}

/* ---- listing and eviction ---- */

static int
cmp_lru (const void *a, const void *b)
{
  const struct sif_cache_entry *x = a, *y = b;
  if (x->last_used != y->last_used)
    return x->last_used < y->last_used ? -1 : 1;
  return strcmp (x->name, y->name);
}

/* Whether a live session holds the entry's .use lock. */
static bool
entry_in_use (const char *dir, const char *name)
{
  int fd = lock_at (dir, ".use-", name, LOCK_EX | LOCK_NB, false);
  if (fd >= 0)
    {
      close (fd);
      return false;
    }
  return errno == EWOULDBLOCK;
}

static int
list_entries (const char *dir, struct sif_cache_entry **out, size_t *n_out,
              uint64_t *total, char **err)
{
  *out = NULL;
  *n_out = 0;
  *total = 0;
  DIR *d = opendir (dir);
  if (!d)
    return errno == ENOENT ? 0 : fail (err, "cache directory %s: %s", dir, strerror (errno));
  struct sif_cache_entry *e = NULL;
  size_t n = 0, cap = 0;
  struct dirent *de;
  while ((de = readdir (d)))
    {
      size_t l = strlen (de->d_name);
      if (!((l == 37 && !strcmp (de->d_name + 32, ".json"))
            || (l == 36 && !strcmp (de->d_name + 32, ".sif")))
          || !is_hex_name (de->d_name, 32))
        continue;
      size_t i = 0;
      while (i < n && strncmp (e[i].name, de->d_name, 32))
        i++;
      if (i < n)
        continue;
      if (n == cap)
        {
          cap = cap ? 2 * cap : 16;
          struct sif_cache_entry *ne = realloc (e, cap * sizeof *e);
          if (!ne)
            break;
          e = ne;
        }
      struct sif_cache_entry *x = &e[n++];
      memset (x, 0, sizeof *x);
      memcpy (x->name, de->d_name, 32);
      x->path = xprintf ("%s/%s.sif", dir, x->name);
      struct record rec;
      struct stat st;
      bool have = x->path && stat (x->path, &st) == 0;
      if (read_record (dir, x->name, &rec) == 0)
        {
          x->ref = rec.ref;
          x->recorded = rec.size;
          x->built_at = rec.built_at;
          x->last_used = rec.last_used;
        }
      else if (have)
        x->built_at = x->last_used = (double) st.st_mtime;
      x->size = have ? (uint64_t) st.st_size : 0;
      *total += x->size;
      char *why = x->path ? sif_check_file (x->path, x->recorded) : NULL;
      x->state = !why ? "ok" : !strcmp (why, "missing") ? "missing"
                 : !x->ref ? "no record" : "corrupt";
      if (!x->ref && !why)
        x->state = "no record";
      free (why);
      x->in_use = entry_in_use (dir, x->name);
    }
  closedir (d);
  if (n)
    qsort (e, n, sizeof *e, cmp_lru);
  *out = e;
  *n_out = n;
  return 0;
}

static int
list_in (const struct sif_cache_options *o, struct sif_cache_entry **entries,
         size_t *n, uint64_t *total, char **err)
{
  return list_entries (o->cache_dir, entries, n, total, err);
}

void
sif_cache_entries_free (struct sif_cache_entry *e, size_t n)
{
  for (size_t i = 0; i < n; i++)
    {
      free (e[i].ref);
      free (e[i].path);
    }
  free (e);
}

static void
when_text (double t, char *buf, size_t size)
{
  time_t s = (time_t) t;
  struct tm tm;
  if (t <= 0 || !localtime_r (&s, &tm) || !strftime (buf, size, "%Y-%m-%d %H:%M", &tm))
    snprintf (buf, size, "never");
}

/* Temp files and build dirs whose build is no longer running (its image
 * lock is free): a daemon that died mid-build left them. */
static void
remove_leftovers (const char *dir, const char *scratch)
{
  const char *dirs[2] = { dir, scratch };
  for (int k = 0; k < 2; k++)
    {
      DIR *d = dirs[k] ? opendir (dirs[k]) : NULL;
      struct dirent *de;
      while (d && (de = readdir (d)))
        {
          const char *pfx = k == 0 ? ".tmp-" : "build-";
          size_t pl = strlen (pfx);
          if (strncmp (de->d_name, pfx, pl) || strlen (de->d_name) < pl + 32
              || !is_hex_name (de->d_name + pl, 32))
            continue;
          char name[33];
          memcpy (name, de->d_name + pl, 32);
          name[32] = '\0';
          int fd = lock_at (dir, ".lock-", name, LOCK_EX | LOCK_NB, false);
          if (fd < 0 && errno == EWOULDBLOCK)
            continue;
          char *p = xprintf ("%s/%s", dirs[k], de->d_name);
          if (p)
            rm_tree (p);
          free (p);
          if (fd >= 0)
            close (fd);
        }
      if (d)
        closedir (d);
    }
}

/* Evict least recently used entries (not keep, not in use, not being
 * built) until the total is at most cache_max, or all of them. */
static int
evict (const struct run *r, const char *keep, bool all, size_t *removed, uint64_t *freed,
       char **err)
{
  const struct sif_cache_options *o = r->o;
  const char *dir = o->cache_dir;
  int glock = lock_at (dir, ".lock", "", LOCK_EX, true);
  if (glock < 0)
    return fail (err, "cannot lock the cache %s: %s", dir, strerror (errno));
  struct sif_cache_entry *e;
  size_t n;
  uint64_t total;
  int rc = list_entries (dir, &e, &n, &total, err);
  for (size_t i = 0; rc == 0 && i < n; i++)
    {
      if (!all && (!o->cache_max || total <= o->cache_max))
        break;
      if (keep && !strcmp (e[i].name, keep))
        continue;
      int il = lock_at (dir, ".lock-", e[i].name, LOCK_EX | LOCK_NB, true);
      if (il < 0)
        continue;
      int ul = lock_at (dir, ".use-", e[i].name, LOCK_EX | LOCK_NB, true);
      if (ul < 0)
        {
          close (il);
          continue;
        }
      char p[PATH_MAX];
      snprintf (p, sizeof p, "%s/%s.sif", dir, e[i].name);
      unlink (p);
      snprintf (p, sizeof p, "%s/%s.json", dir, e[i].name);
      unlink (p);
      snprintf (p, sizeof p, "%s/.use-%s", dir, e[i].name);
      unlink (p);
      snprintf (p, sizeof p, "%s/.lock-%s", dir, e[i].name);
      unlink (p);
      close (ul);
      close (il);
      total -= e[i].size;
      char s1[SIZE_TEXT_MAX], s2[SIZE_TEXT_MAX], when[32];
      when_text (e[i].last_used, when, sizeof when);
      if (all)
        say (r, "removed %s (%s)", e[i].ref ? e[i].ref : e[i].path, sz (e[i].size, s1));
      else
        say (r, "evicted %s (%s, last used %s): the cache was over singularity.cache_max %s",
             e[i].ref ? e[i].ref : e[i].path, sz (e[i].size, s1), when,
             sz (o->cache_max, s2));
      if (removed)
        (*removed)++;
      if (freed)
        *freed += e[i].size;
    }
  sif_cache_entries_free (e, n);
  close (glock);
  return rc;
}

static int
prune_in (const struct sif_cache_options *o, bool all,
          void (*progress) (void *ctx, const char *line), void *progress_ctx,
          size_t *removed, uint64_t *freed, char **err)
{
  struct run r = { o, progress, progress_ctx };
  if (removed)
    *removed = 0;
  if (freed)
    *freed = 0;
  struct stat st;
  if (stat (o->cache_dir, &st) < 0 && errno == ENOENT)
    return 0;
  if (ensure_dir (o->cache_dir, "the SIF cache directory", err) < 0)
    return -1;
  char *user = o->scratch_dir ? NULL : sif_scratch_user_dir ();
  char *scratch = o->scratch_dir ? strdup (o->scratch_dir)
                  : user ? xprintf ("%s/airlock/build", user)
                         : xprintf ("%s/.build", o->cache_dir);
  free (user);
  remove_leftovers (o->cache_dir, scratch);
  free (scratch);
  return evict (&r, NULL, all, removed, freed, err);
}

/* ---- get ---- */

static int
fetch_in (const struct sif_cache_options *o, const char *image,
          void (*progress) (void *ctx, const char *line), void *progress_ctx,
          char **sif_path, bool *built, char **err)
{
  struct run r = { o, progress, progress_ctx };
  *sif_path = NULL;
  if (built)
    *built = false;
  int is_ref = sif_image_is_ref (image, err);
  if (is_ref < 0)
    return -1;
  if (!is_ref)
    {
      struct stat st;
      if (image[0] != '/')
        return fail (err, "image '%s': a local image is an absolute path (or use a "
                     "docker://, oras:// or library:// reference)", image);
      if (stat (image, &st) < 0)
        return fail (err, "image %s: %s", image, strerror (errno));
      if (!S_ISDIR (st.st_mode))
        {
          char *why = sif_check_file (image, 0);
          if (why)
            {
              fail (err, "image %s is not a SIF file: %s; build one with `apptainer "
                    "build FILE.sif docker://IMAGE`, or give the reference", image, why);
              free (why);
              return -1;
            }
        }
      return (*sif_path = strdup (image)) ? 0 : fail (err, "out of memory");
    }

  if (ensure_dir (o->cache_dir, "the SIF cache directory", err) < 0)
    return -1;
  char name[33];
  sif_cache_name (image, name);
  /* One build of an image at a time, across daemons: a second opener
   * waits here, then finds the SIF the first one built. */
  int lock = lock_at (o->cache_dir, ".lock-", name, LOCK_EX | LOCK_NB, true);
  if (lock < 0 && errno == EWOULDBLOCK)
    {
      say (&r, "waiting for another build of %s to finish", image);
      long long deadline = monotonic_ms () + ((long long) o->build_timeout + 60) * 1000;
      while (lock < 0 && errno == EWOULDBLOCK && monotonic_ms () < deadline)
        {
          usleep (100 * 1000);
          lock = lock_at (o->cache_dir, ".lock-", name, LOCK_EX | LOCK_NB, true);
        }
    }
  if (lock < 0)
    return fail (err, "cannot lock %s/.lock-%s: %s", o->cache_dir, name,
                 errno == EWOULDBLOCK ? "another build of it is still running"
                                      : strerror (errno));
  char *path = xprintf ("%s/%s.sif", o->cache_dir, name);
  struct record rec;
  bool have_rec = read_record (o->cache_dir, name, &rec) == 0;
  if (have_rec && strcmp (rec.ref, image))
    {
      /* 128 bits collided, or someone wrote the record: not ours */
      free (rec.ref);
      have_rec = false;
    }
  char *why = NULL;
  if (have_rec && !(why = sif_check_file (path, rec.size)))
    {
      rec.last_used = now_s ();
      /* a record not updated only ages it sooner */
      char *werr = NULL;
      if (write_record (o->cache_dir, name, &rec, &werr) < 0)
        say (&r, "warning: %s", werr);
      free (werr);
      free (rec.ref);
      close (lock);
      *sif_path = path;
      return 0;
    }
  struct stat st;
  if (have_rec)
    say (&r, "cached SIF for %s is %s; rebuilding", image, why);
  else if (stat (path, &st) == 0)
    say (&r, "cached SIF for %s has no record; rebuilding", image);
  free (why);

  /* the floor: never leave less than disk_floor free */
  uint64_t expected = have_rec ? rec.size : SIF_SIZE_GUESS;
  struct statvfs vfs;
  int rc = -1;
  char a[SIZE_TEXT_MAX], b[SIZE_TEXT_MAX], c[SIZE_TEXT_MAX], d[SIZE_TEXT_MAX];
  if (statvfs (o->cache_dir, &vfs) < 0)
    fail (err, "cannot read the free space of %s: %s", o->cache_dir, strerror (errno));
  else if (!sif_floor_ok ((uint64_t) vfs.f_bavail * vfs.f_frsize, expected, o->disk_floor))
    {
      uint64_t avail = (uint64_t) vfs.f_bavail * vfs.f_frsize;
      fail (err, "not building %s: %s free on the filesystem of %s, the SIF needs about %s "
            "(%s), which would leave %s, below singularity.disk_floor %s; free some space "
            "(`airlock cache prune`), or set singularity.cache_dir elsewhere",
            image, sz (avail, a), o->cache_dir, sz (expected, b),
            have_rec ? "its last build's size" : "a guess: it was never built here",
            avail > expected ? sz (avail - expected, c) : "nothing", sz (o->disk_floor, d));
    }
  else
    {
      char *tmp = xprintf ("%s/.tmp-%s-%ld.sif", o->cache_dir, name, (long) getpid ());
      say (&r, "building %s into a SIF (at most %d s)", image, o->build_timeout);
      if (tmp)
        unlink (tmp);
      if (tmp && run_build (&r, image, name, tmp, err) == 0)
        {
          char *bad = sif_check_file (tmp, 0);
          int fd = bad ? -1 : open (tmp, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
          struct stat ts;
          if (bad)
            fail (err, "the build of %s wrote no valid SIF: %s", image, bad);
          else if (fd < 0 || fstat (fd, &ts) < 0 || fsync (fd) < 0)
            fail (err, "the built SIF %s: %s", tmp, strerror (errno));
          else
            {
              /* the record first: a SIF without one is rebuilt, never
               * trusted */
              free (have_rec ? rec.ref : NULL);
              have_rec = false;
              double t = now_s ();
              struct record nr = { (char *) image, (uint64_t) ts.st_size, t, t };
              if (write_record (o->cache_dir, name, &nr, err) == 0)
                {
                  if (rename (tmp, path) < 0)
                    fail (err, "cannot rename %s to %s: %s", tmp, path, strerror (errno));
                  else
                    {
                      fsync_dir (o->cache_dir);
                      say (&r, "built %s: %s", image, sz ((uint64_t) ts.st_size, a));
                      rc = 0;
                    }
                }
            }
          if (fd >= 0)
            close (fd);
          free (bad);
        }
      if (tmp)
        unlink (tmp);
      free (tmp);
    }
  if (have_rec)
    free (rec.ref);
  if (rc == 0)
    {
      if (built)
        *built = true;
      /* the cap, now that the cache grew; over it is not a failure */
      char *eerr = NULL;
      if (evict (&r, name, false, NULL, NULL, &eerr) < 0)
        say (&r, "warning: %s", eerr);
      free (eerr);
      *sif_path = path;
      path = NULL;
    }
  free (path);
  close (lock);
  return rc;
}


static int
pin_in (const struct sif_cache_options *o, const char *sif_path, char **err)
{
  size_t dl = strlen (o->cache_dir);
  while (dl > 1 && o->cache_dir[dl - 1] == '/')
    dl--;
  const char *base = sif_path + dl + 1;
  if (strncmp (sif_path, o->cache_dir, dl) || sif_path[dl] != '/' || strlen (base) != 36
      || strcmp (base + 32, ".sif") || !is_hex_name (base, 32))
    return SIF_CACHE_NOT_CACHED;
  char name[33];
  memcpy (name, base, 32);
  name[32] = '\0';
  int fd = lock_at (o->cache_dir, ".use-", name, LOCK_SH, true);
  if (fd < 0)
    return fail (err, "cannot pin %s: %s", sif_path, strerror (errno));
  struct stat st;
  if (stat (sif_path, &st) < 0)
    {
      close (fd);
      return fail (err, "the cached SIF %s was removed before this session could use it "
                   "(evicted by another daemon?): open the session again", sif_path);
    }
  return fd;
}

/* ---- the entry points: cache_dir NULL is its default ---- */

static const struct sif_cache_options *
resolved (const struct sif_cache_options *o, struct sif_cache_options *copy, char **owned,
          char **err)
{
  *owned = NULL;
  if (o->cache_dir)
    return o;
  if (!(*owned = sif_cache_default_dir (err)))
    return NULL;
  *copy = *o;
  copy->cache_dir = *owned;
  return copy;
}

#define WITH_DIR(call)                                                      \
  do                                                                        \
    {                                                                       \
      struct sif_cache_options copy_;                                       \
      char *owned_;                                                         \
      const struct sif_cache_options *o_ = resolved (o, &copy_, &owned_, err); \
      int rc_ = o_ ? (call) : -1;                                           \
      free (owned_);                                                        \
      return rc_;                                                           \
    }                                                                       \
  while (0)

int
sif_cache_fetch (const struct sif_cache_options *o, const char *image,
                 void (*progress) (void *ctx, const char *line), void *progress_ctx,
                 char **sif_path, bool *built, char **err)
{
  *sif_path = NULL;
  WITH_DIR (fetch_in (o_, image, progress, progress_ctx, sif_path, built, err));
}

int
sif_cache_get (const struct sif_cache_options *o, const char *image,
               void (*progress) (void *ctx, const char *line), void *progress_ctx,
               char **sif_path, char **err)
{
  return sif_cache_fetch (o, image, progress, progress_ctx, sif_path, NULL, err);
}

int
sif_cache_list (const struct sif_cache_options *o, struct sif_cache_entry **entries,
                size_t *n, uint64_t *total, char **err)
{
  *entries = NULL;
  *n = 0;
  *total = 0;
  WITH_DIR (list_in (o_, entries, n, total, err));
}

int
sif_cache_prune (const struct sif_cache_options *o, bool all,
                 void (*progress) (void *ctx, const char *line), void *progress_ctx,
                 size_t *removed, uint64_t *freed, char **err)
{
  WITH_DIR (prune_in (o_, all, progress, progress_ctx, removed, freed, err));
}

int
sif_cache_pin (const struct sif_cache_options *o, const char *sif_path, char **err)
{
  WITH_DIR (pin_in (o_, sif_path, err));
}

void
sif_cache_unpin (int pin)
{
  if (pin >= 0)
    close (pin);
}
