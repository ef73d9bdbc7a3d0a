#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# The backend-agnostic session suite: named sessions through the CLI and
# the JSON-lines API.  BACKEND selects the backend (default local); every
# later backend runs this same file.  For ssh (run-tests.sh: a real sshd on
# 127.0.0.1) the commands run as another user in SSH_WORKDIR, on this same
# machine: the host's pgrep sees them.

load helpers

setup () {
  BACKEND=${BACKEND:-local}
  RUNDIR="$T/xdg-$BATS_TEST_NUMBER"
  mkdir -p "$RUNDIR"
  chown "$TEST_USER" "$RUNDIR"
  chmod 0700 "$RUNDIR"
  export EXTRA_ENV="XDG_RUNTIME_DIR=$RUNDIR AIRLOCK_SUPERVISOR=$AIRLOCK_SUPERVISOR AIRLOCK_BACKEND=$BACKEND AIRLOCK_DAEMON_IDLE_EXIT=${DAEMON_IDLE:-30} ${BACKEND_ENV:-} ${SESSION_ENV:-}"
}

teardown () {
  stop_daemon
  ssh_cleanup
}

al () { as_user "$AIRLOCK" "$@"; }

# One API conversation: the JSON lines given, the answers printed.
api () { printf '%s\n' "$@" | as_user "$AIRLOCK" serve; }

# A field of the last JSON line of $output (python3 reads JSON for us).
field () {
  printf '%s\n' "$output" | grep '^{' | tail -n 1 |
    python3 -c 'import json,sys; v=json.load(sys.stdin); [v := v[int(k)] if isinstance(v, list) else v[k] for k in sys.argv[1].split(".")]; print(json.dumps(v) if not isinstance(v, str) else v)' "$1"
}


# Poll a job's job_output (from offset 0 when given) until its state is
# STATE, 5 s at most; $output is the last answer.
wait_job_state () { # job, state, [offset]
  local off=
  [ -z "${3:-}" ] || off=',"offset":'"$3"
  for _ in $(seq 50); do
    run api '{"id":5,"op":"job_output","session":"s","job":'"$1$off"'}'
    [ "$(field state)" = "$2" ] && return
    sleep 0.1
  done
}

@test "sessions: open, ls, close" {
  run al session open s1
  [ "$status" -eq 0 ]
  run al session ls
  [[ "$output" == *"s1"*"idle"*"$(session_workdir)"* ]]
  run al session close s1
  [ "$status" -eq 0 ]
  run al session ls
  [[ "$output" != *"s1"* ]]
}

@test "sessions: cwd, exports, functions and aliases carry over; identity does not" {
  al session open s
  run al exec s -- 'cd /tmp && export FOO="a b" && greet() { echo "hi $1"; } && alias say=echo && export AIRLOCK_SECRET=x'
  [ "$status" -eq 0 ]
  run al exec s -- 'pwd; echo "$FOO"; greet you; say aliased; echo "[${AIRLOCK_SECRET:-}]"'
  [ "$status" -eq 0 ]
  [ "${lines[0]}" = /tmp ]
  [ "${lines[1]}" = "a b" ]
  [ "${lines[2]}" = "hi you" ]
  [ "${lines[3]}" = aliased ]
  [ "${lines[4]}" = "[]" ]
}

@test "sessions: a command starts no process but its bash: the wrapper forks nothing" {
  # Before the command: no child of its bash was ever reaped (field 11 of
  # /proc/self/stat counts their page faults, and every fork makes some),
  # so restoring the state forked nothing ($(compgen -e) did).  After it:
  # in a local sandbox's own pid namespace a command takes two pids, its
  # job leader's and its bash's, so $$ of two commands three apart differs
  # by 6 (saving with mv took one or two more per command); a docker exec
  # takes pids of the engine's own too, so that half is local's.
  al session open s
  stat='read -ra f </proc/self/stat; echo "${f[10]} $$"'
  run al exec s -- "$stat"
  [ "$status" -eq 0 ]
  first=$output
  al exec s -- 'export X=1; f () { :; }; alias a=b; cd /tmp; unset HOME'
  run al exec s -- 'readonly -f f; exit 3'
  [ "$status" -eq 3 ]
  run al exec s -- "$stat; echo \"\$X \$PWD\"; type -t f a"
  [ "$status" -eq 0 ]
  echo "cminflt pid: $first, then ${lines[0]}"
  [ "${first% *}" = 0 ]
  [ "${lines[0]% *}" = 0 ]
  [ "${lines[1]}" = "1 /tmp" ]
  [ "${lines[2]}" = function ]
  [ "${lines[3]}" = alias ]
  [ "$BACKEND" != local ] || [ "$(( ${lines[0]#* } - ${first#* } ))" -eq 6 ]
}

@test "sessions: exit codes, and 126 for a missing cwd" {
  al session open s
  run al exec s -- 'exit 42'
  [ "$status" -eq 42 ]
  run al exec s -- 'false'
  [ "$status" -eq 1 ]
  run al exec s --cwd /no/such/dir -- pwd
  [ "$status" -eq 126 ]
  run al exec s -- 'kill -KILL $$'
  [ "$status" -eq 137 ]
}

@test "sessions: a timeout gives 124 and the whole tree is gone" {
  al session open s
  marker=$((RANDOM + 1000))
  run al exec s --timeout 2 -- "setsid sleep $marker.1 & (sleep $marker.2 &) ; sleep $marker.3"
  [ "$status" -eq 124 ]
  gone "^sleep $marker\."
  run al exec s -- 'echo still usable'
  [ "$output" = "still usable" ]
}

@test "sessions: an interrupt gives 130" {
  al session open s
  marker=$((RANDOM + 1000))
  (rc=0; al exec s -- "sleep $marker.4" > "$T/intr.out" 2>&1 || rc=$?; echo "rc=$rc" >> "$T/intr.out") &
  for i in $(seq 50); do pgrep -f "^sleep $marker.4" >/dev/null && break; sleep 0.1; done
  client=$(pgrep -u "$TEST_USER" -f "airlock exec s -- sleep $marker")
  # SIGTERM, not SIGINT: a background job of a non-interactive shell (this
  # test) inherits SIGINT ignored, and airlock exec respects that.
  kill -TERM "$client"
  for i in $(seq 80); do grep -q '^rc=' "$T/intr.out" && break; sleep 0.1; done
  cat "$T/intr.out"
  grep -qx "rc=130" "$T/intr.out"
  gone "^sleep $marker\."
}

@test "sessions: stdin, stdout and stderr" {
  al session open s
  printf 'one\ntwo\n' > "$T/in"
  as_user "$AIRLOCK" exec s --stdin -- 'wc -l' < "$T/in" > "$T/o"
  [ "$(tr -d ' ' < "$T/o")" = 2 ]
  as_user "$AIRLOCK" exec s -- 'echo out; echo err >&2' > "$T/o" 2> "$T/e"
  if [ "${MODAL_MODE:-}" = managed ]; then
    # the managed gateway returns one output: stderr comes in stdout
    # (docs/modal.md)
    [ "$(cat "$T/o")" = "$(printf 'out\nerr')" ]
    [ ! -s "$T/e" ]
    return
  fi
  [ "$(cat "$T/o")" = out ]
  [ "$(cat "$T/e")" = err ]
}

@test "sessions: 10 MB of output: bounded result, full spill file" {
  run api '{"id":1,"op":"open","session":"s","workdir":"'"$WORK"'"}' \
           '{"id":2,"op":"exec","session":"s","command":"head -c 10000000 /dev/zero | tr \"\\\\0\" x"}'
  [ "$status" -eq 0 ]
  [ "$(field exit_code)" = 0 ]
  [ "$(field truncated)" = true ]
  spill=$(field spill_path)
  [ "$(stat -c %s "$spill")" -eq 10000000 ]
  out=$(field output)
  [ "${#out}" -lt 51000 ]
  [[ "$out" == *"OUTPUT TRUNCATED"*"chars omitted out of 10,000,000 total"* ]]
  # The spill file is the client's: it outlives the session.
  run api '{"id":3,"op":"close","session":"s"}'
  [ "$(stat -c %s "$spill")" -eq 10000000 ]
  rm -f "$spill"
}

@test "sessions: exec on a terminal, or not_supported naming the backend (never pipes)" {
  # local, docker, singularity, ssh, direct modal and daytona give a
  # terminal (tests/pty.bats runs with each); managed modal refuses in
  # words, before anything runs.
  run api '{"id":1,"op":"open","session":"s","workdir":"'"$WORK"'"}' \
          '{"id":2,"op":"exec","session":"s","command":"tty","pty":{}}'
  echo "$output"
  case $BACKEND/${MODAL_MODE:-} in
    local/*|docker/*|singularity/*|ssh/*|modal/direct|modal/|daytona/*) [[ "$(field stdout)" == /dev/pts/* ]] ;;
    *)
      # (by id: a cloud session's open says its progress first)
      answer=$(printf '%s\n' "$output" | grep -F '{"id":2,')
      [[ "$answer" == *'"id":2,"ok":false,"error":{"code":"not_supported","message":"the '"$BACKEND"' backend cannot run a command on a terminal (pty)'* ]]
      # ... and says why, where the reason is the remote API's
      case "$BACKEND/${MODAL_MODE:-}" in
        modal/managed) [[ "$answer" == *"in managed mode the gateway's exec has no terminal"*"modal.mode direct gives one"* ]] ;;
      esac ;;
  esac
}

@test "sessions: binary and invalid UTF-8 output is repaired, never fatal" {
  run api '{"id":1,"op":"open","session":"s","workdir":"'"$WORK"'"}' \
           '{"id":2,"op":"exec","session":"s","command":"printf \"ok\\\\377\\\\376\\\\000end\""}'
  [ "$status" -eq 0 ]
  [ "$(field exit_code)" = 0 ]
  [ "$(field stdout)" = "ok���end" ]
}

@test "sessions: a background grandchild holding the pipe does not hang the command" {
  al session open s
  marker=$((RANDOM + 1000))
  start=$(date +%s)
  run al exec s -- "setsid sleep $marker.5 & echo started"
  [ "$status" -eq 0 ]
  [ "$output" = started ]
  [ "$(( $(date +%s) - start ))" -lt 10 ]
  al session close s
  gone "^sleep $marker\."
}

@test "sessions: 20 sessions at once" {
  for i in $(seq 20); do al session open "c$i" & done
  wait
  for i in $(seq 20); do al exec "c$i" -- "echo \$((6 * $i))" > "$T/c.$i" & done
  wait
  for i in $(seq 20); do [ "$(cat "$T/c.$i")" = $((6 * i)) ]; done
  run al session ls
  [ "$(echo "$output" | grep -c '^c[0-9]')" -eq 20 ]
}

@test "sessions: 200 commands in one session" {
  lines=()
  lines+=('{"id":0,"op":"open","session":"s","workdir":"'"$WORK"'"}')
  for i in $(seq 200); do lines+=('{"id":'"$i"',"op":"exec","session":"s","command":"n=$((${n:-0}+1)); export n; echo $n"}'); done
  start=$(date +%s%N)
  run api "${lines[@]}"
  end=$(date +%s%N)
  echo "200 commands: $(( (end - start) / 200000000 )) ms each (approx)" >&3
  [ "$status" -eq 0 ]
  [ "$(echo "$output" | grep -c '"event":"result"')" -eq 200 ]
  [ "$(field stdout)" = 200 ]
}

@test "sessions: background job lifecycle" {
  if [ "${MODAL_MODE:-}" = managed ]; then
    # managed Modal takes a command's input only with its start
    # (docs/modal.md): given with the exec, not by job_stdin later
    run api '{"id":1,"op":"open","session":"s","workdir":"'"$WORK"'"}' \
            '{"id":2,"op":"exec","session":"s","background":true,"stdin":"hello\n","command":"echo begin; read line; echo got $line; exit 3"}'
    job=$(field job)
    [ "$job" -ge 1 ]
  else
    run api '{"id":1,"op":"open","session":"s","workdir":"'"$WORK"'"}' \
            '{"id":2,"op":"exec","session":"s","background":true,"command":"echo begin; read line; echo got $line; exit 3"}'
    job=$(field job)
    [ "$job" -ge 1 ]
    run api '{"id":3,"op":"jobs","session":"s"}'
    [ "$(field jobs.0.state)" = running ]
    run api '{"id":4,"op":"job_stdin","session":"s","job":'"$job"',"data":"hello\n","eof":true}'
    [ "$(field ok)" = true ]
  fi
  wait_job_state "$job" exited 0
  [ "$(field state)" = exited ]
  [ "$(field exit_code)" = 3 ]
  [ "$(field data)" = "begin
got hello" ] || [ "$(field data)" = "begin
got hello
" ]
  off=$(field next_offset)
  run api '{"id":6,"op":"job_output","session":"s","job":'"$job"',"offset":'"$off"'}'
  [ "$(field data)" = "" ]
  # kill a running one
  run api '{"id":7,"op":"exec","session":"s","background":true,"command":"sleep 300"}'
  job2=$(field job)
  run api '{"id":8,"op":"kill","session":"s","job":'"$job2"'}'
  wait_job_state "$job2" killed
  [ "$(field state)" = killed ]
}

@test "sessions: a job's end of input reaches it while a later job runs (no other leader holds its pipe)" {
  [ "${MODAL_MODE:-}" = managed ] && skip "managed Modal takes a command's input only with its start (docs/modal.md)"
  run api '{"id":1,"op":"open","session":"s","workdir":"'"$WORK"'"}' \
          '{"id":2,"op":"exec","session":"s","background":true,"command":"cat; echo done"}'
  job=$(field job)
  [ "$job" -ge 1 ]
  run api '{"id":3,"op":"exec","session":"s","background":true,"command":"sleep 60"}'
  job2=$(field job)
  run api '{"id":4,"op":"job_stdin","session":"s","job":'"$job"',"data":"x\n","eof":true}'
  [ "$(field ok)" = true ]
  wait_job_state "$job" exited 0
  [ "$(field state)" = exited ]
  [ "$(field data)" = "x
done" ] || [ "$(field data)" = "x
done
" ]
  api '{"id":6,"op":"kill","session":"s","job":'"$job2"'}'
}

@test "sessions: a session with a running job is not reaped as idle; an idle one is" {
  SESSION_ENV="AIRLOCK_SESSION_IDLE_TIMEOUT=2" setup
  # (busy gets its job before idle opens: a slow open, of a docker
  # container say, must not let the idle timeout pass in between.)
  al session open busy
  run api '{"id":1,"op":"exec","session":"busy","background":true,"command":"sleep 30"}'
  [[ "$output" == *'"ok":true'* ]]
  al session open idle
  sleep 4
  run al session ls
  echo "$output" | grep -q '^busy '
  ! echo "$output" | grep -q '^idle ' || false
}

@test "sessions: the daemon killed: sessions reported lost, never re-created, nothing left" {
  al session open s
  marker=$((RANDOM + 1000))
  run api '{"id":1,"op":"exec","session":"s","background":true,"command":"sleep '"$marker"'.6"}'
  pid=$(pgrep -u "$TEST_USER" -f "^airlock daemon" | while read -r p; do
          grep -qz "XDG_RUNTIME_DIR=$RUNDIR" "/proc/$p/environ" && echo "$p"; done)
  kill -KILL "$pid"
  # (ssh: a remote job outlives its daemon as it outlives a dropped
  # connection, by design: its remote deadline or the sweep of stale job
  # directories ends it, ssh.bats; here teardown does.  modal: the
  # sandbox ends itself once its lease runs out, modal.lease, which
  # run-tests.sh sets to 5 s.  daytona: no lease watches the daemon from
  # the sandbox yet, so nothing promises that its command ends; with the
  # double it mostly did within 5 s, but once, in a loaded full run, not,
  # and why it mostly does is not understood yet: a known gap, noted.)
  if [ "$BACKEND" = modal ]; then
    gone "^sleep $marker\." 20
  elif [ "$BACKEND" != ssh ] && [ "$BACKEND" != daytona ]; then
    gone "^sleep $marker\."
  fi
  run al exec s -- true
  [ "$status" -ne 0 ]
  [[ "$output" == *"lost"* ]]
  run al session ls
  [[ "$output" == *"s"*"lost"* ]]
  al session close s
  run al session open s
  [ "$status" -eq 0 ]
}

@test "sessions: malformed API input gets errors and the connection stays usable" {
  run api 'this is not json' '[1,2]' '{"id":1}' '{"id":2,"op":42}' '{"id":3,"op":"fly"}' \
          '{"id":4,"op":"exec","session":"nope","command":"true"}' \
          '{"id":5,"op":"exec","session":7}' '{"id":6,"op":"ping"}{"id":9}' \
          '{"id":10,"op":"open","workdir":"/tmp"}' '{"id":11,"op":"ping"}'
  [ "$status" -eq 0 ]
  echo "$output"
  [[ "${lines[0]}" == *'"code":"bad_json"'* ]]
  [[ "${lines[1]}" == *'"code":"bad_request"'* ]]
  [[ "${lines[2]}" == *'"code":"missing_field"'*'op'* ]]
  [[ "${lines[3]}" == *'"code":"wrong_type"'* ]]
  [[ "${lines[4]}" == *'"code":"unknown_op"'*fly* ]]
  [[ "${lines[5]}" == *'"code":"no_session"'* ]]
  [[ "${lines[6]}" == *'"code":"wrong_type"'*session* ]]
  [[ "${lines[7]}" == *'"code":"bad_json"'*"one JSON object per line"* ]]
  [[ "${lines[8]}" == *'"id":10'*'"code":"missing_field"'*session* ]]
  [[ "${lines[9]}" == *'"id":11,"ok":true'* ]]
}

@test "sessions: a command queued behind another client's is answered, even after EOF" {
  al session open s
  (al exec s -- 'sleep 2; echo first' > "$T/q1" 2>&1) &
  sleep 0.5
  run api '{"id":1,"op":"exec","session":"s","command":"echo second"}'
  wait
  [ "$(cat "$T/q1")" = first ]
  [ "$(field stdout)" = second ]
}

@test "sessions: closing a session answers the commands queued on it" {
  al session open s
  (al exec s -- 'sleep 3' > /dev/null 2>&1 || true) &
  sleep 0.5
  (api '{"id":1,"op":"exec","session":"s","command":"echo never"}' > "$T/queued" 2>&1) &
  sleep 0.5
  al session close s
  wait
  grep -q '"code":"session_lost"' "$T/queued"
  ! grep -q never "$T/queued" || false
}

@test "sessions: finished jobs are pruned after jobs.finished_ttl" {
  SESSION_ENV="AIRLOCK_JOBS_FINISHED_TTL=1" setup
  run api '{"id":1,"op":"open","session":"s","workdir":"'"$WORK"'"}' \
          '{"id":2,"op":"exec","session":"s","background":true,"command":"true"}'
  job=$(field job)
  sleep 3
  run api '{"id":3,"op":"job_output","session":"s","job":'"$job"'}'
  [[ "$output" == *'"code":"no_job"'* ]]
}

@test "sessions: local.* settings shape the sandbox" {
  # local.* keys mean nothing to other backends; docker.bats checks the
  # docker.* ones the same way.
  only_backend local
  mkdir -p "$T/cfg-ro"; echo from-config > "$T/cfg-ro/f"
  SESSION_ENV="AIRLOCK_LOCAL_NETWORK=none AIRLOCK_LOCAL_RO_BINDS=[\"$T/cfg-ro:/mnt/cfg\"]" setup
  al session open s
  run al exec s -- 'cat /mnt/cfg/f; ip -o link | grep -c UP'
  [ "${lines[0]}" = from-config ]
  [ "${lines[1]}" = 0 ]
  rm -rf "$T/cfg-ro"
}

@test "sessions: an invalid setting is an error naming the key and where it came from" {
  SESSION_ENV="AIRLOCK_EXEC_TIMEOUT=soon" setup
  run al session open s
  [ "$status" -ne 0 ]
  [[ "$output" == *AIRLOCK_EXEC_TIMEOUT*soon* ]]
  echo '{"backend": "lokal"}' > "$T/bad-config.json"
  chmod 0644 "$T/bad-config.json"
  SESSION_ENV="AIRLOCK_CONFIG=$T/bad-config.json" setup
  run al session open s
  [ "$status" -ne 0 ]
  [[ "$output" == *"$T/bad-config.json"*backend*lokal* ]]
}

@test "sessions: airlock shell, for a person" {
  al session open s
  printf 'cd /tmp\nexport X=42\necho "$X in $PWD"\nfalse\nexit\n' > "$T/typed"
  as_user "$AIRLOCK" shell s < "$T/typed" > "$T/shell.out" 2> "$T/shell.err"
  [ "$(cat "$T/shell.out")" = "42 in /tmp" ]
  grep -q "\[s $(session_workdir)\]\\$ \[s /tmp\]" "$T/shell.err"
  grep -q "\[s /tmp\]! " "$T/shell.err"      # the last command failed
  run al shell nope < /dev/null
  [ "$status" -eq 1 ]
  [[ "$output" == *"no usable session"* ]]
}

@test "sessions: closing leaves no process behind" {
  al session open s
  marker=$((RANDOM + 1000))
  run api '{"id":1,"op":"exec","session":"s","background":true,"command":"setsid sleep '"$marker"'.7"}'
  for i in $(seq 50); do pgrep -f "^sleep $marker.7" >/dev/null && break; sleep 0.1; done
  al session close s
  gone "^sleep $marker\."
  gone "airlock-supervisor.*" || true
  ! pgrep -u "$TEST_USER" -f airlock-supervisor || false
  if [ "$BACKEND" = ssh ]; then
    # Nor an ssh master of the session, nor a remote job directory.
    for i in $(seq 50); do ssh_masters > /dev/null || break; sleep 0.1; done
    ! ssh_masters || false
    [ -z "$(find "$SSH_HOME/.airlock" -type f 2>/dev/null)" ] || { find "$SSH_HOME/.airlock"; false; }
  fi
}
