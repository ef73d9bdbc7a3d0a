/* SPDX-License-Identifier: MIT */
/* Files in and out of a session's sandbox (see session_files.h). */
#define _GNU_SOURCE
#include "session_files.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "files_host.h"
#include "spool.h"
#include "xprintf.h"

/* An upload's frames, and how much may be on its way unacknowledged:
 * below the 4 MiB a backend holds of a job's stdin (stdin_feed.h). */
#define FRAME (1024 * 1024)
#define WINDOW (3 * 1024 * 1024)
/* Bytes of a download written per step of the daemon's loop. */
#define STEP_BYTES (8 * 1024 * 1024)
/* The start of what the script said on stderr, for the error. */
#define ERR_MAX 2048

/* The sandbox's side, one fixed script: what it works on comes in the
 * environment (AIRLOCK_ENV_FILES_*), never in its text or argv.  Exit 3:
 * it refused (said on stderr). */
static const char files_script[] =
  "exec 4<&- 3>&-\n"
  "set -o pipefail\n"
  "# Said on stdout too, as a record (E): a backend may merge stderr into it.\n"
  "die () { printf 'E%s\\0' \"$*\"; printf 'airlock: %s\\n' \"$*\" >&2; exit 3; }\n"
  "op=$AIRLOCK_ENV_FILES_OP p=$AIRLOCK_ENV_FILES_PATH wd=$AIRLOCK_ENV_FILES_WORKDIR\n"
  "# An upload through the backend's files API: its stream is already a\n"
  "# file here, removed whatever happens.\n"
  "xf=$AIRLOCK_ENV_FILES_TAR\n"
  "trap 'rm -f -- ${xf:+\"$xf\"}' EXIT\n"
  "roots=()\n"
  "# A session without a workdir (its cwd is /) has only /tmp.\n"
  "for r in \"$wd\" /tmp; do\n"
  "  r=$(cd -P -- \"$r\" 2>/dev/null && pwd -P) && [[ $r != / ]] && roots+=(\"$r\")\n"
  "done\n"
  "inside () {\n"
  "  local r\n"
  "  for r in \"${roots[@]}\"; do\n"
  "    [[ $1 == \"$r\" || $1 == \"$r\"/* ]] && return 0\n"
  "  done\n"
  "  return 1\n"
  "}\n"
  "cd -- \"$AIRLOCK_ENV_FILES_CWD\" 2>/dev/null || cd -- \"$wd\" || die \"cannot enter $wd\"\n"
  "[[ $p ]] || die \"the path is empty\"\n"
  "# Resolved where the sandbox sees it: every symlink on the way followed\n"
  "# (cd -P), so a link leading out shows as a path outside the roots.\n"
  "q=$p\n"
  "while [[ $q == */ && $q != / ]]; do q=${q%/}; done\n"
  "case $q in\n"
  "  */*) dir=${q%/*} base=${q##*/}; [[ $dir ]] || dir=/ ;;\n"
  "  *) dir=. base=$q ;;\n"
  "esac\n"
  "parent=$(cd -P -- \"$dir\" 2>/dev/null && pwd -P) || die \"$p: no such directory: $dir\"\n"
  "if [[ $base == . || $base == .. || $q == / ]]; then\n"
  "  t=$(cd -P -- \"$q\" && pwd -P) || die \"$p: cannot resolve it\"\n"
  "else\n"
  "  t=${parent%/}/$base\n"
  "fi\n"
  "if [[ -L $t ]]; then\n"
  "  r=$(readlink -f -- \"$t\") && [[ -e $r ]] || die \"$p is a symlink to a missing file\"\n"
  "  t=$r\n"
  "fi\n"
  "inside \"$t\" || die \"$p is $t, outside the session's workdir ($wd) and /tmp: refused\"\n"
  "if [[ $op == download ]]; then\n"
  "  [[ -e $t ]] || die \"$p: no such file or directory\"\n"
  "  [[ $t != / ]] || die \"cannot download /\"\n"
  "  max=$AIRLOCK_ENV_FILES_MAX\n"
  "  if [[ $max ]]; then\n"
  "    [[ -f $t ]] || die \"$p is not a regular file: inline data is for one file; give dest for a directory\"\n"
  "    size=$(stat -c %s -- \"$t\") || die \"$p: cannot read its size\"\n"
  "    (( size <= max )) || die \"$p is $size bytes, over the inline limit of $max: give dest\"\n"
  "  fi\n"
  "  d=${t%/*}\n"
  "  # Through the backend's files API: into a file it fetches (and removes).\n"
  "  if [[ $AIRLOCK_ENV_FILES_VIA_FILE ]]; then\n"
  "    out=$(mktemp \"${TMPDIR:-/tmp}/.airlock-download.XXXXXX\") || die \"cannot write in ${TMPDIR:-/tmp}\"\n"
  "    tar -C \"${d:-/}\" -cf \"$out\" \"./${t##*/}\" || { rm -f -- \"$out\"; exit 1; }\n"
  "    printf 'T%s\\0' \"$out\"\n"
  "    exit 0\n"
  "  fi\n"
  "  exec tar -C \"${d:-/}\" -cf - \"./${t##*/}\"\n"
  "fi\n"
  "name=$AIRLOCK_ENV_FILES_NAME\n"

  "if [[ -d $t ]]; then\n"
  "  [[ $AIRLOCK_ENV_FILES_KIND != data ]] || die \"$p is a directory: data needs the file's own path\"\n"
  "  dest=${t%/}/$name tdir=$t\n"
  "else\n"
  "  dest=$t tdir=${t%/*}\n"
  "  [[ $tdir ]] || tdir=/\n"
  "fi\n"
  "if [[ -d $dest && ! -L $dest ]]; then\n"
  "  die \"$dest is an existing directory: remove it first, or upload to another path\"\n"
  "fi\n"
  "tmp=$(mktemp -d \"$tdir/.airlock-upload.XXXXXX\") || die \"cannot write in $tdir\"\n"
  "trap 'rm -rf -- \"$tmp\" ${xf:+\"$xf\"}' EXIT\n"
  "trap 'exit 143' TERM INT HUP\n"
  "if tar --version 2>/dev/null | grep -q 'GNU tar'; then\n"
  "  xopts=(-p --no-same-owner)\n"
  "else\n"
  "  xopts=(-o)\n"
  "fi\n"
  "if [[ $xf ]]; then\n"
  "  tar \"${xopts[@]}\" -xf \"$xf\" -C \"$tmp\" || die \"tar could not extract into $tdir (exit $?)\"\n"
  "else\n"
  "# The stream comes in frames, a length line and as many bytes; each is\n"
  "# acknowledged on stdout once taken, so the sender never has more on its\n"
  "# way than the backend's stdin backlog holds.  Length 0 ends it.\n"
  "exec 5>&1\n"
  "{\n"
  "  while IFS= read -r n; do\n"
  "    [[ $n =~ ^[0-9]{1,9}$ ]] || exit 4\n"
  "    n=$((10#$n))\n"
  "    (( n )) || exit 0\n"
  "    dd bs=\"$n\" count=1 iflag=fullblock 2>/dev/null || exit 4\n"
  "    printf 'A%s\\0' \"$n\" >&5\n"
  "  done\n"
  "  exit 4\n"
  "} | tar \"${xopts[@]}\" -xf - -C \"$tmp\" || {\n"
  "  s=(\"${PIPESTATUS[@]}\")\n"
  "  (( s[0] != 4 )) || die \"the upload stream ended early\"\n"
  "  die \"tar could not extract into $tdir (exit ${s[1]})\"\n"
  "}\n"
  "fi\n"
  "[[ -e $tmp/$name || -L $tmp/$name ]] || die \"the upload stream had no $name\"\n"
  "mv -f -- \"$tmp/$name\" \"$dest\" || die \"cannot move it to $dest\"\n"
  "printf 'P%s\\0' \"$dest\"\n";

struct files_transfer {
  struct session *s;
  struct session_exec *e;   /* while the job runs */
  struct spool *spool;      /* a reference: read after the job is gone */
  struct spool_cursor cur;
  bool upload;
  files_done_fn done;
  void *ctx;
  /* upload */
  struct files_packer *pk;
  uint64_t sent, acked;
  bool sent_end;
  char rec[PATH_MAX + 8];   /* a record of the script's stdout */
  size_t rec_len;
  char *final;              /* where it went */
  char *code, *msg;         /* the host's side failed */
  /* download */
  struct files_unpacker *up;
  unsigned char rbuf[64 * 1024];
  /* Through the backend's files API (session_has_file_api): the stream
   * is a host file (host_tmp) moved whole by file_put or file_get, and
   * the job extracts from or writes to its copy in the sandbox. */
  bool via_api;
  char *host_tmp;
  int fd;                   /* host_tmp, while written or read */
  bool packing;             /* an upload's stream being written to it */
  bool fetching;            /* a download's stream on its way to it */
  uint32_t ticket;          /* the file_put or file_get under way */
  char remote[PATH_MAX];    /* the stream's file in the sandbox */
  /* what the job needs, kept for a job started later */
  char *path, *name;
  const char *kind;
  uint64_t timeout_ms;
  bool inline_max;          /* a download without dest */
  /* both */
  char errtext[ERR_MAX + 1];
  size_t errlen;
  struct files_transfer *next;
};

static struct files_transfer *transfers;

static void
free_transfer (struct files_transfer *t)
{
  for (struct files_transfer **p = &transfers; *p; p = &(*p)->next)
    if (*p == t)
      {
        *p = t->next;
        break;
      }
  if (t->ticket && t->s)
    session_file_cancel (t->s, t->ticket);
  if (t->fd >= 0)
    close (t->fd);
  if (t->host_tmp)
    unlink (t->host_tmp);
  free (t->host_tmp);
  free (t->path);
  free (t->name);
  spool_unref (t->spool);
  files_packer_free (t->pk);
  files_unpacker_free (t->up);
  free (t->final);
  free (t->code);
  free (t->msg);
  free (t);
}

static void
keep_stderr (struct files_transfer *t, const char *data, size_t n)
{
  size_t room = ERR_MAX - t->errlen;
  n = n < room ? n : room;
  memcpy (t->errtext + t->errlen, data, n);
  t->errlen += n;
  t->errtext[t->errlen] = '\0';
}

/* An upload's stdout: acknowledgements ("A<bytes>") and where it went
 * ("P<path>"), each ending in a NUL; either way, where a download's
 * stream went through the files API ("T<path>") and a refusal
 * ("E<why>"). */
static void
take_records (struct files_transfer *t, const char *data, size_t n)
{
  for (size_t i = 0; i < n; i++)
    {
      if (data[i])
        {
          if (t->rec_len < sizeof t->rec - 1)
            t->rec[t->rec_len++] = data[i];
          continue;
        }
      t->rec[t->rec_len] = '\0';
      if (t->rec[0] == 'A')
        t->acked += strtoull (t->rec + 1, NULL, 10);
      else if (t->rec[0] == 'P' && !t->final)
        t->final = strdup (t->rec + 1);
      else if (t->rec[0] == 'T' && !t->remote[0])
        snprintf (t->remote, sizeof t->remote, "%s", t->rec + 1);
      else if (t->rec[0] == 'E' && !t->errlen)
        {
          /* the refusal, where stderr is not its own stream */
          keep_stderr (t, "airlock: ", 9);
          keep_stderr (t, t->rec + 1, strlen (t->rec + 1));
          keep_stderr (t, "\n", 1);
        }
      t->rec_len = 0;
    }
}

/* What the job has written since the last read: upload records, and the
 * start of stderr; a download's stdout is left for later (skip). */
static void
read_spool (struct files_transfer *t, bool skip_stdout)
{
  for (;;)
    {
      int stream = 1;
      ssize_t n = spool_read_labelled (t->spool, &t->cur, t->rbuf, sizeof t->rbuf, &stream);
      if (n <= 0)
        return;
      if (stream == 2)
        keep_stderr (t, (const char *) t->rbuf, (size_t) n);
      else if (!skip_stdout)
        take_records (t, (const char *) t->rbuf, (size_t) n);
    }
}

/* The host's side failed: stop the job; its end reports this. */
static void
host_failed (struct files_transfer *t, const char *code, char *msg)
{
  if (!t->code)
    {
      t->code = strdup (code);
      t->msg = msg;
    }
  else
    free (msg);
  if (t->e)
    session_interrupt (t->e);
}

/* Send frames while the window has room.  A backend that takes a job's
 * stdin only whole, before the job starts, acknowledges nothing until
 * then: the whole stream is sent, up to what that backend holds. */
static void
pump (struct files_transfer *t)
{
  size_t whole = t->s ? session_backend (t->s)->stdin_max : 0;
  while (t->e && !t->code && !t->sent_end && (whole || t->sent - t->acked < WINDOW))
    {
      char *err = NULL;
      if (files_packer_fill (t->pk, FRAME, &err) < 0)
        return host_failed (t, "source_error", err);
      size_t len;
      const void *d = files_packer_peek (t->pk, &len);
      len = len < FRAME ? len : FRAME;
      /* (each frame costs its length line too: 16 bytes kept for it) */
      if (whole && len && t->sent + len + 16 * (t->sent / FRAME + 2) > whole)
        return host_failed (t, "transfer_failed",
                            xprintf ("this backend takes a command's input only whole, at "
                                     "most %zu bytes, and the upload is larger: send it in "
                                     "parts", whole));
      char hdr[32];
      int h = snprintf (hdr, sizeof hdr, "%zu\n", len);
      bool end = len == 0;
      if (session_job_script_write (t->e, hdr, (size_t) h, end) < 0
          || (len && session_job_script_write (t->e, d, len, false) < 0))
        return; /* its stdin is gone: its end says why */
      files_packer_consume (t->pk, len);
      t->sent += len;
      t->sent_end = end;
    }
}

static void
on_output (void *ctx, struct session_exec *e)
{
  (void) e;
  struct files_transfer *t = ctx;
  if (!t->upload || t->via_api) /* what it says is read at its end */
    return;
  read_spool (t, false);
  pump (t);
}

/* The first line the script said, without its "airlock: " (what the
 * backend adds after it, such as input dropped once the script ended on
 * a refusal, is left out). */
static const char *
script_said (struct files_transfer *t)
{
  char *m = t->errtext;
  if (!strncmp (m, "airlock: ", 9))
    m += 9;
  m[strcspn (m, "\n")] = '\0';
  return m;
}

static void
finish (struct files_transfer *t, const struct files_result *r)
{
  files_done_fn done = t->done;
  void *ctx = t->ctx;
  t->done = NULL;
  if (done)
    done (ctx, r);
  free_transfer (t);
}

static void
fail_with (struct files_transfer *t, const char *code, const char *msg)
{
  struct files_result r = { .code = code, .message = msg };
  finish (t, &r);
}

/* A download's stream came to host_tmp (or did not). */
static void
on_fetched (void *ctx, const char *error)
{
  struct files_transfer *t = ctx;
  t->ticket = 0;
  t->fetching = false;
  t->s = NULL;
  if (error)
    {
      char *m = xprintf ("the download from the sandbox failed: %s", error);
      fail_with (t, "transfer_failed", m ? m : error);
      free (m);
      return;
    }
  if ((t->fd = open (t->host_tmp, O_RDONLY | O_CLOEXEC)) < 0)
    {
      char *m = xprintf ("cannot read the downloaded stream: %s", strerror (errno));
      fail_with (t, "transfer_failed", m ? m : "cannot read the downloaded stream");
      free (m);
    }
  /* then written a step at a time (files_tick) */
}

/* The job wrote the download's stream to a file in the sandbox: fetched
 * whole by the backend's files API (which removes it there). */
static void
fetch (struct files_transfer *t)
{
  char *err = NULL;
  if (!t->remote[0])
    return fail_with (t, "transfer_failed",
                      "the sandbox did not say where it put the download's stream");
  if (!(t->host_tmp = session_temp_file (t->s, &err))
      || session_file_get (t->s, t->remote, t->host_tmp, t->timeout_ms, on_fetched, t,
                           &t->ticket, &err) < 0)
    {
      char *m = xprintf ("the download could not start: %s", err ? err : "out of memory");
      fail_with (t, "backend_error", m ? m : "the download could not start");
      free (m);
      free (err);
      return;
    }
  t->fetching = true;
}

/* The job ended. */
static void
on_done (void *ctx, struct session_exec *e, const struct exec_result *res)
{
  (void) e;
  struct files_transfer *t = ctx;
  t->e = NULL;
  if (!t->via_api || t->upload)
    t->s = NULL; /* what is left needs only the spool */
  read_spool (t, !t->upload && !t->via_api);
  const char *what = t->upload ? "upload" : "download";
  char *m = NULL;
  if (t->code)
    return fail_with (t, t->code, t->msg);
  if (res->cause == JOB_END_TIMED_OUT)
    m = xprintf ("the %s timed out (its timeout field; %s)", what,
                 t->errlen ? script_said (t) : "nothing moved since");
  else if (res->cause == JOB_END_LOST)
    m = xprintf ("the %s was lost: %s", what, res->lost ? res->lost : "");
  else if (res->cause != JOB_END_EXITED)
    m = xprintf ("the %s was stopped (%s)", what, session_job_end_name (res->cause));
  else if (res->exit_code == 3 && t->errlen)
    {
      fail_with (t, "refused", script_said (t));
      return;
    }
  else if (res->exit_code == 127 && !t->errlen)
    m = xprintf ("the sandbox has no tar (or no dd): the files API needs them");
  else if (res->exit_code)
    m = xprintf ("the %s failed in the sandbox (exit %d)%s%s", what, res->exit_code,
                 t->errlen ? ": " : "", script_said (t));
  else if (res->spool_error)
    m = xprintf ("the %s did not fit: %s (jobs.spool_max)", what, res->spool_error);
  if (m)
    {
      fail_with (t, "transfer_failed", m);
      free (m);
      return;
    }
  if (t->upload)
    {
      struct files_result r = { .path = t->final ? t->final : "" };
      files_packer_counts (t->pk, &r.files, &r.bytes);
      return finish (t, &r);
    }
  if (t->via_api)
    return fetch (t);
  /* A download's stream is all in the spool: written a step at a time
   * (files_tick), from its start. */
  t->cur = (struct spool_cursor){ 0, 0 };
}

/* The download's stream for the unpacker: stdout from the spool. */
static ssize_t
read_stream (void *ctx, const void **buf)
{
  struct files_transfer *t = ctx;
  if (t->via_api)
    {
      ssize_t n;
      do
        n = read (t->fd, t->rbuf, sizeof t->rbuf);
      while (n < 0 && errno == EINTR);
      *buf = t->rbuf;
      return n;
    }
  for (;;)
    {
      int stream = 1;
      ssize_t n = spool_read_labelled (t->spool, &t->cur, t->rbuf, sizeof t->rbuf, &stream);
      if (n <= 0 || stream == 1)
        {
          *buf = t->rbuf;
          return n;
        }
    }
}

/* Ready for a step of files_tick: a download whose stream is all there
 * (in the spool, or fetched to the host), an upload being packed. */
static bool
steps_due (const struct files_transfer *t)
{
  if (!t->done)
    return false;
  if (t->upload)
    return t->packing;
  return !t->e && !t->fetching && (!t->via_api || t->fd >= 0);
}

long long
files_next_deadline (void)
{
  for (struct files_transfer *t = transfers; t; t = t->next)
    if (steps_due (t))
      return session_now_ms ();
  return -1;
}

static const struct session_callbacks callbacks = { .output = on_output, .done = on_done };

/* The job, with what it works on in its environment. */
static int
start (struct session *s, struct files_transfer *t, const char **code, char **err)
{
  char max[32];
  snprintf (max, sizeof max, "%d", FILES_INLINE_MAX);
  char *env[10] = { 0 };
  size_t n = 0;
  env[n++] = xprintf ("FILES_OP=%s", t->upload ? "upload" : "download");
  env[n++] = xprintf ("FILES_PATH=%s", t->path);
  env[n++] = xprintf ("FILES_WORKDIR=%s", session_workdir (s));
  env[n++] = xprintf ("FILES_CWD=%s", session_cwd (s) ? session_cwd (s) : session_workdir (s));
  if (t->name)
    env[n++] = xprintf ("FILES_NAME=%s", t->name);
  if (t->kind)
    env[n++] = xprintf ("FILES_KIND=%s", t->kind);
  if (t->inline_max)
    env[n++] = xprintf ("FILES_MAX=%s", max);
  if (t->via_api && t->upload)
    env[n++] = xprintf ("FILES_TAR=%s", t->remote);
  if (t->via_api && !t->upload)
    env[n++] = xprintf ("FILES_VIA_FILE=1");
  bool ok = true;
  for (size_t i = 0; i < n; i++)
    ok = ok && env[i];
  char *what = xprintf ("airlock %s %s", t->upload ? "upload" : "download", t->path);
  int rc = -1;
  if (!ok || !what)
    *err = xprintf ("out of memory");
  else
    rc = session_job_script (s, what, files_script, (const char *const *) env,
                             t->upload && !t->via_api, t->timeout_ms, &callbacks, t, &t->e,
                             err);
  for (size_t i = 0; i < n; i++)
    free (env[i]);
  free (what);
  if (rc < 0)
    {
      *code = "backend_error";
      return -1;
    }
  t->s = s;
  t->spool = spool_ref (session_exec_spool (t->e));
  return 0;
}

static void
track (struct files_transfer *t)
{
  t->next = transfers;
  transfers = t;
}

/* An upload's stream is in the sandbox (or not): the job extracts it. */
static void
on_put (void *ctx, const char *error)
{
  struct files_transfer *t = ctx;
  t->ticket = 0;
  const char *code = "transfer_failed";
  char *err = NULL;
  if (error)
    err = xprintf ("the upload to the sandbox failed: %s", error);
  else if (start (t->s, t, &code, &err) == 0)
    return;
  fail_with (t, code, err ? err : "out of memory");
  free (err);
}

/* A step of packing an upload's stream into its host file; at its end,
 * the file goes to the sandbox. */
static void
pack_step (struct files_transfer *t)
{
  size_t budget = STEP_BYTES;
  char *err = NULL;
  for (;;)
    {
      if (files_packer_fill (t->pk, FRAME, &err) < 0)
        {
          fail_with (t, "source_error", err);
          free (err);
          return;
        }
      size_t len;
      const char *d = files_packer_peek (t->pk, &len);
      if (!len)
        break;
      len = len < FRAME ? len : FRAME;
      for (size_t off = 0; off < len;)
        {
          ssize_t w = write (t->fd, d + off, len - off);
          if (w < 0 && errno == EINTR)
            continue;
          if (w < 0)
            {
              char *m = xprintf ("cannot keep the upload's stream on the host: %s",
                                 strerror (errno));
              fail_with (t, "transfer_failed", m ? m : "cannot keep the upload's stream");
              free (m);
              return;
            }
          off += (size_t) w;
        }
      files_packer_consume (t->pk, len);
      if (len >= budget)
        return; /* more at the next step */
      budget -= len;
    }
  t->packing = false;
  if (close (t->fd) < 0)
    {
      t->fd = -1;
      return fail_with (t, "transfer_failed", "cannot keep the upload's stream on the host");
    }
  t->fd = -1;
  if (session_file_put (t->s, t->host_tmp, t->timeout_ms, t->remote, sizeof t->remote, on_put,
                        t, &t->ticket, &err) < 0)
    {
      char *m = xprintf ("the upload could not start: %s", err ? err : "out of memory");
      fail_with (t, "backend_error", m ? m : "the upload could not start");
      free (m);
      free (err);
    }
}

void
files_tick (void)
{
  for (struct files_transfer *t = transfers, *next; t; t = next)
    {
      next = t->next;
      if (!steps_due (t))
        continue;
      if (t->upload)
        {
          pack_step (t);
          continue;
        }
      char *code = NULL, *err = NULL;
      int r = files_unpacker_step (t->up, STEP_BYTES, &code, &err);
      if (r < 0)
        {
          fail_with (t, code, err);
          free (err);
        }
      else if (r > 0)
        {
          struct files_result res = { .dest = files_unpacker_dest (t->up) };
          files_unpacker_counts (t->up, &res.files, &res.bytes);
          res.skipped = files_unpacker_skipped (t->up, &res.nskipped);
          res.data = files_unpacker_data (t->up, &res.data_len, &res.mode);
          if (res.dest)
            res.data = NULL;
          finish (t, &res);
        }
    }
}

/* A transfer of rq's path, to report to done(ctx); NULL with *code and
 * *err. */
static struct files_transfer *
transfer_new (struct session *s, const struct files_request *rq, bool upload,
              files_done_fn done, void *ctx, const char **code, char **err)
{
  if (!rq->path || !*rq->path)
    {
      *code = "bad_request";
      *err = xprintf ("path is empty: give the path in the sandbox");
      return NULL;
    }
  struct files_transfer *t = calloc (1, sizeof *t);
  if (!t || !(t->path = strdup (rq->path)))
    {
      free (t);
      *code = "busy";
      *err = xprintf ("out of memory");
      return NULL;
    }
  t->fd = -1;
  t->upload = upload;
  t->done = done;
  t->ctx = ctx;
  t->timeout_ms = rq->timeout_ms ? rq->timeout_ms : FILES_TIMEOUT_MS;
  t->inline_max = !upload && !rq->dest;
  t->via_api = session_has_file_api (s);
  t->s = s;
  return t;
}

int
files_upload (struct session *s, const struct files_request *rq,
              files_done_fn done, void *ctx, struct files_transfer **out,
              const char **code, char **err)
{
  struct files_transfer *t = transfer_new (s, rq, true, done, ctx, code, err);
  if (!t)
    return -1;
  char *c = NULL;
  if (rq->source)
    t->pk = files_packer_new_path (rq->source, &c, err);
  else
    {
      /* The file's name in the stream is only a placeholder: the script
       * moves it to path. */
      t->pk = files_packer_new_data ("data", rq->data, rq->data_len, rq->mode, err);
      c = "busy";
    }
  if (!t->pk)
    {
      *code = c;
      free_transfer (t);
      return -1;
    }
  t->kind = rq->source ? "path" : "data";
  if (!(t->name = strdup (files_packer_name (t->pk))))
    {
      *code = "busy";
      *err = xprintf ("out of memory");
      free_transfer (t);
      return -1;
    }
  if (t->via_api)
    {
      /* packed to a host file a step at a time (files_tick), then sent */
      if (!(t->host_tmp = session_temp_file (s, err))
          || (t->fd = open (t->host_tmp, O_WRONLY | O_TRUNC | O_CLOEXEC)) < 0)
        {
          if (!*err)
            *err = xprintf ("cannot keep the upload's stream on the host: %s",
                            strerror (errno));
          *code = "busy";
          free_transfer (t);
          return -1;
        }
      t->packing = true;
    }
  else if (start (s, t, code, err) < 0)
    {
      free_transfer (t);
      return -1;
    }
  track (t);
  if (!t->via_api)
    pump (t);
  *out = t;
  return 0;
}

int
files_download (struct session *s, const struct files_request *rq,
                files_done_fn done, void *ctx, struct files_transfer **out,
                const char **code, char **err)
{
  struct files_transfer *t = transfer_new (s, rq, false, done, ctx, code, err);
  if (!t)
    return -1;
  char *c = NULL;
  if (!(t->up = files_unpacker_new (rq->dest, read_stream, t, &c, err))
      || start (s, t, code, err) < 0)
    {
      if (!t->up)
        *code = c;
      free_transfer (t);
      return -1;
    }
  track (t);
  *out = t;
  return 0;
}

void
files_cancel (struct files_transfer *t)
{
  if (t->e)
    session_exec_detach (t->e, false);
  free_transfer (t);
}

void
files_session_gone (struct session *s, const char *why)
{
  for (struct files_transfer *t = transfers, *next; t; t = next)
    {
      next = t->next;
      if (t->s != s)
        continue;
      if (t->e)
        session_exec_detach (t->e, false);
      fail_with (t, "session_lost", why);
    }
}
