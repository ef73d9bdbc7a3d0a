/* SPDX-License-Identifier: MIT */
/* The baseline seccomp filter.
 *
 * Policy: allow by default, deny a list.  The list is at least Docker's
 * default profile with no capabilities granted (the floor set by
 * ARCHITECTURE.md), plus the bypasses other sandboxes met: nested
 * namespaces through clone/clone3, the new mount API, io_uring, terminal
 * injection with TIOCSTI/TIOCLINUX, foreign syscall ABIs, and syscalls
 * newer than this filter.
 *
 * Denied calls fail with EPERM, as if a capability were missing, except
 * clone3 and syscalls newer than this libseccomp, which fail with ENOSYS so
 * that libc and programs fall back to something we can inspect.
 *
 * ptrace stays allowed: the pid namespace hides every outside process, and
 * the sandbox's pid 1 and any airlock process inside are non-dumpable.
 *
 * The rules are compiled once, at build time: this file built with
 * SECCOMP_EXPORT is a program that compiles them with libseccomp and prints
 * the BPF program as a C array (the build's seccomp_bpf.h), which the
 * helper loads as is.  Compiling them in every sandbox cost ~3 ms a start;
 * the rules and this code stay the one source of the filter. */
#define _GNU_SOURCE
#include "seccomp_baseline.h"

#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define N_ELEMENTS(a) (sizeof (a) / sizeof (a)[0])

#ifndef SECCOMP_EXPORT
#include "seccomp_bpf.h"

int
seccomp_apply_baseline (const char **what)
{
  /* What seccomp_load() did: NO_NEW_PRIVS is already set, no flags. */
  struct sock_fprog prog = { .len = N_ELEMENTS (seccomp_baseline_bpf),
                             .filter = (struct sock_filter *) seccomp_baseline_bpf };
  if (syscall (SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) < 0)
    {
      *what = "seccomp(SECCOMP_SET_MODE_FILTER)";
      return -errno;
    }
  return 0;
}
#else
#include <seccomp.h>

#include "seccomp_table.h"

/* How many syscall numbers from pidfd_send_signal upwards are either known
 * to libseccomp or denied as too new (see deny_future_syscalls()): room for
 * the kernel to grow by some 200 syscalls. */
#define FUTURE_SYSCALL_SPAN 256

/* Add one rule with zero or one argument comparison.  A name this
 * architecture does not have is skipped: nothing can call it here, and
 * anything newer than this libseccomp falls under deny_future_syscalls(). */
static int
add_rule (scmp_filter_ctx ctx, uint32_t action, const char *name,
          const struct scmp_arg_cmp *cmp, const char **what)
{
  int nr = seccomp_syscall_resolve_name (name);
  if (nr == __NR_SCMP_ERROR)
    return 0;
  int r = seccomp_rule_add_array (ctx, action, nr, cmp ? 1 : 0, cmp);
  if (r < 0)
    *what = name;
  return r;
}

/* One rule of seccomp_table.h. */
static int
add_arg_rule (scmp_filter_ctx ctx, const struct seccomp_arg_rule *t,
              const char **what)
{
  static const enum scmp_compare ops[] = {
    [SECCOMP_EQ] = SCMP_CMP_EQ, [SECCOMP_GE] = SCMP_CMP_GE,
    [SECCOMP_GT] = SCMP_CMP_GT, [SECCOMP_MASKED_EQ] = SCMP_CMP_MASKED_EQ,
  };
  struct scmp_arg_cmp cmp = { t->arg, ops[t->op], t->a, t->b };
  return add_rule (ctx, SCMP_ACT_ERRNO ((uint32_t) t->err), t->name,
                   t->op == SECCOMP_ALWAYS ? NULL : &cmp, what);
}

/* Numbers above the newest syscall this libseccomp knows answer ENOSYS: a
 * kernel newer than the filter must not expose calls nobody reviewed.
 * Programs cope, since ENOSYS is what an older kernel says.  Since Linux
 * 5.1 all architectures number new syscalls in step, upwards from
 * pidfd_send_signal (424, plus a fixed offset on mips and alpha), so that is
 * where the scanned and denied window starts.  (Unused numbers below the
 * newest known one are left alone: the kernel says ENOSYS there itself.) */
static int
deny_future_syscalls (scmp_filter_ctx ctx, const char **what)
{
  int base = seccomp_syscall_resolve_name ("pidfd_send_signal");
  if (base < 0)
    {
      *what = "pidfd_send_signal unknown to libseccomp";
      return -ENOSYS;
    }
  int newest = base;
  for (int nr = base; nr < base + FUTURE_SYSCALL_SPAN; nr++)
    {
      char *name = seccomp_syscall_resolve_num_arch (SCMP_ARCH_NATIVE, nr);
      if (name != NULL)
        newest = nr;
      free (name);
    }
  for (int nr = newest + 1; nr < base + FUTURE_SYSCALL_SPAN; nr++)
    {
      int r = seccomp_rule_add (ctx, SCMP_ACT_ERRNO (ENOSYS), nr, 0);
      if (r < 0)
        {
          *what = "rule for a future syscall number";
          return r;
        }
    }
  return 0;
}

static int
add_all_rules (scmp_filter_ctx ctx, const char **what)
{
  int r = 0;
  size_t i;

  for (i = 0; r == 0 && i < N_ELEMENTS (seccomp_denied_syscalls); i++)
    r = add_rule (ctx, SCMP_ACT_ERRNO (EPERM), seccomp_denied_syscalls[i], NULL, what);
  for (i = 0; r == 0 && i < N_ELEMENTS (seccomp_arg_rules); i++)
    r = add_arg_rule (ctx, &seccomp_arg_rules[i], what);
  struct seccomp_arg_rule pers[SECCOMP_PERSONALITY_RULES];
  size_t n = seccomp_personality_rules (pers);
  for (i = 0; r == 0 && i < n; i++)
    r = add_arg_rule (ctx, &pers[i], what);
  if (r == 0)
    r = deny_future_syscalls (ctx, what);

  /* The verdicts for ioctl, clone and socket depend on arguments, so the
   * kernel cannot cache them: test those numbers first, not after the
   * hundreds above.  (A priority is only a hint; failure is harmless.) */
  static const char *const hot[] = { "ioctl", "clone", "socket" };
  for (i = 0; r == 0 && i < N_ELEMENTS (hot); i++)
    {
      int nr = seccomp_syscall_resolve_name (hot[i]);
      if (nr != __NR_SCMP_ERROR)
        (void) seccomp_syscall_priority (ctx, nr, 255);
    }
  return r;
}

/* Build time: compile the rules with libseccomp; the program goes to
 * stdout as C. */
int
main (void)
{
  const char *what = "seccomp_init";
  /* seccomp_init() adds the native architecture only.  A syscall through
   * any other ABI (i386 int 0x80, x32 numbers with bit 30 set) then kills
   * the process: the kernel decodes those with other numbers and argument
   * layouts, so no rule written here would apply to them. */
  scmp_filter_ctx ctx = seccomp_init (SCMP_ACT_ALLOW);
  int r = ctx ? 0 : -ENOMEM;
  if (r == 0 && (r = seccomp_attr_set (ctx, SCMP_FLTATR_ACT_BADARCH,
                                       SCMP_ACT_KILL_PROCESS)) < 0)
    what = "seccomp_attr_set(ACT_BADARCH)";
  if (r == 0)
    r = add_all_rules (ctx, &what);
  FILE *bpf = tmpfile ();
  if (r == 0 && (!bpf || (r = seccomp_export_bpf (ctx, fileno (bpf))) < 0))
    what = "seccomp_export_bpf";
  if (r < 0)
    {
      fprintf (stderr, "seccomp_baseline: %s: %s\n", what, strerror (-r));
      return 1;
    }
  seccomp_release (ctx);
  rewind (bpf);
  printf ("/* Generated from helper/seccomp_table.h by the build. */\n"
          "static const struct sock_filter seccomp_baseline_bpf[] = {\n");
  for (struct sock_filter f; fread (&f, sizeof f, 1, bpf) == 1;)
    printf ("  { 0x%04x, %u, %u, 0x%08x },\n", f.code, f.jt, f.jf, f.k);
  printf ("};\n");
  return fflush (stdout) == 0 && !ferror (bpf) ? 0 : 1;
}
#endif
