/* SPDX-License-Identifier: MIT */
/* Bounded capture of a command's output, for the session layer.
 *
 * An agent's command may print gigabytes; the model must only ever see a
 * bounded, valid UTF-8 text.  An output_window keeps the first 40 % and the
 * last 60 % of a character budget and counts what falls in between.  It
 * does not keep the full output: the session layer spools every byte to
 * disk itself (spool.c) and hands that spool back for a truncated result.
 *
 * Text rules (the same for render() and output_window_sanitize_utf8()):
 *   - input is decoded as UTF-8; every maximal invalid subpart (overlong
 *     forms, surrogates, code points above U+10FFFF, stray continuation
 *     bytes, a sequence cut short) becomes one U+FFFD, exactly as Python's
 *     bytes.decode ("utf-8", errors="replace") does;
 *   - NUL bytes also become U+FFFD, because the result is a C string;
 *   - a "character" is a Unicode code point of that decoded text.
 * Invalid input is never an error.
 *
 * Memory is O(limit_chars) whatever the stream's size: at most about
 * 4 * limit_chars bytes (the window's code points; the raw bytes are not
 * kept).
 *
 * A window is not thread-safe; feed it from one thread. */
#ifndef AIRLOCK_BROKER_OUTPUT_WINDOW_H
#define AIRLOCK_BROKER_OUTPUT_WINDOW_H

#include <stdbool.h>
#include <stddef.h>

/* The foreground command default: 50,000 characters. */
#define OUTPUT_WINDOW_DEFAULT_LIMIT 50000

struct output_window;

/* limit_chars: the most characters (Unicode code points) render() returns
   besides the marker.  NULL on allocation failure.
   The head gets floor (limit_chars * 40 / 100) characters, the tail the
   rest.  limit_chars may be SIZE_MAX for "keep everything" (memory then
   grows with the output).  Nothing is allocated for the window itself
   until output arrives, and it grows only as far as needed. */
struct output_window *output_window_new (size_t limit_chars);

/* Feed raw bytes as they arrive, in any chunking (a UTF-8 sequence may be
   split across calls).  Returns 0, -ENOMEM when the window could not grow
   (counting goes on, but render() will then return NULL), or -EINVAL after
   render(). */
int output_window_feed (struct output_window *w, const void *buf, size_t n);

/* Finish (flush a trailing partial sequence as U+FFFD) and return a
   malloc'd NUL-terminated UTF-8 string: the whole output if it fits, else
   the first 40% and the last 60% of limit_chars around the marker
   "\n\n... [OUTPUT TRUNCATED - {omitted} chars omitted out of {total} total] ...\n\n"
   (numbers with thousands separators like 1,234,567).  Sets *truncated and
   *total_chars (either pointer may be NULL).  Never fails except for
   allocation (NULL).  Calling it again returns a new copy of the same
   text. */
char *output_window_render (struct output_window *w, bool *truncated,
                            size_t *total_chars);

/* Raw bytes fed so far. */
size_t output_window_total_bytes (const struct output_window *w);

/* Bytes of heap the window holds now (its buffers and strings), for tests
   and diagnostics: proves the O(limit_chars) bound. */
size_t output_window_memory (const struct output_window *w);

/* NULL is allowed. */
void output_window_free (struct output_window *w);

/* Decode n bytes by the text rules above into a malloc'd NUL-terminated
   UTF-8 string stored in *out; returns its length in bytes (without the
   NUL).  A sequence cut short at the end is replaced too.  On allocation
   failure *out is NULL and 0 is returned. */
size_t output_window_sanitize_utf8 (const void *in, size_t n, char **out);

/* The length of buf's longest prefix that does not end inside a UTF-8
   sequence: what is cut off waits for the bytes that complete it. */
size_t output_window_complete_utf8 (const unsigned char *buf, size_t n);

#endif
