/* SPDX-License-Identifier: MIT */
/* What inline interpreter code hands on to be run, for the approval gate:
 * the command lines it gives a shell (os.system("..."), `...`,
 * child_process.execSync("...")), the argument lists it runs directly
 * (subprocess.run(["rm", "-rf", "x"])) and the code it evaluates in its
 * own language (eval("...")).
 *
 * A judge, not an interpreter: it reads string literals and calls, never
 * runs anything.  What it cannot resolve (a variable, a format string, an
 * f-string with fields, a call it recognizes by name but cannot read) is
 * reported as dynamic: only known at run time.  Time is linear in the
 * code's length. */
#ifndef AIRLOCK_POLICY_INLINE_CODE_H
#define AIRLOCK_POLICY_INLINE_CODE_H

#include <stdbool.h>
#include <stddef.h>

enum code_run
{
  /* A command line for /bin/sh.  An argument list comes as a command
   * line too, each literal argument single-quoted. */
  CODE_RUNS_SHELL,
  /* Code in the same language (eval, exec, Function, load ...). */
  CODE_RUNS_CODE,
  /* Not run: a file the code downloads (urlretrieve(url, "x.sh")), named
   * by text; its content is only known when it runs. */
  CODE_DOWNLOADS,
};

/* text[0..len) is what runs; dynamic: some of it is only known at run
 * time (each unknown part reads "$_" in a command line, so it is still a
 * word or a command name of unknown value). */
typedef void code_run_fn (void *ctx, enum code_run what, const char *text,
                          size_t len, bool dynamic);

/* The languages read: "python", "perl", "ruby", "node", "php", "lua",
 * "awk", "r", "applescript". */
bool inline_code_known (const char *lang);

/* Report through fn everything code (of lang, one of the above) hands on
 * to be run, in the order it appears.  *work grows by the steps taken (a
 * bounded number per byte).  False only when out of memory (what was
 * reported so far stands; the caller should fail closed). */
bool inline_code_scan (const char *lang, const char *code, size_t len,
                       code_run_fn *fn, void *ctx, unsigned long long *work);

#endif
