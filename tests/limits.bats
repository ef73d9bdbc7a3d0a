#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# Resource limits: pids and memory bounded by a cgroup (setuid root, where
# the host offers the controllers) or rlimits, and the report of which.

load helpers

teardown () { reset_conf; }

expected_limits () {
  if [ "$MODE" = setuid ] && [ -d /sys/fs/cgroup/pids ] && [ -d /sys/fs/cgroup/memory ]; then
    echo "cgroup v1"
  elif [ "$MODE" = setuid ] && [ -f /sys/fs/cgroup/cgroup.controllers ]; then
    echo "cgroup v2"
  else
    echo "rlimits"
  fi
}

@test "airlock run -v reports which limits applied" {
  run arun -v -- true
  [ "$status" -eq 0 ]
  [[ "$output" == *"limits: $(expected_limits)"* ]]
}

@test "the pids limit holds against a burst of forks" {
  # Fork until refused; children wait so that they all count at once.
  run arun --pids 32 -- python3 -c '
import os, time
n = 0
for i in range(80):
    try:
        if os.fork() == 0:
            time.sleep(3)
            os._exit(0)
        n += 1
    except OSError:
        break
print(n)'
  echo "$output"
  n=$(echo "$output" | tail -n 1)
  [ "$n" -le 31 ]
  [ "$n" -ge 10 ]
}

@test "a fork bomb is contained and fully killed by the timeout" {
  # From a script file: written inline, the approval gate blocks it before
  # it ever reaches the sandbox, and this test is about the sandbox.
  printf '%s\n' 'b() { b | b & }; b; sleep 60' > "$WORK/bomb.sh"
  run arun --pids 64 --timeout 5 -- bash ./bomb.sh
  rm -f "$WORK/bomb.sh"
  [ "$status" -eq 124 ]
  for i in $(seq 50); do user_processes >/dev/null || break; sleep 0.1; done
  ! user_processes || false
}

@test "the memory limit stops a memory hog; modest use works" {
  run arun --memory 64M -- python3 -c 'x = bytearray(16 * 1024 * 1024); print("ok")'
  [ "$status" -eq 0 ]
  [ "$output" = ok ]
  run arun --memory 64M -- python3 -c 'x = bytearray(512 * 1024 * 1024); print("escaped")'
  [ "$status" -ne 0 ]
  [[ "$output" != *escaped* ]]
}

# The sandbox's pid 1 as the host sees it, from `airlock run -v`'s report
# in the file $1 (waits up to 5 s for it).
started_pid () {
  local i
  for i in $(seq 50); do grep -q 'sandbox started, pid [0-9]' "$1" && break; sleep 0.1; done
  sed -n 's/.*sandbox started, pid \([0-9]*\).*/\1/p' "$1"
}

# No root process waits for a sandbox to end: each start removes the
# groups of sandboxes that are over (helper/resource_limits.c).
@test "an ended sandbox's cgroups are removed by the next sandbox start" {
  only_modes setuid
  [ -d /sys/fs/cgroup/pids ] || skip "this check reads the cgroup v1 layout"
  as_user "$AIRLOCK" run -v -- sleep 2 2> "$T/cg.err" &
  runner=$!
  pid=$(started_pid "$T/cg.err")
  group=$(grep ':pids:' "/proc/$pid/cgroup" | cut -d: -f3)
  [[ "$group" == /airlock/* ]]
  [ -d "/sys/fs/cgroup/pids$group" ]
  [ -d "/sys/fs/cgroup/memory$group" ]
  wait "$runner"
  swept_by_next_start "$group"
}

# The cgroup $1 of an ended sandbox is removed by the next start (a second
# start only if the ended helper's pid was reused meanwhile).
swept_by_next_start () {
  local group=$1 i
  for i in 1 2; do
    run arun -- true
    [ "$status" -eq 0 ]
    [ -d "/sys/fs/cgroup/pids$group" ] || break
  done
  [ ! -d "/sys/fs/cgroup/pids$group" ]
  [ ! -d "/sys/fs/cgroup/memory$group" ]
}

# The fault the old per-sandbox reaper covered: the caller kills their own
# helper (its real uid is theirs) while the sandbox runs.
@test "a SIGKILLed helper: no process of its sandbox survives, its cgroups go at the next start" {
  as_user "$AIRLOCK" run -v -- sleep 1234 2> "$T/kill.err" &
  runner=$!
  pid=$(started_pid "$T/kill.err")
  [ -n "$pid" ]
  group=$(grep ':pids:' "/proc/$pid/cgroup" | cut -d: -f3)
  helper=$(awk '/^PPid:/ { print $2 }' "/proc/$pid/status")
  [ "$(awk '/^Uid:/ { print $2 }' "/proc/$helper/status")" = "$(id -u "$TEST_USER")" ]
  as_user kill -KILL "$helper"
  wait "$runner" || true
  gone "sleep 1234"
  ended "$pid"
  if [ "$MODE" = setuid ] && [ -d /sys/fs/cgroup/pids ]; then
    [[ "$group" == /airlock/* ]]
    swept_by_next_start "$group"
  fi
}

@test "helper.conf caps the limits a request may ask for" {
  write_conf "max_pids = 100" "max_memory = 1G"
  run arun --pids 1000 -- true
  [ "$status" -eq 125 ]
  [[ "$output" == *"max_pids"* ]]
  run arun --memory 2G -- true
  [ "$status" -eq 125 ]
  [[ "$output" == *"max_memory"* ]]
  run arun --pids 50 -- true
  [ "$status" -eq 0 ]
}

@test "helper.conf max_time bounds every run" {
  write_conf "max_time = 1"
  run arun -- sleep 30
  [ "$status" -eq 124 ]
}

@test "core dumps are off, file size and open files are bounded" {
  write_conf "nofile = 256" "max_file_size = 1M"
  run arun -- bash -c 'ulimit -c; ulimit -n; ulimit -f'
  [ "$status" -eq 0 ]
  [ "${lines[0]}" = 0 ]
  [ "${lines[1]}" = 256 ]
  [ "${lines[2]}" = 1024 ]   # 1 MiB in 1 KiB blocks
}
