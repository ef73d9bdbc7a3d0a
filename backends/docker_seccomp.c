/* SPDX-License-Identifier: MIT */
/* The Docker rendering of airlock's seccomp baseline (see
 * docker_seccomp.h).  The table is the helper's own, so a container
 * refuses what a local sandbox refuses: io_uring, nested namespaces
 * (unshare, setns, clone with a CLONE_NEW* flag; clone3 answers ENOSYS so
 * that libc falls back to clone), the mount API, keyrings, bpf and the
 * rest.  Docker's default profile is an allowlist that grants more with
 * each added capability; this one stays the same whatever docker.cap_add
 * says.
 *
 * Two differences from the helper, both from what a profile can say:
 * the helper also denies syscall numbers newer than its libseccomp (a
 * profile names calls; runc skips names its libseccomp does not know),
 * and it kills callers of a foreign ABI, where a profile without
 * "architectures" filters the native ABI only and leaves the others to
 * runc's bad-architecture action (libseccomp's default: kill). */
#define _GNU_SOURCE /* the CLONE_NEW* flags */
#include "docker_seccomp.h"

#include "seccomp_table.h"

#define N_ELEMENTS(a) (sizeof (a) / sizeof (a)[0])

static cJSON *
rule (cJSON *syscalls, const char *name, int err)
{
  cJSON *r = cJSON_CreateObject ();
  cJSON *names = cJSON_AddArrayToObject (r, "names");
  if (name)
    cJSON_AddItemToArray (names, cJSON_CreateString (name));
  cJSON_AddStringToObject (r, "action", "SCMP_ACT_ERRNO");
  cJSON_AddNumberToObject (r, "errnoRet", err);
  cJSON_AddItemToArray (syscalls, r);
  return r;
}

static void
arg_rule (cJSON *syscalls, const struct seccomp_arg_rule *t)
{
  static const char *const ops[] = {
    [SECCOMP_EQ] = "SCMP_CMP_EQ", [SECCOMP_GE] = "SCMP_CMP_GE",
    [SECCOMP_GT] = "SCMP_CMP_GT", [SECCOMP_MASKED_EQ] = "SCMP_CMP_MASKED_EQ",
  };
  cJSON *r = rule (syscalls, t->name, t->err);
  if (t->op == SECCOMP_ALWAYS)
    return;
  /* Each entry is one rule: its args are ANDed, entries are ORed, as
   * libseccomp's rules are in the helper. */
  cJSON *arg = cJSON_CreateObject ();
  cJSON_AddNumberToObject (arg, "index", t->arg);
  cJSON_AddNumberToObject (arg, "value", (double) t->a);
  cJSON_AddNumberToObject (arg, "valueTwo", (double) t->b);
  cJSON_AddStringToObject (arg, "op", ops[t->op]);
  cJSON_AddItemToArray (cJSON_AddArrayToObject (r, "args"), arg);
}

cJSON *
docker_seccomp_profile (void)
{
  cJSON *p = cJSON_CreateObject ();
  if (!p)
    return NULL;
  cJSON_AddStringToObject (p, "defaultAction", "SCMP_ACT_ALLOW");
  cJSON *syscalls = cJSON_AddArrayToObject (p, "syscalls");
  cJSON *denied = cJSON_GetObjectItemCaseSensitive (rule (syscalls, NULL, EPERM), "names");
  for (size_t i = 0; i < N_ELEMENTS (seccomp_denied_syscalls); i++)
    cJSON_AddItemToArray (denied, cJSON_CreateString (seccomp_denied_syscalls[i]));
  for (size_t i = 0; i < N_ELEMENTS (seccomp_arg_rules); i++)
    arg_rule (syscalls, &seccomp_arg_rules[i]);
  struct seccomp_arg_rule pers[SECCOMP_PERSONALITY_RULES];
  size_t n = seccomp_personality_rules (pers);
  for (size_t i = 0; i < n; i++)
    arg_rule (syscalls, &pers[i]);
  return p;
}
