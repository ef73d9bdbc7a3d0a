/* SPDX-License-Identifier: MIT */
/* Unit tests for Modal mode resolution and direct-credential discovery
 * (policy/modal_mode.c).
 *
 * The resolution table is written out in full (3 modes x 3 entitlement
 * answers x gateway ready or not x direct credentials or not) with the
 * backend each row must give and the words its error must (and must not)
 * hold.  The credential cases each write a real ~/.modal.toml in a fresh
 * temporary home. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <pwd.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <grp.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "modal_mode.h"

#define N_ELEMENTS(a) (sizeof (a) / sizeof ((a)[0]))

/* ---- mode words ---- */

static void
test_mode_parse (void **state)
{
  (void) state;
  static const struct
  {
    const char *text;
    int mode;   /* -1: an error */
  } cases[] = {
    { "auto", MODAL_AUTO },       { "direct", MODAL_DIRECT },
    { "managed", MODAL_MANAGED }, { "AUTO", MODAL_AUTO },
    { "Direct", MODAL_DIRECT },   { "  managed\t\n", MODAL_MANAGED },
    { "", -1 },                   { "   ", -1 },
    { "automatic", -1 },          { "auto x", -1 },
    { "man aged", -1 },           { "directly", -1 },
    { "none", -1 },               { "aut", -1 },
  };
  for (size_t i = 0; i < N_ELEMENTS (cases); i++)
    {
      enum modal_mode m = (enum modal_mode) 99;
      int rc = modal_mode_parse (cases[i].text, &m);
      if (cases[i].mode < 0)
        {
          if (rc != -EINVAL)
            fail_msg ("'%s' should be refused", cases[i].text);
          assert_int_equal (m, 99);   /* untouched */
        }
      else if (rc != 0 || (int) m != cases[i].mode)
        fail_msg ("'%s': rc %d mode %d", cases[i].text, rc, (int) m);
    }
  enum modal_mode m;
  assert_int_equal (modal_mode_parse (NULL, &m), -EINVAL);
  assert_string_equal (modal_mode_name (MODAL_MANAGED), "managed");
  assert_string_equal (modal_backend_name (MODAL_USE_DIRECT), "direct");
}

/* ---- resolution ---- */

#define A MODAL_AUTO
#define D MODAL_DIRECT
#define M MODAL_MANAGED
#define YES MODAL_ENTITLED
#define NO MODAL_NOT_ENTITLED
#define FAILED MODAL_QUERY_FAILED
#define NONE MODAL_NONE
#define USE_D MODAL_USE_DIRECT
#define USE_M MODAL_USE_MANAGED

struct resolve_case
{
  enum modal_mode mode;
  enum modal_entitlement ent;
  bool ready, direct;
  enum modal_backend expect;
  const char *words[3];  /* the error must hold these */
  const char *absent;    /* and not this */
};

#define ROW(m, e, r, d, x, ...) \
  { .mode = (m), .ent = (e), .ready = (r), .direct = (d), .expect = (x), \
    __VA_ARGS__ }

/* Shorthands for the words the messages must hold. */
#define HOWTO "MODAL_TOKEN_ID and MODAL_TOKEN_SECRET"
#define TOML "modal token set"
#define FOUND "Direct Modal credentials were found"
#define GW_OK "gateway is available"
#define W(...) .words = { __VA_ARGS__ }

static const struct resolve_case resolve_cases[] = {
  /* managed */
  ROW (M, YES, true, true, USE_M),
  ROW (M, YES, true, false, USE_M),
  ROW (M, YES, false, true, NONE, W ("managed mode", "not ready", FOUND)),
  ROW (M, YES, false, false, NONE, W ("managed mode", "not ready", HOWTO),
       .absent = "were found"),
  ROW (M, NO, true, true, NONE, W ("managed mode", "said no",
                                   "direct or auto"),
       .absent = "query failed"),
  ROW (M, NO, true, false, NONE, W ("not entitled", "said no", TOML)),
  ROW (M, NO, false, true, NONE, W ("not entitled", "said no", FOUND)),
  ROW (M, NO, false, false, NONE, W ("not entitled", "said no", HOWTO)),
  ROW (M, FAILED, true, true, NONE, W ("could not be checked",
                                       "query failed", "direct or auto"),
       .absent = "said no"),
  ROW (M, FAILED, true, false, NONE, W ("query failed", "not entitled",
                                        HOWTO)),
  ROW (M, FAILED, false, true, NONE, W ("query failed", FOUND)),
  ROW (M, FAILED, false, false, NONE, W ("query failed", TOML)),
  /* direct */
  ROW (D, YES, true, true, USE_D),
  ROW (D, YES, true, false, NONE, W ("direct mode", HOWTO, GW_OK)),
  ROW (D, YES, false, true, USE_D),
  ROW (D, YES, false, false, NONE, W ("direct mode", HOWTO, TOML),
       .absent = GW_OK),
  ROW (D, NO, true, true, USE_D),
  ROW (D, NO, true, false, NONE, W ("direct mode", "no Modal credentials",
                                    TOML), .absent = GW_OK),
  ROW (D, NO, false, true, USE_D),
  ROW (D, NO, false, false, NONE, W ("direct mode", HOWTO), .absent = GW_OK),
  ROW (D, FAILED, true, true, USE_D),
  ROW (D, FAILED, true, false, NONE, W ("direct mode", HOWTO),
       .absent = GW_OK),
  ROW (D, FAILED, false, true, USE_D),
  ROW (D, FAILED, false, false, NONE, W ("direct mode", TOML),
       .absent = GW_OK),
  /* auto prefers managed */
  ROW (A, YES, true, true, USE_M),
  ROW (A, YES, true, false, USE_M),
  ROW (A, YES, false, true, USE_D),
  ROW (A, YES, false, false, NONE, W ("auto mode", "not ready", HOWTO)),
  ROW (A, NO, true, true, USE_D),
  ROW (A, NO, true, false, NONE, W ("auto mode", "said no", TOML)),
  ROW (A, NO, false, true, USE_D),
  ROW (A, NO, false, false, NONE, W ("auto mode", "not entitled", HOWTO)),
  ROW (A, FAILED, true, true, USE_D),
  ROW (A, FAILED, true, false, NONE, W ("auto mode", "query failed",
                                        HOWTO)),
  ROW (A, FAILED, false, true, USE_D),
  ROW (A, FAILED, false, false, NONE, W ("auto mode", "query failed",
                                         TOML)),
};

static void
test_resolve_table (void **state)
{
  (void) state;
  assert_int_equal (N_ELEMENTS (resolve_cases), 3 * 3 * 2 * 2);
  for (size_t i = 0; i < N_ELEMENTS (resolve_cases); i++)
    {
      const struct resolve_case *c = &resolve_cases[i];
      struct modal_inputs in = {
        .mode = c->mode, .has_direct = c->direct, .entitlement = c->ent,
        .gateway_origin = c->ready, .gateway_token = c->ready,
      };
      char *err = (char *) "unset";
      enum modal_backend got = modal_resolve (&in, &err);
      if (got != c->expect)
        fail_msg ("row %zu (%s): expected %s, got %s (%s)", i,
                  modal_mode_name (c->mode), modal_backend_name (c->expect),
                  modal_backend_name (got), err ? err : "");
      if (got != MODAL_NONE)
        {
          assert_null (err);
          continue;
        }
      assert_non_null (err);
      for (size_t k = 0; k < N_ELEMENTS (c->words) && c->words[k]; k++)
        if (!strstr (err, c->words[k]))
          fail_msg ("row %zu: \"%s\" lacks \"%s\"", i, err, c->words[k]);
      if (c->absent && strstr (err, c->absent))
        fail_msg ("row %zu: \"%s\" should not hold \"%s\"", i, err,
                  c->absent);
      free (err);
      /* err is optional */
      assert_int_equal (modal_resolve (&in, NULL), MODAL_NONE);
    }
}

/* Which part of the gateway is missing is named. */
static void
test_resolve_gateway_parts (void **state)
{
  (void) state;
  struct modal_inputs in = { .mode = MODAL_MANAGED,
                             .entitlement = MODAL_ENTITLED,
                             .gateway_origin = false, .gateway_token = true };
  char *err = NULL;
  assert_int_equal (modal_resolve (&in, &err), MODAL_NONE);
  assert_non_null (strstr (err, "no gateway origin"));
  assert_null (strstr (err, "access token"));
  free (err);

  in.gateway_origin = true;
  in.gateway_token = false;
  assert_int_equal (modal_resolve (&in, &err), MODAL_NONE);
  assert_non_null (strstr (err, "no access token"));
  assert_null (strstr (err, "origin"));
  free (err);

  in.gateway_origin = false;
  assert_int_equal (modal_resolve (&in, &err), MODAL_NONE);
  assert_non_null (strstr (err, "no gateway origin"));
  assert_non_null (strstr (err, "no access token"));
  free (err);

  /* The credential finder's reason is quoted. */
  in.mode = MODAL_DIRECT;
  in.direct_why_not = "/h/.modal.toml does not exist";
  assert_int_equal (modal_resolve (&in, &err), MODAL_NONE);
  assert_non_null (strstr (err, "(/h/.modal.toml does not exist)"));
  free (err);

  /* An out-of-range mode or entitlement fails closed. */
  in.mode = (enum modal_mode) 7;
  in.has_direct = true;
  assert_int_equal (modal_resolve (&in, &err), MODAL_NONE);
  assert_non_null (strstr (err, "invalid mode"));
  free (err);
  in.mode = MODAL_AUTO;
  in.has_direct = false;
  in.entitlement = (enum modal_entitlement) 9;
  in.gateway_origin = in.gateway_token = true;
  assert_int_equal (modal_resolve (&in, &err), MODAL_NONE);
  free (err);
  assert_int_equal (modal_resolve (NULL, &err), MODAL_NONE);
  assert_non_null (err);
  free (err);
}

/* ---- credentials ---- */

static char home[256];

static int
remove_entry (const char *path, const struct stat *sb, int flag,
              struct FTW *ftw)
{
  (void) sb;
  (void) flag;
  (void) ftw;
  return remove (path);
}

static int
setup_home (void **state)
{
  (void) state;
  snprintf (home, sizeof home, "/tmp/airlock-modal-XXXXXX");
  if (!mkdtemp (home))
    return -1;
  return 0;
}

static int
teardown_home (void **state)
{
  (void) state;
  nftw (home, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
  return 0;
}

static void
write_file (const char *path, const char *text)
{
  FILE *f = fopen (path, "w");
  assert_non_null (f);
  fputs (text, f);
  assert_int_equal (fclose (f), 0);
}

enum file_kind { FILE_TEXT, FILE_NONE, FILE_DIR, FILE_FIFO };

struct cred_case
{
  const char *name;
  enum file_kind kind;
  const char *text;         /* written to HOME/.modal.toml (FILE_TEXT) */
  const char *env[4];       /* extra environment */
  bool expect;
  const char *id, *secret;  /* expected values */
  const char *words[3];     /* in the source (ok) or why_not (not ok) */
};

/* Every token in these files contains "s3cr3t" or "ak-" / "as-" values
   the messages must never show. */
#define DEFAULT_OK "[default]\ntoken_id = \"ak-s3cr3t1\"\n" \
                   "token_secret = \"as-s3cr3t1\"\n"

static const struct cred_case cred_cases[] = {
  { "valid default", FILE_TEXT, DEFAULT_OK, .expect = true,
    .id = "ak-s3cr3t1", .secret = "as-s3cr3t1",
    .words = { ".modal.toml (profile default)" } },
  { "the active profile", FILE_TEXT,
    "[a]\ntoken_id = \"ak-s3cr3ta\"\ntoken_secret = \"as-s3cr3ta\"\n\n"
    "[b]\ntoken_id = \"ak-s3cr3tb\"\ntoken_secret = \"as-s3cr3tb\"\n"
    "active = true\n", .expect = true, .id = "ak-s3cr3tb",
    .secret = "as-s3cr3tb", .words = { "profile b" } },
  { "MODAL_PROFILE selects", FILE_TEXT,
    "[a]\ntoken_id = \"ak-s3cr3ta\"\ntoken_secret = \"as-s3cr3ta\"\n"
    "[b]\ntoken_id = \"ak-s3cr3tb\"\ntoken_secret = \"as-s3cr3tb\"\n"
    "active = true\n", { "MODAL_PROFILE=a" }, true, "ak-s3cr3ta",
    "as-s3cr3ta", { "profile a" } },
  { "MODAL_PROFILE names no profile", FILE_TEXT, DEFAULT_OK,
    { "MODAL_PROFILE=work" }, false,
    .words = { "no profile [work]", "MODAL_PROFILE" } },
  { "empty tokens", FILE_TEXT,
    "[default]\ntoken_id = \"\"\ntoken_secret = \"as-s3cr3t\"\n",
    .expect = false, .words = { "an empty token_id", "profile [default]" } },
  { "empty secret", FILE_TEXT,
    "[default]\ntoken_id = \"ak-s3cr3t\"\ntoken_secret = ''\n",
    .expect = false, .words = { "an empty token_secret" } },
  { "only the id", FILE_TEXT, "[default]\ntoken_id = \"ak-s3cr3t\"\n",
    .expect = false, .words = { "no token_secret", "(line 1)" } },
  { "no tokens", FILE_TEXT, "[default]\nserver_url = \"https://x\"\n",
    .expect = false, .words = { "neither token_id nor token_secret" } },
  { "empty file", FILE_TEXT, "", .expect = false,
    .words = { "holds no profile" } },
  { "only comments", FILE_TEXT, "# nothing here\n\n", .expect = false,
    .words = { "holds no profile" } },
  { "no file", FILE_NONE, .expect = false,
    .words = { ".modal.toml does not exist",
               "MODAL_TOKEN_ID and MODAL_TOKEN_SECRET are not set" } },
  { "a directory", FILE_DIR, .expect = false,
    .words = { "is a directory" } },
  { "a FIFO does not hang", FILE_FIFO, .expect = false,
    .words = { "not a regular file" } },
  { "comments everywhere", FILE_TEXT,
    "# Modal\n  # indented\n[default] # the profile\n"
    "token_id = \"ak-s3cr3t#1\" # trailing\n\t\n"
    "token_secret = 'as-s3cr3t' #\n", .expect = true, .id = "ak-s3cr3t#1",
    .secret = "as-s3cr3t" },
  { "quoted names and keys", FILE_TEXT,
    "[\"my work\"]\n\"token_id\" = \"ak-s3cr3t\"\n'token_secret' = "
    "\"as-s3cr3t\"\n", { "MODAL_PROFILE=my work" }, true, "ak-s3cr3t",
    "as-s3cr3t", { "profile my work" } },
  { "escapes", FILE_TEXT,
    "[default]\ntoken_id = \"ak-\\u0041\\\"\\\\\\U0001F600\"\n"
    "token_secret = 'as-\\n'\n", .expect = true,
    .id = "ak-A\"\\\xf0\x9f\x98\x80", .secret = "as-\\n" },
  { "CRLF and a BOM", FILE_TEXT,
    "\xef\xbb\xbf[default]\r\ntoken_id = \"ak-s3cr3t\"\r\n"
    "token_secret = \"as-s3cr3t\"\r\n", .expect = true, .id = "ak-s3cr3t",
    .secret = "as-s3cr3t" },
  { "other keys ignored", FILE_TEXT,
    "[default]\nserver_url = \"https://api.modal.com\"\n"
    "environment = \"main\"\nimage_builder_version = \"2024.10\"\n"
    "retries = 3\nratio = -1.5e3\nverbose = false\n"
    "token_id = \"ak-s3cr3t\"\ntoken_secret = \"as-s3cr3t\"\n",
    .expect = true, .id = "ak-s3cr3t", .secret = "as-s3cr3t" },
  { "the only profile", FILE_TEXT,
    "[solo]\ntoken_id = \"ak-s3cr3t\"\ntoken_secret = \"as-s3cr3t\"\n",
    .expect = true, .id = "ak-s3cr3t", .words = { "profile solo" } },
  { "default among several", FILE_TEXT,
    "[x]\ntoken_id = \"ak-s3cr3tx\"\ntoken_secret = \"as-s3cr3tx\"\n"
    "[default]\ntoken_id = \"ak-s3cr3td\"\ntoken_secret = \"as-s3cr3td\"\n",
    .expect = true, .id = "ak-s3cr3td", .words = { "profile default" } },
  { "several, none chosen", FILE_TEXT,
    "[x]\ntoken_id = \"ak-s3cr3t\"\ntoken_secret = \"as-s3cr3t\"\n"
    "[y]\ntoken_id = \"ak-s3cr3t\"\ntoken_secret = \"as-s3cr3t\"\n",
    .expect = false, .words = { "2 profiles", "set MODAL_PROFILE" } },
  { "several active", FILE_TEXT,
    "[x]\nactive = true\ntoken_id = \"ak-s3cr3t\"\ntoken_secret = \"a\"\n"
    "[y]\nactive = true\ntoken_id = \"ak-s3cr3t\"\ntoken_secret = \"a\"\n",
    .expect = false, .words = { "several profiles active", "[x] and [y]" } },
  { "inactive active flag", FILE_TEXT,
    "[x]\nactive = false\ntoken_id = \"ak-s3cr3t\"\ntoken_secret = \"a\"\n"
    "[y]\ntoken_id = \"ak-s3cr3t\"\ntoken_secret = \"a\"\n",
    .expect = false, .words = { "none marked" } },
  { "token not a string", FILE_TEXT,
    "[default]\ntoken_id = 12345\ntoken_secret = \"as-s3cr3t\"\n",
    .expect = false, .words = { "token_id that is not a string" } },
  { "missing equals", FILE_TEXT,
    "[default]\ntoken_id \"ak-s3cr3t\"\n", .expect = false,
    .words = { ".modal.toml:2: expected '=' after the key" } },
  { "unterminated string", FILE_TEXT,
    "[default]\n\ntoken_secret = \"as-s3cr3t\n", .expect = false,
    .words = { ".modal.toml:3: unterminated string" } },
  { "bad escape", FILE_TEXT, "[default]\ntoken_id = \"ak-\\q-s3cr3t\"\n",
    .expect = false, .words = { ":2: invalid escape" } },
  { "surrogate escape", FILE_TEXT, "[default]\ntoken_id = \"\\uD800\"\n",
    .expect = false, .words = { ":2: escape of an invalid code point" } },
  { "text after a value", FILE_TEXT,
    "[default]\ntoken_id = \"ak-s3cr3t\" x\n", .expect = false,
    .words = { ":2: unexpected text" } },
  { "duplicate table", FILE_TEXT, DEFAULT_OK "[default]\n", .expect = false,
    .words = { ":4: table [default] is defined twice" } },
  { "duplicate key", FILE_TEXT,
    "[default]\ntoken_id = \"ak-s3cr3t\"\ntoken_id = \"ak-s3cr3t\"\n",
    .expect = false, .words = { ":3: key 'token_id' is defined twice" } },
  { "key outside a table", FILE_TEXT, "token_id = \"ak-s3cr3t\"\n",
    .expect = false, .words = { ":1: key outside any [profile] table" } },
  { "array of tables", FILE_TEXT, "[[default]]\n", .expect = false,
    .words = { ":1: arrays of tables" } },
  { "array value", FILE_TEXT, "[default]\nx = [1, 2]\n", .expect = false,
    .words = { ":2: arrays and inline tables are not supported" } },
  { "dotted key", FILE_TEXT, "[default]\na.b = 1\n", .expect = false,
    .words = { ":2: dotted keys" } },
  { "dotted table", FILE_TEXT, "[a.b]\n", .expect = false,
    .words = { ":1: dotted table names" } },
  { "multi-line string", FILE_TEXT, "[default]\ntoken_id = \"\"\"ak\n\"\"\"\n",
    .expect = false, .words = { ":2: multi-line strings" } },
  { "active not a boolean", FILE_TEXT, "[default]\nactive = \"yes\"\n",
    .expect = false, .words = { ":2: 'active' must be true or false" } },
  { "NUL byte", FILE_TEXT, NULL, .expect = false,
    .words = { "contains a NUL byte" } },
  { "environment tokens", FILE_NONE, NULL,
    { "MODAL_TOKEN_ID=ak-envs3cr3t", "MODAL_TOKEN_SECRET=as-envs3cr3t" },
    true, "ak-envs3cr3t", "as-envs3cr3t", { "environment" } },
  { "environment beats the file", FILE_TEXT, DEFAULT_OK,
    { "MODAL_TOKEN_ID=ak-envs3cr3t", "MODAL_TOKEN_SECRET=as-envs3cr3t" },
    true, "ak-envs3cr3t", "as-envs3cr3t", { "environment" } },
  { "half the environment", FILE_NONE, NULL,
    { "MODAL_TOKEN_ID=ak-envs3cr3t", "MODAL_TOKEN_SECRET=" }, false,
    .words = { "MODAL_TOKEN_ID is set but MODAL_TOKEN_SECRET is not",
               "does not exist" } },
  { "half the environment, file ok", FILE_TEXT, DEFAULT_OK,
    { "MODAL_TOKEN_SECRET=as-envs3cr3t" }, true, "ak-s3cr3t1",
    "as-s3cr3t1", { "profile default" } },
};

/* A case's environment: its own entries, NULL-terminated. */
static void
run_cred_case (const struct cred_case *c, const char *const *env)
{
  struct modal_credentials cr = { (char *) "x", (char *) "y", (char *) "z" };
  char *why = (char *) "unset";
  int rc = modal_load_direct_credentials (env, home, &cr, &why);
  if ((rc == 0) != c->expect)
    fail_msg ("%s: expected %s, got rc %d (%s)", c->name,
              c->expect ? "credentials" : "none", rc, why ? why : "");
  if (c->expect)
    {
      assert_null (why);
      if (c->id)
        assert_string_equal (cr.token_id, c->id);
      if (c->secret)
        assert_string_equal (cr.token_secret, c->secret);
      for (size_t k = 0; k < N_ELEMENTS (c->words) && c->words[k]; k++)
        if (!strstr (cr.source, c->words[k]))
          fail_msg ("%s: source \"%s\" lacks \"%s\"", c->name, cr.source,
                    c->words[k]);
      modal_credentials_clear (&cr);
      assert_null (cr.token_id);
    }
  else
    {
      assert_non_null (why);
      /* out is untouched on failure */
      assert_string_equal (cr.token_id, "x");
      for (size_t k = 0; k < N_ELEMENTS (c->words) && c->words[k]; k++)
        if (!strstr (why, c->words[k]))
          fail_msg ("%s: \"%s\" lacks \"%s\"", c->name, why, c->words[k]);
      if (strstr (why, "s3cr3t") || strstr (why, "ak-") || strstr (why, "as-"))
        fail_msg ("%s: a token value leaked into \"%s\"", c->name, why);
      free (why);
    }

  /* The boolean form agrees and why_not is optional. */
  assert_int_equal (modal_has_direct_credentials (env, home, NULL),
                    c->expect);
}

static void
test_credential_cases (void **state)
{
  (void) state;
  char path[512];
  snprintf (path, sizeof path, "%s/.modal.toml", home);
  assert_true (N_ELEMENTS (cred_cases) >= 15);
  for (size_t i = 0; i < N_ELEMENTS (cred_cases); i++)
    {
      const struct cred_case *c = &cred_cases[i];
      remove (path);
      switch (c->kind)
        {
        case FILE_TEXT:
          if (c->text)
            write_file (path, c->text);
          else
            {
              /* a NUL inside the file */
              int fd = open (path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
              assert_true (fd >= 0);
              assert_int_equal (write (fd, "[default]\n\0x\n", 13), 13);
              close (fd);
            }
          break;
        case FILE_DIR:
          assert_int_equal (mkdir (path, 0700), 0);
          break;
        case FILE_FIFO:
          assert_int_equal (mkfifo (path, 0600), 0);
          break;
        case FILE_NONE:
          break;
        }
      run_cred_case (c, c->env);
    }
  remove (path);
}

/* MODAL_CONFIG_PATH points elsewhere; HOME from the environment when no
   home is given. */
static void
test_config_path_and_home (void **state)
{
  (void) state;
  char other[512], envpath[600], envhome[600], path[512];
  snprintf (other, sizeof other, "%s/elsewhere.toml", home);
  snprintf (path, sizeof path, "%s/.modal.toml", home);
  write_file (other,
              "[default]\ntoken_id = \"ak-o\"\ntoken_secret = \"as-o\"\n");
  snprintf (envpath, sizeof envpath, "MODAL_CONFIG_PATH=%s", other);
  snprintf (envhome, sizeof envhome, "HOME=%s", home);

  struct modal_credentials cr;
  const char *env1[] = { envpath, NULL };
  assert_int_equal (modal_load_direct_credentials (env1, home, &cr, NULL), 0);
  assert_string_equal (cr.token_id, "ak-o");
  assert_non_null (strstr (cr.source, "elsewhere.toml"));
  modal_credentials_clear (&cr);

  /* The override is used even when ~/.modal.toml would have worked. */
  write_file (path, DEFAULT_OK);
  char missing[600];
  snprintf (missing, sizeof missing, "MODAL_CONFIG_PATH=%s/nope.toml", home);
  const char *env2[] = { missing, NULL };
  char *why = NULL;
  assert_false (modal_has_direct_credentials (env2, home, &why));
  assert_non_null (strstr (why, "nope.toml does not exist"));
  free (why);

  /* home NULL: HOME from envp. */
  const char *env3[] = { envhome, NULL };
  assert_int_equal (modal_load_direct_credentials (env3, NULL, &cr, NULL), 0);
  assert_string_equal (cr.token_id, "ak-s3cr3t1");
  modal_credentials_clear (&cr);

  /* No home at all: said so. */
  const char *env4[] = { NULL };
  assert_false (modal_has_direct_credentials (env4, NULL, &why));
  assert_non_null (strstr (why, "no home directory"));
  free (why);
  assert_false (modal_has_direct_credentials (NULL, NULL, &why));
  free (why);
}

/* A file the caller cannot read.  Root reads everything, so as root the
   check runs in a child that has dropped to an unprivileged uid. */
static void
test_unreadable (void **state)
{
  (void) state;
  char path[512];
  snprintf (path, sizeof path, "%s/.modal.toml", home);
  write_file (path, DEFAULT_OK);
  assert_int_equal (chmod (path, 0), 0);
  assert_int_equal (chmod (home, 0755), 0);

  pid_t pid = fork ();
  assert_true (pid >= 0);
  if (pid == 0)
    {
      if (geteuid () == 0)
        {
          struct passwd *pw = getpwnam ("nobody");
          uid_t uid = pw ? pw->pw_uid : 65534;
          gid_t gid = pw ? pw->pw_gid : 65534;
          if (setgroups (0, NULL) < 0 || setresgid (gid, gid, gid) < 0
              || setresuid (uid, uid, uid) < 0)
            _exit (3);
        }
      char *why = NULL;
      const char *env[] = { NULL };
      bool ok = modal_has_direct_credentials (env, home, &why);
      int rc = ok ? 1 : !why ? 2
               : !strstr (why, "cannot be opened: Permission denied") ? 4 : 0;
      if (rc)
        fprintf (stderr, "why: %s\n", why ? why : "(null)");
      free (why);
      _exit (rc);
    }
  int status;
  assert_int_equal (waitpid (pid, &status, 0), pid);
  assert_true (WIFEXITED (status));
  assert_int_equal (WEXITSTATUS (status), 0);
}

int
main (void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test (test_mode_parse),
    cmocka_unit_test (test_resolve_table),
    cmocka_unit_test (test_resolve_gateway_parts),
    cmocka_unit_test_setup_teardown (test_credential_cases, setup_home,
                                     teardown_home),
    cmocka_unit_test_setup_teardown (test_config_path_and_home, setup_home,
                                     teardown_home),
    cmocka_unit_test_setup_teardown (test_unreadable, setup_home,
                                     teardown_home),
  };
  return cmocka_run_group_tests (tests, NULL, NULL);
}
