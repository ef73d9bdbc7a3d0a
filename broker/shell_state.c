/* SPDX-License-Identifier: MIT */
/* Shell state carried between the commands of a session: the scripts.
 *
 * How a command script runs (see shell_command_script):
 *
 *   1. restore: drop every exported variable the snapshot does not hold
 *      (an `unset` must stick even for a variable the sandbox's process
 *      environment brings back each time; AIRLOCK_* excepted), then eval
 *      the snapshot (carried in the script) with its output and errors
 *      discarded;
 *   2. cd to the requested or recorded directory, or exit 126;
 *   3. set an EXIT trap that reports the state;
 *   4. eval the command, single-quoted, with alias expansion on;
 *   5. report the state and exit with the command's status.
 *
 * Why an EXIT trap and not a subshell: the command must run in the shell
 * that is saved (a `cd` or `export` in a subshell would be lost), so the
 * only way to still save after an `exit N`, a failure under `set -e` or an
 * unbound variable under `set -u` is the EXIT trap, which bash runs in
 * every one of those cases with $? = the exit status.  Step 5 saves
 * explicitly as well, so a command that installs its own EXIT trap (and
 * thereby removes ours) and then ends normally is still saved; the trap
 * and step 5 agree through __airlock_done so the state is saved once.  A
 * command that replaces the trap and then exits, `exec`s another program,
 * or is killed reports nothing whole: the previous state stays.
 *
 * Nothing here starts a process: names come from `${!prefix@}` and
 * attributes from `${name@a}`, never from `$(compgen -e)`, and the report
 * goes to a pipe the caller reads, never to a file that `mv` would have
 * to move into place.
 *
 * Everything after the function definitions is one `{ ... }` group, which
 * bash parses entirely before running any of it: aliases and functions
 * restored from the snapshot cannot change the wrapper's own code.
 * Builtins are called through `builtin`, so that a command's functions
 * named cd or printf do not break the save either.
 */
#define _GNU_SOURCE
#include "shell_state.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct sbuf
{
  char *s;
  size_t len, cap;
  bool oom;
};

static void
sb_add (struct sbuf *b, const char *s, size_t n)
{
  if (b->oom)
    return;
  if (n > SIZE_MAX - 1 - b->len)
    {
      b->oom = true;
      return;
    }
  size_t need = b->len + n + 1;
  if (need > b->cap)
    {
      size_t cap = b->cap ? b->cap : 1024;
      while (cap < need)
        cap = cap > SIZE_MAX / 2 ? need : cap * 2;
      char *p = realloc (b->s, cap);
      if (!p)
        {
          b->oom = true;
          return;
        }
      b->s = p;
      b->cap = cap;
    }
  memcpy (b->s + b->len, s, n);
  b->len += n;
  b->s[b->len] = '\0';
}

static void
sb_str (struct sbuf *b, const char *s)
{
  sb_add (b, s, strlen (s));
}

/* Inside single quotes every byte is literal but the quote itself, which
   closes, is written escaped, and reopens. */
static void
sb_quoted (struct sbuf *b, const char *s)
{
  sb_add (b, "'", 1);
  for (const char *q; (q = strchr (s, '\'')); s = q + 1)
    {
      sb_add (b, s, (size_t) (q - s));
      sb_str (b, "'\\''");
    }
  sb_str (b, s);
  sb_add (b, "'", 1);
}

static char *
sb_finish (struct sbuf *b)
{
  if (b->oom || !b->s)
    {
      free (b->s);
      return b->oom ? NULL : strdup ("");
    }
  return b->s;
}

char *
shell_quote (const char *s)
{
  struct sbuf b = { 0 };
  sb_quoted (&b, s);
  return sb_finish (&b);
}

/* The serializer, the same at bootstrap and after every command (the
   original lost functions and aliases after the first command by dumping
   exports only there).  It writes the report (shell_state_take) on the
   metadata channel and returns non-zero when it could not.  Its variables
   are globals named __airlock_*: a `local` would shadow a user's exported
   variable of the same name in the dump (the caller drops the export
   lines of __airlock_* names, which `set -a` may have exported, and of
   AIRLOCK_* ones). */
static const char save_function[]
    = "__airlock_save ()\n"
      "{\n"
      "  # Undo what the command may have set that would break, trace or\n"
      "  # leak into the save; this function and __airlock_finish are not\n"
      "  # part of the user's state.\n"
      "  builtin set +aCeEuTvx +o pipefail +o posix\n"
      "  builtin shopt -u nocasematch\n"
      "  builtin trap - ERR DEBUG RETURN\n"
      "  builtin unset -f __airlock_save __airlock_finish\n"
      "\n"
      "  # 1. The working directory, physical.  If the command removed it,\n"
      "  #    its nearest surviving ancestor (there `pwd -P` fails and\n"
      "  #    `cd -P .` leaves PWD=/removed/.).\n"
      "  __airlock_lp=$PWD\n"
      "  if ! builtin cd -P . 2>/dev/null || [[ ! . -ef $PWD ]]; then\n"
      "    [[ $__airlock_lp == /* ]] || __airlock_lp=/\n"
      "    while [[ ! -d $__airlock_lp ]]; do\n"
      "      __airlock_lp=${__airlock_lp%/*}\n"
      "      __airlock_lp=${__airlock_lp:-/}\n"
      "    done\n"
      "    builtin cd -P -- \"$__airlock_lp\" 2>/dev/null || return 1\n"
      "  fi\n"
      "  # 2. The caller's metadata channel.  It is fd 3, but an `exit`\n"
      "  #    inside the command's own redirections (in a function, say)\n"
      "  #    gets here before bash put it back there (see meta_fd): then it\n"
      "  #    is the descriptor with its pipe's identity.  Never a\n"
      "  #    descriptor of the command's by mistake.\n"
      "  __airlock_out=$__airlock_meta\n"
      "  if [[ -n $__airlock_meta_id ]]; then\n"
      "    __airlock_out=\n"
      "    for __airlock_f in /dev/fd/[0-9]*; do\n"
      "      __airlock_f=${__airlock_f##*/}\n"
      "      [[ -p /dev/fd/$__airlock_f ]] || continue\n"
      "      __airlock_i=\n"
      "      { IFS= builtin read -r -d '' __airlock_i </proc/self/fdinfo/\"$__airlock_f\"; } 2>/dev/null\n"
      "      [[ $__airlock_i =~ $__airlock_id_re &&\n"
      "         \"${BASH_REMATCH[1]} ${BASH_REMATCH[2]}\" == \"$__airlock_meta_id\" ]] || continue\n"
      "      __airlock_out=$__airlock_f\n"
      "      break\n"
      "    done\n"
      "  fi\n"
      "  [[ -n $__airlock_out ]] || return 1\n"
      "  # 3. The report, the last act: exports (this command's own env\n"
      "  #    left out), functions with their export/readonly marks (older\n"
      "  #    bash omits them from declare -f), aliases, the directory, each\n"
      "  #    part ended by a NUL.  The caller keeps it only when it ends\n"
      "  #    with the third NUL, so a write that failed half-way counts\n"
      "  #    as no report.\n"
      "  [[ -z ${__airlock_xenv[*]-} ]] ||\n"
      "    builtin export -n -- \"${__airlock_xenv[@]}\" 2>/dev/null\n"
      "  { builtin export -p && builtin printf '\\0' &&\n"
      "    builtin declare -f && builtin declare -Fx && builtin declare -Fr &&\n"
      "    builtin alias -p && builtin printf '\\0%s\\0' \"$PWD\"\n"
      "  } 2>/dev/null >&\"$__airlock_out\"\n"
      "}\n";

/* A command's own env (AIRLOCK_ENV_NAME=value from the caller) is
   exported as NAME for that command only: the names are kept in the
   array __airlock_xenv, and the serializer un-exports them before it
   dumps the exports.  Only names set in the environment are AIRLOCK_*
   at this point (the snapshot never holds one). */
static const char apply_command_env[]
    = "  # 1b. This command's own env, over the restored state.\n"
      "  __airlock_xenv=()\n"
      "  for __airlock_n in \"${!AIRLOCK_ENV_@}\"; do\n"
      "    [[ $__airlock_n == AIRLOCK_ENV_?* ]] || continue\n"
      "    builtin export -- \"${__airlock_n#AIRLOCK_ENV_}=${!__airlock_n}\"\n"
      "    __airlock_xenv+=(\"${__airlock_n#AIRLOCK_ENV_}\")\n"
      "    builtin unset -v -- \"$__airlock_n\"\n"
      "  done\n";

/* fd 4 is the script itself (bash read it whole before running any of
   it): closed.  fd 3, the caller's metadata channel when open, stays
   where it is; the command runs with it closed (`3>&-` on its eval), so
   neither the command nor any program it starts holds it, while bash
   keeps it meanwhile on a close-on-exec descriptor of its own (one that
   moves if the command redirects onto it).  If the command exits from
   inside its redirections, the EXIT trap runs before bash put fd 3 back:
   the serializer then finds the channel by its pipe's mount and inode
   (/proc/self/fdinfo), and without those writes to fd 3 as before. */
static const char meta_fd[]
    = "  command exec 4<&-\n"
      "  __airlock_meta= __airlock_meta_id= __airlock_i=\n"
      "  __airlock_id_re='mnt_id:[[:space:]]*([0-9]+).*ino:[[:space:]]*([0-9]+)'\n"
      "  if { : >&3; } 2>/dev/null; then\n"
      "    __airlock_meta=3\n"
      "    { IFS= builtin read -r -d '' __airlock_i </proc/self/fdinfo/3; } 2>/dev/null\n"
      "    [[ ! $__airlock_i =~ $__airlock_id_re ]] ||\n"
      "      __airlock_meta_id=\"${BASH_REMATCH[1]} ${BASH_REMATCH[2]}\"\n"
      "  fi\n";

/* Sets __airlock_cwd to the directory to enter, or to "" for "stay";
   recorded is where the last command ended (NULL: not known). */
static void
put_cwd_target (struct sbuf *b, const char *cwd, const char *recorded)
{
  if (!cwd || !*cwd)
    {
      if (!recorded)
        {
          sb_str (b, "  __airlock_cwd=\n");
          return;
        }
      sb_str (b, "  # The working directory where the last command ended.\n"
                 "  __airlock_cwd=");
      sb_quoted (b, recorded);
    }
  else if (cwd[0] == '~' && (cwd[1] == '\0' || cwd[1] == '/'))
    {
      sb_str (b, "  __airlock_cwd=\"$HOME\"");
      if (cwd[1])
        sb_quoted (b, cwd + 1);
    }
  else if (cwd[0] == '/')
    {
      sb_str (b, "  __airlock_cwd=");
      sb_quoted (b, cwd);
    }
  else
    {
      /* Relative to the recorded directory ("./" without one): never
         searched in CDPATH, never taken for `cd -`. */
      sb_str (b, "  __airlock_cwd=");
      if (recorded && strcmp (recorded, "/") != 0)
        sb_quoted (b, recorded);
      else if (!recorded)
        sb_str (b, ".");
      sb_str (b, "/");
      sb_quoted (b, cwd);
    }
  sb_str (b, "\n");
}

static const char enter_cwd[]
    = "  if [[ -n $__airlock_cwd ]] && ! builtin cd -- \"$__airlock_cwd\" 2>/dev/null; then\n"
      "    if [[ ! -e $__airlock_cwd ]]; then __airlock_n='no such directory'\n"
      "    elif [[ ! -d $__airlock_cwd ]]; then __airlock_n='not a directory'\n"
      "    else __airlock_n='permission denied'\n"
      "    fi\n"
      "    builtin printf 'airlock: cannot change to working directory %s: %s\\n' \\\n"
      "      \"$__airlock_cwd\" \"$__airlock_n\" >&2\n"
      "    builtin exit 126\n"
      "  fi\n"
      "  builtin unset -v __airlock_cwd __airlock_n\n";

/* Step 1 of the command and job scripts: the snapshot is authoritative,
   an exported variable it lacks was unset, even if this shell inherited
   it.  Every variable name is in one of the ${!prefix@} expansions, but
   for those declared without a value: in a fresh shell, that is only
   OLDPWD.  The snapshot runs at the top level (its `declare`s make
   globals), as `source` ran it, with its output and errors discarded. */
static void
put_restore (struct sbuf *b, const struct shell_state *st)
{
  if (!st || !st->snapshot)
    return;
  sb_str (b, "  # 1. Restore.\n"
             "  for __airlock_n in");
  static const char first[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_";
  for (const char *c = first; *c; c++)
    {
      char word[] = " \"${!?@}\"";
      word[5] = *c;
      if ((c - first) % 9 == 0)
        sb_str (b, " \\\n     ");
      sb_str (b, word);
    }
  sb_str (b, "; do\n"
             "    [[ ${!__airlock_n@a} != *x* || $__airlock_n == AIRLOCK_* ]] ||\n"
             "      builtin unset -v -- \"$__airlock_n\" 2>/dev/null\n"
             "  done\n"
             "  [[ ${OLDPWD@a} != *x* ]] || builtin unset -v OLDPWD 2>/dev/null\n"
             "  __airlock_snap=");
  sb_quoted (b, st->snapshot);
  sb_str (b, "\n"
             "  builtin eval -- \"$__airlock_snap\" >/dev/null 2>&1\n"
             "  builtin unset -v __airlock_snap\n");
}

char *
shell_bootstrap_script (const char *initial_cwd)
{
  struct sbuf b = { 0 };
  sb_str (&b,
          "# airlock session bootstrap: capture this shell's exports,\n"
          "# functions and aliases, enter the starting directory, report.\n");
  sb_str (&b, save_function);
  sb_str (&b, "{\n");
  sb_str (&b, meta_fd);
  sb_str (&b,
          "  if (( BASH_VERSINFO[0] < 4 || (BASH_VERSINFO[0] == 4 && BASH_VERSINFO[1] < 4) )); then\n"
          "    builtin printf 'airlock: sessions need bash 4.4 or later; this is %s\\n' \\\n"
          "      \"$BASH_VERSION\" >&2\n"
          "    builtin exit 125\n"
          "  fi\n");
  sb_str (&b, apply_command_env);
  sb_str (&b, "  # The caller's env starts the session's state: it is saved.\n"
              "  __airlock_xenv=()\n");
  put_cwd_target (&b, initial_cwd, NULL);
  sb_str (&b, enter_cwd);
  sb_str (&b,
          "  if ! __airlock_save; then\n"
          "    builtin printf 'airlock: cannot report the session state on fd 3\\n' >&2\n"
          "    builtin exit 125\n"
          "  fi\n"
          "  builtin exit 0\n"
          "}\n");
  return sb_finish (&b);
}

char *
shell_command_script (const struct shell_state *st, const char *cwd,
                      const char *command)
{
  struct sbuf b = { 0 };
  sb_str (&b,
          "# airlock session command: restore the shell state, run the\n"
          "# command as bash runs a script, report the state.  Nothing here\n"
          "# reads stdin: it is the command's.\n");
  sb_str (&b, save_function);
  sb_str (&b,
          "__airlock_finish ()\n"
          "{\n"
          "  __airlock_done=1\n"
          "  __airlock_save ||\n"
          "    builtin printf 'airlock: warning: shell state not saved\\n' >&2\n"
          "  builtin exit \"$__airlock_ec\"\n"
          "}\n"
          "# One compound command, parsed before any of it runs.\n"
          "{\n");
  sb_str (&b, meta_fd);
  put_restore (&b, st);
  sb_str (&b, apply_command_env);
  sb_str (&b, "  # 2. The working directory.\n");
  put_cwd_target (&b, cwd, st ? st->cwd : NULL);
  sb_str (&b, enter_cwd);
  sb_str (&b,
          "  # 3. Save whatever happens from here on: `exit N`, set -e and\n"
          "  #    set -u failures all end in this trap with $? = N.  It is\n"
          "  #    parsed when it runs: \\ keeps the command's aliases out.\n"
          "  builtin trap -- '{ __airlock_ec=$?; \\builtin set +vx; } 2>/dev/null\n"
          "[[ -v __airlock_done ]] || \\__airlock_finish' EXIT\n"
          "  # 4. The command, with the session's aliases.\n"
          "  builtin shopt -s expand_aliases\n"
          "  builtin eval -- ");
  sb_quoted (&b, command);
  sb_str (&b,
          " 3>&-\n"
          "  # 5. It ended without exiting: save, and exit with its status.\n"
          "  { __airlock_ec=$?; builtin set +vx; } 2>/dev/null\n"
          "  __airlock_finish\n"
          "}\n");
  return sb_finish (&b);
}

/* A background job: the same restore and cd as a command, then the
   command as the group's last act, so that the script's status is its
   own.  No serializer, no EXIT trap, no report: a job that ends after
   later commands saved the state must not overwrite it.  fd 3 is closed
   first (not moved), so neither the job nor its children hold the
   channel. */
char *
shell_job_script (const struct shell_state *st, const char *cwd,
                  const char *command)
{
  struct sbuf b = { 0 };
  sb_str (&b,
          "# airlock session job: restore the shell state, run the command\n"
          "# as bash runs a script, save nothing.  Nothing here reads stdin:\n"
          "# it is the command's.\n"
          "# One compound command, parsed before any of it runs.\n"
          "{\n"
          "  # 0. The caller's metadata channel is not the job's, and the\n"
          "  #    script (fd 4) was read.  Not `builtin exec`: bash undoes the\n"
          "  #    redirections of `builtin`.\n"
          "  command exec 3>&- 4<&-\n");
  put_restore (&b, st);
  sb_str (&b, apply_command_env);
  sb_str (&b, "  # 2. The working directory.\n");
  put_cwd_target (&b, cwd, st ? st->cwd : NULL);
  sb_str (&b, enter_cwd);
  sb_str (&b,
          "  builtin unset -v __airlock_xenv\n"
          "  # 3. The command, with the session's aliases; its status is the\n"
          "  #    script's.\n"
          "  builtin shopt -s expand_aliases\n"
          "  builtin eval -- ");
  sb_quoted (&b, command);
  sb_str (&b, "\n}\n");
  return sb_finish (&b);
}

/* An export line of `export -p` is `declare -FLAGS NAME[=VALUE]`: true
   when NAME is one the state never holds. */
static bool
dropped_export (const char *line, size_t n)
{
  static const char head[] = "declare -";
  if (n < sizeof head || memcmp (line, head, sizeof head - 1))
    return false;
  size_t i = sizeof head - 1;
  while (i < n && ((line[i] >= 'a' && line[i] <= 'z') || (line[i] >= 'A' && line[i] <= 'Z')))
    i++;
  if (i == sizeof head - 1 || i >= n || line[i] != ' ')
    return false;
  const char *name = line + i + 1;
  size_t left = n - i - 1;
  return (left >= 8 && !memcmp (name, "AIRLOCK_", 8))
         || (left >= 10 && !memcmp (name, "__airlock_", 10));
}

int
shell_state_take (struct shell_state *st, const char *report, size_t len)
{
  if (len < 3 || len > SHELL_REPORT_MAX || report[len - 1] != '\0')
    return 0;
  const char *nul[3] = { NULL, NULL, NULL };
  size_t k = 0;
  for (const char *p = report; p < report + len && (p = memchr (p, '\0', (size_t) (report + len - p))); p++)
    {
      if (k == 3)
        return 0;
      nul[k++] = p;
    }
  const char *cwd = nul[1] + 1;
  if (k != 3 || cwd[0] != '/')
    return 0;
  struct sbuf b = { 0 };
  sb_str (&b, "# airlock shell snapshot\n");
  for (const char *line = report, *end; line < nul[0]; line = end + 1)
    {
      if (!(end = memchr (line, '\n', (size_t) (nul[0] - line))))
        end = nul[0];
      if (!dropped_export (line, (size_t) (end - line)))
        {
          sb_add (&b, line, (size_t) (end - line));
          sb_add (&b, "\n", 1);
        }
    }
  sb_add (&b, nul[0] + 1, (size_t) (nul[1] - nul[0] - 1));
  char *snapshot = sb_finish (&b);
  char *dir = strdup (cwd);
  if (!snapshot || !dir)
    {
      free (snapshot);
      free (dir);
      return -1;
    }
  shell_state_free (st);
  st->snapshot = snapshot;
  st->cwd = dir;
  return 1;
}

void
shell_state_free (struct shell_state *st)
{
  free (st->snapshot);
  free (st->cwd);
  st->snapshot = st->cwd = NULL;
}
