/* SPDX-License-Identifier: MIT */
/* Normalization of a command line before it is judged (see
 * shell_parse.h and hermes-backends.md §5.2).
 *
 * Three context-free passes, each linear: terminal escape sequences and
 * NUL bytes, Unicode NFKC, $IFS spellings.  Backslash-newline removal
 * needs to know about quotes, comments and heredocs, so the tokenizer
 * does it (policy_normalize runs it to get a complete result).
 *
 * The rule behind every pass: the result may show the tokenizer MORE
 * structure than bash would see (an extra word break, an extra command),
 * never less.  Removing characters can hide structure: stripping an
 * escape sequence that contains ';' removes a separator bash obeys;
 * NFKC can turn U+FF03 into '#' and so invent a comment that hides the
 * rest of the line, or U+FF1C into '<' and invent a heredoc.  So escape
 * sequences are only removed where bash sees them as part of a word and
 * nothing structural goes with them, and NFKC results that contain
 * shell-significant ASCII are not used. */
#define _GNU_SOURCE
#include "shell_parse.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <uninorm.h>
#include <unistr.h>

#define ESC 0x1b
#define BEL 0x07
/* NFKC may lengthen a character (U+FDFA is 18 of them); a longer result
 * is not used, so the normalized text is at most this many times the
 * input and the tokenizer's work stays linear in the input. */
#define NFKC_MAX_GROWTH 4

struct out
{
  char *p;
  size_t len, cap;
  bool nomem;
};

static void
put (struct out *o, const void *src, size_t n)
{
  if (o->nomem || n == 0)
    return;
  if (o->len + n + 1 > o->cap)
    {
      size_t cap = o->cap ? o->cap : 64;
      while (cap < o->len + n + 1)
        cap *= 2;
      char *p = realloc (o->p, cap);
      if (!p)
        {
          o->nomem = true;
          return;
        }
      o->p = p;
      o->cap = cap;
    }
  memcpy (o->p + o->len, src, n);
  o->len += n;
  o->p[o->len] = '\0';
}

static void
put_byte (struct out *o, char c)
{
  put (o, &c, 1);
}

static bool
is_alnum (unsigned char c)
{
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z')
         || (c >= 'A' && c <= 'Z');
}

/* ---- pass 1: NUL bytes and terminal escape sequences ---- */

/* Bytes that mean something to the shell's grammar.  A sequence holding
 * one is kept whole: removing it would remove a separator, quote, or
 * redirection that bash obeys. */
static bool
shell_special (unsigned char c)
{
  return c <= ' ' || c == 0x7f || strchr (";&|<>()$`'\"\\#{}", c) != NULL;
}

/* A byte that bash reads as an ordinary part of a word, with no meaning
 * of its own at the start of one either. */
static bool
plain_word_byte (unsigned char c)
{
  return is_alnum (c) || c >= 0x80 || strchr ("_-./:,+%@=", c) != NULL;
}

/* The end of the escape sequence starting at s[i] (ESC, or a C1
 * introducer in UTF-8 form), or 0 when there is none there or it is not
 * inert (incomplete, or holding a shell-special byte). */
static size_t
escape_end (const unsigned char *s, size_t i, size_t n)
{
  size_t j;
  bool string = false, csi = false;

  if (s[i] == ESC)
    {
      if (i + 1 >= n)
        return 0;
      unsigned char b = s[i + 1];
      j = i + 2;
      if (b == '[')
        csi = true;
      else if (b == ']' || b == 'P' || b == 'X' || b == '^' || b == '_')
        string = true;
      else if (b >= 0x20 && b <= 0x2f)
        {
          /* nF: intermediates, then a final byte */
          if (shell_special (b))
            return 0;
          while (j < n && s[j] >= 0x20 && s[j] <= 0x2f)
            {
              if (shell_special (s[j]))
                return 0;
              j++;
            }
          if (j < n && s[j] >= 0x30 && s[j] <= 0x7e && !shell_special (s[j]))
            return j + 1;
          return 0;
        }
      else if (b >= 0x30 && b <= 0x7e)
        return shell_special (b) ? 0 : i + 2;
      else
        return 0;
    }
  else if (s[i] == 0xc2 && i + 1 < n)
    {
      unsigned char b = s[i + 1];
      j = i + 2;
      if (b == 0x9b)
        csi = true;
      else if (b == 0x9d || b == 0x90 || b == 0x98 || b == 0x9e || b == 0x9f)
        string = true;
      else
        return 0;
    }
  else
    return 0;

  if (csi)
    {
      /* parameter bytes, intermediate bytes, one final byte */
      while (j < n && s[j] >= 0x30 && s[j] <= 0x3f)
        if (shell_special (s[j++]))
          return 0;
      while (j < n && s[j] >= 0x20 && s[j] <= 0x2f)
        if (shell_special (s[j++]))
          return 0;
      if (j < n && s[j] >= 0x40 && s[j] <= 0x7e && !shell_special (s[j]))
        return j + 1;
      return 0;
    }
  if (string)
    {
      /* body up to BEL, ESC \ or C1 ST; stops at the first byte that is
       * not printable ASCII, so a failed scan covers no ESC and every
       * byte is scanned a bounded number of times */
      while (j < n)
        {
          unsigned char c = s[j];
          if (c == BEL)
            return j + 1;
          if (c == ESC)
            return j + 1 < n && s[j + 1] == '\\' ? j + 2 : 0;
          if (c == 0xc2 && j + 1 < n && s[j + 1] == 0x9c)
            return j + 2;
          if (c < 0x20 || c > 0x7e || shell_special (c))
            return 0;
          j++;
        }
    }
  return 0;
}

/* Remove NUL bytes and the escape sequences that bash would read as part
 * of a word: after a plain word byte (r ESC[0m m: bash sees one word,
 * and so do we), or at the start of a word when a letter, digit, '/',
 * '.' or '_' follows (so it cannot make a '#' start a word, or merge two
 * operators).  Everything else is kept as it is: bash reads ESC as an
 * ordinary character, so keeping it is always faithful. */
static void
strip_controls (const unsigned char *s, size_t n, struct out *o,
                unsigned long long *work)
{
  size_t i = 0;
  while (i < n && !o->nomem)
    {
      unsigned char c = s[i];
      if (c == 0)
        {
          i++;
          continue;
        }
      size_t end = (c == ESC || c == 0xc2) ? escape_end (s, i, n) : 0;
      if (end == 0)
        {
          put_byte (o, (char) c);
          i++;
          continue;
        }
      /* a run of sequences, decided on together */
      size_t run_end = end;
      for (;;)
        {
          while (run_end < n && s[run_end] == 0)
            run_end++;
          size_t e = run_end < n ? escape_end (s, run_end, n) : 0;
          if (e == 0)
            break;
          run_end = e;
        }
      *work += run_end - i;
      unsigned char prev = o->len ? (unsigned char) o->p[o->len - 1] : ' ';
      unsigned char next = run_end < n ? s[run_end] : ' ';
      bool strip = plain_word_byte (prev)
                   || (prev != '\\'
                       && (is_alnum (next) || next == '/' || next == '.'
                           || next == '_'));
      if (!strip)
        for (size_t k = i; k < run_end; k++)
          if (s[k])
            put_byte (o, (char) s[k]);
      i = run_end;
    }
  *work += n;
}

/* ---- pass 2: NFKC ---- */

/* What NFKC may produce from non-ASCII text: letters, digits and
 * punctuation without meaning to the shell. */
static bool
nfkc_result_ok (const uint8_t *r, size_t rn, size_t from_len)
{
  if (rn > NFKC_MAX_GROWTH * from_len)
    return false;
  for (size_t k = 0; k < rn; k++)
    if (r[k] < 0x80 && !is_alnum (r[k]) && !strchr ("-_./,:+%@^~=", r[k]))
      return false;
  return true;
}

/* NFKC of s[0..n), a run of valid non-ASCII UTF-8, appended to o.  Runs
 * whose result is not acceptable are done character by character, each
 * character kept as it was when its own result is not acceptable. */
static void
nfkc_run (const uint8_t *s, size_t n, struct out *o, unsigned long long *work)
{
  size_t rn = 0;
  uint8_t *r = u8_normalize (UNINORM_NFKC, s, n, NULL, &rn);
  if (!r)
    {
      /* only ENOMEM: keep the run as it is */
      put (o, s, n);
      return;
    }
  *work += n + rn;
  if (nfkc_result_ok (r, rn, n))
    {
      put (o, r, rn);
      free (r);
      return;
    }
  free (r);

  size_t i = 0;
  while (i < n)
    {
      ucs4_t uc;
      int l = u8_mbtoucr (&uc, s + i, n - i);
      size_t cl = l > 0 ? (size_t) l : 1;
      uint8_t buf[64];
      size_t bn = sizeof buf;
      uint8_t *cr = u8_normalize (UNINORM_NFKC, s + i, cl, buf, &bn);
      if (cr && nfkc_result_ok (cr, bn, cl))
        put (o, cr, bn);
      else
        put (o, s + i, cl);
      if (cr && cr != buf)
        free (cr);
      *work += cl + bn;
      i += cl;
    }
}

static void
nfkc (const uint8_t *s, size_t n, struct out *o, unsigned long long *work)
{
  size_t i = 0;
  while (i < n && !o->nomem)
    {
      if (s[i] < 0x80)
        {
          size_t j = i;
          while (j < n && s[j] < 0x80)
            j++;
          put (o, s + i, j - i);
          i = j;
          continue;
        }
      size_t j = i;
      while (j < n && s[j] >= 0x80)
        {
          ucs4_t uc;
          int l = u8_mbtoucr (&uc, s + j, n - j);
          if (l <= 0)
            break;
          j += (size_t) l;
        }
      if (j == i)
        {
          /* invalid UTF-8: the byte stays as it is */
          put_byte (o, (char) s[i]);
          i++;
          continue;
        }
      nfkc_run (s + i, j - i, o, work);
      i = j;
    }
  *work += n;
}

/* ---- pass 3: $IFS ---- */

/* Skip backslash-newline pairs: bash removes them before it sees $IFS. */
static size_t
skip_cont (const char *s, size_t i, size_t n)
{
  while (i + 1 < n && s[i] == '\\' && s[i + 1] == '\n')
    i += 2;
  return i;
}

static bool
name_byte (unsigned char c)
{
  return is_alnum (c) || c == '_';
}

/* The end of an $IFS spelling starting at the '$' s[i], or 0: $IFS (not
 * $IFSX), ${IFS}, and ${IFS<op>...} with inert operands (${IFS:0:1},
 * ${IFS%?}); an operand that could run something (${IFS:+$(cmd)}) is
 * left alone for the tokenizer. */
static size_t
ifs_end (const char *s, size_t i, size_t n)
{
  size_t j = skip_cont (s, i + 1, n);
  bool brace = false;
  if (j < n && s[j] == '{')
    {
      brace = true;
      j = skip_cont (s, j + 1, n);
    }
  for (const char *w = "IFS"; *w; w++)
    {
      if (j >= n || s[j] != *w)
        return 0;
      j = skip_cont (s, j + 1, n);
    }
  if (!brace)
    return j < n && name_byte ((unsigned char) s[j]) ? 0 : j;
  if (j < n && s[j] == '}')
    return j + 1;
  if (j >= n || !strchr (":%#/^,[-+=?@", s[j]))
    return 0;
  for (; j < n; j++)
    {
      if (s[j] == '}')
        return j + 1;
      if (strchr ("$`'\"\\\n{", s[j]))
        return 0;
    }
  return 0;
}

/* Each $IFS spelling becomes a space: unquoted, it splits the word
 * there.  A '#' right after it would now start a comment, which bash
 * would not see (the '#' was inside the word): it is escaped. */
static void
replace_ifs (const char *s, size_t n, struct out *o, unsigned long long *work)
{
  size_t i = 0;
  while (i < n && !o->nomem)
    {
      const char *d = memchr (s + i, '$', n - i);
      size_t stop = d ? (size_t) (d - s) : n;
      put (o, s + i, stop - i);
      i = stop;
      if (i >= n)
        break;
      size_t end = ifs_end (s, i, n);
      if (end == 0)
        {
          put_byte (o, '$');
          i++;
          continue;
        }
      size_t next = skip_cont (s, end, n);
      if (next < n && s[next] == '#')
        {
          put (o, " \\#", 3);
          end = next + 1;
        }
      else
        put_byte (o, ' ');
      *work += end - i;
      i = end;
    }
  *work += n;
}

char *
policy_prenormalize (const char *text, size_t len, size_t *out_len,
                     unsigned long long *work)
{
  unsigned long long scratch = 0;
  if (!work)
    work = &scratch;
  if (!text)
    len = 0;

  struct out a = { 0 }, b = { 0 }, c = { 0 };
  strip_controls ((const unsigned char *) (text ? text : ""), len, &a, work);
  if (!a.nomem)
    nfkc ((const uint8_t *) (a.p ? a.p : ""), a.len, &b, work);
  free (a.p);
  if (!a.nomem && !b.nomem)
    replace_ifs (b.p ? b.p : "", b.len, &c, work);
  free (b.p);
  if (a.nomem || b.nomem || c.nomem)
    {
      free (c.p);
      return NULL;
    }
  if (!c.p)
    {
      c.p = calloc (1, 1);
      if (!c.p)
        return NULL;
    }
  if (out_len)
    *out_len = c.len;
  return c.p;
}

char *
policy_normalize (const char *text, size_t len)
{
  /* The tokenizer knows where bash removes backslash-newline pairs. */
  struct shell_parse *p = shell_parse (text, len);
  if (!p)
    return NULL;
  char *r = p->normalized;
  p->normalized = NULL;
  shell_parse_free (p);
  return r;
}
