/* SPDX-License-Identifier: MIT */
/* Bounded head+tail capture of a command's output.
 *
 * Bytes are decoded to code points as they arrive.  The first `limit`
 * code points are stored in one array; once it is full, the first `head`
 * slots stay fixed and the remaining `tail` slots become a ring holding
 * the most recent code points.  Storing code points (not bytes) means the
 * split can never cut a character.  The raw bytes are not kept: the
 * session layer spools the full output to disk itself (spool.c). */
#include "output_window.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define REPLACEMENT 0xfffdu
#define MIN_GROWTH 1024

/* Incremental UTF-8 decoder following Unicode's table of well-formed
 * sequences, so that each maximal invalid subpart yields one U+FFFD. */
struct utf8_decoder
{
  uint32_t cp;             /* bits of the sequence gathered so far */
  unsigned need;           /* continuation bytes still expected */
  unsigned char lo, hi;    /* range the next continuation byte must be in */
};

struct output_window
{
  size_t limit, head, tail;
  uint32_t *chars;         /* [0, head): head; [head, limit): tail ring */
  size_t chars_cap;
  size_t ring_next;        /* tail slot the next code point overwrites */
  size_t total_chars, total_bytes;
  struct utf8_decoder dec;
  bool nomem;
  bool finished;
};

/* Decoding */

/* Feed one byte; stores 0, 1 or 2 code points in out (a byte that breaks
 * a sequence ends one U+FFFD and is then decoded on its own). */
static inline unsigned
utf8_step (struct utf8_decoder *d, unsigned char b, uint32_t out[2])
{
  unsigned n = 0;

  if (d->need)
    {
      if (b >= d->lo && b <= d->hi)
        {
          d->cp = (d->cp << 6) | (b & 0x3fu);
          d->lo = 0x80;
          d->hi = 0xbf;
          if (--d->need == 0)
            out[n++] = d->cp;
          return n;
        }
      d->need = 0;
      out[n++] = REPLACEMENT;
    }

  if (b < 0x80)
    {
      /* NUL would end the C string render() returns. */
      out[n++] = b ? b : REPLACEMENT;
      return n;
    }
  d->lo = 0x80;
  d->hi = 0xbf;
  if (b >= 0xc2 && b <= 0xdf)
    {
      d->need = 1;
      d->cp = b & 0x1fu;
    }
  else if (b >= 0xe0 && b <= 0xef)
    {
      d->need = 2;
      d->cp = b & 0x0fu;
      if (b == 0xe0)
        d->lo = 0xa0;           /* overlong below U+0800 */
      else if (b == 0xed)
        d->hi = 0x9f;           /* surrogates */
    }
  else if (b >= 0xf0 && b <= 0xf4)
    {
      d->need = 3;
      d->cp = b & 0x07u;
      if (b == 0xf0)
        d->lo = 0x90;           /* overlong below U+10000 */
      else if (b == 0xf4)
        d->hi = 0x8f;           /* above U+10FFFF */
    }
  else
    out[n++] = REPLACEMENT;     /* continuation byte, C0, C1, F5..FF */
  return n;
}

/* End of input: a sequence cut short is one maximal invalid subpart. */
static inline bool
utf8_finish (struct utf8_decoder *d)
{
  bool pending = d->need != 0;
  d->need = 0;
  return pending;
}

static inline size_t
utf8_len (uint32_t c)
{
  return c < 0x80 ? 1 : c < 0x800 ? 2 : c < 0x10000 ? 3 : 4;
}

static inline char *
utf8_put (char *p, uint32_t c)
{
  if (c < 0x80)
    *p++ = (char) c;
  else if (c < 0x800)
    {
      *p++ = (char) (0xc0 | (c >> 6));
      *p++ = (char) (0x80 | (c & 0x3f));
    }
  else if (c < 0x10000)
    {
      *p++ = (char) (0xe0 | (c >> 12));
      *p++ = (char) (0x80 | ((c >> 6) & 0x3f));
      *p++ = (char) (0x80 | (c & 0x3f));
    }
  else
    {
      *p++ = (char) (0xf0 | (c >> 18));
      *p++ = (char) (0x80 | ((c >> 12) & 0x3f));
      *p++ = (char) (0x80 | ((c >> 6) & 0x3f));
      *p++ = (char) (0x80 | (c & 0x3f));
    }
  return p;
}

size_t
output_window_sanitize_utf8 (const void *in, size_t n, char **out)
{
  const unsigned char *s = in;
  struct utf8_decoder d = { 0 };
  uint32_t cps[2];

  /* One byte yields at most 3 output bytes (a lone byte -> U+FFFD). */
  *out = NULL;
  if (n > (SIZE_MAX - 1) / 3)
    return 0;
  char *buf = malloc (3 * n + 1);
  if (!buf)
    return 0;
  char *p = buf;
  for (size_t i = 0; i < n; i++)
    {
      unsigned k = utf8_step (&d, s[i], cps);
      for (unsigned j = 0; j < k; j++)
        p = utf8_put (p, cps[j]);
    }
  if (utf8_finish (&d))
    p = utf8_put (p, REPLACEMENT);
  *p = '\0';

  size_t len = (size_t) (p - buf);
  char *shrunk = realloc (buf, len + 1);
  *out = shrunk ? shrunk : buf;
  return len;
}

/* Window */

struct output_window *
output_window_new (size_t limit_chars)
{
  struct output_window *w = calloc (1, sizeof *w);
  if (!w)
    return NULL;
  w->limit = limit_chars;
  /* floor (limit * 0.4) without overflow for any size_t */
  w->head = limit_chars / 10 * 4 + limit_chars % 10 * 4 / 10;
  w->tail = limit_chars - w->head;
  return w;
}

/* Grow buf to hold at least `need` elements of `size` bytes, doubling but
 * never beyond `max` elements.  Returns the buffer, or NULL (buf is then
 * left as it was). */
static void *
grow (void *buf, size_t *cap, size_t need, size_t max, size_t size)
{
  if (need <= *cap)
    return buf;
  size_t c = *cap < MIN_GROWTH ? MIN_GROWTH : *cap;
  while (c < need && c <= SIZE_MAX / 2)
    c *= 2;
  if (c < need)
    c = need;
  if (c > max)
    c = max < need ? need : max;
  if (c > SIZE_MAX / size)
    return NULL;
  void *p = realloc (buf, c * size);
  if (p)
    *cap = c;
  return p;
}

static inline void
push_char (struct output_window *w, uint32_t c)
{
  if (w->total_chars < w->limit)
    w->chars[w->total_chars] = c;
  else if (w->tail)
    {
      w->chars[w->head + w->ring_next] = c;
      if (++w->ring_next == w->tail)
        w->ring_next = 0;
    }
  w->total_chars++;
}

int
output_window_feed (struct output_window *w, const void *buf, size_t n)
{
  if (w->finished)
    return -EINVAL;
  if (n == 0)
    return 0;

  /* Every code point consumes at least one byte, so this chunk cannot
   * take the count beyond total_bytes + n. */
  if (!w->nomem && w->chars_cap < w->limit)
    {
      size_t need = w->total_bytes + n;
      if (need < w->total_bytes || need > w->limit)
        need = w->limit;
      uint32_t *chars = grow (w->chars, &w->chars_cap, need, w->limit,
                              sizeof *w->chars);
      if (chars)
        w->chars = chars;
      else
        w->nomem = true;
    }

  const unsigned char *p = buf;
  if (w->nomem)
    {
      /* Keep counting; only the rendered text is lost. */
      uint32_t cps[2];
      for (size_t i = 0; i < n; i++)
        w->total_chars += utf8_step (&w->dec, p[i], cps);
    }
  else
    for (size_t i = 0; i < n; i++)
      {
        unsigned char b = p[i];
        if (b - 1u < 0x7fu && !w->dec.need)
          push_char (w, b);     /* plain ASCII, the common case */
        else
          {
            uint32_t cps[2];
            unsigned k = utf8_step (&w->dec, b, cps);
            for (unsigned j = 0; j < k; j++)
              push_char (w, cps[j]);
          }
      }
  w->total_bytes += n;
  return w->nomem ? -ENOMEM : 0;
}

/* Format v with a comma every three digits; buf holds at least 27 bytes. */
static void
format_grouped (char *buf, size_t v)
{
  char rev[32];
  size_t n = 0;
  unsigned digits = 0;
  do
    {
      if (digits && digits % 3 == 0)
        rev[n++] = ',';
      rev[n++] = (char) ('0' + v % 10);
      v /= 10;
      digits++;
    }
  while (v);
  for (size_t i = 0; i < n; i++)
    buf[i] = rev[n - 1 - i];
  buf[n] = '\0';
}

static void
finish (struct output_window *w)
{
  w->finished = true;
  if (utf8_finish (&w->dec))
    {
      if (w->nomem)
        w->total_chars++;
      else
        push_char (w, REPLACEMENT);
    }
}

char *
output_window_render (struct output_window *w, bool *truncated,
                      size_t *total_chars)
{
  if (!w->finished)
    finish (w);
  if (truncated)
    *truncated = w->total_chars > w->limit;
  if (total_chars)
    *total_chars = w->total_chars;
  if (w->nomem)
    return NULL;

  bool cut = w->total_chars > w->limit;
  size_t head = cut ? w->head : w->total_chars;
  size_t tail = cut ? w->tail : 0;
  char marker[160] = "";
  if (cut)
    {
      char omitted[32], total[32];
      format_grouped (omitted, w->total_chars - w->limit);
      format_grouped (total, w->total_chars);
      snprintf (marker, sizeof marker,
                "\n\n... [OUTPUT TRUNCATED - %s chars omitted out of %s "
                "total] ...\n\n", omitted, total);
    }

  /* Exact size first: at most 4 * limit bytes, usually far less. */
  size_t len = strlen (marker);
  for (size_t i = 0; i < head + tail; i++)
    len += utf8_len (w->chars[i]);
  char *out = malloc (len + 1);
  if (!out)
    return NULL;

  char *p = out;
  for (size_t i = 0; i < head; i++)
    p = utf8_put (p, w->chars[i]);
  if (cut)
    {
      size_t ml = strlen (marker);
      memcpy (p, marker, ml);
      p += ml;
      /* Oldest tail code point first: the one the ring overwrites next. */
      for (size_t i = w->ring_next; i < tail; i++)
        p = utf8_put (p, w->chars[w->head + i]);
      for (size_t i = 0; i < w->ring_next; i++)
        p = utf8_put (p, w->chars[w->head + i]);
    }
  *p = '\0';
  return out;
}

size_t
output_window_total_bytes (const struct output_window *w)
{
  return w->total_bytes;
}

size_t
output_window_memory (const struct output_window *w)
{
  return sizeof *w + w->chars_cap * sizeof *w->chars;
}

void
output_window_free (struct output_window *w)
{
  if (!w)
    return;
  free (w->chars);
  free (w);
}

size_t
output_window_complete_utf8 (const unsigned char *buf, size_t n)
{
  for (size_t back = 1; back <= 3 && back <= n; back++)
    {
      unsigned char c = buf[n - back];
      if ((c & 0xc0) == 0x80)
        continue; /* a continuation byte: look further back */
      size_t need = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 1;
      return need > back ? n - back : n;
    }
  return n;
}
