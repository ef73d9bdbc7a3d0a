/* SPDX-License-Identifier: MIT */
/* The end of a terminal job's input as a person types it: the terminal's
 * EOF character, twice when a line is begun (the first only ends the
 * line).  Shared by the supervisor and the ssh backend. */
#ifndef AIRLOCK_BACKENDS_TERMINAL_EOF_H
#define AIRLOCK_BACKENDS_TERMINAL_EOF_H

#include <stdbool.h>
#include <stddef.h>

/* Whether input ending with data (n > 0) leaves a line begun; n == 0:
 * as before. */
bool terminal_mid_line (bool before, const void *data, size_t n);

/* The bytes for the end of input on the terminal fd (either side) into
 * out: their number, 0 when the terminal has no EOF character. */
size_t terminal_eof (int fd, bool mid_line, char out[2]);

#endif
