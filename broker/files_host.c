/* SPDX-License-Identifier: MIT */
/* The host's side of the files API (see files_host.h). */
#define _GNU_SOURCE
#include "files_host.h"

#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "xprintf.h"

#define READ_CHUNK (64 * 1024)

/* ---- upload ---- */

struct pentry {
  char *name; /* in the stream */
  char *host; /* NULL: the inline data */
};

struct files_packer {
  struct archive *a;
  struct pentry *ents;
  size_t n, ents_cap, next;
  char *top;
  int fd;                 /* the regular file being read, -1 */
  unsigned char *data;    /* inline data, until written */
  bool data_due;          /* its header is out: the data is next */
  size_t data_len;
  unsigned data_mode;
  unsigned char *buf;     /* made and not consumed: [off, len) */
  size_t off, len, cap;
  bool closed;
  bool failed;            /* the write callback could not keep a block */
  uint64_t files, bytes;
};

static la_ssize_t
packer_write (struct archive *a, void *ctx, const void *data, size_t n)
{
  (void) a;
  struct files_packer *p = ctx;
  if (p->off)
    {
      memmove (p->buf, p->buf + p->off, p->len - p->off);
      p->len -= p->off;
      p->off = 0;
    }
  if (p->len + n > p->cap)
    {
      size_t cap = (p->len + n) * 2;
      unsigned char *b = realloc (p->buf, cap);
      if (!b)
        {
          p->failed = true;
          return -1;
        }
      p->buf = b;
      p->cap = cap;
    }
  memcpy (p->buf + p->len, data, n);
  p->len += n;
  return (la_ssize_t) n;
}

static bool
add_entry (struct files_packer *p, const char *name, const char *host)
{
  if (p->n == p->ents_cap)
    {
      size_t cap = p->ents_cap ? p->ents_cap * 2 : 64;
      struct pentry *e = realloc (p->ents, cap * sizeof *e);
      if (!e)
        return false;
      p->ents = e;
      p->ents_cap = cap;
    }
  p->ents[p->n].name = strdup (name);
  p->ents[p->n].host = host ? strdup (host) : NULL;
  if (!p->ents[p->n].name || (host && !p->ents[p->n].host))
    {
      free (p->ents[p->n].name);
      free (p->ents[p->n].host);
      return false;
    }
  p->n++;
  return true;
}

static struct files_packer *
packer_new (void)
{
  struct files_packer *p = calloc (1, sizeof *p);
  if (!p)
    return NULL;
  p->fd = -1;
  if (!(p->a = archive_write_new ()) || archive_write_set_format_gnutar (p->a) != ARCHIVE_OK
      || archive_write_set_bytes_per_block (p->a, 0) != ARCHIVE_OK
      || archive_write_open (p->a, p, NULL, packer_write, NULL) != ARCHIVE_OK)
    {
      files_packer_free (p);
      return NULL;
    }
  return p;
}

/* nftw has no context argument: the packer a walk fills (the daemon walks
 * one tree at a time, on one thread). */
static struct files_packer *walking;
static size_t walk_root_len;
static const char *walk_error_path;
static int walk_errno;

static int
walk_one (const char *path, const struct stat *st, int type, struct FTW *ftw)
{
  (void) st;
  (void) ftw;
  if (type == FTW_DNR || type == FTW_NS)
    {
      walk_error_path = path;
      walk_errno = errno ? errno : EACCES;
      return 1;
    }
  /* Sockets, fifos and devices are not files to copy. */
  if (type == FTW_F && !S_ISREG (st->st_mode))
    return 0;
  char *name = xprintf ("%s%s", walking->top, path + walk_root_len);
  bool ok = name && add_entry (walking, name, path);
  free (name);
  if (!ok)
    {
      walk_error_path = path;
      walk_errno = ENOMEM;
      return 1;
    }
  return 0;
}

struct files_packer *
files_packer_new_path (const char *source, char **code, char **err)
{
  struct stat st;
  *code = "bad_request";
  if (source[0] != '/')
    return *err = xprintf ("source %s: not an absolute path", source), NULL;
  if (stat (source, &st) < 0)
    {
      *code = errno == ENOENT ? "no_source" : "source_error";
      return *err = xprintf ("source %s: %s", source, strerror (errno)), NULL;
    }
  if (!S_ISREG (st.st_mode) && !S_ISDIR (st.st_mode))
    return *err = xprintf ("source %s is neither a regular file nor a directory",
                           source), NULL;
  char *real = realpath (source, NULL);
  if (!real)
    {
      *code = "source_error";
      return *err = xprintf ("source %s: %s", source, strerror (errno)), NULL;
    }
  /* Its name in the stream: the one given (what `cp` would make), or the
   * real one for "." and the like. */
  char *given = strdup (source);
  size_t gl = given ? strlen (given) : 0;
  while (gl > 1 && given[gl - 1] == '/')
    given[--gl] = '\0';
  const char *base = given ? strrchr (given, '/') + 1 : "";
  if (!*base || !strcmp (base, ".") || !strcmp (base, ".."))
    base = strrchr (real, '/') + 1;
  struct files_packer *p = *base ? packer_new () : NULL;
  if (p && !(p->top = strdup (base)))
    {
      files_packer_free (p);
      p = NULL;
    }
  free (given);
  if (!p)
    {
      *err = *base ? xprintf ("out of memory") : xprintf ("source %s: cannot upload /", source);
      free (real);
      return NULL;
    }
  if (S_ISREG (st.st_mode))
    {
      if (!add_entry (p, p->top, real))
        *err = xprintf ("out of memory");
    }
  else
    {
      walking = p;
      walk_root_len = strlen (real);
      walk_error_path = NULL;
      if (nftw (real, walk_one, 32, FTW_PHYS) != 0)
        *err = walk_error_path ? xprintf ("source %s: %s", walk_error_path,
                                          strerror (walk_errno))
                               : xprintf ("source %s: %s", source, strerror (errno));
      walking = NULL;
    }
  free (real);
  if (*err)
    {
      *code = "source_error";
      files_packer_free (p);
      return NULL;
    }
  return p;
}

struct files_packer *
files_packer_new_data (const char *name, const void *data, size_t n,
                       unsigned mode, char **err)
{
  struct files_packer *p = packer_new ();
  if (!p || !(p->top = strdup (name)) || !add_entry (p, name, NULL)
      || !(p->data = malloc (n ? n : 1)))
    {
      files_packer_free (p);
      *err = xprintf ("out of memory");
      return NULL;
    }
  memcpy (p->data, data, n);
  p->data_len = n;
  p->data_mode = mode & 07777;
  return p;
}

const char *
files_packer_name (const struct files_packer *p)
{
  return p->top;
}

static const char *
arch_error (struct archive *a)
{
  const char *m = archive_error_string (a);
  return m ? m : "libarchive failed";
}

/* The next entry's header; its data follows (p->fd, p->data). */
static int
pack_next (struct files_packer *p, char **err)
{
  struct pentry *pe = &p->ents[p->next++];
  struct archive_entry *e = archive_entry_new ();
  if (!e)
    return *err = xprintf ("out of memory"), -1;
  archive_entry_copy_pathname (e, pe->name);
  int rc = 0;
  if (!pe->host)
    {
      archive_entry_set_filetype (e, AE_IFREG);
      archive_entry_set_perm (e, p->data_mode);
      archive_entry_set_size (e, (la_int64_t) p->data_len);
      archive_entry_set_mtime (e, time (NULL), 0);
      p->data_due = true;
      p->files++;
    }
  else
    {
      struct stat st;
      if (lstat (pe->host, &st) < 0)
        rc = -1, *err = xprintf ("source %s: %s", pe->host, strerror (errno));
      else if (S_ISREG (st.st_mode))
        {
          /* O_NONBLOCK: what was a file a moment ago may be a fifo now. */
          p->fd = open (pe->host, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
          if (p->fd < 0 || fstat (p->fd, &st) < 0 || !S_ISREG (st.st_mode))
            rc = -1, *err = xprintf ("source %s: %s", pe->host,
                                     p->fd < 0 ? strerror (errno) : "changed while read");
          p->files++;
        }
      else if (S_ISLNK (st.st_mode))
        {
          char target[PATH_MAX];
          ssize_t n = readlink (pe->host, target, sizeof target - 1);
          if (n < 0)
            rc = -1, *err = xprintf ("source %s: %s", pe->host, strerror (errno));
          else
            {
              target[n] = '\0';
              archive_entry_copy_symlink (e, target);
            }
        }
      else if (!S_ISDIR (st.st_mode))
        {
          archive_entry_free (e);
          return 0; /* became something else than a file: not copied */
        }
      if (rc == 0)
        {
          archive_entry_copy_stat (e, &st);
          archive_entry_set_uid (e, 0);
          archive_entry_set_gid (e, 0);
        }
    }
  if (rc == 0 && archive_write_header (p->a, e) < ARCHIVE_WARN)
    rc = -1, *err = xprintf ("cannot pack %s: %s", pe->name, arch_error (p->a));
  archive_entry_free (e);
  return rc;
}

int
files_packer_fill (struct files_packer *p, size_t want, char **err)
{
  static unsigned char chunk[READ_CHUNK];
  while (p->len - p->off < want && !p->closed)
    {
      if (p->fd >= 0)
        {
          ssize_t n = read (p->fd, chunk, sizeof chunk);
          if (n < 0 && errno == EINTR)
            continue;
          if (n < 0)
            return *err = xprintf ("reading the source: %s", strerror (errno)), -1;
          if (n == 0)
            {
              close (p->fd);
              p->fd = -1;
              archive_write_finish_entry (p->a);
              continue;
            }
          if (archive_write_data (p->a, chunk, (size_t) n) < 0)
            return *err = xprintf ("cannot pack: %s", arch_error (p->a)), -1;
          p->bytes += (uint64_t) n;
        }
      else if (p->data_due)
        {
          p->data_due = false;
          if (p->data_len && archive_write_data (p->a, p->data, p->data_len) < 0)
            return *err = xprintf ("cannot pack: %s", arch_error (p->a)), -1;
          p->bytes += p->data_len;
          free (p->data);
          p->data = NULL;
          archive_write_finish_entry (p->a);
        }
      else if (p->next < p->n)
        {
          if (pack_next (p, err) < 0)
            return -1;
        }
      else
        {
          if (archive_write_close (p->a) != ARCHIVE_OK)
            return *err = xprintf ("cannot pack: %s", arch_error (p->a)), -1;
          p->closed = true;
        }
      if (p->failed)
        return *err = xprintf ("out of memory"), -1;
    }
  return 0;
}

const void *
files_packer_peek (const struct files_packer *p, size_t *len)
{
  *len = p->len - p->off;
  return p->buf + p->off;
}

void
files_packer_consume (struct files_packer *p, size_t n)
{
  p->off += n;
}

bool
files_packer_done (const struct files_packer *p)
{
  return p->closed;
}

void
files_packer_counts (const struct files_packer *p, uint64_t *files,
                     uint64_t *bytes)
{
  *files = p->files;
  *bytes = p->bytes;
}

void
files_packer_free (struct files_packer *p)
{
  if (!p)
    return;
  if (p->a)
    archive_write_free (p->a);
  if (p->fd >= 0)
    close (p->fd);
  for (size_t i = 0; i < p->n; i++)
    {
      free (p->ents[i].name);
      free (p->ents[i].host);
    }
  free (p->ents);
  free (p->top);
  free (p->data);
  free (p->buf);
  free (p);
}

/* ---- download ---- */

struct files_unpacker {
  struct archive *ar, *wd;
  files_read_fn rd;
  void *ctx;
  char *dest_dir;   /* an existing directory the top entry goes into */
  char *final;      /* where the top entry goes */
  char *top;        /* the top entry's name in the stream */
  bool inline_data;
  unsigned char *data;
  size_t data_len;
  unsigned mode;
  bool opened, in_data, closed;
  uint64_t files, bytes;
  char **skipped;
  size_t nskipped;
};

static la_ssize_t
unpacker_read (struct archive *a, void *ctx, const void **buf)
{
  struct files_unpacker *u = ctx;
  ssize_t n = u->rd (u->ctx, buf);
  if (n < 0)
    archive_set_error (a, EIO, "the download stream could not be read");
  return n;
}

struct files_unpacker *
files_unpacker_new (const char *dest, files_read_fn rd, void *ctx, char **code,
                    char **err)
{
  struct files_unpacker *u = calloc (1, sizeof *u);
  *code = "bad_request";
  *err = NULL;
  if (!u)
    return *err = xprintf ("out of memory"), NULL;
  u->rd = rd;
  u->ctx = ctx;
  u->inline_data = !dest;
  struct stat st;
  if (!dest)
    ;
  else if (dest[0] != '/')
    *err = xprintf ("dest %s: not an absolute path", dest);
  else if (lstat (dest, &st) == 0)
    {
      /* An existing directory (or a symlink to one, which the caller
       * named): the top entry goes in there.  Anything else is never
       * overwritten. */
      if (stat (dest, &st) == 0 && S_ISDIR (st.st_mode))
        {
          if (!(u->dest_dir = realpath (dest, NULL)))
            *code = "dest_error", *err = xprintf ("dest %s: %s", dest, strerror (errno));
        }
      else
        *code = "exists", *err = xprintf ("dest %s exists; a download never overwrites a "
                                          "host file: remove it first or choose another dest",
                                          dest);
    }
  else if (errno != ENOENT)
    *code = "dest_error", *err = xprintf ("dest %s: %s", dest, strerror (errno));
  else
    {
      char *copy = strdup (dest);
      char *slash = copy ? strrchr (copy, '/') : NULL;
      const char *base = slash ? slash + 1 : "";
      if (slash)
        *slash = '\0';
      char *parent = copy ? realpath (*copy ? copy : "/", NULL) : NULL;
      if (!copy)
        *err = xprintf ("out of memory");
      else if (!*base || !strcmp (base, ".") || !strcmp (base, ".."))
        *code = "dest_error", *err = xprintf ("dest %s: no such directory", dest);
      else if (!parent || stat (parent, &st) < 0 || !S_ISDIR (st.st_mode))
        *code = "dest_error", *err = xprintf ("dest %s: its directory %s does not exist",
                                              dest, *copy ? copy : "/");
      else if (!(u->final = xprintf ("%s/%s", strcmp (parent, "/") ? parent : "", base)))
        *err = xprintf ("out of memory");
      free (parent);
      free (copy);
    }
  if (!*err && (!(u->ar = archive_read_new ()) || !(u->wd = archive_write_disk_new ())
                || archive_read_support_format_tar (u->ar) != ARCHIVE_OK))
    *err = xprintf ("out of memory");
  if (*err)
    {
      files_unpacker_free (u);
      return NULL;
    }
  /* What the sandbox sends is hostile: no "..", nothing through a
   * symlink on disk, nothing existing overwritten, no owner.  Names are
   * made absolute here (under final), after they were checked. */
  archive_write_disk_set_options (u->wd, ARCHIVE_EXTRACT_PERM | ARCHIVE_EXTRACT_TIME
                                  | ARCHIVE_EXTRACT_SECURE_SYMLINKS
                                  | ARCHIVE_EXTRACT_SECURE_NODOTDOT
                                  | ARCHIVE_EXTRACT_NO_OVERWRITE);
  return u;
}

/* A name of the stream, checked: relative, no "." or ".." or empty
 * component once leading "./" and trailing "/" are gone.  Its first
 * component in *top (a pointer into the copy returned), the rest in
 * *rest ("" for the top itself). */
static char *
clean_name (const char *name, char **top, char **rest)
{
  while (name[0] == '.' && name[1] == '/')
    for (name += 2; *name == '/';)
      name++;
  char *c = strdup (name);
  if (!c)
    return NULL;
  size_t l = strlen (c);
  while (l > 0 && c[l - 1] == '/')
    c[--l] = '\0';
  if (!l || c[0] == '/')
    {
      free (c);
      return NULL;
    }
  for (char *p = c;;)
    {
      size_t k = strcspn (p, "/");
      if (k == 0 || (k == 1 && p[0] == '.') || (k == 2 && p[0] == '.' && p[1] == '.'))
        {
          free (c);
          return NULL;
        }
      if (!p[k])
        break;
      p += k + 1;
    }
  char *slash = strchr (c, '/');
  *rest = slash ? slash + 1 : c + l;
  if (slash)
    *slash = '\0';
  *top = c;
  return c;
}

/* Whether a symlink at rest (under the top entry) pointing to target
 * stays under the top entry, read as the path it names. */
static bool
link_stays_inside (const char *rest, const char *target)
{
  if (!*rest || target[0] == '/')
    return false;
  long depth = 0;
  for (const char *p = rest; (p = strchr (p, '/')); p++)
    depth++;
  for (const char *p = target; *p;)
    {
      size_t k = strcspn (p, "/");
      if (k == 2 && p[0] == '.' && p[1] == '.')
        depth--;
      else if (k && !(k == 1 && p[0] == '.'))
        depth++;
      if (depth < 0)
        return false;
      p += k;
      while (*p == '/')
        p++;
    }
  return true;
}

static void
skip (struct files_unpacker *u, char *why)
{
  char **s = why ? realloc (u->skipped, (u->nskipped + 2) * sizeof *s) : NULL;
  if (!s)
    {
      free (why);
      return;
    }
  u->skipped = s;
  s[u->nskipped++] = why;
  s[u->nskipped] = NULL;
}

static int
fail (char **code, char **err, const char *c, char *msg)
{
  *code = (char *) c;
  *err = msg;
  return -1;
}

/* One header of the stream: checked, renamed under final, written. */
static int
unpack_entry (struct files_unpacker *u, struct archive_entry *e, char **code,
              char **err)
{
  const char *name = archive_entry_pathname (e);
  char *top, *rest;
  char *c = name ? clean_name (name, &top, &rest) : NULL;
  if (!c)
    return fail (code, err, "bad_stream",
                 xprintf ("the sandbox's tar stream has an unsafe name (absolute, "
                          "empty or with \"..\"): nothing more written"));
  int rc = 0;
  mode_t type = archive_entry_filetype (e);
  if (!u->top)
    {
      if (!(u->top = strdup (top)))
        rc = fail (code, err, "busy", xprintf ("out of memory"));
      else if (u->dest_dir && !u->final
               && !(u->final = xprintf ("%s/%s", strcmp (u->dest_dir, "/") ? u->dest_dir : "",
                                        top)))
        rc = fail (code, err, "busy", xprintf ("out of memory"));
      struct stat st;
      if (!rc && u->final && lstat (u->final, &st) == 0)
        rc = fail (code, err, "exists",
                   xprintf ("%s exists; a download never overwrites a host file: "
                            "remove it first or choose another dest", u->final));
    }
  else if (strcmp (top, u->top))
    rc = fail (code, err, "bad_stream",
               xprintf ("the sandbox's tar stream has more than one top entry "
                        "(%s and %s): nothing more written", u->top, top));
  if (rc)
    {
      free (c);
      return rc;
    }
  if (u->inline_data)
    {
      if (type != AE_IFREG || *rest || u->in_data || u->files)
        rc = fail (code, err, "not_a_file",
                   xprintf ("%s is not one regular file: inline data is for one "
                            "file; give dest", top));
      else if (archive_entry_size (e) > FILES_INLINE_MAX)
        rc = fail (code, err, "too_large",
                   xprintf ("%s is over the inline limit of %d bytes: give dest", top,
                            FILES_INLINE_MAX));
      else
        {
          u->mode = archive_entry_perm (e) & 07777;
          u->files = 1;
          u->in_data = true;
          if (!(u->data = malloc ((size_t) archive_entry_size (e) + 1)))
            rc = fail (code, err, "busy", xprintf ("out of memory"));
        }
      free (c);
      return rc;
    }
  char *path = *rest ? xprintf ("%s/%s", u->final, rest) : strdup (u->final);
  /* Said by the name it has in the sandbox, from its top. */
  char *raw = *rest ? xprintf ("%s/%s", top, rest) : strdup (top);
  const char *hard = archive_entry_hardlink (e);
  if (!path || !raw)
    rc = fail (code, err, "busy", xprintf ("out of memory"));
  else if (hard)
    {
      /* A hard link to an earlier entry: the same checks, the same
       * renaming. */
      char *ht, *hr;
      char *hc = clean_name (hard, &ht, &hr);
      char *hpath = hc && !strcmp (ht, u->top)
                        ? (*hr ? xprintf ("%s/%s", u->final, hr) : strdup (u->final))
                        : NULL;
      if (!hpath)
        skip (u, xprintf ("%s: a hard link leading out of dest, not written", raw));
      else
        archive_entry_copy_hardlink (e, hpath);
      free (hc);
      free (hpath);
      if (!hpath)
        goto out;
    }
  else if (type == AE_IFLNK)
    {
      const char *target = archive_entry_symlink (e);
      if (!target || !link_stays_inside (rest, target))
        {
          skip (u, xprintf ("%s -> %s: a symlink leading out of dest, not written", raw,
                            target ? target : "?"));
          goto out;
        }
    }
  else if (type != AE_IFREG && type != AE_IFDIR)
    {
      skip (u, xprintf ("%s: not a regular file, directory or symlink, not written", raw));
      goto out;
    }
  archive_entry_copy_pathname (e, path);
  archive_entry_set_perm (e, archive_entry_perm (e) & 0777);
  int w = archive_write_header (u->wd, e);
  if (w < ARCHIVE_WARN)
    rc = fail (code, err, archive_errno (u->wd) == EEXIST ? "exists" : "dest_error",
               xprintf ("cannot write %s: %s", path, arch_error (u->wd)));
  else if (type == AE_IFREG && !hard)
    {
      u->files++;
      u->in_data = true;
    }
  else
    archive_write_finish_entry (u->wd);
out:
  free (path);
  free (raw);
  free (c);
  return rc;
}

int
files_unpacker_step (struct files_unpacker *u, size_t budget, char **code,
                     char **err)
{
  if (!u->opened)
    {
      u->opened = true;
      if (archive_read_open (u->ar, u, NULL, unpacker_read, NULL) != ARCHIVE_OK)
        return fail (code, err, "bad_stream",
                     xprintf ("the sandbox sent no tar stream: %s", arch_error (u->ar)));
    }
  while (budget > 0)
    {
      if (u->in_data)
        {
          const void *buf;
          size_t size;
          la_int64_t off;
          int r = archive_read_data_block (u->ar, &buf, &size, &off);
          if (r == ARCHIVE_EOF)
            {
              u->in_data = false;
              if (!u->inline_data)
                archive_write_finish_entry (u->wd);
              continue;
            }
          if (r < ARCHIVE_WARN)
            return fail (code, err, "bad_stream",
                         xprintf ("the sandbox's tar stream is broken: %s", arch_error (u->ar)));
          if (u->inline_data)
            {
              if (off < 0 || (uint64_t) off + size > FILES_INLINE_MAX)
                return fail (code, err, "bad_stream", xprintf ("the file grew while read"));
              memcpy (u->data + off, buf, size);
              if ((size_t) off + size > u->data_len)
                u->data_len = (size_t) off + size;
            }
          else if (archive_write_data_block (u->wd, buf, size, off) < ARCHIVE_WARN)
            return fail (code, err, "dest_error",
                         xprintf ("cannot write under %s: %s", u->final, arch_error (u->wd)));
          u->bytes += size;
          budget -= size < budget ? size : budget;
          continue;
        }
      struct archive_entry *e;
      int r = archive_read_next_header (u->ar, &e);
      if (r == ARCHIVE_EOF)
        {
          if (!u->top)
            return fail (code, err, "bad_stream",
                         xprintf ("the sandbox sent an empty tar stream"));
          /* Directories get their own modes and times last. */
          if (!u->closed && archive_write_close (u->wd) < ARCHIVE_WARN)
            return fail (code, err, "dest_error",
                         xprintf ("cannot finish %s: %s", u->final, arch_error (u->wd)));
          u->closed = true;
          return 1;
        }
      if (r < ARCHIVE_WARN)
        return fail (code, err, "bad_stream",
                     xprintf ("the sandbox's tar stream is broken: %s", arch_error (u->ar)));
      if (unpack_entry (u, e, code, err) < 0)
        return -1;
      budget -= 512 < budget ? 512 : budget;
    }
  return 0;
}

const char *
files_unpacker_dest (const struct files_unpacker *u)
{
  return u->final;
}

void
files_unpacker_counts (const struct files_unpacker *u, uint64_t *files,
                       uint64_t *bytes)
{
  *files = u->files;
  *bytes = u->bytes;
}

const char *const *
files_unpacker_skipped (const struct files_unpacker *u, size_t *n)
{
  *n = u->nskipped;
  return (const char *const *) u->skipped;
}

const void *
files_unpacker_data (const struct files_unpacker *u, size_t *len, unsigned *mode)
{
  *len = u->data_len;
  *mode = u->mode;
  return u->data ? u->data : (const void *) "";
}

void
files_unpacker_free (struct files_unpacker *u)
{
  if (!u)
    return;
  if (u->ar)
    archive_read_free (u->ar);
  if (u->wd)
    archive_write_free (u->wd);
  for (size_t i = 0; i < u->nskipped; i++)
    free (u->skipped[i]);
  free (u->skipped);
  free (u->dest_dir);
  free (u->final);
  free (u->top);
  free (u->data);
  free (u);
}

/* ---- base64 ---- */

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

char *
files_base64_encode (const void *data, size_t n)
{
  const unsigned char *d = data;
  char *out = malloc ((n + 2) / 3 * 4 + 1);
  if (!out)
    return NULL;
  size_t o = 0;
  for (size_t i = 0; i < n; i += 3)
    {
      unsigned v = (unsigned) d[i] << 16 | (i + 1 < n ? (unsigned) d[i + 1] << 8 : 0)
                   | (i + 2 < n ? d[i + 2] : 0);
      out[o++] = b64[v >> 18 & 63];
      out[o++] = b64[v >> 12 & 63];
      out[o++] = i + 1 < n ? b64[v >> 6 & 63] : '=';
      out[o++] = i + 2 < n ? b64[v & 63] : '=';
    }
  out[o] = '\0';
  return out;
}

ssize_t
files_base64_decode (const char *text, unsigned char **out)
{
  size_t n = strlen (text);
  if (n % 4)
    return -1;
  unsigned char *d = malloc (n / 4 * 3 + 1);
  if (!d)
    return -1;
  size_t o = 0;
  for (size_t i = 0; i < n; i += 4)
    {
      unsigned v = 0;
      int pad = 0;
      for (int k = 0; k < 4; k++)
        {
          char ch = text[i + k];
          const char *at = ch ? strchr (b64, ch) : NULL;
          if (ch == '=' && i + 4 == n && k >= 2 && (k == 3 || text[i + 3] == '='))
            pad++;
          else if (!at || pad)
            {
              free (d);
              return -1;
            }
          v = v << 6 | (at ? (unsigned) (at - b64) : 0);
        }
      d[o++] = (unsigned char) (v >> 16);
      if (pad < 2)
        d[o++] = (unsigned char) (v >> 8);
      if (pad < 1)
        d[o++] = (unsigned char) v;
    }
  *out = d;
  return (ssize_t) o;
}
