/* SPDX-License-Identifier: MIT */
/* The broker's configuration: which backend to use and how each backend
 * is set up.
 *
 * Sources, lowest priority first:
 *   1. built-in defaults (the schema table in config.c);
 *   2. the system file, AIRLOCK_SYSTEM_CONFIG (compiled in, default
 *      /etc/airlock/config.json; the environment variable of the same
 *      name overrides the path, for tests);
 *   3. the user file, $XDG_CONFIG_HOME/airlock/config.json, else
 *      $HOME/.config/airlock/config.json (the environment variable
 *      AIRLOCK_CONFIG overrides the path);
 *   4. environment variables: key `a.b_c` is read from AIRLOCK_A_B_C.
 *
 * The system file only sets defaults for every user: users override it.
 * Limits users must not exceed belong in helper.conf and the policy rules,
 * never here.
 *
 * Keys are dotted ("docker.pids_limit"); a file writes them nested
 * ({"docker": {"pids_limit": 64}}) or flat ({"docker.pids_limit": 64}).
 * An unknown key in a file is an error (typos must not pass silently); an
 * unknown AIRLOCK_* environment variable is ignored, because other parts of
 * airlock read their own (AIRLOCK_HELPER, ...).  See docs/config.md.
 *
 * Nothing here is secret: credentials are named by the environment
 * variable that holds them (daytona.api_key_env), never stored. */
#ifndef AIRLOCK_BROKER_CONFIG_H
#define AIRLOCK_BROKER_CONFIG_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdint.h>

#ifndef AIRLOCK_SYSTEM_CONFIG
#define AIRLOCK_SYSTEM_CONFIG "/etc/airlock/config.json"
#endif

struct airlock_config;

/* The smallest memory limit a sandbox may be given (bytes). */
#define MEMORY_MIN (16ULL << 20)

/* Load and validate; NULL with *err (malloc'd message) on any error.  The
 * message names the file or environment variable and the key, e.g.
 * "/home/u/.config/airlock/config.json: docker.pids_limit: expected an
 * integer between 1 and 1000000, got \"many\"". */
struct airlock_config *config_load (char **err);

/* The same for one session: envp ("NAME=value", NULL-terminated) replaces
 * the process's environment for AIRLOCK_* lookups (a client's variables,
 * sent with its request), and settings, a JSON object written like a
 * file, applies last with settings_origin naming it in messages and in
 * config_origin.  Either may be NULL. */
struct airlock_config *config_load_with (const char *const *envp,
                                         const cJSON *settings,
                                         const char *settings_origin,
                                         char **err);

/* A client's part, as an object {"NAME": "value"} to send along with an
 * open: its AIRLOCK_* variables that configuration reads, DOCKER_HOST,
 * and the variables its docker.forward_env names (from loaded, the
 * caller's configuration when it has it already; NULL: loaded here). */
cJSON *config_client_env (const struct airlock_config *loaded);
/* A variable of the environment c was read from (the client's, for a
 * session), for the backends: DOCKER_HOST, forwarded variables. */
const char *config_getenv (const struct airlock_config *c, const char *name);
/* Back to an envp for config_load_with; NULL with *err for a value that
 * is not a string, a name that is not a variable name, or an AIRLOCK_*
 * name that is not a configuration variable (a typo). */
char **config_env_from_json (const cJSON *obj, char **err);
void config_env_free (char **envp);

/* 16 hex digits identifying the effective settings (FNV-1a 64 of
 * config_to_json, so hidden values do not enter it); malloc'd. */
char *config_hash (const struct airlock_config *c);

/* Getters.  An unknown key or a key of another type is a programming
 * error: they abort() with a message.  Enum keys are strings. */
const char *config_string (const struct airlock_config *c,
                           const char *key); /* NULL if unset */
long long config_int (const struct airlock_config *c, const char *key);
/* A size key ("512M") in bytes; 0 if unset. */
uint64_t config_size (const struct airlock_config *c, const char *key);
bool config_bool (const struct airlock_config *c, const char *key);
/* Lists: a NULL-terminated array owned by the config, never NULL.  Maps
 * come out the same way, as "K=V" strings in the order they were given. */
const char *const *config_list (const struct airlock_config *c,
                                const char *key);

/* Where a key's value came from: "default", a file path, or
 * "environment variable NAME". */
const char *config_origin (const struct airlock_config *c, const char *key);

/* A boolean only the administrator may set: its value when it came from
 * the compiled-in system file (AIRLOCK_SYSTEM_CONFIG, not a path the
 * environment chose), else its default, whatever the user configured. */
bool config_bool_admin (const struct airlock_config *c, const char *key);

/* The whole effective config as a JSON object string (for `airlock config
 * show`), nested by section, unset strings as null; malloc'd.  Values of
 * keys that may hold secrets (docker.env) are shown as "<hidden>".
 * Without those, the output read back as a config file gives the same
 * config. */
char *config_to_json (const struct airlock_config *c);

/* One line a key, for people: "key value  (origin)", the value as JSON
 * (hidden ones as "<hidden>"); malloc'd. */
char *config_describe (const struct airlock_config *c);

void config_free (struct airlock_config *c);

/* Whether the system or the user file it was read from changed, appeared
 * or went away since (a stat each): for a daemon that keeps a config. */
bool config_files_changed (const struct airlock_config *c);

/* The user's home directory: $HOME when absolute, else the password
 * database's; NULL when neither says. */
const char *config_home_dir (void);

/* The user's config file path (AIRLOCK_CONFIG, else the XDG location);
 * malloc'd, NULL without a home directory. */
char *config_user_path (void);

/* The key reference (the tables of docs/config.md), generated from the
 * schema; malloc'd Markdown. */
char *config_doc_markdown (void);

#endif
