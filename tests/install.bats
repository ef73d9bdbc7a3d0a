#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# The install targets, into a staging DESTDIR (run once: they do not depend
# on the privilege mode under test).

load helpers

setup () {
  only_modes setuid
  STAGE="$T/stage"
  rm -rf "$STAGE"
  # Its own build: PREFIX=/usr here rebuilds (build/build-options).
  SB="$T/stage-build"
}

@test "make install honours PREFIX and DESTDIR" {
  run make -s install DESTDIR="$STAGE" PREFIX=/usr BUILDDIR="$SB" SYSCONFDIR="$T/etc"
  [ "$status" -eq 0 ]
  [ -x "$STAGE/usr/bin/airlock" ]
  [ -x "$STAGE/usr/libexec/airlock/airlock-daemon" ]
  [ -x "$STAGE/usr/libexec/airlock/airlock-helper" ]
  [ -f "$STAGE/usr/share/man/man1/airlock.1" ]
  [ -f "$STAGE/usr/share/man/man8/airlock-helper.8" ]
  # The generated man pages: this build's paths, no placeholder left.
  grep -qF '/usr/libexec/airlock/airlock\-helper' "$STAGE/usr/share/man/man1/airlock.1"
  grep -qF '/usr/libexec/airlock/airlock\-daemon' "$STAGE/usr/share/man/man1/airlock.1"
  ! grep -n '@[A-Z_]*@' "$STAGE/usr/share/man/man1/airlock.1" "$STAGE/usr/share/man/man8/airlock-helper.8" || false
  # DESTDIR is where files go, not where the binaries look.
  ! grep -qF "$STAGE" "$STAGE/usr/bin/airlock" || false
  [ ! -u "$STAGE/usr/libexec/airlock/airlock-helper" ]
  [ -z "$(getcap "$STAGE/usr/libexec/airlock/airlock-helper")" ]
  # and uninstall removes every file install put there
  run make -s uninstall DESTDIR="$STAGE" PREFIX=/usr BUILDDIR="$SB" SYSCONFDIR="$T/etc"
  [ "$status" -eq 0 ]
  [ -z "$(find "$STAGE" -type f)" ]
}

@test "make install-setuid: setuid root, 4750 group airlock when that group exists" {
  run make -s install-setuid DESTDIR="$STAGE" PREFIX=/usr BUILDDIR="$SB" SYSCONFDIR="$T/etc"
  [ "$status" -eq 0 ]
  h="$STAGE/usr/libexec/airlock/airlock-helper"
  [ "$(stat -c %U "$h")" = root ]
  if getent group airlock >/dev/null; then
    [ "$(stat -c %a:%G "$h")" = 4750:airlock ]
  else
    [ "$(stat -c %a "$h")" = 4755 ]
  fi
}

@test "make install-caps: exactly the four file capabilities, no setuid" {
  run make -s install-caps DESTDIR="$STAGE" PREFIX=/usr BUILDDIR="$SB" SYSCONFDIR="$T/etc"
  [ "$status" -eq 0 ]
  h="$STAGE/usr/libexec/airlock/airlock-helper"
  [ ! -u "$h" ]
  [[ "$(getcap "$h")" == *"cap_dac_override,cap_setgid,cap_setuid,cap_sys_admin=ep" ]]
}

@test "the installed airlock is a thin client: no libcurl, PCRE2 or libunistring to load" {
  run ldd "$T/prefix/bin/airlock"
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "$output" == *libcjson* ]]
  [[ "$output" != *libcurl* ]]
  [[ "$output" != *libpcre2* ]]
  [[ "$output" != *libunistring* ]]
  # They are the daemon program's, which the client runs for what needs them.
  run ldd "$T/prefix/libexec/airlock/airlock-daemon"
  [[ "$output" == *libcurl* && "$output" == *libpcre2* && "$output" == *libunistring* ]]
}

@test "the helper is built hardened: PIE, full RELRO, stack protector, fortified" {
  h="$T/prefix/libexec/airlock/airlock-helper"
  readelf -h "$h" | grep -q 'Type:.*DYN'
  readelf -d "$h" | grep -q 'BIND_NOW'
  readelf -l "$h" | grep -q GNU_RELRO
  nm -D "$h" | grep -q __stack_chk_fail
  nm -D "$h" | grep -q '_chk@'
}

@test "the trusted core stays within its budget of 2,500 lines" {
  n=0
  for f in helper/*.c helper/*.h; do
    c=$(gcc -fpreprocessed -dD -E -P "$f" 2>/dev/null | grep -cv '^[[:space:]]*$')
    n=$((n + c))
  done
  echo "helper/: $n lines"
  [ "$n" -le 2500 ]
}
