/* SPDX-License-Identifier: MIT */
/* Files in and out of a session's sandbox, for every backend: the
 * sandbox's side is a job of the session (session_job_script) running a
 * fixed bash script with tar, so it has the sandbox's own permissions
 * and view; the host's side is the daemon (files_host.h).
 *
 * The script resolves the path where the sandbox sees it (every symlink
 * on the way followed) and refuses anything outside the session's
 * workdir and /tmp.  An upload is extracted into a fresh directory beside
 * its target and moved into place; its stream comes in frames that the
 * script acknowledges on stdout, so what is on its way never passes what
 * a backend's stdin backlog holds, and memory stays bounded whatever the
 * size.  A download is `tar -c` to the job's stdout, i.e. its spool on
 * disk, written under the host path once the job ended.
 *
 * A backend with a files API of its own (backend_ops file_put and
 * file_get: daytona's toolbox) carries the stream as one file instead:
 * packed on the host and put in the sandbox before the script extracts
 * it, or written by the script to a file in the sandbox and fetched; the
 * script and its checks are the same.
 *
 * What a backend needs for this, and nothing backend-specific: a job's
 * stdin that keeps 3 MiB (and a few bytes) of input undelivered in order
 * (stdin_feed.h holds 4), its stdout and stderr, and bash, tar (GNU or
 * BusyBox), dd, mktemp, mv, readlink, stat in the sandbox. */
#ifndef AIRLOCK_BROKER_SESSION_FILES_H
#define AIRLOCK_BROKER_SESSION_FILES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "session.h"

struct files_transfer;

struct files_request {
  const char *path;       /* in the sandbox; relative: to the session's cwd */
  /* upload: a host path (absolute), or data of data_len bytes */
  const char *source;
  const void *data;
  size_t data_len;
  unsigned mode;          /* of data */
  /* download: the host path (absolute), or NULL: the file's bytes in the
   * result (at most FILES_INLINE_MAX) */
  const char *dest;
  uint64_t timeout_ms;    /* 0: FILES_TIMEOUT_MS */
};

#define FILES_TIMEOUT_MS (3600 * 1000ULL)

struct files_result {
  const char *code;       /* NULL: done; else what failed, and message */
  const char *message;
  const char *path;       /* upload: where it went in the sandbox */
  const char *dest;       /* download: where it went on the host */
  uint64_t files, bytes;  /* regular files, and their bytes */
  const void *data;       /* an inline download's file */
  size_t data_len;
  unsigned mode;
  const char *const *skipped; /* entries not written, in words */
  size_t nskipped;
};

/* r is valid during the call; the transfer is gone after it. */
typedef void (*files_done_fn) (void *ctx, const struct files_result *r);

/* Start: 0 (done is called later, once), or -1 with *code and *err
 * (malloc'd) when it cannot start (a missing source, an existing dest). */
int files_upload (struct session *s, const struct files_request *rq,
                  files_done_fn done, void *ctx, struct files_transfer **t,
                  const char **code, char **err);
int files_download (struct session *s, const struct files_request *rq,
                    files_done_fn done, void *ctx, struct files_transfer **t,
                    const char **code, char **err);
/* Its client went away: stop it; done is not called. */
void files_cancel (struct files_transfer *t);
/* The session is closing: its transfers that still need it end with
 * session_lost and why. */
void files_session_gone (struct session *s, const char *why);
/* Downloads being written run a step at a time: when the next step is
 * due (session_now_ms's clock; -1: none), and the steps. */
long long files_next_deadline (void);
void files_tick (void);

#endif
