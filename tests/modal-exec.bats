#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# Commands on the modal backend (direct) under faults, against the Modal
# double (run-tests.sh starts it: MODAL_SERVER_URL, MODAL_DOUBLE_STATE,
# and the credentials in BACKEND_ENV).  The double's faults.json breaks
# output streams mid-way, fails calls with UNAVAILABLE, expires router
# tokens and ends sandboxes behind the client's back.  Its sandboxes are
# airlock local sandboxes of this host, so pgrep sees what is left.

load helpers

setup () {
  [ -n "${MODAL_DOUBLE_STATE:-}" ] || skip "needs the Modal double (run-tests.sh starts it: MODAL_SESSION_SUITES)"
  RUNDIR="$T/xdg-mx-$BATS_TEST_NUMBER"
  mkdir -p "$RUNDIR"
  chown "$TEST_USER" "$RUNDIR"
  chmod 0700 "$RUNDIR"
  export EXTRA_ENV="XDG_RUNTIME_DIR=$RUNDIR AIRLOCK_BACKEND=modal AIRLOCK_DAEMON_IDLE_EXIT=30 ${BACKEND_ENV:-}"
  rm -f "$MODAL_DOUBLE_STATE/faults.json"
  LOG0=$(cat "$MODAL_DOUBLE_STATE/log.jsonl" 2>/dev/null | wc -l)
}

teardown () {
  [ -n "${MODAL_DOUBLE_STATE:-}" ] || return 0
  rm -f "$MODAL_DOUBLE_STATE/faults.json"
  stop_daemon
}

al () { as_user timeout -k 5 180 "$AIRLOCK" "$@"; }

faults () {
  printf '%s\n' "$1" > "$MODAL_DOUBLE_STATE/faults.json"
  chmod 0644 "$MODAL_DOUBLE_STATE/faults.json"
}

# This test's calls in the double's log: "RPC CODE" lines.
calls () {
  tail -n +"$((LOG0 + 1))" "$MODAL_DOUBLE_STATE/log.jsonl" | python3 -c 'import json,sys
for l in sys.stdin:
    r = json.loads(l); print(r["rpc"], r.get("code"))'
}

@test "modal exec: output streams broken mid-way resume from their offsets: complete, in order, nothing doubled" {
  al session open s
  faults '{"stdio_break": {"after_bytes": 700, "count": 4}}'
  # (stdout and stderr apart: on one terminal their chunks interleave)
  al exec s -- 'for i in $(seq 1 600); do echo "line $i"; echo "err $i" >&2; done' \
    > "$T/mx.out" 2> "$T/mx.err"
  seq 1 600 | sed 's/^/line /' > "$T/mx.want"
  diff "$T/mx.want" "$T/mx.out"
  seq 1 600 | sed 's/^/err /' > "$T/mx.want"
  diff "$T/mx.want" "$T/mx.err"
  [ "$(calls | grep -c '^TaskExecStdioRead UNAVAILABLE')" -ge 1 ]
}

@test "modal exec: UNAVAILABLE on starting and on stdin is retried; the command runs once" {
  al session open s
  faults '{"errors": {"TaskExecStart": {"code": "UNAVAILABLE", "count": 2}, "TaskExecStdinWrite": {"code": "UNAVAILABLE", "count": 1, "after": true}}}'
  run al exec s -- 'echo ran >> ./runs; wc -l < ./runs'
  echo "$output"
  [ "$status" -eq 0 ]
  [ "$output" = 1 ]
  [ "$(calls | grep -c '^TaskExecStart UNAVAILABLE')" -eq 2 ]
}

@test "modal exec: the script and its environment are in no process's argv; a command sees exactly its env" {
  al session open s
  secret="s3cret-$RANDOM$RANDOM"
  nap="3.$((RANDOM + 1000))"
  # through the API, so that not even the client's own argv holds them
  printf '%s\n' '{"id":1,"op":"exec","session":"s","command":"W='"$secret"'-inline; sleep '"$nap"'; echo \"[$TOKENISH]\"","env":{"TOKENISH":"'"$secret"'"}}' |
    as_user timeout -k 5 60 "$AIRLOCK" serve > "$T/mx-argv.out" 2>&1 &
  for i in $(seq 50); do pgrep -f "^sleep $nap\$" > /dev/null && break; sleep 0.1; done
  pgrep -f "^sleep $nap\$" > /dev/null
  run ! grep -l -a -F "$secret" /proc/[0-9]*/cmdline 2>/dev/null
  wait
  grep -q "\[$secret\]" "$T/mx-argv.out"
}

@test "modal exec: a timeout ends the command's whole tree in the sandbox: 124" {
  al session open s
  marker=$((RANDOM + 3000))
  run al exec s --timeout 2 -- "sleep $marker.5 & sleep $marker.6"
  [ "$status" -eq 124 ]
  for i in $(seq 100); do pgrep -f "^sleep $marker\\.[56]" > /dev/null || break; sleep 0.1; done
  run ! pgrep -f "^sleep $marker\\.[56]"
  run al exec s -- 'echo usable'
  [ "$output" = usable ]
}

@test "modal exec: an expired router token is fetched again, unseen by the command" {
  al session open s
  faults '{"router_token_ttl": 2}'
  run al exec s -- 'echo one'
  [ "$output" = one ]
  sleep 3
  run al exec s -- 'echo two'
  [ "$status" -eq 0 ]
  [ "$output" = two ]
}

@test "modal exec: the sandbox ended behind our back: the session is lost, said so, never re-created" {
  al session open s
  marker=$((RANDOM + 3000))
  (r=0; al exec s -- "sleep $marker.7" > "$T/mx-lost.out" 2>&1 || r=$?; echo "rc=$r" >> "$T/mx-lost.out") &
  for i in $(seq 100); do pgrep -f "^sleep $marker.7" > /dev/null && break; sleep 0.1; done
  faults '{"terminate": ["*"]}'
  for i in $(seq 300); do grep -q '^rc=' "$T/mx-lost.out" && break; sleep 0.1; done
  rm -f "$MODAL_DOUBLE_STATE/faults.json"
  cat "$T/mx-lost.out"
  grep -q "has ended" "$T/mx-lost.out"
  grep -q '^rc=' "$T/mx-lost.out"
  run ! grep -q '^rc=0' "$T/mx-lost.out"
  run al exec s -- 'echo again'
  [ "$status" -ne 0 ]
  [[ "$output" == *lost* || "$output" == *ended* ]]
  [ "$(calls | grep -c '^SandboxCreate OK')" -eq 1 ]
}

@test "modal exec on a terminal: Modal allocates it (pty_info); nothing secret passes through it; the session's state is kept" {
  al session open s
  secret="s3cret-$RANDOM$RANDOM"
  # The terminal echoes what it is given: were the script or the env
  # written to it, the secret would be in the output as it is.
  printf '%s\n' \
    '{"id":1,"op":"exec","session":"s","command":"echo \"[$TOKENISH]\" | tr s S; echo to-stderr >&2; stty size; cd /tmp; export KEPT=yes","env":{"TOKENISH":"'"$secret"'"},"pty":{"rows":30,"cols":100,"term":"vt100"}}' \
    '{"id":2,"op":"exec","session":"s","command":"pwd; echo \"$KEPT\"; ls -A /tmp/.airlock-jobs | wc -l"}' |
    as_user timeout -k 5 120 "$AIRLOCK" serve > "$T/mx-pty.out" 2>&1
  cat "$T/mx-pty.out"
  run ! grep -F "$secret" "$T/mx-pty.out"
  python3 - "$T/mx-pty.out" "${secret/s/S}" <<'PY'
import json, sys
res = {}
for l in open(sys.argv[1]):
    m = json.loads(l)
    if m.get("event") == "result":
        res[m["id"]] = m
one, two = res[1], res[2]
# one stream, the terminal's line endings, its size
assert one["exit_code"] == 0 and one["stderr"] == "", one
assert one["stdout"] == "[%s]\r\nto-stderr\r\n30 100\r\n" % sys.argv[2], one
# the state report came (cd, export), and the job directories are gone
# but the asking command's own
assert two["stdout"] == "/tmp\nyes\n1\n", two
PY
  # What Modal was asked: the terminal at the start, as the SDK asks it;
  # the terminal exec itself got no input (the script went to "prep").
  tail -n +"$((LOG0 + 1))" "$MODAL_DOUBLE_STATE/log.jsonl" | python3 -c '
import json, sys
recs = [json.loads(l) for l in sys.stdin]
starts = [r["request"] for r in recs if r["rpc"] == "TaskExecStart" and "pty_info" in r["request"]]
assert len(starts) == 1, starts
pty = starts[0]
assert pty["pty_info"] == {"enabled": True, "winsz_rows": 30, "winsz_cols": 100, "env_term": "vt100",
                           "pty_type": "PTY_TYPE_SHELL", "no_terminate_on_idle_stdin": True}, pty
assert pty["command_args"][4] == "pty", pty["command_args"][:6]
writes = [r for r in recs if r["rpc"] == "TaskExecStdinWrite" and r["request"]["exec_id"] == pty["exec_id"]]
assert not writes, writes
preps = [r["request"] for r in recs if r["rpc"] == "TaskExecStart" and r["request"]["command_args"][4:5] == ["prep"]]
assert len(preps) == 1 and "pty_info" not in preps[0], preps
'
}

@test "modal exec on a terminal: a kill ends the job's whole tree (through the terminal's session)" {
  al session open s
  marker=$((RANDOM + 3000))
  out="$T/mx-ptykill.out"
  : > "$out"
  chmod 0666 "$out"
  {
    echo '{"id":1,"op":"exec","session":"s","command":"sleep '"$marker"'.5 & setsid sleep '"$marker"'.6 & bash -i","background":true,"pty":{}}'
    for i in $(seq 100); do pgrep -f "^sleep $marker\\.6" > /dev/null && break; sleep 0.1; done
    job=$(sed -n 's/^{"id":1,"ok":true,"job":\([0-9]*\),.*/\1/p' "$out")
    echo '{"id":2,"op":"kill","session":"s","job":'"${job:-0}"'}'
    echo '{"id":3,"op":"job_wait","session":"s","job":'"${job:-0}"',"timeout":30}'
  } | as_user timeout -k 5 60 "$AIRLOCK" serve >> "$out" 2>&1
  cat "$out"
  grep -F '{"id":3,"ok":true,' "$out" | grep -F '"cause":"killed"'
  for i in $(seq 100); do pgrep -f "^sleep $marker\\.[56]" > /dev/null || break; sleep 0.1; done
  run ! pgrep -f "^sleep $marker\\.[56]"
}
