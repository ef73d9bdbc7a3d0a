/* SPDX-License-Identifier: MIT */
/* Unit tests for the broker's configuration (broker/config.c).
 *
 * Every test starts from a clean slate: no AIRLOCK_* variable, no
 * XDG_CONFIG_HOME, HOME and both config paths inside a fresh temporary
 * directory.  Error messages are asserted exactly: they are the only thing
 * a user sees when a setting is wrong, so a change of wording or of which
 * check fires is a behaviour change.
 *
 * `test_config --dump-doc` prints the key reference of docs/config.md;
 * test_doc_in_sync checks the file still contains it (set AIRLOCK_DOC to
 * the file when run from elsewhere than the source tree). */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <cJSON.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "config.h"

extern char **environ;

static char tmp[256];       /* this test's directory */
static char sys_path[512];  /* AIRLOCK_SYSTEM_CONFIG */
static char user_path[512]; /* AIRLOCK_CONFIG */
static char *doc_path;      /* docs/config.md */

/* ---- fixtures ---- */

static void
unset_airlock_env (void)
{
  for (;;)
    {
      char **e;
      for (e = environ; *e; e++)
        if (!strncmp (*e, "AIRLOCK_", 8))
          break;
      if (!*e)
        return;
      char *name = strndup (*e, strcspn (*e, "="));
      unsetenv (name);
      free (name);
    }
}

static int
setup (void **state)
{
  (void) state;
  snprintf (tmp, sizeof tmp, "/tmp/airlock-test-config.XXXXXX");
  if (!mkdtemp (tmp))
    return -1;
  unset_airlock_env ();
  unsetenv ("XDG_CONFIG_HOME");
  char home[300];
  snprintf (home, sizeof home, "%s/home", tmp);
  mkdir (home, 0700);
  setenv ("HOME", home, 1);
  snprintf (sys_path, sizeof sys_path, "%s/system.json", tmp);
  snprintf (user_path, sizeof user_path, "%s/user.json", tmp);
  setenv ("AIRLOCK_SYSTEM_CONFIG", sys_path, 1);
  setenv ("AIRLOCK_CONFIG", user_path, 1);
  return 0;
}

static int
rm_one (const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
  (void) st, (void) flag, (void) ftw;
  chmod (path, 0700);
  return remove (path);
}

static int
teardown (void **state)
{
  (void) state;
  return nftw (tmp, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static void
write_file (const char *path, const char *text)
{
  FILE *f = fopen (path, "w");
  assert_non_null (f);
  fputs (text, f);
  assert_int_equal (fclose (f), 0);
}

static struct airlock_config *
load_ok (void)
{
  char *err = NULL;
  struct airlock_config *c = config_load (&err);
  if (!c)
    fail_msg ("config_load failed: %s", err);
  assert_null (err);
  return c;
}

static void
load_fails (const char *want)
{
  char *err = NULL;
  struct airlock_config *c = config_load (&err);
  if (c)
    {
      config_free (c);
      fail_msg ("config_load succeeded; wanted: %s", want);
    }
  assert_non_null (err);
  assert_string_equal (err, want);
  free (err);
}

/* The user file holds `json`; loading fails with "<user file>: <want>". */
static void
user_file_fails (const char *json, const char *want)
{
  char full[1024];
  write_file (user_path, json);
  snprintf (full, sizeof full, "%s: %s", user_path, want);
  load_fails (full);
}

/* Variable `name` is `value`; loading fails with "environment variable
 * <name>: <want>". */
static void
env_fails (const char *name, const char *value, const char *want)
{
  char full[1024];
  setenv (name, value, 1);
  snprintf (full, sizeof full, "environment variable %s: %s", name, want);
  load_fails (full);
  unsetenv (name);
}

static void
assert_list (const char *const *got, const char *const *want)
{
  assert_non_null (got);
  size_t i = 0;
  for (; want[i]; i++)
    {
      if (!got[i])
        fail_msg ("list ends at %zu, wanted \"%s\"", i, want[i]);
      assert_string_equal (got[i], want[i]);
    }
  assert_null (got[i]);
}

/* ---- defaults and sources ---- */

static void
test_defaults (void **state)
{
  (void) state;
  struct airlock_config *c = load_ok ();
  assert_string_equal (config_string (c, "backend"), "local");
  assert_int_equal (config_int (c, "session.idle_timeout"), 300);
  assert_int_equal (config_int (c, "exec.timeout"), 180);
  assert_int_equal (config_int (c, "exec.max_output_chars"), 50000);
  assert_int_equal (config_int (c, "jobs.finished_ttl"), 1800);
  assert_string_equal (config_string (c, "local.network"), "loopback");
  assert_null (config_string (c, "local.memory"));
  assert_int_equal (config_int (c, "local.pids"), 0);
  assert_null (config_string (c, "local.rootfs"));
  assert_list (config_list (c, "local.binds"), (const char *[]){ NULL });
  assert_list (config_list (c, "local.ro_binds"), (const char *[]){ NULL });
  assert_string_equal (config_string (c, "docker.image"), "debian:bookworm-slim");
  assert_false (config_bool (c, "docker.network"));
  assert_int_equal (config_int (c, "docker.pids_limit"), 256);
  assert_list (config_list (c, "docker.env"), (const char *[]){ NULL });
  assert_string_equal (config_string (c, "docker.socket"), "/var/run/docker.sock");
  assert_true (config_bool (c, "docker.pull"));
  assert_false (config_bool (c, "docker.allow_docker_socket"));
  assert_null (config_string (c, "ssh.host"));
  assert_int_equal (config_int (c, "ssh.port"), 22);
  assert_int_equal (config_int (c, "ssh.control_persist"), 300);
  assert_string_equal (config_string (c, "modal.mode"), "auto");
  assert_int_equal (config_int (c, "modal.timeout"), 3600);
  assert_string_equal (config_string (c, "daytona.api_url"),
                       "https://app.daytona.io/api");
  assert_string_equal (config_string (c, "daytona.api_key_env"), "DAYTONA_API_KEY");
  assert_string_equal (config_origin (c, "backend"), "default");
  assert_string_equal (config_origin (c, "docker.env"), "default");
  config_free (c);
}

static void
test_missing_files (void **state)
{
  (void) state;
  char p[600];
  snprintf (p, sizeof p, "%s/no/such/dir/config.json", tmp);
  setenv ("AIRLOCK_SYSTEM_CONFIG", p, 1);
  setenv ("AIRLOCK_CONFIG", p, 1);
  struct airlock_config *c = load_ok ();
  assert_string_equal (config_string (c, "backend"), "local");
  config_free (c);

  /* a dangling symlink is a missing file too */
  snprintf (p, sizeof p, "%s/dangling.json", tmp);
  assert_int_equal (symlink ("/nonexistent/airlock.json", p), 0);
  setenv ("AIRLOCK_CONFIG", p, 1);
  config_free (load_ok ());
}

static void
test_empty_file_is_no_settings (void **state)
{
  (void) state;
  write_file (sys_path, "");
  write_file (user_path, " \n\t\r\n");
  struct airlock_config *c = load_ok ();
  assert_string_equal (config_origin (c, "backend"), "default");
  config_free (c);
}

static void
test_system_then_user (void **state)
{
  (void) state;
  write_file (sys_path, "{ \"backend\": \"docker\",\n"
                        "  \"docker\": { \"pids_limit\": 100, \"image\": \"sys:1\" },\n"
                        "  \"ssh\": { \"port\": 2222 } }\n");
  write_file (user_path, "{ \"docker\": { \"pids_limit\": 50 } }\n");
  struct airlock_config *c = load_ok ();
  assert_string_equal (config_string (c, "backend"), "docker");
  assert_string_equal (config_origin (c, "backend"), sys_path);
  assert_int_equal (config_int (c, "docker.pids_limit"), 50);
  assert_string_equal (config_origin (c, "docker.pids_limit"), user_path);
  assert_string_equal (config_string (c, "docker.image"), "sys:1");
  assert_int_equal (config_int (c, "ssh.port"), 2222);
  assert_string_equal (config_origin (c, "ssh.port"), sys_path);
  assert_string_equal (config_origin (c, "exec.timeout"), "default");
  config_free (c);
}

static void
test_env_over_files (void **state)
{
  (void) state;
  write_file (sys_path,
              "{ \"backend\": \"docker\", \"docker\": { \"pids_limit\": 100 } }");
  write_file (user_path,
              "{ \"backend\": \"ssh\", \"docker\": { \"pids_limit\": 50 } }");
  setenv ("AIRLOCK_BACKEND", "modal", 1);
  setenv ("AIRLOCK_DOCKER_PIDS_LIMIT", "7", 1);
  setenv ("AIRLOCK_MODAL_MODE", "managed", 1);
  setenv ("AIRLOCK_DOCKER_NETWORK", "false", 1);
  struct airlock_config *c = load_ok ();
  assert_string_equal (config_string (c, "backend"), "modal");
  assert_string_equal (config_origin (c, "backend"),
                       "environment variable AIRLOCK_BACKEND");
  assert_int_equal (config_int (c, "docker.pids_limit"), 7);
  assert_string_equal (config_origin (c, "docker.pids_limit"),
                       "environment variable AIRLOCK_DOCKER_PIDS_LIMIT");
  assert_string_equal (config_string (c, "modal.mode"), "managed");
  assert_false (config_bool (c, "docker.network"));
  config_free (c);
}

/* A session's settings: a client's environment instead of ours, then the
 * request's own settings over everything. */
static void
test_load_with_client_env_and_settings (void **state)
{
  (void) state;
  write_file (user_path, "{ \"exec\": { \"timeout\": 50 } }");
  setenv ("AIRLOCK_BACKEND", "modal", 1); /* ours: must not count */
  char other[700], other_path[600];
  snprintf (other_path, sizeof other_path, "%s/other.json", tmp);
  snprintf (other, sizeof other, "AIRLOCK_CONFIG=%s", other_path);
  write_file (other_path, "{ \"jobs\": { \"finished_ttl\": 9 } }");
  const char *envp[] = { "AIRLOCK_DOCKER_PIDS_LIMIT=7", other, "DOCKER_HOST=unix:///x", NULL };
  cJSON *settings = cJSON_Parse ("{\"docker\": {\"image\": \"alpine\"}, \"exec.timeout\": 60}");
  char *err = NULL;
  struct airlock_config *c = config_load_with (envp, settings, "the open request", &err);
  assert_null (err);
  assert_non_null (c);
  assert_string_equal (config_string (c, "backend"), "local");
  assert_int_equal (config_int (c, "docker.pids_limit"), 7);
  assert_string_equal (config_origin (c, "docker.pids_limit"),
                       "environment variable AIRLOCK_DOCKER_PIDS_LIMIT");
  assert_int_equal (config_int (c, "jobs.finished_ttl"), 9); /* the client's file */
  assert_int_equal (config_int (c, "exec.timeout"), 60);
  assert_string_equal (config_origin (c, "exec.timeout"), "the open request");
  assert_string_equal (config_string (c, "docker.image"), "alpine");
  assert_string_equal (config_getenv (c, "DOCKER_HOST"), "unix:///x");
  assert_null (config_getenv (c, "AIRLOCK_BACKEND"));
  char *h1 = config_hash (c);
  config_free (c);
  /* A bad request setting names the request; a key given twice too. */
  cJSON_Delete (settings);
  settings = cJSON_Parse ("{\"exec\": {\"timeout\": \"soon\"}}");
  assert_null (config_load_with (envp, settings, "the open request", &err));
  assert_string_equal (err, "the open request: exec.timeout: expected an integer "
                            "between 1 and 86400, got \"soon\"");
  free (err);
  cJSON_Delete (settings);
  settings = cJSON_Parse ("{\"exec.timeout\": 5, \"exec\": {\"timeout\": 6}}");
  assert_null (config_load_with (envp, settings, "the open request", &err));
  assert_non_null (strstr (err, "set more than once"));
  free (err);
  cJSON_Delete (settings);
  /* Other settings, another hash; the same ones, the same. */
  const char *envp2[] = { "AIRLOCK_DOCKER_PIDS_LIMIT=8", NULL };
  c = config_load_with (envp2, NULL, "x", &err);
  char *h2 = config_hash (c);
  assert_string_not_equal (h1, h2);
  assert_int_equal (strlen (h2), 16);
  config_free (c);
  c = config_load_with (envp2, NULL, "x", &err);
  char *h3 = config_hash (c);
  assert_string_equal (h2, h3);
  config_free (c);
  free (h1);
  free (h2);
  free (h3);
}

/* What a client sends, and what the daemon accepts of it. */
static void
test_client_env (void **state)
{
  (void) state;
  setenv ("AIRLOCK_BACKEND", "docker", 1);
  setenv ("AIRLOCK_HELPER", "/x/helper", 1); /* not configuration */
  setenv ("DOCKER_HOST", "unix:///run/d.sock", 1);
  setenv ("MY_TOKEN", "t0k", 1);
  setenv ("AIRLOCK_DOCKER_FORWARD_ENV", "[\"MY_TOKEN\"]", 1);
  cJSON *o = config_client_env (NULL);
  char *text = cJSON_PrintUnformatted (o);
  assert_non_null (strstr (text, "\"AIRLOCK_BACKEND\":\"docker\""));
  assert_non_null (strstr (text, "\"DOCKER_HOST\":\"unix:///run/d.sock\""));
  assert_non_null (strstr (text, "\"MY_TOKEN\":\"t0k\""));
  assert_null (strstr (text, "AIRLOCK_HELPER"));
  free (text);
  char *err = NULL;
  char **envp = config_env_from_json (o, &err);
  assert_null (err);
  assert_non_null (envp);
  config_env_free (envp);
  cJSON_Delete (o);
  static const char *const bad[] = { "{\"AIRLOCK_BAKEND\": \"docker\"}", "{\"A B\": \"x\"}",
                                     "{\"AIRLOCK_BACKEND\": 3}", NULL };
  for (const char *const *b = bad; *b; b++)
    {
      o = cJSON_Parse (*b);
      assert_null (config_env_from_json (o, &err));
      assert_non_null (err);
      free (err);
      cJSON_Delete (o);
    }
  unsetenv ("DOCKER_HOST");
  unsetenv ("MY_TOKEN");
}

static void
test_env_empty_and_unknown_ignored (void **state)
{
  (void) state;
  write_file (user_path, "{ \"backend\": \"ssh\" }");
  setenv ("AIRLOCK_BACKEND", "", 1);         /* empty: as if unset */
  setenv ("AIRLOCK_NO_SUCH_KEY", "x", 1);    /* someone else's */
  setenv ("AIRLOCK_HELPER", "/x/helper", 1); /* the local backend's */
  setenv ("AIRLOCK_DOCKER", "{}", 1);        /* a section, not a key */
  struct airlock_config *c = load_ok ();
  assert_string_equal (config_string (c, "backend"), "ssh");
  assert_string_equal (config_origin (c, "backend"), user_path);
  config_free (c);
}

static void
test_user_file_location (void **state)
{
  (void) state;
  char dir[600], path[700];
  const char *home = getenv ("HOME");
  unsetenv ("AIRLOCK_CONFIG");

  /* $HOME/.config/airlock/config.json */
  snprintf (dir, sizeof dir, "%s/.config", home);
  mkdir (dir, 0700);
  snprintf (dir, sizeof dir, "%s/.config/airlock", home);
  mkdir (dir, 0700);
  snprintf (path, sizeof path, "%s/config.json", dir);
  write_file (path, "{ \"backend\": \"ssh\" }");
  struct airlock_config *c = load_ok ();
  assert_string_equal (config_string (c, "backend"), "ssh");
  assert_string_equal (config_origin (c, "backend"), path);
  config_free (c);

  /* a relative XDG_CONFIG_HOME is ignored, as the XDG spec says */
  setenv ("XDG_CONFIG_HOME", "relative/dir", 1);
  c = load_ok ();
  assert_string_equal (config_origin (c, "backend"), path);
  config_free (c);

  /* $XDG_CONFIG_HOME/airlock/config.json wins over $HOME/.config */
  snprintf (dir, sizeof dir, "%s/xdg", tmp);
  mkdir (dir, 0700);
  setenv ("XDG_CONFIG_HOME", dir, 1);
  snprintf (dir, sizeof dir, "%s/xdg/airlock", tmp);
  mkdir (dir, 0700);
  snprintf (path, sizeof path, "%s/config.json", dir);
  write_file (path, "{ \"backend\": \"daytona\" }");
  c = load_ok ();
  assert_string_equal (config_string (c, "backend"), "daytona");
  assert_string_equal (config_origin (c, "backend"), path);
  config_free (c);

  /* AIRLOCK_CONFIG wins over both */
  write_file (user_path, "{ \"backend\": \"modal\" }");
  setenv ("AIRLOCK_CONFIG", user_path, 1);
  c = load_ok ();
  assert_string_equal (config_string (c, "backend"), "modal");
  assert_string_equal (config_origin (c, "backend"), user_path);
  config_free (c);
}

static void
test_nested_and_flat_keys (void **state)
{
  (void) state;
  write_file (user_path,
              "{ \"docker.image\": \"flat:1\", \"docker\": { \"user\": \"1000\" },"
              "  \"ssh\": { \"port\": 2200 } }");
  struct airlock_config *c = load_ok ();
  assert_string_equal (config_string (c, "docker.image"), "flat:1");
  assert_string_equal (config_string (c, "docker.user"), "1000");
  assert_int_equal (config_int (c, "ssh.port"), 2200);
  config_free (c);
}

static void
test_null_resets_to_default (void **state)
{
  (void) state;
  write_file (sys_path, "{ \"docker\": { \"user\": \"1000\", \"pids_limit\": 9,"
                        "  \"volumes\": [\"v:/data\"] } }");
  write_file (user_path, "{ \"docker\": { \"user\": null, \"pids_limit\": null,"
                         "  \"volumes\": null } }");
  struct airlock_config *c = load_ok ();
  assert_null (config_string (c, "docker.user"));
  assert_string_equal (config_origin (c, "docker.user"), user_path);
  assert_int_equal (config_int (c, "docker.pids_limit"), 256);
  assert_list (config_list (c, "docker.volumes"), (const char *[]){ NULL });
  config_free (c);
}

/* ---- files that cannot be used ---- */

static void
test_malformed_json (void **state)
{
  (void) state;
  char want[1024];
  /* the trailing comma: cJSON points just past the '}' after it */
  write_file (user_path,
              "{\n  \"backend\": \"local\",\n  \"exec\": { \"timeout\": 5, }\n}\n");
  snprintf (want, sizeof want, "%s:3:28: malformed JSON", user_path);
  load_fails (want);

  write_file (user_path, "{ \"backend\": \"local\" }\ngarbage\n");
  snprintf (want, sizeof want, "%s:2:1: malformed JSON", user_path);
  load_fails (want);

  write_file (user_path, "{ \"backend\": 'local' }");
  snprintf (want, sizeof want, "%s:1:14: malformed JSON", user_path);
  load_fails (want);

  /* the system file is named when it is the broken one */
  write_file (sys_path, "{\n\n   \"backend\" \"local\"\n}");
  snprintf (want, sizeof want, "%s:3:14: malformed JSON", sys_path);
  load_fails (want);
}

static void
test_nul_byte (void **state)
{
  (void) state;
  char want[1024];
  int fd = open (user_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  assert_true (fd >= 0);
  assert_int_equal (write (fd, "{}\n {\0}", 7), 7);
  close (fd);
  snprintf (want, sizeof want, "%s:2:3: the file contains a NUL byte", user_path);
  load_fails (want);
}

static void
test_top_level_not_object (void **state)
{
  (void) state;
  user_file_fails ("[1, 2]", "expected a JSON object at the top level, got [1,2]");
  user_file_fails ("\"local\"",
                   "expected a JSON object at the top level, got \"local\"");
}

static void
test_unknown_keys (void **state)
{
  (void) state;
  user_file_fails ("{ \"backnd\": \"local\" }",
                   "backnd: unknown key (did you mean backend?)");
  user_file_fails ("{ \"docker\": { \"imag\": \"x\" } }",
                   "docker.imag: unknown key (did you mean docker.image?)");
  user_file_fails ("{ \"docker.pids-limit\": 5 }",
                   "docker.pids-limit: unknown key (did you mean docker.pids_limit?)");
  user_file_fails ("{ \"nonsense\": 1 }", "nonsense: unknown key");
  user_file_fails ("{ \"dokker\": { \"image\": \"x\" } }", "dokker: unknown key");
  user_file_fails ("{ \"docker\": { \"image\": { \"name\": \"x\" } } }",
                   "docker.image: expected a string, got {\"name\":\"x\"}");
  user_file_fails ("{ \"docker\": 5 }",
                   "docker: expected an object (a section), got 5");
  /* the system file is checked as strictly */
  char want[1024];
  write_file (sys_path, "{ \"sesion\": { \"idle_timeout\": 5 } }");
  snprintf (want, sizeof want, "%s: sesion: unknown key", sys_path);
  load_fails (want);
}

static void
test_key_set_twice (void **state)
{
  (void) state;
  user_file_fails ("{ \"docker\": { \"pull\": true }, \"docker.pull\": false }",
                   "docker.pull: set more than once");
  user_file_fails ("{ \"backend\": \"local\", \"backend\": \"ssh\" }",
                   "backend: set more than once");
}

static void
test_unreadable_files (void **state)
{
  (void) state;
  char p[600], want[1024];

  /* a directory */
  snprintf (p, sizeof p, "%s/dir.json", tmp);
  mkdir (p, 0700);
  setenv ("AIRLOCK_CONFIG", p, 1);
  snprintf (want, sizeof want, "%s: is a directory, not a file", p);
  load_fails (want);

  /* a FIFO: refused at once, not waited on */
  snprintf (p, sizeof p, "%s/fifo.json", tmp);
  assert_int_equal (mkfifo (p, 0600), 0);
  setenv ("AIRLOCK_SYSTEM_CONFIG", p, 1);
  snprintf (want, sizeof want, "%s: not a regular file", p);
  load_fails (want);
  setenv ("AIRLOCK_SYSTEM_CONFIG", sys_path, 1);

  /* a path through a file */
  write_file (user_path, "{}");
  snprintf (p, sizeof p, "%s/config.json", user_path);
  setenv ("AIRLOCK_CONFIG", p, 1);
  snprintf (want, sizeof want, "%s: cannot open: Not a directory", p);
  load_fails (want);

  /* no permission: root reads anything, so only as another user */
  if (geteuid () != 0)
    {
      chmod (user_path, 0);
      setenv ("AIRLOCK_CONFIG", user_path, 1);
      snprintf (want, sizeof want, "%s: cannot open: Permission denied", user_path);
      load_fails (want);
    }
}

static void
test_file_too_large (void **state)
{
  (void) state;
  char want[1024];
  size_t n = 1024 * 1024 + 1;
  char *big = malloc (n + 1);
  assert_non_null (big);
  memset (big, ' ', n);
  big[0] = '{';
  big[n - 1] = '}';
  big[n] = '\0';
  write_file (user_path, big);
  free (big);
  snprintf (want, sizeof want, "%s: larger than 1048576 bytes", user_path);
  load_fails (want);
}

/* ---- values in files, type by type ---- */

static void
test_file_int_errors (void **state)
{
  (void) state;
  const char *range = "expected an integer between 1 and 1000000";
  char want[256];
#define INT_FAILS(json, got)                                                           \
  snprintf (want, sizeof want, "docker.pids_limit: %s, got %s", range, got);           \
  user_file_fails ("{ \"docker\": { \"pids_limit\": " json " } }", want)
  INT_FAILS ("\"many\"", "\"many\"");
  INT_FAILS ("\"12\"", "\"12\"");
  INT_FAILS ("0", "0");
  INT_FAILS ("1000001", "1000001");
  INT_FAILS ("-5", "-5");
  INT_FAILS ("1.5", "1.5");
  INT_FAILS ("true", "true");
  INT_FAILS ("[1]", "[1]");
#undef INT_FAILS
  user_file_fails (
      "{ \"jobs\": { \"finished_ttl\": -1 } }",
      "jobs.finished_ttl: expected an integer between 0 and 2592000, got -1");

  write_file (user_path,
              "{ \"docker\": { \"pids_limit\": 1000000 }, \"ssh.port\": 2.2e3,"
              "  \"jobs\": { \"finished_ttl\": 0 } }");
  struct airlock_config *c = load_ok ();
  assert_int_equal (config_int (c, "docker.pids_limit"), 1000000);
  assert_int_equal (config_int (c, "ssh.port"), 2200);
  assert_int_equal (config_int (c, "jobs.finished_ttl"), 0);
  config_free (c);
}

static void
test_file_enum_errors (void **state)
{
  (void) state;
  user_file_fails ("{ \"backend\": \"lokal\" }",
                   "backend: expected one of local, docker, ssh, singularity, modal, "
                   "daytona, got \"lokal\"");
  user_file_fails ("{ \"backend\": \"Local\" }",
                   "backend: expected one of local, docker, ssh, singularity, modal, "
                   "daytona, got \"Local\"");
  user_file_fails ("{ \"backend\": 1 }",
                   "backend: expected one of local, docker, ssh, singularity, modal, "
                   "daytona, got 1");
  user_file_fails ("{ \"modal\": { \"mode\": \"cheap\" } }",
                   "modal.mode: expected one of auto, direct, managed, got \"cheap\"");
  user_file_fails (
      "{ \"local\": { \"network\": \"bridge\" } }",
      "local.network: expected one of loopback, none, host, allowlist, got \"bridge\"");
}

static void
test_file_bool_errors (void **state)
{
  (void) state;
  user_file_fails ("{ \"docker\": { \"pull\": \"yes\" } }",
                   "docker.pull: expected true or false, got \"yes\"");
  user_file_fails ("{ \"docker\": { \"network\": 1 } }",
                   "docker.network: expected true or false, got 1");
  write_file (user_path,
              "{ \"docker\": { \"pull\": false, \"allow_docker_socket\": true } }");
  struct airlock_config *c = load_ok ();
  assert_false (config_bool (c, "docker.pull"));
  assert_true (config_bool (c, "docker.allow_docker_socket"));
  config_free (c);
}

static void
test_file_string_errors (void **state)
{
  (void) state;
  user_file_fails ("{ \"docker\": { \"image\": 5 } }",
                   "docker.image: expected a string, got 5");
  user_file_fails ("{ \"docker\": { \"image\": [\"a\"] } }",
                   "docker.image: expected a string, got [\"a\"]");
  user_file_fails ("{ \"local\": { \"memory\": \"lots\" } }",
                   "local.memory: expected a size of at least 16M, like 512M or 2G, got \"lots\"");
  user_file_fails ("{ \"local\": { \"memory\": \"0\" } }",
                   "local.memory: expected a size of at least 16M, like 512M or 2G, got \"0\"");
  user_file_fails ("{ \"local\": { \"memory\": \"2GB\" } }",
                   "local.memory: expected a size of at least 16M, like 512M or 2G, got \"2GB\"");
  user_file_fails (
      "{ \"docker\": { \"memory\": \"99999999999T\" } }",
      "docker.memory: expected a size of at least 16M, like 512M or 2G, got \"99999999999T\"");
  user_file_fails ("{ \"docker\": { \"memory\": 512 } }",
                   "docker.memory: expected a string, got 512");
  user_file_fails ("{ \"docker\": { \"cpus\": \"0.0\" } }",
                   "docker.cpus: expected a number of CPUs like 0.5 or 2, got \"0.0\"");
  user_file_fails ("{ \"docker\": { \"cpus\": \"1.\" } }",
                   "docker.cpus: expected a number of CPUs like 0.5 or 2, got \"1.\"");
  user_file_fails ("{ \"local\": { \"rootfs\": \"images/busybox\" } }",
                   "local.rootfs: expected an absolute path, got \"images/busybox\"");
  user_file_fails (
      "{ \"daytona\": { \"api_url\": \"ftp://x\" } }",
      "daytona.api_url: expected an http:// or https:// URL, got \"ftp://x\"");
  user_file_fails ("{ \"daytona\": { \"api_key_env\": \"sk-12345\" } }",
                   "daytona.api_key_env: expected a variable name like FOO_BAR, "
                   "got \"sk-12345\"");
  /* an option where ssh expects a host would be an injection */
  user_file_fails (
      "{ \"ssh\": { \"host\": \"-oProxyCommand=sh\" } }",
      "ssh.host: expected a non-empty name without spaces, not starting with -, "
      "got \"-oProxyCommand=sh\"");
  user_file_fails (
      "{ \"ssh\": { \"user\": \"a b\" } }",
      "ssh.user: expected a non-empty name without spaces, not starting with -, "
      "got \"a b\"");
  user_file_fails ("{ \"singularity\": { \"image\": \"\" } }",
                   "singularity.image: expected a non-empty name without spaces, not "
                   "starting with -, got \"\"");
  /* control characters are shown escaped */
  user_file_fails (
      "{ \"ssh\": { \"host\": \"a\\u001b[2Jb\" } }",
      "ssh.host: expected a non-empty name without spaces, not starting with -, "
      "got \"a\\u001b[2Jb\"");
}

static void
test_string_values (void **state)
{
  (void) state;
  write_file (user_path,
              "{ \"local\": { \"memory\": \"512m\", \"rootfs\": \"/srv/root\" },"
              "  \"docker\": { \"memory\": \"2G\", \"cpus\": \"0.5\" },"
              "  \"ssh\": { \"key\": \"~/.ssh/id_ed25519\", \"host\": \"h.example\" },"
              "  \"daytona\": { \"api_url\": \"http://localhost:3000/api\" } }");
  struct airlock_config *c = load_ok ();
  char want[600];
  assert_string_equal (config_string (c, "local.memory"), "512M"); /* normalized */
  assert_string_equal (config_string (c, "local.rootfs"), "/srv/root");
  assert_string_equal (config_string (c, "docker.memory"), "2G");
  assert_string_equal (config_string (c, "docker.cpus"), "0.5");
  snprintf (want, sizeof want, "%s/.ssh/id_ed25519", getenv ("HOME"));
  assert_string_equal (config_string (c, "ssh.key"), want);
  assert_string_equal (config_string (c, "ssh.host"), "h.example");
  assert_string_equal (config_string (c, "daytona.api_url"),
                       "http://localhost:3000/api");
  config_free (c);
}

static void
test_long_value_shortened (void **state)
{
  (void) state;
  char json[512], want[512];
  char a[201];
  memset (a, 'a', 200);
  a[200] = '\0';
  snprintf (json, sizeof json, "{ \"backend\": \"%s\" }", a);
  /* 57 characters of the quoted value, then "..." */
  snprintf (want, sizeof want,
            "backend: expected one of local, docker, ssh, singularity, modal, daytona, "
            "got \"%.56s...",
            a);
  user_file_fails (json, want);
}

/* ---- lists and maps ---- */

static void
test_file_lists (void **state)
{
  (void) state;
  write_file (sys_path,
              "{ \"local\": { \"binds\": [\"/srv/a\", \"/srv/b:/b\"] },"
              "  \"docker\": { \"cap_add\": [\"net_admin\", \"SYS_PTRACE\"] } }");
  write_file (user_path,
              "{ \"local\": { \"binds\": [\"/srv/c\"],"
              "    \"ro_binds\": [\"~/data:/data\", \"~\"] },"
              "  \"docker\": { \"volumes\": [\"/h:/c:ro\", \"named:/data\"],"
              "    \"forward_env\": [\"GITHUB_TOKEN\"] },"
              "  \"singularity\": { \"binds\": [\"/scratch:/scratch:rw\"] } }");
  struct airlock_config *c = load_ok ();
  const char *home = getenv ("HOME");
  char data[600];
  snprintf (data, sizeof data, "%s/data:/data", home);
  /* a higher source replaces a list, it does not add to it */
  assert_list (config_list (c, "local.binds"), (const char *[]){ "/srv/c", NULL });
  assert_string_equal (config_origin (c, "local.binds"), user_path);
  assert_list (config_list (c, "local.ro_binds"), (const char *[]){ data, home, NULL });
  assert_list (config_list (c, "docker.cap_add"),
               (const char *[]){ "NET_ADMIN", "SYS_PTRACE", NULL });
  assert_string_equal (config_origin (c, "docker.cap_add"), sys_path);
  assert_list (config_list (c, "docker.volumes"),
               (const char *[]){ "/h:/c:ro", "named:/data", NULL });
  assert_list (config_list (c, "docker.forward_env"),
               (const char *[]){ "GITHUB_TOKEN", NULL });
  assert_list (config_list (c, "singularity.binds"),
               (const char *[]){ "/scratch:/scratch:rw", NULL });
  config_free (c);

  write_file (user_path, "{ \"local\": { \"binds\": [] } }");
  c = load_ok ();
  assert_list (config_list (c, "local.binds"), (const char *[]){ NULL });
  config_free (c);
}

static void
test_file_list_errors (void **state)
{
  (void) state;
  user_file_fails ("{ \"local\": { \"binds\": \"/srv\" } }",
                   "local.binds: expected a list of strings, got \"/srv\"");
  user_file_fails ("{ \"local\": { \"binds\": [\"/a\", 1] } }",
                   "local.binds: expected a list of strings, got [\"/a\",1]");
  user_file_fails ("{ \"local\": { \"binds\": [\"/a\", \"rel\"] } }",
                   "local.binds: item 2: expected SOURCE[:DEST] with absolute paths, "
                   "got \"rel\"");
  user_file_fails (
      "{ \"local\": { \"ro_binds\": [\"/a:b\"] } }",
      "local.ro_binds: item 1: expected SOURCE[:DEST] with absolute paths, "
      "got \"/a:b\"");
  user_file_fails ("{ \"docker\": { \"volumes\": [\"/h:/c\", \"justaname\"] } }",
                   "docker.volumes: item 2: expected SOURCE:TARGET[:OPTIONS] with an "
                   "absolute TARGET, got \"justaname\"");
  user_file_fails ("{ \"docker\": { \"forward_env\": [\"A-B\"] } }",
                   "docker.forward_env: item 1: expected a variable name like FOO_BAR, "
                   "got \"A-B\"");
  user_file_fails ("{ \"docker\": { \"cap_add\": [\"\"] } }",
                   "docker.cap_add: item 1: expected a capability name like NET_ADMIN, "
                   "got \"\"");
  user_file_fails ("{ \"singularity\": { \"binds\": [\"data:/data\"] } }",
                   "singularity.binds: item 1: expected SOURCE[:DEST[:OPTIONS]] with "
                   "absolute paths, got \"data:/data\"");
  /* the message quotes what was written, not its expansion */
  user_file_fails ("{ \"local\": { \"binds\": [\"~/a:rel\"] } }",
                   "local.binds: item 1: expected SOURCE[:DEST] with absolute paths, "
                   "got \"~/a:rel\"");
}

static void
test_too_many_items (void **state)
{
  (void) state;
  char *list = NULL, *map = NULL;
  size_t ls = 0, ms = 0;
  FILE *l = open_memstream (&list, &ls), *m = open_memstream (&map, &ms);
  for (int i = 0; i < 1025; i++)
    {
      fprintf (l, "%s\"/p%d\"", i ? "," : "", i);
      fprintf (m, "%s\"V%d\":\"\"", i ? "," : "", i);
    }
  fclose (l);
  fclose (m);
  char *json;
  assert_true (asprintf (&json, "{ \"local\": { \"binds\": [%s] } }", list) > 0);
  user_file_fails (json, "local.binds: more than 1024 items");
  free (json);
  assert_true (asprintf (&json, "{ \"docker\": { \"env\": {%s} } }", map) > 0);
  user_file_fails (json, "docker.env: more than 1024 items");
  free (json);
  free (list);
  free (map);
}

static void
test_file_maps (void **state)
{
  (void) state;
  write_file (sys_path, "{ \"docker\": { \"env\": { \"OLD\": \"1\" } } }");
  write_file (user_path,
              "{ \"docker\": { \"env\": { \"LANG\": \"C.UTF-8\", \"X\": \"a=b\","
              "  \"EMPTY\": \"\" } } }");
  struct airlock_config *c = load_ok ();
  assert_list (config_list (c, "docker.env"),
               (const char *[]){ "LANG=C.UTF-8", "X=a=b", "EMPTY=", NULL });
  assert_string_equal (config_origin (c, "docker.env"), user_path);
  config_free (c);
}

static void
test_file_map_errors (void **state)
{
  (void) state;
  user_file_fails ("{ \"docker\": { \"env\": [\"A=1\"] } }",
                   "docker.env: expected an object with string values, got [\"A=1\"]");
  user_file_fails ("{ \"docker\": { \"env\": { \"A\": 1 } } }",
                   "docker.env: expected an object with string values, got {\"A\":1}");
  user_file_fails ("{ \"docker\": { \"env\": { \"1A\": \"x\" } } }",
                   "docker.env: key \"1A\": expected a variable name like FOO_BAR");
  user_file_fails ("{ \"docker\": { \"env\": { \"A=B\": \"x\" } } }",
                   "docker.env: key \"A=B\": expected a variable name like FOO_BAR");
  user_file_fails ("{ \"docker\": { \"env\": { \"A\": \"1\", \"A\": \"2\" } } }",
                   "docker.env: key \"A\": set more than once");
}

/* ---- environment variables ---- */

/* Apptainer is Singularity's new name: either selects the backend, which
 * is called singularity from then on. */
static void
test_backend_alias (void **state)
{
  (void) state;
  setenv ("AIRLOCK_BACKEND", "apptainer", 1);
  struct airlock_config *c = load_ok ();
  assert_string_equal (config_string (c, "backend"), "singularity");
  config_free (c);
  unsetenv ("AIRLOCK_BACKEND");
  write_file (user_path, "{ \"backend\": \"apptainer\" }");
  c = load_ok ();
  assert_string_equal (config_string (c, "backend"), "singularity");
  config_free (c);
}

static void
test_env_errors (void **state)
{
  (void) state;
  env_fails (
      "AIRLOCK_BACKEND", "lokal",
      "expected one of local, docker, ssh, singularity, modal, daytona, got \"lokal\"");
  env_fails ("AIRLOCK_EXEC_TIMEOUT", "abc",
             "expected an integer between 1 and 86400, got \"abc\"");
  env_fails ("AIRLOCK_EXEC_TIMEOUT", "0",
             "expected an integer between 1 and 86400, got \"0\"");
  env_fails ("AIRLOCK_EXEC_TIMEOUT", " 5",
             "expected an integer between 1 and 86400, got \" 5\"");
  env_fails ("AIRLOCK_EXEC_TIMEOUT", "5s",
             "expected an integer between 1 and 86400, got \"5s\"");
  env_fails ("AIRLOCK_EXEC_TIMEOUT", "-",
             "expected an integer between 1 and 86400, got \"-\"");
  env_fails (
      "AIRLOCK_EXEC_TIMEOUT", "99999999999999999999999",
      "expected an integer between 1 and 86400, got \"99999999999999999999999\"");
  env_fails ("AIRLOCK_DOCKER_PULL", "maybe",
             "expected true or false (or yes, no, 1, 0), got \"maybe\"");
  env_fails ("AIRLOCK_LOCAL_MEMORY", "big",
             "expected a size of at least 16M, like 512M or 2G, got \"big\"");
  env_fails ("AIRLOCK_DOCKER_VOLUMES", "[a",
             "expected a JSON list of strings, got \"[a\"");
  env_fails ("AIRLOCK_DOCKER_VOLUMES", "/h:/c",
             "expected a JSON list of strings, got \"/h:/c\"");
  env_fails ("AIRLOCK_DOCKER_VOLUMES", "{\"a\":\"b\"}",
             "expected a list of strings, got {\"a\":\"b\"}");
  env_fails (
      "AIRLOCK_DOCKER_VOLUMES", "[\"rel\"]",
      "item 1: expected SOURCE:TARGET[:OPTIONS] with an absolute TARGET, got \"rel\"");
  env_fails ("AIRLOCK_DOCKER_ENV", "A=1",
             "expected a JSON object with string values, got \"A=1\"");
  env_fails ("AIRLOCK_DOCKER_ENV", "[\"A=1\"]",
             "expected an object with string values, got [\"A=1\"]");
  env_fails ("AIRLOCK_DOCKER_ENV", "{\"A B\":\"1\"}",
             "key \"A B\": expected a variable name like FOO_BAR");
  /* the environment is read after both files, which are fine here */
  write_file (user_path, "{ \"backend\": \"ssh\" }");
  env_fails ("AIRLOCK_SSH_PORT", "0",
             "expected an integer between 1 and 65535, got \"0\"");
}

static void
test_env_values (void **state)
{
  (void) state;
  setenv ("AIRLOCK_DOCKER_VOLUMES", "[\"/a:/b\", \"v:/data\"]", 1);
  setenv ("AIRLOCK_DOCKER_ENV", "{\"A\": \"1\", \"B\": \"x=y\"}", 1);
  setenv ("AIRLOCK_LOCAL_BINDS", "[]", 1);
  setenv ("AIRLOCK_SSH_KEY", "~/k", 1);
  setenv ("AIRLOCK_LOCAL_MEMORY", "1g", 1);
  setenv ("AIRLOCK_JOBS_FINISHED_TTL", "0", 1);
  setenv ("AIRLOCK_SESSION_IDLE_TIMEOUT", "600", 1);
  setenv ("AIRLOCK_DOCKER_IMAGE", "alpine:3", 1);
  write_file (user_path, "{ \"local\": { \"binds\": [\"/srv\"] } }");
  struct airlock_config *c = load_ok ();
  char want[600];
  assert_list (config_list (c, "docker.volumes"),
               (const char *[]){ "/a:/b", "v:/data", NULL });
  assert_string_equal (config_origin (c, "docker.volumes"),
                       "environment variable AIRLOCK_DOCKER_VOLUMES");
  assert_list (config_list (c, "docker.env"), (const char *[]){ "A=1", "B=x=y", NULL });
  assert_list (config_list (c, "local.binds"), (const char *[]){ NULL });
  snprintf (want, sizeof want, "%s/k", getenv ("HOME"));
  assert_string_equal (config_string (c, "ssh.key"), want);
  assert_string_equal (config_string (c, "local.memory"), "1G");
  assert_int_equal (config_int (c, "jobs.finished_ttl"), 0);
  assert_int_equal (config_int (c, "session.idle_timeout"), 600);
  assert_string_equal (config_string (c, "docker.image"), "alpine:3");
  config_free (c);

  /* the spellings of a boolean */
  static const struct
  {
    const char *s;
    bool b;
  } bools[] = { { "true", true },   { "TRUE", true }, { "yes", true }, { "1", true },
                { "false", false }, { "No", false },  { "0", false } };
  for (size_t i = 0; i < sizeof bools / sizeof bools[0]; i++)
    {
      setenv ("AIRLOCK_DOCKER_PULL", bools[i].s, 1);
      c = load_ok ();
      assert_int_equal (config_bool (c, "docker.pull"), bools[i].b);
      config_free (c);
    }
}

/* ---- every key ---- */

/* Every key of the schema, found through config_to_json. */
static void
collect_keys (const cJSON *obj, const char *prefix, char **out, size_t *n)
{
  const cJSON *item;
  cJSON_ArrayForEach (item, obj)
    {
      char *key;
      if (*prefix)
        assert_true (asprintf (&key, "%s.%s", prefix, item->string) > 0);
      else
        key = strdup (item->string);
      /* sections are objects; docker.env is the only object-valued key */
      if (cJSON_IsObject (item) && strcmp (key, "docker.env"))
        {
          collect_keys (item, key, out, n);
          free (key);
        }
      else
        {
          assert_true (*n < 200);
          out[(*n)++] = key;
        }
    }
}

static void
derive_env_name (const char *key, char *buf, size_t size)
{
  snprintf (buf, size, "AIRLOCK_%s", key);
  for (char *p = buf; *p; p++)
    *p = (*p == '.' || *p == '-') ? '_' : (char) toupper ((unsigned char) *p);
}

static int
cmp_str (const void *a, const void *b)
{
  return strcmp (*(char *const *) a, *(char *const *) b);
}

/* A valid setting for each key that has no default to reuse. */
static const char *
sample (const char *key)
{
  static const char *const samples[][2] = {
    { "local.memory", "1G" },
    { "local.rootfs", "/" },
    { "docker.memory", "1G" },
    { "docker.cpus", "2" },
    { "docker.user", "1000" },
    { "ssh.host", "h" },
    { "ssh.user", "u" },
    { "ssh.key", "/k" },
    { "ssh.workdir", "/w" },
    { "ssh.known_hosts", "/kh" },
    { "ssh.config", "/c" },
    { "singularity.executable", "a" },
    { "singularity.memory", "1G" },
    { "singularity.cpus", "2" },
    { "singularity.cache_dir", "/sif" },
    { "daytona.target", "us" },
    { "daytona.snapshot", "snap-1" },
    { "daytona.memory", "2G" },
    { "daytona.disk", "10G" },
    { "daytona.workdir", "/home/daytona" },
    { "modal.memory", "2G" },
    { "modal.workdir", "/root" },
  };
  for (size_t i = 0; i < sizeof samples / sizeof samples[0]; i++)
    if (!strcmp (samples[i][0], key))
      return samples[i][1];
  return NULL;
}

static void
test_every_key_reads_its_env_var (void **state)
{
  (void) state;
  struct airlock_config *c = load_ok ();
  char *json = config_to_json (c);
  cJSON *root = cJSON_Parse (json);
  assert_non_null (root);
  char *keys[200];
  size_t n = 0;
  collect_keys (root, "", keys, &n);
  assert_true (n >= 40);

  char *names[200];
  for (size_t i = 0; i < n; i++)
    {
      char name[128], value[256];
      derive_env_name (keys[i], name, sizeof name);
      names[i] = strdup (name);
      /* a value of the right type: the default, else a sample */
      const cJSON *j = root;
      char *copy = strdup (keys[i]), *save, *tok;
      for (tok = strtok_r (copy, ".", &save); tok; tok = strtok_r (NULL, ".", &save))
        j = cJSON_GetObjectItemCaseSensitive (j, tok);
      free (copy);
      assert_non_null (j);
      if (cJSON_IsString (j))
        snprintf (value, sizeof value, "%s", j->valuestring);
      else if (cJSON_IsNull (j))
        {
          const char *s = sample (keys[i]);
          if (!s)
            fail_msg ("no sample value for %s", keys[i]);
          snprintf (value, sizeof value, "%s", s);
        }
      else
        {
          char *p = cJSON_PrintUnformatted (j);
          snprintf (value, sizeof value, "%s", p);
          free (p);
        }
      setenv (name, value, 1);
      struct airlock_config *e = load_ok ();
      char want[200];
      snprintf (want, sizeof want, "environment variable %s", name);
      assert_string_equal (config_origin (e, keys[i]), want);
      config_free (e);
      unsetenv (name);
    }

  /* no two keys share a variable, none takes one used otherwise */
  qsort (names, n, sizeof *names, cmp_str);
  for (size_t i = 0; i < n; i++)
    {
      if (i > 0 && !strcmp (names[i - 1], names[i]))
        fail_msg ("two keys read %s", names[i]);
      assert_string_not_equal (names[i], "AIRLOCK_CONFIG");
      assert_string_not_equal (names[i], "AIRLOCK_SYSTEM_CONFIG");
      assert_string_not_equal (names[i], "AIRLOCK_HELPER");
    }
  for (size_t i = 0; i < n; i++)
    free (keys[i]), free (names[i]);
  cJSON_Delete (root);
  free (json);
  config_free (c);
}

/* ---- output ---- */

static void
test_to_json (void **state)
{
  (void) state;
  write_file (user_path,
              "{ \"backend\": \"docker\","
              "  \"docker\": { \"pids_limit\": 64, \"env\": { \"TOKEN\": \"s3cret\" },"
              "    \"volumes\": [\"/h:/c\"], \"network\": false } }");
  struct airlock_config *c = load_ok ();
  char *json = config_to_json (c);
  assert_null (strstr (json, "s3cret"));
  cJSON *root = cJSON_Parse (json);
  assert_non_null (root);
  assert_string_equal (cJSON_GetObjectItem (root, "backend")->valuestring, "docker");
  cJSON *docker = cJSON_GetObjectItem (root, "docker");
  assert_non_null (docker);
  assert_int_equal (cJSON_GetObjectItem (docker, "pids_limit")->valuedouble, 64);
  assert_true (cJSON_IsFalse (cJSON_GetObjectItem (docker, "network")));
  assert_string_equal (
      cJSON_GetObjectItem (cJSON_GetObjectItem (docker, "env"), "TOKEN")->valuestring,
      "<hidden>");
  assert_true (cJSON_IsNull (cJSON_GetObjectItem (docker, "user")));
  assert_string_equal (
      cJSON_GetArrayItem (cJSON_GetObjectItem (docker, "volumes"), 0)->valuestring,
      "/h:/c");
  cJSON *ssh = cJSON_GetObjectItem (root, "ssh");
  assert_int_equal (cJSON_GetObjectItem (ssh, "port")->valuedouble, 22);
  cJSON_Delete (root);
  free (json);
  config_free (c);
}

/* Read back as a config file, the output gives the same config. */
static void
test_to_json_round_trip (void **state)
{
  (void) state;
  write_file (sys_path,
              "{ \"backend\": \"ssh\", \"ssh\": { \"host\": \"h\", \"port\": 2022 },"
              "  \"local\": { \"ro_binds\": [\"/a\", \"/b:/c\"] },"
              "  \"modal\": { \"mode\": \"direct\" } }");
  setenv ("AIRLOCK_DOCKER_CAP_ADD", "[\"CHOWN\"]", 1);
  struct airlock_config *c = load_ok ();
  char *first = config_to_json (c);
  config_free (c);

  write_file (sys_path, first);
  unsetenv ("AIRLOCK_DOCKER_CAP_ADD");
  c = load_ok ();
  char *second = config_to_json (c);
  assert_string_equal (first, second);
  assert_string_equal (config_origin (c, "docker.cap_add"), sys_path);
  free (first);
  free (second);
  config_free (c);
}

/* ---- misuse of the getters ---- */

/* Runs misuse() in a child; it must abort, saying `want` on stderr. */
static void
expect_abort (void (*misuse) (const struct airlock_config *), const char *want)
{
  struct airlock_config *c = load_ok ();
  int fds[2];
  assert_int_equal (pipe (fds), 0);
  fflush (NULL);
  pid_t pid = fork ();
  assert_true (pid >= 0);
  if (pid == 0)
    {
      dup2 (fds[1], 2);
      misuse (c);
      _exit (0);
    }
  close (fds[1]);
  char buf[512];
  ssize_t n, len = 0;
  while ((n = read (fds[0], buf + len, sizeof buf - 1 - (size_t) len)) > 0)
    len += n;
  buf[len > 0 ? len : 0] = '\0';
  close (fds[0]);
  int status;
  assert_int_equal (waitpid (pid, &status, 0), pid);
  assert_true (WIFSIGNALED (status));
  assert_int_equal (WTERMSIG (status), SIGABRT);
  if (!strstr (buf, want))
    fail_msg ("stderr \"%s\" lacks \"%s\"", buf, want);
  config_free (c);
}

static void
misuse_unknown (const struct airlock_config *c)
{
  config_string (c, "docker.imag");
}
static void
misuse_int_as_string (const struct airlock_config *c)
{
  config_string (c, "exec.timeout");
}
static void
misuse_enum_as_int (const struct airlock_config *c)
{
  config_int (c, "backend");
}
static void
misuse_list_as_bool (const struct airlock_config *c)
{
  config_bool (c, "local.binds");
}
static void
misuse_string_as_list (const struct airlock_config *c)
{
  config_list (c, "docker.image");
}
static void
misuse_origin_unknown (const struct airlock_config *c)
{
  config_origin (c, "docker");
}

static void
test_getter_misuse_aborts (void **state)
{
  (void) state;
  expect_abort (misuse_unknown, "config_string: no configuration key \"docker.imag\"");
  expect_abort (misuse_int_as_string,
                "config_string: configuration key \"exec.timeout\" is of type integer");
  expect_abort (misuse_enum_as_int,
                "config_int: configuration key \"backend\" is of type enum");
  expect_abort (misuse_list_as_bool,
                "config_bool: configuration key \"local.binds\" is of type list");
  expect_abort (misuse_string_as_list,
                "config_list: configuration key \"docker.image\" is of type string");
  expect_abort (misuse_origin_unknown,
                "config_origin: no configuration key \"docker\"");
}

/* ---- documentation ---- */

static void
test_doc_in_sync (void **state)
{
  (void) state;
  char *gen = config_doc_markdown ();
  assert_non_null (strstr (gen,
                           "| `docker.pids_limit` | integer, 1 to 1000000 | `256` | "
                           "`AIRLOCK_DOCKER_PIDS_LIMIT` |"));
  FILE *f = doc_path ? fopen (doc_path, "r") : NULL;
  if (!f)
    {
      free (gen);
      fail_msg ("cannot read %s (%s): run from the source tree or set "
                "AIRLOCK_DOC",
                doc_path ? doc_path : "docs/config.md", strerror (errno));
    }
  char *doc = NULL;
  size_t size = 0;
  ssize_t len = getdelim (&doc, &size, '\0', f);
  fclose (f);
  bool in_sync = len > 0 && strstr (doc, gen);
  free (doc);
  free (gen);
  if (!in_sync)
    fail_msg ("%s is out of date: regenerate its key reference with "
              "`test_config --dump-doc`",
              doc_path);
}

/* docs/config.md: AIRLOCK_DOC, else the source tree, found from the
 * current directory, from where this file was compiled, or above the test
 * binary (make check runs it from a temporary directory).  Copied: the
 * environment is cleared for every test. */
static char *
find_doc (void)
{
  const char *env = getenv ("AIRLOCK_DOC");
  if (env)
    return strdup (env);
  char *path = NULL, dir[4096];
  const char *slash = strrchr (__FILE__, '/');
  if (slash
      && asprintf (&path, "%.*s/../../docs/config.md", (int) (slash - __FILE__),
                   __FILE__)
             > 0
      && access (path, R_OK) == 0)
    return path;
  free (path);
  ssize_t n = readlink ("/proc/self/exe", dir, sizeof dir - 1);
  dir[n > 0 ? n : 0] = '\0';
  for (char *end; (end = strrchr (dir, '/')) && end != dir;)
    {
      *end = '\0';
      if (asprintf (&path, "%s/docs/config.md", dir) < 0)
        return NULL;
      if (access (path, R_OK) == 0)
        return path;
      free (path);
    }
  return strdup ("docs/config.md");
}

int
main (int argc, char **argv)
{
  if (argc == 2 && !strcmp (argv[1], "--dump-doc"))
    {
      char *doc = config_doc_markdown ();
      fputs (doc, stdout);
      free (doc);
      return 0;
    }
  doc_path = find_doc ();

#define T(f) cmocka_unit_test_setup_teardown (f, setup, teardown)
  const struct CMUnitTest tests[] = {
    T (test_defaults),
    T (test_missing_files),
    T (test_empty_file_is_no_settings),
    T (test_system_then_user),
    T (test_env_over_files),
    T (test_load_with_client_env_and_settings),
    T (test_client_env),
    T (test_env_empty_and_unknown_ignored),
    T (test_user_file_location),
    T (test_nested_and_flat_keys),
    T (test_null_resets_to_default),
    T (test_malformed_json),
    T (test_nul_byte),
    T (test_top_level_not_object),
    T (test_unknown_keys),
    T (test_key_set_twice),
    T (test_unreadable_files),
    T (test_file_too_large),
    T (test_file_int_errors),
    T (test_file_enum_errors),
    T (test_file_bool_errors),
    T (test_file_string_errors),
    T (test_string_values),
    T (test_long_value_shortened),
    T (test_file_lists),
    T (test_file_list_errors),
    T (test_too_many_items),
    T (test_file_maps),
    T (test_file_map_errors),
    T (test_backend_alias),
    T (test_env_errors),
    T (test_env_values),
    T (test_every_key_reads_its_env_var),
    T (test_to_json),
    T (test_to_json_round_trip),
    T (test_getter_misuse_aborts),
    T (test_doc_in_sync),
  };
#undef T
  return cmocka_run_group_tests_name ("config", tests, NULL, NULL);
}
