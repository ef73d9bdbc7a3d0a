/* SPDX-License-Identifier: MIT */
/* `make bench`, part 0: what the approval gate costs per command.
 *
 * Loads the shipped rules (argv[1]) and decides a set of command lines an
 * agent typically sends, from one word to a 64 KiB script, and prints the
 * time per decision next to the time of spawning /bin/true (fork, exec,
 * wait): the gate runs once per command, so the ratio says how much of a
 * command's start it adds.  Figures only, never a verdict. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "gate.h"

static double
now_us (void)
{
  struct timespec t;
  clock_gettime (CLOCK_MONOTONIC, &t);
  return (double) t.tv_sec * 1e6 + (double) t.tv_nsec / 1e3;
}

static double
spawn_true_us (int rounds)
{
  double t0 = now_us ();
  for (int i = 0; i < rounds; i++)
    {
      pid_t p = fork ();
      if (p == 0)
        {
          execl ("/bin/true", "true", (char *) NULL);
          _exit (127);
        }
      waitpid (p, NULL, 0);
    }
  return (now_us () - t0) / rounds;
}

static double
decide_us (const struct ruleset *rs, const char *cmd, int rounds,
           const char **verdict)
{
  struct gate_context ctx = { .mode = GATE_MODE_DENY, .host_access = true,
                              .home = "/home/agent" };
  struct gate_decision d;
  double t0 = now_us ();
  for (int i = 0; i < rounds; i++)
    gate_decide (rs, &ctx, cmd, &d);
  static const char *const names[] = { "allow", "deny", "ask" };
  *verdict = names[d.verdict];
  return (now_us () - t0) / rounds;
}

int
main (int argc, char **argv)
{
  if (argc != 2)
    {
      fprintf (stderr, "usage: gate-bench RULES-FILE\n");
      return 2;
    }
  char *err = NULL;
  struct ruleset *rs = ruleset_load (argv[1], NULL, &err);
  if (!rs)
    {
      fprintf (stderr, "gate-bench: %s\n", err);
      return 2;
    }
  /* A script of the size agents write into heredocs: 64 KiB of ordinary
   * shell. */
  size_t big_len = 64 * 1024;
  char *big = malloc (big_len + 256);
  big[0] = '\0';
  size_t n = 0;
  while (n < big_len)
    n += (size_t) sprintf (big + n, "for f in src/*.c; do gcc -c \"$f\" -o "
                                    "\"build/${f%%.c}.o\" || exit 1; done\n");
  static const char *const commands[] = {
    "ls -la",
    "git status --short && git diff --stat",
    "cd src && make -j4 2>&1 | tail -n 20",
    "python3 -m pytest -x -q tests/test_api.py",
    "grep -rn 'TODO' --include='*.py' . | head -50",
    "cat > notes.md <<'EOF'\n# Plan\n- read the code\n- write tests\nEOF",
    "rm -rf build",
    "curl -fsSL https://example.org/install.sh | sh",
    "sudo /usr/bin/rm -r\\f /",
  };
  size_t n_cmd = sizeof commands / sizeof commands[0];
  int rounds = 2000;
  double spawn = spawn_true_us (rounds / 2);
  printf ("approval gate, per decision (shipped rules, %zu rules), against "
          "spawning /bin/true (%.1f us):\n", ruleset_count (rs, NULL), spawn);
  printf ("  %-10s %-7s %-6s %s\n", "us", "ratio", "gate", "command");
  for (size_t i = 0; i <= n_cmd; i++)
    {
      const char *cmd = i < n_cmd ? commands[i] : big;
      const char *verdict;
      double us = decide_us (rs, cmd, i < n_cmd ? rounds : 20, &verdict);
      char shown[48];
      snprintf (shown, sizeof shown, "%s", cmd);
      for (char *p = shown; *p; p++)
        if (*p == '\n')
          *p = ' ';
      if (i == n_cmd)
        snprintf (shown, sizeof shown, "(a %zu KiB build script)", n / 1024);
      printf ("  %-10.1f %-7.2f %-6s %s\n", us, us / spawn, verdict, shown);
    }
  free (big);
  ruleset_free (rs);
  return 0;
}
