/* SPDX-License-Identifier: MIT */
/* Text for a POSIX shell on the far side (the ssh and daytona backends'
 * wrappers): single-quoted words, an argv as words, an environment as
 * `export` lines. */
#ifndef AIRLOCK_BACKENDS_SH_WORDS_H
#define AIRLOCK_BACKENDS_SH_WORDS_H

/* s as one single-quoted word (malloc'd; NULL when out of memory). */
char *sh_quote (const char *s);

/* argv as words, each behind a space (" 'a' 'b'"; "" for none). */
char *sh_argv_words (const char *const *argv);

/* envp ("NAME=value") as `export NAME='value'` lines; entries whose name
 * is not a shell name cannot be exported by sh and are left out. */
char *sh_export_lines (const char *const *envp);

#endif
