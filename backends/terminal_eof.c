/* SPDX-License-Identifier: MIT */
/* A terminal's end of input (see terminal_eof.h). */
#include "terminal_eof.h"

#include <termios.h>
#include <unistd.h>

bool
terminal_mid_line (bool before, const void *data, size_t n)
{
  if (!n)
    return before;
  char last = ((const char *) data)[n - 1];
  return last != '\n' && last != '\r';
}

size_t
terminal_eof (int fd, bool mid_line, char out[2])
{
  struct termios t;
  if (tcgetattr (fd, &t) < 0 || t.c_cc[VEOF] == _POSIX_VDISABLE)
    return 0;
  out[0] = out[1] = (char) t.c_cc[VEOF];
  return mid_line ? 2 : 1;
}
