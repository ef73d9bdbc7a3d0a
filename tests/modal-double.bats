#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# The Modal double itself (tests/doubles/modal, tests/doubles/README.md):
# it starts and says its port; the official JavaScript SDK (npm `modal`,
# pinned in tests/doubles/modal-sdk) accepts it, V1 and V2 sandboxes, and
# resumes a broken output stream by offset; its faults, seen through a
# small Python gRPC client built from the project's own .proto
# (backends/modal.proto, backends/modal_router.proto).
#
# Runs by hand as root after `make` (bats tests/modal-double.bats) or from
# run-tests.sh.  As root the double runs as MODAL_DOUBLE_USER (default
# OTHER_USER when run-tests.sh set it, else nobody), its sandboxes in
# airlock's local sandbox (`--airlock`: $AIRLOCK when set, else this tree's
# build); without an airlock build, as plain subprocesses.

setup_file () {
  if ! command -v protoc > /dev/null || ! /usr/bin/python3 -c 'import grpc, google.protobuf' 2> /dev/null; then
    echo "the Modal double needs protobuf-compiler, python3-grpcio and python3-protobuf (make deps)" >&2
    return 1
  fi
  W=$(cd "$BATS_TEST_DIRNAME/.." && pwd)
  export W
  export MD_BUILD=${BUILDDIR:-$W/build}
  [ -d "$MD_BUILD" ] || MD_BUILD=$W/build
  MD_BUILD=$(cd "$MD_BUILD" 2> /dev/null && pwd || echo "$MD_BUILD")
  export MD_DIR
  MD_DIR=$(mktemp -d /var/tmp/modal-double-bats.XXXXXX)
  chmod 0755 "$MD_DIR"
  # The double and the schema where the double's user can read them.
  install -d -m 0755 "$MD_DIR/bin" "$MD_DIR/proto" "$MD_DIR/pb"
  install -m 0755 "$W/tests/doubles/modal" "$MD_DIR/bin/modal"
  install -m 0644 "$W/backends/modal.proto" "$W/backends/modal_router.proto" "$MD_DIR/proto/"
  protoc -I "$MD_DIR/proto" --python_out "$MD_DIR/pb" \
    "$MD_DIR/proto/modal.proto" "$MD_DIR/proto/modal_router.proto"
  write_client "$MD_DIR/pb/mc.py"
  export MODAL_TOKEN_ID="ak-$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')"
  export MODAL_TOKEN_SECRET="as-$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')"
  start_double main
  export MD_STATE=$MD_DIR/main MD_PID=$MD_LAST_PID MD_PORT=$MD_LAST_PORT MD_AIRLOCK=$MD_LAST_AIRLOCK
  export MODAL_SERVER_URL="http://127.0.0.1:$MD_PORT"
}

teardown_file () {
  [ -n "${MD_PID:-}" ] && stop_double "$MD_PID"
  [ -n "${MD_DIR:-}" ] && rm -rf "$MD_DIR"
}

teardown () {
  rm -f "$MD_STATE/faults.json"
}

# start_double NAME [plain]: one double, its state in $MD_DIR/NAME; sets
# MD_LAST_PID (the runuser or timeout process), MD_LAST_PORT, MD_LAST_AIRLOCK.
start_double () {
  local name=$1 plain=${2:-} state=$MD_DIR/$1 user airlock= envs=()
  mkdir -p "$state"
  # The secret in a file read at start and then removed: never in an
  # argv (runuser's lives as long as the double).
  local secret_file
  secret_file=$(mktemp "$MD_DIR/secret.XXXXXX")
  printf '%s\n' "$MODAL_TOKEN_SECRET" > "$secret_file"
  envs=(PATH=/usr/local/bin:/usr/bin:/bin HOME="$state" MODAL_DOUBLE_PROTO_DIR="$MD_DIR/proto"
        MODAL_DOUBLE_TOKEN_ID="$MODAL_TOKEN_ID" MODAL_DOUBLE_TOKEN_SECRET_FILE="$secret_file")
  if [ -z "$plain" ] && [ "$(id -u)" = 0 ]; then
    if [ -n "${AIRLOCK:-}" ]; then
      airlock=$AIRLOCK
      envs+=(AIRLOCK_HELPER="${AIRLOCK_HELPER:-}" AIRLOCK_DAEMON="${AIRLOCK_DAEMON:-}")
      [ -z "${AIRLOCK_SUPERVISOR:-}" ] || envs+=(AIRLOCK_SUPERVISOR="$AIRLOCK_SUPERVISOR")
    elif [ -x "$MD_BUILD/airlock" ]; then
      airlock=$MD_BUILD/airlock
      envs+=(AIRLOCK_HELPER="$MD_BUILD/airlock-helper" AIRLOCK_DAEMON="$MD_BUILD/airlock-daemon"
             AIRLOCK_SUPERVISOR="$MD_BUILD/airlock-supervisor"
             AIRLOCK_DEFAULT_RULES="$W/policy/default.rules")
    fi
  fi
  user=${MODAL_DOUBLE_USER:-${OTHER_USER:-nobody}}
  if [ "$(id -u)" = 0 ]; then
    chown "$user" "$state" "$secret_file"
    (cd / && exec runuser -u "$user" -- env -i "${envs[@]}" timeout -k 5 900 \
       "$MD_DIR/bin/modal" --port 0 ${airlock:+--airlock "$airlock"} --state "$state") \
       > "$state.out" 2> "$state.err" &
  else
    (cd / && exec env -i "${envs[@]}" timeout -k 5 900 "$MD_DIR/bin/modal" --port 0 \
       --state "$state") > "$state.out" 2> "$state.err" &
  fi
  MD_LAST_PID=$! MD_LAST_PORT= MD_LAST_AIRLOCK=$airlock
  for _ in $(seq 150); do
    MD_LAST_PORT=$(sed -n 's/^listening on 127\.0\.0\.1:\([0-9]*\)$/\1/p' "$state.out")
    [ -z "$MD_LAST_PORT" ] || break
    sleep 0.1
  done
  rm -f "$secret_file"
  if [ -z "$MD_LAST_PORT" ]; then
    echo "the double did not start:" >&2
    tail -n 20 "$state.err" >&2
    return 1
  fi
}

stop_double () {
  kill -TERM "$1" 2>/dev/null || true
  for _ in $(seq 100); do kill -0 "$1" 2>/dev/null || break; sleep 0.1; done
}

faults () {
  printf '%s\n' "$1" > "$MD_STATE/faults.json"
  chmod 0644 "$MD_STATE/faults.json"
}

# py SCRIPT: Python with the generated classes and mc.py (the client).
py () {
  PYTHONPATH="$MD_DIR/pb" timeout -k 5 "${PY_TIMEOUT:-60}" /usr/bin/python3 -c "$1"
}

write_client () {
  cat > "$1" <<'EOF'
# SPDX-License-Identifier: MIT
"""A small gRPC client of the Modal double, for modal-double.bats."""
import os, time, uuid
import grpc
import modal_pb2 as pb
import modal_router_pb2 as rpb

URL = os.environ["MODAL_SERVER_URL"].split("//", 1)[1]
ID, SECRET = os.environ["MODAL_TOKEN_ID"], os.environ["MODAL_TOKEN_SECRET"]
CHANNEL = grpc.insecure_channel(URL)
_token = None


def call(service, rpc, req, resp_cls, md, stream=False, timeout=30):
    path = "/%s/%s" % (service, rpc)
    kind = CHANNEL.unary_stream if stream else CHANNEL.unary_unary
    fn = kind(path, request_serializer=lambda m: m.SerializeToString(),
              response_deserializer=resp_cls.FromString)
    return fn(req, metadata=md, timeout=timeout)


def cp(rpc, req, stream=False, token=None, secret=None, timeout=30):
    global _token
    md = [("x-modal-token-id", ID), ("x-modal-token-secret", secret or SECRET)]
    if rpc != "AuthTokenGet":
        if token is None:
            if _token is None:
                _token = cp("AuthTokenGet", pb.AuthTokenGetRequest()).token
            token = _token
        if token:
            md.append(("x-modal-auth-token", token))
    resp = getattr(pb, {"SandboxGetTaskIdV2": "SandboxGetTaskId"}.get(rpc, rpc) + "Response")
    return call("modal.client.ModalClient", rpc, req, resp, md, stream, timeout)


def code(fn):
    try:
        fn()
    except grpc.RpcError as e:
        return e.code().name
    return "OK"


def app():
    return cp("AppGetOrCreate", pb.AppGetOrCreateRequest(
        app_name="bats", object_creation_type=1)).app_id


def image(app_id):
    r = cp("ImageGetOrCreate", pb.ImageGetOrCreateRequest(
        app_id=app_id, image=pb.Image(dockerfile_commands=["FROM debian:bookworm-slim"]),
        builder_version="2024.10"))
    result = r.result
    logs = []
    while not result.status:
        for m in cp("ImageJoinStreaming", pb.ImageJoinStreamingRequest(
                image_id=r.image_id, timeout=55), stream=True):
            logs += [t.data for t in m.task_logs]
            if m.result.status:
                result = m.result
    return r.image_id, result, logs


class Box:
    """A sandbox, scheduled, with its router."""

    def __init__(self, **definition):
        self.app = app()
        self.image, _, _ = image(self.app)
        self.id = cp("SandboxCreate", pb.SandboxCreateRequest(
            app_id=self.app, definition=pb.Sandbox(image_id=self.image, **definition))).sandbox_id
        self.empty_polls = 0
        while True:
            r = cp("SandboxGetTaskId", pb.SandboxGetTaskIdRequest(sandbox_id=self.id, timeout=10))
            if r.HasField("task_id"):
                self.task = r.task_id
                break
            assert not r.HasField("task_result"), r
            self.empty_polls += 1
            time.sleep(0.2)
        a = cp("TaskGetCommandRouterAccess", pb.TaskGetCommandRouterAccessRequest(task_id=self.task))
        self.jwt, self.url = a.jwt, a.url

    def rt(self, rpc, req, stream=False, jwt=None, timeout=30):
        md = [("authorization", "Bearer " + (self.jwt if jwt is None else jwt))]
        return call("modal.task_command_router.TaskCommandRouter", rpc, req,
                    getattr(rpb, rpc + "Response"), md, stream, timeout)

    def start(self, argv, exec_id=None, **kw):
        exec_id = exec_id or str(uuid.uuid4())
        kw.setdefault("stdout_config", 1)
        kw.setdefault("stderr_config", 1)
        self.rt("TaskExecStart", rpb.TaskExecStartRequest(
            task_id=self.task, exec_id=exec_id, command_args=argv, **kw))
        return exec_id

    def read(self, exec_id, fd=0, offset=0):
        """(bytes, the error code name or None): one stream from offset."""
        out = b""
        try:
            for m in self.rt("TaskExecStdioRead", rpb.TaskExecStdioReadRequest(
                    task_id=self.task, exec_id=exec_id, offset=offset, file_descriptor=fd),
                    stream=True):
                out += m.data
        except grpc.RpcError as e:
            return out, e.code().name
        return out, None

    def wait(self, exec_id):
        r = self.rt("TaskExecWait", rpb.TaskExecWaitRequest(task_id=self.task, exec_id=exec_id))
        return "%s=%d" % (r.WhichOneof("exit_status"), getattr(r, r.WhichOneof("exit_status")))

    def run(self, argv, **kw):
        e = self.start(argv, **kw)
        out, err = self.read(e)
        assert err is None, err
        return out, self.wait(e)

    def terminate(self):
        return cp("SandboxTerminate", pb.SandboxTerminateRequest(sandbox_id=self.id))
EOF
}

needs_sdk () {
  command -v node > /dev/null || skip "node is not installed (the SDK proof needs node and npm)"
  export MD_SDK=${MODAL_SDK_DIR:-$MD_BUILD/modal-sdk}
  [ -f "$MD_SDK/node_modules/modal/package.json" ] || {
    echo "the official Modal SDK is not installed in $MD_SDK: \`make modal-sdk\` (make check does it; it needs npm and the npm registry)" >&2
    return 1
  }
  cp "$W/tests/doubles/modal-sdk/check.mjs" "$MD_SDK/check.mjs"
}

sdk_check () {
  (cd "$MD_SDK" && env MODAL_SANDBOX_V2="${1:-0}" timeout -k 5 120 node check.mjs)
}

# The log's records: "rpc code" lines.
log_lines () {
  python3 -c 'import json,sys
for l in open(sys.argv[1]):
    r = json.loads(l); print(r["rpc"], r.get("code"))' "$MD_STATE/log.jsonl"
}

@test "modal double: starts, prints its port, serves gRPC on h2c (loopback)" {
  [[ "$MD_PORT" =~ ^[0-9]+$ ]]
  run py 'import mc, modal_pb2 as pb; print(mc.app().startswith("ap-"))'
  echo "$output"
  [ "$status" -eq 0 ]
  [ "$output" = True ]
  # Loopback only (grpcio may bind it as [::ffff:127.0.0.1]).
  run ss -Hltn "sport = :$MD_PORT"
  echo "$output"
  [[ "$output" =~ [^0-9]127\.0\.0\.1\]?:$MD_PORT[[:space:]] ]]
  [[ "$output" != *"0.0.0.0:$MD_PORT"* && "$output" != *"[::]:$MD_PORT"* ]]
  echo "# the double's sandboxes: ${MD_AIRLOCK:-plain subprocesses}" >&3
}

@test "modal double: the official JS SDK accepts it (V1 sandboxes, airlock's path)" {
  needs_sdk
  run sdk_check 0
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "$output" == *"checks passed"* ]]
  [[ "$output" != *"not ok"* ]]
  log_lines | grep -q '^SandboxGetTaskId OK'
  log_lines | grep -q '^TaskGetCommandRouterAccess OK'
}

@test "modal double: the official JS SDK accepts it (V2 sandboxes, the SDK's default)" {
  needs_sdk
  run sdk_check 1
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "$output" == *"V2 sandboxes"*"checks passed"* ]]
  log_lines | grep -q '^SandboxCreateV2 OK'
}

@test "modal double: the SDK resumes a stdout stream broken mid-way (UNAVAILABLE after K bytes) at its offset" {
  needs_sdk
  : > "$MD_STATE/log.jsonl"
  faults '{"stdio_break": {"after_bytes": 7, "count": 1}}'
  run sdk_check 0
  echo "$output"
  [ "$status" -eq 0 ]
  python3 -c 'import json,sys
reads = [json.loads(l) for l in open(sys.argv[1])]
reads = [r for r in reads if r["rpc"] == "TaskExecStdioRead"]
assert reads[0]["code"] == "UNAVAILABLE", reads[0]
assert reads[1]["request"].get("offset") == "7", reads[1]' "$MD_STATE/log.jsonl"
}

@test "modal double: UNAUTHENTICATED for a wrong secret, a missing or expired auth token, a router call without its JWT" {
  run py '
import time, mc, modal_pb2 as pb, modal_router_pb2 as rpb
req = pb.AppGetOrCreateRequest(app_name="x", object_creation_type=1)
print(mc.code(lambda: mc.cp("AuthTokenGet", pb.AuthTokenGetRequest(), secret="as-wrong")))
print(mc.code(lambda: mc.cp("AppGetOrCreate", req, secret="as-wrong")))
print(mc.code(lambda: mc.cp("AppGetOrCreate", req, token="")))
print(mc.code(lambda: mc.cp("AppGetOrCreate", req, token="a.b.c")))
print(mc.code(lambda: mc.cp("AppGetOrCreate", req)))
b = mc.Box()
print(mc.code(lambda: b.rt("TaskExecPoll", rpb.TaskExecPollRequest(task_id=b.task, exec_id="x"), jwt="")))
print(mc.code(lambda: b.rt("TaskExecPoll", rpb.TaskExecPollRequest(task_id=b.task, exec_id="x"), jwt="a.b.c")))
b.terminate()'
  echo "$output"
  [ "$status" -eq 0 ]
  [ "$output" = "$(printf '%s\n' UNAUTHENTICATED UNAUTHENTICATED UNAUTHENTICATED UNAUTHENTICATED OK UNAUTHENTICATED UNAUTHENTICATED)" ]
}

@test "modal double: tokens are JWT-shaped with an exp claim; a short auth_token_ttl expires them (UNAUTHENTICATED), a new one works" {
  faults '{"auth_token_ttl": 2}'
  run py '
import base64, json, time, mc, modal_pb2 as pb
t = mc.cp("AuthTokenGet", pb.AuthTokenGetRequest()).token
claims = json.loads(base64.urlsafe_b64decode(t.split(".")[1] + "=="))
print(len(t.split(".")), claims["exp"] - time.time() < 3)
req = pb.AppGetOrCreateRequest(app_name="x", object_creation_type=1)
print(mc.code(lambda: mc.cp("AppGetOrCreate", req, token=t)))
time.sleep(2.5)
print(mc.code(lambda: mc.cp("AppGetOrCreate", req, token=t)))
t2 = mc.cp("AuthTokenGet", pb.AuthTokenGetRequest()).token
print(mc.code(lambda: mc.cp("AppGetOrCreate", req, token=t2)))'
  echo "$output"
  [ "$status" -eq 0 ]
  [ "$output" = "$(printf '%s\n' '3 True' OK UNAUTHENTICATED OK)" ]
}

@test "modal double: an expired router JWT is UNAUTHENTICATED; a fresh TaskGetCommandRouterAccess works" {
  faults '{"router_token_ttl": 2}'
  run py '
import time, mc, modal_pb2 as pb, modal_router_pb2 as rpb
b = mc.Box()
poll = lambda: b.rt("TaskExecPoll", rpb.TaskExecPollRequest(task_id=b.task, exec_id=e))
e = b.start(["true"])
time.sleep(2.5)
print(mc.code(poll))
b.jwt = mc.cp("TaskGetCommandRouterAccess", pb.TaskGetCommandRouterAccessRequest(task_id=b.task)).jwt
print(mc.code(poll), b.url.startswith("https://127.0.0.1:"))
b.terminate()'
  echo "$output"
  [ "$status" -eq 0 ]
  [ "$output" = "$(printf '%s\n' UNAUTHENTICATED 'OK True')" ]
}

@test "modal double: an image build is joined (no result at first, logs, then SUCCESS); a failing one ends FAILURE with its log tail" {
  run py '
import mc, modal_pb2 as pb
a = mc.app()
r = mc.cp("ImageGetOrCreate", pb.ImageGetOrCreateRequest(app_id=a, image=pb.Image(dockerfile_commands=["FROM x"])))
print(r.result.status)
_, result, logs = mc.image(a)
print(result.status, len(logs) > 1)'
  echo "$output"
  [ "$status" -eq 0 ]
  [ "$output" = "$(printf '%s\n' 0 '1 True')" ]
  faults '{"image_build_fail": "E: Unable to locate package nosuchthing"}'
  run py '
import mc
_, result, logs = mc.image(mc.app())
print(result.status, "nosuchthing" in result.exception, "nosuchthing" in logs[-1])'
  echo "$output"
  [ "$status" -eq 0 ]
  [ "$output" = "2 True True" ]
}

@test "modal double: SandboxGetTaskId is empty N times first; commands run for real (in airlock's sandbox with --airlock)" {
  faults '{"task_id_empty_polls": 3}'
  run py '
import mc
b = mc.Box()
print(b.empty_polls)
print(b.run(["sh", "-c", "echo $$; echo out; echo err >&2; exit 5"]))
b.terminate()'
  echo "$output"
  [ "$status" -eq 0 ]
  [ "${lines[0]}" = 3 ]
  [[ "${lines[1]}" == *"\\nout\\n', 'code=5')" ]]
  if [ -n "$MD_AIRLOCK" ]; then
    # airlock's sandbox: a pid namespace of its own, the shell's pid small.
    [[ "${lines[1]}" =~ ^\(b\'[0-9]{1,2}\\n ]]
  fi
}

@test "modal double: exec semantics: merged stderr (config 2), server-side timeout kills the tree, same exec_id once, stdin by offset with eof, poll" {
  run py '
import time, mc, modal_router_pb2 as rpb
b = mc.Box()
print(b.run(["sh", "-c", "echo a; echo b >&2"], stderr_config=2))
t0 = time.time()
out, st = b.run(["sh", "-c", "sleep 60 & sleep 60; echo never"], timeout_secs=1)
print(out, st, time.time() - t0 < 10)
e = b.start(["sh", "-c", "echo once >> n; cat n"], exec_id="same-id")
b.start(["sh", "-c", "echo once >> n; cat n"], exec_id="same-id")
print(b.read(e)[0], b.wait(e))
e = b.start(["cat"])
w = lambda **k: b.rt("TaskExecStdinWrite", rpb.TaskExecStdinWriteRequest(task_id=b.task, exec_id=e, **k))
poll = lambda: b.rt("TaskExecPoll", rpb.TaskExecPollRequest(task_id=b.task, exec_id=e)).WhichOneof("exit_status")
w(offset=0, data=b"hello ")
w(offset=0, data=b"hello ")
w(offset=6, data=b"world\n", eof=True)
print(b.read(e)[0], b.wait(e), poll())
e = b.start(["sleep", "30"])
print(poll())
b.terminate()'
  echo "$output"
  [ "$status" -eq 0 ]
  [ "${lines[0]}" = "(b'a\\nb\\n', 'code=0')" ]
  [ "${lines[1]}" = "b'' signal=9 True" ]
  [ "${lines[2]}" = "b'once\\n' code=0" ]
  [ "${lines[3]}" = "b'hello world\\n' code=0 code" ]
  [ "${lines[4]}" = "None" ]
}

@test "modal double: UNAVAILABLE mid-stream after K bytes, then a read from that offset gives the identical bytes" {
  faults '{"stdio_break": {"after_bytes": 1000, "count": 1}}'
  run py '
import hashlib, mc
b = mc.Box()
e = b.start(["sh", "-c", "seq 1 20000"])
part, err = b.read(e)
rest, err2 = b.read(e, offset=len(part))
whole, _ = b.read(e)
print(len(part), err, err2, part + rest == whole, whole == b"".join(b"%d\n" % i for i in range(1, 20001)))
b.terminate()'
  echo "$output"
  [ "$status" -eq 0 ]
  [ "$output" = "1000 UNAVAILABLE None True True" ]
}

@test "modal double: UNAVAILABLE/INTERNAL bursts on a named RPC, N times, then success" {
  faults '{"errors": {"AppGetOrCreate": {"code": "UNAVAILABLE", "count": 2}, "SandboxWait": {"code": "INTERNAL", "count": 1}}}'
  run py '
import mc, modal_pb2 as pb
req = pb.AppGetOrCreateRequest(app_name="x", object_creation_type=1)
print([mc.code(lambda: mc.cp("AppGetOrCreate", req)) for _ in range(3)])
print([mc.code(lambda: mc.cp("SandboxWait", pb.SandboxWaitRequest(sandbox_id="sb-none"))) for _ in range(2)])'
  echo "$output"
  [ "$status" -eq 0 ]
  [ "${lines[0]}" = "['UNAVAILABLE', 'UNAVAILABLE', 'OK']" ]
  [ "${lines[1]}" = "['INTERNAL', 'NOT_FOUND']" ]
}

@test "modal double: a lost answer (errors rule with after) was carried out; a cached image answers at once" {
  faults '{"errors": {"AppGetOrCreate": {"code": "UNAVAILABLE", "count": 1, "after": true}}, "image_cached": true}'
  run py '
import mc, modal_pb2 as pb
req = pb.AppGetOrCreateRequest(app_name="lost-answer", object_creation_type=0)
print(mc.code(lambda: mc.cp("AppGetOrCreate", pb.AppGetOrCreateRequest(app_name="lost-answer", object_creation_type=1))))
print(mc.code(lambda: mc.cp("AppGetOrCreate", req)))
r = mc.cp("ImageGetOrCreate", pb.ImageGetOrCreateRequest(app_id=mc.app(), image=pb.Image(dockerfile_commands=["FROM x"])))
print(r.result.status)'
  echo "$output"
  [ "$status" -eq 0 ]
  [ "$output" = "$(printf '%s\n' UNAVAILABLE OK 1)" ]
}

@test "modal double: RESOURCE_EXHAUSTED quota on SandboxCreate; a slow start keeps the task id away" {
  faults '{"quota": true}'
  run py '
import mc, modal_pb2 as pb
a = mc.app(); i, _, _ = mc.image(a)
print(mc.code(lambda: mc.cp("SandboxCreate", pb.SandboxCreateRequest(app_id=a, definition=pb.Sandbox(image_id=i)))))'
  echo "$output"
  [ "$output" = RESOURCE_EXHAUSTED ]
  faults '{"slow_start": 2, "task_id_empty_polls": 0}'
  run py '
import time, mc, modal_pb2 as pb
a = mc.app(); i, _, _ = mc.image(a)
s = mc.cp("SandboxCreate", pb.SandboxCreateRequest(app_id=a, definition=pb.Sandbox(image_id=i))).sandbox_id
r = mc.cp("SandboxGetTaskId", pb.SandboxGetTaskIdRequest(sandbox_id=s, timeout=0.5))
print(r.HasField("task_id"))
r = mc.cp("SandboxGetTaskId", pb.SandboxGetTaskIdRequest(sandbox_id=s, timeout=10))
print(r.HasField("task_id"))
mc.cp("SandboxTerminate", pb.SandboxTerminateRequest(sandbox_id=s))'
  echo "$output"
  [ "$status" -eq 0 ]
  [ "$output" = "$(printf '%s\n' False True)" ]
}

@test "modal double: a sandbox terminated behind our back: router calls NOT_FOUND, wait and task id give TERMINATED; unknown ids NOT_FOUND" {
  run py '
import json, os, mc, modal_pb2 as pb, modal_router_pb2 as rpb
b = mc.Box()
e = b.start(["sleep", "30"])
with open(os.environ["MD_STATE"] + "/faults.json", "w") as f:
    json.dump({"terminate": [b.id]}, f)
print(mc.code(lambda: b.start(["true"])))
print(mc.code(lambda: b.wait(e)))
print(mc.cp("SandboxWait", pb.SandboxWaitRequest(sandbox_id=b.id, timeout=5)).result.status)
print(mc.cp("SandboxGetTaskId", pb.SandboxGetTaskIdRequest(sandbox_id=b.id)).task_result.status)
print(b.terminate().existing_result.status)
print(mc.code(lambda: mc.cp("SandboxTerminate", pb.SandboxTerminateRequest(sandbox_id="sb-0000000000000000000000"))))
print(mc.code(lambda: mc.cp("TaskGetCommandRouterAccess", pb.TaskGetCommandRouterAccessRequest(task_id="ta-nope"))))'
  echo "$output"
  [ "$status" -eq 0 ]
  [ "$output" = "$(printf '%s\n' NOT_FOUND NOT_FOUND 3 3 3 NOT_FOUND NOT_FOUND)" ]
}

@test "modal double: the log has every call, and no token secret or auth token" {
  run py '
import mc, modal_pb2 as pb
print(mc.cp("AuthTokenGet", pb.AuthTokenGetRequest()).token)
mc.app()'
  [ "$status" -eq 0 ]
  tok=${lines[0]}
  grep -q '"rpc": "AppGetOrCreate"' "$MD_STATE/log.jsonl"
  grep -q '"x-modal-token-secret": "<redacted>"' "$MD_STATE/log.jsonl"
  ! grep -qF "$MODAL_TOKEN_SECRET" "$MD_STATE/log.jsonl" || false
  ! grep -qF "${tok%.*}" "$MD_STATE/log.jsonl" || false
  ! grep -qF "$MODAL_TOKEN_SECRET" "$MD_DIR/main.err" || false
}

@test "modal double: SIGTERM ends every sandbox it started (plain subprocess mode too)" {
  start_double plain plain
  local pid=$MD_LAST_PID port=$MD_LAST_PORT
  run env MODAL_SERVER_URL="http://127.0.0.1:$port" PYTHONPATH="$MD_DIR/pb" timeout -k 5 60 /usr/bin/python3 -c '
import mc
b = mc.Box()
b.start(["sleep", "300"])
b.start(["sh", "-c", "sleep 301 & sleep 302"])'
  echo "$output"
  [ "$status" -eq 0 ]
  pgrep -f "^sleep 30[012]$" > /dev/null
  before=$(pgrep -f "$MD_DIR/plain/" | wc -l)
  [ "$before" -gt 0 ]
  stop_double "$pid"
  sleep 0.5
  run pgrep -af "$MD_DIR/plain/"
  [ "$status" -ne 0 ]
  ! ls -d "$MD_DIR"/plain/sb-* 2> /dev/null || false
  run pgrep -f "^sleep 30[012]$"
  [ "$status" -ne 0 ]
}
