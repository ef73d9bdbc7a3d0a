#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# Build-time paths and flags, as a packager and a user installing
# elsewhere meet them: a PREFIX change between make and make install,
# dpkg-buildflags, the version in one place.  Run once, as root, by
# run-tests.sh (each test builds in its own directory under $T).

load helpers

# mk ARGS...: make in the tree, without what the suite's own make passes
# down, bounded in time.
mk () {
  env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL -u WERROR timeout -k 10 900 \
    make -C "$BATS_TEST_DIRNAME/.." -j2 "$@"
}

# The installed airlock as the test user, nothing pointing it elsewhere:
# what it finds, it finds at its compiled-in paths.
installed () { # prefix, args...
  local prefix=$1
  shift
  (cd "$WORK" && runuser -u "$TEST_USER" -- env -i PATH=/usr/bin:/bin \
    HOME="$TEST_HOME" XDG_RUNTIME_DIR="$RUNDIR" AIRLOCK_DAEMON_IDLE_EXIT=5 \
    AIRLOCK_POLICY_MODE=deny ${EXTRA_ENV:-} "$prefix/bin/airlock" "$@")
}

setup () {
  B="$T/paths-build"
  RUNDIR="$T/build-xdg-$BATS_TEST_NUMBER"
  mkdir -p "$RUNDIR"
  chown "$TEST_USER" "$RUNDIR"
  chmod 0700 "$RUNDIR"
}

teardown () {
  # A daemon started by this test (session open), and only it.
  pid=$(pgrep -u "$TEST_USER" -f "^airlock daemon" | while read -r p; do
          grep -qz "XDG_RUNTIME_DIR=$RUNDIR" "/proc/$p/environ" 2>/dev/null && echo "$p"; done)
  [ -n "$pid" ] && kill "$pid" 2>/dev/null
  true
}

@test "make with one PREFIX, make install with another: the installed airlock uses the new paths" {
  rm -rf "$B" "$T/first" "$T/second"
  run mk -s all BUILDDIR="$B" PREFIX="$T/first" SYSCONFDIR="$T/etc"
  [ "$status" -eq 0 ]
  grep -qx "PREFIX=$T/first" "$B/build-options"
  run mk -s install BUILDDIR="$B" PREFIX="$T/second" SYSCONFDIR="$T/etc"
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "$output" == *"build options changed since the last build: rebuilding"* ]]
  grep -qx "PREFIX=$T/second" "$B/build-options"
  # Nothing of the first PREFIX is left in what was installed.
  ! grep -rqF "$T/first" "$T/second" || false
  grep -qF "$T/second/libexec/airlock/airlock-helper" "$T/second/bin/airlock"
  grep -qF "$T/second/libexec/airlock/airlock-daemon" "$T/second/bin/airlock"
  grep -qF "$T/second/share/airlock/default.rules" "$T/second/libexec/airlock/airlock-daemon"
  sed 's/\\-/-/g' "$T/second/share/man/man1/airlock.1" \
    | grep -qF "$T/second/libexec/airlock/airlock-helper"
  [ ! -e "$T/first" ]
  run installed "$T/second" policy rules
  [ "$status" -eq 0 ]
  [[ "$output" == *wipe-home* ]]
  run installed "$T/second" run -v -- true
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "$output" == *"sandbox started"* ]]
}

@test "make install again with the same options rebuilds nothing" {
  [ -f "$B/build-options" ] || skip "needs the build of the test before"
  before=$(stat -c %Y.%s "$B/build-options" "$B/airlock" "$B/airlock-daemon" "$B/airlock-helper")
  run mk -s install BUILDDIR="$B" PREFIX="$T/second" SYSCONFDIR="$T/etc"
  [ "$status" -eq 0 ]
  [[ "$output" != *"build options changed"* ]]
  [ "$(stat -c %Y.%s "$B/build-options" "$B/airlock" "$B/airlock-daemon" "$B/airlock-helper")" = "$before" ]
}

@test "a missing installed file: the error names the path it was built with and the fix" {
  [ -x "$T/second/bin/airlock" ] || skip "needs the install of the first test"
  # The daemon program (no daemon runs yet: run starts one for its verdict).
  d="$T/second/libexec/airlock/airlock-daemon"
  mv "$d" "$T/daemon.saved"
  run installed "$T/second" run -- true
  echo "$output"
  [ "$status" -eq 125 ]
  [[ "$output" == *"cannot run $d: No such file or directory (the path this airlock was built with: install airlock with the same PREFIX, or set AIRLOCK_DAEMON"* ]]
  run installed "$T/second" policy rules
  mv "$T/daemon.saved" "$d"
  echo "$output"
  [ "$status" -eq 2 ]
  [[ "$output" == *"cannot run $d: No such file or directory"*AIRLOCK_DAEMON* ]]

  mv "$T/second/share/airlock/default.rules" "$T/rules.saved"
  run installed "$T/second" run -- true
  mv "$T/rules.saved" "$T/second/share/airlock/default.rules"
  echo "$output"
  [ "$status" -eq 125 ]
  [[ "$output" == *"$T/second/share/airlock/default.rules: No such file or directory (the path this airlock was built with: install airlock with the same PREFIX, or set AIRLOCK_DEFAULT_RULES"* ]]

  h="$T/second/libexec/airlock/airlock-helper"
  mv "$h" "$T/helper.saved"
  run installed "$T/second" run -- true
  mv "$T/helper.saved" "$h"
  echo "$output"
  [ "$status" -eq 125 ]
  [[ "$output" == *"cannot run the helper $h: No such file or directory (the path this airlock was built with: install airlock with the same PREFIX, or set AIRLOCK_HELPER"* ]]

  s="$T/second/libexec/airlock/airlock-supervisor"
  mv "$s" "$T/supervisor.saved"
  run installed "$T/second" session open paths-test
  mv "$T/supervisor.saved" "$s"
  echo "$output"
  [ "$status" -ne 0 ]
  [[ "$output" == *"$s: No such file or directory (the path this airlock was built with: install airlock with the same PREFIX, or set AIRLOCK_SUPERVISOR"* ]]

  # Named by a variable: the error says so.
  EXTRA_ENV="AIRLOCK_HELPER=$T/no-such-helper" run installed "$T/second" run -- true
  echo "$output"
  [ "$status" -eq 125 ]
  [[ "$output" == *"$T/no-such-helper: No such file or directory (named by AIRLOCK_HELPER)"* ]]
}

@test "dpkg-buildflags: the packager's flags are used, no warning, hardening kept" {
  command -v dpkg-buildflags >/dev/null || skip "dpkg-buildflags is not installed"
  rm -rf "$T/dpkg-build"
  eval "$(dpkg-buildflags --export=sh)"
  [[ "$CPPFLAGS" == *-D_FORTIFY_SOURCE=* ]]
  # Not silenced: every compiler line and message is in $output.
  run mk all BUILDDIR="$T/dpkg-build" CPPFLAGS="$CPPFLAGS" CFLAGS="$CFLAGS" LDFLAGS="$LDFLAGS"
  echo "$output" | grep -E 'warning|error' || true
  [ "$status" -eq 0 ]
  [[ "$output" != *"warning"* ]]
  [[ "$output" != *"redefined"* ]]
  # Their flags, then ours.
  grep -qxF "CPPFLAGS=$CPPFLAGS" "$T/dpkg-build/build-options"
  grep -qxF "CFLAGS=$CFLAGS" "$T/dpkg-build/build-options"
  grep -qxF "LDFLAGS=$LDFLAGS" "$T/dpkg-build/build-options"
  [[ "$output" == *"$CFLAGS -U_FORTIFY_SOURCE -D_FORTIFY_SOURCE=3 -fstack-protector-strong"* ]]
  h="$T/dpkg-build/airlock-helper"
  readelf -h "$h" | grep -q 'Type:.*DYN'
  readelf -d "$h" | grep -q BIND_NOW
  nm -D "$h" | grep -q __stack_chk_fail
  nm -D "$h" | grep -q '_chk@'
}

@test "-Werror only when asked: off for a release build, on with WERROR=1 (make check, CI)" {
  run mk -n -B BUILDDIR="$T/werror-build" "$T/werror-build/obj/helper/util.o"
  [ "$status" -eq 0 ]
  [[ "$output" == *"-Wall -Wextra"* ]]
  [[ "$output" != *"-Werror "* ]]
  run mk -n -B BUILDDIR="$T/werror-build" WERROR=1 "$T/werror-build/obj/helper/util.o"
  [[ "$output" == *"-Wall -Wextra -Werror "* ]]
  run env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL -u WERROR \
    make -C "$BATS_TEST_DIRNAME/.." -n BUILDDIR="$T/werror-build" check-installed
  [[ "$output" == *"-Wall -Wextra -Werror "* ]]
  grep -q '^export WERROR=1' "$BATS_TEST_DIRNAME/../.ci/run"
}

@test "one version: VERSION, airlock --version, the helper, the man pages, NEWS.md" {
  [ -x "$T/second/bin/airlock" ] || skip "needs the install of the first test"
  v=$(cat "$BATS_TEST_DIRNAME/../VERSION")
  [[ "$v" =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]]
  [ "$("$T/second/bin/airlock" --version)" = "airlock $v" ]
  [[ "$("$T/second/libexec/airlock/airlock-helper" --version)" == "airlock-helper $v "* ]]
  [ "$("$T/second/libexec/airlock/airlock-daemon" --version)" = "airlock-daemon $v" ]
  grep -q "^\.TH AIRLOCK 1 .* \"airlock $v\"" "$T/second/share/man/man1/airlock.1"
  grep -q "^\.TH AIRLOCK-HELPER 8 .* \"airlock $v\"" "$T/second/share/man/man8/airlock-helper.8"
  ! grep -n '@[A-Z_]*@' "$T/second/share/man/man1/airlock.1" "$T/second/share/man/man8/airlock-helper.8" || false
  grep -q "^## $v" "$BATS_TEST_DIRNAME/../NEWS.md"
  grep -q "^MIT License" "$BATS_TEST_DIRNAME/../LICENSE"
  # Nowhere else: no source file spells the version out.
  ! grep -rnF --include='*.c' --include='*.h' --include=Makefile "$v" "$BATS_TEST_DIRNAME/.." || false
}

@test "build: a plain make builds the programs and the man pages" {
  run mk BUILDDIR="$T/plain-build"
  [ "$status" -eq 0 ]
  for f in airlock airlock-daemon airlock-helper airlock-supervisor airlock.1 airlock-helper.8; do
    [ -s "$T/plain-build/$f" ] || { echo "make built no $f"; false; }
  done
  rm -rf "$T/plain-build"
}

@test "build: every negated command in the suites asserts (bash's errexit ignores a bare '! cmd')" {
  # A '! cmd' line that is not a test's last command checks nothing: write
  # 'run ! cmd', or '! cmd || false'.
  run grep -nE '^[[:space:]]+! ' "$BATS_TEST_DIRNAME"/*.bats
  bare=$(printf '%s\n' "$output" | grep -vE '\|\| ' || true)
  [ -z "$bare" ] || { echo "$bare"; false; }
}
