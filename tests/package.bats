#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# The Debian package (debian/), end to end: make deb, lintian and blhc,
# apt-get install, the helper's file capabilities, the command-line suites
# against the installed /usr programs (debian/tests/installed-caps, the
# autopkgtest), purge.  Run once, as root, by run-tests.sh: the package
# is on the machine only while this file runs (the other streams use
# private prefixes with their own SYSCONFDIR, so its /etc/airlock files
# are not theirs), and purged at the end even when a test fails.
# The installed-package suites' own TAP goes to $T/package-installed.tap,
# which run-tests.sh counts.

load helpers

setup_file () {
  export PKG_BUILD="$T/package-build" PKG_BEFORE="$T/package-before"
  # Never an airlock installed by someone else: this file purges it.
  if dpkg-query -W -f='${Status}' airlock 2>/dev/null | grep -q 'ok installed\|config-files'; then
    export PKG_SKIP="an airlock package is installed on this machine already"
  fi
  find /etc /usr -xdev -path '*airlock*' 2>/dev/null | sort > "$PKG_BEFORE"
  getent group airlock > /dev/null && export PKG_HAD_GROUP=1
  true
}

setup () {
  [ -z "${PKG_SKIP:-}" ] || skip "$PKG_SKIP"
}

teardown_file () {
  [ -n "${PKG_SKIP:-}" ] && return 0
  dpkg-statoverride --remove /usr/libexec/airlock/airlock-helper > /dev/null 2>&1
  if dpkg-query -W -f='${Status}' airlock 2>/dev/null | grep -q 'ok installed\|config-files'; then
    DEBIAN_FRONTEND=noninteractive timeout -k 10 300 apt-get purge -y -q airlock > /dev/null 2>&1 || true
  fi
  # The package leaves its system group, as Debian packages do; a machine
  # that had none gets none back: with it, `make install-setuid` would
  # make a helper only its (empty) group may run.
  [ -n "${PKG_HAD_GROUP:-}" ] || groupdel airlock 2> /dev/null
  true
}

deb () { ls "$PKG_BUILD"/deb/airlock_*.deb; }

@test "make deb builds the package; lintian and blhc find nothing" {
  run env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL timeout -k 10 900 \
    make -s -C "$BATS_TEST_DIRNAME/.." deb BUILDDIR="$PKG_BUILD"
  echo "$output"
  [ "$status" -eq 0 ]
  [ -f "$(deb)" ]
  # (lintian's note on running as root is not a finding.)
  run timeout -k 10 300 lintian "$PKG_BUILD"/deb/airlock_*.changes
  echo "$output"
  [ "$status" -eq 0 ]
  [ -z "$(grep -v '^running with root privileges' <<< "$output")" ]
  run timeout -k 10 120 blhc --all "$PKG_BUILD/deb/build.log"
  echo "$output"
  [ "$status" -eq 0 ]
  # The static supervisor names the libc in it.
  dpkg-deb -f "$(deb)" Built-Using | grep -qE '^glibc \(= .+\)$'
}

@test "apt-get install: the helper has exactly the four file capabilities, no setuid" {
  DEBIAN_FRONTEND=noninteractive timeout -k 10 300 apt-get install -y -q --no-install-recommends "$(deb)"
  h=/usr/libexec/airlock/airlock-helper
  [ "$(getcap "$h")" = "$h cap_dac_override,cap_setgid,cap_setuid,cap_sys_admin=ep" ]
  [ "$(stat -c %a:%U:%G "$h")" = 755:root:root ]
  getent group airlock
  # The conffiles, and the paths the programs were built with.
  for f in helper.conf config.json policy.rules; do
    dpkg-query -W -f='${Conffiles}\n' airlock | grep -q " /etc/airlock/$f "
  done
  grep -qF /etc/airlock/policy.rules /usr/libexec/airlock/airlock-daemon
  grep -qF /usr/libexec/airlock/airlock-helper /usr/bin/airlock
}

@test "the command-line suites against the installed package, as an unprivileged user, caps mode" {
  rm -f "$T/package-installed.tap"
  run env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL TEST_USER="${TEST_USER}p" OTHER_USER="${OTHER_USER}p" \
    TAP="$T/package-installed.tap" timeout -k 10 1200 "$BATS_TEST_DIRNAME/../debian/tests/installed-caps"
  echo "$output"
  grep -E '^not ok' -A 12 "$T/package-installed.tap" || true
  [ "$status" -eq 0 ]
  grep -q '^ok ' "$T/package-installed.tap"
  ! grep -q '^not ok' "$T/package-installed.tap" || false
}

@test "an administrator's dpkg-statoverride wins over the postinst" {
  h=/usr/libexec/airlock/airlock-helper
  # (--update applies it now, as dpkg does at unpack; its chown clears
  # the capabilities.)
  dpkg-statoverride --update --add root root 0700 "$h"
  run timeout -k 10 120 dpkg-reconfigure -fnoninteractive airlock
  dpkg-statoverride --remove "$h"
  [ "$status" -eq 0 ]
  [ "$(stat -c %a:%U:%G "$h")" = 700:root:root ]
  [ -z "$(getcap "$h")" ]
  # The override gone, the postinst sets the capabilities again.
  timeout -k 10 120 dpkg-reconfigure -fnoninteractive airlock
  [ "$(stat -c %a "$h")" = 755 ]
  [[ "$(getcap "$h")" == *"cap_dac_override,cap_setgid,cap_setuid,cap_sys_admin=ep" ]]
}

@test "purge leaves nothing of airlock in /etc or /usr" {
  # A hard link must not keep the helper's privilege (prerm drops it).
  ln /usr/libexec/airlock/airlock-helper "$T/helper-link"
  DEBIAN_FRONTEND=noninteractive timeout -k 10 300 apt-get purge -y -q airlock
  [ -z "$(getcap "$T/helper-link")" ]
  [ ! -u "$T/helper-link" ]
  rm -f "$T/helper-link"
  ! dpkg-query -W -f='${Status}' airlock 2>/dev/null | grep -q 'installed\|config-files' || false
  find /etc /usr -xdev -path '*airlock*' 2>/dev/null | sort | diff "$PKG_BEFORE" -
}
