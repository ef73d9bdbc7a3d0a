/* SPDX-License-Identifier: MIT */
/* Write a seed corpus for fuzz_protocol into the directory argv[1]: valid
 * run requests of several shapes, one report per event, and near-valid
 * messages that fail one specific check late, so the fuzzer starts deep
 * inside the decoder rather than at the magic number.
 *
 * Build: cc -std=gnu11 -Ihelper fuzz/make_seeds.c helper/protocol.c -o make_seeds
 * Usage: make_seeds DIR */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "protocol.h"
#include "supervisor_protocol.h"

static struct al_writer w; /* 256 KiB: not on the stack */
static const char *dir;
static int failures;

static void
write_seed (const char *name)
{
  size_t n = al_finish (&w);
  if (n == 0)
    {
      fprintf (stderr, "make_seeds: %s: message does not fit\n", name);
      failures++;
      return;
    }
  char path[4096];
  snprintf (path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen (path, "wb");
  if (!f || fwrite (w.buf, 1, n, f) != n || fclose (f) != 0)
    {
      fprintf (stderr, "make_seeds: %s: %s\n", path, strerror (errno));
      failures++;
    }
}

/* Cut the message being built to `cut` bytes; al_finish() then writes a
 * header length that agrees, so the decoder reaches the cut field. */
static void
write_truncated (const char *name, size_t cut)
{
  if (w.len > cut)
    w.len = cut;
  write_seed (name);
}

static void
run_base (void)
{
  al_begin (&w, AL_MSG_RUN);
  al_put_str (&w, AL_F_ARGV, "/bin/sh");
  al_put_str (&w, AL_F_ARGV, "-c");
  al_put_str (&w, AL_F_ARGV, "echo hello");
  al_put_str (&w, AL_F_WORKDIR, "/home/user/project");
}

static void
report (uint32_t event)
{
  al_begin (&w, AL_MSG_REPORT);
  al_put_u32 (&w, AL_F_EVENT, event);
}

static void
valid_seeds (void)
{
  al_begin (&w, AL_MSG_RUN);
  al_put_str (&w, AL_F_ARGV, "true");
  al_put_str (&w, AL_F_WORKDIR, "/");
  write_seed ("run-minimal");

  run_base ();
  al_put_str (&w, AL_F_ENV, "PATH=/usr/bin:/bin");
  al_put_str (&w, AL_F_ENV, "HOME=/home/user");
  al_put_str (&w, AL_F_ENV, "EMPTY=");
  al_put_str (&w, AL_F_ROOTFS, "/var/lib/airlock/images/debian");
  al_put_pair (&w, AL_F_BIND_RO, "/opt/tools", "/tools");
  al_put_pair (&w, AL_F_BIND_RW, "/home/user/.cache", "/cache");
  al_put_u32 (&w, AL_F_NETWORK, AL_NET_HOST);
  al_put_u32 (&w, AL_F_TIMEOUT_SEC, 600);
  al_put_u64 (&w, AL_F_MEMORY_MAX, UINT64_C (2) << 30);
  al_put_u32 (&w, AL_F_PIDS_MAX, 512);
  al_put_str (&w, AL_F_MASK, "/home/user/.config/airlock");
  write_seed ("run-full");

  /* A workdir that is the home: airlock's directories masked in it. */
  run_base ();
  al_put_str (&w, AL_F_MASK, "/w/.config/airlock");
  al_put_str (&w, AL_F_MASK, "/w/.local/state/airlock");
  write_seed ("run-masks");

  run_base ();
  for (int i = 0; i < 8; i++)
    {
      al_put_pair (&w, AL_F_BIND_RO, "/usr/share/doc", "/doc");
      al_put_pair (&w, AL_F_BIND_RW, "/srv/data", "/data");
    }
  al_put_u32 (&w, AL_F_NETWORK, AL_NET_NONE);
  write_seed ("run-binds");

  /* At the argv limit: a large seed, so libFuzzer's default -max_len is
   * big enough to go past the count limits. */
  al_begin (&w, AL_MSG_RUN);
  for (int i = 0; i < AL_MAX_ARGV; i++)
    al_put_str (&w, AL_F_ARGV, i % 2 ? "" : "x");
  al_put_str (&w, AL_F_WORKDIR, "/w");
  write_seed ("run-argv-limit");

  /* The longest workdir accepted. */
  static char longp[AL_MAX_PATH + 1];
  memset (longp, 'a', AL_MAX_PATH);
  for (int i = 0; i < AL_MAX_PATH; i += 64)
    longp[i] = '/';
  al_begin (&w, AL_MSG_RUN);
  al_put_str (&w, AL_F_ARGV, "ls");
  al_put_str (&w, AL_F_WORKDIR, longp);
  write_seed ("run-long-path");

  report (AL_EV_STARTED);
  al_put_u32 (&w, AL_F_PID, 31337);
  al_put_u32 (&w, AL_F_LIMITS, AL_LIMITS_CGROUP_V2);
  al_put_u32 (&w, AL_F_PRIVILEGE, AL_PRIV_SETUID);
  write_seed ("report-started");

  report (AL_EV_SETUP_FAILED);
  al_put_u32 (&w, AL_F_STEP, AL_STEP_PIVOT);
  al_put_u32 (&w, AL_F_ERRNO, 1);
  al_put_str (&w, AL_F_MESSAGE, "pivot_root: Operation not permitted");
  write_seed ("report-setup-failed");

  report (AL_EV_EXITED);
  al_put_u32 (&w, AL_F_EXIT_CODE, 3);
  al_put_u32 (&w, AL_F_TIMED_OUT, 0);
  write_seed ("report-exited-code");

  report (AL_EV_EXITED);
  al_put_u32 (&w, AL_F_SIGNAL, 9);
  al_put_u32 (&w, AL_F_TIMED_OUT, 1);
  write_seed ("report-exited-signal");
}

static void
near_valid_seeds (void)
{
  al_begin (&w, AL_MSG_RUN);
  al_put_str (&w, AL_F_ARGV, "true");
  al_put_str (&w, AL_F_ENV, "A=b");
  write_seed ("bad-run-no-workdir");

  run_base ();
  al_put_pair (&w, AL_F_BIND_RO, "/a/../etc", "/etc");
  write_seed ("bad-run-dotdot-bind");

  run_base ();
  al_put_str (&w, AL_F_WORKDIR, "/tmp");
  write_seed ("bad-run-duplicate-workdir");

  run_base ();
  al_put_u32 (&w, AL_F_EVENT, AL_EV_EXITED); /* a report field */
  write_seed ("bad-run-foreign-field");

  run_base ();
  al_put_u32 (&w, (enum al_field_type) 13, 0); /* unassigned type */
  write_seed ("bad-run-unknown-field");

  run_base ();
  al_put_str (&w, AL_F_ENV, "NOEQUALS");
  write_truncated ("bad-run-truncated", 50);

  report (AL_EV_EXITED);
  al_put_u32 (&w, AL_F_EXIT_CODE, 0);
  al_put_u32 (&w, AL_F_SIGNAL, 15);
  write_seed ("bad-report-exited-both");

  report (AL_EV_SETUP_FAILED);
  al_put_u32 (&w, AL_F_STEP, AL_STEP_MAX_ + 1);
  write_seed ("bad-report-step");

  report (AL_EV_STARTED);
  al_put_u32 (&w, AL_F_PID, 0);
  al_put_u32 (&w, AL_F_LIMITS, 4);
  al_put_u32 (&w, AL_F_PRIVILEGE, 5);
  write_seed ("bad-report-started");

  run_base ();
  al_put_str (&w, AL_F_MASK, "w/.config/airlock");
  write_seed ("bad-run-relative-mask");
}

/* For fuzz_supervisor_protocol (fuzz_protocol rejects them at once, as
 * the other harness does the helper's). */
static void
supervisor_seeds (void)
{
  sup_begin (&w, SUP_SPAWN);
  sup_put_u32 (&w, SUP_F_JOB, 2);
  sup_put_str (&w, SUP_F_ARGV, "bash");
  sup_put_str (&w, SUP_F_ARGV, "-c");
  sup_put_str (&w, SUP_F_ENV, "PATH=/usr/bin:/bin");
  sup_put_str (&w, SUP_F_CWD, "/");
  sup_put_u32 (&w, SUP_F_STDIN, 1);
  sup_put_u32 (&w, SUP_F_SCRIPT, 1);
  write_seed ("sup-spawn");

  sup_begin (&w, SUP_SPAWN);
  sup_put_u32 (&w, SUP_F_JOB, 3);
  sup_put_str (&w, SUP_F_ARGV, "bash");
  sup_put_str (&w, SUP_F_CWD, "/w");
  sup_put_u32 (&w, SUP_F_ROWS, 24);
  sup_put_u32 (&w, SUP_F_COLS, 80);
  sup_put_str (&w, SUP_F_TERM, "xterm-256color");
  write_seed ("sup-spawn-pty");

  sup_begin (&w, SUP_RESIZE);
  sup_put_u32 (&w, SUP_F_JOB, 3);
  sup_put_u32 (&w, SUP_F_ROWS, 50);
  sup_put_u32 (&w, SUP_F_COLS, 1000);
  write_seed ("sup-resize");

  sup_begin (&w, SUP_OUTPUT);
  sup_put_u32 (&w, SUP_F_JOB, 3);
  sup_put_u32 (&w, SUP_F_STREAM, 1);
  sup_put_bytes (&w, SUP_F_DATA, "\r\n\0\377", 4);
  write_seed ("sup-output");

  sup_begin (&w, SUP_EXITED);
  sup_put_u32 (&w, SUP_F_JOB, 3);
  sup_put_u32 (&w, SUP_F_SIGNAL, 9);
  write_seed ("sup-exited");

  sup_begin (&w, SUP_ERROR);
  sup_put_str (&w, SUP_F_MESSAGE, "no such job");
  write_seed ("sup-error");

  sup_begin (&w, SUP_SPAWN); /* a terminal without its type */
  sup_put_u32 (&w, SUP_F_JOB, 3);
  sup_put_str (&w, SUP_F_ARGV, "bash");
  sup_put_str (&w, SUP_F_CWD, "/");
  sup_put_u32 (&w, SUP_F_ROWS, 24);
  sup_put_u32 (&w, SUP_F_COLS, 80);
  write_seed ("bad-sup-spawn-pty-half");
}

int
main (int argc, char **argv)
{
  if (argc != 2)
    {
      fprintf (stderr, "usage: make_seeds DIR\n");
      return 2;
    }
  dir = argv[1];
  if (mkdir (dir, 0755) < 0 && errno != EEXIST)
    {
      fprintf (stderr, "make_seeds: %s: %s\n", dir, strerror (errno));
      return 1;
    }
  valid_seeds ();
  near_valid_seeds ();
  supervisor_seeds ();
  return failures ? 1 : 0;
}
