#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# The job lifecycle under faults, backend-agnostic like sessions.bats
# (BACKEND=local|docker|ssh): every job's end is reported once whatever
# kills it, and nothing of a job outlives its leader, its session or (but
# for ssh, whose remote jobs outlive a dropped connection by design) its
# daemon.
# Each sleep is marked with a number unique to the test, so that pgrep
# (run as root, it sees container processes too) finds only this test's.

load helpers

DOCKER=/usr/bin/docker

setup () {
  BACKEND=${BACKEND:-local}
  RUNDIR="$T/xdg-lc-$BATS_TEST_NUMBER"
  rm -rf "$RUNDIR"
  mkdir -p "$RUNDIR"
  chown "$TEST_USER" "$RUNDIR"
  chmod 0700 "$RUNDIR"
  export EXTRA_ENV="XDG_RUNTIME_DIR=$RUNDIR AIRLOCK_SUPERVISOR=$AIRLOCK_SUPERVISOR AIRLOCK_BACKEND=$BACKEND AIRLOCK_DAEMON_IDLE_EXIT=${DAEMON_IDLE:-30} ${BACKEND_ENV:-} ${SESSION_ENV:-}"
  marker=$((RANDOM + 1000))
}

teardown () {
  stop_daemon
  ssh_cleanup
  # A daemon killed by the test leaves its containers: this test's only.
  if [ "$BACKEND" = docker ]; then
    ids=$($DOCKER ps -aq --filter "label=airlock.owner=$RUNDIR/airlock" 2>/dev/null)
    [ -z "$ids" ] || $DOCKER rm -f $ids > /dev/null 2>&1
  fi
  true
}

# Every call bounded: a job whose end is never reported fails the test.
al () { as_user timeout -k 5 60 "$AIRLOCK" "$@"; }
api () { printf '%s\n' "$@" | as_user timeout -k 5 60 "$AIRLOCK" serve; }

field () {
  printf '%s\n' "$output" | grep '^{' | tail -n 1 |
    python3 -c 'import json,sys; v=json.load(sys.stdin); [v := v[int(k)] if isinstance(v, list) else v[k] for k in sys.argv[1].split(".")]; print(json.dumps(v) if not isinstance(v, str) else v)' "$1"
}

# Wait up to 5 s for a process matching $1; its pid.
appears () {
  local i p
  for i in $(seq 50); do
    p=$(pgrep -f "$1" | head -n 1)
    [ -n "$p" ] && { echo "$p"; return 0; }
    sleep 0.1
  done
  return 1
}

# Docker: the processes of session $1's container other than its pid 1,
# our supervisor (--init), empty when there are none.
container_leftovers () {
  [ "$BACKEND" = docker ] || return 0
  local c
  c=$($DOCKER ps -q --filter "label=airlock.owner=$RUNDIR/airlock" --filter "label=airlock.session=$1")
  [ -n "$c" ] || return 0
  $DOCKER top "$c" -eo pid,args | tail -n +2 | grep -v -- '-supervisor --init$' || true
}

# Wait up to $2 seconds for container_leftovers $1 to be empty.
container_clean_within () {
  local i
  for i in $(seq $(($2 * 10))); do
    [ -z "$(container_leftovers "$1")" ] && return 0
    sleep 0.1
  done
  container_leftovers "$1"
  return 1
}

@test "lifecycle: a TERM-ignoring command times out: 124 within grace + 2 s, nothing left" {
  al session open s
  start=$(date +%s)
  run al exec s --timeout 2 -- "trap '' TERM; sleep $marker.1 & sleep $marker.2; true"
  end=$(date +%s)
  echo "$output"
  [ "$status" -eq 124 ]
  # The deadline (2 s), the grace (2 s), 2 s more; and a second for the
  # client's own start (ssh: 3 more for the remote kill's round trips).
  [ $((end - start)) -le $([ "$BACKEND" = ssh ] && echo 10 || echo 7) ]
  gone "^sleep $marker\." 2
  run al exec s -- 'echo still usable'
  [ "$output" = "still usable" ]
}

@test "lifecycle: an interrupt of a TERM-ignoring command: 130, nothing left, usable" {
  al session open s
  (rc=0; al exec s -- "trap '' TERM; sleep $marker.3; true" > "$T/lc-intr.out" 2>&1 || rc=$?
   echo "rc=$rc" >> "$T/lc-intr.out") &
  appears "^sleep $marker.3"
  run api '{"id":1,"op":"interrupt","session":"s"}'
  [ "$(field interrupted)" = true ]
  # The grace (2 s) and 2 s more.
  for i in $(seq 40); do grep -q '^rc=' "$T/lc-intr.out" && break; sleep 0.1; done
  cat "$T/lc-intr.out"
  grep -qx "rc=130" "$T/lc-intr.out"
  gone "^sleep $marker\." 2
  run al exec s -- 'echo still usable'
  [ "$output" = "still usable" ]
}

@test "lifecycle: kill of a TERM-ignoring background job: killed, nothing left" {
  al session open s
  run api '{"id":1,"op":"exec","session":"s","background":true,"command":"trap \"\" TERM; sleep '"$marker"'.4 & sleep '"$marker"'.5; true"}'
  job=$(field job)
  [ "$job" -ge 1 ]
  appears "^sleep $marker.5"
  run api '{"id":2,"op":"kill","session":"s","job":'"$job"'}'
  [ "$(field ok)" = true ]
  for i in $(seq 40); do
    run api '{"id":3,"op":"job_output","session":"s","job":'"$job"'}'
    [ "$(field state)" = killed ] && break
    sleep 0.1
  done
  [ "$(field state)" = killed ]
  gone "^sleep $marker\." 2
  run al exec s -- 'echo still usable'
  [ "$output" = "still usable" ]
}

@test "lifecycle: a job leader killed from inside takes its tree: lost, once, nothing left" {
  al session open s
  # $PPID of the command's shell is its job leader.
  run api '{"id":1,"op":"exec","session":"s","command":"sleep '"$marker"'.6 & setsid sleep '"$marker"'.7 & (sleep '"$marker"'.8 &); sleep 0.5; kill -9 $PPID; sleep '"$marker"'.9; true"}'
  echo "$output"
  # An error naming the cause, never an exit code nobody saw; once.
  [ "$(field ok)" = false ]
  [ "$(field cause)" = lost ]
  [ "$(field exit_code)" = null ]
  # (ssh: the remote wrapper is the leader, and no status of it comes
  # back: the message is the backend's own, and must be there.)
  if [ "$BACKEND" = ssh ]; then
    [ -n "$(field error.message)" ]
  else
    [[ "$(field error.message)" == *"leader"*"killed by signal 9"* ]]
  fi
  [ "$(grep -c '"event":"result"' <<< "$output")" -eq 1 ]
  # (ssh: the wrapper's end is noticed at its next heartbeat, 2 s)
  gone "^sleep $marker\." $([ "$BACKEND" = ssh ] && echo 5 || echo 2)
  run al exec s -- 'echo still usable'
  [ "$output" = "still usable" ]
}

@test "lifecycle: a job leader killed from the host takes its tree; the background job ends once" {
  al session open s
  run api '{"id":1,"op":"exec","session":"s","background":true,"command":"sleep '"$marker"'.1 & setsid sleep '"$marker"'.2 & sleep '"$marker"'.3; true"}'
  job=$(field job)
  sleeper=$(appears "^sleep $marker.3")
  shell=$(awk '{print $4}' "/proc/$sleeper/stat")
  leader=$(awk '{print $4}' "/proc/$shell/stat")
  if [ "$BACKEND" = ssh ]; then
    # The remote job's wrapper: the remote user's, not sshd's.
    [ "$(stat -c %U "/proc/$leader")" = "$SSH_USER" ]
    [ "$(readlink "/proc/$leader/exe")" != /usr/sbin/sshd ]
  else
    grep -q airlock-superv "/proc/$leader/comm"
  fi
  kill -KILL "$leader"
  gone "^sleep $marker\." $([ "$BACKEND" = ssh ] && echo 5 || echo 2)
  for i in $(seq 30); do
    run api '{"id":2,"op":"job_output","session":"s","job":'"$job"'}'
    [ "$(field state)" != running ] && break
    sleep 0.1
  done
  echo "$output"
  [ "$(field state)" != running ]
  [ "$(field cause)" = lost ]
  if [ "$BACKEND" = ssh ]; then
    [ -n "$(field error)" ]
  else
    [[ "$(field error)" == *"leader"*"killed by signal 9"* ]]
  fi
  container_clean_within s 2
  run al exec s -- 'echo still usable'
  [ "$output" = "still usable" ]
}

@test "lifecycle: the daemon killed: no process of its jobs left within 2 s" {
  # A remote job outlives its daemon like a dropped connection, by
  # design; ssh.bats checks the remote deadline and the stale-job sweep.
  [ "$BACKEND" != ssh ] || skip "an ssh job outlives its daemon by design (ssh.bats)"
  al session open s
  run api '{"id":1,"op":"exec","session":"s","background":true,"command":"setsid sleep '"$marker"'.1 & sleep '"$marker"'.2; true"}'
  (al exec s -- "trap '' TERM HUP; sleep $marker.3 & sleep $marker.4; true" > /dev/null 2>&1 || true) &
  appears "^sleep $marker.2"
  appears "^sleep $marker.4"
  kill -KILL "$(daemon_pid)"
  gone "^sleep $marker\." 2
  container_clean_within s 2
}
