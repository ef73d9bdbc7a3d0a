/* SPDX-License-Identifier: MIT */
/* airlock-egress: the network of one sandbox with `network: allowlist`.
 *
 *   airlock-egress --session ID --backend NAME
 *   airlock-egress --check
 *
 * --check reads a policy line on fd 0, checks it and the administrator's
 * caps (policy.rules), prints its hash and exits: 0, or 2 with the reason
 * on stderr.  The broker runs it before it starts a sandbox.
 *
 * fd 3: the sandbox's tap device (from the helper, through the broker).
 * fd 0: the policy, one JSON object (policy/egress_policy.h) and a
 *       newline; then kept open: EOF on it means stop.
 * fd 1: "ready <policy hash>\n" once the stack runs, then closed.
 * Exit: 0 after a stop (EOF on fd 0, SIGTERM, SIGINT, SIGHUP, or the tap
 * reporting an error: its device is gone); 2 for a bad
 * policy or bad arguments (a message on stderr, no ready line); 1 when
 * it cannot run (audit log, stack, ...).  It dies with its parent
 * (PR_SET_PDEATHSIG). */
#define _GNU_SOURCE
#include "egress_audit.h"
#include "egress_flow.h"
#include "egress_policy.h"
#include "egress_stack.h"
#include "rules.h"

#include <cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <unistd.h>

#define TAP_FD 3
#define POLICY_MAX (1024 * 1024)

static void __attribute__ ((noreturn, format (printf, 2, 3)))
die (int code, const char *fmt, ...)
{
  va_list ap;
  va_start (ap, fmt);
  fputs ("airlock-egress: ", stderr);
  vfprintf (stderr, fmt, ap);
  fputc ('\n', stderr);
  va_end (ap);
  exit (code);
}

/* The policy line from fd 0, read one byte at a time so that nothing
   after the newline is consumed (fd 0 stays the stop signal). */
static char *
read_policy_line (void)
{
  size_t cap = 4096, len = 0;
  char *buf = malloc (cap);
  if (!buf)
    die (1, "out of memory");
  for (;;)
    {
      char chunk[1];
      ssize_t n = read (0, chunk, 1);
      if (n < 0 && errno == EINTR)
        continue;
      if (n < 0)
        die (2, "cannot read the policy on fd 0: %s", strerror (errno));
      if (n == 0)
        die (2, "the policy on fd 0 ended without a newline");
      if (chunk[0] == '\n')
        break;
      if (len + 2 > cap)
        {
          if (cap >= POLICY_MAX)
            die (2, "the policy is longer than %d bytes", POLICY_MAX);
          cap *= 2;
          char *b = realloc (buf, cap);
          if (!b)
            die (1, "out of memory");
          buf = b;
        }
      buf[len++] = chunk[0];
    }
  buf[len] = '\0';
  return buf;
}

/* The administrator's caps on allowlists (`network-allow`, `network-range`
   in policy.rules): a policy beyond them never runs.  The admin file's
   path is compiled in, so nothing a user sets can hide it. */
static void
check_caps (const struct egress_policy *p)
{
  const char *def = getenv ("AIRLOCK_DEFAULT_RULES");
  char *err = NULL;
  struct ruleset *rs = ruleset_load (def && *def ? def : AIRLOCK_DEFAULT_RULES,
                                     AIRLOCK_ADMIN_RULES, &err);
  if (!rs)
    die (2, "cannot read the rules that cap allowlists: %s", err ? err : "?");
  const struct rules_settings *s = ruleset_settings (rs);
  if (egress_policy_check_caps (p, s->network_allow, s->n_network_allow,
                                s->network_ranges, s->n_network_ranges, &err) < 0)
    die (2, "%s (the administrator's caps: %s)", err ? err : "?", AIRLOCK_ADMIN_RULES);
  ruleset_free (rs);
}

/* The policy on fd 0, parsed and checked against the caps; exits 2 with
   the reason on any problem. */
static void
read_policy (struct egress_policy *policy)
{
  char *text = read_policy_line ();
  cJSON *json = cJSON_Parse (text);
  free (text);
  if (!json || !cJSON_IsObject (json))
    die (2, "the policy on fd 0 is not a JSON object");
  memset (policy, 0, sizeof *policy);
  char *err = NULL;
  if (egress_policy_from_json (json, policy, &err) < 0)
    die (2, "bad policy: %s", err ? err : "?");
  cJSON_Delete (json);
  check_caps (policy);
}

static void
usage (void)
{
  die (2, "usage: airlock-egress --session ID --backend NAME "
       "(tap on fd 3, policy on fd 0), or airlock-egress --check");
}

int
main (int argc, char **argv)
{
  const char *session = NULL, *backend = NULL;
  struct egress_policy policy;
  char hash[17];
  if (argc == 2 && !strcmp (argv[1], "--check"))
    {
      read_policy (&policy);
      egress_policy_hash (&policy, hash);
      printf ("%s\n", hash);
      egress_policy_free (&policy);
      return fflush (stdout) == 0 ? 0 : 1;
    }
  for (int i = 1; i < argc; i++)
    {
      if (i + 1 < argc && !strcmp (argv[i], "--session"))
        session = argv[++i];
      else if (i + 1 < argc && !strcmp (argv[i], "--backend"))
        backend = argv[++i];
      else
        usage ();
    }
  if (!session || !backend)
    usage ();

  /* The broker's child: gone with it (and if it went before the prctl,
     our parent has changed already). */
  pid_t parent = getppid ();
  prctl (PR_SET_PDEATHSIG, SIGKILL);
  if (getppid () != parent)
    die (1, "the broker is already gone");
  /* Nothing of the broker's but fds 0-3. */
  close_range (TAP_FD + 1, ~0U, 0);
  signal (SIGPIPE, SIG_IGN);
  signal (SIGXFSZ, SIG_IGN); /* the audit log's EFBIG instead */

  struct stat st;
  if (fstat (TAP_FD, &st) < 0 || !S_ISCHR (st.st_mode))
    die (2, "fd 3 is not the sandbox's tap device");

  /* Signals through a signalfd, blocked before any thread starts so that
     no flow thread ever takes one. */
  sigset_t sigs;
  sigemptyset (&sigs);
  sigaddset (&sigs, SIGTERM);
  sigaddset (&sigs, SIGINT);
  sigaddset (&sigs, SIGHUP);
  if (pthread_sigmask (SIG_BLOCK, &sigs, NULL) != 0)
    die (1, "cannot block signals");
  int sfd = signalfd (-1, &sigs, SFD_CLOEXEC | SFD_NONBLOCK);
  if (sfd < 0)
    die (1, "signalfd: %s", strerror (errno));

  read_policy (&policy);
  egress_policy_hash (&policy, hash);
  char *err = NULL;

  /* Listeners and flows take fds: as many as the hard limit lets. */
  struct rlimit rl;
  if (getrlimit (RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max)
    {
      rl.rlim_cur = rl.rlim_max;
      setrlimit (RLIMIT_NOFILE, &rl);
    }

  struct egress_audit *audit = egress_audit_open (session, backend, &err);
  if (!audit)
    die (1, "cannot open the audit log: %s", err ? err : "?");
  struct egress_flows *flows = egress_flows_new (&policy, audit, &err);
  if (!flows)
    die (1, "%s", err ? err : "cannot set up the flows");
  struct egress_stack *stack = egress_stack_new (TAP_FD, &policy, audit,
                                                 flows, &err);
  if (!stack)
    {
      egress_flows_stop (flows);
      die (1, "%s", err ? err : "cannot start the stack");
    }

  /* Ready: the broker may let the sandbox's command run now. */
  char line[32];
  int n = snprintf (line, sizeof line, "ready %s\n", hash);
  if (write (1, line, (size_t) n) != n)
    {
      egress_flows_stop (flows);
      die (1, "cannot write the ready line: %s", strerror (errno));
    }
  /* fd 1 stays a valid fd, not a socket a later accept might get. */
  int null = open ("/dev/null", O_WRONLY | O_CLOEXEC);
  if (null >= 0)
    {
      dup2 (null, 1);
      close (null);
    }

  struct egress_pollset ps = { 0 };
  bool stop = false;
  /* Each round sleeps in poll until an fd or a timer of slirp's is due. */
  while (!stop)
    {
      ps.n = 0;
      egress_pollset_add (&ps, 0, POLLIN);
      egress_pollset_add (&ps, sfd, POLLIN);
      size_t first_listener = ps.n;
      for (;;)
        {
          /* Room for every listener, then take them. */
          size_t want = ps.n + EGRESS_MAX_LISTENERS;
          if (ps.cap >= want)
            break;
          struct pollfd *f = realloc (ps.fds, want * sizeof *f);
          if (!f)
            die (1, "out of memory");
          ps.fds = f;
          ps.cap = want;
        }
      ps.n += egress_flows_pollfds (flows, ps.fds + ps.n, ps.cap - ps.n);
      size_t n_listeners = ps.n - first_listener;
      int timeout = 1000;
      egress_stack_prepare (stack, &ps, &timeout);

      int rc = poll (ps.fds, ps.n, timeout);
      if (rc < 0 && errno != EINTR)
        die (1, "poll: %s", strerror (errno));

      egress_stack_dispatch (stack, &ps, rc);
      if (rc > 0)
        egress_flows_accept (flows, ps.fds + first_listener, n_listeners);
      if (rc > 0 && ps.fds[0].revents)
        {
          /* After the policy, fd 0 carries nothing but its end. */
          char junk[512];
          ssize_t r = read (0, junk, sizeof junk);
          if (r == 0 || (r < 0 && errno != EINTR && errno != EAGAIN))
            stop = true;
        }
      if (rc > 0 && ps.fds[1].revents)
        stop = true;
      if (egress_stack_tap_gone (stack))
        {
          fprintf (stderr, "airlock-egress: the sandbox's tap device is "
                   "gone: stopping\n");
          stop = true;
        }
    }

  free (ps.fds);
  if (egress_flows_stop (flows) == 0)
    {
      egress_stack_free (stack);
      egress_audit_close (audit);
      egress_policy_free (&policy);
    }
  /* else a flow thread still runs (stuck in getaddrinfo): exiting ends
     it. */
  close (sfd);
  return 0;
}
