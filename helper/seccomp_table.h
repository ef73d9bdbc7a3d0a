/* SPDX-License-Identifier: MIT */
/* The baseline seccomp list as data: one table for the helper, whose
 * build compiles it with libseccomp (seccomp_baseline.c), and for the
 * docker backend, which renders it as a Docker seccomp profile
 * (backends/docker_seccomp.c), so that a local sandbox and a container
 * refuse the same calls.  Policy: allow by default, deny what is listed.
 * Why each entry is here: see seccomp_baseline.c.  Include it with
 * _GNU_SOURCE defined (the CLONE_NEW* flags). */
#ifndef AIRLOCK_HELPER_SECCOMP_TABLE_H
#define AIRLOCK_HELPER_SECCOMP_TABLE_H

#include <errno.h>
#include <sched.h>
#include <stdint.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif

/* Denied outright, with EPERM.  Names an architecture lacks are skipped. */
static const char *const seccomp_denied_syscalls[] = {
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
  /* Mounts and namespaces: the sandbox's shape is fixed.  The new mount
   * API is listed in full (Flatpak CVE-2021-41133). */
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

/* A call denied (with err) when one argument compares; SECCOMP_ALWAYS:
 * whatever the arguments.  a and b as in libseccomp's SCMP_Ax() and
 * Docker's value and valueTwo: the value compared with, or for
 * SECCOMP_MASKED_EQ the mask (a) and the value ((arg & a) == b). */
enum seccomp_op { SECCOMP_ALWAYS, SECCOMP_EQ, SECCOMP_GE, SECCOMP_GT, SECCOMP_MASKED_EQ };
struct seccomp_arg_rule {
  const char *name;
  int err;
  unsigned arg;
  enum seccomp_op op;
  uint64_t a, b;
};

#define SECCOMP_NS_RULE(flag) { "clone", EPERM, 0, SECCOMP_MASKED_EQ, flag, flag }
static const struct seccomp_arg_rule seccomp_arg_rules[] = {
  /* clone: one rule per namespace flag, so that any of them denies.  In
   * clone(), 0x80 (CLONE_NEWTIME in unshare/clone3) lies in the
   * exit-signal byte, where no valid signal sets it. */
  SECCOMP_NS_RULE (CLONE_NEWUSER), SECCOMP_NS_RULE (CLONE_NEWNS),
  SECCOMP_NS_RULE (CLONE_NEWPID), SECCOMP_NS_RULE (CLONE_NEWNET),
  SECCOMP_NS_RULE (CLONE_NEWUTS), SECCOMP_NS_RULE (CLONE_NEWIPC),
  SECCOMP_NS_RULE (CLONE_NEWCGROUP), SECCOMP_NS_RULE (CLONE_NEWTIME),
  /* clone3 passes its flags in memory, which seccomp cannot read: ENOSYS
   * makes libc fall back to clone, whose flags are checked above. */
  { "clone3", ENOSYS, 0, SECCOMP_ALWAYS, 0, 0 },
  /* TIOCSTI and TIOCLINUX push input into a terminal (CVE-2017-5226); only
   * the low 32 bits of the request count (CVE-2019-10063). */
  { "ioctl", EPERM, 1, SECCOMP_MASKED_EQ, 0xffffffffu, TIOCSTI },
  { "ioctl", EPERM, 1, SECCOMP_MASKED_EQ, 0xffffffffu, TIOCLINUX },
  /* AF_ALG, AF_VSOCK and families newer than our headers. */
  { "socket", EPERM, 0, SECCOMP_EQ, AF_ALG, 0 },
  { "socket", EPERM, 0, SECCOMP_EQ, AF_VSOCK, 0 },
  { "socket", EPERM, 0, SECCOMP_GE, AF_MAX, 0 },
  { "personality", EPERM, 0, SECCOMP_GT, 0xffffffffu, 0 },
};

/* personality() may only take the values Docker allows: PER_LINUX (0),
 * PER_LINUX32 (8), both with UNAME26 (0x20000, 0x20008), and 0xffffffff,
 * which only queries.  Any matching rule denies, so "none of those
 * values" is a union of bit patterns that no allowed value matches.  With
 * "other bits" meaning the 30 low bits except 3 and 17, deny (besides
 * any bit above the low 32, in the table above):
 *   - an other bit set and the next other bit (cyclically) clear: this
 *     catches every value whose other bits are neither all clear nor all set;
 *   - bit 0 set and bit 3, or bit 17, clear: this catches the values with
 *     all other bits set that are not 0xffffffff.
 * Fills out[] and returns how many. */
#define SECCOMP_PERSONALITY_RULES 32
#define SECCOMP_PERSONALITY(mask, value) \
  (struct seccomp_arg_rule){ "personality", EPERM, 0, SECCOMP_MASKED_EQ, mask, value }
static inline size_t
seccomp_personality_rules (struct seccomp_arg_rule out[SECCOMP_PERSONALITY_RULES])
{
  const uint64_t kept_bits = 0x20008, top = UINT64_C (1) << 31;
  size_t n = 0;
  for (uint64_t bit = 1; bit <= top; bit <<= 1)
    {
      if (bit & kept_bits)
        continue;
      uint64_t next = bit;
      do
        next = next == top ? 1 : next << 1;
      while (next & kept_bits);
      out[n++] = SECCOMP_PERSONALITY (bit | next, bit);
    }
  out[n++] = SECCOMP_PERSONALITY (0x9, 1);
  out[n++] = SECCOMP_PERSONALITY (0x20001, 1);
  return n;
}

#endif
