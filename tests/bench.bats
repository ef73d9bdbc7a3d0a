#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# `make bench` must keep measuring what it says: a few rounds of every
# table, run as root by run-tests.sh (once), on the suite's own build.  The
# figures are never judged (timing is not a verdict); what is checked is
# that every airlock row has samples and no failed run, that the goals
# table is printed, and that the bench leaves nothing behind.

load helpers

setup_file () {
  export BENCH_OUT="$T/bench.out"
  export BENCH_BUILD="$T/prefix-build"
  export BENCH_USER=airlock-bench-t
  N_EXEC=3 N_OPEN=2 N_FILES=2 WARMUP=1 BENCH_TIMEOUT=600 BUILDDIR="$BENCH_BUILD" \
    timeout -k 10 700 "$BATS_TEST_DIRNAME/bench/bench.sh" > "$BENCH_OUT" 2>&1
  echo $? > "$T/bench.rc"
}

teardown_file () {
  rm -f "$T/bench.out" "$T/bench.rc"
}

# The samples column (n) of the row whose label starts with $1.
samples () {
  grep -F -- "$1" "$BENCH_OUT" | head -n 1 | awk -v l="$1" '{ sub(/^ */, ""); print substr($0, length(l) + 1) }' | awk '{ print $1 }'
}

@test "bench: exits 0 and prints every table" {
  [ "$(cat "$T/bench.rc")" = 0 ] || { cat "$BENCH_OUT"; false; }
  for t in "== 0." "== 1." "== 2." "== 3." "== 4." "== 5." "== Goals (issue 11)" "== Goals (issue 12)"; do
    grep -qF -- "$t" "$BENCH_OUT" || { echo "missing: $t"; cat "$BENCH_OUT"; false; }
  done
}

@test "bench: every local airlock row has samples and no failed run" {
  local label
  for label in "airlock --version" "the original's wrapper, unsandboxed (emulated)" "airlock exec bench -- true (CLI)" \
               "JSON API exec, one airlock serve connection" "airlock run -- true (setuid helper)" \
               "airlock run -- true (userns helper)" "airlock session open (CLI)" "JSON API open + close" \
               "cp -r TREE WORKDIR/DIR (baseline)" "airlock cp TREE bench:DIR"; do
    n=$(samples "$label")
    [ "$n" = 3 ] || [ "$n" = 2 ] || { echo "row '$label': n=$n"; cat "$BENCH_OUT"; false; }
  done
  ! grep -n 'failed (first' "$BENCH_OUT" || false
}

@test "bench: the docker rows, when a dockerd answers" {
  if ! docker info >/dev/null 2>&1; then
    [ "${AIRLOCK_REQUIRE_DOCKER:-0}" != 1 ] || { echo "dockerd required but not answering"; false; }
    skip "no dockerd"
  fi
  local label
  for label in "airlock exec dbench -- true (CLI)" "JSON API open (docker)"; do
    n=$(samples "$label")
    [ "$n" = 3 ] || [ "$n" = 2 ] || { echo "row '$label': n=$n"; cat "$BENCH_OUT"; false; }
  done
}

@test "bench: the ssh rows, against the bench's own sshd; airlock cp's when it exists" {
  [ -x /usr/sbin/sshd ] || { echo "no /usr/sbin/sshd: openssh-server is in make deps"; false; }
  local label
  for label in "ssh -o ControlPath=MASTER host true (baseline)" "airlock exec sbench -- true (CLI)" \
               "JSON API exec, one airlock serve connection" "scp -r 500 files, over the master (baseline)"; do
    n=$(sed -n '/^== 5\./,/^== Goals/p' "$BENCH_OUT" | grep -F -- "$label" | head -n 1 |
        awk -v l="$label" '{ sub(/^ */, ""); print substr($0, length(l) + 1) }' | awk '{ print $1 }')
    [ "$n" = 3 ] || [ "$n" = 2 ] || { echo "row '$label': n=$n"; cat "$BENCH_OUT"; false; }
  done
  if grep -q "this airlock has no cp command" "$BENCH_OUT"; then
    ! grep -qF "airlock cp 500 files" "$BENCH_OUT" || false
  else
    [ "$(samples "airlock cp 500 files sbench:DIR")" = 2 ] || { cat "$BENCH_OUT"; false; }
  fi
  ! grep -E 'delivered [0-9]* files, not 500' "$BENCH_OUT" || false
}

@test "bench: the goals tables name every goal of issues 11 and 12" {
  [ "$(sed -n '/^== Goals (issue 11)/,/^$/p' "$BENCH_OUT" | grep -cE ' (met|not met|not measured)$')" = 7 ]
  [ "$(sed -n '/^== Goals (issue 12)/,/^$/p' "$BENCH_OUT" | grep -cE ' (met|not met|not measured)$')" = 2 ]
}

@test "bench: leaves no prefix, daemon, container or user behind" {
  dir=$(grep -o '/tmp/airlock-bench\.[A-Za-z0-9]*' "$BENCH_OUT" | head -n 1)
  [ -n "$dir" ] && [ ! -e "$dir" ]
  ! id "$BENCH_USER" >/dev/null 2>&1 || false
  # the sshd's remote users (tests/ssh/sshd.sh), and the sshd itself
  ! id airlock-sshb-t >/dev/null 2>&1 || false
  ! id airlock-sshb-t-nb >/dev/null 2>&1 || false
  ! pgrep -f "sshd -D -f $dir/sshd/sshd_config" || false
  if docker info >/dev/null 2>&1; then
    [ -z "$(docker ps -aq --filter "label=airlock.owner=$dir/xdg/airlock")" ]
  fi
}

@test "bench: the network allowlist's figures, through the stack and direct, and nothing left behind" {
  run env NET_CONNECTS=5 NET_MIB=4 BUILDDIR="$BENCH_BUILD" timeout -k 10 300 "$BATS_TEST_DIRNAME/bench/network_bench.sh"
  echo "$output"
  [ "$status" -eq 0 ]
  echo "$output" | grep -q "^  through airlock-egress (sandbox) *median"
  echo "$output" | grep -q "^  connection latency ratio, median to median: [0-9.]*x$"
  echo "$output" | grep -q "^  throughput: direct .* MiB/s, through the stack .* MiB/s"
  ! ls -d /tmp/airlock-netbench.* 2>/dev/null || false
}
