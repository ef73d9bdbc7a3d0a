#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# Commands on the daytona backend under faults, against the Daytona double
# (run-tests.sh starts it: DAYTONA_DOUBLE, DAYTONA_API_URL, DAYTONA_API_KEY).
# The double's fault rules cut reads of a command's log in the middle of
# their body and answer 5xx; its control API deletes a sandbox behind the
# client's back or makes the toolbox unreachable.  The commands run for
# real in the double's sandboxes (airlock local sandboxes on this host), so
# pgrep sees what is left of them.

load helpers

setup () {
  [ -n "${DAYTONA_DOUBLE:-}" ] || skip "needs the Daytona double (run-tests.sh starts it: DAYTONA_SUITES)"
  RUNDIR="$T/xdg-dx-$BATS_TEST_NUMBER"
  mkdir -p "$RUNDIR"
  chown "$TEST_USER" "$RUNDIR"
  chmod 0700 "$RUNDIR"
  export EXTRA_ENV="XDG_RUNTIME_DIR=$RUNDIR AIRLOCK_BACKEND=daytona AIRLOCK_DAEMON_IDLE_EXIT=30 DAYTONA_API_URL=$DAYTONA_API_URL DAYTONA_API_KEY=$DAYTONA_API_KEY"
  ctl DELETE /_double/faults > /dev/null
}

teardown () {
  [ -n "${DAYTONA_DOUBLE:-}" ] || return 0
  ctl DELETE /_double/faults > /dev/null || true
  stop_daemon
  ctl POST /_double/reset > /dev/null || true
}

ctl () {
  timeout -k 5 30 curl -sS -X "$1" ${3:+-H 'Content-Type: application/json' -d "$3"} "$DAYTONA_DOUBLE$2"
}

al () { as_user timeout -k 5 180 "$AIRLOCK" "$@"; }

# How many requests the double answered with a fault of its rules.
faults_applied () {
  ctl GET /_double/log | grep -c '"fault": {' || true
}

@test "daytona exec: a 20 s counter survives log reads cut mid-body and 5xx bursts: complete, in order" {
  al session open s
  ctl POST /_double/faults '[{"match":"GET .*/logs$","after":2,"times":6,"drop_after":40},
                             {"match":"GET .*/logs$","after":12,"times":4,"status":503},
                             {"match":"GET .*/logs$","after":20,"times":3,"drop_after":0}]'
  run al exec s -- 'for i in $(seq 1 400); do echo "line $i"; [ $((i % 20)) = 0 ] && sleep 1; done; echo done >&2'
  [ "$status" -eq 0 ]
  printf '%s\n' "$output" > "$T/counter.out"
  seq 1 400 | sed 's/^/line /' > "$T/counter.want"
  echo done >> "$T/counter.want"
  diff "$T/counter.want" "$T/counter.out"
  [ "$(faults_applied)" -ge 10 ]
}

@test "daytona exec: 1 MB of binary output arrives byte for byte (the spill file is the raw output)" {
  al session open s
  run api_exec s 'head -c 1000000 /dev/urandom > /tmp/r.bin; md5sum < /tmp/r.bin | cut -c1-32'
  sum=$output
  [ ${#sum} -eq 32 ]
  spill=$(printf '%s\n' '{"id":1,"op":"exec","session":"s","command":"cat /tmp/r.bin"}' |
    as_user timeout -k 5 120 "$AIRLOCK" serve | python3 -c 'import json,sys
for l in sys.stdin:
    v = json.loads(l)
    if v.get("spill_path"): print(v["spill_path"])')
  [ -n "$spill" ]
  [ "$(stat -c %s "$spill")" -eq 1000000 ]
  [ "$(md5sum < "$spill" | cut -c1-32)" = "$sum" ]
  rm -f "$spill"
}

@test "daytona exec: the sandbox deleted behind our back: the session is lost, said so, never re-created" {
  al session open s
  marker=$((RANDOM + 2000))
  (r=0; al exec s -- "sleep $marker.7" > "$T/lost.out" 2>&1 || r=$?; echo "rc=$r" >> "$T/lost.out") &
  for i in $(seq 100); do pgrep -f "^sleep $marker.7" > /dev/null && break; sleep 0.1; done
  pgrep -f "^sleep $marker.7" > /dev/null
  name=$(ctl GET /_double/sandboxes | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["name"])')
  ctl POST "/_double/sandbox/$name/vanish" > /dev/null
  for i in $(seq 150); do grep -q '^rc=' "$T/lost.out" && break; sleep 0.1; done
  cat "$T/lost.out"
  grep -q "no longer exists (deleted outside airlock); it is not re-created" "$T/lost.out"
  grep -q '^rc=' "$T/lost.out"
  run ! grep -q '^rc=0' "$T/lost.out"
  run al exec s -- 'echo again'
  [ "$status" -ne 0 ]
  [[ "$output" == *lost* ]]
  # No second sandbox, ever.
  [ "$(ctl GET /_double/log | grep -c '"method": "POST", "path": "/api/sandbox"')" -eq 1 ]
  [ "$(ctl GET /_double/sandboxes)" = "[]" ]
}

@test "daytona exec: a timeout while the toolbox cannot be reached: 124, and the command dies in the sandbox" {
  al session open s
  marker=$((RANDOM + 2000))
  # Every toolbox call fails from the start of the command on (its start
  # excepted: the first two calls of it get through).
  ctl POST /_double/faults '{"match":"(GET|POST) /toolbox/.*/(logs|execute)$","times":100000,"drop_after":0}'
  run al exec s --timeout 3 -- "sleep $marker.8"
  echo "$output"
  [ "$status" -eq 124 ] || [ "$status" -eq 143 ]
  pgrep -f "^sleep $marker.8" > /dev/null || true
  ctl DELETE /_double/faults > /dev/null
  # The kill is sent once the toolbox answers, or the remote deadline
  # (the wrapper's own) ends it: gone either way.
  for i in $(seq 150); do pgrep -f "^sleep $marker.8" > /dev/null || break; sleep 0.1; done
  run ! pgrep -f "^sleep $marker.8"
  run al exec s -- 'echo usable'
  [ "$output" = usable ]
}

@test "daytona exec: background jobs run side by side with commands, each its own toolbox session" {
  al session open s
  run api_lines '{"id":1,"op":"open","session":"b","workdir":"/tmp"}' \
    '{"id":2,"op":"exec","session":"b","background":true,"command":"sleep 2; echo bg-done"}' \
    '{"id":3,"op":"exec","session":"b","command":"echo fg"}'
  [[ "$output" == *'"stdout":"fg'* ]]
  [ "$(ctl GET /_double/log | grep -c '"method": "POST", "path": "/toolbox/[^"]*/process/session"')" -ge 2 ]
}

# The PTY sessions the double has now: "SANDBOX SANDBOX-ID SESSION" lines.
ptys () {
  ctl GET /_double/sandboxes | python3 -c 'import json,sys
for b in json.load(sys.stdin):
    for p in b.get("ptys", []):
        print(b["name"], b["id"], p["id"])'
}

# `sleep $1` on a terminal of session s, in the background, its output and
# then "rc=STATUS" into $2; back once it runs, with its PTY session as
# PTY_SANDBOX, PTY_SANDBOX_ID and PTY_SESSION.
start_terminal_sleep () {
  local out=$2
  (r=0; al exec s --pty -- "echo before; sleep $1; echo after" > "$out" 2>&1 || r=$?; echo "rc=$r" >> "$out") &
  for i in $(seq 150); do pgrep -f "^sleep $1" > /dev/null && break; sleep 0.1; done
  pgrep -f "^sleep $1" > /dev/null
  run ptys
  [ "${#lines[@]}" -eq 1 ]
  read -r PTY_SANDBOX PTY_SANDBOX_ID PTY_SESSION <<< "${lines[0]}"
}

@test "daytona pty: the terminal's WebSocket cut mid-job: lost, saying a terminal cannot be resumed, and killed in the sandbox" {
  al session open s
  marker=$((RANDOM + 2000))
  start_terminal_sleep "$marker.5" "$T/cut.out"
  ctl POST /_double/pty-drop '{"sandbox":"'"$PTY_SANDBOX"'","session":"'"$PTY_SESSION"'"}'
  for i in $(seq 150); do grep -q '^rc=' "$T/cut.out" && break; sleep 0.1; done
  cat "$T/cut.out"
  grep -q "before" "$T/cut.out"
  grep -q "the WebSocket connection broke" "$T/cut.out"
  grep -q "a terminal cannot be resumed" "$T/cut.out"
  grep -q '^rc=' "$T/cut.out"
  run ! grep -q '^rc=0' "$T/cut.out"
  run ! grep -q "after" "$T/cut.out"
  # Its PTY session deleted: the shell's tree is gone.
  for i in $(seq 100); do pgrep -f "^sleep $marker.5" > /dev/null || break; sleep 0.1; done
  run ! pgrep -f "^sleep $marker.5"
  [ -z "$(ptys)" ]
  run al exec s --pty -- 'echo usable'
  [[ "$output" == *usable* ]]
}

@test "daytona pty: the PTY session deleted behind our back: the job ends (137), and the next one runs" {
  al session open s
  marker=$((RANDOM + 2000))
  start_terminal_sleep "$marker.6" "$T/del.out"
  timeout -k 5 30 curl -sS -X DELETE -H "Authorization: Bearer $DAYTONA_API_KEY" \
    "$DAYTONA_DOUBLE/toolbox/$PTY_SANDBOX_ID/process/pty/$PTY_SESSION"
  for i in $(seq 400); do grep -q '^rc=' "$T/del.out" && break; sleep 0.1; done
  cat "$T/del.out"
  grep -q '^rc=137' "$T/del.out"
  run ! pgrep -f "^sleep $marker.6"
  run al exec s --pty -- 'echo usable'
  [[ "$output" == *usable* ]]
}

@test "daytona files: through the files API, 5xx and cut downloads are retried; a sandbox deleted meanwhile is said so" {
  al session open s
  H=$(mktemp -d "$T/dfiles.XXXXXX")
  chown "$TEST_USER" "$H"
  as_user bash -c "mkdir $H/src && for i in \$(seq 60); do head -c \$((i * 997)) /dev/urandom > $H/src/f\$i; done"
  ctl POST /_double/faults '[{"match":"POST .*/files/bulk-upload$","status":503,"times":2},
                             {"match":"GET .*/files/download$","drop_after":5000,"times":1}]'
  run al cp "$H/src" s:/tmp/up
  echo "status $status: $output"
  [ "$status" -eq 0 ] || { tail -n 30 "$RUNDIR/airlock/daemon.log"; ctl GET /_double/log | tail -n 12; false; }
  run al cp s:/tmp/up "$H/back"
  echo "status $status: $output"
  [ "$status" -eq 0 ] || { tail -n 30 "$RUNDIR/airlock/daemon.log"; ctl GET /_double/log | tail -n 12; false; }
  diff -r "$H/src" "$H/back"
  [ "$(faults_applied)" -eq 3 ]
  # one request each way, each try: not one per file
  [ "$(ctl GET /_double/log | grep -c '/files/bulk-upload')" -eq 3 ]
  [ "$(ctl GET /_double/log | grep -c '/files/download')" -eq 2 ]
  # deleted while an upload is on its way
  ctl POST /_double/faults '{"match":"POST .*/files/bulk-upload$","delay_ms":3000}'
  (r=0; al cp "$H/src" s:/tmp/up2 > "$T/cplost.out" 2>&1 || r=$?; echo "rc=$r" >> "$T/cplost.out") &
  for i in $(seq 50); do ctl GET /_double/log | grep -q '"fault": {"match": "POST' && break; sleep 0.1; done
  name=$(ctl GET /_double/sandboxes | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["name"])')
  ctl POST "/_double/sandbox/$name/vanish" > /dev/null
  for i in $(seq 150); do grep -q '^rc=' "$T/cplost.out" && break; sleep 0.1; done
  cat "$T/cplost.out"
  grep -q "no longer exists" "$T/cplost.out"
  grep -q '^rc=' "$T/cplost.out"
  run ! grep -q '^rc=0' "$T/cplost.out"
  [ -z "$(find "$RUNDIR" -name 'transfer.*')" ]
  rm -rf "$H"
}

# A command through the API: its stdout.
api_exec () {
  printf '%s\n' '{"id":1,"op":"exec","session":"'"$1"'","command":'"$(python3 -c 'import json,sys; print(json.dumps(sys.argv[1]))' "$2")"'}' |
    as_user timeout -k 5 120 "$AIRLOCK" serve | python3 -c 'import json,sys
for l in sys.stdin:
    v = json.loads(l)
    if v.get("event") == "result" or "exit_code" in v: print(v.get("stdout", "").strip())'
}

api_lines () { printf '%s\n' "$@" | as_user timeout -k 5 120 "$AIRLOCK" serve; }
