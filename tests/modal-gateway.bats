#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# The managed Modal gateway double itself (tests/doubles/modal-gateway),
# driven with curl: the protocol the C client is written against
# (tests/doubles/README.md), every scriptable fault, the request log.
#
# setup_file starts one double in its no-airlock mode (commands as plain
# subprocesses), as an unprivileged user: $OTHER_USER when run-tests.sh
# set one, else nobody.  The tests marked "airlock" start a second one
# with --airlock $AIRLOCK and skip where run-tests.sh exported no
# installed airlock; MODAL_GATEWAY_AIRLOCK=1 runs every test with one.
# Runs by hand as root: `bats tests/modal-gateway.bats`.

bats_require_minimum_version 1.5.0

DOUBLES=${STANDIN_DIR:-$BATS_TEST_DIRNAME/doubles}

# start_double NAME [ARGS...]: a double as the run-as user, its state in
# $STATE_ROOT/NAME, the token in $STATE_ROOT/NAME.token; prints its URL.
start_double () {
  local name=$1; shift
  local state="$STATE_ROOT/$name" tokfile="$STATE_ROOT/$name.token" port=
  mkdir -p "$state"
  od -An -N12 -tx1 /dev/urandom | tr -d ' \n' > "$tokfile"
  chmod 0644 "$tokfile"
  [ -z "$RUN_AS" ] || chown "$RUN_AS" "$state" "$tokfile"
  local -a cmd=(env -i PATH=/usr/local/bin:/usr/bin:/bin HOME="$state"
    MODAL_GATEWAY_DOUBLE_TOKEN_FILE="$tokfile" timeout -k 5 900
    "$DOUBLES/modal-gateway" --port 0 --state "$state" "$@")
  if [ -n "$RUN_AS" ]; then
    (cd / && exec runuser -u "$RUN_AS" -- "${cmd[@]}") > "$state.out" 2> "$state.err" &
  else
    (cd / && exec "${cmd[@]}") > "$state.out" 2> "$state.err" &
  fi
  echo $! > "$state.pid"
  for _ in $(seq 100); do
    port=$(sed -n 's/^listening on 127\.0\.0\.1:\([0-9]*\)$/\1/p' "$state.out")
    [ -z "$port" ] || break
    sleep 0.1
  done
  [ -n "$port" ] || { cat "$state.err" >&2; return 1; }
  echo "http://127.0.0.1:$port"
}

stop_double () { # NAME
  local pid
  pid=$(cat "$STATE_ROOT/$1.pid" 2>/dev/null) || return 0
  kill -TERM "$pid" 2>/dev/null
  for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -KILL "$pid" 2>/dev/null || true
}

setup_file () {
  export RUN_AS=
  if [ "$(id -u)" = 0 ]; then
    RUN_AS=nobody
    [ -n "${OTHER_USER:-}" ] && id "$OTHER_USER" > /dev/null 2>&1 && RUN_AS=$OTHER_USER
  fi
  export STATE_ROOT
  STATE_ROOT=$(mktemp -d /var/tmp/modal-gateway-bats.XXXXXX)
  chmod 0755 "$STATE_ROOT"
  export GW
  if [ "${MODAL_GATEWAY_AIRLOCK:-0}" = 1 ] && [ -n "$RUN_AS" ] && [ -x "${AIRLOCK:-}" ]; then
    GW=$(start_double main --airlock "$AIRLOCK")
  else
    GW=$(start_double main)
  fi
  export TOKEN_FILE="$STATE_ROOT/main.token"
  cp "$TOKEN_FILE" "$TOKEN_FILE.orig"
}

teardown_file () {
  stop_double main
  stop_double second
  stop_double sandboxed
  # MODAL_GATEWAY_KEEP=1: the doubles' state and logs stay, for a look.
  [ "${MODAL_GATEWAY_KEEP:-0}" = 1 ] && echo "# kept $STATE_ROOT" >&3 || rm -rf "$STATE_ROOT"
}

setup () {
  URL=$GW
  TOK=$TOKEN_FILE
  cp "$TOKEN_FILE.orig" "$TOKEN_FILE"
  ctl POST /_double/reset
}

# api METHOD PATH [JSON [curl args...]]: sets $code and $body (JSON "" for none).
api () {
  local m=$1 p=$2 data=${3:-}
  shift $(($# < 3 ? $# : 3))
  local hdr=${AUTH-"Authorization: Bearer $(cat "$TOK")"}
  rm -f "$BATS_TEST_TMPDIR/body"
  code=$(timeout -k 5 30 curl -sS -X "$m" ${hdr:+-H "$hdr"} \
    ${data:+-H 'Content-Type: application/json' --data-binary "$data"} \
    -o "$BATS_TEST_TMPDIR/body" -w '%{http_code}' "$@" "$URL$p") || code=curl-$?
  body=$(cat "$BATS_TEST_TMPDIR/body" 2>/dev/null || true)
}

# The double's controls (no token): ctl METHOD PATH [JSON]; prints the body.
ctl () {
  timeout -k 5 30 curl -sS -f -X "$1" ${3:+-H 'Content-Type: application/json' -d "$3"} "$URL$2"
}

# jf KEY: a field of $body (strings bare, the rest as JSON).
jf () {
  python3 -c 'import json,sys
v = json.loads(sys.argv[1]).get(sys.argv[2])
print(v if isinstance(v, str) else json.dumps(v))' "$body" "$1"
}

# create [KEY] [JSON]: a sandbox; sets $SB.
create () {
  local key=${1:-key-$RANDOM$RANDOM} json=${2:-'{"image":"debian:12","cwd":"/root","cpu":1,"memoryMiB":512,"timeoutMs":600000,"idleTimeoutMs":300000,"persistentFilesystem":false,"logicalKey":"task-1"}'}
  api POST /v1/sandboxes "$json" -H "x-idempotency-key: $key"
  [ "$code" = 200 ] || { echo "create: $code $body" >&2; return 1; }
  SB=$(jf id)
}

# start EXECID COMMAND [TIMEOUT_MS] [STDIN]: an exec in $SB.
start () {
  local json
  json=$(python3 -c 'import json,sys
b = {"execId": sys.argv[1], "command": sys.argv[2], "timeoutMs": int(sys.argv[3])}
if len(sys.argv) > 4: b["stdinData"] = sys.argv[4]
print(json.dumps(b))' "$1" "$2" "${3:-30000}" "${@:4}")
  api POST "/v1/sandboxes/$SB/execs" "$json"
}

# wait_exec EXECID [QUERY]: poll until its status is terminal (20 s).
wait_exec () {
  for _ in $(seq 200); do
    api GET "/v1/sandboxes/$SB/execs/$1${2:+?$2}"
    [ "$code" = 200 ] || { echo "wait_exec $1: HTTP $code $body" >&2; return 1; }
    case $(jf status) in running) sleep 0.1 ;; *) return 0 ;; esac
  done
  return 1
}

# no_process PATTERN: none matches it (pgrep -f), within 5 s.
no_process () {
  for _ in $(seq 50); do
    pgrep -f "$1" > /dev/null || return 0
    sleep 0.1
  done
  pgrep -af "$1" >&2
  return 1
}

# some_process PATTERN: one matches it, within 5 s.
some_process () {
  for _ in $(seq 50); do
    pgrep -f "$1" > /dev/null && return 0
    sleep 0.1
  done
  return 1
}

# The request log's records (JSON lines), control requests left out.
requests () {
  ctl GET /_double/log | grep -v '"path": "/_double/'
}

@test "modal-gateway: listens on 127.0.0.1 and refuses a missing, a wrong or a non-bearer token (401 {error})" {
  [[ $GW == http://127.0.0.1:* ]]
  AUTH= api GET /v1/entitlement
  [ "$code" = 401 ] && [ "$(jf error)" = "missing bearer token" ]
  AUTH="Authorization: Bearer nope" api POST /v1/sandboxes '{"image":"x"}'
  [ "$code" = 401 ] && [ "$(jf code)" = unauthorized ]
  AUTH="Authorization: Basic $(cat "$TOK")" api GET /v1/entitlement
  [ "$code" = 401 ]
  api GET /v1/entitlement
  [ "$code" = 200 ] && [ "$(jf modal)" = true ]
  [ -z "$(ctl GET /_double/sandboxes | tr -d '[]')" ]
}

@test "modal-gateway: the token is never in the log, the state directory or the double's argv" {
  create
  AUTH="Authorization: Bearer wrong-token-7c1d" api GET /v1/entitlement
  local tok
  tok=$(cat "$TOK")
  run -0 ctl GET /_double/log
  [[ $output != *"$tok"* && $output != *wrong-token-7c1d* ]]
  [[ $output == *'"auth": "ok"'* && $output == *'"auth": "wrong"'* ]]
  [ -z "$(grep -rlF "$tok" "$STATE_ROOT/main")" ]
  [ -z "$(ps -eo args | grep -F "$tok" | grep -v grep)" ]
}

@test "modal-gateway: create is idempotent by x-idempotency-key; another key is another sandbox" {
  create k-1
  local first=$SB
  [[ $first == sb-* ]]
  create k-1
  [ "$SB" = "$first" ]
  create k-2
  [ "$SB" != "$first" ]
  run -0 ctl GET /_double/sandboxes
  [ "$(grep -o '"id": "sb-' <<< "$output" | wc -l)" = 2 ]
  [[ $output == *'"idempotencyKey": "k-1"'* && $output == *'"memoryMiB": 512'* ]]
}

@test "modal-gateway: create refuses unknown fields, wrong types and a missing image with 400 {error}" {
  api POST /v1/sandboxes '{"image":"x","gpu":"A100"}'
  [ "$code" = 400 ] && [[ $(jf error) == *"unknown field(s): gpu"* ]]
  api POST /v1/sandboxes '{"image":"x","memoryMiB":"lots"}'
  [ "$code" = 400 ] && [[ $(jf error) == *memoryMiB* ]]
  api POST /v1/sandboxes '{"image":"x","persistentFilesystem":1}'
  [ "$code" = 400 ]
  api POST /v1/sandboxes '{"cwd":"/root"}'
  [ "$code" = 400 ] && [[ $(jf error) == *image* ]]
  api POST /v1/sandboxes '{"image":'
  [ "$code" = 400 ]
  [ -z "$(ctl GET /_double/sandboxes | tr -d '[]')" ]
}

@test "modal-gateway: an exec runs for real: running, then completed with merged output and returncode" {
  create
  start e1 'echo out; echo err >&2; printf "%s\n" "$HOME"; exit 3'
  [ "$code" = 200 ] && [ "$(jf status)" = running ] && [ "$(jf execId)" = e1 ]
  wait_exec e1
  [ "$(jf status)" = completed ] && [ "$(jf returncode)" = 3 ]
  [[ $(jf output) == out$'\n'err$'\n'/*/work/home ]]
  # A shell killed by a signal: 128+N.
  start e2 'kill -9 $$'
  wait_exec e2
  [ "$(jf status)" = completed ] && [ "$(jf returncode)" = 137 ]
}

@test "modal-gateway: immediate_ms: a short exec answers completed at once; a cwd that is no directory is failed" {
  ctl POST /_double/config '{"immediate_ms":5000}'
  create
  start e1 'echo quick'
  [ "$code" = 200 ] && [ "$(jf status)" = completed ] && [ "$(jf output)" = quick ] && [ "$(jf returncode)" = 0 ]
  api POST "/v1/sandboxes/$SB/execs" '{"execId":"e2","command":"pwd","cwd":"/nonexistent/dir"}'
  [ "$(jf status)" = failed ] && [ "$(jf returncode)" = 1 ]
  [[ $(jf output) == *nonexistent* ]]
  api POST "/v1/sandboxes/$SB/execs" '{"execId":"e3","command":"pwd","cwd":"/"}'
  [ "$(jf output)" = / ]
}

@test "modal-gateway: the same execId runs once; reused for another command is 409; unknown fields 400" {
  create
  start once 'echo ran >> "$HOME/count"'
  start once 'echo ran >> "$HOME/count"'
  [ "$code" = 200 ]
  wait_exec once
  start check 'wc -l < "$HOME/count"'
  wait_exec check
  [ "$(jf output)" = 1 ]
  start once 'echo other'
  [ "$code" = 409 ] && [ "$(jf code)" = exec_conflict ]
  api POST "/v1/sandboxes/$SB/execs" '{"execId":"x","command":"true","env":{}}'
  [ "$code" = 400 ] && [[ $(jf error) == *"unknown field(s): env"* ]]
  api POST "/v1/sandboxes/$SB/execs" '{"execId":"x"}'
  [ "$code" = 400 ]
}

@test "modal-gateway: timeoutMs ends the whole process group: status timeout, returncode 124" {
  create
  start t1 'sh -c "sleep 300; : bg-of-t1" & echo started; sleep 300' 1000
  some_process 'bg-of-t1'
  wait_exec t1
  [ "$(jf status)" = timeout ] && [ "$(jf returncode)" = 124 ] && [ "$(jf output)" = started ]
  no_process 'bg-of-t1'
}

@test "modal-gateway: cancel kills a running exec (status cancelled, 130); cancel of a finished one changes nothing" {
  create
  start c1 'echo begun; sleep 300; echo never'
  sleep 0.5
  api POST "/v1/sandboxes/$SB/execs/c1/cancel"
  [ "$code" = 200 ] && [ "$(jf status)" = cancelled ] && [ "$(jf returncode)" = 130 ]
  [ "$(jf output)" = begun ]
  no_process 'sleep 300; echo never'
  start c2 'exit 5'
  wait_exec c2
  api POST "/v1/sandboxes/$SB/execs/c2/cancel"
  [ "$(jf status)" = completed ] && [ "$(jf returncode)" = 5 ]
  api POST "/v1/sandboxes/$SB/execs/nosuch/cancel"
  [ "$code" = 404 ]
}

@test "modal-gateway: stdinData is the command's stdin (and without it stdin is empty)" {
  create
  start s1 'tr a-z A-Z; echo "[$(wc -c < /dev/null)]"' 30000 $'hello\nworld\n'
  wait_exec s1
  [ "$(jf output)" = $'HELLO\nWORLD\n[0]' ]
  start s2 'cat; echo end'
  wait_exec s2
  [ "$(jf output)" = end ]
}

@test "modal-gateway: GET exec 404 'exec not found'; an unknown sandbox is 404 too" {
  create
  api GET "/v1/sandboxes/$SB/execs/nope"
  [ "$code" = 404 ] && [ "$(jf error)" = "exec not found" ]
  api GET /v1/sandboxes/sb-nosuch/execs/nope
  [ "$code" = 404 ] && [ "$(jf code)" = sandbox_not_found ]
  api POST /v1/sandboxes/sb-nosuch/execs '{"execId":"a","command":"true"}'
  [ "$code" = 404 ]
}

@test "modal-gateway: ?offset=N reads the output from byte N (airlock's extension), with nextOffset and outputLength" {
  create
  start o1 'printf "0123456789"; sleep 1; printf "abc\303\251"' 30000
  # While it runs: what there is so far, from an offset.
  for _ in $(seq 50); do
    api GET "/v1/sandboxes/$SB/execs/o1?offset=4"
    [ "$(jf nextOffset)" = 10 ] && break
    sleep 0.1
  done
  [ "$(jf status)" = running ] && [ "$(jf output)" = 456789 ] && [ "$(jf outputLength)" = 10 ]
  [ "$(jf returncode)" = null ]
  wait_exec o1 offset=10
  [ "$(jf output)" = abcé ] && [ "$(jf offset)" = 10 ] && [ "$(jf nextOffset)" = 15 ] && [ "$(jf outputLength)" = 15 ]
  [ "$(jf returncode)" = 0 ]
  # limit: at most that many bytes, never half a UTF-8 character.
  api GET "/v1/sandboxes/$SB/execs/o1?offset=10&limit=4"
  [ "$(jf output)" = abc ] && [ "$(jf nextOffset)" = 13 ]
  api GET "/v1/sandboxes/$SB/execs/o1?offset=15"
  [ "$code" = 200 ] && [ "$(jf output)" = "" ] && [ "$(jf nextOffset)" = 15 ]
  api GET "/v1/sandboxes/$SB/execs/o1?offset=16"
  [ "$code" = 400 ] && [ "$(jf code)" = bad_offset ]
  api GET "/v1/sandboxes/$SB/execs/o1?offset=-1"
  [ "$code" = 400 ]
  # Without it, the whole output and no offset fields (as Hermes reads it).
  api GET "/v1/sandboxes/$SB/execs/o1"
  [ "$(jf output)" = 0123456789abcé ] && [ "$(jf nextOffset)" = null ]
}

@test "modal-gateway: terminate ends the sandbox and its execs; then 404; again is 200; the snapshot keeps the files for the logicalKey" {
  local body_p='{"image":"debian:12","persistentFilesystem":true,"logicalKey":"task-snap"}'
  create k-snap "$body_p"
  start w 'echo kept > "$HOME/f"'
  wait_exec w
  start long 'sleep 300; echo never-terminate'
  api POST "/v1/sandboxes/$SB/terminate" '{"snapshotBeforeTerminate":true}'
  [ "$code" = 200 ] && [ "$(jf status)" = terminated ] && [ "$(jf alreadyTerminated)" = false ]
  no_process 'sleep 300; echo never-terminate'
  api GET "/v1/sandboxes/$SB/execs/w"
  [ "$code" = 404 ] && [ "$(jf code)" = sandbox_terminated ]
  api POST "/v1/sandboxes/$SB/execs" '{"execId":"z","command":"true"}'
  [ "$code" = 404 ]
  api POST "/v1/sandboxes/$SB/terminate" '{"snapshotBeforeTerminate":false}'
  [ "$code" = 200 ] && [ "$(jf alreadyTerminated)" = true ]
  api POST "/v1/sandboxes/$SB/terminate" '{"snapshot":true}'
  [ "$code" = 400 ]
  # The same logicalKey, persistent: the files are back.
  create k-snap2 "$body_p"
  start r 'cat "$HOME/f"'
  wait_exec r
  [ "$(jf output)" = kept ]
  # Not persistent: a fresh home.
  create k-fresh '{"image":"debian:12","persistentFilesystem":false,"logicalKey":"task-snap"}'
  start r 'cat "$HOME/f" 2>&1; true'
  wait_exec r
  [[ $(jf output) == *"No such file"* ]]
}

@test "modal-gateway: timeoutMs and idleTimeoutMs of the create end the sandbox (then 404)" {
  create k-life '{"image":"x","timeoutMs":1500,"idleTimeoutMs":600000}'
  start a 'sleep 60'
  sleep 2.2
  api GET "/v1/sandboxes/$SB/execs/a"
  [ "$code" = 404 ] && [[ $(jf error) == *"(timeout)"* ]]
  # Idle: 3 s, room for a loaded machine between the create and the exec.
  create k-idle '{"image":"x","timeoutMs":600000,"idleTimeoutMs":3000}'
  start b 'true'
  wait_exec b
  sleep 3.8
  api GET "/v1/sandboxes/$SB/execs/b"
  [ "$code" = 404 ] && [[ $(jf error) == *"idle timeout"* ]]
}

@test "modal-gateway fault: a 5xx burst (503 three times, then the real answer)" {
  ctl POST /_double/faults '{"match":"POST /v1/sandboxes","status":503,"times":3}'
  for _ in 1 2 3; do
    api POST /v1/sandboxes '{"image":"x"}' -H 'x-idempotency-key: b1'
    [ "$code" = 503 ] && [[ $(jf error) == *"injected fault"* ]]
  done
  create b1 '{"image":"x"}'
  [ "$(requests | grep -c '"status": 503')" = 3 ]
  [[ $(requests | tail -n 1) == *'"idempotency_key": "b1"'* ]]
}

@test "modal-gateway fault: 429 with Retry-After, and a body of the test's own" {
  ctl POST /_double/faults '{"match":"GET /v1/sandboxes/.*/execs/.*","status":429,"retry_after":2,"body":{"error":"slow down"}}'
  create
  start r 'true'
  api GET "/v1/sandboxes/$SB/execs/r" "" -D "$BATS_TEST_TMPDIR/head"
  [ "$code" = 429 ] && [ "$(jf error)" = "slow down" ]
  grep -qi '^Retry-After: 2' "$BATS_TEST_TMPDIR/head"
  wait_exec r
  [ "$(jf status)" = completed ]
}

@test "modal-gateway fault: a connection dropped mid-response after the work was done (the exec exists), or before it (it does not)" {
  create
  ctl POST /_double/faults '{"match":"POST /v1/sandboxes/[^/]+/execs","drop_after":5}'
  start d1 'echo done-anyway'
  [[ $code == curl-* ]]
  wait_exec d1
  [ "$(jf output)" = done-anyway ]
  ctl POST /_double/faults '{"match":"POST /v1/sandboxes/[^/]+/execs","drop_after":0,"before":true}'
  start d2 'echo never'
  [[ $code == curl-* ]]
  api GET "/v1/sandboxes/$SB/execs/d2"
  [ "$code" = 404 ]
  # A poll cut mid-body: the next one is whole.
  ctl POST /_double/faults '{"match":"GET /v1/sandboxes/.*/execs/d1","drop_after":10}'
  api GET "/v1/sandboxes/$SB/execs/d1"
  [[ $code == curl-* ]]
  api GET "/v1/sandboxes/$SB/execs/d1"
  [ "$code" = 200 ]
}

@test "modal-gateway fault: slow answers (delay_ms), a slow start (start_delay_ms), a malformed body" {
  ctl POST /_double/faults '{"match":"GET /v1/entitlement","delay_ms":1500}'
  api GET /v1/entitlement "" --max-time 0.5
  [[ $code == curl-28 ]]
  ctl POST /_double/config '{"start_delay_ms":1200}'
  local t0
  t0=$(date +%s%N)
  create
  [ $((($(date +%s%N) - t0) / 1000000)) -ge 1200 ]
  ctl POST /_double/faults '{"match":"GET /v1/entitlement","malformed":true}'
  api GET /v1/entitlement
  [ "$code" = 200 ] && [ "$body" = '{"malformed": [tru' ]
}

@test "modal-gateway fault: the sandbox terminated behind our back: its execs are 404, a running one ended" {
  create
  start v 'sleep 300; echo never-vanish'
  ctl POST "/_double/sandbox/$SB/vanish"
  no_process 'sleep 300; echo never-vanish'
  api GET "/v1/sandboxes/$SB/execs/v"
  [ "$code" = 404 ] && [ "$(jf code)" = sandbox_terminated ]
  [[ $(jf error) == *"behind the client's back"* ]]
  start v2 'true'
  [ "$code" = 404 ]
}

@test "modal-gateway fault: token expiry (401 token_expired after N requests); a rotated token file is read at once" {
  ctl POST /_double/config '{"token_expires_after":2}'
  api GET /v1/entitlement
  [ "$code" = 200 ]
  api GET /v1/entitlement
  [ "$code" = 200 ]
  api GET /v1/entitlement
  [ "$code" = 401 ] && [ "$(jf code)" = token_expired ]
  ctl POST /_double/config '{}'
  api GET /v1/entitlement
  [ "$code" = 200 ]
  # Rotation: the old token is refused, the new one accepted.
  local old
  old=$(cat "$TOK")
  echo "rotated-$RANDOM" > "$TOK.new"
  cat "$TOK.new" > "$TOK"
  AUTH="Authorization: Bearer $old" api GET /v1/entitlement
  [ "$code" = 401 ]
  api GET /v1/entitlement
  [ "$code" = 200 ]
  echo "$old" > "$TOK"
}

@test "modal-gateway fault: quota: create is 429 (default) or 403 with code quota_exceeded" {
  ctl POST /_double/config '{"quota":1}'
  create q1
  api POST /v1/sandboxes '{"image":"x"}' -H 'x-idempotency-key: q2' -D "$BATS_TEST_TMPDIR/head"
  [ "$code" = 429 ] && [ "$(jf code)" = quota_exceeded ] && [[ $(jf error) == *quota* ]]
  run ! grep -qi '^Retry-After' "$BATS_TEST_TMPDIR/head"
  # The first key again is no new sandbox: still its id.
  create q1
  ctl POST /_double/config '{"quota":1,"quota_status":403}'
  api POST /v1/sandboxes '{"image":"x"}' -H 'x-idempotency-key: q3'
  [ "$code" = 403 ] && [ "$(jf code)" = quota_exceeded ]
  # A terminated sandbox frees its place.
  api POST "/v1/sandboxes/$SB/terminate" '{}'
  create q4 '{"image":"x"}'
}

@test "modal-gateway fault: entitlement false: /v1/entitlement says so and create is 403 not_entitled" {
  ctl POST /_double/config '{"entitled":false}'
  api GET /v1/entitlement
  [ "$code" = 200 ] && [ "$(jf modal)" = false ]
  api POST /v1/sandboxes '{"image":"x"}' -H 'x-idempotency-key: e1'
  [ "$code" = 403 ] && [ "$(jf code)" = not_entitled ]
  [ -z "$(ctl GET /_double/sandboxes | tr -d '[]')" ]
}

@test "modal-gateway: fault rules match method and path regex, after N, N times; bad rules are 400" {
  ctl POST /_double/faults '{"match":"GET /v1/entitlement","status":500,"after":1,"times":2}'
  local seen=
  for _ in 1 2 3 4; do api GET /v1/entitlement; seen="$seen $code"; done
  [ "$seen" = " 200 500 500 200" ]
  run ctl POST /_double/faults '{"match":"GET","status":500}'
  [ "$status" -ne 0 ]
  run ctl POST /_double/faults '{"match":"GET /x","colour":1,"status":500}'
  [ "$status" -ne 0 ]
  run -0 ctl GET /_double/faults
  [[ $output == *'"applied": 2'* ]]
  ctl DELETE /_double/faults
  [ "$(ctl GET /_double/faults)" = "[]" ]
}

@test "modal-gateway: every request is one JSON line, in /_double/log and in --state DIR/requests.jsonl" {
  create k-log
  start l 'true'
  run -0 requests
  [ "${#lines[@]}" = 2 ]
  python3 -c 'import json,sys
a, b = [json.loads(l) for l in sys.argv[1:]]
assert a["method"] == "POST" and a["path"] == "/v1/sandboxes" and a["status"] == 200, a
assert a["idempotency_key"] == "k-log" and a["auth"] == "ok", a
assert b["path"].endswith("/execs") and isinstance(b["ms"], int), b' "${lines[@]}"
  grep -q '"idempotency_key": "k-log"' "$STATE_ROOT/main/requests.jsonl"
  n=$(ctl GET /_double/log | tail -n 1 | python3 -c 'import json,sys; print(json.load(sys.stdin)["n"])')
  api GET /v1/entitlement
  [ "$(ctl GET "/_double/log?since=$n" | grep -vc /_double/)" = 1 ]
}

@test "modal-gateway: SIGTERM ends every sandbox, and the double exits" {
  URL=$(start_double second)
  TOK="$STATE_ROOT/second.token"
  create
  start s 'sleep 300; echo never-sigterm'
  some_process 'sleep 300; echo never-sigterm'
  stop_double second
  no_process 'sleep 300; echo never-sigterm'
  run ! kill -0 "$(cat "$STATE_ROOT/second.pid")"
}

@test "modal-gateway airlock: with --airlock, commands run in airlock's own local sandbox" {
  [ -n "${AIRLOCK:-}" ] && [ -x "$AIRLOCK" ] || skip "needs an installed airlock (run-tests.sh exports AIRLOCK)"
  [ -n "$RUN_AS" ] || skip "runs as root only (the double is started as another user)"
  URL=$(start_double sandboxed --airlock "$AIRLOCK")
  TOK="$STATE_ROOT/sandboxed.token"
  create
  start ns 'readlink /proc/self/ns/pid; echo "$HOME"' 30000 ''
  wait_exec ns
  [ "$(jf status)" = completed ] && [ "$(jf returncode)" = 0 ]
  local out
  out=$(jf output)
  [ "$(sed -n 1p <<< "$out")" != "$(readlink /proc/self/ns/pid)" ]
  [[ $(sed -n 2p <<< "$out") == "$STATE_ROOT/sandboxed/"*/work/home ]]
  start t 'sleep 300; echo never-airlock' 1000
  wait_exec t
  [ "$(jf status)" = timeout ] && [ "$(jf returncode)" = 124 ]
  api POST "/v1/sandboxes/$SB/terminate" '{}'
  [ "$code" = 200 ]
  stop_double sandboxed
}
