/* SPDX-License-Identifier: MIT */
/* The approval gate's audit log: one JSON object per line, appended to
 * STATE_DIR/audit.log, for every decision the gate makes.
 *
 * A line looks like (one line, shown wrapped):
 *   {"time":"2026-07-14T09:30:12.345Z","session":"s1","backend":"docker",
 *    "command":"curl -u me:<redacted> https://x","rules":["net-exfil"],
 *    "decision":"deny","decided_by":"person","reason":"no",
 *    "pid":1234,"uid":1000}
 * A network decision of airlock-egress also holds
 *   "network":{"name":"x.test","address":"192.0.2.7","port":443,
 *              "sni":"x.test","host":null,"fake_address":"10.99.1.1"}
 * and, when earlier lines of the same kind were held back by its rate
 * limit, "suppressed":N; lines without them are as above.
 * `time` is RFC 3339 UTC with milliseconds; `session`, `backend` and
 * `command` are null when not given; `reason` is present only when
 * given.  The command (and reason) pass through redact_secrets() first;
 * a command longer than AUDIT_COMMAND_MAX bytes is cut (at a character
 * boundary) and the line then also holds "command_truncated":true and
 * "command_bytes":N.  Every string is made valid UTF-8 (U+FFFD for bad
 * bytes).
 *
 * Safety of the file: the directory is created with mode 0700 (parents
 * too) and must belong to the caller and not be writable by group or
 * others; audit.log is created 0600 with O_APPEND | O_CLOEXEC |
 * O_NOFOLLOW, must be a regular file with one link owned by the caller (a
 * symlink or anything else planted there is refused).  All later
 * operations are relative to the opened directory.
 *
 * Writers: each line is written with a single write() while holding an
 * flock() on the directory, so writers in several processes (or threads,
 * or a parent and its forked child sharing one handle) never interleave
 * or lose lines across a rotation.  A line that could only be written in
 * part (full disk) is cut off again, so the file holds whole lines only.
 * Lines are not fsync()ed.
 *
 * Rotation: before a line that would take the file past max_bytes (and
 * the file is not empty), audit.log.(keep-1) becomes audit.log.keep ...,
 * audit.log becomes audit.log.1, and a new audit.log is started; the
 * oldest falls off.
 *
 * Errors are returned, never dropped: the gate must refuse to run a
 * command it cannot log.  Note: with RLIMIT_FSIZE, a write past the limit
 * raises SIGXFSZ, which the process should ignore to get EFBIG instead. */
#ifndef AIRLOCK_POLICY_AUDIT_LOG_H
#define AIRLOCK_POLICY_AUDIT_LOG_H

#include <stddef.h>

#define AUDIT_LOG_NAME "audit.log"
#define AUDIT_LOG_DEFAULT_MAX_BYTES ((size_t) 1024 * 1024)
#define AUDIT_LOG_DEFAULT_KEEP 5u
#define AUDIT_LOG_MAX_KEEP 1000u
/* Bytes of (redacted) command kept in a line. */
#define AUDIT_COMMAND_MAX 16384

/* What an egress decision was about (airlock-egress).  Any string may be
   NULL (written as null). */
struct audit_network
{
  const char *name;         /* the name the sandbox asked for */
  const char *address;      /* the real upstream address */
  unsigned port;            /* 0: none (written as null) */
  const char *sni;          /* a TLS ClientHello's server name */
  const char *host;         /* an HTTP request's Host */
  const char *fake_address; /* the address in the sandbox's view */
};

struct audit_entry
{
  const char *session;    /* or NULL */
  const char *backend;    /* "local", "docker", ... or NULL */
  const char *command;    /* as given; redacted here; or NULL */
  const char *decision;   /* "allow", "deny", "block", ...: required */
  const char *decided_by; /* "no-rule", "allowlist", "session-approval",
                             "person", "client", "mode-deny",
                             "mode-approve", "timeout", "admin-deny",
                             "hard-block", "user-deny", "bypass", ...:
                             required */
  const char *reason;     /* or NULL */
  const char *const *rules; /* ids of the rules that matched */
  size_t n_rules;
  const struct audit_network *network; /* or NULL: no "network" */
  unsigned long suppressed; /* lines held back before this one; 0: none */
};

struct audit_log;

/* Open (creating as needed) STATE_DIR/audit.log.  state_dir must be an
   absolute path.  max_bytes 0 means AUDIT_LOG_DEFAULT_MAX_BYTES; keep is
   how many old files to keep (0: none; at most AUDIT_LOG_MAX_KEEP).  NULL
   and *err (malloc'd, naming the path and the cause) on failure. */
struct audit_log *audit_log_open (const char *state_dir, size_t max_bytes,
                                  unsigned keep, char **err);

/* Append one entry.  0, or -errno and *err (malloc'd, naming the path);
   err may be NULL. */
int audit_log_write (struct audit_log *log, const struct audit_entry *e,
                     char **err);

void audit_log_close (struct audit_log *log);

/* STATE_DIR/audit.log, for messages. */
const char *audit_log_path (const struct audit_log *log);

/* The JSON line of an entry (no newline), malloc'd; NULL and *err when the
   entry lacks a decision or decided_by.  What audit_log_write() writes,
   with the current time, pid and uid. */
char *audit_entry_to_json (const struct audit_entry *e, char **err);

/* Where the broker keeps its state: $XDG_STATE_HOME/airlock when that is
   an absolute path, else HOME/.local/state/airlock.  Arguments are the
   values of those variables (either may be NULL).  malloc'd; NULL and
   *err when neither gives an absolute path. */
char *audit_log_state_dir (const char *xdg_state_home, const char *home,
                           char **err);

/* mkdir -p dir, each new directory 0700 (the state directory and the
   broker's other private directories).  0, or -1 and *err. */
int audit_log_make_dirs (const char *dir, char **err);

#endif
