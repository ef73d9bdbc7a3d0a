/* SPDX-License-Identifier: MIT */
/* Asking the person at the terminal whether a dangerous command may run.
 * The question goes to /dev/tty, not stdout/stderr: those may be a pipe
 * to an agent, which must not be the one answering. */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "approval_prompt.h"
#include "monotonic_ms.h"

bool
approval_tty_available (void)
{
  int fd = open ("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (fd < 0)
    return false;
  close (fd);
  return true;
}

/* Printable text only: a command may carry escape sequences meant to
 * redraw the terminal and hide what it really is. */
static void
put_visible (FILE *f, const char *s)
{
  for (const unsigned char *p = (const unsigned char *) s; *p; p++)
    if (*p == '\n')
      fputs ("\n    ", f);
    else if (*p < 0x20 || *p == 0x7f)
      fprintf (f, "\\x%02x", *p);
    else
      fputc (*p, f);
}

const char *
approval_prompt (const char *command, const char *const *rules, size_t n_rules,
                 long long timeout_ms)
{
  int fd = open ("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (fd < 0)
    return "deny";
  FILE *f = fdopen (dup (fd), "w");
  if (!f)
    {
      close (fd);
      return "deny";
    }
  fputs ("\nairlock: this command needs your approval:\n    ", f);
  put_visible (f, command);
  fputs ("\n", f);
  for (size_t i = 0; i < n_rules; i++)
    {
      fputs ("  - ", f);
      put_visible (f, rules[i]);
      fputs ("\n", f);
    }
  long long deadline = monotonic_ms () + timeout_ms;
  const char *answer = NULL;
  while (!answer)
    {
      long long left = deadline - monotonic_ms ();
      if (left <= 0)
        {
          fputs ("\nairlock: no answer in time: denied.\n", f);
          answer = "timeout";
          break;
        }
      fprintf (f, "Run it? [o]nce, for this [s]ession, [a]lways, [d]eny "
               "(%llds): ", (left + 999) / 1000);
      fflush (f);
      struct pollfd p = { .fd = fd, .events = POLLIN };
      int r = poll (&p, 1, (int) (left > 1000 ? 1000 : left));
      if (r < 0 && errno != EINTR)
        answer = "deny";
      if (r <= 0)
        {
          fputs ("\r", f);
          continue;
        }
      char line[64];
      ssize_t n = read (fd, line, sizeof line - 1);
      if (n <= 0)
        {
          answer = "deny"; /* end of input is not consent */
          break;
        }
      line[n] = '\0';
      char *w = line + strspn (line, " \t");
      switch (tolower ((unsigned char) *w))
        {
        case 'o': answer = "once"; break;
        case 's': answer = "session"; break;
        case 'a': answer = "always"; break;
        case 'd': case 'n': answer = "deny"; break;
        default: fputs ("  please answer o, s, a or d\n", f);
        }
    }
  fclose (f);
  close (fd);
  return answer;
}
