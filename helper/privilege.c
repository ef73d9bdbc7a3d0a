/* SPDX-License-Identifier: MIT */
/* Privilege modes and every change of privilege the helper makes. */
#define _GNU_SOURCE
#include "privilege.h"

#include <cap-ng.h>
#include <errno.h>
#include <linux/capability.h>
#include <stdarg.h>
#include <sys/fsuid.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "util.h"

/* The file capabilities `make install-caps` grants, and nothing else:
 * CAP_SYS_ADMIN creates the user namespace where unprivileged ones are
 * restricted; CAP_SETUID lets us create it with euid 0, so that root and
 * not the caller owns it (or the caller could setns into it from outside
 * and hold every capability there, with no seccomp filter); CAP_SETUID and
 * CAP_SETGID then map the caller's ids, which are not our euid 0's;
 * CAP_DAC_OVERRIDE opens /proc/PID/{uid,gid}_map of the non-dumpable
 * child, which are owned by root. */
static const int filecaps_expected[]
    = { CAP_SYS_ADMIN, CAP_DAC_OVERRIDE, CAP_SETUID, CAP_SETGID };

static bool
permitted_is_exactly (const int *caps, size_t n)
{
  for (int cap = 0; cap <= CAP_LAST_CAP; cap++)
    {
      bool want = false;
      for (size_t i = 0; i < n; i++)
        want |= caps[i] == cap;
      if (capng_have_capability (CAPNG_PERMITTED, (unsigned) cap) != want)
        return false;
    }
  return true;
}

static bool
any_capability (void)
{
  return capng_have_capabilities (CAPNG_SELECT_CAPS) != CAPNG_NONE;
}

/* The permitted set each privileged mode keeps until the drop. */
static void
keep_permitted (const struct caller *c)
{
  capng_updatev (CAPNG_ADD, CAPNG_PERMITTED, CAP_SYS_ADMIN, CAP_DAC_OVERRIDE,
                 CAP_SETUID, CAP_SETGID, -1);
  if (c->mode == PRIV_ROOT)
    /* Mapping uid 0 into a user namespace needs CAP_SETFCAP. */
    capng_update (CAPNG_ADD, CAPNG_PERMITTED, CAP_SETFCAP);
}

static void
set_fs_ids (uid_t uid, gid_t gid)
{
  setfsgid (gid);
  setfsuid (uid);
  /* setfsuid() reports no error: read the value back to know it took. */
  if ((uid_t) setfsuid ((uid_t) -1) != uid
      || (gid_t) setfsgid ((gid_t) -1) != gid)
    fail (AL_STEP_PRIVILEGE, 0, "could not set the file-system ids");
}

void
priv_init (struct caller *c)
{
  uid_t ruid, euid, suid;
  gid_t rgid, egid, sgid;
  if (getresuid (&ruid, &euid, &suid) < 0 || getresgid (&rgid, &egid, &sgid) < 0)
    fail (AL_STEP_PRIVILEGE, errno, "cannot read our own ids");
  c->uid = ruid;
  c->gid = rgid;
  capng_get_caps_process ();

  if (egid != rgid)
    fail (AL_STEP_PRIVILEGE, 0,
          "installed setgid; airlock-helper must be setuid root, have file "
          "capabilities, or neither (see airlock-helper(8))");
  if (euid == 0 && ruid != 0)
    {
      /* A setuid binary must not also carry file capabilities: that is a
       * packaging mistake, and we would not know which set we hold. */
      if (getxattr ("/proc/self/exe", "security.capability", NULL, 0) >= 0)
        fail (AL_STEP_PRIVILEGE, 0,
              "setuid and file capabilities at once; remove one "
              "(setcap -r, or chmod u-s)");
      c->mode = PRIV_SETUID;
    }
  else if (euid != ruid)
    fail (AL_STEP_PRIVILEGE, 0,
          "setuid to uid %u, not root; reinstall with make install-setuid",
          (unsigned) euid);
  else if (ruid == 0)
    c->mode = PRIV_ROOT;
  else if (any_capability ())
    {
      if (!permitted_is_exactly (filecaps_expected, 4))
        fail (AL_STEP_PRIVILEGE, 0,
              "unexpected capabilities; the helper needs exactly "
              "cap_dac_override,cap_setgid,cap_setuid,cap_sys_admin+ep (make install-caps) or none");
      c->mode = PRIV_FILECAPS;
    }
  else
    c->mode = PRIV_NONE;

  if (c->mode != PRIV_NONE)
    {
      /* Permitted: only what the mode needs.  Effective: nothing until a
       * step raises it.  Bounding and ambient: empty, where we may. */
      capng_clear (CAPNG_SELECT_ALL);
      keep_permitted (c);
      bool may_bound = c->mode != PRIV_FILECAPS;
      if (capng_apply (may_bound ? CAPNG_SELECT_ALL : CAPNG_SELECT_CAPS) < 0)
        fail (AL_STEP_PRIVILEGE, errno, "cannot reduce capabilities");
    }
  /* From here on, files are opened as the caller.  Changing fsuid away from
   * 0 also removes the file-system capabilities from the effective set. */
  set_fs_ids (c->uid, c->gid);
}

bool
priv_is_privileged (const struct caller *c)
{
  return c->mode != PRIV_NONE;
}

void
priv_raise (const struct caller *c, ...)
{
  if (c->mode == PRIV_NONE)
    return;
  capng_clear (CAPNG_SELECT_CAPS);
  keep_permitted (c);
  va_list ap;
  va_start (ap, c);
  /* A capability this mode does not keep is skipped: the step that asks
   * for it does not need it in this mode (e.g. CAP_SETUID with file caps,
   * where the map written is our own euid's). */
  for (int cap = va_arg (ap, int); cap >= 0; cap = va_arg (ap, int))
    if (capng_have_capability (CAPNG_PERMITTED, (unsigned) cap))
      capng_update (CAPNG_ADD, CAPNG_EFFECTIVE, (unsigned) cap);
  va_end (ap);
  if (capng_apply (CAPNG_SELECT_CAPS) < 0)
    fail (AL_STEP_PRIVILEGE, errno, "cannot raise a capability");
}

void
priv_lower (const struct caller *c)
{
  priv_raise (c, -1);
}

void
priv_fsuid_root (const struct caller *c, bool root)
{
  if (c->mode != PRIV_SETUID && c->mode != PRIV_ROOT)
    fail (AL_STEP_PRIVILEGE, 0, "internal: root file access in mode %d",
          c->mode);
  /* fsgid 0 is not one of our gids: that change needs CAP_SETGID. */
  priv_raise (c, CAP_SETGID, -1);
  if (root)
    set_fs_ids (0, 0);
  else
    set_fs_ids (c->uid, c->gid);
  /* As root, keep CAP_DAC_OVERRIDE: cgroupfs roots may be mode 0555. */
  if (root)
    priv_raise (c, CAP_DAC_OVERRIDE, -1);
  else
    priv_lower (c);
}

static void
verify_ids (const struct caller *c)
{
  uid_t r, e, s;
  gid_t rg, eg, sg;
  if (getresuid (&r, &e, &s) < 0 || getresgid (&rg, &eg, &sg) < 0
      || r != c->uid || e != c->uid || s != c->uid || rg != c->gid
      || eg != c->gid || sg != c->gid)
    fail (AL_STEP_CAPS, errno, "ids did not change as expected");
}

pid_t
priv_clone_root_owned (const struct caller *c, int flags)
{
  if (c->mode == PRIV_NONE)
    return (pid_t) syscall (SYS_clone, flags, NULL, NULL, NULL, NULL);
  /* With file capabilities our euid is the caller's: borrow euid 0 for
   * the clone (KEEPCAPS, or going back would empty the permitted set). */
  bool borrow = c->mode == PRIV_FILECAPS;
  if (borrow)
    {
      prctl (PR_SET_KEEPCAPS, 1, 0, 0, 0);
      priv_raise (c, CAP_SETUID, -1);
      if (setresuid ((uid_t) -1, 0, (uid_t) -1) < 0)
        fail (AL_STEP_NAMESPACES, errno, "cannot take euid 0 for the clone");
    }
  priv_raise (c, CAP_SYS_ADMIN, CAP_SETUID, -1);
  pid_t pid = (pid_t) syscall (SYS_clone, flags, NULL, NULL, NULL, NULL);
  if (pid == 0)
    return 0; /* the child: its identity is settled once the maps exist */
  int err = errno;
  if (borrow)
    {
      if (setresuid ((uid_t) -1, c->uid, (uid_t) -1) < 0)
        fail (AL_STEP_NAMESPACES, errno, "cannot give back euid 0");
      prctl (PR_SET_KEEPCAPS, 0, 0, 0, 0);
      set_fs_ids (c->uid, c->gid);
    }
  priv_lower (c);
  errno = err;
  return pid;
}

void
priv_drop_monitor (const struct caller *c)
{
  if (setresgid (c->gid, c->gid, c->gid) < 0
      || setresuid (c->uid, c->uid, c->uid) < 0)
    fail (AL_STEP_CAPS, errno, "cannot switch to the caller's ids");
  verify_ids (c);
  capng_clear (CAPNG_SELECT_ALL);
  if (capng_apply (CAPNG_SELECT_CAPS) < 0)
    fail (AL_STEP_CAPS, errno, "cannot drop capabilities");
  capng_get_caps_process ();
  if (any_capability ())
    fail (AL_STEP_CAPS, 0, "capabilities remain after the drop");
  /* A credential change resets dumpability: the monitor stays
   * non-dumpable so its channel to the broker cannot be hijacked. */
  prctl (PR_SET_DUMPABLE, 0, 0, 0, 0);
}

void
priv_enter_sandbox_identity (const struct caller *c)
{
  /* libcap-ng remembers the pid it acts on; we are a raw clone() child. */
  capng_setpid (getpid ());
  if (c->mode == PRIV_SETUID || c->mode == PRIV_FILECAPS)
    {
      /* Our euid is host root, which is not mapped in the new namespace;
       * become the caller there.  The ids are mapped, and the namespace's
       * capabilities (which the kernel does not strip: its uid 0 is not our
       * euid) are kept with KEEPCAPS all the same. */
      prctl (PR_SET_KEEPCAPS, 1, 0, 0, 0);
      if (setresgid (c->gid, c->gid, c->gid) < 0
          || setresuid (c->uid, c->uid, c->uid) < 0)
        fail (AL_STEP_ID_MAPS, errno, "cannot become the caller in the sandbox");
      prctl (PR_SET_KEEPCAPS, 0, 0, 0, 0);
      verify_ids (c);
      capng_get_caps_process ();
      if (!capng_have_capability (CAPNG_PERMITTED, CAP_SYS_ADMIN))
        fail (AL_STEP_ID_MAPS, 0, "lost the namespace's capabilities");
      for (int cap = 0; cap <= CAP_LAST_CAP; cap++)
        if (capng_have_capability (CAPNG_PERMITTED, (unsigned) cap))
          capng_update (CAPNG_ADD, CAPNG_EFFECTIVE, (unsigned) cap);
      if (capng_apply (CAPNG_SELECT_CAPS) < 0)
        fail (AL_STEP_ID_MAPS, errno, "cannot restore the namespace's capabilities");
    }
}

void
priv_drop_sandbox (void)
{
  capng_clear (CAPNG_SELECT_ALL);
  if (capng_apply (CAPNG_SELECT_ALL) < 0)
    fail (AL_STEP_CAPS, errno, "cannot drop capabilities");
  capng_get_caps_process ();
  if (any_capability ())
    fail (AL_STEP_CAPS, 0, "capabilities remain after the drop");
  for (int cap = 0; cap <= CAP_LAST_CAP; cap++)
    if (prctl (PR_CAPBSET_READ, cap, 0, 0, 0) > 0)
      fail (AL_STEP_CAPS, 0, "bounding set not empty after the drop");
}
