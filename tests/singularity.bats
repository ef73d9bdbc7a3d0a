#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# The singularity backend's own behaviour (BACKEND=singularity, run by
# tests/run-tests.sh on the Apptainer stand-in, tests/doubles/apptainer):
# which executable it finds, the exact argv it runs (from the stand-in's
# log), flags gated by version, the kill path inside the instance, env
# passthrough, and that close leaves nothing.  sessions.bats and files.bats
# run on it too; the SIF cache has its own suite.

load helpers

setup () {
  [ "${BACKEND:-}" = singularity ] || skip "run with BACKEND=singularity (tests/run-tests.sh)"
  STANDIN_DIR=${STANDIN_DIR:-$BATS_TEST_DIRNAME/doubles}
  RUNDIR="$T/xdg-sg-$BATS_TEST_NUMBER"
  mkdir -p "$RUNDIR"
  chown "$TEST_USER" "$RUNDIR"
  chmod 0700 "$RUNDIR"
  D=$(mktemp -d "$T/sg.XXXXXX")
  chmod 0755 "$D"
  chown "$TEST_USER" "$D"
  LOG="$D/log.jsonl"
  export EXTRA_ENV="XDG_RUNTIME_DIR=$RUNDIR AIRLOCK_SUPERVISOR=$AIRLOCK_SUPERVISOR AIRLOCK_BACKEND=singularity AIRLOCK_DAEMON_IDLE_EXIT=30 ${BACKEND_ENV:-} STANDIN_APPTAINER_LOG=$LOG"
}

teardown () {
  [ "${BACKEND:-}" = singularity ] || return 0
  stop_daemon
  # Instances a failed test left (the stand-in's, in the test user's home).
  as_user timeout -k 5 30 env PATH="$STANDIN_DIR:/usr/bin:/bin" apptainer instance stop --all --force \
    > /dev/null 2>&1 || true
  rm -rf "$D"
}

al () { as_user timeout -k 5 120 "$AIRLOCK" "$@"; }
api () { printf '%s\n' "$@" | as_user timeout -k 5 120 "$AIRLOCK" serve; }

# The user config file of this test (JSON), for lists and maps: in a
# directory of its own (airlock's configuration directory, which no
# sandbox may see, is the file's).
config () {
  mkdir -p "$D/cfg"
  printf '%s\n' "$1" > "$D/cfg/config.json"
  chmod 0644 "$D/cfg/config.json"
  EXTRA_ENV+=" AIRLOCK_CONFIG=$D/cfg/config.json"
}

# Python over the stand-in's log: L is the list of records, then $1 runs.
log_py () {
  python3 -c 'import json, sys
L = [json.loads(l) for l in open(sys.argv[1])]
def cmd(*words):
    return [l for l in L if l["argv"][1:1 + len(words)] == list(words)]
'"$1" "$LOG" "${@:2}"
}

# The argv (from the second word) of the last recorded `instance start`.
start_argv () { log_py 'print("\n".join(cmd("instance", "start")[-1]["argv"][1:]))'; }

@test "singularity: apptainer first in PATH, then singularity; the version read once" {
  run al session open s
  [ "$status" -eq 0 ]
  al exec s -- true
  al session close s
  log_py '
exes = {l["argv"][0] for l in L}
assert exes == {sys.argv[2] + "/apptainer"}, exes
assert len(cmd("--version")) == 1, [l["argv"] for l in L]'  "$STANDIN_DIR"
  # Only singularity (a symlink to the stand-in, which then is SingularityCE).
  mkdir "$D/only"
  ln -s "$STANDIN_DIR/apptainer" "$D/only/singularity"
  stop_daemon
  : > "$LOG"
  EXTRA_ENV+=" PATH=$D/only:/usr/bin:/bin" run al session open s2
  [ "$status" -eq 0 ]
  EXTRA_ENV+=" PATH=$D/only:/usr/bin:/bin" run al session close s2
  log_py '
exes = {l["argv"][0] for l in L}
assert exes == {sys.argv[2] + "/only/singularity"}, exes' "$D"
}

@test "singularity: singularity.executable: a path or a name; missing, it says so" {
  mkdir "$D/bin"
  ln -s "$STANDIN_DIR/apptainer" "$D/bin/my-apptainer"
  EXTRA_ENV+=" AIRLOCK_SINGULARITY_EXECUTABLE=$D/bin/my-apptainer" run al session open s
  [ "$status" -eq 0 ]
  al session close s
  log_py 'assert {l["argv"][0] for l in L} == {sys.argv[2] + "/bin/my-apptainer"}' "$D"
  EXTRA_ENV+=" AIRLOCK_SINGULARITY_EXECUTABLE=$D/bin/nothing-here" run al session open s3
  [ "$status" -ne 0 ]
  [[ "$output" == *"singularity.executable $D/bin/nothing-here"* ]]
  [[ "$output" == *"https://apptainer.org/docs/admin/main/installation.html"* ]]
}

@test "singularity: neither apptainer nor singularity: the error says how to install one" {
  EXTRA_ENV+=" PATH=/usr/bin:/bin" run al session open s
  [ "$status" -ne 0 ]
  [[ "$output" == *"neither apptainer nor singularity is in PATH"* ]]
  [[ "$output" == *"https://apptainer.org/docs/admin/main/installation.html"* ]]
  run al session ls
  [[ "$output" != *" s "* ]]
  [ ! -s "$LOG" ]
}

@test "singularity: the instance's exact flags, the supervisor's exec, no stray APPTAINER_* passed on" {
  # The caller's environment carries flags' environment twins: none may
  # reach apptainer (APPTAINER_BIND would silently add a bind).
  EXTRA_ENV+=" APPTAINER_BIND=/etc:/leak SINGULARITY_BIND=/etc:/leak2 APPTAINERENV_LEAK=1 SINGULARITYENV_LEAK=2 APPTAINER_NO_HOME=false"
  run al session open s
  [ "$status" -eq 0 ]
  run al exec s -- 'ls -d /leak /leak2 2>&1; echo "[${LEAK:-}]"'
  [[ "$output" == *"[]"* ]]
  [[ "$output" != *"/leak "* ]]
  al session close s
  log_py '
import re
start = cmd("instance", "start")
assert len(start) == 1, start
a = start[0]["argv"][3:]
name, image = a[-1], a[-2]
assert re.fullmatch(r"airlock-[0-9a-f]{8}-s", name), name
assert image == sys.argv[2], image
flags = a[:-2]
for f in ("--containall", "--no-home", "--cleanenv", "--writable-tmpfs"):
    assert f in flags, (f, flags)
i = flags.index("--net")
assert flags[i + 1:i + 3] == ["--network", "none"], flags
assert "--overlay" not in flags and "--memory" not in flags, flags
binds = [flags[k + 1] for k, f in enumerate(flags) if f in ("--bind", "-B")]
assert any(b.endswith(":/.airlock-control:ro") for b in binds), binds
assert not any("/leak" in b for b in binds), binds
ex = cmd("exec")
assert len(ex) == 1, ex
e = ex[0]["argv"][2:]
assert e[0] == "--cleanenv", e
k = e.index("instance://" + name)
assert e[k + 1:] == ["/.airlock-control/airlock-supervisor", "--instance"], e
stops = cmd("instance", "stop")
assert stops and stops[0]["argv"][-1] == name, stops
for l in L:
    for k in l["env"]:
        assert not k.startswith(("APPTAINERENV_", "SINGULARITYENV_")), (k, l["argv"])
        assert k not in ("APPTAINER_BIND", "SINGULARITY_BIND", "APPTAINER_NO_HOME"), (k, l["argv"])
' "$SINGULARITY_IMAGE"
}

@test "singularity: no command text and no environment value in any argv airlock runs" {
  config '{"singularity": {"env": {"CFG_TOKEN": "cfg-value-4k2"}, "forward_env": ["FWD_TOKEN"]}}'
  EXTRA_ENV+=" FWD_TOKEN=fwd-value-9q1"
  run al session open s
  [ "$status" -eq 0 ]
  run al exec s --env JOB_TOKEN=job-value-7z3 -- 'echo "cmd-text-5x8 $CFG_TOKEN $FWD_TOKEN $JOB_TOKEN"'
  [ "$status" -eq 0 ]
  # env passthrough: the session's and the job's variables reach the command
  [[ "$output" == *"cmd-text-5x8 cfg-value-4k2 fwd-value-9q1 job-value-7z3"* ]]
  al session close s
  log_py '
for l in L:
    text = " ".join(l["argv"])
    for s in ("cmd-text-5x8", "cfg-value-4k2", "fwd-value-9q1", "job-value-7z3", "CFG_TOKEN"):
        assert s not in text, (s, l["argv"])'
}

@test "singularity: singularity.persistent: --overlay DIR instead of --writable-tmpfs, removed at close" {
  EXTRA_ENV+=" AIRLOCK_SINGULARITY_PERSISTENT=true"
  run al session open s
  [ "$status" -eq 0 ]
  al exec s -- 'echo kept > /tmp/f'
  run al exec s -- 'cat /tmp/f'
  [ "$output" = kept ]
  overlay=$(log_py 'a = cmd("instance", "start")[-1]["argv"]; print(a[a.index("--overlay") + 1])')
  [ -d "$overlay" ]
  run start_argv
  [[ "$output" != *"--writable-tmpfs"* ]]
  al session close s
  [ ! -e "$overlay" ]
}

@test "singularity: singularity.binds: ro and rw as given, visible in the instance; a missing source refused" {
  mkdir "$D/ro" "$D/rw"
  echo data > "$D/ro/f"
  chown "$TEST_USER" "$D/rw"
  config '{"singularity": {"binds": ["'"$D"'/ro:/data:ro", "'"$D"'/rw:/out"]}}'
  run al session open s
  [ "$status" -eq 0 ]
  run al exec s -- 'cat /data/f; echo w > /out/g; touch /data/x 2>&1 || echo refused'
  [[ "$output" == *data*refused* ]]
  [ "$(cat "$D/rw/g")" = w ]
  run start_argv
  [[ "$output" == *"$D/ro:/data:ro"* ]]
  [[ "$output" == *"$D/rw:/out"* ]]
  al session close s
  config '{"singularity": {"binds": ["'"$D"'/nowhere:/x:ro"]}}'
  run al session open s2
  [ "$status" -ne 0 ]
  [[ "$output" == *"singularity.binds $D/nowhere:/x:ro"* ]]
}

@test "singularity: resource flags only where the version has them; the open's warning says so" {
  EXTRA_ENV+=" AIRLOCK_SINGULARITY_MEMORY=512M AIRLOCK_SINGULARITY_PIDS_LIMIT=100"
  run al session open s
  [ "$status" -eq 0 ]
  [[ "$output" != *"not applied"* ]]
  run start_argv
  [[ "$output" == *$'--memory\n'* ]]
  [[ "$output" == *$'--pids-limit\n100'* ]]
  al session close s
  stop_daemon
  : > "$LOG"
  EXTRA_ENV+=" STANDIN_APPTAINER_VERSION=1.0.3" run al session open s2
  [ "$status" -eq 0 ]
  [[ "$output" == *"warning:"*"singularity.memory"*"singularity.pids_limit"*"not applied"* ]]
  run start_argv
  [ -n "$output" ]
  [[ "$output" != *"--memory"* && "$output" != *"--pids-limit"* ]]
  run al exec s2 -- 'echo works'
  [ "$output" = works ]
  al session close s2
}

@test "singularity: a timeout kills the command's whole tree inside the instance" {
  al session open s
  run al exec s --timeout 2 -- 'sleep 4731 & (sleep 4732 &) ; sleep 4733'
  [ "$status" -eq 124 ]
  gone 'sleep 473[123]' 10
  # the session is still usable
  run al exec s -- 'echo alive'
  [ "$output" = alive ]
  al session close s
}

@test "singularity: close leaves no instance and no process" {
  run al session open s
  [ "$status" -eq 0 ]
  name=$(log_py 'print(cmd("instance", "start")[-1]["argv"][-1])')
  run as_user env PATH="$STANDIN_DIR:/usr/bin:/bin" apptainer instance list --json
  [[ "$output" == *"\"instance\": \"$name\""* ]]
  pid=$(printf '%s\n' "$output" | python3 -c 'import json,sys; print(json.load(sys.stdin)["instances"][0]["pid"])')
  kill -0 "$pid"
  al exec s -- 'sleep 4741 &' || true
  run al session close s
  [ "$status" -eq 0 ]
  run as_user env PATH="$STANDIN_DIR:/usr/bin:/bin" apptainer instance list --json
  [[ "$output" == *'"instances": []'* ]]
  ended "$pid"
  gone 'sleep 4741'
  # nothing of the session's exec or instance is left of the test user's
  ! pgrep -u "$TEST_USER" -f "instance://$name" || false
  ! pgrep -u "$TEST_USER" -f 'instance-agent.py' || false
}

@test "singularity: a missing image, a file that is no SIF: clear errors, nothing started" {
  EXTRA_ENV+=" AIRLOCK_SINGULARITY_IMAGE=$D/missing.sif" run al session open s
  [ "$status" -ne 0 ]
  [[ "$output" == *"singularity.image $D/missing.sif"*"No such file or directory"* ]]
  head -c 100000 /dev/urandom > "$D/corrupt.sif"
  chmod 0644 "$D/corrupt.sif"
  EXTRA_ENV+=" AIRLOCK_SINGULARITY_IMAGE=$D/corrupt.sif" run al session open s2
  [ "$status" -ne 0 ]
  [[ "$output" == *"$D/corrupt.sif is not a SIF image"* ]]
  log_py 'assert not cmd("instance", "start"), L'
}

@test "singularity: the posture: container, apptainer, no network" {
  run api '{"id":1,"op":"open","session":"s","workdir":"'"$WORK"'"}' '{"id":2,"op":"close","session":"s"}'
  [ "$status" -eq 0 ]
  printf '%s\n' "$output" | grep '"id":1,"ok"' | python3 -c '
import json, sys
r = json.loads(sys.stdin.readline())
assert r["ok"], r
p = r["posture"]
assert p["backend"] == "singularity" and p["privilege"] == "apptainer", p
assert p["isolation"]["kind"] == "container", p
assert p["isolation"]["network"] == "none", p
assert {"mount", "pid", "ipc", "net"} <= set(p["isolation"]["namespaces"]), p'
}

@test "singularity: two daemons open one docker:// image at once: one build; a cached SIF corrupted behind its back is rebuilt at the next open, with a notice" {
  cdir="$D/cache"
  mkdir -m 0700 "$cdir"
  chown "$TEST_USER" "$cdir"
  rd2="$RUNDIR-2"
  mkdir -p "$rd2" && chown "$TEST_USER" "$rd2" && chmod 0700 "$rd2"
  EXTRA_ENV+=" AIRLOCK_SINGULARITY_CACHE_DIR=$cdir AIRLOCK_SINGULARITY_DISK_FLOOR=1M"
  EXTRA_ENV+=" AIRLOCK_SINGULARITY_IMAGE=docker://registry.invalid/once:1 STANDIN_APPTAINER_BUILD_DELAY=2"
  al session open a > "$D/a.out" 2>&1 &
  pa=$!
  EXTRA_ENV+=" XDG_RUNTIME_DIR=$rd2" al session open b > "$D/b.out" 2>&1 &
  pb=$!
  wait $pa || { cat "$D/a.out"; false; }
  wait $pb || { cat "$D/b.out"; false; }
  cat "$D/a.out" "$D/b.out"
  run al exec a -- 'echo a-ok'
  [ "$output" = a-ok ]
  EXTRA_ENV+=" XDG_RUNTIME_DIR=$rd2" run al exec b -- 'echo b-ok'
  [ "$output" = b-ok ]
  log_py 'assert len(cmd("build")) == 1, [l["argv"] for l in cmd("build")]'
  al session close a
  EXTRA_ENV+=" XDG_RUNTIME_DIR=$rd2" al session close b
  EXTRA_ENV+=" XDG_RUNTIME_DIR=$rd2" al daemon stop || true
  # The scratch cleanup of a cluster, or a bad copy: the header is gone.
  sif=$(ls "$cdir"/*.sif)
  [ "$(echo $sif | wc -w)" = 1 ]
  printf 'garbage' | dd of="$sif" bs=1 seek=32 conv=notrunc status=none
  run al session open c
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "$output" == *"corrupt"*"rebuilding"* ]]
  run al exec c -- 'echo c-ok'
  [ "$output" = c-ok ]
  al session close c
  log_py 'assert len(cmd("build")) == 2, [l["argv"] for l in cmd("build")]'
}
