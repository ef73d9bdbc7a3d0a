/* SPDX-License-Identifier: MIT */
/* The Singularity/Apptainer backend's images: a local SIF file or sandbox
 * directory is used in place; a docker://, oras:// or library:// reference
 * is built once into a cached SIF (`EXE build TMP.sif REF`) and reused.
 *
 * The cache (one directory, see docs/cache.md) neither fills the disk nor
 * lies:
 *   <cache_dir>/<32 hex>.sif    the SIF (hex: the first 16 bytes of the
 *                               SHA-256 of the reference)
 *   <cache_dir>/<32 hex>.json   its record {"ref", "size", "built_at",
 *                               "last_used"} (seconds since the epoch)
 *   <cache_dir>/.lock-<32 hex>  flock: held (exclusive) while the image is
 *                               checked, built or evicted; a second daemon
 *                               opening the same image waits, then finds it
 *   <cache_dir>/.use-<32 hex>   flock: held (shared) by each live session
 *                               using the SIF (sif_cache_pin); eviction
 *                               skips a SIF whose .use it cannot lock
 *   <cache_dir>/.tmp-...        a build in progress (renamed when done)
 * Before every use the SIF must exist, carry the SIF magic and have the
 * size its record says; else it is rebuilt, with a progress notice.  A
 * build is refused when it would leave less than disk_floor free on the
 * cache's filesystem; after one, the least recently used SIFs are evicted
 * until the total is at most cache_max (never the one just built, never
 * one in use).
 *
 * Everything here blocks (the daemon's open is synchronous): a build at
 * most build_timeout seconds, then its process group is killed. */
#ifndef AIRLOCK_BACKENDS_SIF_CACHE_H
#define AIRLOCK_BACKENDS_SIF_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct sif_cache_options
{
  const char *exe;          /* absolute path of apptainer or singularity */
  const char *kind;         /* "apptainer" or "singularity": names the
                               build's variables APPTAINER_* or
                               SINGULARITY_*; NULL: "apptainer" */
  const char *cache_dir;    /* absolute; made (0700) when missing; it must
                               be ours and writable by nobody else.  NULL:
                               sif_cache_default_dir () */
  const char *scratch_dir;  /* builds' APPTAINER_TMPDIR/CACHEDIR go in a
                               per-build directory under it (removed after);
                               NULL: /scratch/$USER/airlock/build when
                               /scratch/$USER is a writable directory of
                               ours (sif_scratch_user_dir), else
                               <cache_dir>/.build */
  uint64_t cache_max;       /* bytes; 0: no cap */
  uint64_t disk_floor;      /* bytes */
  int build_timeout;        /* seconds */
  const char *const *env;   /* the build's environment ("K=V", NULL-ended),
                               as the caller cleaned it; its *_TMPDIR and
                               *_CACHEDIR are replaced.  NULL: this
                               process's, minus every APPTAINER*_ and
                               SINGULARITY*_ variable */
};

/* The image to run for `image`: *sif_path (malloc'd) is the local file or
 * directory itself, or the cached SIF of a reference, built (or rebuilt)
 * when needed.  progress (may be NULL) gets one line at a time: notices
 * ("cached SIF for REF is corrupt (...); rebuilding"), the build's output,
 * evictions.  0, or -1 with *err (malloc'd) saying what failed and how to
 * fix it.  The SIF returned was just checked; pin it (below) for as long as
 * a session uses it. */
int sif_cache_get (const struct sif_cache_options *o, const char *image,
                   void (*progress) (void *ctx, const char *line),
                   void *progress_ctx, char **sif_path, char **err);

/* The same, saying whether it built (for `airlock cache fetch`). */
int sif_cache_fetch (const struct sif_cache_options *o, const char *image,
                     void (*progress) (void *ctx, const char *line),
                     void *progress_ctx, char **sif_path, bool *built,
                     char **err);

/* "In use by a live session": call right after sif_cache_get with the
 * path it returned, and keep the result until the session ends.  Returns
 * an fd holding a shared flock on the SIF's .use file (eviction and
 * `prune --all`, from any daemon, skip it while it is held; a daemon that
 * dies releases it with its fds), SIF_CACHE_NOT_CACHED for a path that is
 * not a cached SIF (a local image: never evicted anyway), or -1 with *err
 * (e.g. it was evicted in between: get it again).  sif_cache_unpin closes
 * it (any of these values). */
#define SIF_CACHE_NOT_CACHED (-2)
int sif_cache_pin (const struct sif_cache_options *o, const char *sif_path,
                   char **err);
void sif_cache_unpin (int pin);

/* ---- `airlock cache ls`, `airlock cache prune` ---- */

struct sif_cache_entry
{
  char *ref;          /* NULL: a SIF without a record (a crash between) */
  char *path;
  char name[33];      /* the hex name */
  uint64_t size;      /* of the file as it is (0 when missing) */
  uint64_t recorded;  /* the record's size */
  double built_at, last_used;
  const char *state;  /* "ok", or what is wrong: "missing", "corrupt ..." */
  bool in_use;
};

/* Every entry, least recently used first; *total the bytes they take.  0,
 * or -1 with *err. */
int sif_cache_list (const struct sif_cache_options *o,
                    struct sif_cache_entry **entries, size_t *n,
                    uint64_t *total, char **err);
void sif_cache_entries_free (struct sif_cache_entry *e, size_t n);

/* Evict to cache_max (all: every entry not in use), least recently used
 * first, and remove what interrupted builds left.  progress gets a line per
 * removal.  *removed and *freed (may be NULL) count them.  0, or -1 with *err. */
int sif_cache_prune (const struct sif_cache_options *o, bool all,
                     void (*progress) (void *ctx, const char *line),
                     void *progress_ctx, size_t *removed, uint64_t *freed,
                     char **err);

/* ---- pieces (unit-tested) ---- */

/* The file name stem of a reference: 32 hex digits. */
void sif_cache_name (const char *ref, char out[33]);

/* Whether image is a reference to build (docker://, oras://, library://):
 * 1; a local path: 0; an unsupported scheme or bad text: -1 with *err. */
int sif_image_is_ref (const char *image, char **err);

/* NULL when path exists, carries the SIF magic ("SIF_MAGIC" at byte 32)
 * and, when want_size is not 0, has that size; else what is wrong
 * ("missing", "corrupt (no SIF magic)", "corrupt (1000 bytes, its record
 * says 2000)"), malloc'd. */
char *sif_check_file (const char *path, uint64_t want_size);

/* Whether a build of `expected` bytes leaves at least `floor` of `avail`
 * bytes free. */
bool sif_floor_ok (uint64_t avail, uint64_t expected, uint64_t floor);

/* The size assumed for an image never built before (for the floor). */
#define SIF_SIZE_GUESS (512ULL << 20)

/* /scratch/$USER when it is a directory of ours we can write, else NULL
 * (malloc'd): the HPC scratch space, preferred for the cache and builds. */
char *sif_scratch_user_dir (void);

/* singularity.cache_dir's default: /scratch/$USER/airlock/sif (above),
 * else sif in airlock's state directory ($XDG_STATE_HOME/airlock, else
 * $HOME/.local/state/airlock); malloc'd, or NULL with *err. */
char *sif_cache_default_dir (char **err);

/* The executable: `configured` (a path, or a name searched in path_env)
 * when set, else `apptainer`, then `singularity`, in path_env (NULL: $PATH).
 * Malloc'd absolute path and *kind ("singularity" for a name starting so,
 * else "apptainer"), or NULL with *err naming what was looked for and
 * where to get it. */
char *sif_find_executable (const char *configured, const char *path_env,
                           const char **kind, char **err);

#endif
