#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# `airlock run`: exit codes, signals, timeouts, streams, large and binary
# output.

load helpers
bats_require_minimum_version 1.5.0


@test "exit codes pass through" {
  for code in 0 1 3 42 255; do
    run arun -- sh -c "exit $code"
    [ "$status" -eq "$code" ]
  done
}

@test "death by signal N gives 128+N" {
  run arun -- sh -c 'kill -TERM $$'
  [ "$status" -eq 143 ]
  run arun -- sh -c 'kill -KILL $$'
  [ "$status" -eq 137 ]
  run arun -- sh -c 'kill -SEGV $$'
  [ "$status" -eq 139 ]
}

@test "command not found gives 127, not executable gives 126" {
  run -127 arun -- /no/such/command
  [[ "$output" == *"/no/such/command"* ]]
  printf 'not a program\n' > "$WORK/not-exec"; chmod 0644 "$WORK/not-exec"
  run arun -- "$WORK/not-exec"
  rm -f "$WORK/not-exec"
  [ "$status" -eq 126 ]
}

@test "stdout and stderr stay separate" {
  as_user "$AIRLOCK" run -- sh -c 'echo to-out; echo to-err >&2' > "$T/out" 2> "$T/err"
  [ "$(cat "$T/out")" = to-out ]
  [ "$(cat "$T/err")" = to-err ]
}

@test "stdin is forwarded" {
  printf 'line one\nline two\n' > "$T/in"
  as_user "$AIRLOCK" run -- sh -c 'wc -l; cat' < "$T/in" > "$T/out"
  [ "$(head -n 1 "$T/out" | tr -d ' ')" = 2 ]
  [ "$(wc -l < "$T/out")" -eq 1 ]
}

@test "10 MB of output arrives whole" {
  as_user "$AIRLOCK" run -- head -c 10485760 /dev/zero > "$T/big"
  [ "$(stat -c %s "$T/big")" -eq 10485760 ]
  rm -f "$T/big"
}

@test "binary output arrives byte for byte" {
  head -c 1048576 /dev/urandom > "$WORK/bin.dat"; chmod 0644 "$WORK/bin.dat"
  as_user "$AIRLOCK" run -- cat "$WORK/bin.dat" > "$T/bin.out"
  cmp "$WORK/bin.dat" "$T/bin.out"
  rm -f "$WORK/bin.dat" "$T/bin.out"
}

@test "timeout gives 124 and kills the whole tree, setsid and double-fork included" {
  marker=$((RANDOM + 1000))
  run arun --timeout 2 -- sh -c "setsid sleep $marker.1 & (sleep $marker.2 &) ; sleep $marker.3"
  [ "$status" -eq 124 ]
  [[ "$output" == *"timed out"* ]]
  gone "sleep $marker\."
}

@test "a command that exits leaves no background process behind" {
  marker=$((RANDOM + 1000))
  run arun -- sh -c "setsid sleep $marker.4 & echo started"
  [ "$status" -eq 0 ]
  gone "sleep $marker\.4"
}

@test "killing airlock run kills the sandbox" {
  marker=$((RANDOM + 1000))
  (as_user "$AIRLOCK" run -- sh -c "setsid sleep $marker.5 & sleep $marker.6" &)
  for i in $(seq 50); do pgrep -f "^sleep $marker.6" >/dev/null && break; sleep 0.1; done
  pgrep -f "^sleep $marker.6"
  broker=$(pgrep -f -u "$TEST_USER" "airlock run -- sh -c setsid sleep $marker")
  kill -KILL "$broker"
  gone "sleep $marker\."
}

@test "SIGTERM to airlock run stops the sandbox and exits 143" {
  marker=$((RANDOM + 1000))
  as_user "$AIRLOCK" run -- sh -c "sleep $marker.7" & runner=$!
  for i in $(seq 50); do pgrep -f "^sleep $marker.7" >/dev/null && break; sleep 0.1; done
  broker=$(pgrep -f -u "$TEST_USER" "airlock run -- sh -c sleep $marker")
  kill -TERM "$broker"
  wait "$runner" || status=$?
  [ "${status:-0}" -eq 143 ]
  gone "sleep $marker\."
}

@test "usage errors are clear and exit 2" {
  run arun
  [ "$status" -eq 2 ]
  [[ "$output" == *"no command given"* ]]
  run arun --network wifi -- true
  [ "$status" -eq 2 ]
  [[ "$output" == *"loopback, none, host or allowlist"* ]]
  run arun --timeout soon -- true
  [ "$status" -eq 2 ]
  run arun --ro-bind /no/such/path -- true
  [ "$status" -eq 2 ]
  [[ "$output" == *"/no/such/path"* ]]
}

@test "--help and the man page describe airlock run" {
  run "$AIRLOCK" run --help
  [ "$status" -eq 0 ]
  [[ "$output" == *"--rootfs"* ]]
  [[ "$output" == *"124"* ]]
  # (compressed where the Debian package installed it)
  page=$(ls "$(dirname "$AIRLOCK")"/../share/man/man1/airlock.1 "$(dirname "$AIRLOCK")"/../share/man/man1/airlock.1.gz 2>/dev/null | head -n 1)
  man -l "$page" 2>/dev/null | grep -q "airlock run" || zgrep -q "airlock run" "$page"
}

@test "a missing helper is a clear error" {
  EXTRA_ENV="AIRLOCK_HELPER=/nonexistent/airlock-helper" run as_user env AIRLOCK_HELPER=/nonexistent/airlock-helper "$AIRLOCK" run -- true
  [ "$status" -eq 125 ]
  [[ "$output" == *"cannot run the helper"* ]]
}

@test "run: a memory limit too small to run anything is refused, naming the minimum" {
  run arun --memory 1 -- true
  [ "$status" -eq 2 ]
  [[ "$output" == *"--memory 1 is too small: at least 16M"* ]]
  run arun --memory 15M -- true
  [ "$status" -eq 2 ]
}
