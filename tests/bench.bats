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
  for t in "== 0." "== 1." "== 2." "== 3." "== 4." "== Goals"; do
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
  ! grep -n 'failed (first' "$BENCH_OUT"
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

@test "bench: the goals table names every goal of issue 11" {
  [ "$(sed -n '/^== Goals/,/^$/p' "$BENCH_OUT" | grep -cE ' (met|not met|not measured)$')" = 7 ]
}

@test "bench: leaves no prefix, daemon, container or user behind" {
  dir=$(grep -o '/tmp/airlock-bench\.[A-Za-z0-9]*' "$BENCH_OUT" | head -n 1)
  [ -n "$dir" ] && [ ! -e "$dir" ]
  ! id "$BENCH_USER" >/dev/null 2>&1
  if docker info >/dev/null 2>&1; then
    [ -z "$(docker ps -aq --filter "label=airlock.owner=$dir/xdg/airlock")" ]
  fi
}
