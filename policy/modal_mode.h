/* SPDX-License-Identifier: MIT */
/* Modal mode resolution: which way a Modal session is created, decided
 * once, when the session is created, from facts the caller gathers.
 *
 * Modal (a cloud sandbox) is reached either directly, with the user's
 * own Modal credentials, or "managed", through a tool gateway that holds
 * them.  The mode is configured as auto, direct or managed; auto prefers
 * managed.  Everything fails closed: an entitlement query that failed
 * means not entitled, a credentials file that merely exists is not
 * credentials, an unknown mode word is an error.  When no backend can be
 * used the caller gets one message saying what is missing and how to fix
 * it, instead of a late failure at the first command
 * (hermes-backends.md §4, where the original did otherwise).
 *
 * Pure apart from reading the credentials file; no token value ever
 * appears in a message. */
#ifndef AIRLOCK_POLICY_MODAL_MODE_H
#define AIRLOCK_POLICY_MODAL_MODE_H

#include <stdbool.h>

enum modal_mode
{
  MODAL_AUTO,     /* managed when available, else direct */
  MODAL_DIRECT,   /* the user's own Modal credentials */
  MODAL_MANAGED,  /* through the tool gateway */
};

/* What the gateway's account service said about the tool gateway. */
enum modal_entitlement
{
  MODAL_ENTITLED,
  MODAL_NOT_ENTITLED,
  MODAL_QUERY_FAILED, /* no answer: treated as not entitled */
};

struct modal_inputs
{
  enum modal_mode mode;
  bool has_direct;              /* modal_has_direct_credentials () */
  const char *direct_why_not;   /* its why_not, quoted in messages (or NULL) */
  enum modal_entitlement entitlement;
  bool gateway_origin;          /* a gateway URL is configured */
  bool gateway_token;           /* an access token is at hand */
};

enum modal_backend
{
  MODAL_NONE,
  MODAL_USE_DIRECT,
  MODAL_USE_MANAGED,
};

/* Resolution:
 *   managed: managed if entitled and the gateway is ready (origin and
 *            token), else none;
 *   direct:  direct if has_direct, else none;
 *   auto:    managed if entitled and ready, else direct if has_direct,
 *            else none.
 * MODAL_NONE sets *err (malloc'd; err may be NULL) to a message naming
 * what is missing and how to fix it; otherwise *err is set to NULL. */
enum modal_backend modal_resolve (const struct modal_inputs *in, char **err);

/* "auto", "direct" or "managed", case-insensitive, surrounding blanks
   allowed.  0, or -EINVAL for anything else (NULL and "" included): a
   mistyped mode is a configuration error, never silently auto. */
int modal_mode_parse (const char *text, enum modal_mode *out);

const char *modal_mode_name (enum modal_mode mode);
const char *modal_backend_name (enum modal_backend backend);

/* Direct credentials, as the direct backend will use them. */
struct modal_credentials
{
  char *token_id;
  char *token_secret;
  char *source;   /* "environment" or "FILE (profile NAME)" */
};

/* Find direct credentials:
 *   1. MODAL_TOKEN_ID and MODAL_TOKEN_SECRET, both non-empty, in envp;
 *   2. else the Modal config file: MODAL_CONFIG_PATH from envp if set,
 *      else HOME/.modal.toml (home: the caller's home directory; NULL:
 *      HOME from envp).  Its profile: MODAL_PROFILE from envp if set (it
 *      must exist), else the one marked `active = true` (several: an
 *      error), else the only one, else `[default]`.  The profile must hold
 *      non-empty string values for token_id and token_secret.
 * The file is read as the subset of TOML Modal writes: [name] and
 * ["quoted name"] tables; key = "basic string" (with escapes),
 * 'literal string', true, false, or a number; bare or quoted keys;
 * comments and blank lines.  Anything else is an error naming the file
 * and line.  Keys other than token_id, token_secret and active are
 * ignored.
 * 0 and *out filled; or -1 and *why_not (malloc'd; why_not may be NULL)
 * saying what was looked at and why it is not credentials.  envp is a
 * NULL-terminated "NAME=value" array (environ). */
int modal_load_direct_credentials (const char *const *envp, const char *home,
                                   struct modal_credentials *out,
                                   char **why_not);
void modal_credentials_clear (struct modal_credentials *c);

/* modal_load_direct_credentials () without keeping the values. */
bool modal_has_direct_credentials (const char *const *envp, const char *home,
                                   char **why_not);

#endif
