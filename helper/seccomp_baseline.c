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
 * the sandbox's pid 1 and any airlock process inside are non-dumpable. */
#define _GNU_SOURCE
#include "seccomp_baseline.h"

#include <errno.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include <seccomp.h>

#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif

#define N_ELEMENTS(a) (sizeof (a) / sizeof (a)[0])
#define DENY SCMP_ACT_ERRNO (EPERM)

/* How many syscall numbers from pidfd_send_signal upwards are either known
 * to libseccomp or denied as too new (see deny_future_syscalls()): room for
 * the kernel to grow by some 200 syscalls. */
#define FUTURE_SYSCALL_SPAN 256

/* Denied outright.  Names this architecture lacks are skipped. */
static const char *const denied_syscalls[] = {
  /* Kernel code and the machine itself: modules, kexec, reboot, swap,
   * accounting, port I/O, real-mode emulation. */
  "init_module", "finit_module", "delete_module", "create_module",
  "query_module", "get_kernel_syms", "kexec_load", "kexec_file_load",
  "reboot", "swapon", "swapoff", "acct", "ioperm", "iopl", "vm86", "vm86old",
  /* The clock is not namespaced.  (clock_adjtime stays allowed, as in
   * Docker: glibc's adjtimex() reads through it, and changing the clock
   * needs CAP_SYS_TIME, which the sandbox never has.) */
  "settimeofday", "stime", "clock_settime", "clock_settime64",
  /* Kernel keyrings are not namespaced. */
  "add_key", "keyctl", "request_key",
  /* Mounts and namespaces: the helper fixed the sandbox's shape.  The new
   * mount API is listed in full (Flatpak CVE-2021-41133). */
  "mount", "umount", "umount2", "pivot_root", "chroot", "setns", "unshare",
  "fsopen", "fsconfig", "fsmount", "fspick", "move_mount", "open_tree",
  "open_tree_attr", "mount_setattr", "quotactl", "quotactl_fd",
  /* Large kernel attack surface or a view of the whole host: eBPF, perf,
   * userfaultfd (stretches kernel races), io_uring (its operations bypass
   * this filter), fanotify, dcookies, the kernel log. */
  "bpf", "perf_event_open", "userfaultfd", "io_uring_setup",
  "io_uring_enter", "io_uring_register", "fanotify_init", "lookup_dcookie",
  "syslog",
  /* File handles reach outside any bind mount ("shocker"). */
  "open_by_handle_at", "name_to_handle_at",
  /* NUMA policy and page migration. */
  "mbind", "set_mempolicy", "get_mempolicy", "set_mempolicy_home_node",
  "move_pages", "migrate_pages",
  /* Process inspection that Docker grants only with CAP_SYS_PTRACE. */
  "kcmp", "pidfd_getfd", "process_madvise",
  /* Host identity, terminal hangup, LSM state. */
  "sethostname", "setdomainname", "vhangup", "lsm_get_self_attr",
  "lsm_set_self_attr", "lsm_list_modules",
  /* Obsolete interfaces. */
  "nfsservctl", "uselib", "ustat", "sysfs", "_sysctl",
};

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

static int
deny_if (scmp_filter_ctx ctx, const char *name, struct scmp_arg_cmp cmp,
         const char **what)
{
  return add_rule (ctx, DENY, name, &cmp, what);
}

/* personality() may only take the values Docker allows: PER_LINUX (0),
 * PER_LINUX32 (8), both with UNAME26 (0x20000, 0x20008), and 0xffffffff,
 * which only queries.  libseccomp allows one comparison per argument in a
 * rule, and any matching rule denies, so "none of those values" is written
 * as a union of bit patterns that no allowed value matches.  With "other
 * bits" meaning the 30 low bits except 3 and 17, deny:
 *   - any bit above the low 32;
 *   - an other bit set and the next other bit (cyclically) clear: this
 *     catches every value whose other bits are neither all clear nor all set;
 *   - bit 0 set and bit 3, or bit 17, clear: this catches the values with
 *     all other bits set that are not 0xffffffff. */
static int
deny_personalities (scmp_filter_ctx ctx, const char **what)
{
  const uint64_t kept_bits = 0x20008, top = UINT64_C (1) << 31;
  int r = deny_if (ctx, "personality", SCMP_A0 (SCMP_CMP_GT, 0xffffffffu, 0),
                   what);

  for (uint64_t bit = 1; r == 0 && bit <= top; bit <<= 1)
    {
      if (bit & kept_bits)
        continue;
      uint64_t next = bit;
      do
        next = next == top ? 1 : next << 1;
      while (next & kept_bits);
      r = deny_if (ctx, "personality",
                   SCMP_A0 (SCMP_CMP_MASKED_EQ, bit | next, bit), what);
    }
  if (r == 0)
    r = deny_if (ctx, "personality", SCMP_A0 (SCMP_CMP_MASKED_EQ, 0x9, 1),
                 what);
  if (r == 0)
    r = deny_if (ctx, "personality",
                 SCMP_A0 (SCMP_CMP_MASKED_EQ, 0x20001, 1), what);
  return r;
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

  for (i = 0; r == 0 && i < N_ELEMENTS (denied_syscalls); i++)
    r = add_rule (ctx, DENY, denied_syscalls[i], NULL, what);

  /* clone: one rule per namespace flag, so that any of them denies.  A
   * nested namespace would undo the host's choices (a host that disabled
   * user namespaces meant it).  In clone(), 0x80 (CLONE_NEWTIME in
   * unshare/clone3) lies in the exit-signal byte, where no valid signal
   * sets it. */
  static const uint64_t ns_flags[] = {
    CLONE_NEWUSER, CLONE_NEWNS,  CLONE_NEWPID,    CLONE_NEWNET,
    CLONE_NEWUTS,  CLONE_NEWIPC, CLONE_NEWCGROUP, CLONE_NEWTIME,
  };
  for (i = 0; r == 0 && i < N_ELEMENTS (ns_flags); i++)
    r = deny_if (ctx, "clone",
                 SCMP_A0 (SCMP_CMP_MASKED_EQ, ns_flags[i], ns_flags[i]), what);

  /* clone3 passes its flags in memory, which seccomp cannot read: ENOSYS
   * makes libc fall back to clone, whose flags are checked above. */
  if (r == 0)
    r = add_rule (ctx, SCMP_ACT_ERRNO (ENOSYS), "clone3", NULL, what);

  /* TIOCSTI and TIOCLINUX push input into a terminal, possibly the
   * caller's (CVE-2017-5226).  The kernel uses only the low 32 bits of the
   * request, so compare only those: high bits must not slip past
   * (CVE-2019-10063). */
  if (r == 0)
    r = deny_if (ctx, "ioctl", SCMP_A1 (SCMP_CMP_MASKED_EQ, 0xffffffffu,
                                        TIOCSTI), what);
  if (r == 0)
    r = deny_if (ctx, "ioctl", SCMP_A1 (SCMP_CMP_MASKED_EQ, 0xffffffffu,
                                        TIOCLINUX), what);

  /* socket: like Docker, refuse AF_ALG (the kernel crypto API), AF_VSOCK
   * (reaches the hypervisor and other VMs; not namespaced) and families
   * newer than the headers we were built with. */
  if (r == 0)
    r = deny_if (ctx, "socket", SCMP_A0 (SCMP_CMP_EQ, AF_ALG, 0), what);
  if (r == 0)
    r = deny_if (ctx, "socket", SCMP_A0 (SCMP_CMP_EQ, AF_VSOCK, 0), what);
  if (r == 0)
    r = deny_if (ctx, "socket", SCMP_A0 (SCMP_CMP_GE, AF_MAX, 0), what);

  if (r == 0)
    r = deny_personalities (ctx, what);
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

int
seccomp_apply_baseline (const char **what)
{
  /* seccomp_init() adds the native architecture only.  A syscall through
   * any other ABI (i386 int 0x80, x32 numbers with bit 30 set) then kills
   * the process: the kernel decodes those with other numbers and argument
   * layouts, so no rule written here would apply to them. */
  scmp_filter_ctx ctx = seccomp_init (SCMP_ACT_ALLOW);
  if (ctx == NULL)
    {
      *what = "seccomp_init";
      return -ENOMEM;
    }

  int r = seccomp_attr_set (ctx, SCMP_FLTATR_ACT_BADARCH,
                            SCMP_ACT_KILL_PROCESS);
  if (r < 0)
    *what = "seccomp_attr_set(ACT_BADARCH)";
  /* Have seccomp_load() return the kernel's errno, not -ECANCELED. */
  if (r == 0 && (r = seccomp_attr_set (ctx, SCMP_FLTATR_API_SYSRAWRC, 1)) < 0)
    *what = "seccomp_attr_set(API_SYSRAWRC)";
  if (r == 0)
    r = add_all_rules (ctx, what);
  if (r == 0 && (r = seccomp_load (ctx)) < 0)
    *what = "seccomp_load";

  seccomp_release (ctx);
  return r;
}
