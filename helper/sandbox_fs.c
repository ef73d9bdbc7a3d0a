/* SPDX-License-Identifier: MIT */
/* Building the sandbox's root.  Every mount is made by file descriptor
 * (open_tree/fsmount -> move_mount), never by path string, and every path
 * inside a tree the caller controls is opened without following symlinks,
 * so nothing can be redirected between a check and its use. */
#define _GNU_SOURCE
#include "sandbox_fs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "helper_conf.h"
#include "util.h"

#define RESOLVE_SAFE (RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS)
#define LOCKDOWN (MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV)

static int
openat2_safe (int dirfd, const char *path, int flags, mode_t mode,
              uint64_t resolve)
{
  struct open_how how = { .flags = (uint64_t) (flags | O_CLOEXEC),
                          .mode = mode,
                          .resolve = resolve };
  return (int) syscall (SYS_openat2, dirfd, path, &how, sizeof how);
}

/* A path named by the caller, opened as the caller (fsuid), refusing any
 * symlink on the way: the broker resolved them already, so one here means
 * the path changed under us. */
static int
open_caller_path (const char *path, int flags, enum al_step step)
{
  int fd = openat2_safe (AT_FDCWD, path, flags, 0, RESOLVE_SAFE);
  if (fd < 0 && errno == ELOOP)
    fail (step, errno, "%s: a component is a symlink or changed during setup",
          path);
  if (fd < 0)
    fail (step, errno, "cannot open %s", path);
  return fd;
}

/* Create (if needed) and open the mount point `path` below root_fd, one
 * component at a time, never leaving the tree and never following a
 * symlink.  `dir` chooses a directory or an empty file as the last one. */
static int
make_mountpoint (int root_fd, const char *path, bool dir, enum al_step step)
{
  char buf[AL_MAX_PATH + 1];
  snprintf (buf, sizeof buf, "%s", path);
  int cur = dup (root_fd);
  char *save = NULL;
  for (char *comp = strtok_r (buf, "/", &save); comp;
       comp = strtok_r (NULL, "/", &save))
    {
      bool last = save == NULL || *save == '\0';
      int next;
      if (!last || dir)
        {
          if (mkdirat (cur, comp, 0755) < 0 && errno != EEXIST)
            fail (step, errno, "cannot create the mount point %s", path);
          next = openat2_safe (cur, comp, O_PATH | O_DIRECTORY, 0,
                               RESOLVE_SAFE | RESOLVE_BENEATH);
        }
      else
        {
          next = openat2_safe (cur, comp, O_RDONLY | O_CREAT, 0644,
                               RESOLVE_SAFE | RESOLVE_BENEATH);
          if (next < 0 && (errno == EISDIR || errno == EROFS || errno == EACCES))
            next = openat2_safe (cur, comp, O_PATH, 0,
                                 RESOLVE_SAFE | RESOLVE_BENEATH);
        }
      if (next < 0)
        fail (step, errno, "cannot open the mount point %s", path);
      close (cur);
      cur = next;
    }
  return cur;
}

static void
set_attrs (int tree, uint64_t attrs, bool recursive, enum al_step step,
           const char *what)
{
  struct mount_attr attr = { .attr_set = attrs };
  if (mount_setattr (tree, "", AT_EMPTY_PATH | (recursive ? AT_RECURSIVE : 0),
                     &attr, sizeof attr) < 0)
    fail (step, errno, "cannot set mount flags on %s", what);
}

/* A detached copy of the tree at dirfd/path.  Recursive, so that nothing
 * mounted below it on the host is uncovered, and nosuid,nodev (plus rdonly
 * when asked) on every mount of the copy. */
static int
clone_tree (int dirfd, const char *path, uint64_t attrs, bool recursive,
            enum al_step step)
{
  unsigned flags = OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC
                   | (recursive ? AT_RECURSIVE : 0)
                   | (*path ? 0 : AT_EMPTY_PATH);
  int tree = open_tree (dirfd, path, flags);
  if (tree < 0)
    fail (step, errno, "cannot copy the mount tree of %s", *path ? path : "a bind source");
  set_attrs (tree, attrs, recursive, step, *path ? path : "a bind source");
  return tree;
}

/* A new file system instance: opts are "key=value" or "flag" strings. */
static int
new_fs (const char *type, const char *const *opts, uint64_t attrs,
        enum al_step step)
{
  cleanup_fd int fs = fsopen (type, FSOPEN_CLOEXEC);
  if (fs < 0)
    fail (step, errno, "cannot create a %s file system", type);
  for (; *opts; opts++)
    {
      char key[32];
      const char *eq = strchr (*opts, '=');
      snprintf (key, sizeof key, "%.*s", eq ? (int) (eq - *opts) : 31, *opts);
      int rc = eq ? fsconfig (fs, FSCONFIG_SET_STRING, key, eq + 1, 0)
                  : fsconfig (fs, FSCONFIG_SET_FLAG, key, NULL, 0);
      if (rc < 0)
        fail (step, errno, "%s option %s", type, *opts);
    }
  if (fsconfig (fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0)
    fail (step, errno, "cannot create a %s file system", type);
  int mnt = fsmount (fs, FSMOUNT_CLOEXEC, (unsigned) attrs);
  if (mnt < 0)
    fail (step, errno, "cannot mount a %s file system", type);
  return mnt;
}

static void
attach (int tree, int target, enum al_step step, const char *where)
{
  if (move_mount (tree, "", target, "",
                  MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0)
    fail (step, errno, "cannot mount on %s", where);
  close (tree);
  close (target);
}

static void
mount_new_fs (int root_fd, const char *where, const char *type,
              const char *const *opts, uint64_t attrs)
{
  int mnt = new_fs (type, opts, attrs, AL_STEP_ROOTFS);
  attach (mnt, make_mountpoint (root_fd, where, true, AL_STEP_ROOTFS),
          AL_STEP_ROOTFS, where);
}

/* The host's system directories, read-only; top-level symlinks (merged
 * /usr: /bin -> usr/bin) are recreated as they are. */
static void
bind_system_dirs (int root_fd)
{
  static const char *const dirs[] = { "usr", "bin", "sbin", "lib", "lib32",
                                      "lib64", "libx32", "etc", NULL };
  for (const char *const *d = dirs; *d; d++)
    {
      char host[64], target[256];
      snprintf (host, sizeof host, "/%s", *d);
      struct stat st;
      if (lstat (host, &st) < 0)
        continue;
      if (S_ISLNK (st.st_mode))
        {
          ssize_t n = readlink (host, target, sizeof target - 1);
          if (n < 0)
            fail (AL_STEP_ROOTFS, errno, "readlink %s", host);
          target[n] = '\0';
          if (symlinkat (target, root_fd, *d) < 0)
            fail (AL_STEP_ROOTFS, errno, "symlink %s", host);
        }
      else if (S_ISDIR (st.st_mode))
        attach (clone_tree (AT_FDCWD, host, LOCKDOWN | MOUNT_ATTR_RDONLY, true,
                            AL_STEP_ROOTFS),
                make_mountpoint (root_fd, host, true, AL_STEP_ROOTFS),
                AL_STEP_ROOTFS, host);
    }
}

/* Hide one entry below dir_fd: files under an empty unreadable file (when
 * empty_fd is one), directories under an empty read-only tmpfs.  False when
 * nothing was hidden: absent, a symlink (which reveals nothing itself), or
 * of another type. */
static bool
mask (int dir_fd, const char *name, int empty_fd)
{
  int target = openat2_safe (dir_fd, name, O_PATH | O_NOFOLLOW, 0,
                             RESOLVE_SAFE | RESOLVE_BENEATH);
  if (target < 0)
    return false;
  struct stat st;
  if (fstat (target, &st) < 0)
    fail (AL_STEP_ROOTFS, errno, "stat %s", name);
  static const char *const empty_opts[] = { "mode=0555", "size=4k", NULL };
  uint64_t attrs = LOCKDOWN | MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOEXEC;
  bool dir = S_ISDIR (st.st_mode), file = S_ISREG (st.st_mode) && empty_fd >= 0;
  if (dir || file)
    attach (dir ? new_fs ("tmpfs", empty_opts, attrs, AL_STEP_ROOTFS)
                : clone_tree (empty_fd, "", attrs, false, AL_STEP_ROOTFS),
            target, AL_STEP_ROOTFS, name);
  else
    close (target);
  return dir || file;
}

/* Secrets in the host's /etc stay out even where the caller could read
 * them, and so does airlock's own configuration. */
static void
mask_etc_secrets (int root_fd)
{
  cleanup_fd int etc = openat2_safe (root_fd, "etc", O_PATH | O_DIRECTORY, 0,
                                     RESOLVE_SAFE | RESOLVE_BENEATH);
  if (etc < 0)
    return;
  cleanup_fd int empty = openat2_safe (root_fd, ".airlock-empty",
                                       O_RDONLY | O_CREAT | O_EXCL, 0, 0);
  if (empty < 0)
    fail (AL_STEP_ROOTFS, errno, "cannot create the mask file");
  static const char *const secrets[] = { "shadow", "shadow-", "gshadow",
                                         "gshadow-", "airlock", NULL };
  for (const char *const *s = secrets; *s; s++)
    mask (etc, *s, empty);
  if (strncmp (HELPER_CONF, "/etc/", 5) == 0
      && strncmp (HELPER_CONF, "/etc/airlock/", 13) != 0)
    {
      char confdir[256];
      snprintf (confdir, sizeof confdir, "%s", HELPER_CONF + 5);
      char *slash = strrchr (confdir, '/');
      if (slash)
        *slash = '\0';
      mask (etc, confdir, empty);
    }
  int ssh = openat2_safe (etc, "ssh", O_RDONLY | O_DIRECTORY, 0,
                          RESOLVE_SAFE | RESOLVE_BENEATH);
  DIR *d = ssh >= 0 ? fdopendir (ssh) : NULL;
  for (struct dirent *e; d && (e = readdir (d));)
    {
      size_t n = strlen (e->d_name);
      if (n > 4 && strcmp (e->d_name + n - 4, "_key") == 0)
        mask (dirfd (d), e->d_name, empty);
    }
  if (d)
    closedir (d);
  unlinkat (root_fd, ".airlock-empty", 0);
}

/* The masks the broker asks for: airlock's own directories where a bind
 * shows them.  Every ancestor is first bound onto itself (a recursive copy
 * of the sandbox's own tree there: same flags, nothing below it hidden),
 * so that renaming or removing it fails with EBUSY inside the sandbox: a
 * command cannot move a masked directory's parent away and create a fresh
 * one for the daemon to read.  Runs once the root is read-only, so a copy
 * of part of it is read-only too.  Unlike the best-effort /etc masks, a
 * requested mask that cannot be applied fails the setup. */
static void
mask_requested (int root_fd, const struct al_run *req)
{
  for (uint32_t i = 0; i < req->n_masks; i++)
    {
      char path[AL_MAX_PATH + 1];
      snprintf (path, sizeof path, "%s", req->masks[i] + 1);
      for (char *slash = strchr (path, '/'); slash; slash = strchr (slash + 1, '/'))
        {
          *slash = '\0';
          int fd = openat2_safe (root_fd, path, O_PATH | O_DIRECTORY, 0,
                                 RESOLVE_SAFE | RESOLVE_BENEATH);
          if (fd < 0)
            fail (AL_STEP_BIND, errno, "cannot pin /%s to mask %s", path, req->masks[i]);
          attach (clone_tree (fd, "", 0, true, AL_STEP_BIND), fd, AL_STEP_BIND, path);
          *slash = '/';
        }
      if (!mask (root_fd, path, -1))
        fail (AL_STEP_BIND, errno, "cannot mask %s: it must be a directory",
              req->masks[i]);
    }
}

/* The caller's rootfs: a directory they own, used as / (read-only once
 * its mount points exist). */
static void
bind_rootfs (int fd, const char *rootfs, const struct caller *c, int base_fd)
{
  struct stat st;
  if (fstat (fd, &st) < 0)
    fail (AL_STEP_ROOTFS, errno, "stat %s", rootfs);
  if (st.st_uid != c->uid)
    fail (AL_STEP_ROOTFS, 0, "--rootfs %s must be a directory you own", rootfs);
  attach (clone_tree (fd, "", LOCKDOWN, true, AL_STEP_ROOTFS), dup (base_fd),
          AL_STEP_ROOTFS, rootfs);
}

static void
add_dev (int root_fd, uint64_t shm_bytes)
{
  static const char *const dev_opts[] = { "mode=0755", "size=64k", NULL };
  /* No nodev here: the device binds below must work.  Nothing else in this
   * tmpfs is writable by the sandbox (it is made read-only at the end). */
  mount_new_fs (root_fd, "/dev", "tmpfs", dev_opts,
                MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC);
  cleanup_fd int dev = openat2_safe (root_fd, "dev", O_PATH | O_DIRECTORY, 0,
                                     RESOLVE_SAFE | RESOLVE_BENEATH);
  if (dev < 0)
    fail (AL_STEP_ROOTFS, errno, "open /dev");
  static const char *const nodes[] = { "null", "zero", "full", "random",
                                       "urandom", "tty", NULL };
  for (const char *const *n = nodes; *n; n++)
    {
      char host[32];
      snprintf (host, sizeof host, "/dev/%s", *n);
      attach (clone_tree (AT_FDCWD, host, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC,
                          false, AL_STEP_ROOTFS),
              make_mountpoint (dev, *n, false, AL_STEP_ROOTFS), AL_STEP_ROOTFS,
              host);
    }
  static const char *const pts_opts[] = { "newinstance", "ptmxmode=0666",
                                          "mode=0620", NULL };
  mount_new_fs (dev, "pts", "devpts", pts_opts,
                MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC);
  char size[48];
  snprintf (size, sizeof size, "size=%" PRIu64, shm_bytes);
  const char *const shm_opts[] = { "mode=1777", size, NULL };
  mount_new_fs (dev, "shm", "tmpfs", shm_opts, LOCKDOWN);
  static const char *const links[][2] = {
    { "pts/ptmx", "ptmx" },          { "/proc/self/fd", "fd" },
    { "/proc/self/fd/0", "stdin" },  { "/proc/self/fd/1", "stdout" },
    { "/proc/self/fd/2", "stderr" },
  };
  for (size_t i = 0; i < sizeof links / sizeof links[0]; i++)
    if (symlinkat (links[i][0], dev, links[i][1]) < 0)
      fail (AL_STEP_ROOTFS, errno, "symlink /dev/%s", links[i][1]);
  set_attrs (dev, MOUNT_ATTR_RDONLY, false, AL_STEP_ROOTFS, "/dev");
}

/* A bind source, opened and access-checked as the caller before anything
 * is mounted (the new root covers the host's /tmp, where sources may be). */
struct source {
  int tree; /* the copy of its mount tree, detached */
  bool dir;
  const char *dst;
  enum al_step step;
};

static struct source
open_source (const char *src, const char *dst, bool rw, enum al_step step)
{
  cleanup_fd int fd = open_caller_path (src, O_PATH, step);
  struct source s = { .dst = dst, .step = step };
  struct stat st;
  if (fstat (fd, &st) < 0)
    fail (step, errno, "stat %s", src);
  s.dir = S_ISDIR (st.st_mode);
  if (!s.dir && !S_ISREG (st.st_mode))
    fail (step, 0, "%s is neither a directory nor a regular file", src);
  /* faccessat without AT_EACCESS checks with the real ids and without
   * capabilities: exactly what the caller may do on the host. */
  int want = R_OK | (s.dir ? X_OK : 0) | (rw ? W_OK : 0);
  if (faccessat (fd, "", want, AT_EMPTY_PATH) < 0)
    fail (step, errno, "%s is not %s by you", src,
          rw ? "readable and writable" : "readable");
  /* Copied now, recursively: once the new root covers /tmp, a copy of
   * /tmp (or of / or anything above it) would hold the new root instead
   * of the host's files. */
  s.tree = clone_tree (fd, "", LOCKDOWN | (rw ? 0 : MOUNT_ATTR_RDONLY), true, step);
  return s;
}

/* Mount the source's copy by fd at its place. */
static void
bind_source (int root_fd, const struct source *s)
{
  attach (s->tree, make_mountpoint (root_fd, s->dst, s->dir, s->step), s->step,
          s->dst);
}

void
fs_build_root (const struct al_run *req, const struct caller *c,
               uint64_t tmpfs_bytes)
{
  /* Nothing we mount may propagate back to the host. */
  if (mount (NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
    fail (AL_STEP_ROOTFS, errno, "cannot make mounts private");

  /* Every caller path is opened first: the workspace, then the binds. */
  static struct source sources[1 + 2 * AL_MAX_BINDS];
  size_t n = 0;
  sources[n++] = open_source (req->workdir, req->workdir, true, AL_STEP_WORKDIR);
  for (uint32_t i = 0; i < req->n_binds_ro; i++)
    sources[n++] = open_source (req->binds_ro[i].src, req->binds_ro[i].dst,
                                false, AL_STEP_BIND);
  for (uint32_t i = 0; i < req->n_binds_rw; i++)
    sources[n++] = open_source (req->binds_rw[i].src, req->binds_rw[i].dst,
                                true, AL_STEP_BIND);
  cleanup_fd int rootfs = req->rootfs ? open_caller_path (req->rootfs,
                                                          O_PATH | O_DIRECTORY,
                                                          AL_STEP_ROOTFS)
                                      : -1;

  /* The base: /tmp of this (private) mount namespace.  It is replaced, not
   * entered, so nothing a user left in the host's /tmp is ever used. */
  cleanup_fd int base = open ("/tmp", O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (base < 0)
    fail (AL_STEP_ROOTFS, errno, "open /tmp");
  if (rootfs >= 0)
    bind_rootfs (rootfs, req->rootfs, c, base);
  else
    {
      static const char *const root_opts[] = { "mode=0755", "size=1m", NULL };
      attach (new_fs ("tmpfs", root_opts, LOCKDOWN, AL_STEP_ROOTFS), dup (base),
              AL_STEP_ROOTFS, "the new root");
    }
  cleanup_fd int root = open ("/tmp", O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (root < 0)
    fail (AL_STEP_ROOTFS, errno, "open the new root");
  if (!req->rootfs)
    {
      bind_system_dirs (root);
      mask_etc_secrets (root);
    }

  char size[48];
  snprintf (size, sizeof size, "size=%" PRIu64, tmpfs_bytes);
  const char *const tmp_opts[] = { "mode=1777", size, NULL };
  mount_new_fs (root, "/tmp", "tmpfs", tmp_opts, LOCKDOWN);
  static const char *const no_opts[] = { NULL };
  mount_new_fs (root, "/proc", "proc", no_opts, LOCKDOWN | MOUNT_ATTR_NOEXEC);
  add_dev (root, tmpfs_bytes);

  /* The workspace after /tmp, so a workspace below /tmp is not hidden. */
  for (size_t i = 0; i < n; i++)
    bind_source (root, &sources[i]);

  /* Only the workspace, the binds asked for rw, /tmp and /dev/shm stay
   * writable: the root itself becomes read-only. */
  set_attrs (root, MOUNT_ATTR_RDONLY, false, AL_STEP_ROOTFS, "/");
  mask_requested (root, req);

  if (fchdir (root) < 0)
    fail (AL_STEP_PIVOT, errno, "chdir to the new root");
  /* pivot_root(".", ".") stacks the old root on top of the new one; the
   * detach then removes it, with everything below it, from our view. */
  if (syscall (SYS_pivot_root, ".", ".") < 0)
    fail (AL_STEP_PIVOT, errno, "pivot_root");
  if (umount2 (".", MNT_DETACH) < 0)
    fail (AL_STEP_PIVOT, errno, "cannot detach the old root");
  if (chdir ("/") < 0)
    fail (AL_STEP_PIVOT, errno, "chdir /");
}
