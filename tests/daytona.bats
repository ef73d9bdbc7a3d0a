#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# The daytona backend against the Daytona double (tests/doubles/daytona:
# run-tests.sh starts it and exports DAYTONA_DOUBLE, DAYTONA_API_URL and
# DAYTONA_API_KEY; its fault rules script the failures).
#
# Lifecycle and errors: credentials missing, a JWT without its
# organization, 401 and 403 naming the variable; build_failed with its
# reason; a slow start with progress, and start_timeout exceeded leaving
# nothing; 5xx bursts and 429 Retry-After honoured (the double's log shows
# when the retry came); a create whose answer is lost makes no second
# sandbox; daytona.keep reuses a stopped sandbox and restores an archived
# one; close deletes; the key is never in ps, the daemon's log, the audit
# log or an error.  The sandbox life is driven through
# backends/daytona_sandbox.c by airlock-daytona-driver (DAYTONA_DRIVER),
# the calls open and close make; what needs the whole open (the session
# layer, backends/daytona_session.c) skips while a build has none.

load helpers

setup () {
  [ -n "${DAYTONA_DOUBLE:-}" ] || skip "needs the Daytona double (run-tests.sh starts it: DAYTONA_SUITES)"
  RUNDIR="$T/xdg-daytona-$BATS_TEST_NUMBER"
  mkdir -p "$RUNDIR"
  chown "$TEST_USER" "$RUNDIR"
  chmod 0700 "$RUNDIR"
  KEYFILE=$(mktemp "$T/daytona-key.XXXXXX")
  export EXTRA_ENV="XDG_RUNTIME_DIR=$RUNDIR AIRLOCK_SUPERVISOR=$AIRLOCK_SUPERVISOR AIRLOCK_BACKEND=daytona AIRLOCK_DAEMON_IDLE_EXIT=30 DAYTONA_API_URL=$DAYTONA_API_URL AIRLOCK_DAYTONA_START_TIMEOUT=60"
  # A name of this test's own, so that tests never share a sandbox.
  SB="airlock-0000beef-t$BATS_TEST_NUMBER"
  LABELS="--label airlock.owner=0000beef --label airlock.session=t$BATS_TEST_NUMBER"
  double POST /_double/reset > /dev/null
}

teardown () {
  [ -n "${DAYTONA_DOUBLE:-}" ] || return 0
  stop_daemon
  double POST /_double/reset > /dev/null || true
  rm -f "$KEYFILE"
}

# The double's control API: double METHOD PATH [JSON].
double () {
  timeout -k 5 30 curl -sS -X "$1" ${3:+-H 'Content-Type: application/json' -d "$3"} "$DAYTONA_DOUBLE$2"
}

# The driver as the test user, with the key (or $KEY when set) in its
# environment, never on its command line (env's own argv is gone once it
# executes timeout; runuser's is the harness's, see key_not_in_ps).
drv () {
  as_user env DAYTONA_API_KEY="${KEY-$DAYTONA_API_KEY}" ${DRV_ENV:-} \
    timeout -k 5 "${DRV_TIMEOUT:-90}" "$DAYTONA_DRIVER" "$@"
}

# The whole path: airlock itself, the key in its environment.
al () { as_user env DAYTONA_API_KEY="${KEY-$DAYTONA_API_KEY}" timeout -k 5 120 "$AIRLOCK" "$@"; }

# sandboxes the double has: "name state" lines.
sandboxes () {
  double GET /_double/sandboxes | python3 -c 'import json,sys
for s in json.load(sys.stdin): print(s["name"], s["state"])'
}

# The double's request log: "t method path status" lines.
requests () {
  double GET /_double/log | python3 -c 'import json,sys
for l in sys.stdin:
    r = json.loads(l)
    if not r["path"].startswith("/_double"): print(r["t"], r["method"], r["path"], r["status"])'
}

# Skip when this build's daemon cannot serve daytona sessions yet.
needs_session_layer () {
  run al session open probe --backend daytona
  if [[ "$output" == *"no daytona session layer"* ]]; then
    skip "this build has no daytona session layer (backends/daytona_session.c)"
  fi
  al session close probe > /dev/null 2>&1 || true
}

@test "daytona: no credentials: open fails naming DAYTONA_API_KEY and where to get a key" {
  KEY= run al session open s --backend daytona
  [ "$status" -ne 0 ]
  [[ "$output" == *DAYTONA_API_KEY* ]]
  [[ "$output" == *https://app.daytona.io/dashboard/keys* ]]
  [ -z "$(sandboxes)" ]
}

@test "daytona: a JWT without its organization names DAYTONA_ORGANIZATION_ID" {
  KEY= run as_user env DAYTONA_JWT_TOKEN=jwt-abc timeout -k 5 60 "$AIRLOCK" session open s --backend daytona
  [ "$status" -ne 0 ]
  [[ "$output" == *DAYTONA_ORGANIZATION_ID* ]]
  [[ "$output" != *jwt-abc* ]]
}

@test "daytona: a snapshot with resources is a configuration error naming the keys" {
  run as_user env DAYTONA_API_KEY=k AIRLOCK_DAYTONA_SNAPSHOT=snap AIRLOCK_DAYTONA_CPUS=2 \
    timeout -k 5 60 "$AIRLOCK" session open s --backend daytona
  [ "$status" -ne 0 ]
  [[ "$output" == *daytona.snapshot* && "$output" == *daytona.cpus* ]]
}

@test "daytona: a key the API refuses (401): the error names the variable, never the key" {
  KEY=wrong-key-4f1e9 run drv acquire "$SB" $LABELS
  [ "$status" -ne 0 ]
  [[ "$output" == *"HTTP 401"* && "$output" == *DAYTONA_API_KEY* ]]
  [[ "$output" == *dashboard/keys* ]]
  [[ "$output" != *wrong-key-4f1e9* ]]
  [ -z "$(sandboxes)" ]
}

@test "daytona: 403 says the credential may not do this, naming the variable" {
  double POST /_double/faults '{"match":"GET /api/sandbox$","status":403,"body":"{\"statusCode\":403,\"message\":\"Forbidden resource\"}"}'
  run drv acquire "$SB" $LABELS
  [ "$status" -ne 0 ]
  [[ "$output" == *"HTTP 403"* && "$output" == *DAYTONA_API_KEY* && "$output" == *"Forbidden resource"* ]]
}

@test "daytona: build_failed ends the open with the server's reason, and nothing is left" {
  double POST /_double/config '{"build_failed":"FROM nosuch/image: manifest unknown"}'
  run drv acquire "$SB" $LABELS --image nosuch/image
  [ "$status" -ne 0 ]
  [[ "$output" == *"could not be built: FROM nosuch/image: manifest unknown"* ]]
  [[ "$output" == *"progress: creating sandbox $SB"* ]]
  [ -z "$(sandboxes)" ]
}

@test "daytona: a slow start shows progress; start_timeout exceeded is a clear error and leaves nothing" {
  double POST /_double/config '{"start_delay_ms":3000}'
  run drv acquire "$SB" $LABELS --release
  [ "$status" -eq 0 ]
  [[ "$output" == *"progress: creating sandbox $SB from image"* ]]
  [[ "$output" == *"progress: building image"* ]]
  [[ "$output" == *'"state":"started"'* ]]
  [ -z "$(sandboxes)" ]
  double POST /_double/config '{"start_delay_ms":20000}'
  start=$SECONDS
  run drv acquire "$SB" $LABELS --start-timeout 2
  [ "$status" -ne 0 ]
  [ $((SECONDS - start)) -lt 30 ]
  [[ "$output" == *"did not start within 2 s"* && "$output" == *daytona.start_timeout* ]]
  [ -z "$(sandboxes)" ]
}

@test "daytona: a burst of 502/503/504 is retried, then the call succeeds" {
  double POST /_double/faults '[{"match":"GET /api/sandbox$","status":504,"times":1},{"match":"GET /api/sandbox/.*","status":503,"times":2},{"match":"DELETE /api/sandbox/.*","status":502,"times":1}]'
  run drv acquire "$SB" $LABELS --release
  [ "$status" -eq 0 ]
  [[ "$output" == *'"state":"started"'* ]]
  run requests
  [[ "$output" == *" GET /api/sandbox 504"*" GET /api/sandbox 200"* ]]
  [[ "$output" == *" DELETE /api/sandbox/"*" 502"*" DELETE /api/sandbox/"*" 200"* ]]
  [ "$(grep -c ' 50[234]$' <<< "$output")" -eq 4 ]
  [ -z "$(sandboxes)" ]
}

@test "daytona: 429 waits for Retry-After, even for a create, and then creates once" {
  double POST /_double/faults '{"match":"POST /api/sandbox$","status":429,"retry_after":2}'
  run drv acquire "$SB" $LABELS --release
  [ "$status" -eq 0 ]
  run requests
  # the 429, then the create 2 s later (the double's clock; generous low bound)
  python3 - "$output" <<'EOF'
import sys
rows = [l.split() for l in sys.argv[1].splitlines()]
posts = [r for r in rows if r[1] == "POST" and r[2] == "/api/sandbox"]
assert [p[3] for p in posts] == ["429", "200"], posts
gap = float(posts[1][0]) - float(posts[0][0])
assert gap >= 1.8, gap
EOF
}

@test "daytona: a create whose answer is lost makes no second sandbox: it is found by name" {
  double POST /_double/faults '{"match":"POST /api/sandbox$","drop_after":0}'
  run drv acquire "$SB" $LABELS
  [ "$status" -eq 0 ]
  [[ "$output" == *"\"name\":\"$SB\""*'"state":"started"'* ]]
  run requests
  [ "$(grep -c ' POST /api/sandbox ' <<< "$output")" -eq 1 ]
  [[ "$output" == *" GET /api/sandbox/$SB 200"* ]]
  [ "$(sandboxes | wc -l)" -eq 1 ]
  id=$(drv acquire "$SB" $LABELS | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
  run drv release "$id"
  [ "$status" -eq 0 ]
  [ -z "$(sandboxes)" ]
}

@test "daytona: keep: a stopped sandbox is started again, an archived one restored; release deletes" {
  run drv acquire "$SB" $LABELS --release --keep
  [ "$status" -eq 0 ]
  id=$(grep '^{' <<< "$output" | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
  [ "$(sandboxes)" = "$SB stopped" ]
  run drv acquire "$SB" $LABELS --release --keep
  [ "$status" -eq 0 ]
  [[ "$output" == *"progress: starting stopped sandbox $SB"* ]]
  [[ "$output" == *"\"id\":\"$id\""*'"state":"started","toolbox_url":'*'"reused":true'* ]]
  [ "$(sandboxes)" = "$SB stopped" ]
  # the reopening's auto-stop interval replaces the one it was made with
  run drv acquire "$SB" $LABELS --release --keep --auto-stop 45
  [ "$status" -eq 0 ]
  run curl -sS -H "Authorization: Bearer $DAYTONA_API_KEY" "$DAYTONA_API_URL/sandbox/$id"
  [[ "$output" == *'"autoStopInterval": 45'* || "$output" == *'"autoStopInterval":45'* ]]
  # archived (as Daytona does after auto_archive): restored at the next open
  curl -sS -X POST -H "Authorization: Bearer $DAYTONA_API_KEY" "$DAYTONA_API_URL/sandbox/$id/archive" > /dev/null
  for i in $(seq 100); do [ "$(sandboxes)" = "$SB archived" ] && break; sleep 0.1; done
  [ "$(sandboxes)" = "$SB archived" ]
  run drv acquire "$SB" $LABELS --release
  [ "$status" -eq 0 ]
  [[ "$output" == *"progress: restoring archived sandbox $SB"* ]]
  [[ "$output" == *"\"id\":\"$id\""* ]]
  [ -z "$(sandboxes)" ]
  # a sandbox of that name with another owner's labels is never taken
  run drv acquire "$SB" --label airlock.owner=0000cafe --label "airlock.session=t$BATS_TEST_NUMBER" --release --keep
  [ "$status" -eq 0 ]
  run drv acquire "$SB" $LABELS
  [ "$status" -ne 0 ]
  [[ "$output" == *"not the one airlock made for this session"* ]]
  [ "$(sandboxes)" = "$SB stopped" ]
}

@test "daytona: the key is never in ps, and never in the driver's errors or retries" {
  double POST /_double/config '{"start_delay_ms":3000}'
  double POST /_double/faults '[{"match":"GET /api/sandbox/.*","status":503,"times":2}]'
  drv acquire "$SB" $LABELS --release > "$T/daytona-drv.out" 2>&1 &
  local bg=$!
  local seen=0 watched=0 i
  for i in $(seq 20); do
    ps -u "$TEST_USER" -o args= | grep -q '^[^ ]*airlock-daytona-driver acquire' && watched=1
    # the test user's processes: airlock's (runuser's argv, root's, is the
    # harness's env -i NAME=VALUE; the double runs as another user)
    if ps -u "$TEST_USER" -o args= | grep -F -e "$DAYTONA_API_KEY"; then seen=1; fi
    sleep 0.1
  done
  wait $bg
  [ "$watched" -eq 1 ] # the check saw the driver at work
  [ "$seen" -eq 0 ]
  grep -q 'retrying in' "$T/daytona-drv.out"
  ! grep -F -e "$DAYTONA_API_KEY" "$T/daytona-drv.out" || false
  rm -f "$T/daytona-drv.out"
}

@test "daytona: open and close through airlock; close deletes; the key in no log or error" {
  needs_session_layer
  run al session open s --backend daytona
  [ "$status" -eq 0 ]
  [ "$(sandboxes | wc -l)" -eq 1 ]
  [[ "$(sandboxes)" == airlock-*-s\ started ]]
  run al exec s -- 'echo hi'
  [ "$status" -eq 0 ]
  [ "$output" = hi ]
  run al session close s
  [ "$status" -eq 0 ]
  [ -z "$(sandboxes)" ]
  # a failed open (401) says so without the key
  KEY=wrong-key-77aa run al session open s2 --backend daytona
  [ "$status" -ne 0 ]
  [[ "$output" == *DAYTONA_API_KEY* && "$output" != *wrong-key-77aa* ]]
  stop_daemon
  run grep -rlF -e "$DAYTONA_API_KEY" -e wrong-key-77aa "$RUNDIR" "$TEST_HOME/.local/state/airlock"
  [ "$status" -ne 0 ]
}
