#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# The modal backend in managed mode (backends/modal_managed_session.c and
# modal_gateway.c), driven without the daemon by
# airlock-modal-managed-driver (MODAL_MANAGED_DRIVER, else build/'s)
# against the gateway double (tests/doubles/modal-gateway) in its
# no-airlock mode: commands run on this host as the double's user, so
# the tests can look at every process's argv.
#
# setup_file starts one double as an unprivileged user ($OTHER_USER when
# run-tests.sh set one, else nobody), its token in a file.  Runs by hand
# as root: `bats tests/modal-managed.bats`.

bats_require_minimum_version 1.5.0

DOUBLES=${STANDIN_DIR:-$BATS_TEST_DIRNAME/doubles}
DRIVER=${MODAL_MANAGED_DRIVER:-$BATS_TEST_DIRNAME/../build/airlock-modal-managed-driver}

setup_file () {
  export RUN_AS=
  if [ "$(id -u)" = 0 ]; then
    RUN_AS=nobody
    [ -n "${OTHER_USER:-}" ] && id "$OTHER_USER" > /dev/null 2>&1 && RUN_AS=$OTHER_USER
  fi
  export STATE_ROOT
  STATE_ROOT=$(mktemp -d /var/tmp/modal-managed-bats.XXXXXX)
  chmod 0755 "$STATE_ROOT"
  local state="$STATE_ROOT/main" port=
  mkdir -p "$state"
  export TOKEN_FILE="$STATE_ROOT/token"
  od -An -N12 -tx1 /dev/urandom | tr -d ' \n' > "$TOKEN_FILE"
  chmod 0644 "$TOKEN_FILE"
  [ -z "$RUN_AS" ] || chown "$RUN_AS" "$state"
  local -a cmd=(env -i PATH=/usr/local/bin:/usr/bin:/bin HOME="$state"
    MODAL_GATEWAY_DOUBLE_TOKEN_FILE="$TOKEN_FILE" timeout -k 5 900
    "$DOUBLES/modal-gateway" --port 0 --state "$state")
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
  export GW="http://127.0.0.1:$port"
}

teardown_file () {
  local pid
  pid=$(cat "$STATE_ROOT/main.pid" 2>/dev/null) && {
    kill -TERM "$pid" 2>/dev/null
    for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
  }
  [ "${MODAL_MANAGED_KEEP:-0}" = 1 ] && echo "# kept $STATE_ROOT" >&3 || rm -rf "$STATE_ROOT"
}

setup () {
  ctl POST /_double/reset > /dev/null
  export MODAL_GATEWAY_URL=$GW
  TOOL_GATEWAY_USER_TOKEN=$(cat "$TOKEN_FILE")
  export TOOL_GATEWAY_USER_TOKEN
}

# The double's controls (no token): ctl METHOD PATH [JSON].
ctl () {
  timeout -k 5 30 curl -sS -f -X "$1" ${3:+-H 'Content-Type: application/json' -d "$3"} "$GW$2"
}

# drv ARGS...: the driver, bounded; stdout in $BATS_TEST_TMPDIR/out,
# stderr in .../err (run sets $status and $output: both, stdout first).
drv () {
  timeout -k 5 "${DRV_TIMEOUT:-60}" "$DRIVER" "$@" > "$BATS_TEST_TMPDIR/out" 2> "$BATS_TEST_TMPDIR/err"
  local rc=$?
  cat "$BATS_TEST_TMPDIR/out" "$BATS_TEST_TMPDIR/err"
  return $rc
}

# script NAME TEXT: a script file; prints its path.
script () {
  printf '%s\n' "$2" > "$BATS_TEST_TMPDIR/$1"
  echo "$BATS_TEST_TMPDIR/$1"
}

# The request log, one "METHOD PATH STATUS" line each, controls left out.
requests () {
  ctl GET /_double/log | python3 -c 'import json, sys
for line in sys.stdin:
    r = json.loads(line)
    if not r["path"].startswith("/_double/"):
        print(r["method"], r["path"], r["status"], r.get("fault") is not None)'
}

sandbox_count () {
  ctl GET /_double/sandboxes | python3 -c 'import json, sys; print(len(json.load(sys.stdin)))'
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

@test "modal-managed: a command's output (stdout and stderr merged), its fd-3 report and its exit status" {
  local s
  s=$(script s1 'echo to-stdout; echo to-stderr >&2; printf "report\0with a NUL\n" >&3; printf "no newline"; exit 7')
  run -0 drv --meta "$BATS_TEST_TMPDIR/meta" "$s"
  [ "$(cat "$BATS_TEST_TMPDIR/out")" = $'to-stdout\nto-stderr\nno newline' ]
  grep -qx 'exit 7' "$BATS_TEST_TMPDIR/err"
  [ "$(od -An -c -w64 "$BATS_TEST_TMPDIR/meta" | tr -s ' ')" = " r e p o r t \\0 w i t h a N U L \\n" ]
  # NUL bytes and UTF-8 in the output arrive as they were
  s=$(script s2 'printf "a\0b\n"; printf "caf\303\251\n"; exit 0')
  run -0 drv "$s"
  [ "$(od -An -c -w64 "$BATS_TEST_TMPDIR/out" | tr -s ' ')" = " a \\0 b \\n c a f 303 251 \\n" ]
  grep -qx 'exit 0' "$BATS_TEST_TMPDIR/err"
  # one sandbox, terminated at close
  [ "$(sandbox_count)" = 2 ]
  [ -z "$(ctl GET /_double/sandboxes | grep '"state": "running"')" ]
}

@test "modal-managed: the env is exactly the job's (plus its mark); the script and env never reach an argv or the double's log" {
  local needle="needle-$RANDOM$RANDOM" secret="envsecret-$RANDOM$RANDOM" s
  s=$(script s "sleep 2; : $needle; env | sort")
  printf '%s\n' PATH=/usr/bin:/bin "MY_SECRET=$secret" 'SPACED=a b  c' > "$BATS_TEST_TMPDIR/env"
  printf '%s\n' "$needle" "$secret" > "$BATS_TEST_TMPDIR/patterns"
  drv --env-file "$BATS_TEST_TMPDIR/env" --cwd /tmp "$s" &
  local pid=$! seen=0
  for _ in $(seq 15); do
    sleep 0.1
    # every process's argv on this host, the double's sandboxes included
    if grep -alFf "$BATS_TEST_TMPDIR/patterns" /proc/[0-9]*/cmdline 2> /dev/null; then seen=1; fi
  done
  wait $pid
  [ "$seen" = 0 ]
  grep -qx 'exit 0' "$BATS_TEST_TMPDIR/err"
  run sed -e 's/^AIRLOCK_MODAL_JOB=[0-9a-f]\{32\}$/AIRLOCK_MODAL_JOB=MARK/' "$BATS_TEST_TMPDIR/out"
  [ "$output" = "AIRLOCK_MODAL_JOB=MARK
MY_SECRET=$secret
PATH=/usr/bin:/bin
PWD=/tmp
SHLVL=1
SPACED=a b  c
_=/usr/bin/env" ]
  ! grep -rlFf "$BATS_TEST_TMPDIR/patterns" "$STATE_ROOT/main" "$STATE_ROOT/main.out" "$STATE_ROOT/main.err" || false
  run -0 ctl GET /_double/log
  ! grep -qFf "$BATS_TEST_TMPDIR/patterns" <<< "$output" || false
  # no job directory is left in /tmp
  [ -z "$(find /tmp -maxdepth 1 -name '.airlock-modal.*' -user "${RUN_AS:-$(id -un)}")" ]
}

@test "modal-managed: stdin reaches the command whole (binary, 1 MiB); over 4 MiB is an error" {
  head -c 1048576 /dev/urandom > "$BATS_TEST_TMPDIR/in"
  local want s
  want=$(sha256sum < "$BATS_TEST_TMPDIR/in" | cut -d' ' -f1)
  s=$(script s 'sha256sum | cut -d" " -f1')
  run -0 drv --stdin "$BATS_TEST_TMPDIR/in" "$s"
  [ "$(cat "$BATS_TEST_TMPDIR/out")" = "$want" ]
  head -c 5000000 /dev/zero > "$BATS_TEST_TMPDIR/big"
  run drv --stdin "$BATS_TEST_TMPDIR/big" "$s"
  grep -q 'write_stdin: File too large' "$BATS_TEST_TMPDIR/err"
  grep -q 'error: .*stdin is over 4 MiB' "$BATS_TEST_TMPDIR/err"
  # a command without stdin reads /dev/null's end at once
  s=$(script s2 'cat; echo done')
  run -0 drv "$s"
  [ "$(cat "$BATS_TEST_TMPDIR/out")" = done ]
}

@test "modal-managed: a command past its deadline ends with 124 (the gateway's timeout), nothing of it left" {
  local s
  s=$(script s '(setsid sleep 4711 &); sleep 4712; echo never')
  run -0 drv --timeout 1000 "$s"
  grep -qx 'exit 124' "$BATS_TEST_TMPDIR/err"
  [[ $(cat "$BATS_TEST_TMPDIR/out") != *never* ]]
  no_process 'sleep 471[12]'
  run requests
  [[ $output == *"POST /v1/sandboxes/"*"/terminate 200"* ]]
}

@test "modal-managed: a kill ends the command and whatever it left behind (TERM, then KILL: cancel)" {
  local s
  s=$(script s '(setsid sleep 4721 &); sleep 4722; echo never')
  run -0 drv --kill-after 500 "$s"
  grep -qx 'exit 143' "$BATS_TEST_TMPDIR/err"
  no_process 'sleep 472[12]'
  # a command deaf to TERM: the KILL cancels the exec
  s=$(script s2 'trap "" TERM; (trap "" TERM; setsid sleep 4731 &); sleep 4732 || sleep 4733; echo never')
  run -0 drv --kill-after 500 "$s"
  grep -q '^signal 9: 0$' "$BATS_TEST_TMPDIR/err"
  grep -qx 'exit \(130\|137\)' "$BATS_TEST_TMPDIR/err"
  no_process 'sleep 473[123]'
  run requests
  [[ $output == *"/cancel 200"* ]]
}

@test "modal-managed: a 5xx burst and 429 with Retry-After are retried: one sandbox, one run" {
  ctl POST /_double/faults '[{"match":"POST /v1/sandboxes","status":503,"times":3},
    {"match":"POST /v1/sandboxes/.*/execs","status":502,"times":2},
    {"match":"GET /v1/sandboxes/.*/execs/.*","status":429,"retry_after":1,"times":2},
    {"match":"GET /v1/sandboxes/.*/execs/.*","status":504,"after":2,"times":2}]' > /dev/null
  local s
  s=$(script s 'sleep 1; seq 1 3; exit 3')
  run -0 drv "$s"
  [ "$(cat "$BATS_TEST_TMPDIR/out")" = $'1\n2\n3' ]
  grep -qx 'exit 3' "$BATS_TEST_TMPDIR/err"
  [ "$(sandbox_count)" = 1 ]
  run requests
  [ "$(grep -c '^POST /v1/sandboxes 503' <<< "$output")" = 3 ]
  [ "$(grep -c '^POST /v1/sandboxes 200' <<< "$output")" = 1 ]
  [ "$(grep -c '/execs 502' <<< "$output")" = 2 ]
  [ "$(grep -c ' 429 ' <<< "$output")" = 2 ]
  [ "$(grep -c ' 504 ' <<< "$output")" = 2 ]
  # each exec (the first `pwd`, the command) ran once, whatever was retried
  [ "$(ctl GET /_double/sandboxes | python3 -c 'import json,sys; print(len(json.load(sys.stdin)[0]["execs"]))')" = 2 ]
}

@test "modal-managed: a create whose answer is lost is retried with the same key: still one sandbox" {
  ctl POST /_double/faults '{"match":"POST /v1/sandboxes","drop_after":0,"times":1}' > /dev/null
  local s
  s=$(script s 'echo ok')
  run -0 drv "$s"
  [ "$(cat "$BATS_TEST_TMPDIR/out")" = ok ]
  [ "$(sandbox_count)" = 1 ]
  run requests
  [ "$(grep -c '^POST /v1/sandboxes ' <<< "$output")" = 2 ]
}

@test "modal-managed: dropped poll connections resume at the offset, no byte lost or doubled" {
  # connections closed before the request is handled, then answers cut
  # after their first 30 bytes (handled: the offset read is repeated)
  ctl POST /_double/faults '[{"match":"GET /v1/sandboxes/.*/execs/.*","drop_after":0,"before":true,"after":1,"times":2},
    {"match":"GET /v1/sandboxes/.*/execs/.*","drop_after":30,"after":3,"times":6}]' > /dev/null
  local s
  s=$(script s 'for i in $(seq 1 40); do seq $((i * 5000)) $((i * 5000 + 4999)); sleep 0.02; done')
  run -0 drv "$s"
  seq 5000 204999 > "$BATS_TEST_TMPDIR/want"
  cmp "$BATS_TEST_TMPDIR/want" "$BATS_TEST_TMPDIR/out"
  grep -qx 'exit 0' "$BATS_TEST_TMPDIR/err"
  run requests
  [ "$(grep -c ' None True$' <<< "$output")" = 2 ]
  [ "$(grep -c ' 200 True$' <<< "$output")" = 6 ]
}

@test "modal-managed: no entitlement, or a failed entitlement query, fails open closed and creates nothing" {
  ctl POST /_double/config '{"entitled": false}' > /dev/null
  local s
  s=$(script s 'echo ran')
  run -1 drv "$s"
  [[ $output == *"open: "*"no managed Modal entitlement"* ]]
  [[ $output != *ran* ]]
  [ "$(sandbox_count)" = 0 ]
  run -1 drv --entitled
  [ "${lines[0]}" = 0 ]
  ctl POST /_double/config '{}' > /dev/null
  run -0 drv --entitled
  [ "${lines[0]}" = 1 ]
  # the query failing counts as "not entitled"
  ctl POST /_double/faults '{"match":"GET /v1/entitlement","status":500,"times":-1}' > /dev/null
  run -1 drv "$s"
  [[ $output == *"open: "*"entitlement query failed"*"HTTP 500"* ]]
  [ "$(sandbox_count)" = 0 ]
  ctl DELETE /_double/faults > /dev/null
  ctl POST /_double/faults '{"match":"GET /v1/entitlement","malformed":true,"times":-1}' > /dev/null
  run -1 drv "$s"
  [[ $output == *"open: "*"entitlement"* ]]
  [ "$(sandbox_count)" = 0 ]
}

@test "modal-managed: a sandbox that vanishes loses the session, which is never re-created" {
  local s1 s2 sb
  s1=$(script s1 'echo started; sleep 4741')
  s2=$(script s2 'echo second')
  drv --health "$s1" "$s2" > "$BATS_TEST_TMPDIR/all" &
  local pid=$!
  for _ in $(seq 100); do
    grep -q started "$BATS_TEST_TMPDIR/out" 2> /dev/null && break
    sleep 0.1
  done
  sb=$(ctl GET /_double/sandboxes | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["id"])')
  ctl POST "/_double/sandbox/$sb/vanish" > /dev/null
  local rc=0
  wait $pid || rc=$?
  [ "$rc" = 3 ]
  run cat "$BATS_TEST_TMPDIR/err"
  [[ $output == *"error: the Modal sandbox $sb is gone"*"never re-created"* ]]
  [[ $output == *"health -1"* ]]
  [[ $output == *"spawn: the Modal sandbox $sb is gone"* ]]
  [[ $(cat "$BATS_TEST_TMPDIR/out") != *second* ]]
  [ "$(sandbox_count)" = 1 ]
  no_process 'sleep 4741'
}

@test "modal-managed: a refused token (401) names TOOL_GATEWAY_USER_TOKEN, never the token" {
  local s
  s=$(script s 'echo ran')
  TOOL_GATEWAY_USER_TOKEN=wrong-token-5e2f9a run -1 drv "$s"
  [[ $output == *"open: "*"TOOL_GATEWAY_USER_TOKEN"* ]]
  [[ $output != *wrong-token-5e2f9a* ]]
  # no token at all
  TOOL_GATEWAY_USER_TOKEN= run -1 drv "$s"
  [[ $output == *"open: "*"set TOOL_GATEWAY_USER_TOKEN"* ]]
  # a token that expires in the middle of a session: the command's error
  # says which variable, not the token
  ctl POST /_double/config '{"token_expires_after": 4}' > /dev/null
  s=$(script s2 'sleep 1; echo ran')
  run drv --cwd /tmp "$s"
  [[ $output == *"error: "*"TOOL_GATEWAY_USER_TOKEN"*"HTTP 401"* ]]
  [[ $output != *"$TOOL_GATEWAY_USER_TOKEN"* ]]
}

@test "modal-managed: a poll answer without nextOffset (a gateway without offset reads) gives only the bytes not yet delivered" {
  # the double's answers replaced: the whole output so far, twice
  ctl POST /_double/faults '[{"match":"GET /v1/sandboxes/.*/execs/.*","times":1,"status":200,
      "body":{"execId":"x","status":"running","output":"abc"}},
    {"match":"GET /v1/sandboxes/.*/execs/.*","times":1,"status":200,
      "body":{"execId":"x","status":"completed","output":"abcdef\n","returncode":5}}]' > /dev/null
  local s
  s=$(script s 'sleep 4751')
  run -0 drv --cwd /tmp "$s"
  [ "$(cat "$BATS_TEST_TMPDIR/out")" = abcdef ]
  grep -qx 'exit 5' "$BATS_TEST_TMPDIR/err"
  no_process 'sleep 4751'
}

@test "modal-managed: a kill while the gateway cannot be reached is pending (BACKEND_KILL_PENDING)" {
  local s
  s=$(script s 'echo started; sleep 4761')
  DRV_TIMEOUT=90 drv --cwd /tmp --kill-after 9000 "$s" > /dev/null &
  local pid=$!
  for _ in $(seq 100); do
    grep -q started "$BATS_TEST_TMPDIR/out" 2> /dev/null && break
    sleep 0.1
  done
  # from now on every connection is closed unanswered
  ctl POST /_double/faults '{"match":"* /v1/.*","drop_after":0,"before":true,"times":-1}' > /dev/null
  wait $pid || true
  grep -q '^signal 15: 1$' "$BATS_TEST_TMPDIR/err"
  grep -q 'cannot reach the modal gateway' "$BATS_TEST_TMPDIR/err"
  ! grep -q "$TOOL_GATEWAY_USER_TOKEN" "$BATS_TEST_TMPDIR/err" || false
  ctl DELETE /_double/faults > /dev/null
}

@test "modal-managed: the session layer's own scripts: state (exports, functions, aliases, cwd) carried by the fd-3 reports" {
  local c1 c2 c3
  c1=$(script c1 'export GREETING="hello there"; f() { echo "from f"; }; alias ll="echo alias-ll"; cd /tmp')
  c2=$(script c2 'echo "$GREETING"; f; pwd; shopt -s expand_aliases; eval ll; cd /; exit 4')
  c3=$(script c3 'pwd; echo "${GREETING:-unset}"')
  run -0 drv --shell "$c1" "$c2" "$c3"
  [ "$(cat "$BATS_TEST_TMPDIR/out")" = $'hello there\nfrom f\n/tmp\nalias-ll\n/\nhello there' ]
  [ "$(grep -c '^state taken$' "$BATS_TEST_TMPDIR/err")" = 4 ]
  run grep '^exit ' "$BATS_TEST_TMPDIR/err"
  [ "$output" = $'exit 0\nexit 0\nexit 4\nexit 0' ]
}

@test "modal-managed: an exec start whose answer is lost is repeated with the same execId: the command runs once" {
  # the first start of the command (the second exec: the first is open's
  # pwd) is handled, and its answer lost
  ctl POST /_double/faults '{"match":"POST /v1/sandboxes/.*/execs","drop_after":0,"after":1,"times":1}' > /dev/null
  local s
  s=$(script s 'echo once; sleep 0.5')
  run -0 drv "$s"
  [ "$(cat "$BATS_TEST_TMPDIR/out")" = once ]
  grep -qx 'exit 0' "$BATS_TEST_TMPDIR/err"
  run requests
  [ "$(grep -c '^POST /v1/sandboxes/[^ ]*/execs 200' <<< "$output")" = 3 ]
  [ "$(ctl GET /_double/sandboxes | python3 -c 'import json,sys; print(len(json.load(sys.stdin)[0]["execs"]))')" = 2 ]
}

@test "modal-managed: a quota refusal fails open with what it is, without waiting it out" {
  ctl POST /_double/config '{"quota": 0}' > /dev/null
  local s
  s=$(script s 'echo ran')
  SECONDS=0
  run -1 drv "$s"
  [[ $output == *"open: "*"quota"*"HTTP 429"* ]]
  [ "$SECONDS" -lt 5 ]
  run requests
  [ "$(grep -c '^POST /v1/sandboxes 429' <<< "$output")" = 1 ]
}

@test "modal-managed: a script of several MiB reaches fd 4 whole" {
  { echo ': <<"EOF_PAD"'; head -c 2500000 /dev/urandom | base64; echo EOF_PAD; echo 'echo "big script ran"'; } > "$BATS_TEST_TMPDIR/big.sh"
  run -0 drv "$BATS_TEST_TMPDIR/big.sh"
  [ "$(cat "$BATS_TEST_TMPDIR/out")" = "big script ran" ]
  grep -qx 'exit 0' "$BATS_TEST_TMPDIR/err"
}

@test "modal-managed: a big output (24 MiB) arrives whole, read 4 MiB a poll" {
  local s
  s=$(script s 'f=$(mktemp); head -c 18000000 /dev/urandom | base64 -w 76 > "$f"; cat "$f"; sha256sum < "$f" | cut -d" " -f1 >&3; rm "$f"')
  DRV_TIMEOUT=120 run -0 drv --cwd /tmp --meta "$BATS_TEST_TMPDIR/meta" "$s"
  [ "$(sha256sum < "$BATS_TEST_TMPDIR/out" | cut -d' ' -f1)" = "$(cat "$BATS_TEST_TMPDIR/meta")" ]
  grep -qx 'exit 0' "$BATS_TEST_TMPDIR/err"
  run requests
  [ "$(grep -c '^GET /v1/sandboxes/.*/execs/.* 200' <<< "$output")" -ge 6 ]
}

@test "modal-managed: output written at once after a pause arrives whole, the end marker after it found" {
  # 4 MiB - 5 bytes of output, all at once after a pause: polls read its
  # base64 lines as they come, a read may end inside one
  local s
  s=$(script s 'f=$(mktemp); head -c 3145725 /dev/urandom | base64 -w 0 | head -c 4194299 > "$f"
sleep 1; cat "$f"; sha256sum < "$f" | cut -d" " -f1 >&3; rm "$f"')
  run -0 drv --cwd /tmp --meta "$BATS_TEST_TMPDIR/meta" "$s"
  [ "$(stat -c %s "$BATS_TEST_TMPDIR/out")" = 4194299 ]
  [ "$(sha256sum < "$BATS_TEST_TMPDIR/out" | cut -d' ' -f1)" = "$(cat "$BATS_TEST_TMPDIR/meta")" ]
  grep -qx 'exit 0' "$BATS_TEST_TMPDIR/err"
}

@test "modal-managed: binary output (NULs, invalid UTF-8, stderr merged) arrives byte for byte" {
  local s
  s=$(script s 'printf "a\0b\377\376c\200\n"; printf "\300\0" >&2; printf "\342\202"; exit 3')
  run -0 drv "$s"
  [ "$(od -An -tx1 -w64 "$BATS_TEST_TMPDIR/out" | tr -s ' ')" = " 61 00 62 ff fe 63 80 0a c0 00 e2 82" ]
  grep -qx 'exit 3' "$BATS_TEST_TMPDIR/err"
}

@test "modal-managed: 1 MB of random binary output arrives whole (sha256), its report intact" {
  local s
  s=$(script s 'f=$(mktemp); head -c 1000000 /dev/urandom > "$f"; cat "$f"; sha256sum < "$f" | cut -d" " -f1 >&3; rm "$f"')
  DRV_TIMEOUT=120 run -0 drv --cwd /tmp --meta "$BATS_TEST_TMPDIR/meta" "$s"
  [ "$(stat -c %s "$BATS_TEST_TMPDIR/out")" = 1000000 ]
  [ "$(sha256sum < "$BATS_TEST_TMPDIR/out" | cut -d' ' -f1)" = "$(cat "$BATS_TEST_TMPDIR/meta")" ]
  grep -qx 'exit 0' "$BATS_TEST_TMPDIR/err"
}

@test "modal-managed: output arrives while the command runs (a line per read, not at its end)" {
  local s i seen=
  s=$(script s 'printf "first\0"; sleep 4; echo second')
  drv "$s" > /dev/null &
  local pid=$!
  for i in $(seq 30); do
    if [ "$(tr -d '\0' < "$BATS_TEST_TMPDIR/out" 2>/dev/null)" = first ]; then seen=1; break; fi
    sleep 0.1
  done
  kill -0 "$pid" # still running
  wait "$pid"
  [ -n "$seen" ]
  [ "$(tr -d '\0' < "$BATS_TEST_TMPDIR/out")" = $'firstsecond' ]
}

@test "modal-managed: files API: a 5 MiB binary file up in 2 MiB parts (0600, whole), and down again, then removed" {
  head -c 5242880 /dev/urandom > "$BATS_TEST_TMPDIR/in"
  printf '\0\377end' >> "$BATS_TEST_TMPDIR/in"
  local want remote
  want=$(sha256sum < "$BATS_TEST_TMPDIR/in" | cut -d' ' -f1)
  DRV_TIMEOUT=120 run -0 drv --cwd /tmp --put "$BATS_TEST_TMPDIR/in"
  remote=$(sed -n 's/^put //p' "$BATS_TEST_TMPDIR/err")
  [[ "$remote" =~ ^/tmp/\.airlock-upload-[0-9a-f]{16}-9001\.tar$ ]]
  # the double runs commands on this host: the sandbox's /tmp is ours
  [ "$(sha256sum < "$remote" | cut -d' ' -f1)" = "$want" ]
  [ "$(stat -c %a "$remote")" = 600 ]
  # 3 parts, each one exec
  run requests
  [ "$(grep -c '^POST /v1/sandboxes/.*/execs 200' <<< "$output")" = 3 ]
  DRV_TIMEOUT=120 run -0 drv --get "$remote" --to "$BATS_TEST_TMPDIR/back"
  grep -qx 'get done' "$BATS_TEST_TMPDIR/err"
  [ "$(sha256sum < "$BATS_TEST_TMPDIR/back" | cut -d' ' -f1)" = "$want" ]
  [ "$(stat -c %a "$BATS_TEST_TMPDIR/back")" = 600 ]
  [ ! -e "$remote" ]
}

@test "modal-managed: files API: a missing file, a timeout and a vanished sandbox are clear errors; nothing left behind" {
  # a download of a file that is not there
  run -3 drv --get /tmp/.airlock-no-such-file-$RANDOM --to "$BATS_TEST_TMPDIR/back"
  grep -q "^get error: .*not in the sandbox" "$BATS_TEST_TMPDIR/err"
  # an upload past its timeout: what it left is removed
  head -c 12000000 /dev/urandom > "$BATS_TEST_TMPDIR/in"
  DRV_TIMEOUT=120 run -3 drv --file-timeout 300 --put "$BATS_TEST_TMPDIR/in"
  grep -q "^put error: timed out" "$BATS_TEST_TMPDIR/err"
  [ -z "$(find /tmp -maxdepth 1 -name '.airlock-upload-*-9001.tar' -newer "$BATS_TEST_TMPDIR/in")" ]
  # the sandbox gone: said so
  ctl POST /_double/reset > /dev/null
  ctl POST /_double/faults '{"match":"POST /v1/sandboxes/[^/]+/execs","status":404,"body":{"code":"sandbox_terminated","message":"terminated"},"times":-1}' > /dev/null
  run -3 drv --cwd /tmp --put "$BATS_TEST_TMPDIR/in"
  grep -q "^put error: the Modal sandbox .* is gone" "$BATS_TEST_TMPDIR/err"
}
