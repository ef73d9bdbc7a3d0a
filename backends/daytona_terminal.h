/* SPDX-License-Identifier: MIT */
/* A daytona command on a terminal: one of Daytona's PTY sessions, over
 * its WebSocket (websocket.h), on a thread of its own.
 *
 * Daytona's PTY session runs the sandbox's login shell, not a command of
 * ours.  So: the job directory (script, environment, and a "go" file:
 * daytona_wrapper.sh in M=pty) is written first by an exec in a toolbox
 * session (never through the terminal, which echoes what it is given);
 * the PTY session is created (window, TERM) and connected; only
 * `exec /bin/sh DIR/go` is typed, and the output before the marker that
 * go prints first (banner, prompt, echo) is dropped.  Typed input is
 * sent as binary messages; a resize is Daytona's resize call.  When the
 * terminal closes, the state report (fd 3) and exit status are read
 * from the job directory by one more exec.  Daytona keeps no output for
 * a client that is not connected, so a broken connection ends the job
 * as lost (the PTY session is deleted, which kills its tree): never a
 * silent gap in the output. */
#ifndef AIRLOCK_BACKENDS_DAYTONA_TERMINAL_H
#define AIRLOCK_BACKENDS_DAYTONA_TERMINAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "daytona_http.h"

/* Called on the terminal's thread; session and job are the spec's. */
struct daytona_terminal_hooks {
  /* The command runs: its terminal's output follows. */
  void (*started) (void *session, void *job);
  void (*output) (void *session, void *job, const void *data, size_t n);
  /* The end, the last call: the exit status and the state report (fd 3,
   * may be empty), or lost (why; status and meta unused). */
  void (*ended) (void *session, void *job, int status, const void *meta, size_t meta_len,
                 const char *lost);
};

struct daytona_terminal_spec {
  const char *api_url;
  const struct daytona_auth *auth;
  const char *toolbox_url; /* the sandbox's toolbox base */
  const char *name;        /* job directory, toolbox and PTY session id */
  const char *prep;        /* the toolbox exec that writes the job directory */
  const char *marker;      /* what go prints first */
  unsigned rows, cols;
  const char *term;
  const volatile int *stop; /* the session closes */
  void *session, *job;
};

struct daytona_terminal;

/* Starts the thread (the strings are copied).  NULL with *err. */
struct daytona_terminal *daytona_terminal_start (const struct daytona_terminal_spec *spec,
                                                 const struct daytona_terminal_hooks *hooks,
                                                 char **err);

/* Typed bytes, in order; eof types the terminal's end of input (^D,
 * twice after a begun line). */
int daytona_terminal_type (struct daytona_terminal *t, const void *data, size_t n, bool eof);
void daytona_terminal_resize (struct daytona_terminal *t, unsigned rows, unsigned cols);
/* Before the command started: it never will (ends with 128 + sig). */
void daytona_terminal_cancel (struct daytona_terminal *t, int sig);

/* Wait for the thread (it ends by itself once it reported the end, or
 * at *spec->stop) and free. */
void daytona_terminal_free (struct daytona_terminal *t);

#endif
