#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# Modal's control plane (backends/modal_api.c) through airlock-modal-driver
# against the Modal double (tests/doubles/modal): a sandbox's whole life,
# what is sent on the wire (from the double's log), and the failures the
# double can script: a wrong secret, token expiry, UNAVAILABLE bursts,
# quota, a failed image build, a sandbox terminated behind our back.
#
# Runs by hand as root after `make` (bats tests/modal.bats) or from
# run-tests.sh.  As root the double runs as MODAL_DOUBLE_USER (default
# OTHER_USER when run-tests.sh set it, else nobody), its sandboxes as plain
# subprocesses (this file tests the control plane only).  The double's
# expected credentials reach it through a file only its user can read,
# never argv.

setup_file () {
  if ! command -v protoc > /dev/null || ! /usr/bin/python3 -c 'import grpc, google.protobuf' 2> /dev/null; then
    echo "the Modal double needs protobuf-compiler, python3-grpcio and python3-protobuf (make deps)" >&2
    return 1
  fi
  W=$(cd "$BATS_TEST_DIRNAME/.." && pwd)
  export W
  local build=${BUILDDIR:-$W/build}
  [ -d "$build" ] || build=$W/build
  export DRIVER=$build/airlock-modal-driver
  if [ ! -x "$DRIVER" ]; then
    echo "$DRIVER is missing: make $DRIVER" >&2
    return 1
  fi
  export MB_DIR
  MB_DIR=$(mktemp -d /var/tmp/modal-bats.XXXXXX)
  chmod 0755 "$MB_DIR"
  install -d -m 0755 "$MB_DIR/bin" "$MB_DIR/proto"
  install -m 0755 "$W/tests/doubles/modal" "$MB_DIR/bin/modal"
  install -m 0644 "$W/backends/modal.proto" "$W/backends/modal_router.proto" "$MB_DIR/proto/"
  export MODAL_TOKEN_ID="ak-$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')"
  export MODAL_TOKEN_SECRET="as-$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')"
  start_double
  export MODAL_SERVER_URL="http://127.0.0.1:$MB_PORT"
}

teardown_file () {
  if [ -n "${MB_PID:-}" ]; then
    kill -TERM "$MB_PID" 2> /dev/null || true
    for _ in $(seq 100); do kill -0 "$MB_PID" 2> /dev/null || break; sleep 0.1; done
  fi
  [ -n "${MB_DIR:-}" ] && rm -rf "$MB_DIR"
}

setup () {
  rm -f "$MB_STATE/faults.json"
  : > "$MB_STATE/log.jsonl"
}

# The double, its state in $MB_DIR/state; sets MB_PID, MB_PORT, MB_STATE.
start_double () {
  export MB_STATE=$MB_DIR/state
  local user=${MODAL_DOUBLE_USER:-${OTHER_USER:-nobody}} creds=$MB_DIR/creds
  mkdir -p "$MB_STATE"
  : > "$MB_STATE/log.jsonl"
  (umask 077 && printf 'export MODAL_DOUBLE_TOKEN_ID=%s\nexport MODAL_DOUBLE_TOKEN_SECRET=%s\n' \
     "$MODAL_TOKEN_ID" "$MODAL_TOKEN_SECRET" > "$creds")
  local run=(env -i PATH=/usr/local/bin:/usr/bin:/bin HOME="$MB_STATE"
             MODAL_DOUBLE_PROTO_DIR="$MB_DIR/proto" sh -c '. "$0" && exec timeout -k 5 900 "$1" --port 0 --state "$2"'
             "$creds" "$MB_DIR/bin/modal" "$MB_STATE")
  if [ "$(id -u)" = 0 ]; then
    chown "$user" "$MB_STATE" "$MB_STATE/log.jsonl" "$creds"
    (cd / && exec runuser -u "$user" -- "${run[@]}") > "$MB_DIR/out" 2> "$MB_DIR/err" &
  else
    (cd / && exec "${run[@]}") > "$MB_DIR/out" 2> "$MB_DIR/err" &
  fi
  export MB_PID=$! MB_PORT=
  for _ in $(seq 150); do
    MB_PORT=$(sed -n 's/^listening on 127\.0\.0\.1:\([0-9]*\)$/\1/p' "$MB_DIR/out")
    [ -z "$MB_PORT" ] || break
    sleep 0.1
  done
  if [ -z "$MB_PORT" ]; then
    echo "the double did not start:" >&2
    tail -n 20 "$MB_DIR/err" >&2
    return 1
  fi
}

faults () {
  printf '%s\n' "$1" > "$MB_STATE/faults.json"
  chmod 0644 "$MB_STATE/faults.json"
}

driver () {
  timeout -k 5 "${DRIVER_TIMEOUT:-90}" "$DRIVER" "$@"
}

# The log's records as "rpc code" lines.
log_lines () {
  python3 -c 'import json,sys
for l in open(sys.argv[1]):
    r = json.loads(l); print(r["rpc"], r.get("code"))' "$MB_STATE/log.jsonl"
}

# The value of KEY in the driver's JSON line ($output's line starting "{").
field () {
  printf '%s\n' "$output" | sed -n 's/^{.*"'"$1"'":"\([^"]*\)".*/\1/p' | head -n 1
}

no_secret_in_output () {
  [[ "$output" != *"$MODAL_TOKEN_SECRET"* ]]
}

@test "modal api: a sandbox's life: app, image built (its log as progress), sandbox, task after empty polls, router, alive, terminate, ended" {
  faults '{"task_id_empty_polls": 3}'
  run driver start --name life-1 --env FOO=bar --env EMPTY= --block-network --timeout 600 \
    --idle-timeout 120 --cpu 500 --memory 1024 --workdir /root
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "$(field app_id)" == ap-* ]]
  [[ "$(field image_id)" == im-* ]]
  [[ "$(field task_id)" == ta-* ]]
  sb=$(field sandbox_id) task=$(field task_id)
  [[ "$sb" =~ ^sb-[0-9A-Za-z]{22}$ ]]
  [[ "$output" == *"progress: building the image"* ]]
  [[ "$output" == *"progress: => FROM debian:bookworm-slim"* ]]
  [[ "$output" == *"progress: Built image im-"* ]]
  [[ "$output" == *"progress: sandbox $sb is running (task $task)"* ]]
  # The wire: the RPC sequence, the request fields, the metadata.
  [ "$(log_lines | grep -c '^SandboxGetTaskId OK')" -eq 4 ]
  [ "$(log_lines | head -n 5 | tr '\n' ' ')" = "AuthTokenGet OK AppGetOrCreate OK ImageGetOrCreate OK ImageJoinStreaming OK SandboxCreate OK " ]
  python3 - "$MB_STATE/log.jsonl" <<'EOF'
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
by = {r["rpc"]: r for r in recs}
app = by["AppGetOrCreate"]["request"]
assert app == {"app_name": "airlock", "object_creation_type": "OBJECT_CREATION_TYPE_CREATE_IF_MISSING"}, app
img = by["ImageGetOrCreate"]["request"]
assert img["image"] == {"dockerfile_commands": ["FROM debian:bookworm-slim"]}, img
assert img["builder_version"] == "2024.10", img
join = by["ImageJoinStreaming"]["request"]
assert join["timeout"] == 55.0, join
d = by["SandboxCreate"]["request"]["definition"]
assert d["entrypoint_args"] == ["sleep", "infinity"], d
assert d["timeout_secs"] == 600 and d["idle_timeout_secs"] == 120 and d["name"] == "life-1", d
assert d["resources"] == {"milli_cpu": 500, "memory_mb": 1024}, d
assert d["workdir"] == "/root", d
assert d["network_access"] == {"network_access_type": "BLOCKED"}, d
assert d["environment_variables"] == {"contents": {"FOO": "bar", "EMPTY": ""}}, d
for r in recs:
    md = r["metadata"]
    assert md["x-modal-client-type"] == "7" and md["x-modal-client-version"] == "1.0.0", md
    assert md["x-modal-token-secret"] == "<redacted>", md
    assert ("x-modal-auth-token" in md) == (r["rpc"] != "AuthTokenGet"), r
EOF
  run driver router "$sb" "$task"
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "$output" == *"\"url\":\"https://127.0.0.1:$MB_PORT\",\"jwt\":true,\"exp_in\":3"* ]]
  run driver alive "$sb"
  [ "$output" = running ]
  run driver terminate "$sb"
  [ "$status" -eq 0 ]
  run driver alive "$sb"
  echo "$output"
  [ "$status" -eq 0 ]
  [ "$output" = "ended: TERMINATED: Sandbox terminated" ]
  # terminating again is no error
  run driver terminate "$sb"
  [ "$status" -eq 0 ]
}

@test "modal api: OPEN by default, ALLOWLIST with CIDRs; an im- image is used as it is (no build)" {
  run driver start --cidr 10.0.0.0/8 --cidr 192.168.1.0/24
  echo "$output"
  [ "$status" -eq 0 ]
  image=$(field image_id)
  driver terminate "$(field sandbox_id)"
  run driver life --image "$image"
  echo "$output"
  [ "$status" -eq 0 ]
  [ "$(field image_id)" = "$image" ]
  [ "$(log_lines | grep -c '^ImageGetOrCreate')" -eq 1 ]
  python3 - "$MB_STATE/log.jsonl" <<'EOF'
import json, sys
creates = [json.loads(l)["request"]["definition"] for l in open(sys.argv[1]) if '"SandboxCreate"' in l]
assert creates[0]["network_access"] == {"network_access_type": "ALLOWLIST",
                                        "allowed_cidrs": ["10.0.0.0/8", "192.168.1.0/24"]}, creates[0]
assert creates[1]["network_access"] == {"network_access_type": "OPEN"}, creates[1]
assert "environment_variables" not in creates[1] and "name" not in creates[1], creates[1]
EOF
}

@test "modal api: an environment entry that is not NAME=value is refused before any call, not echoed" {
  run driver start --env A=1 --env not-a-pair-s3cr3t
  echo "$output"
  [ "$status" -eq 1 ]
  [ "$output" = "error: modal: environment entry 2 is not NAME=value" ]
  [ ! -s "$MB_STATE/log.jsonl" ]
}

@test "modal api: a wrong secret is UNAUTHENTICATED, names the credential source and how to fix it, never the secret" {
  local wrong="as-wrong-$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')"
  run env MODAL_TOKEN_SECRET="$wrong" timeout -k 5 60 "$DRIVER" start
  echo "$output"
  [ "$status" -eq 1 ]
  [[ "$output" == *"error: "*"UNAUTHENTICATED"* ]]
  [[ "$output" == *"MODAL_TOKEN_ID/MODAL_TOKEN_SECRET"* ]]
  [[ "$output" == *"modal token new"* ]]
  [[ "$output" != *"$wrong"* ]]
  no_secret_in_output
  # not retried: one AuthTokenGet, nothing after it
  [ "$(log_lines)" = "AuthTokenGet UNAUTHENTICATED" ]
}

@test "modal api: a short-lived auth token is renewed before its exp, transparently" {
  faults '{"auth_token_ttl": 4}'
  run driver life --pause 5
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "$output" == *"ended: TERMINATED"* ]]
  [ "$(log_lines | grep -c '^AuthTokenGet OK')" -ge 2 ]
  ! log_lines | grep -q UNAUTHENTICATED || false
}

@test "modal api: UNAUTHENTICATED on a call (a token the server no longer takes): a new token, the call again, once" {
  faults '{"errors": {"SandboxWait": {"code": "UNAUTHENTICATED", "count": 1, "message": "token expired"}}}'
  run driver life
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "$output" == *"running"* ]]
  [ "$(log_lines | sed -n '/^SandboxWait/,$p' | head -n 3 | tr '\n' ' ')" = "SandboxWait UNAUTHENTICATED AuthTokenGet OK SandboxWait OK " ]
  # twice in a row is an error, not a loop
  faults '{"errors": {"SandboxWait": {"code": "UNAUTHENTICATED", "count": 5, "message": "no"}}}'
  run driver alive sb-0000000000000000000000
  echo "$output"
  [ "$status" -eq 1 ]
  [[ "$output" == *"UNAUTHENTICATED: no"*"MODAL_TOKEN_ID/MODAL_TOKEN_SECRET"* ]]
}

@test "modal api: an UNAVAILABLE burst is retried with the same idempotency key and x-retry-attempt" {
  # "after": the double carries the call out, then fails it (a lost
  # answer), and logs its metadata; a burst before the call is logged
  # without metadata, so that one is only counted.
  faults '{"errors": {"AppGetOrCreate": {"code": "UNAVAILABLE", "count": 2, "after": true}, "SandboxCreate": {"code": "INTERNAL", "count": 1}}}'
  run driver life
  echo "$output"
  [ "$status" -eq 0 ]
  python3 - "$MB_STATE/log.jsonl" <<'EOF'
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
apps = [r for r in recs if r["rpc"] == "AppGetOrCreate"]
assert [r["code"] for r in apps] == ["UNAVAILABLE", "UNAVAILABLE", "OK"], apps
assert len({r["metadata"]["x-idempotency-key"] for r in apps}) == 1, apps
assert [r["metadata"].get("x-retry-attempt") for r in apps] == [None, "1", "2"], apps
assert all(float(r["metadata"]["x-retry-delay"]) > 0 for r in apps[1:]), apps
creates = [r for r in recs if r["rpc"] == "SandboxCreate"]
assert [r["code"] for r in creates] == ["INTERNAL", "OK"], creates
assert creates[1]["metadata"]["x-retry-attempt"] == "1", creates
# every logical call has a key of its own
keys = [r["metadata"]["x-idempotency-key"] for r in recs
        if r["rpc"] in ("AuthTokenGet", "SandboxCreate", "SandboxWait", "SandboxTerminate") and "metadata" in r]
assert len(set(keys)) == len(keys), keys
EOF
}

@test "modal api: UNAVAILABLE past the retries is an error that names the server, not the secret" {
  faults '{"errors": {"SandboxTerminate": {"code": "UNAVAILABLE", "count": 10, "message": "going away"}}}'
  run driver terminate sb-0000000000000000000000
  echo "$output"
  [ "$status" -eq 1 ]
  [[ "$output" == *"UNAVAILABLE: going away"*"http://127.0.0.1:$MB_PORT"* ]]
  [ "$(log_lines | grep -c '^SandboxTerminate UNAVAILABLE')" -eq 4 ]
  no_secret_in_output
  # nothing listening: the URL without its user info
  run env MODAL_SERVER_URL="http://user:hunter2pw@127.0.0.1:1/" timeout -k 5 60 "$DRIVER" alive sb-x
  echo "$output"
  [ "$status" -eq 1 ]
  [[ "$output" == *"http://127.0.0.1:1"* ]]
  [[ "$output" != *hunter2pw* ]]
}

@test "modal api: an image build's join that fails (UNAVAILABLE) is joined again; a cached image needs no join" {
  faults '{"errors": {"ImageJoinStreaming": {"code": "UNAVAILABLE", "count": 2}}, "image_build_secs": 1}'
  run driver life
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "$output" == *"progress: Built image im-"* ]]
  [ "$(log_lines | grep '^ImageJoinStreaming' | tr '\n' ' ')" = "ImageJoinStreaming UNAVAILABLE ImageJoinStreaming UNAVAILABLE ImageJoinStreaming OK " ]
  : > "$MB_STATE/log.jsonl"
  faults '{"image_cached": true}'
  run driver life
  [ "$status" -eq 0 ]
  [[ "$output" != *"building the image"* ]]
  ! log_lines | grep -q '^ImageJoinStreaming' || false
}

@test "modal api: RESOURCE_EXHAUSTED on SandboxCreate is a quota error" {
  faults '{"quota": "Sandbox quota exceeded: 100 running"}'
  run driver start
  echo "$output"
  [ "$status" -eq 1 ]
  [[ "$output" == *"creating the sandbox"*"RESOURCE_EXHAUSTED: Sandbox quota exceeded: 100 running"*"quota"* ]]
  ! log_lines | grep -q '^SandboxGetTaskId' || false
}

@test "modal api: a failed image build is an error with its log's tail; no sandbox is created" {
  faults '{"image_build_fail": "E: Unable to locate package nosuchthing"}'
  run driver start --image debian:nosuch
  echo "$output"
  [ "$status" -eq 1 ]
  [[ "$output" == *"error: modal: the image build of debian:nosuch failed: FAILURE: Image build for im-"*"nosuchthing; its log ended with:"* ]]
  [[ "$output" == *"  step 2/2 failed"* ]]
  [[ "$(printf '%s\n' "$output" | tail -n 1)" == "  E: Unable to locate package nosuchthing" ]]
  ! log_lines | grep -q '^SandboxCreate' || false
}

@test "modal api: a duplicate name is ALREADY_EXISTS" {
  run driver start --name twin
  [ "$status" -eq 0 ]
  sb=$(field sandbox_id)
  run driver start --name twin
  echo "$output"
  [ "$status" -eq 1 ]
  [[ "$output" == *"ALREADY_EXISTS"*"has that name already"* ]]
  driver terminate "$sb"
}

@test "modal api: terminated behind our back: alive says ended, router access is NOT_FOUND (gone), terminate is no error" {
  run driver start
  [ "$status" -eq 0 ]
  sb=$(field sandbox_id) task=$(field task_id)
  faults "{\"terminate\": [\"$sb\"]}"
  run driver alive "$sb"
  echo "$output"
  [[ "$output" == "ended: TERMINATED: Sandbox terminated"* ]]
  run driver router "$sb" "$task"
  echo "$output"
  [ "$status" -eq 3 ]
  [[ "$output" == *"gone: "*"NOT_FOUND"* ]]
  run driver terminate "$sb"
  [ "$status" -eq 0 ]
  # a sandbox Modal does not know is ended too
  run driver alive sb-0000000000000000000000
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "$output" == "ended: Modal no longer knows the sandbox sb-0000000000000000000000 (NOT_FOUND)" ]]
}

@test "modal api: a sandbox that ends before it has a task is an error with its result" {
  faults '{"task_id_empty_polls": 100, "terminate": ["*"]}'
  run driver start
  echo "$output"
  [ "$status" -eq 1 ]
  [[ "$output" == *"ended before it started: TERMINATED"* ]]
}

@test "modal api: no task within --start-timeout: an error, and the sandbox is terminated" {
  faults '{"task_id_empty_polls": 1000}'
  run driver start --start-timeout 3
  echo "$output"
  [ "$status" -eq 1 ]
  [[ "$output" == *"had no task after 3 s"* ]]
  log_lines | tail -n 1 | grep -q '^SandboxTerminate OK'
}

@test "modal api: the double's log and stderr hold no token secret" {
  run driver life
  [ "$status" -eq 0 ]
  ! grep -qF "$MODAL_TOKEN_SECRET" "$MB_STATE/log.jsonl" || false
  ! grep -qF "$MODAL_TOKEN_SECRET" "$MB_DIR/err" || false
  no_secret_in_output
}
