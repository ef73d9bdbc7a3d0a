#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# The Apptainer stand-in (tests/doubles/apptainer) on its own, driven
# directly as the test user: the singularity suites believe what it does,
# so it is checked first.  Its instances run in airlock's local sandbox, so
# this suite runs in every privilege mode.

load helpers

setup () {
  STANDIN_DIR=${STANDIN_DIR:-$BATS_TEST_DIRNAME/doubles}
  D=$(mktemp -d "$T/standin.XXXXXX")
  chmod 0755 "$D"
  mkdir "$D/home" "$D/w"
  chown "$TEST_USER" "$D/home" "$D/w"
  LOG="$D/w/log.jsonl"
  IMG="$D/w/img.sif"
  export EXTRA_ENV="HOME=$D/home PATH=$STANDIN_DIR:/usr/local/bin:/usr/bin:/bin STANDIN_AIRLOCK=$AIRLOCK STANDIN_APPTAINER_LOG=$LOG"
}

teardown () {
  # Whatever a failed test left: its instances (stopped by the stand-in,
  # which removes their private dirs), then its files.
  as_user timeout -k 5 30 apptainer instance stop --all --force > /dev/null 2>&1 || true
  as_user timeout -k 5 30 singularity instance stop --all --force > /dev/null 2>&1 || true
  rm -rf "$D"
}

# The stand-in as the test user, bounded.
sd () { as_user timeout -k 5 60 "$@"; }

image () { sd apptainer build "$IMG" docker://debian:bookworm-slim > /dev/null 2>&1; }

# The pid of the exec client (the stand-in's python) whose argv after
# "exec " starts with $1.
client () {
  pgrep -u "$TEST_USER" -f "^/usr/bin/python3 [^ ]*/apptainer exec $1"
}

# A key of instance NAME's state file, where the real apptainer keeps it.
state () { # name, key
  python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' \
    "$D/home/.apptainer/instances/app/$(hostname)/$TEST_USER/$1/$1.json" "$2"
}

start () { # name, extra flags...
  local name=$1; shift
  sd apptainer instance start --containall --no-home --cleanenv --net --network none \
    --writable-tmpfs "$@" "$IMG" "$name"
}

@test "standin: --version and version, as apptainer, singularity and older ones" {
  run sd apptainer --version
  [ "$output" = "apptainer version 1.3.4" ]
  run sd apptainer version
  [ "$output" = "1.3.4" ]
  run sd singularity --version
  [ "$output" = "singularity-ce version 3.11.5" ]
  EXTRA_ENV+=" STANDIN_APPTAINER_VERSION=3.8.7" run sd singularity --version
  [ "$output" = "singularity version 3.8.7" ]
  EXTRA_ENV+=" STANDIN_APPTAINER_VERSION=1.0.3" run sd apptainer --version
  [ "$output" = "apptainer version 1.0.3" ]
}

@test "standin: build writes a SIF with a real header, refuses to overwrite without --force" {
  mkdir "$D/w/tmp"; chown "$TEST_USER" "$D/w/tmp"
  EXTRA_ENV+=" APPTAINER_TMPDIR=$D/w/tmp APPTAINER_CACHEDIR=$D/w/cache STANDIN_APPTAINER_SIF_SIZE=300000" \
    run sd apptainer build "$IMG" docker://debian:bookworm-slim
  [ "$status" -eq 0 ]
  [[ "$output" == *"INFO:    Starting build..."*"INFO:    Build complete: $IMG"* ]]
  [ "$(stat -c %s "$IMG")" = 300000 ]
  [ "$(head -c 32 "$IMG" | tr -d '\0')" = '#!/usr/bin/env run-singularity' ]
  [ "$(dd if="$IMG" bs=1 skip=32 count=9 2>/dev/null)" = SIF_MAGIC ]
  [ "$(dd if="$IMG" bs=1 skip=42 count=2 2>/dev/null)" = 01 ]
  [ -z "$(ls -A "$D/w/tmp")" ]       # its scratch is gone
  [ -d "$D/w/cache/cache/blob" ]     # the layer cache where apptainer has it
  run sd apptainer build "$IMG" docker://debian:bookworm-slim
  [ "$status" -eq 255 ]
  [[ "$output" == *"FATAL:   While checking build target: build target '$IMG' already exists. Use --force"* ]]
  run sd apptainer build --force "$IMG" oras://example.org/x:1
  [ "$status" -eq 0 ]
  [ "$(stat -c %s "$IMG")" = 1048576 ]
}

@test "standin: a build fails on request, after its delay, and leaves no file" {
  EXTRA_ENV+=" STANDIN_APPTAINER_BUILD_FAIL=no_space_left STANDIN_APPTAINER_BUILD_DELAY=0.4" \
    run sd apptainer build "$D/w/x.sif" docker://debian:bookworm-slim
  [ "$status" -eq 255 ]
  [[ "$output" == *"FATAL:   While performing build: no_space_left"* ]]
  [ ! -e "$D/w/x.sif" ]
  run sd apptainer build "$D/w/x.sif" ./relative/def-file
  [ "$status" -eq 255 ]
}

@test "standin: flags follow the version: --memory only from 1.1.0 / SingularityCE 3.10.0" {
  image
  EXTRA_ENV+=" STANDIN_APPTAINER_VERSION=1.0.3" run start old --memory 512M
  [ "$status" -eq 1 ]
  [[ "$output" == *'Error for command "start": unknown flag: --memory'* ]]
  EXTRA_ENV+=" STANDIN_APPTAINER_VERSION=3.9.5" run sd singularity instance start --pids-limit 20 "$IMG" old
  [[ "$output" == *"unknown flag: --pids-limit"* ]]
  EXTRA_ENV+=" STANDIN_APPTAINER_VERSION=3.5.0" run sd singularity exec --env A=1 instance://x true
  [[ "$output" == *"unknown flag: --env"* ]]
  run sd apptainer exec -Z instance://x true
  [[ "$output" == *"unknown shorthand flag: 'Z' in -Z"* ]]
  run sd apptainer instance list
  [[ "$output" != *old* ]]
}

@test "standin: --net without --network none, a bad name, a missing or corrupt image: the real errors" {
  image
  run sd apptainer instance start --net "$IMG" n1
  [ "$status" -eq 255 ]
  [[ "$output" == *"non-root users can only use --network=none unless permitted by the administrator"* ]]
  run sd apptainer instance start "$IMG" 'a/b'
  [ "$status" -eq 255 ]
  [[ "$output" == *"a/b is not a valid instance name"* ]]
  run sd apptainer instance start "$D/w/none.sif" n1
  [ "$status" -eq 255 ]
  [[ "$output" == *"could not open image $D/w/none.sif: failed to retrieve path"*"no such file or directory"* ]]
  head -c 4096 /dev/zero > "$D/w/bad.sif"
  run sd apptainer instance start "$D/w/bad.sif" n1
  [ "$status" -eq 255 ]
  [[ "$output" == *"could not open image $D/w/bad.sif: image format not recognized"* ]]
  run sd apptainer instance list --json
  [[ "$output" == *'"instances": []'* ]]
}

@test "standin: instance start, list, exec, stop; state where apptainer keeps it; nothing left" {
  image
  run start one
  [ "$status" -eq 0 ]
  [[ "$output" == *"INFO:    instance started successfully"* ]]
  pid=$(state one pid)
  kill -0 "$pid"
  [ "$(state one image)" = "$IMG" ]
  run sd apptainer instance list --json
  [ "$status" -eq 0 ]
  printf '%s\n' "$output" | python3 -c '
import json, sys
i = json.load(sys.stdin)["instances"]
assert [x["instance"] for x in i] == ["one"], i
assert set(i[0]) == {"instance", "pid", "ip", "img", "logErrPath", "logOutPath"}, i[0]'
  run sd apptainer instance list
  [[ "${lines[0]}" == "INSTANCE NAME"*PID*IP*IMAGE ]]
  [[ "${lines[1]}" == one*"$pid"*"$IMG" ]]
  run start one
  [ "$status" -eq 255 ]
  [[ "$output" == *"instance one already exists"* ]]
  run sd apptainer exec instance://one sh -c 'echo out; echo err >&2; exit 7'
  [ "$status" -eq 7 ]
  [[ "$output" == *out*err* ]]
  priv=$(state one standinDir)
  [ -d "$priv" ]
  run sd apptainer instance stop one
  [ "$status" -eq 0 ]
  [[ "$output" == *"Stopping one instance of $IMG (PID=$pid)"* ]]
  ended "$pid"
  [ ! -e "$priv" ]
  [ ! -e "$D/home/.apptainer/instances/app/$(hostname)/$TEST_USER/one" ]
  run sd apptainer instance list --json
  [[ "$output" == *'"instances": []'* ]]
  run sd apptainer instance stop one
  [ "$status" -eq 255 ]
  [[ "$output" == *"FATAL:   no instance found"* ]]
  run sd apptainer exec instance://one true
  [ "$status" -eq 255 ]
  [[ "$output" == *"no instance found with name one"* ]]
  # The stand-in's own gate daemon (its airlock run's) is gone too.
  for p in $(pgrep -u "$TEST_USER" -f '^airlock daemon'); do
    ! grep -qz "XDG_RUNTIME_DIR=$priv" "/proc/$p/environ" || false
  done
}

@test "standin: APPTAINER_CONFIGDIR, else \$HOME/.apptainer (.singularity as singularity)" {
  image
  mkdir -m 0700 "$D/w/cfg"; chown "$TEST_USER" "$D/w/cfg"
  EXTRA_ENV+=" APPTAINER_CONFIGDIR=$D/w/cfg" run start c1
  [ "$status" -eq 0 ]
  [ -f "$D/w/cfg/instances/app/$(hostname)/$TEST_USER/c1/c1.json" ]
  [ -f "$D/w/cfg/instances/logs/$(hostname)/$TEST_USER/c1.err" ]
  run sd apptainer instance list
  [[ "$output" != *c1* ]]
  EXTRA_ENV+=" APPTAINER_CONFIGDIR=$D/w/cfg" run sd apptainer instance stop c1
  [ "$status" -eq 0 ]
  run sd singularity instance start --containall --net --network none "$IMG" s1
  [ "$status" -eq 0 ]
  [ -f "$D/home/.singularity/instances/app/$(hostname)/$TEST_USER/s1/s1.json" ]
  run sd singularity instance stop s1
  [ "$status" -eq 0 ]
}

@test "standin: exec passes its fds: binary-safe both ways, stderr apart, stdin to EOF" {
  image
  start b
  head -c 3000000 /dev/urandom > "$D/w/in"
  chown "$TEST_USER" "$D/w/in"
  sd sh -c "apptainer exec instance://b cat < '$D/w/in' > '$D/w/out' 2> '$D/w/err'"
  cmp "$D/w/in" "$D/w/out"
  [ ! -s "$D/w/err" ]
  run sd sh -c "apptainer exec instance://b sh -c 'echo to-err >&2; printf \"a\\0b\"' 2>/dev/null | od -An -c"
  [[ "$output" == *"a  \\0   b"* ]]
  run sd sh -c "printf 'x\ny\n' | apptainer exec instance://b wc -l"
  [ "$output" = 2 ]
}

@test "standin: exec's environment: --cleanenv keeps only --env, --env-file and PATH" {
  image
  start e
  printf "%s\n" "# a comment" "Q='it'\\''s'" 'export M="two words"' > "$D/w/envf"
  chown "$TEST_USER" "$D/w/envf"
  EXTRA_ENV+=" LEAKY=1 APPTAINERENV_VIA=yes" \
    run sd apptainer exec --cleanenv --env A=1,B=2 --env-file "$D/w/envf" instance://e env
  [ "$status" -eq 0 ]
  [[ "$output" == *"A=1"* && "$output" == *"B=2"* ]]
  [[ "$output" == *"Q=it's"* && "$output" == *"M=two words"* ]]
  [[ "$output" == *"VIA=yes"* ]]
  [[ "$output" == *"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"* ]]
  [[ "$output" != *LEAKY* && "$output" != *STANDIN_* ]]
  EXTRA_ENV+=" LEAKY=1" run sd apptainer exec instance://e env
  [[ "$output" == *LEAKY=1* ]]
  run sd apptainer exec --pwd /tmp instance://e pwd
  [ "$output" = /tmp ]
  run sd apptainer exec instance://e no-such-command
  [ "$status" -eq 255 ]
  [[ "$output" == *'"no-such-command": executable file not found in $PATH'* ]]
}

@test "standin: signals to exec reach the command; its status is the command's" {
  image
  start s
  as_user timeout -k 5 60 apptainer exec instance://s sh -c \
    'trap "echo got-TERM; exit 3" TERM; echo ready; sleep 1000 & wait' > "$D/w/o" 2>&1 &
  bg=$!
  for i in $(seq 100); do grep -q ready "$D/w/o" 2>/dev/null && break; sleep 0.1; done
  kill -TERM $(client 'instance://s sh -c trap')
  rc=0; wait $bg || rc=$?
  cat "$D/w/o"
  [ "$rc" -eq 3 ]
  grep -q got-TERM "$D/w/o"
  # A command killed by a signal: the client dies of it as well (as the
  # real starter), the shell sees 128+N.
  run sd sh -c 'apptainer exec instance://s sh -c "kill -KILL \$\$"; echo "rc=$?"'
  [[ "$output" == *"rc=137"* ]]
  # The client killed outright: its command goes too (PDEATHSIG, as real).
  as_user timeout -k 5 60 apptainer exec instance://s sleep 4611 &
  bg=$!
  for i in $(seq 100); do pgrep -f '^sleep 4611' > /dev/null && break; sleep 0.1; done
  kill -KILL $(client 'instance://s sleep 4611')
  wait $bg || true
  gone 'sleep 4611'
}

@test "standin: stop kills what was exec'd (the exec dies of SIGKILL); -t then SIGKILL for a stubborn one" {
  image
  start k
  as_user timeout -k 5 60 apptainer exec instance://k sh -c 'sleep 4612 & sleep 4613' &
  bg=$!
  for i in $(seq 100); do pgrep -f '^sleep 4613' > /dev/null && break; sleep 0.1; done
  pgrep -f '^sleep 4612'
  run sd apptainer instance stop k
  [ "$status" -eq 0 ]
  rc=0; wait $bg || rc=$?
  [ "$rc" -eq 137 ]
  gone 'sleep 461[23]'
  # An instance that ignores the stop signal is killed after --timeout.
  start k2
  run sd apptainer instance stop -s HUP -t 1 k2
  [ "$status" -eq 0 ]
  run sd apptainer instance list
  [[ "$output" != *k2* ]]
  start k3
  run sd apptainer instance stop --force k3
  [ "$status" -eq 0 ]
  run sd apptainer instance stop -s NOSUCH k3
  [[ "$output" == *"Could not convert stop signal"* ]]
}

@test "standin: binds: read-only, read-write, several in one flag; a missing source fails" {
  image
  mkdir "$D/w/ro" "$D/w/rw"
  echo data > "$D/w/ro/f"
  chown -R "$TEST_USER" "$D/w/ro" "$D/w/rw"
  start m --bind "$D/w/ro:/.airlock-control:ro,$D/w/rw:/data" --pwd /data
  run sd apptainer exec instance://m sh -c 'cat /.airlock-control/f; pwd; echo new > /data/g; touch /.airlock-control/x'
  [ "$status" -ne 0 ]
  [[ "$output" == *data*/data*"Read-only file system"* ]]
  [ "$(cat "$D/w/rw/g")" = new ]
  [ ! -e "$D/w/ro/x" ]
  # The instance sees the host's system directories (its "image"), its
  # binds and nothing of the caller's workspace.
  run sd apptainer exec instance://m ls "$WORK"
  [ "$status" -ne 0 ]
  run start m2 --bind "$D/w/nowhere:/x"
  [ "$status" -eq 255 ]
  [[ "$output" == *"mount source $D/w/nowhere doesn't exist"* ]]
}

@test "standin: --net --network none is loopback only" {
  image
  start n
  run sd apptainer exec instance://n cat /proc/net/dev
  [ "$status" -eq 0 ]
  ifaces=$(printf '%s\n' "$output" | tail -n +3 | cut -d: -f1 | tr -d ' ' | sort | tr '\n' ' ')
  [ "$ifaces" = "lo " ]
}

@test "standin: the log: one JSON line per invocation, argv, env, cwd and uid" {
  image
  start l --env K=V
  sd apptainer exec instance://l true
  sd apptainer instance stop l
  python3 - "$LOG" "$(id -u "$TEST_USER")" "$WORK" <<'EOF'
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
cmds = [l["argv"][1:3] for l in lines]
assert cmds == [["build", sys.argv[1].rsplit("/", 1)[0] + "/img.sif"],
                ["instance", "start"], ["exec", "instance://l"], ["instance", "stop"]], cmds
for l in lines:
    assert l["uid"] == int(sys.argv[2]) and l["cwd"] == sys.argv[3], l
    assert l["argv"][0].endswith("/apptainer"), l
    assert l["env"]["STANDIN_APPTAINER_LOG"] == sys.argv[1], l
    assert "HOME" in l["env"], l
assert lines[1]["argv"][-4:] == ["--env", "K=V", sys.argv[1].rsplit("/", 1)[0] + "/img.sif", "l"], lines[1]
EOF
}
