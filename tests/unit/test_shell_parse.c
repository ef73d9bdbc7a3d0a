/* SPDX-License-Identifier: MIT */
/* Unit tests for the approval gate's normalizer and shell tokenizer
 * (policy/normalize.c, policy/shell_parse.c).
 *
 * Expectations are written from what bash does with each line (checked
 * by hand against bash 5.2), not from the code: which words sit at a
 * command position, what a wrapper runs, what a heredoc body is.  Many
 * cases are hostile on purpose: obfuscated names, escape sequences and
 * look-alike characters placed to hide a command, and inputs built to
 * make the parser slow. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shell_parse.h"

#define N_ELEMENTS(a) (sizeof (a) / sizeof ((a)[0]))

/* ---- helpers ---- */

static struct shell_parse *
parse (const char *s)
{
  struct shell_parse *p = shell_parse (s, strlen (s));
  assert_non_null (p);
  assert_non_null (p->normalized);
  return p;
}

static char *
text_of (const struct shell_command *c)
{
  char *t = shell_command_text (c);
  assert_non_null (t);
  return t;
}

/* The commands of `input`, in order: each as its text, "~" in front
 * for a wrapped one. */
static void
expect_cmds (const char *input, const char *const *want)
{
  struct shell_parse *p = parse (input);
  size_t n = 0;
  while (want[n])
    n++;
  bool ok = p->n_cmds == n;
  for (size_t i = 0; ok && i < n; i++)
    {
      const char *w = want[i];
      bool wrapped = w[0] == '~';
      char *t = text_of (&p->cmds[i]);
      ok = strcmp (t, w + wrapped) == 0 && p->cmds[i].wrapped == wrapped;
      free (t);
    }
  if (!ok)
    {
      print_error ("input: %s\n", input);
      for (size_t i = 0; i < p->n_cmds; i++)
        {
          char *t = text_of (&p->cmds[i]);
          print_error ("  got  [%zu] %s%s\n", i, p->cmds[i].wrapped ? "~" : "",
                       t);
          free (t);
        }
      for (size_t i = 0; i < n; i++)
        print_error ("  want [%zu] %s\n", i, want[i]);
    }
  shell_parse_free (p);
  assert_true (ok);
}

#define EXPECT(input, ...)                                                     \
  expect_cmds ((input), (const char *const[]) { __VA_ARGS__, NULL })
#define EXPECT_NONE(input) expect_cmds ((input), (const char *const[]) { NULL })

/* The index of the first command whose text is `t`, or -1. */
static long
find (const struct shell_parse *p, const char *t)
{
  for (size_t i = 0; i < p->n_cmds; i++)
    {
      char *x = text_of (&p->cmds[i]);
      bool same = strcmp (x, t) == 0;
      free (x);
      if (same)
        return (long) i;
    }
  return -1;
}

/* Is there a command named `name` (words[0]) anywhere? */
static bool
runs (const char *input, const char *name)
{
  struct shell_parse *p = parse (input);
  bool found = false;
  for (size_t i = 0; i < p->n_cmds; i++)
    if (strcmp (p->cmds[i].words[0], name) == 0)
      found = true;
  shell_parse_free (p);
  return found;
}

static void
expect_normalized (const char *input, size_t len, const char *want)
{
  char *n = policy_normalize (input, len);
  assert_non_null (n);
  assert_string_equal (n, want);
  free (n);
}

#define NORM(input, want) expect_normalized ((input), strlen (input), (want))

/* ---- normalization ---- */

static void
test_normalize_escapes (void **state)
{
  (void) state;
  /* inside a word, and at a word start before a letter: removed */
  NORM ("r\x1b[0mm -rf /", "rm -rf /");
  NORM ("\x1b[31mls\x1b[0m -l", "ls -l");
  NORM ("r\xc2\x9b" "0mm x", "rm x");            /* C1 CSI in UTF-8 */
  NORM ("\x1b]2\x07" "echo", "echo");           /* OSC ended by BEL */
  NORM ("a\x1b]8\x1b\\b", "ab");                /* OSC ended by ST */
  NORM ("a\x1b" "7b\x1b(Bc", "ab\x1b(Bc");      /* '(' inside: kept */
  NORM ("x\x1b" "Dy", "xy");                    /* two-byte sequence */
  /* a sequence holding ';' (bash splits there): kept as it is */
  NORM ("\x1b[1;31mred", "\x1b[1;31mred");
  NORM ("x \x1b]0;title\x07", "x \x1b]0;title\x07");
  /* at a word start before '#': removing it would invent a comment */
  NORM ("x \x1b[0m#y", "x \x1b[0m#y");
  /* after a backslash: removing it would change what is escaped */
  NORM ("\\\x1b[0m;", "\\\x1b[0m;");
  /* incomplete: kept */
  NORM ("a\x1b[12", "a\x1b[12");
  /* NUL bytes go */
  expect_normalized ("r\0m -rf\0 /", 10, "rm -rf /");
}

static void
test_escapes_cannot_hide_commands (void **state)
{
  (void) state;
  /* bash: ESC[ ; rm -rf /  -- the ';' separates */
  assert_true (runs ("\x1b[;rm -rf /", "rm"));
  /* bash: word "x", word "ESC[0m#", then reboot runs */
  assert_true (runs ("x \x1b[0m#;reboot", "reboot"));
  /* bash: cat < ESC[0m < EOF, then reboot runs: no heredoc */
  assert_true (runs ("cat <\x1b[0m<EOF\nreboot\nEOF", "reboot"));
  /* OSC body with a ';': the command after it is seen */
  assert_true (runs ("x \x1b]0; reboot \x07", "reboot"));
}

static void
test_normalize_nfkc (void **state)
{
  (void) state;
  NORM ("\xef\xbd\x92\xef\xbd\x8d -rf /", "rm -rf /");      /* ｒｍ */
  NORM ("\xef\xac\x81le", "file");                          /* ﬁ ligature */
  NORM ("\xf0\x9d\x90\xab\xf0\x9d\x90\xa6", "rm");          /* math bold rm */
  NORM ("\xef\xbc\x8f" "bin", "/bin");                      /* fullwidth / */
  /* invalid UTF-8 is kept, valid runs around it normalized */
  NORM ("\xff\xfe \xef\xbd\x92m", "\xff\xfe rm");
  NORM ("\xc3\x28\xef\xbd\x8d", "\xc3(m");
  /* results with shell-significant ASCII are not used: ＃ ＇ ＜ ； stay */
  NORM ("x \xef\xbc\x83 ; y", "x \xef\xbc\x83 ; y");
  NORM ("\xef\xbc\x87", "\xef\xbc\x87");
  NORM ("\xef\xbc\x9c\xef\xbc\x9c" "EOF", "\xef\xbc\x9c\xef\xbc\x9c" "EOF");
  NORM ("a\xef\xbc\x9b" "b", "a\xef\xbc\x9b" "b");
  /* no-break space would become a space (a word break bash does not
   * make): kept */
  NORM ("a\xc2\xa0" "b", "a\xc2\xa0" "b");
  /* a run mixing both: letters normalized, the rest kept */
  NORM ("\xef\xbd\x92\xef\xbc\x83\xef\xbd\x8d", "r\xef\xbc\x83m");
}

static void
test_lookalikes_cannot_hide_commands (void **state)
{
  (void) state;
  /* bash reads ＃ ＇ ＼ ＜ as word characters */
  assert_true (runs ("x \xef\xbc\x83 ; rm -rf /", "rm"));
  assert_true (runs ("echo \xef\xbc\x87; rm -rf /", "rm"));
  assert_true (runs ("echo \xef\xbc\xbc; rm -rf /", "rm"));
  assert_true (runs ("cat \xef\xbc\x9c\xef\xbc\x9c" "EOF\nreboot\nEOF", "reboot"));
  assert_true (runs ("\xef\xbd\x92\xef\xbd\x85\xef\xbd\x82\xef\xbd\x8f\xef\xbd"
                     "\x8f\xef\xbd\x94", "reboot"));
}

static void
test_normalize_ifs (void **state)
{
  (void) state;
  NORM ("rm$IFS-rf$IFS/", "rm -rf /");
  NORM ("rm${IFS}-rf${IFS}/", "rm -rf /");
  NORM ("rm${IFS:0:1}-rf${IFS%?}/", "rm -rf /");
  NORM ("r$IFS\"\"m", "r \"\"m");
  /* another variable */
  NORM ("a$IFSX b", "a$IFSX b");
  NORM ("a${IFSX}b", "a${IFSX}b");
  /* an operand that runs something is left to the tokenizer */
  NORM ("a${IFS:+$(reboot)}b", "a${IFS:+$(reboot)}b");
  assert_true (runs ("a${IFS:+$(reboot)}b", "reboot"));
  /* bash removes backslash-newline first */
  NORM ("rm$\\\nIFS-rf", "rm -rf");
  /* a '#' right after stays inside a word, as in bash */
  NORM ("x$IFS#;reboot", "x \\#;reboot");
  assert_true (runs ("x$IFS#;reboot", "reboot"));
  EXPECT ("rm$IFS-rf${IFS}/", "rm -rf /");
}

static void
test_normalize_continuations (void **state)
{
  (void) state;
  NORM ("r\\\nm -rf /", "rm -rf /");
  NORM ("echo a\\\nb; r\\\nm x", "echo ab; rm x");
  /* where bash keeps them: single quotes, comments, $'...', quoted
   * heredocs, after an escaped backslash */
  NORM ("echo 'a\\\nb'", "echo 'a\\\nb'");
  NORM ("# x \\\nreboot", "# x \\\nreboot");
  NORM ("echo $'a\\\nb'", "echo $'a\\\nb'");
  NORM ("cat <<'E'\na\\\nE\nE", "cat <<'E'\na\\\nE\nE");
  NORM ("echo \\\\\nreboot", "echo \\\\\nreboot");
  /* in double quotes and unquoted heredocs: removed */
  NORM ("echo \"a\\\nb\"", "echo \"ab\"");
  NORM ("cat <<E\na\\\nb\nE", "cat <<E\nab\nE");
  /* operators joined across a continuation */
  EXPECT ("a &\\\n& reboot", "a", "reboot");
  /* a comment does not continue: the next line runs */
  EXPECT ("# x \\\nreboot", "reboot");
  EXPECT ("echo \\\\\nreboot", "echo \\", "reboot");
}

static void
test_policy_normalize_matches_parse (void **state)
{
  (void) state;
  const char *inputs[] = {
    "r\\\nm -rf /", "echo 'x", "\x1b[0mls", "cat <<E\na\\\nb\nE\nl\\\ns",
    "rm$IFS/",
  };
  for (size_t i = 0; i < N_ELEMENTS (inputs); i++)
    {
      struct shell_parse *p = parse (inputs[i]);
      char *n = policy_normalize (inputs[i], strlen (inputs[i]));
      assert_non_null (n);
      assert_string_equal (n, p->normalized);
      free (n);
      shell_parse_free (p);
    }
  char *empty = policy_normalize (NULL, 0);
  assert_non_null (empty);
  assert_string_equal (empty, "");
  free (empty);
}

/* ---- words ---- */

static void
test_obfuscated_names (void **state)
{
  (void) state;
  const char *forms[] = {
    "rm -rf /",        "r''m -rf /",          "r\"\"m -rf /",
    "r\\m -rf /",      "\"r\"m -rf /",        "'r'\"m\" -rf /",
    "\\r\\m -rf /",    "$'\\x72\\x6d' -rf /", "$'\\162\\155' -rf /",
    "$'r'm -rf /",     "r$'\\x6d' -rf /",     "\"rm\" '-rf' \"/\"",
    "r\\\nm -rf /",    "rm$IFS-rf$IFS/",      "\xef\xbd\x92\xef\xbd\x8d -rf /",
    "r\x1b[0mm -rf /", "\"/bin/rm\" -rf /",   "/usr/bin/r''m -rf /",
  };
  for (size_t i = 0; i < N_ELEMENTS (forms); i++)
    {
      struct shell_parse *p = parse (forms[i]);
      if (p->n_cmds != 1 || strcmp (p->cmds[0].words[0], "rm") != 0)
        print_error ("form: %s\n", forms[i]);
      assert_int_equal (p->n_cmds, 1);
      assert_string_equal (p->cmds[0].words[0], "rm");
      assert_int_equal (p->cmds[0].n_words, 3);
      assert_string_equal (p->cmds[0].words[1], "-rf");
      assert_string_equal (p->cmds[0].words[2], "/");
      assert_null (p->cmds[0].words[3]);
      shell_parse_free (p);
    }
}

static void
test_ansi_c_quotes (void **state)
{
  (void) state;
  struct shell_parse *p = parse ("echo $'a\\tb\\n\\\\\\'\\x41\\101\\u00e9\\cA\\e\\q'");
  assert_int_equal (p->cmds[0].n_words, 2);
  assert_string_equal (p->cmds[0].words[1], "a\tb\n\\'AA\xc3\xa9\x01\x1b\\q");
  shell_parse_free (p);
  /* a decoded NUL ends the string's contribution (bash: "ac") */
  p = parse ("echo $'a\\x00b'c");
  assert_string_equal (p->cmds[0].words[1], "ac");
  shell_parse_free (p);
  /* inside double quotes, $'...' is literal */
  p = parse ("echo \"$'x'\"");
  assert_string_equal (p->cmds[0].words[1], "$'x'");
  shell_parse_free (p);
}

static void
test_paths (void **state)
{
  (void) state;
  struct shell_parse *p = parse ("/usr/bin/sudo ./rm -rf /");
  assert_int_equal (p->n_cmds, 2);
  assert_string_equal (p->cmds[0].words[0], "sudo");
  assert_string_equal (p->cmds[0].path, "/usr/bin/sudo");
  assert_string_equal (p->cmds[0].words[1], "./rm");
  assert_string_equal (p->cmds[1].words[0], "rm");
  assert_string_equal (p->cmds[1].path, "./rm");
  assert_true (p->cmds[1].wrapped);
  shell_parse_free (p);

  p = parse ("\"/bin/rm\" x; ./sudo y; dir/ z");
  assert_int_equal (p->n_cmds, 4);
  assert_string_equal (p->cmds[0].path, "/bin/rm");
  assert_string_equal (p->cmds[0].words[0], "rm");
  assert_string_equal (p->cmds[1].words[0], "sudo");
  assert_string_equal (p->cmds[1].path, "./sudo");
  /* a trailing slash has no last component: kept whole */
  assert_string_equal (p->cmds[3].words[0], "dir/");
  shell_parse_free (p);
}

static void
test_assignments (void **state)
{
  (void) state;
  EXPECT ("X=1 Y=2 rm -rf /", "rm -rf /");
  EXPECT ("A[1]=2 B+=3 C= rm", "rm");
  EXPECT_NONE ("X=1; Y=2");
  /* a quoted name is no assignment: bash runs "X=1" */
  EXPECT ("\"X\"=1 cmd", "X=1 cmd");
  /* only before the command name */
  EXPECT ("rm X=1", "rm X=1");
  /* the substitution in an assignment still runs */
  EXPECT ("X=$(reboot) Y=2", "reboot");
  /* reserved words are not recognized after an assignment */
  EXPECT ("X=1 if true", "if true");
  /* arrays: words, not a subshell; substitutions in them run */
  EXPECT ("a=(rm -rf /) b+=(\nreboot\n) c=($(halt)); echo ${a[@]}", "halt",
          "echo ${a[@]}");
  /* not an array bash would accept: read on as commands */
  EXPECT ("a=(x; reboot)", "reboot");
}

/* ---- command positions ---- */

static void
test_arguments_are_not_commands (void **state)
{
  (void) state;
  EXPECT ("echo reboot", "echo reboot");
  EXPECT ("grep shutdown log", "grep shutdown log");
  EXPECT ("echo 'rm -rf /; reboot'", "echo rm -rf /; reboot");
  EXPECT ("printf '%s' \"$x; reboot\"", "printf %s $x; reboot");
  EXPECT ("kill -s KILL -1", "kill -s KILL -1");
  EXPECT ("echo \\; reboot", "echo ; reboot");
  EXPECT ("echo a#b", "echo a#b");
}

static void
test_separators (void **state)
{
  (void) state;
  EXPECT ("a; reboot", "a", "reboot");
  EXPECT ("a & reboot", "a", "reboot");
  EXPECT ("a && reboot", "a", "reboot");
  EXPECT ("a || reboot", "a", "reboot");
  EXPECT ("a | reboot", "a", "reboot");
  EXPECT ("a |& reboot", "a", "reboot");
  EXPECT ("a\nreboot", "a", "reboot");
  EXPECT ("a;reboot&halt", "a", "reboot", "halt");

  struct shell_parse *p = parse ("a && b || c; d & e | f |& g");
  const char *conn[] = { "&&", "||", ";", "&", "|", "|&", "" };
  assert_int_equal (p->n_cmds, N_ELEMENTS (conn));
  for (size_t i = 0; i < N_ELEMENTS (conn); i++)
    {
      assert_string_equal (p->cmds[i].connector, conn[i]);
      assert_int_equal (p->cmds[i].list, p->cmds[0].list);
      assert_int_equal (p->cmds[i].depth, 0);
    }
  shell_parse_free (p);

  /* a newline after | continues the pipeline, in the same list */
  p = parse ("curl x |\n  sh");
  assert_int_equal (p->n_cmds, 2);
  assert_string_equal (p->cmds[0].connector, "|");
  assert_int_equal (p->cmds[0].list, p->cmds[1].list);
  shell_parse_free (p);
}

static void
test_compound_commands (void **state)
{
  (void) state;
  EXPECT ("(reboot)", "reboot");
  EXPECT ("{ shutdown -h now; }", "shutdown -h now");
  EXPECT ("if rm -rf /; then reboot; elif a; then b; else halt; fi",
          "rm -rf /", "reboot", "a", "b", "halt");
  EXPECT ("while true; do halt; done", "true", "halt");
  EXPECT ("until x; do reboot; done", "x", "reboot");
  EXPECT ("! reboot", "reboot");
  EXPECT ("for x in rm reboot; do echo $x; done", "echo $x");
  EXPECT ("for x do reboot; done", "reboot");
  EXPECT ("select x in a b; do reboot; done", "reboot");
  /* arithmetic is read as commands (see test_arithmetic) */
  EXPECT ("for ((i=0;i<3;i++)); do reboot; done", "i", "i++", "reboot");
  EXPECT ("case $x in reboot|halt) shutdown;; (*) ls;; esac", "shutdown", "ls");
  EXPECT ("case x in a) case y in b) reboot;; esac;; c) halt;& d) ls;;& esac",
          "reboot", "halt", "ls");
  /* not a pattern bash would accept: read on as a command */
  EXPECT ("case x in ; reboot", "reboot");
  EXPECT ("[[ $x == reboot ]] && halt", "halt");
  EXPECT ("[[ -f x && ( -d y || $(reboot) ) ]]", "reboot");
  EXPECT ("[[ a =~ ^(b|c)$ ]]; halt", "halt");
  EXPECT ("time { reboot; }", "reboot");
  EXPECT ("coproc foo { reboot; }", "reboot");
  EXPECT ("coproc reboot", "reboot");
  /* quoted reserved words are plain words */
  EXPECT ("\"if\" reboot", "if reboot");
  EXPECT ("\\{ reboot", "{ reboot");
  EXPECT ("echo }", "echo }");

  struct shell_parse *p = parse ("(reboot); { halt; }");
  assert_int_equal (p->n_cmds, 2);
  assert_int_equal (p->cmds[0].depth, 1);
  assert_int_equal (p->cmds[1].depth, 1);
  assert_int_not_equal (p->cmds[0].list, p->cmds[1].list);
  shell_parse_free (p);
}

static void
test_functions (void **state)
{
  (void) state;
  EXPECT ("f() { rm -rf /; }", "rm -rf /");
  EXPECT ("function g { reboot; }", "reboot");
  EXPECT ("function g () { reboot; }", "reboot");
  EXPECT (":(){ :|:& };:", ":", ":", ":");
  struct shell_parse *p = parse (":(){ :|:& };:");
  assert_string_equal (p->cmds[0].connector, "|");
  assert_string_equal (p->cmds[1].connector, "&");
  assert_int_equal (p->cmds[0].depth, 1);
  assert_int_equal (p->cmds[2].depth, 0);
  shell_parse_free (p);
}

static void
test_substitutions (void **state)
{
  (void) state;
  struct shell_parse *p = parse ("echo $(rm -rf $(reboot))");
  assert_int_equal (p->n_cmds, 3);
  assert_string_equal (p->cmds[0].words[1], "$(rm -rf $(reboot))");
  assert_int_equal (p->cmds[0].depth, 0);
  assert_string_equal (p->cmds[1].words[0], "rm");
  assert_string_equal (p->cmds[1].words[2], "$(reboot)");
  assert_int_equal (p->cmds[1].depth, 1);
  assert_string_equal (p->cmds[2].words[0], "reboot");
  assert_int_equal (p->cmds[2].depth, 2);
  assert_true (p->cmds[0].list != p->cmds[1].list
               && p->cmds[1].list != p->cmds[2].list);
  shell_parse_free (p);

  EXPECT ("echo `rm \\`reboot\\``", "echo `rm \\`reboot\\``", "rm `reboot`",
          "reboot");
  EXPECT ("echo \"$(reboot)\" '$(halt)'", "echo $(reboot) $(halt)", "reboot");
  EXPECT ("echo \"`reboot`\"", "echo `reboot`", "reboot");
  EXPECT ("echo ${x:-$(reboot)}", "echo ${x:-$(reboot)}", "reboot");
  EXPECT ("echo \"${x:-`reboot`}\"", "echo ${x:-`reboot`}", "reboot");
  EXPECT ("diff <(ls) >(rm x)", "diff <(ls) >(rm x)", "ls", "rm x");
  EXPECT ("echo x<(reboot)", "echo x<(reboot)", "reboot");
  EXPECT ("$(reboot)", "$(reboot)", "reboot");
  EXPECT ("$(echo rm) -rf /", "$(echo rm) -rf /", "echo rm");
  EXPECT ("echo $(echo ')'; reboot)", "echo $(echo ')'; reboot)", "echo )",
          "reboot");
  /* a case statement's ')' does not close the substitution */
  EXPECT ("echo $(case x in a) reboot;; esac)",
          "echo $(case x in a) reboot;; esac)", "reboot");
}

static void
test_arithmetic (void **state)
{
  (void) state;
  /* "<<" is a shift there, not a heredoc: the next line runs */
  assert_true (runs ("echo $((1<<2))\nreboot", "reboot"));
  assert_true (runs ("(( x = 1 << 3 ))\nreboot", "reboot"));
  assert_true (runs ("x=$(( $(reboot) + 1 ))", "reboot"));
  /* what bash reads as a subshell when no "))" closes it */
  assert_true (runs ("$((reboot); echo)", "reboot"));
}

/* ---- wrappers ---- */

static void
test_wrappers (void **state)
{
  (void) state;
  EXPECT ("sudo -u root /usr/bin/rm -rf /", "sudo -u root /usr/bin/rm -rf /",
          "~rm -rf /");
  EXPECT ("sudo -E -H --user=root FOO=1 reboot",
          "sudo -E -H --user=root FOO=1 reboot", "~reboot");
  EXPECT ("doas -u root reboot", "doas -u root reboot", "~reboot");
  EXPECT ("env FOO=1 rm", "env FOO=1 rm", "~rm");
  EXPECT ("env -i -u X - A=1 rm x", "env -i -u X - A=1 rm x", "~rm x");
  EXPECT ("exec -a name rm", "exec -a name rm", "~rm");
  EXPECT ("nohup reboot", "nohup reboot", "~reboot");
  EXPECT ("setsid -f reboot", "setsid -f reboot", "~reboot");
  EXPECT ("time -p reboot", "time -p reboot", "~reboot");
  EXPECT ("command -p reboot", "command -p reboot", "~reboot");
  EXPECT ("command -v reboot", "command -v reboot");
  EXPECT ("builtin echo x", "builtin echo x", "~echo x");
  EXPECT ("xargs rm", "xargs rm", "~rm");
  EXPECT ("xargs -0 -I {} -n 1 -P4 rm {}", "xargs -0 -I {} -n 1 -P4 rm {}",
          "~rm {}");
  EXPECT ("timeout 5 rm", "timeout 5 rm", "~rm");
  EXPECT ("timeout -s KILL -k 1 5s rm", "timeout -s KILL -k 1 5s rm", "~rm");
  EXPECT ("timeout --signal=KILL 5 rm", "timeout --signal=KILL 5 rm", "~rm");
  EXPECT ("nice -n 5 rm", "nice -n 5 rm", "~rm");
  EXPECT ("nice -10 rm", "nice -10 rm", "~rm");
  EXPECT ("ionice -c 3 rm", "ionice -c 3 rm", "~rm");
  EXPECT ("stdbuf -oL -e 0 rm", "stdbuf -oL -e 0 rm", "~rm");
  EXPECT ("chroot /mnt rm", "chroot /mnt rm", "~rm");
  EXPECT ("chroot --userspec=a:b /mnt rm", "chroot --userspec=a:b /mnt rm",
          "~rm");
  EXPECT ("flock -w 5 /tmp/l rm", "flock -w 5 /tmp/l rm", "~rm");
  EXPECT ("unbuffer rm", "unbuffer rm", "~rm");
  EXPECT ("strace -f -o log rm", "strace -f -o log rm", "~rm");
  EXPECT ("busybox rm -rf /", "busybox rm -rf /", "~rm -rf /");
  EXPECT ("sudo -e /etc/passwd", "sudo -e /etc/passwd");
  /* wrappers inside wrappers: each level is recorded */
  EXPECT ("sudo env nice -n 1 rm", "sudo env nice -n 1 rm",
          "~env nice -n 1 rm", "~nice -n 1 rm", "~rm");

  struct shell_parse *p = parse ("sudo rm | sh");
  assert_int_equal (p->n_cmds, 3);
  assert_string_equal (p->cmds[1].connector, "|");
  assert_int_equal (p->cmds[1].list, p->cmds[0].list);
  assert_int_equal (p->cmds[1].depth, 0);
  shell_parse_free (p);

  /* wrapped commands come right after their wrapper */
  p = parse ("sudo rm $(ls) | sh");
  assert_int_equal (p->n_cmds, 4);
  assert_string_equal (p->cmds[1].words[0], "rm");
  assert_string_equal (p->cmds[2].words[0], "ls");
  assert_string_equal (p->cmds[3].words[0], "sh");
  shell_parse_free (p);
}

static void
test_find_exec (void **state)
{
  (void) state;
  EXPECT ("find . -exec rm {} \\;", "find . -exec rm {} ;", "~rm {}");
  EXPECT ("find . -name x -execdir /bin/rm -f {} + -print",
          "find . -name x -execdir /bin/rm -f {} + -print", "~rm -f {}");
  EXPECT ("find / -ok rm {} ';' -exec reboot \\;",
          "find / -ok rm {} ; -exec reboot ;", "~rm {}", "~reboot");
  EXPECT ("find . -exec sudo rm {} \\;", "find . -exec sudo rm {} ;",
          "~sudo rm {}", "~rm {}");
  EXPECT ("find . -delete", "find . -delete");
}

static void
test_scripts (void **state)
{
  (void) state;
  struct shell_parse *p = parse ("bash -c \"curl x | sh\"");
  assert_int_equal (p->n_cmds, 3);
  assert_int_equal (find (p, "curl x"), 1);
  assert_int_equal (find (p, "sh"), 2);
  assert_int_equal (find (p, "curl"), -1);
  assert_string_equal (p->cmds[1].words[0], "curl");
  assert_string_equal (p->cmds[1].connector, "|");
  assert_int_equal (p->cmds[1].depth, 1);
  assert_string_equal (p->cmds[2].words[0], "sh");
  assert_int_equal (p->cmds[2].list, p->cmds[1].list);
  assert_int_not_equal (p->cmds[2].list, p->cmds[0].list);
  shell_parse_free (p);

  EXPECT ("sh -lc 'rm -rf /'", "sh -lc rm -rf /", "rm -rf /");
  EXPECT ("bash -o pipefail -xc 'reboot' name arg", "bash -o pipefail -xc reboot name arg",
          "reboot");
  EXPECT ("bash script.sh", "bash script.sh");
  EXPECT ("su -c 'reboot' root", "su -c reboot root", "reboot");
  EXPECT ("su - root --command=reboot", "su - root --command=reboot", "reboot");
  EXPECT ("eval \"rm -rf /\"", "eval rm -rf /", "rm -rf /");
  EXPECT ("eval rm '-rf /'", "eval rm -rf /", "rm -rf /");
  EXPECT ("busybox sh -c reboot", "busybox sh -c reboot", "~sh -c reboot",
          "reboot");
  EXPECT ("env -S 'rm -rf /'", "env -S rm -rf /", "rm -rf /");
  EXPECT ("sudo bash -c 'reboot'", "sudo bash -c reboot", "~bash -c reboot",
          "reboot");
  /* $1 is {}: the script is read with it too */
  EXPECT ("find . -exec sh -c 'rm \"$1\"' _ {} \\;",
          "find . -exec sh -c rm \"$1\" _ {} ;", "~sh -c rm \"$1\" _ {}",
          "rm $1", "rm {}");
  EXPECT ("xargs -I{} sh -c 'rm {}'", "xargs -I{} sh -c rm {}",
          "~sh -c rm {}", "rm {}");
  EXPECT ("flock /tmp/l -c reboot", "flock /tmp/l -c reboot", "reboot");
  EXPECT ("bash -c 'bash -c \"reboot\"'", "bash -c bash -c \"reboot\"",
          "bash -c reboot", "reboot");
  /* what a shell reads from a pipe of known text */
  EXPECT ("echo 'rm -rf /' | sh", "echo rm -rf /", "sh", "rm -rf /");
  EXPECT ("echo hi | grep x", "echo hi", "grep x");

  p = parse ("bash -c 'bash -c \"reboot\"'");
  assert_int_equal (p->cmds[2].depth, 2);
  shell_parse_free (p);
}

/* ---- heredocs ---- */

static void
test_heredocs (void **state)
{
  (void) state;
  struct shell_parse *p = parse ("cat <<EOF\nrm -rf /\nEOF\necho done");
  assert_int_equal (p->n_cmds, 2);
  assert_string_equal (p->cmds[0].words[0], "cat");
  assert_true (p->cmds[0].heredoc);
  assert_int_equal (p->cmds[0].n_redirs, 1);
  assert_string_equal (p->cmds[0].redirs[0].op, "<<");
  assert_string_equal (p->cmds[0].redirs[0].target, "EOF");
  assert_string_equal (p->cmds[1].words[0], "echo");
  assert_false (p->cmds[1].heredoc);
  shell_parse_free (p);

  /* fed to a shell, the body is a nested list */
  p = parse ("bash <<EOF\nrm -rf /\nEOF\necho done");
  assert_int_equal (p->n_cmds, 3);
  assert_true (p->cmds[0].heredoc);
  assert_string_equal (p->cmds[1].words[0], "rm");
  assert_int_equal (p->cmds[1].depth, 1);
  assert_string_equal (p->cmds[2].words[0], "echo");
  assert_int_equal (p->cmds[2].depth, 0);
  shell_parse_free (p);

  EXPECT ("sh <<'EOF'\nreboot\nEOF", "sh", "reboot");
  EXPECT ("dash <<\"EOF\"\nreboot\nEOF", "dash", "reboot");
  EXPECT ("sudo bash -s <<EOF\nreboot\nEOF", "sudo bash -s", "~bash -s",
          "reboot");
  EXPECT ("busybox sh <<EOF\nreboot\nEOF", "busybox sh", "~sh", "reboot");
  EXPECT ("cat <<EOF | sh\nreboot\nEOF", "cat", "sh", "reboot");
  EXPECT ("cat <<EOF |\nreboot\nEOF\nsh", "cat", "sh", "reboot");
  EXPECT ("cat <<-EOF | sh\n\treboot\n\tEOF\nls", "cat", "sh", "reboot",
          "ls");
  EXPECT ("bash -s arg <<EOF\nreboot\nEOF", "bash -s arg", "reboot");
  EXPECT ("python3 <<EOF\nreboot\nEOF", "python3");
  EXPECT ("bash script <<EOF\nreboot\nEOF", "bash script");
  /* the outer shell expands an unquoted body */
  EXPECT ("cat <<EOF\n$(reboot) `halt`\nEOF", "cat", "reboot", "halt");
  EXPECT ("cat <<'EOF'\n$(reboot)\nEOF", "cat");
  EXPECT ("cat <<\\EOF\n$(reboot)\nEOF", "cat");
  EXPECT ("cat <<E\"O\"F\n$(reboot)\nEOF", "cat");
  /* the body ends at the delimiter line exactly */
  EXPECT ("cat <<EOF\n EOF\nEOFX\nEOF\nreboot", "cat", "reboot");
  EXPECT ("cat <<-EOF\n\t\tEOF\nreboot", "cat", "reboot");
  EXPECT ("cat <<EOF\n\tEOF\nEOF\nreboot", "cat", "reboot");
  /* unquoted: a backslash-newline joins lines before the comparison */
  EXPECT ("cat <<EOF\na\\\nEOF\nreboot\nEOF\nhalt", "cat", "halt");
  EXPECT ("cat <<EOF\na\\\\\nEOF\nreboot", "cat", "reboot");
  /* quoted: it does not */
  EXPECT ("cat <<'EOF'\na\\\nEOF\nreboot", "cat", "reboot");
  /* the rest of the line is read before the body */
  EXPECT ("cat <<EOF; reboot\nbody\nEOF", "cat", "reboot");
  EXPECT ("cat <<A <<B\na\nA\nb\nB\nreboot", "cat", "reboot");
  /* unterminated: to the end */
  EXPECT ("cat <<EOF\nreboot", "cat");
  /* a heredoc left open inside $(...) has no body there (bash runs the
   * next lines) */
  EXPECT ("echo $(cat <<EOF)\nreboot\nEOF", "echo $(cat <<EOF)", "cat",
          "reboot", "EOF");
  /* and one begun before a substitution is read after it */
  EXPECT ("cat <<EOF; echo $(echo a\nreboot)\nbody\nEOF",
          "cat", "echo $(echo a\nreboot)", "echo a", "reboot");

  /* here-strings */
  p = parse ("sh <<< \"rm -rf /\"");
  assert_int_equal (p->n_cmds, 2);
  assert_true (p->cmds[0].heredoc);
  assert_string_equal (p->cmds[0].redirs[0].op, "<<<");
  assert_string_equal (p->cmds[0].redirs[0].target, "rm -rf /");
  assert_string_equal (p->cmds[1].words[0], "rm");
  assert_int_equal (p->cmds[1].depth, 1);
  shell_parse_free (p);
  EXPECT ("cat <<< 'reboot'", "cat");
  EXPECT ("cat <<<\"reboot\" | bash", "cat", "bash", "reboot");
}

/* ---- the rest of the grammar ---- */

static void
test_comments (void **state)
{
  (void) state;
  EXPECT ("echo hi # ; rm -rf /", "echo hi");
  EXPECT ("# reboot", NULL);
  EXPECT ("echo hi;# reboot\nhalt", "echo hi", "halt");
  EXPECT ("echo $(# ) \nreboot\n)", "echo $(# ) \nreboot\n)", "reboot");
  EXPECT ("echo '#' \"#\" \\# x#", "echo # # # x#");
}

static void
test_unbalanced (void **state)
{
  (void) state;
  EXPECT ("echo 'x; rm -rf /", "echo x; rm -rf /");
  EXPECT ("echo \"x; rm -rf /", "echo x; rm -rf /");
  EXPECT ("echo $(rm -rf /", "echo $(rm -rf /", "rm -rf /");
  EXPECT ("echo `rm -rf /", "echo `rm -rf /", "rm -rf /");
  EXPECT ("( reboot", "reboot");
  EXPECT ("{ reboot", "reboot");
  EXPECT ("reboot ) ; halt", "reboot", "halt");
  EXPECT ("} reboot", "} reboot");
  EXPECT ("echo ${x:-$(reboot", "echo ${x:-$(reboot", "reboot");
  EXPECT ("$'\\x72", "r");
  EXPECT ("echo \\", "echo \\");
  EXPECT ("[[ x", NULL);
  EXPECT ("case x in", NULL);
  EXPECT ("for x in a", NULL);
  EXPECT ("a |", "a");
  EXPECT (";;;&&||", NULL);
}

static void
test_redirects (void **state)
{
  (void) state;
  struct shell_parse *p
      = parse ("echo hi > /etc/passwd 2>>~/.bashrc &>/dev/sda 3<&0 <>f >|g "
               ">&2 &>>h <\"in put\" 9<<<x");
  assert_int_equal (p->n_cmds, 1);
  const struct shell_command *c = &p->cmds[0];
  assert_int_equal (c->n_words, 2);
  const char *ops[] = { ">", "2>>", "&>", "3<&", "<>", ">|", ">&", "&>>", "<", "9<<<" };
  const char *targets[] = { "/etc/passwd", "~/.bashrc", "/dev/sda", "0", "f",
                            "g", "2", "h", "in put", "x" };
  assert_int_equal (c->n_redirs, N_ELEMENTS (ops));
  for (size_t i = 0; i < N_ELEMENTS (ops); i++)
    {
      assert_string_equal (c->redirs[i].op, ops[i]);
      assert_string_equal (c->redirs[i].target, targets[i]);
    }
  assert_true (c->heredoc);
  shell_parse_free (p);

  /* only a redirection: still a command, so the gate sees the target */
  p = parse ("> /etc/shadow");
  assert_int_equal (p->n_cmds, 1);
  assert_int_equal (p->cmds[0].n_words, 1);
  assert_string_equal (p->cmds[0].words[0], "");
  assert_string_equal (p->cmds[0].redirs[0].target, "/etc/shadow");
  shell_parse_free (p);

  /* a digit word not touching the operator is an argument */
  p = parse ("echo 2 >x 2>y a2>z");
  assert_int_equal (p->cmds[0].n_words, 3);
  assert_string_equal (p->cmds[0].words[2], "a2");
  assert_string_equal (p->cmds[0].redirs[1].op, "2>");
  assert_string_equal (p->cmds[0].redirs[2].op, ">");
  shell_parse_free (p);

  /* redirection before the name; a wrapped command gets them too */
  p = parse ("2>/dev/null sudo rm x >/etc/x");
  assert_int_equal (p->n_cmds, 2);
  assert_string_equal (p->cmds[0].words[0], "sudo");
  assert_int_equal (p->cmds[1].n_redirs, 2);
  assert_string_equal (p->cmds[1].redirs[1].target, "/etc/x");
  shell_parse_free (p);
}

static void
test_lists (void **state)
{
  (void) state;
  /* each top-level line is a list; its last command ends it */
  struct shell_parse *p = parse ("a; b\nc\n\nd");
  assert_int_equal (p->n_cmds, 4);
  assert_int_equal (p->cmds[0].list, p->cmds[1].list);
  assert_string_equal (p->cmds[1].connector, "");
  assert_true (p->cmds[2].list != p->cmds[1].list);
  assert_true (p->cmds[3].list != p->cmds[2].list);
  for (size_t i = 0; i < p->n_cmds; i++)
    assert_int_equal (p->cmds[i].depth, 0);
  shell_parse_free (p);

  /* inside $(...) lines stay one list, joined by "\n" */
  p = parse ("x=$(a\nb)");
  assert_int_equal (p->n_cmds, 2);
  assert_int_equal (p->cmds[0].list, p->cmds[1].list);
  assert_string_equal (p->cmds[0].connector, "\n");
  assert_int_equal (p->cmds[0].depth, 1);
  shell_parse_free (p);

  /* list numbers follow the order of appearance */
  p = parse ("a $(b) $(c); d");
  assert_int_equal (p->n_cmds, 4);
  assert_true (p->cmds[0].list < p->cmds[1].list);
  assert_true (p->cmds[1].list < p->cmds[2].list);
  assert_string_equal (p->cmds[3].words[0], "d");
  assert_int_equal (p->cmds[3].list, p->cmds[0].list);
  shell_parse_free (p);
}

static void
test_shell_command_text (void **state)
{
  (void) state;
  struct shell_parse *p = parse ("  rm   -rf    'a  b'  ");
  char *t = shell_command_text (&p->cmds[0]);
  assert_string_equal (t, "rm -rf a  b");
  free (t);
  shell_parse_free (p);
  shell_parse_free (NULL);
}

/* ---- scripts ---- */

static char *repeat (const char *pre, const char *unit, size_t k,
                     const char *post);

/* The scripts of `input`, in order, as the rules see them: "LANG TEXT",
 * "dynamic-LANG TEXT" when built at run time. */
static void
expect_scripts (struct shell_parse *p, const char *input,
                const char *const *want)
{
  size_t n = 0;
  while (want[n])
    n++;
  bool ok = p->n_scripts == n;
  char **got = calloc (p->n_scripts + 1, sizeof *got);
  assert_non_null (got);
  for (size_t i = 0; i < p->n_scripts; i++)
    {
      const struct shell_script *sc = &p->scripts[i];
      assert_true (asprintf (&got[i], "%s%s %.*s", sc->dynamic ? "dynamic-" : "",
                             sc->lang, (int) sc->len, sc->text) > 0);
      if (i < n && strcmp (got[i], want[i]) != 0)
        ok = false;
    }
  if (!ok)
    {
      print_error ("input: %s\n", input);
      for (size_t i = 0; i < p->n_scripts; i++)
        print_error ("  got  [%zu] %s\n", i, got[i]);
      for (size_t i = 0; i < n; i++)
        print_error ("  want [%zu] %s\n", i, want[i]);
    }
  for (size_t i = 0; i < p->n_scripts; i++)
    free (got[i]);
  free (got);
  assert_true (ok);
}

#define SCRIPTS(input, ...)                                                    \
  do                                                                           \
    {                                                                          \
      struct shell_parse *p_ = parse (input);                                  \
      expect_scripts (p_, (input), (const char *const[]) { __VA_ARGS__, NULL }); \
      shell_parse_free (p_);                                                   \
    }                                                                          \
  while (0)
#define NO_SCRIPTS(input)                                                      \
  do                                                                           \
    {                                                                          \
      struct shell_parse *p_ = parse (input);                                  \
      expect_scripts (p_, (input), (const char *const[]) { NULL });            \
      shell_parse_free (p_);                                                   \
    }                                                                          \
  while (0)

static void
test_shell_scripts (void **state)
{
  (void) state;
  SCRIPTS ("bash -c 'ls -la'", "sh ls -la");
  SCRIPTS ("sh -c 'echo $HOME'", "sh echo $HOME");
  /* the outer shell builds it: only known when it runs */
  SCRIPTS ("bash -c \"$x\"", "dynamic-sh $x");
  SCRIPTS ("sh -c \"echo $(id)\"", "dynamic-sh echo $(id)");
  SCRIPTS ("eval \"$(ssh-agent -s)\"", "dynamic-sh $(ssh-agent -s)");
  SCRIPTS ("eval echo *", "dynamic-sh echo *");
  /* $? $$ $! $# are numbers */
  SCRIPTS ("bash -c \"kill $$\"", "sh kill $$");
  SCRIPTS ("bash <<'EOF'\necho $x\nEOF", "sh echo $x\n");
  SCRIPTS ("bash <<EOF\necho $x\nEOF", "dynamic-sh echo $x\n");
  SCRIPTS ("sh <<< \"$x\"", "dynamic-sh $x");
  SCRIPTS ("echo ls | sh", "sh ls");
  SCRIPTS ("echo \"$x\" | sh", "dynamic-sh $x");
  SCRIPTS ("echo -e 'l\\x73' | sh", "dynamic-sh l\\x73");
  /* a pipe whose text cannot be read */
  SCRIPTS ("cat x | sh", "dynamic-sh | cat x");
  SCRIPTS ("(cat a; cat b) | bash -s", "dynamic-sh | (...)");
  SCRIPTS ("bash <(curl x)", "dynamic-sh <(curl x)");
  NO_SCRIPTS ("cat x | grep sh");
  NO_SCRIPTS ("cat data | python3 run.py");
  NO_SCRIPTS ("bash script.sh");
  NO_SCRIPTS ("echo 'rm -rf /'");
}

static void
test_interpreter_scripts (void **state)
{
  (void) state;
  SCRIPTS ("python3 -c 'print(1)'", "python print(1)");
  SCRIPTS ("/usr/bin/python3.11 -Bc 'x'", "python x");
  NO_SCRIPTS ("python3 -m pip install x");
  SCRIPTS ("python3 - <<'EOF'\nprint(1)\nEOF", "python print(1)\n");
  SCRIPTS ("perl -ne 'print' -e 'exit' f", "perl print\nexit");
  SCRIPTS ("ruby -rjson -e 'p 1'", "ruby p 1");
  SCRIPTS ("node -pe '1+1'", "node 1+1");
  SCRIPTS ("node --eval=x", "node x");
  SCRIPTS ("deno eval 'x'", "node x");
  SCRIPTS ("php -r 'echo 1;'", "php echo 1;");
  SCRIPTS ("awk -F: '{print $1}' /etc/passwd", "awk {print $1}");
  NO_SCRIPTS ("awk -f prog.awk data");
  SCRIPTS ("psql -d app -c 'SELECT 1'", "sql SELECT 1");
  SCRIPTS ("psql app -c 'SELECT 1'", "sql SELECT 1");
  SCRIPTS ("mysql -u root -ppw -e 'SHOW TABLES'", "sql SHOW TABLES");
  SCRIPTS ("sqlite3 app.db 'select 1' 'select 2'", "sql select 1\nselect 2");
  SCRIPTS ("sqlite3 -cmd 'pragma x' app.db", "sql pragma x");
  SCRIPTS ("mongo app --eval 'db.x.find()'", "mongo db.x.find()");
  SCRIPTS ("redis-cli -h host -n 2 FLUSHDB", "redis FLUSHDB");
  SCRIPTS ("redis-cli GET \"$key\"", "redis GET $key");
  SCRIPTS ("echo 'DROP TABLE x' | psql", "sql DROP TABLE x");
  SCRIPTS ("psql <<'EOF'\nSELECT 1;\nEOF", "sql SELECT 1;\n");
  SCRIPTS ("python3 -c \"print('$HOME')\"", "dynamic-python print('$HOME')");
  NO_SCRIPTS ("psql -f setup.sql");
  /* what reads stdin as code */
  static const struct
  {
    const char *cmd, *lang;
  } t[] = {
    { "python3", "python" }, { "python3 -", "python" }, { "python3 x.py", NULL },
    { "python3 -c x", NULL }, { "bash -s", "sh" },      { "bash x.sh", NULL },
    { "psql app", "sql" },    { "psql -c x", NULL },     { "sqlite3 db", "sql" },
    { "redis-cli", "redis" }, { "source /dev/stdin", "sh" }, { "cat", NULL },
    { "sudo -u pg psql", "sql" },
  };
  for (size_t i = 0; i < N_ELEMENTS (t); i++)
    {
      struct shell_parse *p = parse (t[i].cmd);
      const char *got = p->cmds[0].stdin_lang;
      if (!(got == t[i].lang || (got && t[i].lang && !strcmp (got, t[i].lang))))
        fail_msg ("%s: stdin read as %s, want %s", t[i].cmd, got ? got : "data",
                  t[i].lang ? t[i].lang : "data");
      shell_parse_free (p);
    }
}

/* Inline code: the command lines it hands a shell are commands. */
static void
test_inline_code (void **state)
{
  (void) state;
  EXPECT ("python3 -c 'import os; os.system(\"rm -rf /\")'",
          "python3 -c import os; os.system(\"rm -rf /\")", "rm -rf /");
  EXPECT ("python3 -c \"import subprocess; subprocess.run(['rm', '-rf', 'a b'])\"",
          "python3 -c import subprocess; subprocess.run(['rm', '-rf', 'a b'])",
          "rm -rf a b");
  struct shell_parse *p = parse ("python3 -c \"subprocess.call(['echo', 'a b'])\"");
  assert_int_equal (p->cmds[1].n_words, 2);
  assert_string_equal (p->cmds[1].words[1], "a b");
  shell_parse_free (p);
  EXPECT ("python3 -c \"os.system('r' + 'm x')\"", "python3 -c os.system('r' + 'm x')",
          "rm x");
  EXPECT ("python3 -c \"exec('os.system(\\\"reboot\\\")')\"",
          "python3 -c exec('os.system(\"reboot\")')", "reboot");
  EXPECT ("node -e \"require('child_process').execSync('reboot')\"",
          "node -e require('child_process').execSync('reboot')", "reboot");
  EXPECT ("perl -e 'system \"reboot\"; `halt`'", "perl -e system \"reboot\"; `halt`",
          "reboot", "halt");
  EXPECT ("ruby -e 'system(\"rm\", \"-rf\", \"x\")'",
          "ruby -e system(\"rm\", \"-rf\", \"x\")", "rm -rf x");
  EXPECT ("php -r 'shell_exec(\"reboot\");'", "php -r shell_exec(\"reboot\");",
          "reboot");
  EXPECT ("lua -e 'os.execute(\"reboot\")'", "lua -e os.execute(\"reboot\")",
          "reboot");
  EXPECT ("awk 'BEGIN{system(\"reboot\")}'", "awk BEGIN{system(\"reboot\")}",
          "reboot");
  EXPECT ("python3 - <<'EOF'\nimport os\nos.system('reboot')\nEOF", "python3 -",
          "reboot");
  /* not a shell: a method of the same name, an interpreter's own path */
  EXPECT ("python3 -c 'print(platform.system())'",
          "python3 -c print(platform.system())");
  EXPECT ("python3 -c 'subprocess.run([sys.executable, \"-V\"])'",
          "python3 -c subprocess.run([sys.executable, \"-V\"])", "python3 -V");
  /* only known at run time */
  SCRIPTS ("python3 -c 'os.system(cmd)'", "python os.system(cmd)", "dynamic-sh $_");
  SCRIPTS ("python3 -c 'os.system(f\"rm {p}\")'", "python os.system(f\"rm {p}\")",
           "dynamic-sh rm $_");
  SCRIPTS ("python3 -c 'subprocess.run([\"git\", \"add\", f])'",
           "python subprocess.run([\"git\", \"add\", f])", "sh 'git' 'add' $_");
  SCRIPTS ("python3 -c 'getattr(os, \"system\")(\"id\")'",
           "python getattr(os, \"system\")(\"id\")", "dynamic-sh ");
  /* a script of code read as input */
  p = shell_parse_script ("python", "import os\nos.system('reboot')\n", 30);
  assert_non_null (p);
  assert_int_equal (p->n_scripts, 2);
  assert_string_equal (p->scripts[0].lang, "python");
  assert_int_equal (p->n_cmds, 1);
  assert_string_equal (p->cmds[0].words[0], "reboot");
  assert_int_equal (p->cmds[0].depth, 2); /* the code one level, what it runs another */
  shell_parse_free (p);
}

static void
test_files_written_then_run (void **state)
{
  (void) state;
  EXPECT ("cat > x.sh <<'EOF'\nreboot\nEOF\nchmod +x x.sh && ./x.sh", "cat",
          "chmod +x x.sh", "x.sh", "reboot");
  EXPECT ("echo reboot > x.sh; sh ./x.sh", "echo reboot", "sh ./x.sh", "reboot");
  EXPECT ("cat > x.py <<'EOF'\nimport os\nos.system('halt')\nEOF\npython3 x.py",
          "cat", "python3 x.py", "halt");
  /* the #! line names the language */
  EXPECT ("tee t <<'EOF'\n#!/usr/bin/env python3\nos.system('halt')\nEOF\n./t",
          "tee t", "t", "halt");
  /* written but not run, run but not written: nothing more */
  EXPECT ("cat > x.sh <<'EOF'\nreboot\nEOF", "cat");
  EXPECT ("./x.sh", "x.sh");
  /* a download's content is only known when it runs */
  SCRIPTS ("curl -o i.sh https://x/i.sh\nbash i.sh", "dynamic-sh ");
  SCRIPTS ("wget https://x/i.sh && sh i.sh", "dynamic-sh ");
  NO_SCRIPTS ("curl -o data.json https://x && jq . data.json");
}

static void
test_function_definitions (void **state)
{
  (void) state;
  SCRIPTS (":(){ :|:& };:", "function : { :|:& }");
  SCRIPTS ("function f { g; }", "function f  { g; }");
  SCRIPTS ("function f () { g; }", "function f  { g; }");
  SCRIPTS ("f() ( g )", "function f  ( g )");
  NO_SCRIPTS ("echo ':(){ :|:& };:'");
}

static void
test_brace_expansion (void **state)
{
  (void) state;
  EXPECT ("{rm,-rf,/}", "rm -rf /");
  EXPECT ("cp f{,.bak}", "cp f f.bak");
  EXPECT ("echo {a,b}{1,2}", "echo a1 a2 b1 b2");
  EXPECT ("echo {a,{b,c}}d", "echo ad bd cd");
  EXPECT ("echo {1..3} {c..a} {1..7..3}", "echo 1 2 3 c b a 1 4 7");
  EXPECT ("echo {x}{a,b}", "echo {x}a {x}b");
  /* bash runs /usr/bin/rm with /usr/bin/m -rf / */
  EXPECT ("/usr/bin/{r,}m -rf /", "rm /usr/bin/m -rf /");
  /* quoted braces and commas are text */
  EXPECT ("echo '{a,b}' \"{a,b}\" \\{a,b}", "echo {a,b} {a,b} {a,b}");
  EXPECT ("echo {a} {} x{}y", "echo {a} {} x{}y");
  EXPECT ("find . -exec rm {} +", "find . -exec rm {} +", "~rm {}");
  EXPECT ("echo ${x} ${y,,}", "echo ${x} ${y,,}");
  /* too many words: not judged */
  struct shell_parse *p = parse ("echo {1..100000}");
  assert_true (p->truncated);
  shell_parse_free (p);
  char *s = repeat ("echo ", "{a,b}", 20, "");
  p = parse (s);
  assert_true (p->truncated);
  shell_parse_free (p);
  free (s);
}

static void
test_expanded_words (void **state)
{
  (void) state;
  struct shell_parse *p = parse ("echo $x 'y' \"$(z)\" *.c $? '$a' ${b} `c` > \"$o\"");
  const bool want[] = { false, true, false, true, true, false, false, true, true };
  assert_int_equal (p->cmds[0].n_words, N_ELEMENTS (want));
  for (size_t i = 0; i < N_ELEMENTS (want); i++)
    if (p->cmds[0].expanded[i] != want[i])
      fail_msg ("word %zu (%s): expanded %d", i, p->cmds[0].words[i],
                p->cmds[0].expanded[i]);
  assert_true (p->cmds[0].redirs[0].expanded);
  shell_parse_free (p);
}

static void
test_variables_with_literal_values (void **state)
{
  (void) state;
  EXPECT ("x='rm -rf /'; $x", "$x", "rm -rf /");
  EXPECT ("a=/; rm -rf $a", "rm -rf $a", "rm -rf /");
  EXPECT ("export D=/etc; rm -r \"$D\"", "export D=/etc", "rm -r $D", "rm -r /etc");
  /* every value a name was given: which one holds depends on what ran */
  EXPECT ("x=rm; (x=ls); $x -rf /", "$x -rf /", "rm -rf /", "ls -rf /");
  EXPECT ("IFS=,; x=reboot,now; $x", "$x", "reboot now");
  EXPECT ("bash -c '\"$@\"' _ reboot now", "bash -c \"$@\" _ reboot now", "$@",
          "reboot now");
  /* a value only known at run time is not one */
  EXPECT ("x=$(id); $x", "id", "$x");
  EXPECT ("x=rm; echo '$x'", "echo $x");
}

static void
test_etc_is_no_program_dir (void **state)
{
  (void) state;
  EXPECT ("/etc/passwd", "/etc/passwd");
  EXPECT ("sudo /etc/passwd", "sudo /etc/passwd", "~/etc/passwd");
  EXPECT ("/etc/init.d/ssh stop", "ssh stop");
  EXPECT ("./passwd", "passwd");
}

static void
test_container_exec (void **state)
{
  (void) state;
  EXPECT ("docker exec -it -u postgres db psql -c 'select 1'",
          "docker exec -it -u postgres db psql -c select 1", "~psql -c select 1");
  EXPECT ("podman container exec c reboot", "podman container exec c reboot",
          "~reboot");
  EXPECT ("docker compose -f x.yml exec -T web rm -rf /app",
          "docker compose -f x.yml exec -T web rm -rf /app", "~rm -rf /app");
  EXPECT ("kubectl -n prod exec -it pod-0 -c app -- sh -c reboot",
          "kubectl -n prod exec -it pod-0 -c app -- sh -c reboot", "~sh -c reboot",
          "reboot");
  EXPECT ("docker exec c", "docker exec c");
  EXPECT ("docker run --rm img ls", "docker run --rm img ls");
}

/* ---- hostile inputs ---- */

static char *
repeat (const char *pre, const char *unit, size_t k, const char *post)
{
  size_t a = strlen (pre), u = strlen (unit), b = strlen (post);
  char *s = malloc (a + u * k + b + 1);
  assert_non_null (s);
  memcpy (s, pre, a);
  for (size_t i = 0; i < k; i++)
    memcpy (s + a + i * u, unit, u);
  memcpy (s + a + u * k, post, b + 1);
  return s;
}

static void
test_nesting_is_bounded (void **state)
{
  (void) state;
  char *s = repeat ("echo ", "$(", 1000, "reboot");
  struct shell_parse *p = parse (s);
  assert_true (p->truncated);
  for (size_t i = 0; i < p->n_cmds; i++)
    assert_true (p->cmds[i].depth <= 64);
  shell_parse_free (p);
  free (s);

  s = repeat ("", "(", 5000, "reboot");
  p = parse (s);
  assert_true (p->truncated);
  shell_parse_free (p);
  free (s);

  /* nesting within the bound is read completely */
  s = repeat ("", "$(", 40, "reboot");
  p = parse (s);
  assert_false (p->truncated);
  assert_int_equal (p->n_cmds, 41);
  assert_string_equal (p->cmds[40].words[0], "reboot");
  assert_int_equal (p->cmds[40].depth, 40);
  shell_parse_free (p);
  free (s);
}

/* Work for n and 16n copies of each hostile pattern: linear means about
 * 16 times as much; quadratic would be about 256. */
static void
test_work_is_linear (void **state)
{
  (void) state;
  static const char *const patterns[][3] = {
    { "echo ", "$(", "" },
    { "", "`", "" },
    { "", "\\`", "" },
    { "", "\"$(", "" },
    { "", "${x:-", "" },
    { "", "'a'", "" },
    { "", "\"", "" },
    { "", "\\", "" },
    { "", "\\\n", "" },
    { "", "cat <<EOF\n", "" },
    { "cat ", "<<EOF ", "\n" },
    { "", "bash <<EOF\n", "" },
    { "", "cat <<EOF | sh\n", "" },
    { "", "echo x | ", "" },
    { "", "a |\n", "" },
    { "", "x", "" },
    { "", ";", "" },
    { "", "a;", "" },
    { "", "sudo ", "rm" },
    { "", "sudo env nice timeout 5 ", "rm" },
    { "find . ", "-exec sudo sudo rm ; ", "" },
    { "", "bash -c '", "" },
    { "", "bash -c \"", "" },
    { "", "eval ", "rm" },
    { "", "$IFS", "" },
    { "", "${IFS", "" },
    { "", "\x1b[", "" },
    { "", "\x1b]", "" },
    { "", "\x1b[0m", "" },
    { "", "\xef\xbd\x92", "" },
    { "", "\xef\xb7\xba", "" },
    { "", "\xff", "" },
    { "", "((", "" },
    { "", "$((", "" },
    { "", "case x in ", "" },
    { "", "a) ", "" },
    { "", "{ ", "" },
    { "", "[[ ", "" },
    { "", "$'\\x41", "" },
    { "", "<(", "" },
    { "", "f() ", "" },
    { "", "x=$(a) ", "" },
    { "", "{a,b}", "" },
    { "echo ", "{a,b} ", "" },
    { "", "{", "" },
    { "", "x=1; $x ", "" },
    { "", "x=a; ", "echo $x" },
    { "", "echo a | sh; ", "" },
    { "", "cat > f <<EOF\nx\nEOF\n./f\n", "" },
    { "python3 -c '", "os.system(\"x\");", "'" },
    { "python3 -c '", "exec(\"", "" },
    { "python3 -c '", "f(", "" },
    { "python3 -c '", "os.system(os.system(", "" },
    { "node -e '", "`${", "" },
    { "perl -e '", "qw(", "" },
    { "", "psql -c x -c ", "" },
    { "", "f() { g; }; ", "" },
  };
  const size_t n = 300;
  for (size_t i = 0; i < N_ELEMENTS (patterns); i++)
    {
      unsigned long long work[2];
      for (int j = 0; j < 2; j++)
        {
          char *s = repeat (patterns[i][0], patterns[i][1], j ? 16 * n : n,
                            patterns[i][2]);
          size_t len = strlen (s);
          struct shell_parse *p = shell_parse (s, len);
          assert_non_null (p);
          work[j] = p->work;
          assert_true (p->work <= SHELL_PARSE_WORK_PER_BYTE * (len + 1));
          shell_parse_free (p);
          free (s);
        }
      if (work[1] > 20 * work[0])
        print_error ("pattern %zu (%s): work %llu for n, %llu for 16n\n", i,
                     patterns[i][1], work[0], work[1]);
      assert_true (work[0] > 0);
      assert_true (work[1] <= 20 * work[0]);
    }
}

/* Deterministic randomness, so a failure can be replayed. */
static uint64_t rng_state = 0x2545f4914f6cdd1dULL;

static uint64_t
rng (void)
{
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return rng_state;
}

static void
test_random_bytes (void **state)
{
  (void) state;
  /* shell-flavoured bytes, so the random text reaches deep states */
  static const char alphabet[] = "ab $()`'\"\\;&|<>{}[]#\n\t=-EOF\x1b\xef\xbd\x92\x00";
  for (int round = 0; round < 400; round++)
    {
      size_t len = (size_t) (rng () % 600);
      char *s = malloc (len + 1);
      assert_non_null (s);
      for (size_t i = 0; i < len; i++)
        s[i] = round % 2 ? (char) (rng () & 0xff)
                         : alphabet[rng () % (sizeof alphabet - 1)];
      s[len] = '\0';
      struct shell_parse *p = shell_parse (s, len);
      assert_non_null (p);
      assert_true (p->work <= SHELL_PARSE_WORK_PER_BYTE * (len + 1));
      for (size_t i = 0; i < p->n_cmds; i++)
        {
          const struct shell_command *c = &p->cmds[i];
          assert_true (c->n_words >= 1);
          assert_non_null (c->path);
          assert_null (c->words[c->n_words]);
          for (size_t k = 0; k < c->n_words; k++)
            assert_non_null (c->words[k]);
          free (text_of (c));
        }
      shell_parse_free (p);
      free (s);
    }
}

int
main (void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test (test_normalize_escapes),
    cmocka_unit_test (test_escapes_cannot_hide_commands),
    cmocka_unit_test (test_normalize_nfkc),
    cmocka_unit_test (test_lookalikes_cannot_hide_commands),
    cmocka_unit_test (test_normalize_ifs),
    cmocka_unit_test (test_normalize_continuations),
    cmocka_unit_test (test_policy_normalize_matches_parse),
    cmocka_unit_test (test_obfuscated_names),
    cmocka_unit_test (test_ansi_c_quotes),
    cmocka_unit_test (test_paths),
    cmocka_unit_test (test_assignments),
    cmocka_unit_test (test_arguments_are_not_commands),
    cmocka_unit_test (test_separators),
    cmocka_unit_test (test_compound_commands),
    cmocka_unit_test (test_functions),
    cmocka_unit_test (test_substitutions),
    cmocka_unit_test (test_arithmetic),
    cmocka_unit_test (test_wrappers),
    cmocka_unit_test (test_find_exec),
    cmocka_unit_test (test_scripts),
    cmocka_unit_test (test_heredocs),
    cmocka_unit_test (test_comments),
    cmocka_unit_test (test_unbalanced),
    cmocka_unit_test (test_redirects),
    cmocka_unit_test (test_lists),
    cmocka_unit_test (test_shell_command_text),
    cmocka_unit_test (test_shell_scripts),
    cmocka_unit_test (test_interpreter_scripts),
    cmocka_unit_test (test_inline_code),
    cmocka_unit_test (test_files_written_then_run),
    cmocka_unit_test (test_function_definitions),
    cmocka_unit_test (test_brace_expansion),
    cmocka_unit_test (test_expanded_words),
    cmocka_unit_test (test_variables_with_literal_values),
    cmocka_unit_test (test_etc_is_no_program_dir),
    cmocka_unit_test (test_container_exec),
    cmocka_unit_test (test_nesting_is_bounded),
    cmocka_unit_test (test_work_is_linear),
    cmocka_unit_test (test_random_bytes),
  };
  return cmocka_run_group_tests_name ("shell_parse", tests, NULL, NULL);
}
