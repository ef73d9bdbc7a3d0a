/* SPDX-License-Identifier: MIT */
/* Shell state carried between the commands of a session: the scripts.
 *
 * How a command script runs (see shell_command_script):
 *
 *   1. restore: drop every exported variable the snapshot does not hold
 *      (an `unset` must stick even for a variable the sandbox's process
 *      environment brings back each time; AIRLOCK_* excepted), then source
 *      the snapshot with its output and errors discarded;
 *   2. cd to the requested or recorded directory, or exit 126;
 *   3. set an EXIT trap that saves the state;
 *   4. eval the command, single-quoted, with alias expansion on;
 *   5. save the state and exit with the command's status.
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
 * or is killed saves nothing: the previous state stays whole.
 *
 * Everything after the function definitions is one `{ ... }` group, which
 * bash parses entirely before running any of it: aliases and functions
 * restored from the snapshot cannot change the wrapper's own code.
 * Builtins are called through `builtin` and mv/rm through `command -p`, so
 * that a command's functions named cd, printf or mv, or a PATH it broke,
 * do not break the save either.
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

/* state_dir without trailing slashes, so that the paths the scripts use
   and the ones callers get are the same strings. */
static size_t
dir_len (const char *state_dir)
{
  size_t n = strlen (state_dir);
  while (n > 1 && state_dir[n - 1] == '/')
    n--;
  return n;
}

static char *
state_file (const char *state_dir, const char *name)
{
  struct sbuf b = { 0 };
  size_t n = dir_len (state_dir);
  sb_add (&b, state_dir, n);
  if (!(n == 1 && state_dir[0] == '/'))
    sb_add (&b, "/", 1);
  sb_str (&b, name);
  return sb_finish (&b);
}

char *
shell_cwd_file (const char *state_dir)
{
  return state_file (state_dir, "cwd");
}

char *
shell_snapshot_file (const char *state_dir)
{
  return state_file (state_dir, "snapshot");
}

static void
put_state_dir (struct sbuf *b, const char *state_dir)
{
  char *d = strndup (state_dir, dir_len (state_dir));
  if (!d)
    {
      b->oom = true;
      return;
    }
  if (strcmp (d, "/") == 0)
    d[0] = '\0'; /* "$__airlock_dir/cwd" is then /cwd */
  sb_str (b, "__airlock_dir=");
  sb_quoted (b, d);
  sb_str (b, "\n");
  free (d);
}

/* The serializer, the same at bootstrap and after every command (the
   original lost functions and aliases after the first command by dumping
   exports only there).  It returns non-zero when a state file could not be
   written.  Its variables are globals named __airlock_*: a `local` would
   shadow a user's exported variable of the same name in the dump. */
static const char save_function[]
    = "__airlock_save ()\n"
      "{\n"
      "  # Undo what the command may have set that would break, trace or\n"
      "  # leak into the save (extglob is for the filter below); this\n"
      "  # function and __airlock_finish are not part of the user's state.\n"
      "  builtin set +aCeEuTvx +o pipefail +o posix\n"
      "  builtin shopt -u nocasematch\n"
      "  builtin trap - ERR DEBUG RETURN\n"
      "  builtin unset -f __airlock_save __airlock_finish\n"
      "  builtin shopt -s extglob\n"
      "  builtin umask 077\n"
      "  __airlock_rc=0\n"
      "\n"
      "  # 1. Exports, functions with their export/readonly marks (older\n"
      "  #    bash omits them from declare -f), aliases.  export -p prints\n"
      "  #    one variable a line ($'...' when a value holds a newline): the\n"
      "  #    session's identity (AIRLOCK_*) and our own variables, which\n"
      "  #    `set -a` may have exported, are dropped line by line, so even a\n"
      "  #    name exported without a value stays out.\n"
      "  __airlock_tmp=$__airlock_dir/snapshot.tmp.$$\n"
      "  __airlock_lines=()\n"
      "  if builtin export -p 2>/dev/null >\"$__airlock_tmp\" &&\n"
      "     builtin mapfile -t __airlock_lines 2>/dev/null <\"$__airlock_tmp\" &&\n"
      "     { [[ -z ${__airlock_xenv-} ]] ||\n"
      "       for __airlock_i in \"${!__airlock_lines[@]}\"; do\n"
      "         [[ ${__airlock_lines[__airlock_i]} != \"declare -\"+([a-zA-Z])\" \"@($__airlock_xenv)?(=*) ]] ||\n"
      "           __airlock_lines[__airlock_i]=\n"
      "       done; } &&\n"
      "     { builtin printf '# airlock shell snapshot\\n' &&\n"
      "       builtin printf '%s\\n' \\\n"
      "         \"${__airlock_lines[@]/#declare -+([a-zA-Z]) @(AIRLOCK|__airlock)_*/}\" &&\n"
      "       builtin declare -f && builtin declare -Fx && builtin declare -Fr &&\n"
      "       builtin alias -p\n"
      "     } 2>/dev/null >\"$__airlock_tmp\" &&\n"
      "     command -p mv -f -- \"$__airlock_tmp\" \"$__airlock_dir/snapshot\" 2>/dev/null\n"
      "  then :\n"
      "  else\n"
      "    __airlock_rc=1\n"
      "    command -p rm -f -- \"$__airlock_tmp\" 2>/dev/null\n"
      "  fi\n"
      "  __airlock_lines=()\n"
      "\n"
      "  # 2. The working directory, physical.  If the command removed it,\n"
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
      "  # Rewritten only when it changed: most commands stay where they are.\n"
      "  __airlock_old=\n"
      "  IFS= builtin read -r -d '' __airlock_old 2>/dev/null <\"$__airlock_dir/cwd\"\n"
      "  if [[ ${__airlock_old%$'\\n'} != \"$PWD\" ]]; then\n"
      "    __airlock_tmp=$__airlock_dir/cwd.tmp.$$\n"
      "    if builtin printf '%s\\n' \"$PWD\" 2>/dev/null >\"$__airlock_tmp\" &&\n"
      "       command -p mv -f -- \"$__airlock_tmp\" \"$__airlock_dir/cwd\" 2>/dev/null\n"
      "    then :\n"
      "    else\n"
      "      __airlock_rc=1\n"
      "      command -p rm -f -- \"$__airlock_tmp\" 2>/dev/null\n"
      "    fi\n"
      "  fi\n"
      "  # 3. Last act: the directory on the caller's metadata channel.  It\n"
      "  #    is fd 3, but an `exit` inside the command's own redirections\n"
      "  #    (in a function, say) gets here before bash put it back there\n"
      "  #    (see meta_fd): then it is the descriptor with its pipe's\n"
      "  #    identity.  Never a descriptor of the command's by mistake.\n"
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
      "  [[ -z $__airlock_out ]] ||\n"
      "    builtin printf '%s\\n' \"$PWD\" 2>/dev/null >&\"$__airlock_out\"\n"
      "  return \"$__airlock_rc\"\n"
      "}\n";

/* A command's own env (AIRLOCK_ENV_NAME=value from the caller) is
   exported as NAME for that command only: the names are kept in
   __airlock_xenv, and the serializer drops their lines from the save.
   Names are plain variable names (the caller checks), so they are safe
   in a pattern. */
static const char apply_command_env[]
    = "  # 1b. This command's own env, over the restored state.\n"
      "  __airlock_xenv=\n"
      "  for __airlock_n in $(builtin compgen -e 2>/dev/null); do\n"
      "    [[ $__airlock_n == AIRLOCK_ENV_?* ]] || continue\n"
      "    builtin export -- \"${__airlock_n#AIRLOCK_ENV_}=${!__airlock_n}\"\n"
      "    __airlock_xenv+=${__airlock_xenv:+|}${__airlock_n#AIRLOCK_ENV_}\n"
      "    builtin unset -v -- \"$__airlock_n\"\n"
      "  done\n";

/* Both scripts start the same way: the state directory and the
   serializer (then meta_fd, inside their group). */
static void
put_prologue (struct sbuf *b, const char *what, const char *state_dir)
{
  sb_str (b, what);
  put_state_dir (b, state_dir);
  sb_str (b, save_function);
}

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

/* Sets __airlock_cwd to the directory to enter, or to "" for "stay". */
static void
put_cwd_target (struct sbuf *b, const char *cwd, bool have_record)
{
  if (!cwd || !*cwd)
    {
      if (!have_record)
        {
          sb_str (b, "  __airlock_cwd=\n");
          return;
        }
      sb_str (b, "  # The working directory where the last command ended.\n");
    }
  if (have_record && (!cwd || !*cwd || (cwd[0] != '/' && cwd[0] != '~')))
    sb_str (b, "  __airlock_cwd=\n"
               "  { IFS= builtin read -r -d '' __airlock_cwd "
               "<\"$__airlock_dir/cwd\"; } 2>/dev/null\n"
               "  __airlock_cwd=${__airlock_cwd%$'\\n'}\n");
  if (!cwd || !*cwd)
    return;
  if (cwd[0] == '~' && (cwd[1] == '\0' || cwd[1] == '/'))
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
  else if (have_record)
    {
      /* Relative to the recorded directory ("./" without one): never
         searched in CDPATH, never taken for `cd -`. */
      sb_str (b, "  __airlock_cwd=${__airlock_cwd:-.}\n"
                 "  __airlock_cwd=${__airlock_cwd%/}/");
      sb_quoted (b, cwd);
    }
  else
    {
      sb_str (b, "  __airlock_cwd=./");
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

/* Step 1 of the command and job scripts. */
static const char restore_state[]
    = "  # 1. Restore.  The snapshot is authoritative: an exported variable\n"
      "  #    it lacks was unset, even if this shell inherited it.\n"
      "  if [[ -r $__airlock_dir/snapshot ]]; then\n"
      "    IFS=$' \\t\\n'\n"
      "    for __airlock_n in $(builtin compgen -e 2>/dev/null); do\n"
      "      [[ $__airlock_n == AIRLOCK_* ]] ||\n"
      "        builtin unset -v -- \"$__airlock_n\" 2>/dev/null\n"
      "    done\n"
      "    builtin source -- \"$__airlock_dir/snapshot\" >/dev/null 2>&1\n"
      "  fi\n";

char *
shell_bootstrap_script (const char *state_dir, const char *initial_cwd)
{
  struct sbuf b = { 0 };
  put_prologue (&b,
                "# airlock session bootstrap: make the private state directory,\n"
                "# capture this shell's exports, functions and aliases, enter and\n"
                "# record the starting directory.\n",
                state_dir);
  sb_str (&b, "{\n");
  sb_str (&b, meta_fd);
  sb_str (&b,
          "  builtin umask 077\n"
          "  # It may be in a shared /tmp: refuse one that is a symlink or not\n"
          "  # ours rather than write through it.\n"
          "  command -p mkdir -p -m 700 -- \"$__airlock_dir\" 2>/dev/null\n"
          "  if [[ ! -d $__airlock_dir || -L $__airlock_dir || ! -O $__airlock_dir ]] ||\n"
          "     ! command -p chmod 700 -- \"$__airlock_dir\" 2>/dev/null; then\n"
          "    builtin printf 'airlock: cannot use %s as the session state directory\\n' \\\n"
          "      \"$__airlock_dir\" >&2\n"
          "    builtin exit 125\n"
          "  fi\n");
  sb_str (&b, apply_command_env);
  sb_str (&b, "  # The caller's env starts the session's state: it is saved.\n"
              "  __airlock_xenv=\n");
  put_cwd_target (&b, initial_cwd, false);
  sb_str (&b, enter_cwd);
  sb_str (&b,
          "  if ! __airlock_save; then\n"
          "    builtin printf 'airlock: cannot write the session state in %s\\n' \\\n"
          "      \"$__airlock_dir\" >&2\n"
          "    builtin exit 125\n"
          "  fi\n"
          "  builtin exit 0\n"
          "}\n");
  return sb_finish (&b);
}

char *
shell_command_script (const char *state_dir, const char *cwd,
                      const char *command)
{
  struct sbuf b = { 0 };
  put_prologue (&b,
                "# airlock session command: restore the shell state, run the\n"
                "# command as bash runs a script, save the state.  Nothing here\n"
                "# reads stdin: it is the command's.\n",
                state_dir);
  sb_str (&b,
          "__airlock_finish ()\n"
          "{\n"
          "  __airlock_done=1\n"
          "  __airlock_save ||\n"
          "    builtin printf 'airlock: warning: shell state not saved in %s\\n' \\\n"
          "      \"$__airlock_dir\" >&2\n"
          "  builtin exit \"$__airlock_ec\"\n"
          "}\n"
          "# One compound command, parsed before any of it runs.\n"
          "{\n");
  sb_str (&b, meta_fd);
  sb_str (&b, restore_state);
  sb_str (&b, apply_command_env);
  sb_str (&b, "  # 2. The working directory.\n");
  put_cwd_target (&b, cwd, true);
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
   own.  No serializer, no EXIT trap, no save: a job that ends after later
   commands saved the state must not overwrite it.  fd 3 is closed first
   (not moved), so neither the job nor its children hold the channel. */
char *
shell_job_script (const char *state_dir, const char *cwd, const char *command)
{
  struct sbuf b = { 0 };
  sb_str (&b,
          "# airlock session job: restore the shell state, run the command\n"
          "# as bash runs a script, save nothing.  Nothing here reads stdin:\n"
          "# it is the command's.\n");
  put_state_dir (&b, state_dir);
  sb_str (&b,
          "# One compound command, parsed before any of it runs.\n"
          "{\n"
          "  # 0. The caller's metadata channel is not the job's, and the\n"
          "  #    script (fd 4) was read.  Not `builtin exec`: bash undoes the\n"
          "  #    redirections of `builtin`.\n"
          "  command exec 3>&- 4<&-\n");
  sb_str (&b, restore_state);
  sb_str (&b, apply_command_env);
  sb_str (&b, "  # 2. The working directory.\n");
  put_cwd_target (&b, cwd, true);
  sb_str (&b, enter_cwd);
  sb_str (&b,
          "  builtin unset -v __airlock_dir __airlock_xenv\n"
          "  # 3. The command, with the session's aliases; its status is the\n"
          "  #    script's.\n"
          "  builtin shopt -s expand_aliases\n"
          "  builtin eval -- ");
  sb_quoted (&b, command);
  sb_str (&b, "\n}\n");
  return sb_finish (&b);
}
