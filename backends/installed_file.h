/* SPDX-License-Identifier: MIT */
/* A file airlock needs at a path compiled in at build time (the helper,
 * the supervisor, the default rules) or named by an AIRLOCK_* variable:
 * when it is missing, the error says where the path came from and how to
 * fix it, since the usual cause is a build installed under another PREFIX
 * or not installed at all. */
#ifndef AIRLOCK_BACKENDS_INSTALLED_FILE_H
#define AIRLOCK_BACKENDS_INSTALLED_FILE_H

#include <stddef.h>

/* The parenthesis to append to an error about PATH, which ENV overrides,
 * written into BUF (no allocation: usable between fork and exec). */
const char *installed_file_hint (const char *path, const char *env, char *buf,
                                 size_t size);

/* 0 when PATH is there for access(2) MODE, or is refused for another
 * reason than being missing (left to the caller's own error); -1 with
 * *ERR "PATH: No such file or directory (hint)" when it is missing. */
int installed_file_check (const char *path, int mode, const char *env,
                          char **err);

#endif
