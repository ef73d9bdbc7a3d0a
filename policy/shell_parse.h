/* SPDX-License-Identifier: MIT */
/* What a shell command line would run, for the approval gate: the text is
 * first normalized against obfuscation, then split into simple commands
 * at every command position a POSIX/bash shell would see.
 *
 * This is a judge, not a shell: it errs towards finding more command
 * positions (a quoted "rm -rf /" inside `bash -c '...'` is a command; one
 * inside `echo '...'` is not).  Input is untrusted and may be anything:
 * time and memory are linear in its length, nesting is bounded, and
 * unbalanced quotes or parentheses end at the end of the text. */
#ifndef AIRLOCK_POLICY_SHELL_PARSE_H
#define AIRLOCK_POLICY_SHELL_PARSE_H

#include <stdbool.h>
#include <stddef.h>

/* Normalize a command for matching (hermes-backends.md §5.2): strip ANSI
 * (ECMA-48) escape sequences and NUL bytes; Unicode NFKC (fullwidth
 * letters become ASCII); remove backslash-newline continuations; replace
 * $IFS, ${IFS} and ${IFS...} spellings with a space.  Quote removal
 * (r''m, r\m) is the tokenizer's job, on words.  Invalid UTF-8 bytes are
 * kept as they are.  Returns a malloc'd NUL-terminated string (NULL only
 * when out of memory). */
char *policy_normalize (const char *text, size_t len);

/* A redirection of a simple command: op is one of "<", ">", ">>", ">|",
 * "<>", "&>", "&>>", ">&", "<&", "<<", "<<-", "<<<", each possibly
 * preceded by a descriptor number ("2>", "2>>"); target is the word
 * after it, quotes removed (for "<<" the delimiter). */
struct shell_redirect
{
  char *op;
  char *target;
  bool expanded; /* the target holds an expansion (see expanded below) */
};

/* One simple command at a command position. */
struct shell_command
{
  /* Words with quotes and backslash escapes removed (r''m and r\m are
   * "rm"); leading NAME=value assignments are dropped.  words[0] is the
   * command name reduced to its last path component ("/usr/bin/sudo" and
   * "./sudo" are "sudo"); path is that word as written, quotes removed.
   * NULL-terminated; n_words >= 1 (a command made only of redirections,
   * "> /etc/passwd", has the one word ""). */
  char **words;
  size_t n_words;
  /* expanded[i]: word i holds an expansion the shell performs when it
   * runs the command ($x, ${...}, $(...), `...`, an unquoted glob): its
   * value is only known then. */
  bool *expanded;
  char *path;
  struct shell_redirect *redirs;
  size_t n_redirs;
  /* The operator after this command within its list: ";", "&", "|",
   * "|&", "&&", "||", "\n", or "" at the end of the list. */
  const char *connector;
  /* Commands of one list share `list` (a number unique per list, in order
   * of appearance); a list is a top-level line or the inside of $(...),
   * `...`, <(...), (...), {...}, a shell's -c string, eval's arguments or
   * a heredoc fed to a shell.  depth: 0 at top level, +1 per nesting. */
  unsigned list;
  unsigned depth;
  /* Found after a wrapper (sudo [flags], env [VAR=...], exec, nohup,
   * setsid, time, command, builtin, xargs [flags], timeout [flags] N,
   * nice, ionice, stdbuf, chroot DIR, doas, su -c ...): the wrapper is
   * its own command too, with all its words. */
  bool wrapped;
  /* stdin comes from a heredoc or here-string. */
  bool heredoc;
  /* What its stdin is run as when it reads code there (a shell without
   * a script, python3 -, psql without -c ...): a language of
   * shell_script, or NULL when stdin is data. */
  const char *stdin_lang;
};

/* A script: text that a shell or another interpreter runs, found on a
 * command line (bash -c, eval, python3 -c, psql -c, sqlite3 DB SQL ...),
 * in a heredoc, here-string or echo piped to it, in a file the same
 * command line wrote and then ran, or handed to a shell by inline code
 * (os.system("...")).  Shell scripts are also parsed into commands, and so
 * are the command lines inline code runs; scripts of other languages are
 * kept as text for the rules. */
struct shell_script
{
  /* "sh"; "python", "perl", "ruby", "node", "php", "lua", "awk", "r",
   * "applescript" (code whose shell calls are read); "sql", "mongo",
   * "redis" (database commands); "function" (a shell function's
   * definition: "NAME BODY") */
  const char *lang;
  char *text;
  size_t len;
  /* built when it runs: from variables, command output, or code this
   * judge cannot read (an f-string, os.system(cmd)); text is what is
   * known, unknown parts as written or "$_" */
  bool dynamic;
};

struct shell_parse
{
  char *normalized; /* policy_normalize's output */
  struct shell_command *cmds;
  size_t n_cmds;
  struct shell_script *scripts; /* in the order found */
  size_t n_scripts;
  bool truncated; /* limits hit (nesting depth, words, commands) */
  /* Steps taken, a deterministic measure of time: it grows linearly
   * with the input (SHELL_PARSE_WORK_PER_BYTE bounds it), which the
   * unit tests and the fuzz harness check. */
  unsigned long long work;
};

/* work <= SHELL_PARSE_WORK_PER_BYTE * (len + 1) for any input of len
 * bytes: normalization may lengthen the text up to 4 times, a byte is
 * inside at most 64 nested lists (each keeps the text of what it holds),
 * and nested scripts, wrapped commands' words and brace expansions get
 * budgets of a few times the text of the top-level command they are in
 * (a command between ; && || & or newlines: a command's budget does not
 * depend on what else the line holds).  Hostile inputs measure under
 * 1000 per byte. */
#define SHELL_PARSE_WORK_PER_BYTE 8192ULL

/* The context-free steps of policy_normalize: everything except
 * removing backslash-newline continuations, which needs the tokenizer's
 * knowledge of quotes, comments and heredocs (shell_parse does it, and
 * policy_normalize calls shell_parse).  *out_len gets the length; *work
 * (may be NULL) grows by the steps taken.  NULL when out of memory. */
char *policy_prenormalize (const char *text, size_t len, size_t *out_len,
                           unsigned long long *work);

/* Normalize and tokenize; NULL only when out of memory. */
struct shell_parse *shell_parse (const char *text, size_t len);

/* The same for a script of language lang (see shell_script) given as
 * input, e.g. on stdin: "sh" is shell_parse; any other language yields
 * the one script, and the commands its shell calls run. */
struct shell_parse *shell_parse_script (const char *lang, const char *text,
                                        size_t len);
void shell_parse_free (struct shell_parse *p);

/* The canonical text of a command: its words joined by single spaces
 * (malloc'd).  Rules of scope "command" match this. */
char *shell_command_text (const struct shell_command *c);

#endif
