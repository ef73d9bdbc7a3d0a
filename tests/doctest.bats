#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# Every example of docs/api.md, run against a real daemon as the test user
# and compared (tests/doctest/api_doctest.py).  The document's examples
# were made in the setuid mode; the other modes differ in their posture.
# DOCTEST_FILL=1 writes the actual answers into the document instead
# (for writing it: then read the diff).

load helpers

setup () {
  only_modes setuid
  RUNDIR="$T/xdg-doctest"
  rm -rf "$RUNDIR"
  mkdir -p "$RUNDIR" "$T/doctest-bin"
  chown "$TEST_USER" "$RUNDIR"
  chmod 0700 "$RUNDIR"
  DOCWORK="$WORK/apidoc/project"
  rm -rf "$WORK/apidoc"
  mkdir -p "$DOCWORK"
  chown -R "$TEST_USER" "$WORK/apidoc"
  # `airlock` as the test user, with the AIRLOCK_* variables it is given.
  cat > "$T/doctest-bin/airlock" <<SH
#!/bin/sh
exec runuser -u "$TEST_USER" -- env -i PATH=/usr/local/bin:/usr/bin:/bin HOME="$TEST_HOME" \
  XDG_RUNTIME_DIR="$RUNDIR" AIRLOCK_HELPER="$AIRLOCK_HELPER" AIRLOCK_SUPERVISOR="$AIRLOCK_SUPERVISOR" \
  AIRLOCK_POLICY_MODE=approve AIRLOCK_DAEMON_IDLE_EXIT=30 \$(env | grep -E '^AIRLOCK_(EXEC|SESSION|JOBS|DOCKER)_') "$AIRLOCK" "\$@"
SH
  chmod 0755 "$T/doctest-bin/airlock"
}

teardown () {
  [ "$MODE" = setuid ] || return 0
  timeout -k 5 20 "$T/doctest-bin/airlock" daemon stop >/dev/null 2>&1 || true
  rm -rf "$WORK/apidoc"
}

@test "doctest: every example of docs/api.md gives the answers it shows" {
  fill=
  [ "${DOCTEST_FILL:-0}" = 1 ] && fill=--fill
  run env PATH="$T/doctest-bin:$PATH" timeout -k 10 600 python3 tests/doctest/api_doctest.py \
    "$T/doctest-bin/airlock" docs/api.md "$DOCWORK" "$RUNDIR" $fill
  echo "$output" | grep -v "^ok "
  [ "$status" -eq 0 ]
  [[ "$output" == *" examples agree, 0 differ"* ]]
}
