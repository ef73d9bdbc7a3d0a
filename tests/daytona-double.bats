#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# The Daytona double's fidelity, proven: the official TypeScript SDK
# (@daytonaio/sdk, pinned by tests/doubles/daytona-sdk/package-lock.json,
# installed by `make check` into $BUILDDIR/daytona-sdk, never globally)
# runs tests/doubles/daytona-sdk/check.mjs against it unchanged: a
# sandbox created from an image, found by name and by label, a command
# run, a session's sync and async commands with their logs and status,
# a file up and down, a terminal (the toolbox's PTY over a WebSocket), the
# sandbox deleted.  And the double's own promises: its credential only
# from its environment, never its argv; the PTY endpoints' error answers
# and the WebSocket's behaviour, driven by tests/doubles/ws_client.py.

load helpers

setup () {
  [ -n "${DAYTONA_DOUBLE:-}" ] || skip "needs the Daytona double (run-tests.sh starts it: DAYTONA_SUITES)"
  SDK_DIR=$(cd "${BUILDDIR:-build}" && pwd)/daytona-sdk
}

teardown () {
  [ -n "${DAYTONA_DOUBLE:-}" ] || return 0
  local p
  for p in ${BG_PIDS:-}; do kill "$p" 2>/dev/null || true; done
  timeout -k 5 30 curl -sS -X POST "$DAYTONA_DOUBLE/_double/reset" > /dev/null || true
}

@test "daytona double: the official SDK accepts it (create, get, list, exec, session logs, files, delete)" {
  [ -f "$SDK_DIR/.installed" ] || {
    echo "the official SDK is not installed in $SDK_DIR: \`make daytona-sdk\` (make check does it; it needs node, npm and the npm registry)"
    return 1
  }
  cp tests/doubles/daytona-sdk/check.mjs "$SDK_DIR/check.mjs"
  run env -i PATH=/usr/local/bin:/usr/bin:/bin HOME="$SDK_DIR" DAYTONA_DOUBLE="$DAYTONA_DOUBLE" \
    DAYTONA_API_KEY="$DAYTONA_API_KEY" timeout -k 5 240 node "$SDK_DIR/check.mjs"
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "$output" == *"# @daytonaio/sdk "*": "*" checks passed"* ]]
  [[ "$output" != *"not ok"* ]]
}

@test "daytona double: a wrong key is refused with Daytona's 401; the key is in no process's argv" {
  run timeout -k 5 30 curl -sS -H "Authorization: Bearer not-the-key" "$DAYTONA_API_URL/sandbox"
  [[ "$output" == *'"statusCode":401'* || "$output" == *'"statusCode": 401'* ]]
  run timeout -k 5 30 curl -sS -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $DAYTONA_API_KEY" "$DAYTONA_API_URL/sandbox"
  [ "$output" = 200 ]
  run ! grep -l -a -F "$DAYTONA_API_KEY" /proc/[0-9]*/cmdline 2>/dev/null
}

# ---- the toolbox's PTY sessions ----

# A started sandbox of the double (the id in $SB).
dd_sandbox () {
  local state
  SB=$(timeout -k 5 30 curl -sS -H "Authorization: Bearer $DAYTONA_API_KEY" -H 'Content-Type: application/json' \
    -d "{\"name\":\"$1\",\"snapshot\":\"debian:bookworm-slim\"}" "$DAYTONA_API_URL/sandbox" \
    | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])') || return 1
  for _ in $(seq 300); do
    state=$(timeout -k 5 30 curl -sS -H "Authorization: Bearer $DAYTONA_API_KEY" "$DAYTONA_API_URL/sandbox/$SB" \
      | python3 -c 'import json,sys; print(json.load(sys.stdin)["state"])')
    [ "$state" = started ] && return 0
    sleep 0.2
  done
  echo "sandbox $1 did not start (state $state)"
  return 1
}

# METHOD PATH [BODY]: a toolbox call on $SB; the body, then the status on a line of its own.
tb () {
  timeout -k 5 30 curl -sS -X "$1" -w '\n%{http_code}' -H "Authorization: Bearer $DAYTONA_API_KEY" \
    ${3:+-H 'Content-Type: application/json' -d "$3"} "$DAYTONA_DOUBLE/toolbox/$SB$2"
}

# SESSION STEP...: tests/doubles/ws_client.py on the session's /connect.
ws () {
  local s=$1
  shift
  WS_TIMEOUT=15 timeout -k 5 60 python3 tests/doubles/ws_client.py \
    "ws://${DAYTONA_DOUBLE#http://}/toolbox/$SB/process/pty/$s/connect" "$@"
}

# SESSION N: wait until the session has N WebSocket clients (/_double/sandboxes).
pty_clients () {
  local n
  for _ in $(seq 100); do
    n=$(timeout -k 5 30 curl -sS "$DAYTONA_DOUBLE/_double/sandboxes" | python3 -c '
import json, sys
for sb in json.load(sys.stdin):
    for p in sb.get("ptys", []):
        if sb["id"] == sys.argv[1] and p["id"] == sys.argv[2]:
            print(p["clients"])' "$SB" "$1")
    [ "$n" = "$2" ] && return 0
    sleep 0.1
  done
  echo "PTY session $1: $n clients, not $2"
  return 1
}

@test "daytona double: PTY endpoints' errors (400 no id or over 1000, 409 a duplicate, 404 unknown, 410 resize of one not running)" {
  dd_sandbox pty-errors
  run tb POST /process/pty '{}'
  [ "${lines[-1]}" = 400 ]
  [[ "$output" == *'"error": "session ID is required"'* ]]
  run tb POST /process/pty '{"id":""}'
  [ "${lines[-1]}" = 400 ]
  run tb POST /process/pty '{"id":"e1","cols":1001}'
  [ "${lines[-1]}" = 400 ]
  run tb POST /process/pty '{"id":"e1","rows":1001}'
  [ "${lines[-1]}" = 400 ]
  # Unknown fields are ignored, as gin's binding does.
  run tb POST /process/pty '{"id":"e1","lazyStart":true,"colour":"blue"}'
  [ "${lines[-1]}" = 201 ]
  [[ "$output" == *'"sessionId": "e1"'* ]]
  run tb POST /process/pty '{"id":"e1"}'
  [ "${lines[-1]}" = 409 ]
  run tb GET /process/pty/e1
  [ "${lines[-1]}" = 200 ]
  [[ "$output" == *'"cols": 80, "rows": 24'* && "$output" == *'"TERM": "xterm-256color"'* ]]
  [[ "$output" == *'"active": false'* && "$output" == *'"lazyStart": true'* && "$output" == *'"createdAt": "'* ]]
  run tb GET /process/pty
  [ "${lines[-1]}" = 200 ]
  [[ "$output" == '{"sessions": [{"id": "e1"'* ]]
  run tb GET /process/pty/nope
  [ "${lines[-1]}" = 404 ]
  [[ "$output" == *'"error": "PTY session not found"'* ]]
  run tb POST /process/pty/e1/resize '{"cols":100,"rows":30}'
  [ "${lines[-1]}" = 410 ]
  run tb POST /process/pty/nope/resize '{"cols":100,"rows":30}'
  [ "${lines[-1]}" = 410 ]
  run tb POST /process/pty/e1/resize '{"cols":1001,"rows":30}'
  [ "${lines[-1]}" = 400 ]
  run tb GET /process/pty/e1/connect
  [ "${lines[-1]}" = 400 ]
  run tb DELETE /process/pty/nope
  [ "${lines[-1]}" = 404 ]
  run tb DELETE /process/pty/e1
  [ "${lines[-1]}" = 200 ]
  [[ "$output" == *'"message": "PTY session deleted"'* ]]
  run tb GET /process/pty/e1
  [ "${lines[-1]}" = 404 ]
}

@test "daytona double: PTY WebSocket of an unknown session: the error control message, then a close" {
  dd_sandbox pty-unknown
  run ws nope wait-close
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "${lines[0]}" == 'text {"type":"control","status":"error","error":"Failed to connect to PTY session: '* ]]
  [[ "${lines[1]}" == "close 1011"* ]]
}

@test "daytona double: PTY WebSocket: input as binary, text and fragments, ping, the window, cwd and envs; the exit status in the close" {
  dd_sandbox pty-ws
  run tb POST /process/pty '{"id":"w1","cwd":"/tmp","envs":{"FOO":"bar"},"cols":100,"rows":30,"lazyStart":true}'
  [ "${lines[-1]}" = 201 ]
  run ws w1 connected 'send:echo $FOO $TERM $(pwd) $(stty size)\n' 'expect:bar xterm-256color /tmp 30 100' \
    'sendtext:tty\n' 'expect:/dev/pts/[0-9]+' 'frag:echo fr""ag-ok\n' 'expect:[^"]ag-ok' ping:hi \
    'send:exit 3\n' wait-close
  echo "$output"
  [ "$status" -eq 0 ]
  [ "${lines[0]}" = 'text {"type":"control","status":"connected"}' ]
  [ "${lines[1]}" = 'close 1011 {"exitCode":3,"exitReason":"non-zero exit"}' ]
  run tb GET /process/pty/w1
  [ "${lines[-1]}" = 404 ]
  run tb POST /process/pty '{"id":"w2"}'
  run ws w2 connected 'send:exit\n' wait-close
  echo "$output"
  [ "${lines[1]}" = 'close 1000 {"exitCode":0}' ]
}

@test "daytona double: PTY output with no client attached is dropped; a client that leaves does not end the shell; a resize is one SIGWINCH" {
  dd_sandbox pty-attach
  run tb POST /process/pty '{"id":"d1"}'
  [ "${lines[-1]}" = 201 ]
  run tb GET /process/pty/d1
  [[ "$output" == *'"active": true'* ]]
  # The job's output comes after the client has gone.
  run ws d1 connected 'send:trap "echo WINCH-$((1+1))" WINCH; (sleep 1; echo LATE-$((2+3))) &\n' \
    'expect:\[1\] [0-9]+' drop
  echo "$output"
  [ "$status" -eq 0 ]
  sleep 2
  run tb GET /process/pty/d1
  [[ "$output" == *'"active": true'* ]]
  run ws d1 connected 'send:echo AGAIN\n' expect:AGAIN noexpect:LATE-5 close
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "${lines[1]}" == "close 1000"* ]]
  run tb GET /process/pty/d1
  [[ "$output" == *'"active": true'* ]]
  # A second client sees the one SIGWINCH of a resize, and the exit.
  ws d1 connected expect:WINCH-2 sleep:2 noexpect:WINCH-2 wait-close > "$BATS_TEST_TMPDIR/c2" 2>&1 &
  BG_PIDS=$!
  pty_clients d1 1
  run tb POST /process/pty/d1/resize '{"cols":50,"rows":10}'
  [ "${lines[-1]}" = 200 ]
  [[ "$output" == *'"cols": 50, "rows": 10'* ]]
  run ws d1 connected 'send:sleep 1; echo N=$(stty size)\n' 'expect:N=10 50' 'send:kill -HUP $$\n' wait-close
  echo "$output"
  [ "$status" -eq 0 ]
  [ "${lines[1]}" = 'close 1011 {"exitCode":129,"exitReason":"signal 1"}' ]
  wait "$BG_PIDS"
  cat "$BATS_TEST_TMPDIR/c2"
  grep -qxF 'close 1011 {"exitCode":129,"exitReason":"signal 1"}' "$BATS_TEST_TMPDIR/c2"
}

@test "daytona double: /_double/pty-drop ends the clients' TCP connections (no close frame), the shell lives; DELETE kills its tree, closing with 1011 137" {
  dd_sandbox pty-kill
  run tb POST /process/pty '{"id":"k1"}'
  [ "${lines[-1]}" = 201 ]
  ws k1 connected eof > "$BATS_TEST_TMPDIR/c1" 2>&1 &
  BG_PIDS=$!
  pty_clients k1 1
  run timeout -k 5 30 curl -sS -X POST -d "{\"sandbox\":\"$SB\",\"session\":\"k1\"}" "$DAYTONA_DOUBLE/_double/pty-drop"
  [ "$output" = '{"dropped": 1}' ]
  wait "$BG_PIDS"
  cat "$BATS_TEST_TMPDIR/c1"
  grep -qx eof "$BATS_TEST_TMPDIR/c1"
  run tb GET /process/pty/k1
  [[ "$output" == *'"active": true'* ]]
  # A job of its own process group, another behind a child shell: all go.
  ws k1 connected 'send:sleep 4242.5 & sh -c "sleep 4243.5; :" & echo STARTED\n' expect:STARTED wait-close \
    > "$BATS_TEST_TMPDIR/c2" 2>&1 &
  BG_PIDS=$!
  for _ in $(seq 100); do
    [ "$(pgrep -c -f '^sleep 424[23]\.5$')" = 2 ] && break
    sleep 0.1
  done
  [ "$(pgrep -c -f '^sleep 424[23]\.5$')" = 2 ]
  run tb DELETE /process/pty/k1
  [ "${lines[-1]}" = 200 ]
  wait "$BG_PIDS"
  cat "$BATS_TEST_TMPDIR/c2"
  grep -qxF 'close 1011 {"exitCode":137,"exitReason":"SIGKILL"}' "$BATS_TEST_TMPDIR/c2"
  for _ in $(seq 50); do
    pgrep -f '^sleep 424[23]\.5$' > /dev/null || break
    sleep 0.1
  done
  run ! pgrep -f '^sleep 424[23]\.5$'
  run tb GET /process/pty/k1
  [ "${lines[-1]}" = 404 ]
}
