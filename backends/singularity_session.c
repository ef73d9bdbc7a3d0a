/* SPDX-License-Identifier: MIT */
/* The singularity backend's sessions (see singularity_session.h and
 * docs/singularity.md).
 *
 * A session is one instance, started with the hardened flags of
 * singularity_argv.c; its control directory (under the daemon's runtime
 * directory, 0711 in a 0700 one) holds a copy of the static supervisor
 * and the socket we listen on, and is bound read-only at
 * SUP_CONTAINER_DIR.  Then `EXE exec instance://NAME supervisor
 * --instance` runs as our child for the session's whole life: the
 * supervisor reads a token on its stdin (our pipe), connects, sends the
 * token, and from then on every command is one of its jobs, over the
 * same protocol as local and docker sessions (supervisor_client.c): the
 * script on fd 4, env per job, a timeout kills the job's tree inside the
 * instance.  We listen only until it connected.  singularity.env reaches
 * the instance as APPTAINERENV_* variables of that exec client (its
 * environment: only our uid can read it), never on a command line.
 *
 * The exec child ending, or the connection, is the session lost: it is
 * never made again behind the user's back.  close hangs up (the
 * supervisor kills its jobs and exits), stops the instance (--force
 * when a plain stop fails or hangs) and removes the control directory,
 * the overlay and the env file.
 *
 * The daemon is single-threaded: every apptainer process it waits for
 * (--version, instance start, list, stop) runs in its own process group
 * with a deadline, after which the group is killed and the error says
 * which step hung. */
#define _GNU_SOURCE
#include "singularity_session.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cgroup_oom.h"
#include "monotonic_ms.h"
#include "posture.h"
#include "protected_paths.h"
#include "sif_cache.h"
#include "singularity_argv.h"
#include "supervisor_client.h"
#include "xprintf.h"

#define VERSION_TIMEOUT_MS 10000
#define STOP_TIMEOUT_MS 30000
#define FORCE_TIMEOUT_MS 15000
#define LIST_TIMEOUT_MS 15000
#define CONNECT_TIMEOUT_MS 30000
#define EXIT_GRACE_MS 5000
#define SOCKET_NAME "supervisor.sock"
#define ERR_TAIL 2048
#define INSTALL_HINT "https://apptainer.org/docs/admin/main/installation.html"

extern char **environ;

struct backend_session {
  char *exe;
  struct sg_version ver;
  char *name, *session;
  char *control_dir, *overlay, *config_dir;
  char **child_env;          /* of every apptainer process */
  char **exec_env;           /* of the supervisor's exec: with singularity.env */
  int dir_fd, listen_fd, ep;
  pid_t exec_pid;
  int exec_err;              /* the exec child's stderr, or -1 */
  char err_tail[ERR_TAIL];   /* the last of it, for a lost session */
  size_t err_len;
  bool started;              /* the instance exists: close stops it */
  bool hung;                 /* apptainer hung: close goes straight to --force */
  bool own_cgroup;           /* --memory given: the instance has a memory cgroup */
  int pin;                   /* the cached SIF's pin (sif_cache_pin), or -2 */
  struct sup_client sup;
  long sup_pid;              /* the supervisor, as this host sees it */
  bool lost;
  char *lost_why;
  bool host_filesystem, host_network;
  char *reasons, *warning;
  /* A singularity.binds entry that brings the host's /dev or /dev/pts
   * into the instance (its terminals would be the host's), or NULL. */
  char *host_terminals;
  int oom_fd;
};

/* ---- running apptainer ---- */

struct child {
  pid_t pid;
  int in, out, err;
};

static void
close_fd (int *fd)
{
  if (*fd >= 0)
    close (*fd);
  *fd = -1;
}

/* argv with envp in a new session (its own process group), stdin a pipe
 * (in_pipe) or /dev/null, stdout a pipe or /dev/null, stderr a pipe. */
static int
child_spawn (char *const *argv, char *const *envp, bool in_pipe, bool out_pipe,
             struct child *c, char **err)
{
  int in[2] = { -1, -1 }, out[2] = { -1, -1 }, er[2] = { -1, -1 };
  *c = (struct child){ .pid = -1, .in = -1, .out = -1, .err = -1 };
  int null = open ("/dev/null", O_RDWR | O_CLOEXEC);
  if (null < 0 || (in_pipe && pipe2 (in, O_CLOEXEC) < 0)
      || (out_pipe && pipe2 (out, O_CLOEXEC) < 0) || pipe2 (er, O_CLOEXEC) < 0)
    {
      *err = xprintf ("cannot run %s: %s", argv[0], strerror (errno));
      goto fail;
    }
  posix_spawn_file_actions_t fa;
  posix_spawnattr_t at;
  posix_spawn_file_actions_init (&fa);
  posix_spawn_file_actions_adddup2 (&fa, in_pipe ? in[0] : null, 0);
  posix_spawn_file_actions_adddup2 (&fa, out_pipe ? out[1] : null, 1);
  posix_spawn_file_actions_adddup2 (&fa, er[1], 2);
  posix_spawnattr_init (&at);
  /* The daemon ignores SIGPIPE and blocks signals it reads from a
   * signalfd: none of that is apptainer's. */
  sigset_t def, none;
  sigemptyset (&def);
  sigaddset (&def, SIGPIPE);
  sigaddset (&def, SIGCHLD);
  sigaddset (&def, SIGTERM);
  sigaddset (&def, SIGINT);
  sigaddset (&def, SIGHUP);
  sigemptyset (&none);
  posix_spawnattr_setsigdefault (&at, &def);
  posix_spawnattr_setsigmask (&at, &none);
  posix_spawnattr_setflags (&at, POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK
                                     | POSIX_SPAWN_SETSID);
  int rc = posix_spawn (&c->pid, argv[0], &fa, &at, argv, envp);
  posix_spawn_file_actions_destroy (&fa);
  posix_spawnattr_destroy (&at);
  if (rc)
    {
      c->pid = -1;
      *err = xprintf ("cannot run %s: %s", argv[0], strerror (rc));
      goto fail;
    }
  close (null);
  close_fd (&in[0]);
  close_fd (&out[1]);
  close_fd (&er[1]);
  c->in = in[1];
  c->out = out[0];
  c->err = er[0];
  if (c->out >= 0)
    fcntl (c->out, F_SETFL, O_NONBLOCK);
  fcntl (c->err, F_SETFL, O_NONBLOCK);
  return 0;
fail:
  if (null >= 0)
    close (null);
  for (int i = 0; i < 2; i++)
    {
      close_fd (&in[i]);
      close_fd (&out[i]);
      close_fd (&er[i]);
    }
  return -1;
}

/* Kill the child's process group and reap it. */
static void
child_kill (struct child *c)
{
  if (c->pid > 0)
    {
      kill (-c->pid, SIGKILL);
      while (waitpid (c->pid, NULL, 0) < 0 && errno == EINTR)
        ;
      c->pid = -1;
    }
  close_fd (&c->in);
  close_fd (&c->out);
  close_fd (&c->err);
}

static void
gather (int *fd, char **buf, size_t *len)
{
  char tmp[8192];
  for (;;)
    {
      ssize_t n = read (*fd, tmp, sizeof tmp);
      if (n < 0 && errno == EINTR)
        continue;
      if (n < 0 && errno == EAGAIN)
        return;
      if (n <= 0)
        {
          close_fd (fd);
          return;
        }
      char *b = realloc (*buf, *len + (size_t) n + 1);
      if (!b)
        return;
      memcpy (b + *len, tmp, (size_t) n);
      *len += (size_t) n;
      b[*len] = '\0';
      *buf = b;
    }
}

/* Run argv to its end within timeout_ms, its stdout and stderr gathered
 * (NUL-terminated, malloc'd; out may be NULL).  Its end, not the end of
 * its output, is awaited: an instance it leaves running may hold the
 * pipes.  The exit status (128+N for a signal), or -1 with *err (it could
 * not run, or ran past the deadline: then its group is killed). */
static int
run (char *const *argv, char *const *envp, int timeout_ms, const char *what,
     char **out, char **errtext, char **err)
{
  struct child c;
  size_t olen = 0, elen = 0;
  *errtext = calloc (1, 1);
  if (out)
    *out = calloc (1, 1);
  if (child_spawn (argv, envp, false, out != NULL, &c, err) < 0)
    return -1;
  int pidfd = (int) syscall (SYS_pidfd_open, c.pid, 0);
  long long until = monotonic_ms () + timeout_ms;
  int ws = 0;
  for (;;)
    {
      pid_t r = waitpid (c.pid, &ws, WNOHANG);
      if (r == c.pid)
        break;
      long long left = until - monotonic_ms ();
      if (left <= 0)
        {
          child_kill (&c);
          if (pidfd >= 0)
            close (pidfd);
          *err = xprintf ("`%s %s` did not end within %d s and was killed (with "
                          "its process group)", argv[0], what, timeout_ms / 1000);
          return -1;
        }
      struct pollfd p[3] = { { .fd = c.out, .events = POLLIN },
                             { .fd = c.err, .events = POLLIN },
                             { .fd = pidfd, .events = POLLIN } };
      /* Without a pidfd (an old kernel), look again every 100 ms. */
      poll (p, 3, pidfd >= 0 ? (int) left : (left < 100 ? (int) left : 100));
      if (out && c.out >= 0 && p[0].revents)
        gather (&c.out, out, &olen);
      if (c.err >= 0 && p[1].revents)
        gather (&c.err, errtext, &elen);
    }
  c.pid = -1;
  if (out && c.out >= 0)
    gather (&c.out, out, &olen);
  if (c.err >= 0)
    gather (&c.err, errtext, &elen);
  child_kill (&c);
  if (pidfd >= 0)
    close (pidfd);
  return WIFEXITED (ws) ? WEXITSTATUS (ws) : 128 + WTERMSIG (ws);
}

/* The last non-empty line of apptainer's stderr (its FATAL), for a
 * message; "" when none. */
static const char *
last_line (char *text)
{
  size_t n = text ? strlen (text) : 0;
  while (n && (text[n - 1] == '\n' || text[n - 1] == ' ' || text[n - 1] == '\r'))
    text[--n] = '\0';
  if (!n)
    return "";
  char *nl = strrchr (text, '\n');
  return nl ? nl + 1 : text;
}

/* ---- the executable and its version ---- */

/* Versions read, once per executable path for the daemon's life. */
static struct {
  char *path;
  struct sg_version v;
} known[8];

static int
version_of (const char *exe, char *const *envp, struct sg_version *v, char **err)
{
  for (size_t i = 0; i < sizeof known / sizeof *known; i++)
    if (known[i].path && !strcmp (known[i].path, exe))
      {
        *v = known[i].v;
        return 0;
      }
  char *argv[] = { (char *) exe, "--version", NULL };
  char *out = NULL, *etext = NULL;
  int rc = run (argv, envp, VERSION_TIMEOUT_MS, "--version", &out, &etext, err);
  if (rc > 0 || (rc == 0 && sg_version_parse (out, v) < 0))
    *err = xprintf ("%s --version %s%s%s: is it Apptainer or Singularity? (set "
                    "singularity.executable; install: " INSTALL_HINT ")", exe,
                    rc ? "failed: " : "said \"", rc ? last_line (etext) : last_line (out),
                    rc ? "" : "\"");
  free (out);
  free (etext);
  if (*err)
    return -1;
  for (size_t i = 0; i < sizeof known / sizeof *known; i++)
    if (!known[i].path)
      {
        known[i].path = strdup (exe);
        known[i].v = *v;
        break;
      }
  return 0;
}

/* ---- directories ---- */

/* dir made (or there), ours, a directory, with mode. */
static int
own_dir (const char *dir, mode_t mode, char **err)
{
  struct stat st;
  bool made = (mkdir (dir, mode) == 0 || errno == EEXIST) && lstat (dir, &st) == 0;
  bool ours = made && S_ISDIR (st.st_mode) && st.st_uid == getuid ();
  if (!ours || chmod (dir, mode) < 0)
    {
      *err = xprintf ("cannot make the directory %s: %s", dir,
                      made && !ours ? "not a directory of ours" : strerror (errno));
      return -1;
    }
  return 0;
}

/* Remove a tree we made (an overlay: the kernel leaves a mode-0 work
 * directory in it), not following symlinks. */
static void
remove_tree (int parent, const char *name)
{
  struct stat st;
  if (fstatat (parent, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
    return;
  if (S_ISDIR (st.st_mode))
    {
      if (fchmodat (parent, name, 0700, 0) < 0)
        {
          /* then opening it fails, and so does the removal: said below */
        }
      int fd = openat (parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      DIR *d = fd >= 0 ? fdopendir (fd) : NULL;
      if (d)
        {
          struct dirent *e;
          while ((e = readdir (d)))
            if (strcmp (e->d_name, ".") && strcmp (e->d_name, ".."))
              remove_tree (dirfd (d), e->d_name);
          closedir (d);
        }
      else if (fd >= 0)
        close (fd);
      if (unlinkat (parent, name, AT_REMOVEDIR) < 0)
        fprintf (stderr, "airlock: cannot remove %s: %s\n", name, strerror (errno));
    }
  else
    unlinkat (parent, name, 0);
}

/* Copy the supervisor in (0755): a hardlink would do, but the runtime
 * directory is rarely on the filesystem of the installed one. */
static int
copy_supervisor (struct backend_session *s, const char *from, char **err)
{
  int in = open (from, O_RDONLY | O_CLOEXEC);
  unlinkat (s->dir_fd, SG_SUPERVISOR_NAME, 0);
  int out = openat (s->dir_fd, SG_SUPERVISOR_NAME,
                    O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0755);
  char buf[65536];
  ssize_t n = 0;
  while (in >= 0 && out >= 0 && (n = read (in, buf, sizeof buf)) > 0)
    if (write (out, buf, (size_t) n) != n)
      {
        n = -1;
        break;
      }
  int e = errno;
  bool ok = in >= 0 && out >= 0 && n == 0 && fchmod (out, 0755) == 0;
  if (in >= 0)
    close (in);
  if (out >= 0 && close (out) < 0)
    ok = false;
  if (!ok)
    *err = xprintf ("cannot copy the supervisor %s into %s: %s (set "
                    "AIRLOCK_SUPERVISOR or reinstall airlock)", from, s->control_dir,
                    strerror (e));
  return ok ? 0 : -1;
}

/* Listen where the supervisor connects; bound through /proc/self/fd: the
 * runtime directory's path may be longer than a socket address holds. */
static int
listen_open (struct backend_session *s, char **err)
{
  unlinkat (s->dir_fd, SOCKET_NAME, 0);
  struct sockaddr_un sa = { .sun_family = AF_UNIX };
  snprintf (sa.sun_path, sizeof sa.sun_path, "/proc/self/fd/%d/%s", s->dir_fd, SOCKET_NAME);
  int fd = socket (AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0 || bind (fd, (struct sockaddr *) &sa, sizeof sa) < 0
      || fchmodat (s->dir_fd, SOCKET_NAME, 0600, 0) < 0 || listen (fd, 8) < 0)
    {
      *err = xprintf ("cannot listen for the supervisor in %s: %s", s->control_dir,
                      strerror (errno));
      if (fd >= 0)
        close (fd);
      return -1;
    }
  s->listen_fd = fd;
  return 0;
}

static void
listen_close (struct backend_session *s)
{
  close_fd (&s->listen_fd);
  if (s->dir_fd >= 0)
    unlinkat (s->dir_fd, SOCKET_NAME, 0);
}

/* ---- the image ---- */


/* A reference (docker://, oras://, library://) as a SIF of the cache
 * (backends/sif_cache.h).  0 with *sif, or -1 with *err. */
static int
image_from_cache (const struct singularity_session_options *o, struct backend_session *s,
                  char **sif, char **err)
{
  struct sif_cache_options co = {
    .exe = s->exe,
    .kind = s->ver.kind == SG_APPTAINER ? "apptainer" : "singularity",
    .cache_dir = o->cache_dir,
    .cache_max = o->cache_max,
    .disk_floor = o->disk_floor,
    .build_timeout = o->build_timeout_s,
    .env = (const char *const *) s->child_env,
  };
  if (sif_cache_get (&co, o->image, o->progress, o->progress_ctx, sif, err) < 0)
    return -1;
  /* In use for the session's life: no eviction from under the instance. */
  s->pin = sif_cache_pin (&co, *sif, err);
  if (s->pin == -1)
    {
      free (*sif);
      *sif = NULL;
      return -1;
    }
  return 0;
}

/* The image as instance start takes it: a local SIF or directory as it
 * is (a relative path from the working directory), a reference through
 * the cache.  0 with *image, or -1 with *err. */
static int
resolve_image (const struct singularity_session_options *o, struct backend_session *s,
               char **image, char **err)
{
  if (strstr (o->image, "://"))
    {
      static const char *const schemes[] = { "docker://", "oras://", "library://" };
      for (size_t i = 0; i < 3; i++)
        if (!strncmp (o->image, schemes[i], strlen (schemes[i])))
          return image_from_cache (o, s, image, err);
      *err = xprintf ("singularity.image %s: not a .sif file, a directory or a "
                      "docker://, oras:// or library:// reference", o->image);
      return -1;
    }
  char *bad = NULL;
  char *path = o->image[0] == '/' ? strdup (o->image) : xprintf ("%s/%s", o->workdir, o->image);
  char *real = path ? realpath (path, NULL) : NULL;
  struct stat st;
  if (!real || stat (real, &st) < 0)
    *err = xprintf ("singularity.image %s: %s (a .sif file, an unpacked sandbox "
                    "directory, or a docker:// reference)", path ? path : o->image,
                    strerror (errno));
  else if (!S_ISDIR (st.st_mode) && (!S_ISREG (st.st_mode) || (bad = sif_check_file (real, 0))))
    *err = xprintf ("singularity.image %s is not a SIF image (%s) nor a directory",
                    real, bad ? bad : "not a regular file");
  free (bad);
  free (path);
  if (*err)
    {
      free (real);
      return -1;
    }
  *image = real;
  return 0;
}

/* ---- binds and what they reach ---- */

struct bind_list {
  struct sg_bind *b;
  size_t n;
};

static int
refuse_mask (void *ctx, const char *at, const char *host, char **err)
{
  (void) ctx;
  *err = xprintf ("it would show airlock's own directory %s (at %s in the "
                  "instance), and an instance cannot mask it as other backends "
                  "do; bind a directory that does not contain it",
                  host, at);
  return -1;
}

static char *
append_reason (char *reasons, char *more)
{
  if (!more)
    return reasons;
  char *r = reasons ? xprintf ("%s; %s", reasons, more) : more;
  if (reasons)
    {
      free (reasons);
      free (more);
    }
  return r;
}

/* One bind: checked, resolved, judged.  0, or -1 with *err. */
static int
add_bind (struct backend_session *s, const struct singularity_session_options *o,
          struct bind_list *l, const char *src, const char *dst, bool ro,
          const char *spec, char **err)
{
  char *real = realpath (src, NULL);
  if (!real)
    {
      *err = xprintf ("singularity.binds %s: %s: %s", spec, src, strerror (errno));
      return -1;
    }
  char *why = NULL;
  if (o->protected
      && protected_check_source (o->protected, real, dst, !ro, refuse_mask, NULL, &why) < 0)
    {
      *err = xprintf ("singularity.binds %s: %s", spec, why ? why : "out of memory");
      free (why);
      free (real);
      return -1;
    }
  struct sg_bind *b = realloc (l->b, (l->n + 1) * sizeof *b);
  char *d = strdup (dst);
  if (!b || !d)
    {
      free (real);
      free (d);
      *err = xprintf ("out of memory");
      return -1;
    }
  l->b = b;
  b[l->n++] = (struct sg_bind){ .src = real, .dst = d, .read_only = ro };
  /* Apptainer binds a source under /dev at its own path whatever DEST
   * says, and a source of /dev itself replaces the instance's minimal
   * /dev with the host's. */
  if (spec && !s->host_terminals
      && (!strcmp (real, "/dev") || protected_path_contains ("/dev/pts", real)
          || !strcmp (dst, "/dev") || protected_path_contains ("/dev/pts", dst)))
    s->host_terminals = strdup (spec);
  if (!ro)
    {
      s->host_filesystem = true;
      s->reasons = append_reason (s->reasons,
                                  spec ? xprintf ("singularity.binds %s: host path %s is "
                                                  "writable at %s", spec, real, dst)
                                       : xprintf ("the working directory %s is bound "
                                                  "writable (singularity.mount_workdir)",
                                                  real));
    }
  return 0;
}

static void
free_binds (struct bind_list *l)
{
  for (size_t i = 0; i < l->n; i++)
    {
      free ((char *) l->b[i].src);
      free ((char *) l->b[i].dst);
    }
  free (l->b);
}

/* SRC[:DST[:ro|rw]] (config.c checked that the paths are absolute). */
static int
plan_binds (struct backend_session *s, const struct singularity_session_options *o,
            struct bind_list *l, char **err)
{
  if (o->mount_workdir && add_bind (s, o, l, o->workdir, o->workdir, false, NULL, err) < 0)
    return -1;
  for (const char *const *b = o->binds; b && *b; b++)
    {
      char *spec = strdup (*b);
      if (!spec)
        return -1;
      char *dst = strchr (spec, ':');
      char *opt = dst ? strchr (dst + 1, ':') : NULL;
      if (dst)
        *dst++ = '\0';
      if (opt)
        *opt++ = '\0';
      int rc = 0;
      if (opt && strcmp (opt, "ro") && strcmp (opt, "rw"))
        {
          *err = xprintf ("singularity.binds %s: the options must be ro or rw, "
                          "not \"%s\"", *b, opt);
          rc = -1;
        }
      else if (dst && (dst[0] != '/' || !strcmp (dst, SUP_CONTAINER_DIR)
                       || protected_path_contains (SUP_CONTAINER_DIR, dst)))
        {
          *err = xprintf ("singularity.binds %s: the destination must be an "
                          "absolute path other than " SUP_CONTAINER_DIR, *b);
          rc = -1;
        }
      else
        rc = add_bind (s, o, l, spec, dst ? dst : spec, opt && !strcmp (opt, "ro"), *b, err);
      free (spec);
      if (rc < 0)
        return -1;
    }
  return 0;
}

/* ---- the instance ---- */

static char *
session_path (const char *owner, const char *what, const char *session)
{
  return xprintf ("%s/singularity/%s%s", owner, what, session);
}

/* Instances left by a daemon of ours that died (same runtime directory,
 * so the same name prefix): the one of this session's name, and at this
 * daemon's first singularity open, when none of its own can exist yet,
 * every one.  Stopped, so that nothing of a dead daemon keeps running. */
static void
stop_stale (struct backend_session *s, const char *prefix)
{
  static bool swept;
  char **argv = sg_list_argv (s->exe, swept ? s->name : NULL);
  char *out = NULL, *etext = NULL, *err = NULL;
  int rc = argv ? run (argv, s->child_env, LIST_TIMEOUT_MS, "instance list", &out,
                       &etext, &err) : -1;
  sg_argv_free (argv);
  cJSON *j = rc == 0 ? cJSON_Parse (out) : NULL;
  const cJSON *list = cJSON_GetObjectItemCaseSensitive (j, "instances");
  const cJSON *i;
  free (out);
  free (etext);
  free (err);
  cJSON_ArrayForEach (i, list)
    {
      const cJSON *n = cJSON_GetObjectItemCaseSensitive (i, "instance");
      if (!cJSON_IsString (n) || strncmp (n->valuestring, prefix, strlen (prefix))
          || (swept && strcmp (n->valuestring, s->name)))
        continue;
      fprintf (stderr, "airlock: session %s: instance %s is left from an earlier "
               "daemon: stopping it\n", s->session, n->valuestring);
      etext = err = NULL;
      argv = sg_stop_argv (s->exe, n->valuestring, true);
      if (argv && run (argv, s->child_env, FORCE_TIMEOUT_MS, "instance stop", NULL, &etext,
                       &err) != 0)
        fprintf (stderr, "airlock: session %s: cannot stop instance %s: %s\n", s->session,
                 n->valuestring, err ? err : last_line (etext));
      sg_argv_free (argv);
      free (etext);
      free (err);
    }
  cJSON_Delete (j);
  swept = swept || rc == 0;
}

/* instance stop, then --force when that fails or hangs. */
static void
stop_instance (struct backend_session *s)
{
  for (int force = s->hung; force < 2; force++)
    {
      char **argv = sg_stop_argv (s->exe, s->name, force);
      char *etext = NULL, *err = NULL;
      int rc = argv ? run (argv, s->child_env, force ? FORCE_TIMEOUT_MS : STOP_TIMEOUT_MS,
                           "instance stop", NULL, &etext, &err) : -1;
      if (rc != 0)
        fprintf (stderr, "airlock: session %s: instance stop%s %s: %s\n", s->session,
                 force ? " --force" : "", s->name, err ? err : last_line (etext));
      sg_argv_free (argv);
      free (etext);
      free (err);
      if (rc == 0)
        {
          s->started = false;
          return;
        }
    }
}

static void
keep_tail (struct backend_session *s, const char *data, size_t n)
{
  if (n >= ERR_TAIL - 1)
    {
      data += n - (ERR_TAIL - 1);
      n = ERR_TAIL - 1;
    }
  if (s->err_len + n >= ERR_TAIL)
    {
      size_t drop = s->err_len + n - (ERR_TAIL - 1);
      memmove (s->err_tail, s->err_tail + drop, s->err_len - drop);
      s->err_len -= drop;
    }
  memcpy (s->err_tail + s->err_len, data, n);
  s->err_len += n;
  s->err_tail[s->err_len] = '\0';
}

/* What the exec child said on stderr: to the daemon's log, and the tail
 * kept for the message of a lost session. */
static void
drain_exec_err (struct backend_session *s)
{
  char buf[4096];
  ssize_t n;
  while (s->exec_err >= 0 && (n = read (s->exec_err, buf, sizeof buf)) != 0)
    {
      if (n < 0)
        {
          if (errno == EINTR)
            continue;
          if (errno != EAGAIN)
            {
              epoll_ctl (s->ep, EPOLL_CTL_DEL, s->exec_err, NULL);
              close_fd (&s->exec_err);
            }
          return;
        }
      fprintf (stderr, "airlock: session %s: %s: %.*s%s", s->session, s->exe, (int) n, buf,
               buf[n - 1] == '\n' ? "" : "\n");
      keep_tail (s, buf, (size_t) n);
    }
  if (s->exec_err >= 0)
    {
      epoll_ctl (s->ep, EPOLL_CTL_DEL, s->exec_err, NULL);
      close_fd (&s->exec_err);
    }
}

/* How the exec child ended, if it did (malloc'd), else NULL. */
static char *
exec_fate (struct backend_session *s)
{
  int ws;
  if (s->exec_pid <= 0)
    return xprintf ("it had ended before");
  if (waitpid (s->exec_pid, &ws, WNOHANG) != s->exec_pid)
    return NULL;
  s->exec_pid = -1;
  drain_exec_err (s);
  char *tail = s->err_tail;
  return WIFEXITED (ws)
             ? xprintf ("`%s exec` of the supervisor exited with status %d%s%s", s->exe,
                        WEXITSTATUS (ws), *tail ? ": " : "", last_line (tail))
             : xprintf ("`%s exec` of the supervisor was killed by signal %d%s%s", s->exe,
                        WTERMSIG (ws), *tail ? ": " : "", last_line (tail));
}

/* The supervisor's connection: from our uid, and its first message the
 * token we gave it on its stdin.  Anything else is turned away. */
static int
accept_supervisor (struct backend_session *s, const char *token, char **err)
{
  long long until = monotonic_ms () + CONNECT_TIMEOUT_MS;
  for (;;)
    {
      int fd = accept4 (s->listen_fd, NULL, NULL, SOCK_CLOEXEC);
      if (fd >= 0)
        {
          struct ucred cred;
          socklen_t len = sizeof cred;
          char got[SUP_TOKEN_LEN];
          struct pollfd p = { .fd = fd, .events = POLLIN };
          bool ok = getsockopt (fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0
                    && cred.uid == getuid () && poll (&p, 1, 2000) == 1
                    && recv (fd, got, sizeof got, MSG_DONTWAIT) == SUP_TOKEN_LEN
                    && !memcmp (got, token, SUP_TOKEN_LEN);
          if (ok)
            {
              struct epoll_event e = { .events = EPOLLIN, .data.fd = fd };
              epoll_ctl (s->ep, EPOLL_CTL_ADD, fd, &e);
              s->sup.fd = fd;
              s->sup_pid = cred.pid;
              return 0;
            }
          fprintf (stderr, "airlock: session %s: a connection from pid %ld without "
                   "the supervisor's token, turned away\n", s->session, (long) cred.pid);
          close (fd);
          continue;
        }
      if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED)
        {
          *err = xprintf ("cannot accept the supervisor's connection: %s", strerror (errno));
          return -1;
        }
      char *fate = exec_fate (s);
      if (fate)
        {
          *err = xprintf ("the supervisor did not start in instance %s: %s", s->name, fate);
          free (fate);
          return -1;
        }
      long long left = until - monotonic_ms ();
      if (left <= 0)
        {
          *err = xprintf ("the supervisor of instance %s did not connect within %d s",
                          s->name, CONNECT_TIMEOUT_MS / 1000);
          return -1;
        }
      struct pollfd p[2] = { { .fd = s->listen_fd, .events = POLLIN },
                             { .fd = s->exec_err, .events = POLLIN } };
      poll (p, 2, left < 200 ? (int) left : 200);
      if (p[1].revents)
        drain_exec_err (s);
    }
}

/* The long-lived `exec instance://NAME supervisor --instance`. */
static int
start_supervisor (struct backend_session *s, char **err)
{
  unsigned char raw[SUP_TOKEN_LEN / 2];
  char token[SUP_TOKEN_LEN + 1];
  if (getrandom (raw, sizeof raw, 0) != (ssize_t) sizeof raw)
    {
      *err = xprintf ("getrandom: %s", strerror (errno));
      return -1;
    }
  for (size_t i = 0; i < sizeof raw; i++)
    snprintf (token + 2 * i, 3, "%02x", raw[i]);
  char **argv = sg_exec_argv (s->exe, s->name);
  struct child c;
  if (!argv || child_spawn (argv, s->exec_env, true, false, &c, err) < 0)
    {
      if (!argv)
        *err = xprintf ("out of memory");
      sg_argv_free (argv);
      return -1;
    }
  sg_argv_free (argv);
  s->exec_pid = c.pid;
  s->exec_err = c.err;
  struct epoll_event e = { .events = EPOLLIN, .data.fd = s->exec_err };
  epoll_ctl (s->ep, EPOLL_CTL_ADD, s->exec_err, &e);
  /* 64 bytes: far below a pipe's capacity, never blocks. */
  bool sent = write (c.in, token, SUP_TOKEN_LEN) == SUP_TOKEN_LEN;
  close (c.in);
  if (!sent)
    {
      *err = xprintf ("cannot hand the supervisor its token: %s", strerror (errno));
      return -1;
    }
  return accept_supervisor (s, token, err);
}

/* ---- the backend's operations ---- */

static int
lose (struct backend_session *s, char **err, const char *why)
{
  if (!s->lost)
    {
      char *fate = NULL;
      /* The exec child has a moment to end (and say why). */
      for (int i = 0; i < 20 && !(fate = exec_fate (s)); i++)
        poll (NULL, 0, 50);
      s->lost_why = xprintf ("the session's instance %s lost its supervisor (%s)%s%s; "
                             "what ran in it is gone: close the session and open it "
                             "again", s->name, why, fate ? ": " : "", fate ? fate : "");
      free (fate);
      s->lost = true;
      fprintf (stderr, "airlock: session %s: %s\n", s->session,
               s->lost_why ? s->lost_why : why);
    }
  *err = xprintf ("%s", s->lost_why ? s->lost_why : why);
  return -1;
}

static int
sg_spawn (struct backend_session *s, const struct backend_spawn *sp, char **err)
{
  if (s->lost)
    {
      *err = xprintf ("%s", s->lost_why);
      return -1;
    }
  if (sp->pty && s->host_terminals)
    {
      *err = xprintf ("singularity.binds %s puts the host's /dev/pts in the "
                      "instance, so a terminal there would be one of the host's: "
                      "remove that bind, or run the command without pty",
                      s->host_terminals);
      return -1;
    }
  return sup_client_spawn (&s->sup, sp, err);
}

/* A terminal job's window size.  The supervisor opened its terminal in
 * the instance's own devpts: --containall gives the instance a minimal
 * /dev, where Apptainer mounts a new devpts instance (apptainer.conf's
 * "mount devpts", yes by default) or none at all (then /dev/ptmx is
 * missing and the exec fails, saying so); a bind of the host's /dev is
 * refused at spawn. */
static int
sg_resize (struct backend_session *s, uint32_t job, unsigned rows, unsigned cols)
{
  return s->lost ? -ESRCH : sup_client_resize (&s->sup, job, rows, cols);
}

static int
sg_write_stdin (struct backend_session *s, uint32_t job, const void *data, size_t n,
                bool eof)
{
  return s->lost ? -ESRCH : sup_client_write_stdin (&s->sup, job, data, n, eof);
}

static int
sg_signal (struct backend_session *s, uint32_t job, int sig)
{
  return s->lost ? -ESRCH : sup_client_signal (&s->sup, job, sig);
}

static int
sg_event_fd (struct backend_session *s)
{
  return s->ep;
}

static int
sg_next_event (struct backend_session *s, struct backend_event *ev, char **err)
{
  if (s->exec_err >= 0)
    drain_exec_err (s);
  if (s->lost)
    return lose (s, err, s->lost_why);
  const char *why;
  int r = sup_client_next_event (&s->sup, ev, &why);
  if (r < 0)
    return lose (s, err, why);
  return r == 1;
}

static int
sg_health (struct backend_session *s, char **err)
{
  if (s->lost)
    {
      *err = xprintf ("session lost: %s", s->lost_why);
      return -1;
    }
  char *fate = exec_fate (s);
  if (fate)
    {
      lose (s, err, fate);
      free (fate);
      return -1;
    }
  if (sup_client_ping (&s->sup) < 0)
    return lose (s, err, "the supervisor is gone");
  long long until = monotonic_ms () + 10000;
  for (;;)
    {
      struct pollfd p = { .fd = s->sup.fd, .events = POLLIN };
      long long left = until - monotonic_ms ();
      if (left <= 0 || poll (&p, 1, (int) left) <= 0)
        {
          *err = xprintf ("the supervisor of instance %s does not answer", s->name);
          return -1;
        }
      struct backend_event ev;
      const char *why;
      int r = sup_client_next_event (&s->sup, &ev, &why);
      if (r < 0)
        return lose (s, err, why);
      if (r == SUP_CLIENT_PONG)
        return 0;
    }
}

static void
sg_reach (struct backend_session *s, struct backend_reach *r)
{
  r->host_filesystem = s->host_filesystem;
  r->host_network = s->host_network;
  r->isolated = true;
}

/* The instance's user namespace, if it has one (a non-setuid install):
 * the supervisor's uid_map is not the initial identity map. */
static bool
in_user_namespace (long pid)
{
  char path[64];
  snprintf (path, sizeof path, "/proc/%ld/uid_map", pid);
  FILE *f = fopen (path, "re");
  unsigned long a = 0, b = 0, n = 0;
  bool userns = f && fscanf (f, "%lu %lu %lu", &a, &b, &n) == 3
                && !(a == 0 && b == 0 && n == 4294967295UL);
  if (f)
    fclose (f);
  return userns;
}

/* What the flags set up; then what the supervisor really has, from this
 * host's /proc (posture_observe). */
static int
sg_posture (struct backend_session *s, struct backend_posture *p, char **err)
{
  (void) err;
  size_t n = 0;
  if (s->sup_pid > 0 && in_user_namespace (s->sup_pid))
    p->namespaces[n++] = "user";
  p->namespaces[n++] = "mount";
  p->namespaces[n++] = "pid";
  p->namespaces[n++] = "ipc";
  if (!s->host_network)
    p->namespaces[n++] = "net";
  p->namespaces[n] = NULL;
  p->isolation = "container";
  p->privilege = s->ver.kind == SG_APPTAINER ? "apptainer" : "singularity";
  p->network = s->host_network ? "host" : "none";
  /* Claimed only where apptainer always sets it: nothing but what /proc
   * shows below. */
  p->seccomp = false;
  p->no_new_privs = false;
  p->capabilities = -1;
  if (s->sup_pid > 0)
    {
      posture_observe ((pid_t) s->sup_pid, p);
      /* Without a cgroup of its own the counter would be the user's
       * session's, shared with everything else. */
      if (s->oom_fd < 0 && s->own_cgroup)
        s->oom_fd = cgroup_oom_open ((pid_t) s->sup_pid);
    }
  return 0;
}

static long long
sg_oom_kills (struct backend_session *s)
{
  return cgroup_oom_kills (s->oom_fd);
}

static void
sg_close (struct backend_session *s)
{
  if (s->oom_fd >= 0)
    close (s->oom_fd);
  listen_close (s);
  /* End of file: the supervisor kills its jobs' trees and exits, and so
   * does the exec child. */
  close_fd (&s->sup.fd);
  if (s->exec_pid > 0)
    {
      long long until = monotonic_ms () + EXIT_GRACE_MS;
      while (waitpid (s->exec_pid, NULL, WNOHANG) != s->exec_pid && monotonic_ms () < until)
        poll (NULL, 0, 20);
      if (monotonic_ms () >= until)
        {
          kill (-s->exec_pid, SIGKILL);
          while (waitpid (s->exec_pid, NULL, 0) < 0 && errno == EINTR)
            ;
        }
      s->exec_pid = -1;
    }
  close_fd (&s->exec_err);
  if (s->started)
    stop_instance (s);
  if (s->dir_fd >= 0)
    {
      unlinkat (s->dir_fd, SG_SUPERVISOR_NAME, 0);
      close (s->dir_fd);
    }
  if (s->control_dir)
    rmdir (s->control_dir);
  if (s->overlay)
    {
      char *slash = strrchr (s->overlay, '/');
      *slash = '\0';
      int parent = open (s->overlay, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
      if (parent >= 0)
        {
          remove_tree (parent, slash + 1);
          close (parent);
        }
    }
  sif_cache_unpin (s->pin); /* the instance is gone: evictable again */
  if (s->ep >= 0)
    close (s->ep);
  sg_argv_free (s->child_env);
  free (s->exe);
  free (s->name);
  free (s->session);
  free (s->control_dir);
  free (s->overlay);
  sg_argv_free (s->exec_env);
  free (s->config_dir);
  free (s->lost_why);
  free (s->host_terminals);
  free (s->reasons);
  free (s->warning);
  free (s);
}

static const struct backend_ops singularity_ops = {
  .name = "singularity",
  .signal = sg_signal,
  .spawn = sg_spawn,
  .write_stdin = sg_write_stdin,
  .resize = sg_resize,
  .event_fd = sg_event_fd,
  .next_event = sg_next_event,
  .health = sg_health,
  .reach = sg_reach,
  .posture = sg_posture,
  .oom_kills = sg_oom_kills,
  .close = sg_close,
};

const struct backend_ops *
singularity_session_ops (void)
{
  return &singularity_ops;
}

const char *
singularity_session_risk_reasons (struct backend_session *s)
{
  return s->reasons;
}

const char *
singularity_session_warning (struct backend_session *s)
{
  return s->warning;
}

/* $HOME is a writable directory: apptainer keeps its instance state
 * there; else in a directory of the runtime directory. */
static bool
home_usable (void)
{
  const char *home = getenv ("HOME");
  struct stat st;
  return home && home[0] == '/' && stat (home, &st) == 0 && S_ISDIR (st.st_mode)
         && access (home, W_OK) == 0;
}

static int
prepare (struct backend_session *s, const struct singularity_session_options *o,
         struct bind_list *binds, char **image, char **err)
{
  const char *kind_by_name; /* the version line says which it is */
  if (!(s->exe = sif_find_executable (o->executable, NULL, &kind_by_name, err)))
    return -1;
  char *base = xprintf ("%s/singularity", o->owner_id);
  int rc = base ? own_dir (base, 0700, err) : -1;
  if (rc == 0 && !home_usable ())
    {
      s->config_dir = xprintf ("%s/config", base);
      rc = s->config_dir ? own_dir (s->config_dir, 0700, err) : -1;
    }
  free (base);
  if (rc < 0)
    return -1;
  if (!(s->child_env = sg_child_env ((const char *const *) environ, s->config_dir, NULL)))
    return -1;
  if (version_of (s->exe, s->child_env, &s->ver, err) < 0)
    return -1;
  /* singularity.env: in the exec client's environment, which only our
   * uid can read, never on its command line. */
  char **passed = sg_env_passed (&s->ver, o->env);
  s->exec_env = passed ? sg_child_env ((const char *const *) environ, s->config_dir,
                                       (const char *const *) passed) : NULL;
  sg_argv_free (passed);
  if (!s->exec_env)
    {
      *err = xprintf ("out of memory");
      return -1;
    }
  const char *min = sg_version_too_old (&s->ver);
  if (min)
    {
      char *have = sg_version_text (&s->ver);
      *err = xprintf ("%s is %s: airlock needs %s or later for its hardening flags "
                      "(install: " INSTALL_HINT ")", s->exe, have ? have : "too old", min);
      free (have);
      return -1;
    }
  if (!(s->name = sg_instance_name (o->owner_id, o->session)))
    {
      *err = xprintf ("session name %s cannot name an instance", o->session);
      return -1;
    }
  if (plan_binds (s, o, binds, err) < 0)
    return -1;
  s->control_dir = session_path (o->owner_id, "session-", o->session);
  if (!s->control_dir || own_dir (s->control_dir, 0711, err) < 0)
    return -1;
  s->dir_fd = open (s->control_dir, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (s->dir_fd < 0)
    {
      *err = xprintf ("cannot open %s: %s", s->control_dir, strerror (errno));
      return -1;
    }
  if (copy_supervisor (s, o->supervisor, err) < 0)
    return -1;
  if (o->persistent)
    {
      if (!o->state_dir)
        {
          *err = xprintf ("singularity.persistent needs a state directory for the "
                          "overlay, and there is none: set XDG_STATE_HOME or HOME");
          return -1;
        }
      char *dir = xprintf ("%s/singularity", o->state_dir);
      rc = dir ? own_dir (dir, 0700, err) : -1;
      free (dir);
      if (rc < 0)
        return -1;
      s->overlay = xprintf ("%s/singularity/overlay-%s", o->state_dir, s->name);
      if (!s->overlay || own_dir (s->overlay, 0700, err) < 0)
        return -1;
    }
  return resolve_image (o, s, image, err);
}

struct backend_session *
singularity_session_open (const struct singularity_session_options *o, char **cwd,
                          char **err)
{
  struct backend_session *s = calloc (1, sizeof *s);
  if (!s || !(s->session = strdup (o->session)))
    {
      free (s);
      *err = xprintf ("out of memory");
      return NULL;
    }
  s->dir_fd = s->listen_fd = s->sup.fd = s->exec_err = s->oom_fd = -1;
  s->exec_pid = -1;
  s->pin = -2;
  s->host_network = o->network;
  if (o->network)
    s->reasons = xprintf ("singularity.network: the host's network");
  s->ep = epoll_create1 (EPOLL_CLOEXEC);
  struct bind_list binds = { 0 };
  char *image = NULL;
  if (s->ep < 0)
    *err = xprintf ("epoll: %s", strerror (errno));
  else if (prepare (s, o, &binds, &image, err) == 0)
    {
      char *prefix = xprintf ("%.*s", (int) (strlen (s->name) - strlen (o->session)),
                              s->name);
      if (prefix)
        stop_stale (s, prefix);
      free (prefix);
      struct sg_start st = {
        .exe = s->exe, .version = &s->ver, .host_network = o->network,
        .overlay = s->overlay, .root = getuid () == 0, .memory = o->memory,
        .cpus = o->cpus, .pids_limit = o->pids_limit, .control_dir = s->control_dir,
        .binds = binds.b, .n_binds = binds.n, .image = image, .name = s->name,
      };
      char **argv = sg_start_argv (&st, &s->warning);
      s->own_cgroup = o->memory && sg_has_limits (&s->ver);
      char *etext = NULL;
      if (o->progress)
        {
          char *line = xprintf ("starting instance %s of %s", s->name, image);
          if (line)
            o->progress (o->progress_ctx, line);
          free (line);
        }
      int rc = argv ? run (argv, s->child_env, o->start_timeout_s * 1000, "instance start", NULL,
                           &etext, err)
                    : -1;
      if (rc >= 0)
        s->started = true; /* even a failure may leave one: close stops it */
      if (rc > 0)
        *err = xprintf ("`%s instance start` of %s failed (status %d): %s", s->exe, image,
                        rc, *last_line (etext) ? last_line (etext) : "no message");
      else if (rc < 0 && !*err)
        *err = xprintf ("out of memory");
      else if (rc < 0)
        {
          /* killed half-way: stop what it may have made */
          s->started = s->hung = true;
          char *why = *err;
          *err = xprintf ("%s; raise singularity.start_timeout if it is only slow "
                          "(a large image on a network filesystem), else check "
                          "`%s instance start` by hand", why, s->exe);
          free (why);
        }
      free (etext);
      sg_argv_free (argv);
      if (rc == 0 && listen_open (s, err) == 0)
        start_supervisor (s, err);
      listen_close (s);
    }
  free (image);
  free_binds (&binds);
  if (*err)
    {
      sg_close (s);
      return NULL;
    }
  *cwd = strdup (o->mount_workdir ? o->workdir : "/");
  return s;
}
