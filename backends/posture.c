/* SPDX-License-Identifier: MIT */
/* See posture.h.  /proc/PID/status and uid_map stay readable by the
 * sandbox's owner even when its processes are non-dumpable, unlike
 * /proc/PID/ns. */
#define _GNU_SOURCE
#include "posture.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xprintf.h"

static bool
claims (const struct backend_posture *p, const char *ns)
{
  for (size_t i = 0; i < 8 && p->namespaces[i]; i++)
    if (!strcmp (p->namespaces[i], ns))
      return true;
  return false;
}

/* The identity map of the initial user namespace: "0 0 4294967295". */
static int
in_initial_userns (pid_t pid)
{
  char path[64];
  snprintf (path, sizeof path, "/proc/%d/uid_map", (int) pid);
  FILE *f = fopen (path, "re");
  if (!f)
    return -1;
  unsigned long a, b, n;
  int got = fscanf (f, "%lu %lu %lu", &a, &b, &n);
  fclose (f);
  if (got != 3)
    return -1;
  return a == 0 && b == 0 && n == 4294967295UL;
}

struct status {
  int seccomp, nnp, nspids;
  unsigned long long capeff;
};

/* /proc/PID/status; false when it cannot be read (gone, not ours). */
static bool
read_status (pid_t pid, struct status *st)
{
  char path[64], line[512];
  snprintf (path, sizeof path, "/proc/%d/status", (int) pid);
  FILE *f = fopen (path, "re");
  if (!f)
    return false;
  *st = (struct status){ .seccomp = -1, .nnp = -1 };
  bool have_caps = false;
  while (fgets (line, sizeof line, f))
    if (!strncmp (line, "Seccomp:", 8))
      st->seccomp = atoi (line + 8);
    else if (!strncmp (line, "NoNewPrivs:", 11))
      st->nnp = atoi (line + 11);
    else if (!strncmp (line, "CapEff:", 7))
      have_caps = sscanf (line + 7, "%llx", &st->capeff) == 1;
    else if (!strncmp (line, "NSpid:", 6))
      for (char *tok = strtok (line + 6, " \t\n"); tok; tok = strtok (NULL, " \t\n"))
        st->nspids++;
  fclose (f);
  return st->seccomp >= 0 && st->nnp >= 0 && have_caps && st->nspids;
}

void
posture_observe (pid_t pid, struct backend_posture *p)
{
  struct status st;
  if (!read_status (pid, &st))
    return;
  p->seccomp = st.seccomp == 2;
  p->no_new_privs = st.nnp == 1;
  p->capabilities = __builtin_popcountll (st.capeff);
  /* Verified only when the pid namespace claimed is there too. */
  p->verified = !claims (p, "pid") || st.nspids >= 2;
}

int
posture_verify (pid_t pid, struct backend_posture *p, char **err)
{
  struct status st;
  if (!read_status (pid, &st))
    return 0; /* gone, or not ours to read */
  int seccomp = st.seccomp, nnp = st.nnp, nspids = st.nspids;
  unsigned long long capeff = st.capeff;
  int initial_userns = in_initial_userns (pid);
  if (initial_userns < 0)
    return 0;
  const char *wrong = NULL;
  if (p->seccomp && seccomp != 2)
    wrong = "has no seccomp filter";
  else if (p->no_new_privs && nnp != 1)
    wrong = "does not have no_new_privs";
  else if (p->capabilities == 0 && capeff != 0)
    wrong = "has capabilities";
  else if (claims (p, "pid") && nspids < 2)
    wrong = "is not in a pid namespace of its own";
  else if (claims (p, "user") && initial_userns)
    wrong = "is not in a user namespace of its own";
  if (wrong)
    {
      *err = xprintf ("the sandbox's first process (pid %d) %s: it is not "
                      "what was set up, so it is not used", (int) pid, wrong);
      return -1;
    }
  p->capabilities = __builtin_popcountll (capeff);
  p->verified = true;
  return 0;
}
