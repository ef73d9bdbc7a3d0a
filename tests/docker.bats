#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# The docker backend's own tests, against a real dockerd (tests/run-tests.sh
# runs them once, after the local suites; tests/sessions.bats runs the
# backend-agnostic suite with BACKEND=docker).  The docker CLI is used only
# to set up and inspect, never to run what airlock is tested for.
#
# Needs: a running dockerd, the image airlock-test:latest
# (tests/docker/make-image.sh), TEST_USER in group docker, OTHER_USER not.

load helpers

DOCKER=/usr/bin/docker
IMAGE=airlock-test:latest

setup () {
  if ! $DOCKER info >/dev/null 2>&1; then
    [ "${AIRLOCK_REQUIRE_DOCKER:-0}" = 1 ] && { echo "dockerd is not reachable" >&2; return 1; }
    skip "dockerd is not reachable"
  fi
  RUNDIR="$T/xdg-docker-$BATS_TEST_NUMBER"
  rm -rf "$RUNDIR"
  mkdir -p "$RUNDIR"
  chown "$TEST_USER" "$RUNDIR"
  chmod 0700 "$RUNDIR"
  OWNER="$RUNDIR/airlock"
  base_env
}

# The environment of every airlock call; more settings as arguments.
base_env () {
  export EXTRA_ENV="XDG_RUNTIME_DIR=$RUNDIR AIRLOCK_SUPERVISOR=$AIRLOCK_SUPERVISOR AIRLOCK_BACKEND=docker AIRLOCK_DAEMON_IDLE_EXIT=30 AIRLOCK_DOCKER_IMAGE=$IMAGE AIRLOCK_DOCKER_PULL=false $*"
}

teardown () {
  stop_daemon
  [ -z "${reg:-}" ] || kill "$reg" 2>/dev/null # the registry double, if any
  # Whatever this test left (it should be nothing: see "closing removes"),
  # with its anonymous volume (the job leader's copy).
  ids=$($DOCKER ps -aq --filter "label=airlock.owner=$OWNER" 2>/dev/null)
  [ -z "$ids" ] || $DOCKER rm -fv $ids >/dev/null 2>&1
  [ -z "${D2:-}" ] || private_dockerd_remove
  true
}

# A dockerd of this test's own (the dockerd restart test): its own socket,
# data, state and pidfile under $D2, and its own network namespace (its
# docker0 and iptables rules are its own: a second dockerd in the host's
# namespace would take or, with --bridge none, delete the shared one's
# docker0), so that stopping it disturbs nothing else on the machine (the
# docker suites of other runs, the next tests).  Started as .ci/run
# starts the shared one, in the background with nohup; unshare execs it,
# so the pidfile holds the pid of the process started here.
private_docker () { $DOCKER -H "unix://$D2/docker.sock" "$@"; }
private_dockerd_start () {
  local i
  nohup unshare --net /usr/sbin/dockerd --host "unix://$D2/docker.sock" \
    --data-root "$D2/data" --exec-root "$D2/exec" --pidfile "$D2/docker.pid" \
    --group docker >> "$D2/log" 2>&1 &
  for i in $(seq 120); do private_docker info >/dev/null 2>&1 && return 0; sleep 0.5; done
  tail -n 20 "$D2/log"
  return 1
}
private_dockerd_stop () { # SIGTERM, as a service manager stops it; 60 s at most
  local pid i
  pid=$(cat "$D2/docker.pid" 2>/dev/null) || return 0
  kill -TERM "$pid" 2>/dev/null || return 0
  for i in $(seq 600); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
  kill -KILL "$pid" 2>/dev/null
  return 1
}
private_dockerd_remove () {
  private_docker ps -aq 2>/dev/null | xargs -r $DOCKER -H "unix://$D2/docker.sock" rm -fv >/dev/null 2>&1
  private_dockerd_stop
  rm -rf "$D2" 2>/dev/null || true
}

# The daemon reads its configuration when it starts: a new one for new
# settings (this test's containers go with the old one).
restart_with () {
  stop_daemon
  base_env "$@"
}

al () { as_user "$AIRLOCK" "$@"; }
api () { printf '%s\n' "$@" | as_user "$AIRLOCK" serve; }

field () {
  printf '%s\n' "$output" | grep '^{' | tail -n 1 |
    python3 -c 'import json,sys; v=json.load(sys.stdin); [v := v[int(k)] if isinstance(v, list) else v[k] for k in sys.argv[1].split(".")]; print(json.dumps(v) if not isinstance(v, str) else v)' "$1"
}

# The container of this test's session $1.
container () {
  $DOCKER ps -aq --filter "label=airlock.owner=$OWNER" --filter "label=airlock.session=$1"
}

@test "docker: hardened from the inside: no capabilities, no-new-privileges, only lo" {
  al session open s
  run al exec s -- 'grep -E "^(CapInh|CapPrm|CapEff|CapBnd|CapAmb|NoNewPrivs)" /proc/self/status; ls /sys/class/net'
  echo "$output"
  [ "$status" -eq 0 ]
  for cap in CapInh CapPrm CapEff CapBnd CapAmb; do
    echo "$output" | grep -qx "$cap:[[:space:]]*0000000000000000"
  done
  echo "$output" | grep -qx "NoNewPrivs:[[:space:]]*1"
  [ "$(echo "$output" | tail -n 1)" = lo ]
  # tmpfs with nosuid,nodev, and the labels
  run al exec s -- 'grep -E " /(tmp|var/tmp|run) " /proc/mounts'
  [ "$(echo "$output" | grep -c 'tmpfs.*nosuid,nodev')" -eq 3 ]
  c=$(container s)
  [ -n "$c" ]
  [ "$($DOCKER inspect -f '{{index .Config.Labels "airlock.user"}}' "$c")" = "$(id -u "$TEST_USER")" ]
  [ -n "$($DOCKER inspect -f '{{index .Config.Labels "airlock.config-hash"}}' "$c")" ]
  [ "$($DOCKER inspect -f '{{.HostConfig.Init}} {{.HostConfig.NetworkMode}}' "$c")" = "false none" ]  # our supervisor is pid 1 (--init)
}

@test "docker: the pids limit is enforced" {
  base_env AIRLOCK_DOCKER_PIDS_LIMIT=40
  al session open s
  # busybox sh: it gives up at the first fork that fails (bash would
  # retry for a long while); each sleep started is counted by a builtin.
  al exec s -- 'printf "%s\n" "for i in \$(seq 80); do sleep 5 & echo \$i; done" > /tmp/p.sh'
  run al exec s --timeout 20 -- 'sh /tmp/p.sh'
  echo "$output"
  [ "$status" -ne 0 ]
  [[ "$output" == *"can't fork"* ]]
  n=$(echo "$output" | grep -x '[0-9]*' | tail -n 1)
  [ "$n" -lt 40 ]
  [ "$n" -ge 25 ]
  [ "$($DOCKER inspect -f '{{.HostConfig.PidsLimit}}' "$(container s)")" = 40 ]
}

@test "docker: limits, user, network and environment from the configuration" {
  base_env AIRLOCK_DOCKER_MEMORY=256M AIRLOCK_DOCKER_CPUS=0.5 AIRLOCK_DOCKER_USER=1000 \
    AIRLOCK_DOCKER_NETWORK=true 'AIRLOCK_DOCKER_ENV={"SECRET_TOKEN":"s3cr3t"}'
  al session open s
  run al exec s -- 'id -u; echo "$SECRET_TOKEN"; ls /sys/class/net | sort | tr "\n" " "'
  echo "$output"
  [ "${lines[0]}" = 1000 ]
  [ "${lines[1]}" = s3cr3t ]
  [[ "${lines[2]}" == *eth0* ]]
  c=$(container s)
  [ "$($DOCKER inspect -f '{{.HostConfig.Memory}} {{.HostConfig.NanoCpus}} {{.HostConfig.NetworkMode}}' "$c")" = "268435456 500000000 bridge" ]
  # The value travels in the create body, never on a command line.
  ! grep -l 's3cr[3]t' /proc/[0-9]*/cmdline 2>/dev/null || false
}

@test "docker: host access is judged and reported at open" {
  run api '{"id":1,"op":"open","session":"iso","workdir":"'"$WORK"'"}'
  echo "$output"
  [ "$(field host_access)" = false ]
  [ "$(field cwd)" = / ]
  restart_with AIRLOCK_DOCKER_MOUNT_WORKDIR=true
  run api '{"id":2,"op":"open","session":"wd","workdir":"'"$WORK"'"}'
  echo "$output"
  [ "$(field host_access)" = true ]
  [[ "$(field host_access_why)" == *"$WORK"*"host path"* ]]
  [ "$(field cwd)" = "$WORK" ]
  # A named volume of the local driver with no options stays isolated.
  vol=airlock-test-vol-$BATS_TEST_NUMBER
  $DOCKER volume rm -f "$vol" >/dev/null 2>&1 || true
  restart_with "AIRLOCK_DOCKER_VOLUMES=[\"$vol:/data\"]"
  run api '{"id":3,"op":"open","session":"vol","workdir":"'"$WORK"'"}'
  echo "$output"
  [ "$(field host_access)" = false ]
  api '{"id":4,"op":"close","session":"vol"}'
  # The same name, now a volume that binds a host directory: host access.
  $DOCKER volume rm -f "$vol" >/dev/null
  $DOCKER volume create -d local -o type=none -o o=bind -o device="$T" "$vol" >/dev/null
  run api '{"id":5,"op":"open","session":"vol2","workdir":"'"$WORK"'"}'
  echo "$output"
  [ "$(field host_access)" = true ]
  [[ "$(field host_access_why)" == *"$vol"*"$T"* ]]
  api '{"id":6,"op":"close","session":"vol2"}'
  $DOCKER volume rm -f "$vol" >/dev/null
}

@test "docker: mounting the Docker socket is refused unless the administrator allows it" {
  base_env 'AIRLOCK_DOCKER_VOLUMES=["/var/run:/hostrun"]' AIRLOCK_DOCKER_ALLOW_DOCKER_SOCKET=true
  run al session open s
  echo "$output"
  [ "$status" -ne 0 ]
  [[ "$output" == *"exposes the Docker socket"*"administrator"* ]]
  [ -z "$(container s)" ]
  # The system file (root's) may allow it.
  sys="$T/etc/airlock/config.json"
  mkdir -p "$T/etc/airlock"
  echo '{"docker": {"allow_docker_socket": true}}' > "$sys"
  chmod 0644 "$sys"
  # (with the user's own setting gone: a user's value, true or false,
  # hides the system file's, and then the key counts as false)
  restart_with 'AIRLOCK_DOCKER_VOLUMES=["/var/run:/hostrun"]'
  run al session open s
  rm -f "$sys"
  echo "$output"
  [ "$status" -eq 0 ]
  run al exec s -- 'test -S /hostrun/docker.sock && echo exposed'
  [ "$output" = exposed ]
}

@test "docker: the daemon not running is a clear error naming the fix" {
  base_env AIRLOCK_DOCKER_SOCKET=/nonexistent/docker.sock
  run al session open s
  echo "$output"
  [ "$status" -ne 0 ]
  [[ "$output" == *"Docker daemon is not running at /nonexistent/docker.sock"* ]]
  [[ "$output" == *"dockerd"* ]]
  base_env DOCKER_HOST=tcp://127.0.0.1:2375
  run al session open s
  [ "$status" -ne 0 ]
  [[ "$output" == *"DOCKER_HOST"*"unix"* ]]
}

@test "docker: permission denied on the socket says it is root-equivalent and how to grant it" {
  ! id -nG "$OTHER_USER" | grep -qw docker || false
  dir="$T/xdg-docker-other"
  mkdir -p "$dir" && chown "$OTHER_USER" "$dir" && chmod 0700 "$dir"
  run runuser -u "$OTHER_USER" -- env -i PATH=/usr/bin:/bin XDG_RUNTIME_DIR="$dir" \
    AIRLOCK_SUPERVISOR="$AIRLOCK_SUPERVISOR" AIRLOCK_BACKEND=docker \
    AIRLOCK_DOCKER_IMAGE=$IMAGE AIRLOCK_DAEMON_IDLE_EXIT=2 \
    sh -c "cd / && '$AIRLOCK' session open s"
  echo "$output"
  [ "$status" -ne 0 ]
  [[ "$output" == *"permission denied on the Docker socket"* ]]
  [[ "$output" == *"root-equivalent"* ]]
  [[ "$output" == *"group docker"* ]]
}

@test "docker: a missing image is a clear error; nothing is left behind" {
  base_env AIRLOCK_DOCKER_IMAGE=airlock-no-such-image:1
  run al session open s
  echo "$output"
  [ "$status" -ne 0 ]
  [[ "$output" == *"image airlock-no-such-image:1 is not present"*"docker.pull"* ]]
  [ -z "$(container s)" ]
}

@test "docker: a missing image is pulled when configured, with progress for the person waiting" {
  # A registry test double on 127.0.0.1 serving the test image under
  # another name (tests/docker/fake-registry.py: the Registry API V2).
  $DOCKER save "$IMAGE" -o "$T/pull-src.tar"
  rm -f "$T/registry.port"
  python3 tests/docker/fake-registry.py "$T/pull-src.tar" airlock-pull:v1 \
    "$T/registry.port" 2> "$T/registry.log" &
  reg=$!
  for i in $(seq 100); do [ -s "$T/registry.port" ] && break; sleep 0.1; done
  ref="127.0.0.1:$(cat "$T/registry.port")/airlock-pull:v1"
  $DOCKER rmi "$ref" >/dev/null 2>&1 || true
  base_env AIRLOCK_DOCKER_IMAGE="$ref" AIRLOCK_DOCKER_PULL=true
  run al session open s
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "$output" == *"image $ref is not present: pulling it"* ]]
  [[ "$output" == *"pulling $ref: "*"Status: Downloaded newer image"* ]]
  run al exec s -- 'echo from-the-pulled-image'
  [ "$output" = from-the-pulled-image ]
  grep -q "/v2/airlock-pull/manifests/v1" "$T/registry.log"
  al session close s
  kill "$reg"
  $DOCKER rmi "$ref" >/dev/null 2>&1 || true
  rm -f "$T/pull-src.tar"
}

@test "docker: a container that fails to start is removed again" {
  base_env AIRLOCK_DOCKER_USER=no-such-user
  run al session open s
  echo "$output"
  [ "$status" -ne 0 ]
  [[ "$output" == *"cannot start container"*"no-such-user"* ]]
  [ -z "$(container s)" ]
}

@test "docker: a container that vanished is recreated once, and the result says so" {
  al session open s
  al exec s -- 'echo kept > /tmp/f; export X=1'
  $DOCKER rm -f "$(container s)" >/dev/null
  run api '{"id":1,"op":"exec","session":"s","command":"echo again; cat /tmp/f 2>&1 || true"}'
  echo "$output"
  [ "$(field exit_code)" = 0 ]
  [[ "$(field stderr)" == *"had vanished; a new one was created"* ]]
  [[ "$(field stdout)" == "again"* ]]
  [[ "$(field stdout)" != *kept* ]]
  [ -n "$(container s)" ]
  # Once: the next command is an ordinary one, in a working session.
  run api '{"id":2,"op":"exec","session":"s","command":"cd /tmp && echo fine"}'
  [ "$(field stderr)" = "" ]
  [ "$(field stdout)" = fine ]
  [ "$(field cwd)" = /tmp ]
}

@test "docker: closing removes the container; reopening makes a new one" {
  al session open s
  c=$(container s)
  [ -n "$c" ]
  al session close s
  [ -z "$(container s)" ]
  ! $DOCKER inspect "$c" >/dev/null 2>&1 || false
}

@test "docker: a stopped daemon (SIGTERM) removes its containers" {
  al session open s
  [ -n "$(container s)" ]
  stop_daemon
  [ -z "$(container s)" ]
}

@test "docker: orphans are reaped: stopped at once, running ones after the idle lifetime" {
  uid=$(id -u "$TEST_USER")
  labels=(--label "airlock.user=$uid" --label airlock.session=orphan)
  # Of a daemon that is gone: one stopped, one running.
  $DOCKER create --name "airlock-test-orphan-stopped-$$" "${labels[@]}" \
    --label "airlock.owner=$T/gone-daemon" $IMAGE sleep 1000 >/dev/null
  $DOCKER run -d --name "airlock-test-orphan-running-$$" "${labels[@]}" \
    --label "airlock.owner=$T/gone-daemon" $IMAGE sleep 1000 >/dev/null
  # Of this test's own daemon, for a session it does not have.
  $DOCKER run -d --name "airlock-test-orphan-own-$$" "${labels[@]}" \
    --label "airlock.owner=$OWNER" $IMAGE sleep 1000 >/dev/null
  # Another user's: never touched.
  $DOCKER create --name "airlock-test-orphan-other-$$" --label airlock.user=0 \
    --label airlock.session=orphan --label "airlock.owner=$T/gone-daemon" $IMAGE sleep 1 >/dev/null
  # A job leader's volume whose container was removed without it (docker
  # rm -f): removed; another user's: kept.
  vol=$($DOCKER volume create --label "airlock.user=$uid")
  ovol=$($DOCKER volume create --label airlock.user=0)
  # A long idle lifetime: only the stopped one goes.
  base_env AIRLOCK_SESSION_IDLE_TIMEOUT=3600
  al session open s
  sleep 1
  ! $DOCKER volume inspect "$vol" >/dev/null 2>&1 || false
  $DOCKER volume inspect "$ovol" >/dev/null
  $DOCKER volume rm "$ovol" >/dev/null
  ! $DOCKER inspect "airlock-test-orphan-stopped-$$" >/dev/null 2>&1 || false
  $DOCKER inspect "airlock-test-orphan-running-$$" >/dev/null
  $DOCKER inspect "airlock-test-orphan-own-$$" >/dev/null
  al session close s
  # A short one: the running ones go too, once older than it.
  sleep 2
  restart_with AIRLOCK_SESSION_IDLE_TIMEOUT=1
  al session open s
  sleep 1
  ! $DOCKER inspect "airlock-test-orphan-running-$$" >/dev/null 2>&1 || false
  ! $DOCKER inspect "airlock-test-orphan-own-$$" >/dev/null 2>&1 || false
  $DOCKER inspect "airlock-test-orphan-other-$$" >/dev/null
  $DOCKER rm -f "airlock-test-orphan-other-$$" >/dev/null
}

@test "docker: a session reopened after its daemon died reuses its container, restarted: no process of the earlier life is left" {
  # Root, so that a file in the image's layer shows what is kept.
  base_env AIRLOCK_DOCKER_USER=0:0
  al session open s
  al exec s -- 'echo kept > /mark; echo gone > /tmp/mark'
  c=$(container s)
  # A command still running, and a process no job leader knows of.
  (al exec s -- 'sleep 4321' >/dev/null 2>&1 &)
  $DOCKER exec -d "$c" sleep 1234
  for i in $(seq 100); do
    [ "$($DOCKER top "$c" -o pid,args | grep -c ' sleep \(4321\|1234\)$')" = 2 ] && break; sleep 0.1
  done
  $DOCKER top "$c" -o pid,args | grep -q ' sleep 4321$'
  pid=$(daemon_pid)
  kill -KILL "$pid"
  al session close s 2>/dev/null || true
  al session open s
  [ "$(container s)" = "$c" ]
  run $DOCKER top "$c" -o pid,args
  echo "$output"
  [[ "$output" != *sleep* ]]
  # Only our pid 1 (airlock-supervisor --init), and nothing else.
  [ "$(echo "$output" | tail -n +2 | grep -vc "airlock-supervisor --init")" = 0 ]
  run al exec s -- 'cat /mark; cat /tmp/mark 2>&1 || true'
  echo "$output"
  [ "${lines[0]}" = kept ]
  [[ "${lines[1]}" == *"No such file"* ]]
  # Another configuration: replaced.
  pid=$(daemon_pid)
  kill -KILL "$pid"
  base_env AIRLOCK_DOCKER_USER=0:0 AIRLOCK_DOCKER_PIDS_LIMIT=100
  al session close s 2>/dev/null || true
  al session open s
  [ -n "$(container s)" ]
  [ "$(container s)" != "$c" ]
}

@test "docker: the container runs as the caller's uid:gid; root only when docker.user says so, with a warning" {
  uid=$(id -u "$TEST_USER") gid=$(id -g "$TEST_USER")
  run al session open s
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "$output" != *warning* ]]
  [ "$($DOCKER inspect -f '{{.Config.User}}' "$(container s)")" = "$uid:$gid" ]
  # What a non-root user needs works: /tmp, the shell state, the leader.
  run al exec s -- 'id -u; id -g; echo x > /tmp/x && cat /tmp/x; cd /tmp && export V=1'
  echo "$output"
  [ "${lines[0]}" = "$uid" ] && [ "${lines[1]}" = "$gid" ] && [ "${lines[2]}" = x ]
  run al exec s -- 'echo "$V $PWD"'
  [ "$output" = "1 /tmp" ]
  # Root: the open reply warns, and so does the CLI.
  restart_with AIRLOCK_DOCKER_USER=0:0
  run api '{"id":1,"op":"open","session":"r","workdir":"'"$WORK"'"}'
  echo "$output"
  [[ "$(field warnings)" == *"runs as root"*"docker.user"* ]]
  run al exec r -- 'id -u'
  [ "$output" = 0 ]
  restart_with AIRLOCK_DOCKER_USER=root
  run al session open r2
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "$output" == *"airlock: warning: the container runs as root"* ]]
}

@test "docker: airlock's seccomp baseline, not the engine's default: io_uring and nested user namespaces are refused" {
  base_env AIRLOCK_DOCKER_MOUNT_WORKDIR=true
  al session open s
  [[ "$($DOCKER inspect -f '{{json .HostConfig.SecurityOpt}}' "$(container s)")" == *seccomp=*io_uring_setup* ]]
  run al exec s -- "for t in io-uring unshare-user clone-newuser setns clone3; do $PROBE \$t; done; unshare -U true 2>&1 || echo unshare-refused"
  echo "$output"
  [ "${lines[0]}" = "blocked EPERM" ]
  [ "${lines[1]}" = "blocked EPERM" ]
  [ "${lines[2]}" = "blocked EPERM" ]
  [ "${lines[3]}" = "blocked EPERM" ]
  [ "${lines[4]}" = "blocked ENOSYS" ]
  [ "$(echo "$output" | tail -n 1)" = unshare-refused ]
  # What a session needs still works under it: bash, coreutils, pipes,
  # background jobs, the job leader's kill of a tree.
  run al exec s -- 'sleep 0.1 & wait; echo a | tr a b; ls / >/dev/null && echo ls-ok'
  [ "$output" = "$(printf 'b\nls-ok')" ]
  run al exec s --timeout 1 -- 'sleep 30 & sleep 30'
  [ "$status" -eq 124 ]
}

@test "docker: docker.read_only_rootfs: the image's files are read-only, the tmpfs mounts stay writable" {
  base_env AIRLOCK_DOCKER_READ_ONLY_ROOTFS=true AIRLOCK_DOCKER_USER=0:0
  al session open s
  [ "$($DOCKER inspect -f '{{.HostConfig.ReadonlyRootfs}}' "$(container s)")" = true ]
  run al exec s -- 'touch /x 2>&1; echo w > /tmp/w && cat /tmp/w; echo v > /var/tmp/v && cat /var/tmp/v'
  echo "$output"
  [[ "${lines[0]}" == *"Read-only file system"* ]]
  [ "${lines[1]}" = w ] && [ "${lines[2]}" = v ]
  # Off by default.
  restart_with AIRLOCK_DOCKER_USER=0:0
  al session open s2
  [ "$($DOCKER inspect -f '{{.HostConfig.ReadonlyRootfs}}' "$(container s2)")" = false ]
}

@test "docker: a dockerd restart mid-command is an error naming the engine, and the next command says what became of the container" {
  # A dockerd of this test's own (see private_dockerd_start): stopping
  # the shared one would break whatever else uses it.
  D2="$T/dk$BATS_TEST_NUMBER"
  rm -rf "$D2"
  mkdir -p "$D2"
  chmod 0755 "$D2"
  private_dockerd_start
  $DOCKER save "$IMAGE" | private_docker load >/dev/null
  base_env "AIRLOCK_DOCKER_SOCKET=$D2/docker.sock"
  al session open s
  # The API's result of a command that runs until the engine goes.
  (api '{"id":1,"op":"exec","session":"s","command":"echo started; sleep 600"}' > "$D2/result" 2>&1 &)
  c=$(private_docker ps -q --filter "label=airlock.owner=$OWNER")
  for i in $(seq 100); do private_docker top "$c" -o pid,args | grep -q ' sleep 600$' && break; sleep 0.1; done
  private_docker top "$c" -o pid,args | grep -q ' sleep 600$'
  private_dockerd_stop
  private_dockerd_start
  for i in $(seq 300); do grep -q '"exit_code"\|"error"' "$D2/result" && break; sleep 0.1; done
  output=$(cat "$D2/result")
  echo "$output"
  [[ "$output" == *"Docker engine"*"$D2/docker.sock"* ]]
  [[ "$output" != *'"exit_code":137'* ]]
  # The container stopped with its engine: the next command is run in a
  # new one, and says why.
  run api '{"id":2,"op":"exec","session":"s","command":"echo again"}'
  echo "$output"
  [ "$(field stdout)" = again ]
  [[ "$(field stderr)" == *"had stopped (the Docker engine at $D2/docker.sock stopped container"*"dockerd stopped or restarted"*"a new one was created"* ]]
  al session close s
}

@test "docker: the approval gate gives an isolated container the floor, a host-bound one the whole gate" {
  base_env AIRLOCK_POLICY_MODE=deny
  al session open iso
  # Isolated: a dangerous command runs (the container is the boundary)...
  run al exec iso -- 'mkdir -p /tmp/d/e && rm -r /tmp/d && echo removed'
  [ "$status" -eq 0 ]
  [[ "$output" == *removed* ]]
  # ...but the hard blocks still hold.
  run al exec iso -- 'kill -9 -1'
  [ "$status" -eq 77 ]
  [[ "$output" == *"never allowed"* ]]
  # Bound to the host workdir: the whole gate, and nobody to approve.
  mkdir -p "$WORK/dg-victim"
  chown "$TEST_USER" "$WORK/dg-victim"
  restart_with AIRLOCK_POLICY_MODE=deny AIRLOCK_DOCKER_MOUNT_WORKDIR=true
  al session open wd
  run al exec wd -- "rm -r $WORK/dg-victim"
  [ "$status" -eq 77 ]
  [[ "$output" == *"nobody can approve"* ]]
  [ -d "$WORK/dg-victim" ]
  rmdir "$WORK/dg-victim"
  audit="$TEST_HOME/.local/state/airlock/audit.log"
  grep -q '"backend":"docker".*"decided_by":"isolated"' "$audit"
  grep -q '"backend":"docker".*"decided_by":"mode-deny"' "$audit"
}

@test "docker: a mounted workdir holding airlock's directories gets them masked, read-only and pinned" {
  dhome="$T/docker-home-$BATS_TEST_NUMBER"
  rm -rf "$dhome"
  mkdir -p "$dhome/.config/airlock" "$dhome/proj"
  echo '{"policy": {"deny": ["shred *"]}}' > "$dhome/.config/airlock/config.json"
  echo 'project data' > "$dhome/proj/notes"
  chown -R "$TEST_USER" "$dhome"
  chmod 0700 "$dhome"
  base_env "HOME=$dhome" AIRLOCK_DOCKER_MOUNT_WORKDIR=true "AIRLOCK_DOCKER_USER=$(id -u "$TEST_USER")"
  run al session open s --workdir "$dhome"
  echo "$output"
  [ "$status" -eq 0 ]
  # (docker gives a tmpfs the mode of the directory below: the state
  # dir's mask may be unreadable as well as empty)
  run al exec s -- 'ls -A .config/airlock 2>/dev/null | wc -l; ls -A .local/state/airlock 2>/dev/null | wc -l
    cat .config/airlock/config.json .local/state/airlock/audit.log 2>/dev/null; cat proj/notes
    touch .config/airlock/x 2>&1; mv .config c2 2>&1; mv .local/state .local/s2 2>&1
    echo made > proj/made && echo wrote'
  echo "$output"
  [ "${lines[0]}" = 0 ] && [ "${lines[1]}" = 0 ]
  [[ "$output" != *shred* && "$output" != *decision* ]]
  [[ "$output" == *"project data"* && "$output" == *wrote* ]]
  [[ "$output" == *"Read-only file system"* ]]
  [ "$(echo "$output" | grep -c 'busy')" -eq 2 ]
  [ ! -e "$dhome/c2" ] && [ ! -e "$dhome/.local/s2" ] && [ ! -e "$dhome/.config/airlock/x" ]
  grep -q shred "$dhome/.config/airlock/config.json"
  # What docker was asked for: read-only tmpfs masks.
  mounts=$($DOCKER inspect -f '{{range .Mounts}}{{.Type}} {{.Destination}} {{.RW}};{{end}}' "$(container s)")
  echo "$mounts"
  [[ "$mounts" == *"tmpfs $dhome/.config/airlock false;"* ]]
  [[ "$mounts" == *"tmpfs $dhome/.local/state/airlock false;"* ]]
  al session close s
  rm -rf "$dhome"
}

# The container's exec records, as the engine keeps them (GET
# /containers/{id}/json over its socket, as hygiene.bats reads them).
exec_ids () {
  curl -s --unix-socket /var/run/docker.sock "http://localhost/containers/$1/json" |
    python3 -c 'import json,sys; print(" ".join(json.load(sys.stdin)["ExecIDs"] or []))'
}

@test "docker: commands are jobs of the container's supervisor, never engine execs" {
  al session open s
  c=$(container s)
  [ -n "$c" ]
  [ -z "$(exec_ids "$c")" ]
  for i in 1 2 3; do al exec s -- true; done
  run al exec s -- 'cd /tmp && export V=7'
  [ "$status" -eq 0 ]
  # stdin, a timeout's kill, a background job: all through the supervisor.
  echo piped > "$T/dk-in"
  run al exec s --stdin -- 'cat; echo "$V $PWD"' < "$T/dk-in"
  echo "$output"
  [ "$output" = "$(printf 'piped\n7 /tmp')" ]
  run al exec s --timeout 1 -- 'sleep 30 & sleep 30'
  [ "$status" -eq 124 ]
  run api '{"id":1,"op":"exec","session":"s","background":true,"command":"sleep 0.2"}'
  [ -n "$(field job)" ]
  # The command's leader is a child of pid 1, our supervisor; its parent
  # is not the engine's (an exec's process has none in the container).
  run al exec s -- 'awk "/^PPid/ {print \$2}" /proc/$PPID/status; tr "\0" " " < /proc/1/cmdline'
  echo "$output"
  [ "${lines[0]}" = 1 ]
  [ "${lines[1]}" = "/.airlock/airlock-supervisor --init " ]
  [ -z "$(exec_ids "$c")" ]
  # Its socket's directory: read-only in the container, and empty once
  # the supervisor is connected (the broker listens only while it waits);
  # on the host, ours, and gone with the session.
  run al exec s -- 'ls -A /.airlock-control; touch /.airlock-control/x 2>&1 || echo refused'
  echo "$output"
  [[ "$output" == *"Read-only file system"*refused ]]
  [ "$(stat -c '%U %a' "$OWNER/docker/session-s")" = "$TEST_USER 711" ]
  [ "$(stat -c '%a' "$OWNER/docker")" = 700 ]
  al session close s
  [ ! -e "$OWNER/docker/session-s" ]
}

@test "docker: a container restarted behind the session's back: its supervisor connects again, the next command says so" {
  al session open s
  al exec s -- 'echo kept > /tmp/f; export X=1'
  c=$(container s)
  (api '{"id":1,"op":"exec","session":"s","command":"echo started; sleep 4242"}' > "$T/dk-restart" 2>&1 &)
  for i in $(seq 100); do $DOCKER top "$c" -o pid,args | grep -q ' sleep 4242$' && break; sleep 0.1; done
  $DOCKER top "$c" -o pid,args | grep -q ' sleep 4242$'
  $DOCKER restart -t 0 "$c" >/dev/null
  # The running command ends as lost, with the cause, never hangs.
  for i in $(seq 100); do grep -q '"event":"result"' "$T/dk-restart" && break; sleep 0.1; done
  output=$(grep '"event":"result"' "$T/dk-restart")
  echo "$output"
  [ "$(field cause)" = lost ]
  [[ "$(field error.message)" == *"container"*"restarted"* ]]
  # The same container, its new supervisor reconnected; /tmp is empty.
  run api '{"id":2,"op":"exec","session":"s","command":"echo again; cat /tmp/f 2>&1 || true; echo \"X=${X:-}\""}'
  echo "$output"
  [ "$(field exit_code)" = 0 ]
  [[ "$(field stderr)" == *"had been restarted"* ]]
  [[ "$(field stdout)" == "again"* ]]
  [[ "$(field stdout)" != *kept* ]]
  # The shell state is the session layer's: it outlives the container's.
  [[ "$(field stdout)" == *"X=1"* ]]
  [ "$(container s)" = "$c" ]
  # Once: the next command is an ordinary one.
  run api '{"id":3,"op":"exec","session":"s","command":"cd /tmp && echo fine"}'
  [ "$(field stderr)" = "" ]
  [ "$(field stdout)" = fine ]
  [ "$(field cwd)" = /tmp ]
  [ -z "$(exec_ids "$c")" ]
}
