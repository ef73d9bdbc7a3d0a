/* SPDX-License-Identifier: MIT */
/* Unit tests for secret redaction (policy/redact.c) and the audit log
 * (policy/audit_log.c).
 *
 * Redaction: a table of commands with the exact text expected back,
 * including ordinary commands that must come back unchanged.  Audit log:
 * each line is read back with cJSON; the file's safety (modes, a symlink
 * or FIFO planted at its name, a foreign directory), rotation, write
 * errors (EFBIG through RLIMIT_FSIZE; ENOSPC on a tiny tmpfs in a private
 * mount namespace when the test may mount one, else skipped and said so;
 * EACCES as an unprivileged uid), and concurrent writers in several
 * processes and threads. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <grp.h>
#include <pthread.h>
#include <pwd.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "audit_log.h"
#include "redact.h"

#define N_ELEMENTS(a) (sizeof (a) / sizeof ((a)[0]))
#define R REDACTED
#define SKIPPED 77

/* ---- redaction ---- */

struct redact_case
{
  const char *in, *out;   /* out NULL: unchanged */
};

#define GHP "ghp_" "aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789"
#define JWT "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0." \
            "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"

static const struct redact_case redact_cases[] = {
  /* ordinary commands stay as they are */
  { "ls -la /tmp", NULL },
  { "git commit -m 'fix token handling in the parser'", NULL },
  { "export TOKENIZERS_PARALLELISM=false", NULL },
  { "grep -rn password src/ | sort -u", NULL },
  { "docker run -u 1000:1000 -p 8080:80 nginx", NULL },
  { "mysql -u root -p mydb", NULL },
  { "echo \"$GITHUB_TOKEN\" | gh auth login --with-token", NULL },
  { "curl https://example.com:8443/path?q=1&page=2", NULL },
  { "ps -u root -o pid,cmd", NULL },
  { "make -j4 KEYBOARD=us BYPASS=0", NULL },
  { "cd ~/work/task-abcdefghijklmnopqrstuvwxyz && ls", NULL },
  { "pip install scikit-learn==1.3.0 mask-rcnn", NULL },
  { "ssh -p 2222 user@host.example.com uptime", NULL },
  { "docker login --password-stdin -u me registry.example.com", NULL },
  { "openssl rand -hex 32", NULL },
  { "tool --password \"$DB_PASS\" --token $TOKEN", NULL },
  { "export GITHUB_TOKEN=$(cat ~/.token)", NULL },
  { "", NULL },
  /* URLs */
  { "git clone https://user:hunter2@github.com/x/y.git",
    "git clone https://user:" R "@github.com/x/y.git" },
  { "psql postgres://app:p@ss:w0rd@db:5432/app",
    "psql postgres://app:" R "@db:5432/app" },
  { "curl 'https://api.example.com/v1?access_token=abc123&x=1'",
    "curl 'https://api.example.com/v1?access_token=" R "&x=1'" },
  /* headers */
  { "curl -H 'Authorization: Bearer abc.def-123' https://x",
    "curl -H 'Authorization: Bearer " R "' https://x" },
  { "curl -H \"authorization: basic dXNlcjpwYXNz\" https://x",
    "curl -H \"authorization: basic " R "\" https://x" },
  { "curl -H 'X-Api-Key: k3y' -H 'PRIVATE-TOKEN: t0k' x",
    "curl -H 'X-Api-Key: " R "' -H 'PRIVATE-TOKEN: " R "' x" },
  { "curl -u admin:s3cret https://x", "curl -u admin:" R " https://x" },
  { "curl --user 'me:pa ss' https://x", "curl --user 'me:" R "' https://x" },
  /* options */
  { "tool --password=hunter2 -v", "tool --password=" R " -v" },
  { "tool --password hunter2 -v", "tool --password " R " -v" },
  { "tool --token abc123 --api-key=xyz --api_key 'q w'",
    "tool --token " R " --api-key=" R " --api_key '" R "'" },
  { "mysql -uroot -phunter2 db", "mysql -uroot -p" R " db" },
  { "mysqldump -h db -p'se cret' app > a.sql",
    "mysqldump -h db -p'" R "' app > a.sql" },
  { "sshpass -p 'pw1' ssh host", "sshpass -p '" R "' ssh host" },
  { "docker login -u me -p pw2 registry.io",
    "docker login -u me -p " R " registry.io" },
  { "keytool -list -storepass changeit", "keytool -list -storepass " R },
  /* assignments */
  { "GITHUB_TOKEN=abc123 gh pr list", "GITHUB_TOKEN=" R " gh pr list" },
  { "export AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG",
    "export AWS_SECRET_ACCESS_KEY=" R },
  { "DB_PASSWORD='p a s s' ./run", "DB_PASSWORD='" R "' ./run" },
  { "env API_KEY=\"k1\" MYSQL_PWD=x SECRET_KEY_BASE=y rails s",
    "env API_KEY=\"" R "\" MYSQL_PWD=" R " SECRET_KEY_BASE=" R " rails s" },
  { "docker run -e OPENAI_API_KEY=abc -e PATH=/bin img",
    "docker run -e OPENAI_API_KEY=" R " -e PATH=/bin img" },
  { "curl -d 'user=u&password=pw3' https://x",
    "curl -d 'user=u&password=" R "' https://x" },
  /* JSON, YAML */
  { "curl -d '{\"username\":\"u\",\"password\":\"pw4\"}' https://x",
    "curl -d '{\"username\":\"u\",\"password\":\"" R "\"}' https://x" },
  { "curl -d \"{\\\"api_key\\\": \\\"k2\\\"}\" x",
    "curl -d \"{\\\"api_key\\\": \\\"" R "\\\"}\" x" },
  { "cat > c.yml <<EOF\nuser: me\npassword: hunter2\nEOF",
    "cat > c.yml <<EOF\nuser: me\npassword: " R "\nEOF" },
  /* token shapes */
  { "echo " GHP, "echo " R },
  { "git remote add o https://" GHP "@github.com/x",
    "git remote add o https://" R "@github.com/x" },
  { "X=github_pat_11ABCDEFG0123456789_abcdefghijklmnop y",
    "X=" R " y" },
  { "llm -k sk-proj-abcdefghijklmnopqrstuvwx12 'hi'", "llm -k " R " 'hi'" },
  { "slack xoxb-1234567890-abcdefghij", "slack " R },
  { "aws configure set aws_access_key_id AKIAIOSFODNN7EXAMPLE",
    "aws configure set aws_access_key_id " R },
  { "curl -b jwt=" JWT " x", "curl -b jwt=" R " x" },
  { "glab --repo x glpat-abcdefghij0123456789", "glab --repo x " R },
  { "hf download hf_abcdefghijklmnopqrstuvwxyz", "hf download " R },
  { "modal token set --token-id ak-1a2b3c4d5e6f7g8h9i --token-secret "
    "as-9z8y7x6w5v4u3t2s1r",
    "modal token set --token-id " R " --token-secret " R },
  { "echo '-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNz\naGtleQ==\n"
    "-----END OPENSSH PRIVATE KEY-----' > k",
    "echo '-----BEGIN OPENSSH PRIVATE KEY-----" R
    "-----END OPENSSH PRIVATE KEY-----' > k" },
  /* several in one command, overlapping matches merged */
  { "TOKEN=" GHP " curl -H 'Authorization: token " GHP "' https://u:p@h",
    "TOKEN=" R " curl -H 'Authorization: token " R "' https://u:" R "@h" },
  /* bytes that are not UTF-8 pass through */
  { "echo \xff\xfe --password=\xc3\xffz done",
    "echo \xff\xfe --password=" R " done" },
};

static void
test_redact_table (void **state)
{
  (void) state;
  assert_true (N_ELEMENTS (redact_cases) >= 25);
  for (size_t i = 0; i < N_ELEMENTS (redact_cases); i++)
    {
      const struct redact_case *c = &redact_cases[i];
      const char *want = c->out ? c->out : c->in;
      char *got = redact_secrets (c->in);
      assert_non_null (got);
      if (strcmp (got, want))
        fail_msg ("case %zu:\n  in:   %s\n  want: %s\n  got:  %s", i, c->in,
                  want, got);
      free (got);
    }
  assert_null (redact_secrets (NULL));
}

static double
seconds_since (const struct timespec *t0)
{
  struct timespec t1;
  clock_gettime (CLOCK_MONOTONIC, &t1);
  return (double) (t1.tv_sec - t0->tv_sec)
         + (double) (t1.tv_nsec - t0->tv_nsec) / 1e9;
}

/* Long hostile inputs take time proportional to their length. */
static void
test_redact_long_inputs (void **state)
{
  (void) state;
  static const char *const units[] = {
    "a", "A_", "SECRET_", "X_TOKEN=", "A=", "-", "a:", "a:a@", "https://",
    "eyJa.", "eyJaaaaaaa.eyJaaaaaa.", "sk-", "ak-a", "mysql ", "mysql -p",
    "curl ", "curl -", "sshpass ", "docker login ", "--password \"",
    "\"password\":\"", "\\\"", "Authorization: ", "?token=", "x@", "\n- ",
    "-----BEGIN RSA PRIVATE KEY-----",
  };
  /* Big enough that a pattern scanning the rest of the text from every
     start takes tens of seconds instead of milliseconds. */
  size_t len = 128 << 10;
  char *text = malloc (len + 16);
  assert_non_null (text);
  for (size_t u = 0; u < N_ELEMENTS (units); u++)
    {
      size_t ul = strlen (units[u]), o = 0;
      while (o + ul <= len)
        {
          memcpy (text + o, units[u], ul);
          o += ul;
        }
      /* The characters the patterns require somewhere, so that PCRE2's
         quick "required character" check does not end the match early;
         none of them completes a secret. */
      strcpy (text + o, "://u:p/@ =");
      struct timespec t0;
      clock_gettime (CLOCK_MONOTONIC, &t0);
      char *r = redact_secrets (text);
      double s = seconds_since (&t0);
      assert_non_null (r);
      if (s > 2.0)
        fail_msg ("128 KiB of '%s' took %.1f s", units[u], s);
      /* Not the fail-closed answer of a pattern that hit its limit. */
      if (!strcmp (r, REDACTED))
        fail_msg ("128 KiB of '%s' came back as " REDACTED, units[u]);
      free (r);
    }
  free (text);
}

static void *
redact_in_thread (void *arg)
{
  (void) arg;
  for (int i = 0; i < 200; i++)
    {
      char *r = redact_secrets ("a --password=x " GHP);
      if (!r || strcmp (r, "a --password=" R " " R))
        return (void *) 1;
      free (r);
    }
  return NULL;
}

/* The patterns are compiled once, whichever thread comes first. */
static void
test_redact_threads (void **state)
{
  (void) state;
  pthread_t t[4];
  for (int i = 0; i < 4; i++)
    assert_int_equal (pthread_create (&t[i], NULL, redact_in_thread, NULL),
                      0);
  for (int i = 0; i < 4; i++)
    {
      void *rv;
      assert_int_equal (pthread_join (t[i], &rv), 0);
      assert_null (rv);
    }
}

/* ---- audit log fixtures ---- */

static char tmp[256];

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
setup_tmp (void **state)
{
  (void) state;
  snprintf (tmp, sizeof tmp, "/tmp/airlock-audit-XXXXXX");
  return mkdtemp (tmp) ? 0 : -1;
}

static int
teardown_tmp (void **state)
{
  (void) state;
  nftw (tmp, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
  return 0;
}

static char *
path_in (const char *fmt, ...)
{
  va_list ap;
  char *rel, *p;
  va_start (ap, fmt);
  assert_true (vasprintf (&rel, fmt, ap) >= 0);
  va_end (ap);
  assert_true (asprintf (&p, "%s/%s", tmp, rel) >= 0);
  free (rel);
  return p;
}

static char *
read_all (const char *path, size_t *len)
{
  FILE *f = fopen (path, "r");
  if (!f)
    return NULL;
  char *buf = NULL;
  size_t cap = 0;
  FILE *m = open_memstream (&buf, &cap);
  assert_non_null (m);
  char chunk[4096];
  size_t n;
  while ((n = fread (chunk, 1, sizeof chunk, f)) > 0)
    fwrite (chunk, 1, n, m);
  fclose (f);
  fclose (m);
  if (len)
    *len = cap;
  return buf;
}

/* Every line of a file, parsed; the file must end with a newline and
   hold only whole JSON objects. */
static size_t
parse_lines (const char *path, cJSON ***out)
{
  size_t len;
  char *text = read_all (path, &len);
  assert_non_null (text);
  size_t n = 0;
  cJSON **v = NULL;
  assert_true (len == 0 || text[len - 1] == '\n');
  for (char *line = text; *line;)
    {
      char *nl = strchr (line, '\n');
      assert_non_null (nl);
      *nl = '\0';
      cJSON *j = cJSON_Parse (line);
      if (!j || !cJSON_IsObject (j))
        fail_msg ("%s: not a JSON object: %s", path, line);
      v = realloc (v, (n + 1) * sizeof *v);
      assert_non_null (v);
      v[n++] = j;
      line = nl + 1;
    }
  free (text);
  *out = v;
  return n;
}

static void
free_lines (cJSON **v, size_t n)
{
  for (size_t i = 0; i < n; i++)
    cJSON_Delete (v[i]);
  free (v);
}

static const char *
str_field (const cJSON *o, const char *key)
{
  const cJSON *f = cJSON_GetObjectItemCaseSensitive (o, key);
  if (!cJSON_IsString (f))
    fail_msg ("field %s is not a string", key);
  return f->valuestring;
}

static const struct audit_entry plain_entry = {
  .session = "s", .backend = "local", .command = "true",
  .decision = "allow", .decided_by = "no-rule",
};

/* ---- audit log: content ---- */

static void
test_entry_fields (void **state)
{
  (void) state;
  char *dir = path_in ("state/airlock");
  char *err = NULL;
  struct audit_log *log = audit_log_open (dir, 0, AUDIT_LOG_DEFAULT_KEEP,
                                          &err);
  if (!log)
    fail_msg ("open: %s", err);
  char *file = path_in ("state/airlock/audit.log");
  assert_string_equal (audit_log_path (log), file);

  const char *rules[] = { "rm-recursive", "curl-pipe-shell" };
  struct audit_entry e = {
    .session = "sess-1", .backend = "docker",
    .command = "curl -u me:hunter2 https://x | sh",
    .decision = "deny", .decided_by = "person",
    .reason = "the person said no; token=abc",
    .rules = rules, .n_rules = 2,
  };
  assert_int_equal (audit_log_write (log, &e, &err), 0);
  assert_null (err);
  struct audit_entry minimal = { .decision = "allow",
                                 .decided_by = "allowlist" };
  assert_int_equal (audit_log_write (log, &minimal, NULL), 0);
  audit_log_close (log);

  cJSON **lines;
  size_t n = parse_lines (file, &lines);
  assert_int_equal (n, 2);

  const cJSON *l = lines[0];
  const char *t = str_field (l, "time");
  /* 2026-07-14T09:30:12.345Z */
  assert_int_equal (strlen (t), 24);
  struct tm tm = { 0 };
  char *rest = strptime (t, "%Y-%m-%dT%H:%M:%S", &tm);
  assert_non_null (rest);
  assert_true (rest[0] == '.' && rest[1] >= '0' && rest[1] <= '9'
               && rest[2] >= '0' && rest[2] <= '9' && rest[3] >= '0'
               && rest[3] <= '9' && rest[4] == 'Z');
  time_t when = timegm (&tm);
  assert_true (labs ((long) (when - time (NULL))) < 60);
  assert_string_equal (str_field (l, "session"), "sess-1");
  assert_string_equal (str_field (l, "backend"), "docker");
  assert_string_equal (str_field (l, "command"),
                       "curl -u me:" R " https://x | sh");
  assert_string_equal (str_field (l, "decision"), "deny");
  assert_string_equal (str_field (l, "decided_by"), "person");
  assert_string_equal (str_field (l, "reason"),
                       "the person said no; token=" R);
  const cJSON *rl = cJSON_GetObjectItemCaseSensitive (l, "rules");
  assert_true (cJSON_IsArray (rl));
  assert_int_equal (cJSON_GetArraySize (rl), 2);
  assert_string_equal (cJSON_GetArrayItem (rl, 0)->valuestring,
                       "rm-recursive");
  assert_string_equal (cJSON_GetArrayItem (rl, 1)->valuestring,
                       "curl-pipe-shell");
  assert_int_equal (cJSON_GetObjectItem (l, "pid")->valuedouble, getpid ());
  assert_int_equal (cJSON_GetObjectItem (l, "uid")->valuedouble, getuid ());
  assert_null (cJSON_GetObjectItem (l, "command_truncated"));

  const cJSON *m = lines[1];
  assert_true (cJSON_IsNull (cJSON_GetObjectItem (m, "session")));
  assert_true (cJSON_IsNull (cJSON_GetObjectItem (m, "backend")));
  assert_true (cJSON_IsNull (cJSON_GetObjectItem (m, "command")));
  assert_null (cJSON_GetObjectItem (m, "reason"));
  assert_int_equal (cJSON_GetArraySize (cJSON_GetObjectItem (m, "rules")), 0);
  assert_string_equal (str_field (m, "decided_by"), "allowlist");

  free_lines (lines, n);
  free (file);
  free (dir);
}

/* An egress decision: the "network" object and "suppressed"; a line
   without them has neither key (the lines above are unchanged). */
static void
test_entry_network (void **state)
{
  (void) state;
  const struct audit_network full = {
    .name = "allowed.test", .address = "127.0.0.1", .port = 443,
    .sni = "allowed.test", .host = NULL, .fake_address = "10.99.1.1",
  };
  const char *rules[] = { "allowed.test:443" };
  struct audit_entry e = {
    .session = "s1", .backend = "local", .decision = "allow",
    .decided_by = "network-allowlist", .reason = "SNI matches",
    .rules = rules, .n_rules = 1, .network = &full, .suppressed = 7,
  };
  char *line = audit_entry_to_json (&e, NULL);
  assert_non_null (line);
  cJSON *j = cJSON_Parse (line);
  assert_non_null (j);
  const cJSON *net = cJSON_GetObjectItemCaseSensitive (j, "network");
  assert_true (cJSON_IsObject (net));
  assert_string_equal (str_field (net, "name"), "allowed.test");
  assert_string_equal (str_field (net, "address"), "127.0.0.1");
  assert_int_equal (cJSON_GetObjectItem (net, "port")->valuedouble, 443);
  assert_string_equal (str_field (net, "sni"), "allowed.test");
  assert_true (cJSON_IsNull (cJSON_GetObjectItem (net, "host")));
  assert_string_equal (str_field (net, "fake_address"), "10.99.1.1");
  assert_int_equal (cJSON_GetObjectItem (j, "suppressed")->valuedouble, 7);
  assert_null (cJSON_GetObjectItem (j, "command_truncated"));
  cJSON_Delete (j);
  free (line);

  /* A deny before any name is known: nulls, no port. */
  const struct audit_network bare = { .fake_address = "10.99.0.50" };
  e.network = &bare;
  e.suppressed = 0;
  line = audit_entry_to_json (&e, NULL);
  assert_non_null (line);
  j = cJSON_Parse (line);
  assert_non_null (j);
  net = cJSON_GetObjectItemCaseSensitive (j, "network");
  assert_true (cJSON_IsNull (cJSON_GetObjectItem (net, "name")));
  assert_true (cJSON_IsNull (cJSON_GetObjectItem (net, "address")));
  assert_true (cJSON_IsNull (cJSON_GetObjectItem (net, "port")));
  assert_true (cJSON_IsNull (cJSON_GetObjectItem (net, "sni")));
  assert_string_equal (str_field (net, "fake_address"), "10.99.0.50");
  assert_null (cJSON_GetObjectItem (j, "suppressed"));
  cJSON_Delete (j);
  free (line);

  /* Without network: no such keys at all. */
  line = audit_entry_to_json (&plain_entry, NULL);
  assert_non_null (line);
  assert_null (strstr (line, "\"network\""));
  assert_null (strstr (line, "\"suppressed\""));
  free (line);
}

static void
test_entry_invalid (void **state)
{
  (void) state;
  char *dir = path_in ("s");
  struct audit_log *log = audit_log_open (dir, 0, 5, NULL);
  assert_non_null (log);
  char *err = NULL;
  struct audit_entry e = { .command = "ls", .decided_by = "no-rule" };
  assert_int_equal (audit_log_write (log, &e, &err), -EINVAL);
  assert_string_equal (err, "audit entry without a decision");
  free (err);
  e.decision = "allow";
  e.decided_by = "";
  assert_int_equal (audit_log_write (log, &e, &err), -EINVAL);
  assert_string_equal (err, "audit entry without decided_by");
  free (err);
  e.decided_by = "no-rule";
  e.n_rules = 1;
  assert_int_equal (audit_log_write (log, &e, &err), -EINVAL);
  free (err);
  assert_int_equal (audit_log_write (NULL, &e, &err), -EINVAL);
  free (err);
  assert_int_equal (audit_log_write (log, NULL, &err), -EINVAL);
  free (err);
  audit_log_close (log);
  audit_log_close (NULL);

  /* Nothing was written. */
  char *file = path_in ("s/audit.log");
  struct stat st;
  assert_int_equal (stat (file, &st), 0);
  assert_int_equal (st.st_size, 0);
  free (file);
  free (dir);

  /* Bad arguments to open. */
  assert_null (audit_log_open ("relative/dir", 0, 5, &err));
  assert_non_null (strstr (err, "not an absolute path"));
  free (err);
  assert_null (audit_log_open (NULL, 0, 5, &err));
  free (err);
  assert_null (audit_log_open ("/tmp", 0, AUDIT_LOG_MAX_KEEP + 1, &err));
  assert_non_null (strstr (err, "at most"));
  free (err);
}

/* Bad UTF-8 becomes U+FFFD; a long command is cut after redaction. */
static void
test_text_cleaning (void **state)
{
  (void) state;
  char *dir = path_in ("s");
  struct audit_log *log = audit_log_open (dir, 0, 5, NULL);
  assert_non_null (log);

  struct audit_entry e = plain_entry;
  e.command = "echo \xff ok \xc3\xa9";
  e.rules = (const char *[]) { "r\xfe" };
  e.n_rules = 1;
  assert_int_equal (audit_log_write (log, &e, NULL), 0);

  /* A token right at the cut: redacted before cutting, so none of it
     shows. */
  size_t pad = AUDIT_COMMAND_MAX - 10;
  char *big = malloc (pad + 200);
  assert_non_null (big);
  memset (big, 'x', pad);
  big[0] = ' ';
  strcpy (big + pad, " " GHP " tail");
  e.command = big;
  e.n_rules = 0;
  assert_int_equal (audit_log_write (log, &e, NULL), 0);
  audit_log_close (log);

  char *file = path_in ("s/audit.log");
  cJSON **lines;
  size_t n = parse_lines (file, &lines);
  assert_int_equal (n, 2);
  assert_string_equal (str_field (lines[0], "command"),
                       "echo \xef\xbf\xbd ok \xc3\xa9");
  assert_string_equal (
    cJSON_GetArrayItem (cJSON_GetObjectItem (lines[0], "rules"), 0)
      ->valuestring, "r\xef\xbf\xbd");
  const char *cmd = str_field (lines[1], "command");
  assert_int_equal (strlen (cmd), AUDIT_COMMAND_MAX);
  assert_null (strstr (cmd, "ghp_"));
  assert_true (cJSON_IsTrue (cJSON_GetObjectItem (lines[1],
                                                  "command_truncated")));
  assert_int_equal (cJSON_GetObjectItem (lines[1], "command_bytes")
                      ->valuedouble,
                    pad + strlen (" " R " tail"));
  free_lines (lines, n);
  free (big);
  free (file);
  free (dir);
}

/* ---- audit log: the file's safety ---- */

static void
test_permissions (void **state)
{
  (void) state;
  mode_t old = umask (0);   /* the modes must not depend on the umask */
  char *dir = path_in ("a/b/c");
  struct audit_log *log = audit_log_open (dir, 0, 5, NULL);
  assert_non_null (log);
  assert_int_equal (audit_log_write (log, &plain_entry, NULL), 0);
  audit_log_close (log);
  umask (old);

  struct stat st;
  static const char *const dirs[] = { "a", "a/b", "a/b/c" };
  for (size_t i = 0; i < N_ELEMENTS (dirs); i++)
    {
      char *p = path_in ("%s", dirs[i]);
      assert_int_equal (stat (p, &st), 0);
      if ((st.st_mode & 07777) != 0700)
        fail_msg ("%s has mode %o", p, st.st_mode & 07777);
      free (p);
    }
  char *file = path_in ("a/b/c/audit.log");
  assert_int_equal (lstat (file, &st), 0);
  assert_true (S_ISREG (st.st_mode));
  assert_int_equal (st.st_mode & 07777, 0600);

  /* A file left with a wider mode is narrowed. */
  assert_int_equal (chmod (file, 0644), 0);
  log = audit_log_open (dir, 0, 5, NULL);
  assert_non_null (log);
  audit_log_close (log);
  assert_int_equal (stat (file, &st), 0);
  assert_int_equal (st.st_mode & 07777, 0600);
  free (file);

  /* A directory others may write to is refused. */
  char *err = NULL;
  assert_int_equal (chmod (dir, 0777), 0);
  assert_null (audit_log_open (dir, 0, 5, &err));
  assert_non_null (strstr (err, "writable by group or others"));
  assert_non_null (strstr (err, dir));
  free (err);
  free (dir);
}

static void
test_symlink_refused (void **state)
{
  (void) state;
  char *dir = path_in ("s");
  char *file = path_in ("s/audit.log");
  char *victim = path_in ("victim");
  assert_int_equal (mkdir (dir, 0700), 0);
  FILE *f = fopen (victim, "w");
  assert_non_null (f);
  fclose (f);
  assert_int_equal (symlink (victim, file), 0);

  char *err = NULL;
  assert_null (audit_log_open (dir, 0, 5, &err));
  assert_non_null (err);
  assert_non_null (strstr (err, file));
  assert_non_null (strstr (err, "symbolic link"));
  free (err);

  /* Planted after opening: the next write sees it and refuses. */
  assert_int_equal (unlink (file), 0);
  struct audit_log *log = audit_log_open (dir, 0, 5, NULL);
  assert_non_null (log);
  assert_int_equal (audit_log_write (log, &plain_entry, NULL), 0);
  assert_int_equal (unlink (file), 0);
  assert_int_equal (symlink (victim, file), 0);
  assert_int_equal (audit_log_write (log, &plain_entry, &err), -ELOOP);
  assert_non_null (strstr (err, "symbolic link"));
  free (err);
  audit_log_close (log);

  struct stat st;
  assert_int_equal (stat (victim, &st), 0);
  assert_int_equal (st.st_size, 0);   /* never written through */

  /* A FIFO does not block the writer; a hard link is refused. */
  assert_int_equal (unlink (file), 0);
  assert_int_equal (mkfifo (file, 0600), 0);
  assert_null (audit_log_open (dir, 0, 5, &err));
  assert_non_null (strstr (err, file));
  free (err);
  assert_int_equal (unlink (file), 0);
  assert_int_equal (link (victim, file), 0);
  assert_null (audit_log_open (dir, 0, 5, &err));
  assert_non_null (strstr (err, "hard links"));
  free (err);

  free (victim);
  free (file);
  free (dir);
}

/* ---- audit log: rotation ---- */

/* Entries numbered in their session field. */
static void
write_numbered (struct audit_log *log, int from, int to)
{
  for (int i = from; i < to; i++)
    {
      char session[32];
      snprintf (session, sizeof session, "%d", i);
      struct audit_entry e = plain_entry;
      e.session = session;
      char *err = NULL;
      if (audit_log_write (log, &e, &err) != 0)
        fail_msg ("write %d: %s", i, err);
    }
}

static void
test_rotation (void **state)
{
  (void) state;
  char *dir = path_in ("s");
  const size_t max = 600;
  const unsigned keep = 3;
  struct audit_log *log = audit_log_open (dir, max, keep, NULL);
  assert_non_null (log);
  const int total = 60;
  write_numbered (log, 0, total);
  audit_log_close (log);

  /* Newest first: audit.log, .1, .2, .3; no .4. */
  int expect = total - 1;
  size_t files = 0;
  for (unsigned k = 0; k <= keep + 1; k++)
    {
      char *p = k ? path_in ("s/audit.log.%u", k) : path_in ("s/audit.log");
      struct stat st;
      if (k == keep + 1)
        {
          assert_int_equal (stat (p, &st), -1);
          free (p);
          break;
        }
      assert_int_equal (stat (p, &st), 0);
      assert_true ((size_t) st.st_size <= max);
      assert_int_equal (st.st_mode & 07777, 0600);
      cJSON **lines;
      size_t n = parse_lines (p, &lines);
      assert_true (n > 0);
      for (size_t i = n; i-- > 0;)
        {
          assert_int_equal (atoi (str_field (lines[i], "session")), expect);
          expect--;
        }
      free_lines (lines, n);
      free (p);
      files++;
    }
  assert_int_equal (files, keep + 1);
  /* The oldest entries fell off. */
  assert_true (expect >= 0);

  /* keep 0: the full file is dropped, nothing old kept. */
  char *dir0 = path_in ("zero");
  log = audit_log_open (dir0, 300, 0, NULL);
  assert_non_null (log);
  write_numbered (log, 0, 20);
  audit_log_close (log);
  char *one = path_in ("zero/audit.log.1");
  struct stat st;
  assert_int_equal (stat (one, &st), -1);
  char *cur = path_in ("zero/audit.log");
  cJSON **lines;
  size_t n = parse_lines (cur, &lines);
  assert_true (n > 0 && n < 20);
  assert_int_equal (atoi (str_field (lines[n - 1], "session")), 19);
  free_lines (lines, n);
  free (cur);
  free (one);
  free (dir0);
  free (dir);
}

/* ---- audit log: write errors ---- */

/* Run fn in a child; its exit status is the result (SKIPPED: skip). */
static int
in_child (int (*fn) (void))
{
  fflush (NULL);
  pid_t pid = fork ();
  assert_true (pid >= 0);
  if (pid == 0)
    _exit (fn ());
  int status;
  assert_int_equal (waitpid (pid, &status, 0), pid);
  assert_true (WIFEXITED (status));
  return WEXITSTATUS (status);
}

/* The file holds only whole lines and the count given. */
static int
check_whole_lines (const char *file, int expect)
{
  size_t len;
  char *text = read_all (file, &len);
  if (!text)
    return 20;
  int lines = 0;
  for (size_t i = 0; i < len; i++)
    lines += text[i] == '\n';
  bool ok = len && text[len - 1] == '\n' && lines == expect;
  free (text);
  return ok ? 0 : 21;
}

static int
efbig_child (void)
{
  signal (SIGXFSZ, SIG_IGN);
  char *dir = path_in ("s");
  struct audit_log *log = audit_log_open (dir, 0, 5, NULL);
  if (!log || audit_log_write (log, &plain_entry, NULL) != 0)
    return 10;
  struct stat st;
  char *file = path_in ("s/audit.log");
  if (stat (file, &st) < 0)
    return 11;
  /* Room for part of one more line. */
  struct rlimit rl = { (rlim_t) st.st_size + 40, RLIM_INFINITY };
  if (setrlimit (RLIMIT_FSIZE, &rl) < 0)
    return 12;
  char *err = NULL;
  int rc = audit_log_write (log, &plain_entry, &err);
  if (rc != -EFBIG)
    {
      fprintf (stderr, "rc %d: %s\n", rc, err ? err : "");
      return 13;
    }
  if (!strstr (err, file) || !strstr (err, "File too large"))
    {
      fprintf (stderr, "message: %s\n", err);
      return 14;
    }
  free (err);
  audit_log_close (log);
  return check_whole_lines (file, 1);
}

static void
test_write_error_efbig (void **state)
{
  (void) state;
  assert_int_equal (in_child (efbig_child), 0);
}

static int
enospc_child (void)
{
  char *dir = path_in ("small");
  if (mkdir (dir, 0700) < 0)
    return 30;
  if (unshare (CLONE_NEWNS) < 0
      || mount (NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0
      || mount ("tmpfs", dir, "tmpfs", 0, "size=8k,mode=0700") < 0)
    return SKIPPED;
  struct audit_log *log = audit_log_open (dir, 1 << 30, 5, NULL);
  if (!log)
    return 31;
  char *err = NULL;
  int written = 0, rc = 0;
  struct audit_entry e = plain_entry;
  e.reason = "a reason long enough to fill the small file system a little "
             "faster than the shortest possible line would";
  while (written < 10000 && (rc = audit_log_write (log, &e, &err)) == 0)
    written++;
  if (rc != -ENOSPC)
    {
      fprintf (stderr, "after %d lines: rc %d (%s)\n", written, rc,
               err ? err : "");
      return 32;
    }
  char *file = path_in ("small/audit.log");
  if (!strstr (err, file) || !strstr (err, "No space left on device"))
    {
      fprintf (stderr, "message: %s\n", err);
      return 33;
    }
  free (err);
  audit_log_close (log);
  return check_whole_lines (file, written);
}

static void
test_write_error_enospc (void **state)
{
  (void) state;
  int rc = in_child (enospc_child);
  if (rc == SKIPPED)
    {
      print_message ("skipped: cannot mount a tmpfs in a private mount "
                     "namespace here (needs root); EFBIG covers the "
                     "short-write path\n");
      skip ();
    }
  assert_int_equal (rc, 0);
}

/* EACCES: as root, in a child that has become an unprivileged user. */
static int
eacces_child (void)
{
  char *locked = path_in ("locked");
  char *dir = path_in ("locked/airlock");
  if (mkdir (locked, 0755) < 0)
    return 40;
  if (geteuid () == 0)
    {
      struct passwd *pw = getpwnam ("nobody");
      uid_t uid = pw ? pw->pw_uid : 65534;
      gid_t gid = pw ? pw->pw_gid : 65534;
      if (chmod (tmp, 0755) < 0 || setgroups (0, NULL) < 0
          || setresgid (gid, gid, gid) < 0 || setresuid (uid, uid, uid) < 0)
        return 41;
    }
  else if (chmod (locked, 0555) < 0)
    return 42;
  char *err = NULL;
  if (audit_log_open (dir, 0, 5, &err))
    return 43;
  if (!strstr (err, dir) || !strstr (err, "Permission denied"))
    {
      fprintf (stderr, "message: %s\n", err);
      return 44;
    }
  free (err);
  return 0;
}

static void
test_write_error_eacces (void **state)
{
  (void) state;
  assert_int_equal (in_child (eacces_child), 0);
}

/* ---- audit log: concurrent writers ---- */

#define WRITERS 4
#define LINES_EACH 200
#define SHARED_MAX 16384

static struct audit_log *shared_log;
static char *shared_dir;

/* Writer w: even ones use the handle inherited from the parent, odd ones
   open their own. */
static int
writer (int w)
{
  struct audit_log *log = shared_log;
  if (w % 2)
    log = audit_log_open (shared_dir, SHARED_MAX, 100, NULL);
  if (!log)
    return 50;
  for (int i = 0; i < LINES_EACH; i++)
    {
      char session[32];
      snprintf (session, sizeof session, "%d.%d", w, i);
      struct audit_entry e = plain_entry;
      e.session = session;
      e.command = "make -j2 all check install DESTDIR=/tmp/stage";
      if (audit_log_write (log, &e, NULL) != 0)
        return 51;
    }
  return 0;
}

/* Count each writer's lines and check they come in order (files are
   read oldest first), that no file outgrew the limit and that none was
   rotated early: a writer that kept writing to a file another had
   rotated away, or two writers rotating at once, would break these. */
static void
count_lines (const char *file, bool rotated, int seen[WRITERS][LINES_EACH],
             int last[WRITERS], int *total)
{
  struct stat st;
  assert_int_equal (stat (file, &st), 0);
  if ((size_t) st.st_size > SHARED_MAX)
    fail_msg ("%s has %lld bytes, more than %d", file,
              (long long) st.st_size, SHARED_MAX);
  /* A file is rotated only when the next line (~300 bytes) would not
     fit; two writers rotating at once leave a nearly empty one. */
  if (rotated && st.st_size < SHARED_MAX - 1024)
    fail_msg ("%s was rotated with only %lld bytes", file,
              (long long) st.st_size);
  cJSON **lines;
  size_t n = parse_lines (file, &lines);
  for (size_t i = 0; i < n; i++)
    {
      int w, k;
      assert_int_equal (sscanf (str_field (lines[i], "session"), "%d.%d", &w,
                                &k), 2);
      assert_true (w >= 0 && w < WRITERS && k >= 0 && k < LINES_EACH);
      if (k <= last[w])
        fail_msg ("%s: line %d.%d after %d.%d", file, w, k, w, last[w]);
      last[w] = k;
      seen[w][k]++;
      (*total)++;
    }
  free_lines (lines, n);
}

static void
test_concurrent_writers (void **state)
{
  (void) state;
  shared_dir = path_in ("s");
  /* Small files and many kept: rotations happen under contention and no
     line may be lost to them. */
  shared_log = audit_log_open (shared_dir, SHARED_MAX, 100, NULL);
  assert_non_null (shared_log);

  fflush (NULL);
  pid_t pids[WRITERS];
  for (int w = 0; w < WRITERS; w++)
    {
      pids[w] = fork ();
      assert_true (pids[w] >= 0);
      if (pids[w] == 0)
        _exit (writer (w));
    }
  for (int w = 0; w < WRITERS; w++)
    {
      int status;
      assert_int_equal (waitpid (pids[w], &status, 0), pids[w]);
      assert_true (WIFEXITED (status));
      assert_int_equal (WEXITSTATUS (status), 0);
    }
  audit_log_close (shared_log);

  static int seen[WRITERS][LINES_EACH];
  int last[WRITERS];
  memset (seen, 0, sizeof seen);
  for (int w = 0; w < WRITERS; w++)
    last[w] = -1;
  int total = 0, files = 0;
  for (unsigned k = 100; k >= 1; k--)
    {
      char *p = path_in ("s/audit.log.%u", k);
      if (access (p, F_OK) == 0)
        {
          count_lines (p, true, seen, last, &total);
          files++;
        }
      free (p);
    }
  char *cur = path_in ("s/audit.log");
  count_lines (cur, false, seen, last, &total);
  free (cur);
  assert_true (files >= 2);   /* it did rotate */
  assert_int_equal (total, WRITERS * LINES_EACH);
  for (int w = 0; w < WRITERS; w++)
    for (int k = 0; k < LINES_EACH; k++)
      if (seen[w][k] != 1)
        fail_msg ("line %d.%d seen %d times", w, k, seen[w][k]);
  free (shared_dir);
}

static void *
thread_writer (void *arg)
{
  struct audit_log *log = arg;
  for (int i = 0; i < LINES_EACH; i++)
    if (audit_log_write (log, &plain_entry, NULL) != 0)
      return (void *) 1;
  return NULL;
}

static void
test_threads_share_a_handle (void **state)
{
  (void) state;
  char *dir = path_in ("t");
  struct audit_log *log = audit_log_open (dir, 8192, 1000, NULL);
  assert_non_null (log);
  pthread_t t[4];
  for (int i = 0; i < 4; i++)
    assert_int_equal (pthread_create (&t[i], NULL, thread_writer, log), 0);
  for (int i = 0; i < 4; i++)
    {
      void *rv;
      assert_int_equal (pthread_join (t[i], &rv), 0);
      assert_null (rv);
    }
  audit_log_close (log);
  int total = 0;
  for (unsigned k = 0; k <= 1000; k++)
    {
      char *p = k ? path_in ("t/audit.log.%u", k) : path_in ("t/audit.log");
      if (access (p, F_OK) == 0)
        {
          cJSON **lines;
          size_t n = parse_lines (p, &lines);
          total += (int) n;
          free_lines (lines, n);
        }
      free (p);
    }
  assert_int_equal (total, 4 * LINES_EACH);
  free (dir);
}

static void
test_state_dir (void **state)
{
  (void) state;
  char *err = NULL;
  char *d = audit_log_state_dir ("/x/state", "/home/u", &err);
  assert_string_equal (d, "/x/state/airlock");
  free (d);
  d = audit_log_state_dir ("relative", "/home/u", &err);
  assert_string_equal (d, "/home/u/.local/state/airlock");
  free (d);
  d = audit_log_state_dir ("", "/home/u", &err);
  assert_string_equal (d, "/home/u/.local/state/airlock");
  free (d);
  assert_null (audit_log_state_dir (NULL, NULL, &err));
  assert_non_null (strstr (err, "XDG_STATE_HOME"));
  free (err);
}

int
main (void)
{
#define T(f) cmocka_unit_test_setup_teardown (f, setup_tmp, teardown_tmp)
  const struct CMUnitTest tests[] = {
    cmocka_unit_test (test_redact_table),
    cmocka_unit_test (test_redact_long_inputs),
    cmocka_unit_test (test_redact_threads),
    T (test_entry_fields),
    T (test_entry_network),
    T (test_entry_invalid),
    T (test_text_cleaning),
    T (test_permissions),
    T (test_symlink_refused),
    T (test_rotation),
    T (test_write_error_efbig),
    T (test_write_error_enospc),
    T (test_write_error_eacces),
    T (test_concurrent_writers),
    T (test_threads_share_a_handle),
    cmocka_unit_test (test_state_dir),
  };
  return cmocka_run_group_tests (tests, NULL, NULL);
}
