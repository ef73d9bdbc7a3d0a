#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# The local backend's sessions through the backend interface: a sandbox
# whose pid 1 is airlock-supervisor, many commands in it.

load helpers

drive () {
  EXTRA_ENV="AIRLOCK_SUPERVISOR=$AIRLOCK_SUPERVISOR" as_user "$SESSION_DRIVER" "$@"
}


@test "session: several commands in one sandbox, exit codes and streams" {
  run drive ping 'run:echo one; exit 3' 'run:echo two >&2; exit 0' 'run:kill -TERM $$'
  [ "$status" -eq 0 ]
  [ "${lines[0]}" = "[pong]" ]
  [ "${lines[1]}" = one ]
  [ "${lines[2]}" = "[exit 3]" ]
  echo "$output" | grep -qx two
  echo "$output" | grep -qx "\[signal 15\]"
}

@test "session: the supervisor is pid 1, commands share the sandbox" {
  run drive 'run:cat /proc/1/cmdline | tr "\0" " "; echo' 'run:echo made > /tmp/x' 'run:cat /tmp/x; hostname'
  [ "$status" -eq 0 ]
  [[ "${lines[0]}" == "/.airlock-supervisor"* ]]
  echo "$output" | grep -qx made
  echo "$output" | grep -qx airlock
}

@test "session: stdin reaches the command" {
  run drive 'stdin:hello there:read a b; echo "$b $a"'
  [ "$status" -eq 0 ]
  [ "${lines[0]}" = "there hello" ]
}

@test "session: killing a job kills its whole tree, setsid and double fork included" {
  marker=$((RANDOM + 1000))
  run drive "kill:1:setsid sleep $marker.1 & (sleep $marker.2 &); sleep $marker.3" \
            'run:ps -e -o comm= | sort | uniq -c | tr -s " "'
  [ "$status" -eq 0 ]
  echo "$output" | grep -qx "\[signal 15\]"
  ! echo "$output" | grep -q sleep || false
  gone "^sleep $marker\."
}

@test "session: a background grandchild holding the pipe does not hang the command" {
  marker=$((RANDOM + 1000))
  start=$(date +%s)
  run drive "run:setsid sleep $marker.4 & echo started" 'run:echo next'
  [ "$status" -eq 0 ]
  [ "$(( $(date +%s) - start ))" -lt 10 ]
  [ "${lines[0]}" = started ]
  [ "${lines[1]}" = "[exit 0]" ]
  [ "${lines[2]}" = next ]
  gone "^sleep $marker\."   # closing the session ended it
}

@test "session: the supervisor cannot be ptraced by the commands" {
  run drive 'run:'"$PROBE"' ptrace 1'
  [ "$status" -eq 0 ]
  [[ "${lines[0]}" == blocked* ]]
}

@test "session: killing the broker ends the whole sandbox" {
  marker=$((RANDOM + 1000))
  (drive "run:sleep $marker.5" &)
  for i in $(seq 50); do pgrep -f "^sleep $marker.5" >/dev/null && break; sleep 0.1; done
  driver=$(pgrep -f -u "$TEST_USER" "airlock-session-driver run:sleep $marker")
  helper=$(pgrep -P "$driver")
  supervisor=$(pgrep -P "$helper")
  [ -n "$supervisor" ]
  kill -KILL "$driver"
  gone "^sleep $marker\."
  for i in $(seq 50); do kill -0 "$supervisor" 2>/dev/null || break; sleep 0.1; done
  ! kill -0 "$supervisor" 2>/dev/null || false
}

@test "session: 20 sessions at once" {
  for i in $(seq 20); do
    drive "run:echo session $i" > "$T/s.$i" 2>&1 &
  done
  wait
  for i in $(seq 20); do
    grep -qx "session $i" "$T/s.$i"
    grep -qx "\[exit 0\]" "$T/s.$i"
  done
  rm -f "$T"/s.*
}

@test "session: 200 commands in one session" {
  steps=()
  for i in $(seq 200); do steps+=("run:echo c$i"); done
  run drive "${steps[@]}"
  [ "$status" -eq 0 ]
  [ "$(echo "$output" | grep -c '^\[exit 0\]$')" -eq 200 ]
  echo "$output" | grep -qx c200
}

@test "session: 10 MB and binary output through the supervisor" {
  head -c 1048576 /dev/urandom > "$WORK/bin.dat"; chmod 0644 "$WORK/bin.dat"
  drive "run:head -c 10485760 /dev/zero" > "$T/big" 2>/dev/null
  [ "$(stat -c %s "$T/big")" -eq $((10485760 + 9)) ]   # plus "[exit 0]\n"
  drive "run:cat $WORK/bin.dat" > "$T/bin.out" 2>/dev/null
  head -c 1048576 "$T/bin.out" | cmp - "$WORK/bin.dat"
  rm -f "$T/big" "$T/bin.out" "$WORK/bin.dat"
}
