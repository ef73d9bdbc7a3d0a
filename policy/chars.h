/* SPDX-License-Identifier: MIT */
/* Small text helpers the policy parsers (rule files, the shell tokenizer,
 * the inline-code scanner) share. */
#ifndef AIRLOCK_POLICY_CHARS_H
#define AIRLOCK_POLICY_CHARS_H

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

/* The value of a hexadecimal digit, or -1. */
static inline int
hex_digit (int c)
{
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return -1;
}

/* Whether s[0..n) is one of the names of a "|a|b|c|" list (NULL: none),
 * the way option tables list names in one string. */
static inline bool
name_list_has (const char *list, const char *s, size_t n)
{
  for (const char *p = list; p && (p = strchr (p, '|')) != NULL; p++)
    if (strncmp (p + 1, s, n) == 0 && p[1 + n] == '|')
      return true;
  return false;
}

#endif
