/* SPDX-License-Identifier: MIT */
/* Unit tests for the session shell-state scripts (broker/shell_state.c).
 *
 * The generated scripts are not compared with expected text: they are run,
 * as the session layer runs them, with SHELL_SCRIPT_LOADER and the
 * script on a pipe at fd 4 (never in argv), the state each one reports on
 * fd 3 kept with shell_state_take as the session layer keeps it, and what
 * a user of the session would see is checked: the working directory, exports, unsets, functions and aliases
 * carried from one command to the next, AIRLOCK_* never saved, exit
 * statuses, stdin, and values that are hard to quote.  Commands start from
 * a fixed environment holding AIRLOCK_SESSION (the session's identity) and
 * FROMENV (a variable of the sandbox's process environment, which an
 * `unset` must still remove for good). */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "shell_state.h"

#define N_ELEMENTS(a) (sizeof (a) / sizeof ((a)[0]))
#define BASH "/bin/bash"

/* Helpers */

struct run
{
  int status; /* exit code, or 128 + signal */
  char *out, *err, *report;
  size_t out_len, err_len, report_len;
  char *meta; /* the cwd of a whole report on fd 3 and a newline, else "" */
  double ms;
};

static void
run_free (struct run *r)
{
  free (r->out);
  free (r->err);
  free (r->report);
  free (r->meta);
  memset (r, 0, sizeof *r);
}

static double
now_ms (void)
{
  struct timespec ts;
  clock_gettime (CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void
append (char **buf, size_t *len, const char *data, size_t n)
{
  char *p = realloc (*buf, *len + n + 1);
  assert_non_null (p);
  memcpy (p + *len, data, n);
  *len += n;
  p[*len] = '\0';
  *buf = p;
}

/* The fixed environment of every command, as a backend would give it;
   a test may add entries of its own. */
static char home_var[PATH_MAX + 8];
static const char *const base_env[] = {
  "PATH=/usr/local/bin:/usr/bin:/bin", home_var, "LANG=C.UTF-8",
  "AIRLOCK_SESSION=test-session", "FROMENV=inherited",
};

/* The script, written into a pipe whose read end is fd 4 of the child
   about to exec: bash reads it whole before it runs any of it (so a
   blocking write cannot deadlock with its output). */
static void
feed_script (int wfd, const char *script)
{
  size_t len = strlen (script), off = 0;
  while (off < len)
    {
      ssize_t w = write (wfd, script + off, len - off);
      if (w < 0 && errno == EINTR)
        continue;
      if (w <= 0)
        break; /* bash died: its status says why */
      off += (size_t) w;
    }
  close (wfd);
}

/* The session's own scripts go through the loader, like session.c runs
   them; anything else is a bare `bash -c` to compare with. */
static bool
is_wrapper (const char *script)
{
  return strncmp (script, "# airlock session", 17) == 0;
}

/* Run script in dir, feeding it in[0..in_len) on stdin (EOF at
   once when in is NULL), with fd 3 a metadata pipe when want_meta, and
   collect everything.  poll() keeps stdin flowing while output drains. */
static void
run_script (const char *script, const char *dir, const char *in,
            size_t in_len, const char *const *extra, bool want_meta,
            struct run *r)
{
  memset (r, 0, sizeof *r);
  const char *envp[32];
  size_t ne = 0;
  for (; extra && extra[ne]; ne++)
    envp[ne] = extra[ne];
  for (size_t i = 0; i < N_ELEMENTS (base_env); i++)
    envp[ne++] = base_env[i];
  envp[ne] = NULL;

  int pin[2], pout[2], perr[2], pmeta[2] = { -1, -1 };
  assert_int_equal (pipe2 (pin, O_CLOEXEC), 0);
  assert_int_equal (pipe2 (pout, O_CLOEXEC), 0);
  assert_int_equal (pipe2 (perr, O_CLOEXEC), 0);
  if (want_meta)
    assert_int_equal (pipe2 (pmeta, O_CLOEXEC), 0);
  int psc[2] = { -1, -1 };
  bool loader = is_wrapper (script);
  if (loader)
    assert_int_equal (pipe2 (psc, O_CLOEXEC), 0);
  double t0 = now_ms ();
  pid_t pid = fork ();
  assert_true (pid >= 0);
  if (pid == 0)
    {
      signal (SIGPIPE, SIG_DFL); /* the parent ignores it */
      dup2 (pin[0], 0);
      dup2 (pout[1], 1);
      dup2 (perr[1], 2);
      if (want_meta)
        {
          if (pmeta[1] == 3)
            fcntl (3, F_SETFD, 0);
          else
            dup2 (pmeta[1], 3);
        }
      else
        close (3);
      if (loader)
        dup2 (psc[0], 4);
      if (chdir (dir) != 0)
        _exit (120);
      const char *argv[] = { "bash", "-c", loader ? SHELL_SCRIPT_LOADER : script, NULL };
      execve (BASH, (char *const *) argv, (char *const *) envp);
      _exit (121);
    }
  if (loader)
    {
      close (psc[0]);
      feed_script (psc[1], script);
    }
  close (pin[0]);
  close (pout[1]);
  close (perr[1]);
  if (want_meta)
    close (pmeta[1]);
  int in_fd = pin[1];
  if (!in || in_len == 0)
    {
      close (in_fd);
      in_fd = -1;
    }
  else
    fcntl (in_fd, F_SETFL, O_NONBLOCK);
  size_t in_off = 0;
  int fds[3] = { pout[0], perr[0], pmeta[0] };
  char **bufs[3] = { &r->out, &r->err, &r->report };
  size_t *lens[3] = { &r->out_len, &r->err_len, &r->report_len };
  for (;;)
    {
      struct pollfd p[4];
      int map[4], n = 0;
      for (int i = 0; i < 3; i++)
        if (fds[i] >= 0)
          {
            p[n] = (struct pollfd){ .fd = fds[i], .events = POLLIN };
            map[n++] = i;
          }
      if (in_fd >= 0)
        {
          p[n] = (struct pollfd){ .fd = in_fd, .events = POLLOUT };
          map[n++] = 3;
        }
      if (n == 0)
        break;
      int k = poll (p, (nfds_t) n, -1);
      if (k < 0 && errno == EINTR)
        continue;
      assert_true (k > 0);
      for (int j = 0; j < n; j++)
        {
          if (!p[j].revents)
            continue;
          int i = map[j];
          if (i == 3)
            {
              ssize_t w = write (in_fd, in + in_off, in_len - in_off);
              if (w > 0)
                in_off += (size_t) w;
              if ((w < 0 && errno != EAGAIN) || in_off == in_len)
                {
                  close (in_fd);
                  in_fd = -1;
                }
              continue;
            }
          char buf[65536];
          ssize_t got = read (fds[i], buf, sizeof buf);
          if (got > 0)
            append (bufs[i], lens[i], buf, (size_t) got);
          else if (got == 0 || errno != EINTR)
            {
              close (fds[i]);
              fds[i] = -1;
            }
        }
    }
  int st;
  assert_int_equal (waitpid (pid, &st, 0), pid);
  r->ms = now_ms () - t0;
  r->status = WIFEXITED (st) ? WEXITSTATUS (st) : 128 + WTERMSIG (st);
  for (int i = 0; i < 3; i++)
    if (!*bufs[i])
      append (bufs[i], lens[i], "", 0);
  struct shell_state kept = { 0 };
  size_t meta_len = 0;
  append (&r->meta, &meta_len, "", 0);
  if (shell_state_take (&kept, r->report, r->report_len) == 1)
    {
      append (&r->meta, &meta_len, kept.cwd, strlen (kept.cwd));
      append (&r->meta, &meta_len, "\n", 1);
    }
  shell_state_free (&kept);
}

/* One session per test: a private temporary tree. */
struct sess
{
  char root[PATH_MAX];
  struct shell_state st; /* as the session layer keeps it */
  char work[PATH_MAX];
  char home[PATH_MAX];
};

static int
rm_one (const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
  (void) sb;
  (void) flag;
  (void) ftw;
  remove (path);
  return 0;
}

static void
rm_tree (const char *path)
{
  nftw (path, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static void
path_join (char *dst, const char *a, const char *b)
{
  assert_true ((size_t) snprintf (dst, PATH_MAX, "%s/%s", a, b) < PATH_MAX);
}

static void
make_dir (const char *base, const char *name)
{
  char p[PATH_MAX];
  path_join (p, base, name);
  assert_int_equal (mkdir (p, 0755), 0);
}

static void
bootstrap (struct sess *s, const char *cwd, const char *const *extra,
           struct run *r)
{
  char *script = shell_bootstrap_script (cwd);
  assert_non_null (script);
  run_script (script, s->root, NULL, 0, extra, true, r);
  free (script);
  assert_int_not_equal (shell_state_take (&s->st, r->report, r->report_len), -1);
}

static int
sess_setup (void **state)
{
  struct sess *s = calloc (1, sizeof *s);
  assert_non_null (s);
  char tmpl[] = "/tmp/airlock-tss-XXXXXX";
  assert_non_null (mkdtemp (tmpl));
  assert_non_null (realpath (tmpl, s->root));
  path_join (s->work, s->root, "work");
  path_join (s->home, s->root, "home");
  make_dir (s->root, "work");
  make_dir (s->root, "home");
  make_dir (s->work, "sub");
  snprintf (home_var, sizeof home_var, "HOME=%s", s->home);
  struct run r;
  bootstrap (s, s->work, NULL, &r);
  if (r.status != 0)
    print_message ("# bootstrap: %s", r.err);
  assert_int_equal (r.status, 0);
  run_free (&r);
  *state = s;
  return 0;
}

static int
sess_teardown (void **state)
{
  struct sess *s = *state;
  rm_tree (s->root);
  shell_state_free (&s->st);
  free (s);
  return 0;
}

/* Run one command of the session s. */
static void
cmd_full (struct sess *s, const char *cwd, const char *command,
          const char *in, size_t in_len, const char *const *extra,
          struct run *r)
{
  char *script = shell_command_script (&s->st, cwd, command);
  assert_non_null (script);
  run_script (script, s->root, in, in_len, extra, true, r);
  free (script);
  assert_int_not_equal (shell_state_take (&s->st, r->report, r->report_len), -1);
}

static void
cmd (struct sess *s, const char *cwd, const char *command, struct run *r)
{
  cmd_full (s, cwd, command, NULL, 0, NULL, r);
}

/* Run a command, expect status 0, this stdout, and nothing on stderr. */
static void
expect (struct sess *s, const char *cwd, const char *command,
        const char *out)
{
  struct run r;
  cmd (s, cwd, command, &r);
  if (r.status != 0 || strcmp (r.out, out) != 0 || r.err_len)
    print_message ("# command: %s\n# status %d\n# stdout: %s\n# stderr: %s\n",
                   command, r.status, r.out, r.err);
  assert_int_equal (r.status, 0);
  assert_string_equal (r.out, out);
  assert_string_equal (r.err, "");
  run_free (&r);
}

static char *
snapshot (struct sess *s)
{
  assert_non_null (s->st.snapshot);
  char *text = strdup (s->st.snapshot);
  assert_non_null (text);
  return text;
}

static char *
fmt (const char *f, ...) __attribute__ ((format (printf, 1, 2)));

static char *
fmt (const char *f, ...)
{
  va_list ap;
  char *s;
  va_start (ap, f);
  assert_true (vasprintf (&s, f, ap) >= 0);
  va_end (ap);
  return s;
}

/* The state never touches the sandbox's files: nothing but what the
   tests made is in the session's tree. */
static void
assert_no_temporaries (struct sess *s)
{
  char *cmdline = fmt ("ls -A '%s'", s->root);
  FILE *p = popen (cmdline, "r");
  assert_non_null (p);
  char line[PATH_MAX];
  while (fgets (line, sizeof line, p))
    assert_true (strcmp (line, "work\n") == 0 || strcmp (line, "home\n") == 0);
  pclose (p);
  free (cmdline);
}

/* Run one background job of the session s, fd 3 watched. */
static void
job_full (struct sess *s, const char *cwd, const char *command,
          const char *in, size_t in_len, struct run *r)
{
  char *script = shell_job_script (&s->st, cwd, command);
  assert_non_null (script);
  run_script (script, s->root, in, in_len, NULL, true, r);
  free (script);
}

static void
job (struct sess *s, const char *cwd, const char *command, struct run *r)
{
  job_full (s, cwd, command, NULL, 0, r);
}

/* Start a job without waiting for it (stdio on /dev/null, fd 3 a pipe
   whose read end is *meta_fd): for jobs that outlive later commands. */
static pid_t
job_start (struct sess *s, const char *cwd, const char *command, int *meta_fd)
{
  char *script = shell_job_script (&s->st, cwd, command);
  assert_non_null (script);
  const char *envp[N_ELEMENTS (base_env) + 1];
  for (size_t i = 0; i < N_ELEMENTS (base_env); i++)
    envp[i] = base_env[i];
  envp[N_ELEMENTS (base_env)] = NULL;
  int pmeta[2], psc[2];
  assert_int_equal (pipe2 (pmeta, O_CLOEXEC), 0);
  assert_int_equal (pipe2 (psc, O_CLOEXEC), 0);
  pid_t pid = fork ();
  assert_true (pid >= 0);
  if (pid == 0)
    {
      signal (SIGPIPE, SIG_DFL);
      int null = open ("/dev/null", O_RDWR);
      dup2 (null, 0);
      dup2 (null, 1);
      dup2 (null, 2);
      dup2 (pmeta[1], 3);
      dup2 (psc[0], 4);
      if (chdir (s->root) != 0)
        _exit (120);
      const char *argv[] = { "bash", "-c", SHELL_SCRIPT_LOADER, NULL };
      execve (BASH, (char *const *) argv, (char *const *) envp);
      _exit (121);
    }
  close (psc[0]);
  feed_script (psc[1], script);
  close (pmeta[1]);
  *meta_fd = pmeta[0];
  free (script);
  return pid;
}

static char *
cwd_record (struct sess *s)
{
  assert_non_null (s->st.cwd);
  return fmt ("%s\n", s->st.cwd);
}

/* Tests */

static void
test_quote (void **state)
{
  (void) state;
  static const struct
  {
    const char *in, *out;
  } cases[] = {
    { "", "''" },
    { "abc", "'abc'" },
    { "it's", "'it'\\''s'" },
    { "'", "''\\'''" },
    { "a b\nc", "'a b\nc'" },
  };
  for (size_t i = 0; i < N_ELEMENTS (cases); i++)
    {
      char *q = shell_quote (cases[i].in);
      assert_string_equal (q, cases[i].out);
      free (q);
    }
  /* And bash reads every nasty string back as the one word it was. */
  static const char *const words[] = {
    "", "'", "''", "a'b'c", "$HOME `id` $(id) \\ \" !x !! *",
    "new\nline", "héllo ✓", "-n", "\t lead and trail \t", "\x01\x7f\xff",
  };
  for (size_t i = 0; i < N_ELEMENTS (words); i++)
    {
      char *q = shell_quote (words[i]);
      char *script = fmt ("set -- %s; printf '%%s|%%s' \"$#\" \"$1\"", q);
      struct run r;
      run_script (script, "/", NULL, 0, NULL, false, &r);
      char *want = fmt ("1|%s", words[i]);
      assert_int_equal (r.status, 0);
      assert_string_equal (r.out, want);
      run_free (&r);
      free (want);
      free (script);
      free (q);
    }
}

/* The report on fd 3 is kept only whole: a command killed at any point
   of it (any prefix), or one that wrote more, leaves the state as it was. */
static void
test_state_take (void **state)
{
  (void) state;
  static const char whole[]
      = "declare -x A=\"1\"\ndeclare -x AIRLOCK_SESSION=\"s\"\n"
        "declare -rx AIRLOCK_RO=\"secret\"\ndeclare -x AIRLOCK_NO_VALUE\n"
        "declare -x __airlock_ec=\"0\"\ndeclare -x AIRLOCKED=\"kept\"\n"
        "declare -x B=$'two\\nlines'\n"
        "\0f () \n{ \n    declare -x AIRLOCK_IN_BODY=1\n}\nalias ll='ls -l'\n"
        "\0/work/dir\0";
  size_t len = sizeof whole - 1;
  struct shell_state st = { 0 };
  assert_int_equal (shell_state_take (&st, whole, len), 1);
  assert_string_equal (st.cwd, "/work/dir");
  assert_string_equal (st.snapshot,
                       "# airlock shell snapshot\n"
                       "declare -x A=\"1\"\ndeclare -x AIRLOCKED=\"kept\"\n"
                       "declare -x B=$'two\\nlines'\n"
                       "f () \n{ \n    declare -x AIRLOCK_IN_BODY=1\n}\n"
                       "alias ll='ls -l'\n");
  char *first = strdup (st.snapshot);
  for (size_t n = 0; n < len; n++)
    {
      assert_int_equal (shell_state_take (&st, whole, n), 0);
      assert_string_equal (st.snapshot, first);
      assert_string_equal (st.cwd, "/work/dir");
    }
  static const char *const bad[] = {
    "a\0b\0/c\0/d\0", /* a fourth part */
    "a\0b\0relative\0",
    "a\0b\0\0",
    "\0\0/x\0trailing",
  };
  static const size_t bad_len[] = { 11, 13, 5, 13 };
  for (size_t i = 0; i < N_ELEMENTS (bad); i++)
    {
      assert_int_equal (shell_state_take (&st, bad[i], bad_len[i]), 0);
      assert_string_equal (st.snapshot, first);
    }
  /* Bounded. */
  size_t big = SHELL_REPORT_MAX + 1;
  char *huge = malloc (big);
  assert_non_null (huge);
  memset (huge, 'x', big);
  huge[big - 1] = '\0';
  huge[big - 2] = '/';
  huge[big - 3] = '\0';
  huge[big - 4] = '\0';
  assert_int_equal (shell_state_take (&st, huge, big), 0);
  assert_int_equal (shell_state_take (&st, huge + 1, big - 1), 1);
  assert_string_equal (st.cwd, "/");
  free (huge);
  free (first);
  shell_state_free (&st);
  assert_null (st.snapshot);
}

static void
test_bootstrap (void **state)
{
  struct sess *s = *state;
  assert_no_temporaries (s);
  char *cwd = cwd_record (s);
  char *want = fmt ("%s\n", s->work);
  assert_string_equal (cwd, want);
  free (cwd);

  char *snap = snapshot (s);
  assert_non_null (strstr (snap, "declare -x FROMENV=\"inherited\""));
  assert_null (strstr (snap, "AIRLOCK_"));
  assert_null (strstr (snap, "__airlock"));
  free (snap);

  /* Again, from a subdirectory given relative to where the shell starts:
     the cwd is reported and recorded. */
  struct run r;
  bootstrap (s, "work/sub", NULL, &r);
  assert_int_equal (r.status, 0);
  assert_string_equal (r.out, "");
  assert_string_equal (r.err, "");
  free (want);
  want = fmt ("%s/sub\n", s->work);
  assert_string_equal (r.meta, want);
  run_free (&r);
  expect (s, NULL, "pwd", want);
  free (want);
}

static void
test_bootstrap_failures (void **state)
{
  struct sess *s = *state;
  struct run r;

  /* The initial directory does not exist: 126, nothing reported. */
  char *script = shell_bootstrap_script ("/nonexistent/dir");
  run_script (script, s->root, NULL, 0, NULL, true, &r);
  assert_int_equal (r.status, SHELL_EXIT_NO_CWD);
  assert_string_equal (
      r.err, "airlock: cannot change to working directory /nonexistent/dir: "
             "no such directory\n");
  assert_int_equal (r.report_len, 0);
  run_free (&r);

  /* No channel to report on: 125, said. */
  run_script (script, s->root, NULL, 0, NULL, false, &r);
  assert_int_equal (r.status, SHELL_EXIT_NO_CWD);
  run_free (&r);
  free (script);
  script = shell_bootstrap_script (NULL);
  run_script (script, s->root, NULL, 0, NULL, false, &r);
  free (script);
  assert_int_equal (r.status, SHELL_EXIT_NO_STATE);
  assert_string_equal (r.err, "airlock: cannot report the session state on fd 3\n");
  run_free (&r);
  assert_no_temporaries (s);
}

static void
test_cwd_persistence (void **state)
{
  struct sess *s = *state;
  char *sub = fmt ("%s/sub\n", s->work);
  char *work = fmt ("%s\n", s->work);
  char *home = fmt ("%s\n", s->home);

  /* cd in one command, pwd in the next. */
  expect (s, NULL, "cd sub", "");
  expect (s, NULL, "pwd", sub);
  expect (s, NULL, "cd ..; mkdir -p deep/er", "");
  expect (s, NULL, "pwd", work);

  /* An explicit cwd wins, and is where the next command starts. */
  char *abs_sub = fmt ("%s/sub", s->work);
  expect (s, abs_sub, "pwd", sub);
  expect (s, NULL, "pwd", sub);
  /* Relative: from the recorded directory. */
  char *deep = fmt ("%s/deep\n", s->work);
  expect (s, "../deep", "pwd", deep);
  free (deep);
  expect (s, "er", "basename \"$PWD\"", "er\n");
  /* ~ is the session's $HOME. */
  expect (s, "~", "pwd", home);
  expect (s, abs_sub, "cd ~", "");
  expect (s, NULL, "pwd", home);

  /* The recorded directory is physical; the report on fd 3 says it too. */
  char *link = fmt ("%s/link-to-sub", s->work);
  assert_int_equal (symlink (abs_sub, link), 0);
  struct run r;
  cmd (s, link, "echo \"$PWD\"", &r);
  assert_int_equal (r.status, 0);
  char *want_logical = fmt ("%s\n", link);
  assert_string_equal (r.out, want_logical);
  assert_string_equal (r.meta, sub);
  run_free (&r);
  char *recorded = cwd_record (s);
  assert_string_equal (recorded, sub);

  free (recorded);

  /* Spaces at both ends and a newline in the name. */
  expect (s, NULL, "mkdir -p ' odd\nname ' && cd ' odd\nname '", "");
  char *odd = fmt ("[%s/sub/ odd\nname ]", s->work);
  expect (s, NULL, "printf '[%s]' \"$PWD\"", odd);
  recorded = cwd_record (s);
  assert_int_equal (strlen (recorded), strlen (odd) - 1);
  free (recorded);
  free (odd);
  free (want_logical);
  free (link);
  free (abs_sub);
  free (sub);
  free (work);
  free (home);
  assert_no_temporaries (s);
}

static void
test_export_and_unset (void **state)
{
  struct sess *s = *state;
  expect (s, NULL, "export FOO=bar; BAR=not-exported", "");
  expect (s, NULL, "echo \"$FOO ${BAR-unset} $FROMENV\"",
          "bar unset inherited\n");
  /* A child process sees it: it is really exported. */
  expect (s, NULL, "sh -c 'echo $FOO'", "bar\n");
  /* FROMENV is in every command's process environment: the unset must
     still stick. */
  expect (s, NULL, "unset FOO FROMENV", "");
  expect (s, NULL, "echo \"${FOO-unset} ${FROMENV-unset}\"; env | grep -c '^FROMENV=' || :",
          "unset unset\n0\n");
  expect (s, NULL, "echo \"${FOO-unset} ${FROMENV-unset}\"", "unset unset\n");
  /* Exported, then changed by a later command, then removed. */
  expect (s, NULL, "export X=1", "");
  expect (s, NULL, "X=2", "");
  expect (s, NULL, "echo $X; export -n X", "2\n");
  expect (s, NULL, "echo \"${X-unset}\"; sh -c 'echo \"${X-unset}\"'",
          "unset\nunset\n");
  /* Attributes come back too. */
  expect (s, NULL, "declare -ix NUM=5", "");
  expect (s, NULL, "NUM+=1+1; echo $NUM", "7\n");
}

static void
test_functions_and_aliases (void **state)
{
  struct sess *s = *state;
  expect (s, NULL,
          "greet () { echo \"hello, $1\"; }\n"
          "function a-b.c { echo dashed; }\n"
          "function a:b { echo colon; }\n"
          "multi () {\n  local x=\"it's\"\n  cat <<EOF\n$x here\nEOF\n}\n"
          "exported () { echo from-child; }\n"
          "export -f exported\n"
          "alias ll='echo aliased'\n"
          "alias q='echo \"dq\" '\\''sq'\\'''\n"
          "alias -- -dash='echo minus'",
          "");
  expect (s, NULL, "greet you; a-b.c; a:b; multi",
          "hello, you\ndashed\ncolon\nit's here\n");
  /* Aliases expand in the next command, on any line of it. */
  expect (s, NULL, "ll one\nq\n-dash", "aliased one\ndq sq\nminus\n");
  /* An exported function reaches a child bash. */
  expect (s, NULL, BASH " -c exported", "from-child\n");
  /* Removal persists. */
  expect (s, NULL, "unset -f greet; unalias ll", "");
  expect (s, NULL, "type -t greet ll || echo gone", "gone\n");
  /* An alias defined and used in the same command works from the next
     line on, as in an interactive shell with expand_aliases. */
  expect (s, NULL, "alias now='echo now'\nnow", "now\n");
  char *snap = snapshot (s);
  assert_null (strstr (snap, "__airlock"));
  free (snap);
}

static void
test_airlock_never_saved (void **state)
{
  struct sess *s = *state;
  expect (s, NULL,
          "export AIRLOCK_EXTRA=secret-value AIRLOCK_SESSION=changed\n"
          "declare -rx AIRLOCK_RO=ro-value\n"
          "export AIRLOCK_NO_VALUE; declare -x AIRLOCK_DECLARED\n"
          "export DECOY=\"declare -x AIRLOCK_X=in-a-value\"\n"
          "export NORMAL=kept\n"
          "echo \"$AIRLOCK_SESSION\"",
          "changed\n");
  char *snap = snapshot (s);
  assert_null (strstr (snap, "\ndeclare -x AIRLOCK_"));
  assert_null (strstr (snap, "\ndeclare -rx AIRLOCK_"));
  assert_null (strstr (snap, "AIRLOCK_SESSION"));
  assert_null (strstr (snap, "AIRLOCK_NO_VALUE"));
  assert_null (strstr (snap, "AIRLOCK_DECLARED"));
  assert_null (strstr (snap, "secret-value"));
  assert_null (strstr (snap, "ro-value"));
  assert_non_null (strstr (snap, "NORMAL=\"kept\""));
  assert_non_null (strstr (snap, "DECOY=\"declare -x AIRLOCK_X=in-a-value\""));
  free (snap);
  /* The next command sees only what its caller gives it. */
  expect (s, NULL,
          "echo \"${AIRLOCK_EXTRA-unset} ${AIRLOCK_RO-unset} $AIRLOCK_SESSION $NORMAL\"",
          "unset unset test-session kept\n");
  static const char *const again[] = { "AIRLOCK_EXTRA=given-again", NULL };
  struct run r;
  cmd_full (s, NULL, "echo \"$AIRLOCK_EXTRA\"; sh -c 'echo $AIRLOCK_SESSION'",
            NULL, 0, again, &r);
  assert_int_equal (r.status, 0);
  assert_string_equal (r.out, "given-again\ntest-session\n");
  run_free (&r);
  /* Even when the command exits through the trap, under set -a. */
  cmd (s, NULL, "set -a; AIRLOCK_TRAPPED=1; OTHER=2; exit 3", &r);
  assert_int_equal (r.status, 3);
  run_free (&r);
  snap = snapshot (s);
  assert_null (strstr (snap, "\ndeclare -x AIRLOCK_"));
  assert_null (strstr (snap, "AIRLOCK_TRAPPED"));
  assert_null (strstr (snap, "__airlock"));
  assert_non_null (strstr (snap, "OTHER=\"2\""));
  free (snap);
}

static void
test_exit_codes (void **state)
{
  struct sess *s = *state;
  static const struct
  {
    const char *command;
    int status;
  } cases[] = {
    { "true", 0 },
    { "false", 1 },
    { "sh -c 'exit 42'", 42 },
    { "(exit 42)", 42 },
    { "exit 7", 7 },
    { "f () { exit 9; }\nif f; then echo no; fi", 9 },
    { "false; exit", 1 },
    { "set -e; false; echo not-reached", 1 },
    { "set -e; sh -c 'exit 3'; echo not-reached", 3 },
    { "set -eo pipefail; false | true; echo not-reached", 1 },
    { "set -u; echo \"$undefined_variable\"; echo not-reached", 127 },
    { "if then", 2 },
    { "kill -TERM $$", 143 },
    { "return 5", 2 },
  };
  for (size_t i = 0; i < N_ELEMENTS (cases); i++)
    {
      struct run r;
      cmd (s, NULL, cases[i].command, &r);
      if (r.status != cases[i].status)
        print_message ("# %s: %d\n", cases[i].command, r.status);
      assert_int_equal (r.status, cases[i].status);
      assert_null (strstr (r.out, "no"));
      assert_null (strstr (r.err, "__airlock"));
      assert_null (strstr (r.err, "airlock: warning"));
      run_free (&r);
      /* The same as bash running it as a script. */
      run_script (cases[i].command, s->work, NULL, 0, NULL, false, &r);
      assert_int_equal (r.status, cases[i].status);
      run_free (&r);
    }

  /* A command that looks like an option is still a command. */
  struct run r0;
  cmd (s, NULL, "-n", &r0);
  assert_int_equal (r0.status, 127);
  assert_non_null (strstr (r0.err, "command not found"));
  run_free (&r0);

  /* The state is saved on every path out. */
  struct run r;
  cmd (s, NULL, "export E7=yes; cd sub; exit 7", &r);
  assert_int_equal (r.status, 7);
  run_free (&r);
  char *want = fmt ("yes %s/sub\n", s->work);
  expect (s, NULL, "echo \"$E7 $PWD\"", want);
  free (want);
  cmd (s, NULL, "set -e; export SE=1; cd ..; false; echo not-reached", &r);
  assert_int_equal (r.status, 1);
  assert_string_equal (r.out, "");
  run_free (&r);
  /* and options are not: set -e is gone. */
  want = fmt ("1 %s\nafter\n", s->work);
  expect (s, NULL, "echo \"$SE $PWD\"; false; echo after", want);
  free (want);
  cmd (s, NULL, "set -u; export SU=1; echo \"$nope\"", &r);
  assert_int_equal (r.status, 127);
  run_free (&r);
  expect (s, NULL, "echo \"$SU ${nope-unset}\"", "1 unset\n");
  assert_no_temporaries (s);
}

static void
test_own_exit_trap (void **state)
{
  struct sess *s = *state;
  struct run r;
  /* The command's own EXIT trap runs, and the state is still saved. */
  cmd (s, NULL, "trap 'echo bye' EXIT; export T1=1; echo body", &r);
  assert_int_equal (r.status, 0);
  assert_string_equal (r.out, "body\nbye\n");
  run_free (&r);
  cmd (s, NULL, "trap 'echo bye; exit 4' EXIT; export T2=2", &r);
  assert_int_equal (r.status, 4);
  assert_string_equal (r.out, "bye\n");
  run_free (&r);
  expect (s, NULL, "echo $T1 $T2", "1 2\n");
  /* Replacing the trap and then exiting saves nothing, but the previous
     state stays whole and the status is the command's. */
  cmd (s, NULL, "trap - EXIT; export LOST=1; cd sub; exit 6", &r);
  assert_int_equal (r.status, 6);
  run_free (&r);
  char *want = fmt ("unset %s\n", s->work);
  expect (s, NULL, "echo \"${LOST-unset} $PWD\"", want);
  /* So does a command killed outright. */
  cmd (s, NULL, "export KILLED=1; cd sub; kill -KILL $$", &r);
  assert_int_equal (r.status, 128 + SIGKILL);
  assert_string_equal (r.meta, "");
  run_free (&r);
  expect (s, NULL, "echo \"${KILLED-unset} $PWD\"", want);
  free (want);
  /* exec: the shell is gone, nothing saved, the program's status. */
  cmd (s, NULL, "export EXECED=1; exec sh -c 'exit 12'", &r);
  assert_int_equal (r.status, 12);
  run_free (&r);
  expect (s, NULL, "echo \"${EXECED-unset}\"", "unset\n");
  assert_no_temporaries (s);
}

static void
test_missing_cwd (void **state)
{
  struct sess *s = *state;
  char *before = snapshot (s);
  struct run r;
  cmd (s, "/nonexistent/dir", "echo ran; export RAN=1", &r);
  assert_int_equal (r.status, SHELL_EXIT_NO_CWD);
  assert_string_equal (r.out, "");
  assert_string_equal (
      r.err, "airlock: cannot change to working directory /nonexistent/dir: "
             "no such directory\n");
  assert_string_equal (r.meta, "");
  run_free (&r);

  char *file = fmt ("%s/a-file", s->work);
  FILE *f = fopen (file, "w");
  assert_non_null (f);
  fclose (f);
  cmd (s, file, "echo ran", &r);
  assert_int_equal (r.status, SHELL_EXIT_NO_CWD);
  assert_non_null (strstr (r.err, "not a directory"));
  run_free (&r);
  cmd (s, "missing-relative", "echo ran", &r);
  assert_int_equal (r.status, SHELL_EXIT_NO_CWD);
  char *msg = fmt ("airlock: cannot change to working directory "
                   "%s/missing-relative: no such directory\n", s->work);
  assert_string_equal (r.err, msg);
  free (msg);
  run_free (&r);

  /* Nothing changed. */
  char *after = snapshot (s);
  assert_string_equal (before, after);
  char *work = fmt ("%s\n", s->work);
  char *out = fmt ("%sunset\n", work);
  expect (s, NULL, "pwd; echo \"${RAN-unset}\"", out);
  free (out);

  /* The recorded directory removed behind the session's back. */
  expect (s, NULL, "mkdir -p gone && cd gone", "");
  char *gone = fmt ("%s/gone", s->work);
  assert_int_equal (rmdir (gone), 0);
  cmd (s, NULL, "echo ran", &r);
  assert_int_equal (r.status, SHELL_EXIT_NO_CWD);
  msg = fmt ("airlock: cannot change to working directory %s: "
             "no such directory\n", gone);
  assert_string_equal (r.err, msg);
  run_free (&r);
  /* An explicit cwd gets out of it. */
  expect (s, s->work, "pwd", work);
  expect (s, NULL, "pwd", work);

  free (msg);
  free (gone);
  free (work);
  free (file);
  free (before);
  free (after);
}

static void
test_cwd_removed_by_command (void **state)
{
  struct sess *s = *state;
  struct run r;
  cmd (s, NULL, "mkdir -p doomed/deeper && cd doomed/deeper && rm -rf ../../doomed && echo ok",
       &r);
  assert_int_equal (r.status, 0);
  assert_string_equal (r.out, "ok\n");
  assert_string_equal (r.err, "");
  /* The nearest surviving ancestor is recorded and reported. */
  char *work = fmt ("%s\n", s->work);
  assert_string_equal (r.meta, work);
  run_free (&r);
  expect (s, NULL, "pwd", work);
  /* The same when it exits from the removed directory. */
  cmd (s, NULL, "mkdir -p sub/tmp && cd sub/tmp && rmdir ../tmp && exit 3", &r);
  assert_int_equal (r.status, 3);
  run_free (&r);
  char *sub = fmt ("%s/sub\n", s->work);
  expect (s, NULL, "pwd", sub);
  free (sub);
  free (work);
  assert_no_temporaries (s);
}

/* Multi-line commands, heredocs and every kind of quote: compared with
   what bash does running the same text as a script. */
static void
test_script_semantics (void **state)
{
  struct sess *s = *state;
  static const char *const commands[] = {
    "cat <<EOF\nhello $HOME \"dq\" 'sq' $((6 * 7))\n  indented \\$ escaped\nEOF\n",
    "cat <<'EOF'\n$HOME `not run` \\ 'single' \"double\"\nEOF",
    "cat <<-EOF\n\ttab-stripped $FROMENV\n\tEOF\necho after",
    "cat <<A; cat <<B\nfirst\nA\nsecond\nB",
    "x='it'\\''s'; echo \"$x\" 'single \"double\"' $'ansi\\tc\\x41\\n' \"back\\\\slash\"",
    "echo `echo backtick` $(echo dollar $(echo nested)) \"$(printf '%s' \"in quotes\")\"",
    "if true; then\n  echo multi\nfi\nfor i in 1 2 3; do echo \"$i\"; done # trailing comment",
    "echo line1 \\\n  continued \\\n  again",
    "f () {\n  echo \"in f: $1 $#\"\n}\nf 'arg with spaces' two",
    "printf '%s\\n' \"a b\" c 'd  e'; echo \"${FROMENV:0:3}\" ${#FROMENV}",
    "case x in\n  x) echo matched ;;\n  *) echo no ;;\nesac",
    "echo out; echo err >&2; false",
    "read -r line <<< \"here string\"; echo \"[$line]\"",
    "arr=(a 'b c' d); echo \"${#arr[@]} ${arr[1]}\"",
    "echo 'unterminated",
    "echo no newline at end",
    "echo 'a'\"b\"$'c'\\d",
    "echo !bang '!' \"!\"; echo \"$0\"",
    "exit 5\necho not-reached",
    "readonly RO=1; RO=2; echo not-reached",
    "echo before; : \"${unset_var?is required}\"; echo not-reached",
    "shopt -s failglob; echo /nonexistent/*; echo after",
  };
  for (size_t i = 0; i < N_ELEMENTS (commands); i++)
    {
      struct run got, want;
      cmd (s, s->work, commands[i], &got);
      run_script (commands[i], s->work, NULL, 0, NULL, false, &want);
      if (got.status != want.status || strcmp (got.out, want.out) != 0)
        print_message ("# command: %s\n# session: %d [%s]\n# bash: %d [%s]\n",
                       commands[i], got.status, got.out, want.status,
                       want.out);
      assert_int_equal (got.status, want.status);
      assert_string_equal (got.out, want.out);
      /* The same complaints, if any (bash's line numbers aside). */
      assert_int_equal (got.err_len != 0, want.err_len != 0);
      run_free (&got);
      run_free (&want);
    }
}

static void
test_stdin (void **state)
{
  struct sess *s = *state;
  size_t n = 1 << 20;
  char *data = malloc (n);
  assert_non_null (data);
  uint32_t x = 12345;
  for (size_t i = 0; i < n; i++)
    {
      x = x * 1103515245u + 12345u;
      data[i] = (char) (x >> 24);
    }
  /* Every byte reaches the command, in order. */
  struct run r;
  cmd_full (s, NULL, "cat", data, n, NULL, &r);
  assert_int_equal (r.status, 0);
  assert_int_equal (r.out_len, n);
  assert_memory_equal (r.out, data, n);
  run_free (&r);
  /* The first line is the command's, not eaten by the wrapper. */
  static const char lines[] = "first line\nsecond\nthird\n";
  cmd_full (s, NULL, "read -r a; echo \"[$a]\"; wc -l", lines,
            sizeof lines - 1, NULL, &r);
  assert_int_equal (r.status, 0);
  assert_string_equal (r.out, "[first line]\n2\n");
  run_free (&r);
  /* And the state is still saved after a command that read it all. */
  cmd_full (s, NULL, "export READ=$(wc -c)", lines, sizeof lines - 1, NULL,
            &r);
  assert_int_equal (r.status, 0);
  run_free (&r);
  expect (s, NULL, "echo $READ", "24\n");
  free (data);
}

static void
test_many_commands (void **state)
{
  struct sess *s = *state;
  enum
  {
    N = 200
  };
  /* The steady cost: small state, no cd (the cwd file is left alone). */
  double steady = 0;
  for (int i = 0; i < N / 2; i++)
    {
      struct run r;
      cmd (s, NULL, "export K=$((K + 1))", &r);
      assert_int_equal (r.status, 0);
      steady += r.ms;
      run_free (&r);
    }
  expect (s, NULL, "echo $K", "100\n");

  double total = 0;
  for (int i = 0; i < N; i++)
    {
      /* Each command checks what the previous one left: the counter, the
         directory, the previous command's alias and function. */
      const char *here = i % 2 ? "/sub" : "";
      char *check
          = i ? fmt ("type -t a_%d f_%d >/dev/null || exit 97\n", i - 1, i - 1)
              : strdup ("");
      char *command
          = fmt ("[ \"${N:-0}\" = %d ] || exit 99\n"
                 "[ \"$PWD\" = '%s%s' ] || exit 98\n%s"
                 "export N=$((${N:-0} + 1))\n"
                 "alias a_%d='echo %d'; f_%d () { :; }\n"
                 "cd %s",
                 i, s->work, here, check, i, i, i, i % 2 ? ".." : "sub");
      struct run r;
      cmd (s, NULL, command, &r);
      if (r.status != 0)
        print_message ("# command %d: status %d, %s", i, r.status, r.err);
      assert_int_equal (r.status, 0);
      total += r.ms;
      run_free (&r);
      free (command);
      free (check);
    }
  expect (s, NULL, "echo $N; a_199", "200\n199\n");

  /* The same number of bare `bash -c` runs, for the wrapper's cost. */
  double bare = 0;
  for (int i = 0; i < N; i++)
    {
      struct run r;
      run_script ("export N=1; cd sub", s->work, NULL, 0, NULL, false, &r);
      bare += r.ms;
      run_free (&r);
    }
  print_message ("# bare bash -c: %.2f ms per command\n"
                 "# %d commands, small state, same cwd: %.2f ms per command "
                 "(wrapper: +%.2f ms)\n"
                 "# %d commands, each a cd and a new alias and function: "
                 "%.2f ms per command (wrapper: +%.2f ms)\n",
                 bare / N, N / 2, steady / (N / 2), steady / (N / 2) - bare / N,
                 N, total / N, (total - bare) / N);
  /* Figures only: timing is for make bench, never a verdict here. */
  assert_no_temporaries (s);
}

static void
test_values_survive (void **state)
{
  struct sess *s = *state;
  char big[60001]; /* quoted, the script stays under one argument's 128 KiB */
  for (size_t i = 0; i < sizeof big - 1; i++)
    big[i] = "ab'\"$\\\n x"[i % 10];
  big[sizeof big - 1] = '\0';
  const char *values[] = {
    "two\nlines",
    "it's \"quoted\" `tick` $(not run) ${HOME} \\back\\slash",
    "héllo wörld ✓ 日本語 🙂",
    "\ttab and trailing space ",
    " leading",
    "\x01\x02\x1b[31m\x7f control",
    "\xff\xfe invalid UTF-8 \xc3",
    "=equals=sign=",
    "",
    "-n",
    "*glob?[x]",
    "line\n\n\nmany\n",
    "'",
    "\\",
    big,
  };
  char *assign = strdup ("export");
  char *print = strdup ("printf '%s\\0'");
  for (size_t i = 0; i < N_ELEMENTS (values); i++)
    {
      char *q = shell_quote (values[i]);
      char *a = fmt ("%s V%zu=%s", assign, i, q);
      char *p = fmt ("%s \"$V%zu\"", print, i);
      free (assign);
      free (print);
      free (q);
      assign = a;
      print = p;
    }
  char *want = NULL;
  size_t want_len = 0;
  for (size_t i = 0; i < N_ELEMENTS (values); i++)
    append (&want, &want_len, values[i], strlen (values[i]) + 1);

  expect (s, NULL, assign, "");
  /* Twice: the second time they come from a snapshot written by a shell
     that itself read them from a snapshot.  Then under LANG=C, where bash
     quotes every non-ASCII byte. */
  for (int round = 0; round < 3; round++)
    {
      struct run r;
      cmd (s, NULL, round == 1 ? "export LANG=C" : ":", &r);
      assert_int_equal (r.status, 0);
      run_free (&r);
      cmd (s, NULL, print, &r);
      assert_int_equal (r.status, 0);
      assert_string_equal (r.err, "");
      assert_int_equal (r.out_len, want_len);
      assert_memory_equal (r.out, want, want_len);
      run_free (&r);
    }
  /* A child process gets the same bytes from its environment. */
  struct run r;
  cmd (s, NULL, "sh -c 'printf \"%s\" \"$V0|$V6\"'", &r);
  assert_int_equal (r.status, 0);
  assert_string_equal (r.out, "two\nlines|\xff\xfe invalid UTF-8 \xc3");
  run_free (&r);
  free (want);
  free (assign);
  free (print);
}

static void
test_readonly_and_large_environment (void **state)
{
  struct sess *s = *state;
  /* A readonly export persists, and restoring it is silent. */
  expect (s, NULL, "declare -rx RO=fixed; f () { :; }; readonly -f f", "");
  struct run r;
  cmd (s, NULL, "echo \"$RO\"", &r);
  assert_string_equal (r.out, "fixed\n");
  assert_string_equal (r.err, "");
  run_free (&r);
  /* Assigning it is fatal, as in a script, and changes nothing. */
  cmd (s, NULL, "RO=changed; echo not-reached", &r);
  assert_int_equal (r.status, 1);
  assert_string_equal (r.out, "");
  assert_non_null (strstr (r.err, "RO: readonly variable"));
  run_free (&r);
  expect (s, NULL, "echo \"$RO\"; declare -p RO; declare -F f", "fixed\ndeclare -rx RO=\"fixed\"\nf\n");

  /* 2,000 exported variables of 100 bytes. */
  expect (s, NULL,
          "for ((i = 0; i < 2000; i++)); do\n"
          "  printf -v \"BIG_$i\" '%0100d' \"$i\"; export \"BIG_$i\"\n"
          "done",
          "");
  double t0 = 0;
  for (int i = 0; i < 3; i++)
    {
      cmd (s, NULL, "compgen -e | grep -c '^BIG_'; echo \"${BIG_1999: -4}\"", &r);
      assert_int_equal (r.status, 0);
      assert_string_equal (r.out, "2000\n1999\n");
      assert_string_equal (r.err, "");
      t0 += r.ms;
      run_free (&r);
    }
  print_message ("# with 2000 more exported variables: %.1f ms per command\n",
                 t0 / 3);
  expect (s, NULL, "unset \"${!BIG_@}\"", "");
  expect (s, NULL, "compgen -e | grep -c '^BIG_' || :", "0\n");
}

/* With set -x, the command's own lines are traced one level down
   ("++ ", inside eval); a line at the top level ("+ ") would be the
   wrapper's. */
static void
assert_no_wrapper_trace (const char *err)
{
  for (const char *l = err; *l; l = strchr (l, '\n') ? strchr (l, '\n') + 1 : "")
    if (strncmp (l, "+ ", 2) == 0)
      fail_msg ("wrapper traced: %.60s", l);
  assert_null (strstr (err, "__airlock_save"));
}

/* Whatever the command did to its shell, the save works, stays silent
   and leaks none of its machinery. */
static void
test_hostile_command (void **state)
{
  struct sess *s = *state;
  struct run r;
  cmd (s, NULL,
       "set -euo pipefail -C -x -T -E\n"
       "trap 'echo err-trap' ERR; trap 'true' DEBUG RETURN\n"
       "shopt -s nullglob failglob nocasematch extglob\n"
       "umask 0\n"
       "cd sub\n"
       "cd () { echo fake-cd; return 1; }\n"
       "mv () { echo fake-mv; return 1; }\n"
       "printf () { echo fake-printf; }\n"
       "export () { builtin export \"$@\"; }\n"
       "export PATH=/nonexistent MARK=1\n"
       "alias builtin=false command=false __airlock_finish=false\n"
       "IFS=x",
       &r);
  assert_int_equal (r.status, 0);
  assert_string_equal (r.out, "");
  assert_no_wrapper_trace (r.err);
  assert_null (strstr (r.err, "fake"));
  assert_null (strstr (r.err, "airlock: warning"));
  run_free (&r);
  /* The same, leaving through exit with xtrace on. */
  cmd (s, NULL, "set -x; export MARK2=2; exit 3", &r);
  assert_int_equal (r.status, 3);
  assert_no_wrapper_trace (r.err);
  assert_null (strstr (r.err, "airlock: warning"));
  run_free (&r);
  /* Options, traps and IFS are not state; PATH, functions and aliases
     are. */
  char *want = fmt ("/nonexistent 1 2 %s/sub function alias\n", s->work);
  expect (s, NULL,
          "echo \"$PATH $MARK $MARK2 $PWD $(type -t mv) $(type -t command)\"; "
          "unset -f cd mv printf export; unalias builtin command __airlock_finish",
          want);
  free (want);
  expect (s, NULL,
          "export PATH=/usr/bin:/bin\n"
          "[[ $IFS == $' \\t\\n' && $- != *[euxaCET]* ]] && ! shopt -qo pipefail &&\n"
          "  [ \"$(umask)\" != 0000 ] && trap -p ERR DEBUG RETURN && echo clean",
          "clean\n");
  expect (s, NULL, "cd ..; echo ok", "ok\n");
  char *snap = snapshot (s);
  assert_null (strstr (snap, "__airlock"));
  free (snap);
  assert_no_temporaries (s);
}

/* Background jobs */

/* A job starts from the state the earlier commands left: exports, unsets,
   functions, aliases, the directory; stdin is its own. */
static void
test_job_restores_state (void **state)
{
  struct sess *s = *state;
  expect (s, NULL,
          "export JV='it'\\''s\nhere' ; unset FROMENV\n"
          "jf () { echo \"jf $1\"; }\n"
          "alias ja='echo aliased'\n"
          "cd sub",
          "");
  struct run r;
  job (s, NULL,
       "printf '[%s] %s\\n' \"$JV\" \"${FROMENV-unset}\"; jf x\nja\npwd; "
       "sh -c 'echo \"child $JV\"'; [[ -v __airlock_dir ]] || echo clean",
       &r);
  char *want = fmt ("[it's\nhere] unset\njf x\naliased\n%s/sub\n"
                    "child it's\nhere\nclean\n", s->work);
  if (r.status != 0 || strcmp (r.out, want) != 0)
    print_message ("# status %d\n# stdout: %s\n# stderr: %s\n", r.status,
                   r.out, r.err);
  assert_int_equal (r.status, 0);
  assert_string_equal (r.out, want);
  assert_string_equal (r.err, "");
  assert_string_equal (r.meta, "");
  run_free (&r);
  free (want);

  /* An explicit cwd: absolute, relative to the recorded one, ~. */
  job (s, s->work, "pwd", &r);
  want = fmt ("%s\n", s->work);
  assert_string_equal (r.out, want);
  run_free (&r);
  free (want);
  job (s, "..", "pwd", &r);
  want = fmt ("%s\n", s->work);
  assert_string_equal (r.out, want);
  run_free (&r);
  free (want);
  job (s, "~", "pwd", &r);
  want = fmt ("%s\n", s->home);
  assert_string_equal (r.out, want);
  run_free (&r);
  free (want);

  /* stdin is the job's. */
  static const char lines[] = "one\ntwo\n";
  job_full (s, NULL, "read -r a; echo \"[$a]\"; cat", lines, sizeof lines - 1,
            &r);
  assert_int_equal (r.status, 0);
  assert_string_equal (r.out, "[one]\ntwo\n");
  run_free (&r);

  /* Aliases and functions in the state cannot break the wrapper. */
  expect (s, NULL,
          "alias builtin=false command=false eval=false\n"
          "cd () { return 1; }; shopt () { return 1; }\n"
          "export PATH=/nonexistent",
          "");
  job (s, s->work, "echo \"$PWD $PATH\"", &r);
  want = fmt ("%s /nonexistent\n", s->work);
  assert_int_equal (r.status, 0);
  assert_string_equal (r.out, want);
  assert_string_equal (r.err, "");
  run_free (&r);
  free (want);
}

/* What a job does to its shell is lost with it: the next command sees the
   state as the commands left it, byte for byte. */
static void
test_job_saves_nothing (void **state)
{
  struct sess *s = *state;
  expect (s, NULL, "export KEEP=1; kf () { :; }; alias ka=:", "");
  char *snap_before = snapshot (s);
  char *cwd_before = cwd_record (s);
  static const char *const commands[] = {
    "export NEW=1 KEEP=2; unset FROMENV; unset -f kf; unalias ka\n"
    "nf () { :; }; alias na=:; cd sub",
    "export NEW=1; cd sub; exit 4",
    "set -e; export NEW=1; cd sub; false",
    "trap 'export NEW=1; cd sub' EXIT; export NEW=1",
    "export NEW=1; cd sub; kill -TERM $$",
    "mkdir doomed; cd doomed; rm -rf ../doomed",
  };
  for (size_t i = 0; i < N_ELEMENTS (commands); i++)
    {
      struct run r;
      job (s, NULL, commands[i], &r);
      assert_string_equal (r.meta, "");
      assert_null (strstr (r.err, "airlock"));
      run_free (&r);
      char *snap = snapshot (s);
      char *cwd = cwd_record (s);
      assert_string_equal (snap, snap_before);
      assert_string_equal (cwd, cwd_before);
      free (snap);
      free (cwd);
      assert_no_temporaries (s);
    }
  char *want = fmt ("1 inherited unset function alias %s\n", s->work);
  expect (s, NULL,
          "echo \"$KEEP $FROMENV ${NEW-unset} $(type -t kf) $(type -t ka) $PWD\"; "
          "type -t nf na || :",
          want);
  free (want);

  /* A long job started before a command, ending after it: the command's
     state stays. */
  char *deep = fmt ("%s/sub/deep", s->work);
  assert_int_equal (mkdir (deep, 0755), 0);
  free (deep);
  int meta;
  pid_t pid = job_start (s, NULL,
                         "export LATE=job; cd sub\n"
                         "while [ ! -e ../go ]; do sleep 0.01; done\n"
                         "export LATE=job2; cd ..; cd sub; exit 3",
                         &meta);
  expect (s, NULL, "export LATE=command; cd sub/deep && touch ../../go", "");
  int st;
  assert_int_equal (waitpid (pid, &st, 0), pid);
  assert_true (WIFEXITED (st));
  assert_int_equal (WEXITSTATUS (st), 3);
  char c;
  assert_int_equal (read (meta, &c, 1), 0);
  close (meta);
  want = fmt ("command %s/sub/deep\n", s->work);
  expect (s, NULL, "echo \"$LATE $PWD\"", want);
  free (want);
  assert_no_temporaries (s);
  free (snap_before);
  free (cwd_before);
}

/* A directory that cannot be entered: 126 and the command script's
   message, and the command does not run. */
static void
test_job_missing_cwd (void **state)
{
  struct sess *s = *state;
  char *snap_before = snapshot (s);
  char *file = fmt ("%s/a-file", s->work);
  FILE *f = fopen (file, "w");
  assert_non_null (f);
  fclose (f);
  const char *cwds[] = { "/nonexistent/dir", file, "missing-relative" };
  for (size_t i = 0; i < N_ELEMENTS (cwds); i++)
    {
      struct run rj, rc;
      job (s, cwds[i], "echo ran; touch \"$HOME/ran\"", &rj);
      cmd (s, cwds[i], "echo ran", &rc);
      assert_int_equal (rj.status, SHELL_EXIT_NO_CWD);
      assert_string_equal (rj.out, "");
      assert_string_equal (rj.meta, "");
      assert_non_null (strstr (rj.err, "airlock: cannot change to working directory "));
      assert_string_equal (rj.err, rc.err);
      run_free (&rj);
      run_free (&rc);
    }
  /* The recorded directory removed. */
  expect (s, NULL, "mkdir -p gone && cd gone", "");
  char *gone = fmt ("%s/gone", s->work);
  assert_int_equal (rmdir (gone), 0);
  struct run r;
  job (s, NULL, "echo ran", &r);
  assert_int_equal (r.status, SHELL_EXIT_NO_CWD);
  assert_string_equal (r.out, "");
  char *msg = fmt ("airlock: cannot change to working directory %s: "
                   "no such directory\n", gone);
  assert_string_equal (r.err, msg);
  run_free (&r);
  char *ran = fmt ("%s/ran", s->home);
  assert_int_equal (access (ran, F_OK), -1);
  free (ran);
  free (msg);
  free (gone);
  free (file);
  free (snap_before);
}

static void
test_job_exit_codes (void **state)
{
  struct sess *s = *state;
  static const struct
  {
    const char *command;
    int status;
  } cases[] = {
    { "true", 0 },
    { "false", 1 },
    { "sh -c 'exit 42'", 42 },
    { "exit 7", 7 },
    { "false; exit", 1 },
    { "set -e; false; echo not-reached", 1 },
    { "set -eo pipefail; false | true; echo not-reached", 1 },
    { "set -u; echo \"$undefined_variable\"; echo not-reached", 127 },
    { "if then", 2 },
    { "kill -TERM $$", 143 },
    { "return 5", 2 },
    { "trap 'exit 4' EXIT; true", 4 },
    { "trap 'echo bye' EXIT; exit 6", 6 },
    { "exec sh -c 'exit 12'", 12 },
    { "no-such-command-here", 127 },
  };
  for (size_t i = 0; i < N_ELEMENTS (cases); i++)
    {
      struct run r;
      job (s, NULL, cases[i].command, &r);
      if (r.status != cases[i].status)
        print_message ("# %s: %d %s\n", cases[i].command, r.status, r.err);
      assert_int_equal (r.status, cases[i].status);
      assert_null (strstr (r.out, "not-reached"));
      assert_null (strstr (r.err, "__airlock"));
      assert_string_equal (r.meta, "");
      run_free (&r);
      /* The same as bash running it as a script. */
      run_script (cases[i].command, s->work, NULL, 0, NULL, false, &r);
      assert_int_equal (r.status, cases[i].status);
      run_free (&r);
    }
  /* A command that looks like an option is still a command. */
  struct run r;
  job (s, NULL, "-n", &r);
  assert_int_equal (r.status, 127);
  assert_non_null (strstr (r.err, "command not found"));
  run_free (&r);
  assert_no_temporaries (s);
}

/* fd 3 is closed before the command: neither it nor its children can
   write there, or hold the channel open. */
static void
test_job_fd3_closed (void **state)
{
  struct sess *s = *state;
  struct run r;
  job (s, NULL,
       "if { : >&3; } 2>/dev/null; then echo open; else echo closed; fi\n"
       "sh -c 'echo leak >&3' 2>/dev/null || echo child-closed\n"
       "ls /proc/self/fd/ | sort -n | tr '\\n' ' '",
       &r);
  assert_int_equal (r.status, 0);
  assert_string_equal (r.meta, "");
  assert_true (strncmp (r.out, "closed\nchild-closed\n", 20) == 0);
  /* ls sees the descriptors of a bare `bash -c` started with fd 3
     closed: nothing of the wrapper's. */
  struct run bare;
  run_script ("ls /proc/self/fd/ | sort -n | tr '\\n' ' '", s->work, NULL,
              0, NULL, false, &bare);
  assert_string_equal (r.out + 20, bare.out);
  run_free (&bare);
  run_free (&r);
  /* Also when the command script just used the channel. */
  cmd (s, NULL, "cd sub", &r);
  char *sub = fmt ("%s/sub\n", s->work);
  assert_string_equal (r.meta, sub);
  free (sub);
  run_free (&r);
  job (s, NULL, "echo x >&3", &r);
  assert_int_equal (r.status, 1);
  assert_string_equal (r.meta, "");
  assert_non_null (strstr (r.err, "Bad file descriptor"));
  run_free (&r);
  /* A process the job leaves running does not keep the caller waiting on
     fd 3 (stdio is detached; only fd 3 could hold it). */
  job (s, NULL, "sleep 5 </dev/null >/dev/null 2>&1 & echo $!", &r);
  assert_int_equal (r.status, 0);
  pid_t pid = (pid_t) atoi (r.out);
  assert_true (pid > 0);
  kill (pid, SIGKILL);
  assert_true (r.ms < 4000);
  assert_string_equal (r.meta, "");
  run_free (&r);
}

int
main (void)
{
  signal (SIGPIPE, SIG_IGN);
#define T(f) cmocka_unit_test_setup_teardown (f, sess_setup, sess_teardown)
  const struct CMUnitTest tests[] = {
    cmocka_unit_test (test_quote),
    cmocka_unit_test (test_state_take),
    T (test_bootstrap),
    T (test_bootstrap_failures),
    T (test_cwd_persistence),
    T (test_export_and_unset),
    T (test_functions_and_aliases),
    T (test_airlock_never_saved),
    T (test_exit_codes),
    T (test_own_exit_trap),
    T (test_missing_cwd),
    T (test_cwd_removed_by_command),
    T (test_script_semantics),
    T (test_stdin),
    T (test_many_commands),
    T (test_values_survive),
    T (test_readonly_and_large_environment),
    T (test_hostile_command),
    T (test_job_restores_state),
    T (test_job_saves_nothing),
    T (test_job_missing_cwd),
    T (test_job_exit_codes),
    T (test_job_fd3_closed),
  };
#undef T
  return cmocka_run_group_tests_name ("shell_state", tests, NULL, NULL);
}
