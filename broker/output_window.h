/* SPDX-License-Identifier: MIT */
/* Bounded capture of a command's output, for the session layer.
 *
 * An agent's command may print gigabytes; the model must only ever see a
 * bounded, valid UTF-8 text.  An output_window keeps the first 40 % and the
 * last 60 % of a character budget, counts what falls in between, and, once
 * the output no longer fits, writes the full raw stream to a private spill
 * file whose path can be handed back so nothing is lost.
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
 * 8 * limit_chars bytes (the window's code points, plus the raw bytes kept
 * until the output overflows and they are written to the spill file).
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
   besides the marker; spill_dir: where the full raw stream is written once
   it overflows (NULL: no spill).  NULL on allocation failure.
   The head gets floor (limit_chars * 40 / 100) characters, the tail the
   rest.  limit_chars may be SIZE_MAX for "keep everything" (memory then
   grows with the output).  Nothing is allocated for the window itself
   until output arrives, and it grows only as far as needed. */
struct output_window *output_window_new (size_t limit_chars,
                                         const char *spill_dir);

/* Feed raw bytes as they arrive, in any chunking (a UTF-8 sequence may be
   split across calls).  Returns 0, or -errno when the spill file could not
   be created or written (the window itself keeps working; the error is
   remembered, see output_window_spill_error(), and returned only by the
   call where it happened).  Also -ENOMEM when the window could not grow
   (render() will then return NULL), and -EINVAL after render(). */
int output_window_feed (struct output_window *w, const void *buf, size_t n);

/* Finish (flush a trailing partial sequence as U+FFFD) and return a
   malloc'd NUL-terminated UTF-8 string: the whole output if it fits, else
   the first 40% and the last 60% of limit_chars around the marker
   "\n\n... [OUTPUT TRUNCATED - {omitted} chars omitted out of {total} total] ...\n\n"
   (numbers with thousands separators like 1,234,567).  Sets *truncated and
   *total_chars (either pointer may be NULL).  Never fails except for
   allocation (NULL).  It closes the spill file; calling it again returns
   a new copy of the same text. */
char *output_window_render (struct output_window *w, bool *truncated,
                            size_t *total_chars);

/* Raw bytes fed so far. */
size_t output_window_total_bytes (const struct output_window *w);

/* The spill file (0600, created with mkostemp (O_CLOEXEC) in spill_dir,
   name starting "airlock-out-") holding every raw byte fed, once the output
   overflowed; NULL before that, without spill_dir, or after a spill error
   (an incomplete spill file is removed rather than left looking whole).
   The caller owns the file: output_window_free() does not remove it. */
const char *output_window_spill_path (const struct output_window *w);

/* 0 or the remembered -errno of the first spill failure. */
int output_window_spill_error (const struct output_window *w);

/* Bytes of heap the window holds now (its buffers and strings), for tests
   and diagnostics: proves the O(limit_chars) bound. */
size_t output_window_memory (const struct output_window *w);

/* NULL is allowed.  Closes the spill file if render() did not. */
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
