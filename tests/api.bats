#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# Configuration per open, API strictness and posture (docs/api.md,
# docs/config.md): a daemon that is already running never answers with
# the settings it started with; requests it does not understand are
# errors; every result says what it ran under.  Backend-agnostic like
# sessions.bats (BACKEND selects the backend; default local).

load helpers

setup () {
  BACKEND=${BACKEND:-local}
  RUNDIR="$T/xdg-api-$BATS_TEST_NUMBER"
  rm -rf "$RUNDIR"
  mkdir -p "$RUNDIR"
  chown "$TEST_USER" "$RUNDIR"
  chmod 0700 "$RUNDIR"
  # Its own directory: airlock's configuration directory is masked in
  # sandboxes, and must not contain the workspace.
  CFG="$T/api-config-$BATS_TEST_NUMBER/config.json"
  rm -rf "${CFG%/*}"
  mkdir -p "${CFG%/*}"
  chown "$TEST_USER" "${CFG%/*}"
  export EXTRA_ENV="XDG_RUNTIME_DIR=$RUNDIR AIRLOCK_SUPERVISOR=$AIRLOCK_SUPERVISOR AIRLOCK_CONFIG=$CFG AIRLOCK_BACKEND=$BACKEND AIRLOCK_DAEMON_IDLE_EXIT=30 ${BACKEND_ENV:-}"
}

teardown () {
  as_user timeout -k 5 20 "$AIRLOCK" daemon stop >/dev/null 2>&1 || true
  ssh_cleanup
  rm -rf "${CFG%/*}"
}

al () { as_user timeout -k 5 60 "$AIRLOCK" "$@"; }
api () { printf '%s\n' "$@" | as_user timeout -k 5 60 "$AIRLOCK" serve; }

# A field (dotted path) of the JSON line whose id is $1 in $output.
field_of () {
  printf '%s\n' "$output" | grep '^{' |
    python3 -c 'import json,sys
want, path = json.loads(sys.argv[1]), sys.argv[2]
for line in sys.stdin:
    v = json.loads(line)
    if v.get("id") != want or v.get("event") in ("output", "started"): continue
    for k in path.split("."):
        v = v[int(k)] if isinstance(v, list) else v[k]
    print(json.dumps(v) if not isinstance(v, str) else v)' "$1" "$2"
}

write_cfg () { printf '%s\n' "$1" > "$CFG"; chown "$TEST_USER" "$CFG"; }

@test "api: a running daemon resolves configuration afresh at every open" {
  run al session open first
  [ "$status" -eq 0 ]
  # The daemon is up now, started with exec.timeout's default.  A new
  # open sees the new variable, the file written since, and says so.
  write_cfg '{"exec": {"max_output_chars": 2000}}'
  run api '{"id":1,"op":"open","session":"second","workdir":"'"$WORK"'"}' \
          '{"id":2,"op":"exec","session":"second","command":"seq 1 3000"}' '{"id":3,"op":"list"}'
  echo "$output"
  [ "$status" -eq 0 ]
  [ "$(field_of 2 truncated)" = true ]
  h1=$(field_of 3 sessions.0.config_hash)
  h2=$(field_of 3 sessions.1.config_hash)
  [ -n "$h1" ] && [ -n "$h2" ] && [ "$h1" != "$h2" ]
  [ "$(field_of 1 config_hash)" = "$h1" ]
  # The first session keeps its own snapshot.
  run api '{"id":4,"op":"exec","session":"first","command":"seq 1 3000"}'
  [ "$(field_of 4 truncated)" = false ]
}

@test "api: an invalid value fails the open with the key, the value and where it came from" {
  al session open warm
  run env EXTRA_ENV="$EXTRA_ENV AIRLOCK_BACKEND=lokal" bash -c 'source tests/helpers.bash; as_user "$AIRLOCK" session open x'
  [ "$status" -eq 1 ]
  [[ "$output" == *"AIRLOCK_BACKEND"*"lokal"* ]]
  write_cfg '{"backend": "lokal"}'
  run al session open y
  [ "$status" -eq 1 ]
  [[ "$output" == *"$CFG"*"backend"*"lokal"* ]]
  write_cfg '{}'
  run api '{"id":1,"op":"open","session":"z","workdir":"/","config":{"exec.timeout":"soon"}}'
  echo "$output"
  [ "$(field_of 1 error.code)" = config_error ]
  [[ "$(field_of 1 error.message)" == *"open request"*"exec.timeout"*"soon"* ]]
  run al session ls
  [[ "$output" != *" x "* && "$output" != *"y "* ]]
}

@test "api: AIRLOCK_BACKEND of the client decides, with a daemon already running" {
  al session open warm
  other=docker; [ "$BACKEND" = docker ] && other=local
  [ "$other" = docker ] && needs_static_supervisor "it cannot run in a container"
  run env EXTRA_ENV="$EXTRA_ENV AIRLOCK_BACKEND=$other AIRLOCK_DOCKER_IMAGE=airlock-test:latest AIRLOCK_DOCKER_PULL=false" \
    bash -c 'source tests/helpers.bash; as_user "$AIRLOCK" session open s2 && as_user "$AIRLOCK" session ls'
  if [ "$other" = docker ] && ! /usr/bin/docker info >/dev/null 2>&1; then
    # No engine: the open must fail, never fall back to local.
    [ "$status" -ne 0 ]
    [[ "$output" == *docker* ]]
  else
    [ "$status" -eq 0 ]
    [[ "$output" == *"s2"*"$other"* ]]
  fi
  al session close s2 || true
}

@test "api: session open flags reach the session; flags a backend cannot honour are refused" {
  # (3 s: the exec must come before the session idles out, on a loaded
  # machine too; then it goes within a bounded wait.)
  run al session open f --idle-timeout 3 --env GREETING=hello
  [ "$status" -eq 0 ]
  run al exec f -- 'echo $GREETING'
  [ "$output" = hello ]
  for i in $(seq 40); do
    run al session ls
    [[ "$output" != *"f "* ]] && break
    sleep 0.5
  done
  [[ "$output" != *"f "* ]]
  run al session open g --network host --backend docker
  echo "$output"
  [ "$status" -eq 1 ]
  [[ "$output" == *'network "host"'*"docker backend"* ]]
  if [ "$BACKEND" = local ]; then
    run al session open h --image debian:12
    [ "$status" -eq 1 ]
    [[ "$output" == *"local backend cannot set image"* ]]
    run al session open h --memory 1
    [ "$status" -eq 1 ]
    [[ "$output" == *"at least 16M"* ]]
  fi
  run al session open h --idle-timeout soon
  [ "$status" -eq 2 ]
}

@test "api: unknown and repeated fields are errors naming them" {
  al session open s
  run api '{"id":1,"op":"exec","session":"s","command":"true","timeout_s":3}' \
          '{"id":2,"op":"ping","extra":1}' \
          '{"id":3,"op":"exec","session":"s","command":"echo a","command":"echo b"}' \
          '{"id":4,"op":"exec","session":"s","command":"echo still here"}'
  [ "$(field_of 1 error.code)" = unknown_field ]
  [[ "$(field_of 1 error.message)" == *'"timeout_s"'*'"exec"'*timeout* ]]
  [ "$(field_of 2 error.code)" = unknown_field ]
  [[ "$(field_of 3 error.message)" == *'"command" is given twice'* ]]
  [ "$(field_of 4 exit_code)" = 0 ]
}

@test "api: workdir may be left out only where the session shares no host directory (ssh, daytona)" {
  run api '{"id":1,"op":"open","session":"w"}' '{"id":2,"op":"close","session":"w"}'
  echo "$output"
  if [ "${BACKEND:-local}" = ssh ] || [ "${BACKEND:-local}" = daytona ]; then
    [ "$(field_of 1 ok)" = true ]
  else
    [ "$(field_of 1 error.code)" = missing_field ]
    [[ "$(field_of 1 error.message)" == *'"workdir" is required for the '"${BACKEND:-local}"' backend'* ]]
  fi
}

@test "api: env per exec applies to that command only; env per session to all; bad names refused" {
  run api '{"id":1,"op":"open","session":"e","workdir":"'"$WORK"'","env":{"TOKEN":"s3cret-value","PATH":"/opt/x:/usr/bin:/bin"}}' \
          '{"id":2,"op":"exec","session":"e","command":"echo $TOKEN $ONCE; echo $PATH","env":{"ONCE":"one"}}' \
          '{"id":3,"op":"exec","session":"e","command":"echo [$ONCE] $TOKEN"}' \
          '{"id":4,"op":"exec","session":"e","command":"true","env":{"AIRLOCK_SESSION":"x"}}' \
          '{"id":5,"op":"exec","session":"e","command":"true","env":{"BASH_ENV":"/tmp/x"}}' \
          '{"id":6,"op":"exec","session":"e","command":"true","env":{"A":1}}'
  [ "$(field_of 2 stdout)" = "s3cret-value one
/opt/x:/usr/bin:/bin" ]
  [ "$(field_of 3 stdout)" = "[] s3cret-value" ]
  [ "$(field_of 4 error.code)" = bad_request ]
  [ "$(field_of 5 error.code)" = bad_request ]
  [ "$(field_of 6 error.code)" = wrong_type ]
  # Values never reach the daemon's log or the audit log.
  run grep -rl s3cret-value "$RUNDIR/airlock/daemon.log" "$TEST_HOME/.local/state/airlock" 2>/dev/null
  [ "$status" -ne 0 ]
}

@test "api: a fractional timeout is that many seconds, not the default" {
  al session open t
  run api '{"id":1,"op":"exec","session":"t","command":"sleep 5","timeout":0.5}' \
          '{"id":2,"op":"exec","session":"t","command":"true","timeout":0}'
  [ "$(field_of 1 exit_code)" = 124 ]
  [ "$(field_of 1 timed_out)" = true ]
  [ "$(field_of 1 duration_ms)" -lt 4000 ]
  [ "$(field_of 2 error.code)" = wrong_type ]
  run al exec t --timeout abc -- true
  [ "$status" -eq 2 ]
  [[ "$output" == *"--timeout 'abc'"* ]]
  run al exec t --timeout 0.3 -- sleep 5
  [ "$status" -eq 124 ]
}

@test "api: job_wait blocks until the job ends, or until its timeout" {
  run api '{"id":1,"op":"open","session":"j","workdir":"'"$WORK"'"}' \
          '{"id":2,"op":"exec","session":"j","background":true,"command":"read x; exit 3"}'
  job=$(field_of 2 job)
  # The job waits for its stdin: a wait with a timeout ends with it.
  run api '{"id":3,"op":"job_wait","session":"j","job":'"$job"',"timeout":0.2}' \
          '{"id":5,"op":"job_wait","session":"j","job":999}'
  echo "$output"
  [ "$(field_of 3 timed_out)" = true ]
  [ "$(field_of 3 state)" = running ]
  [ "$(field_of 5 error.code)" = no_job ]
  # One without a timeout ends when the job does, with its status.
  api '{"id":4,"op":"job_wait","session":"j","job":'"$job"'}' > "$RUNDIR/wait.out" &
  waiter=$!
  sleep 0.5
  api '{"id":6,"op":"job_stdin","session":"j","job":'"$job"',"data":"go\n","eof":true}'
  wait $waiter
  output=$(cat "$RUNDIR/wait.out")
  echo "$output"
  [ "$(field_of 4 timed_out)" = false ]
  [ "$(field_of 4 state)" = exited ]
  [ "$(field_of 4 exit_code)" = 3 ]
}

@test "api: every result carries the posture it ran under, and claims only what holds" {
  run api '{"id":1,"op":"open","session":"p","workdir":"'"$WORK"'"}' \
          '{"id":2,"op":"exec","session":"p","command":"grep -E \"^(Seccomp|NoNewPrivs|CapEff):\" /proc/self/status"}' \
          '{"id":3,"op":"exec","session":"p","command":"sleep 1","background":true}' '{"id":4,"op":"list"}'
  [ "$(field_of 2 posture.backend)" = "$BACKEND" ]
  [ "$(field_of 2 posture.gate)" = approve ]
  [ "$(field_of 2 posture.config_hash)" = "$(field_of 1 config_hash)" ]
  out=$(field_of 2 stdout)
  if [ "$BACKEND" != ssh ]; then
    [ "$(field_of 2 posture.isolation.seccomp)" = true ]
    [ "$(field_of 2 posture.isolation.capabilities)" = 0 ]
    [ "$(field_of 2 posture.isolation.verified)" = true ]
    [[ "$out" == *"Seccomp:"*2* && "$out" == *"NoNewPrivs:"*1* && "$out" == *"CapEff:"*0000000000000000* ]]
  fi
  [ -n "$(field_of 3 posture.backend)" ]
  [ "$(field_of 4 sessions.0.posture.backend)" = "$BACKEND" ]
  if [ "$BACKEND" = ssh ]; then
    # A real machine (docs/ssh.md): no isolation claimed, and the
    # command's own view agrees.
    [ "$(field_of 2 posture.isolation.kind)" = remote-host ]
    [ "$(field_of 2 posture.isolation.network)" = host ]
    [ "$(field_of 2 posture.privilege)" = ssh ]
    [ "$(field_of 2 posture.isolation.seccomp)" = false ]
    [ "$(field_of 2 posture.isolation.verified)" = false ]
    [[ "$out" =~ Seccomp:[[:space:]]+0 ]]
    return
  fi
  if [ "$BACKEND" = local ]; then
    [ "$(field_of 2 posture.isolation.kind)" = namespaces ]
    [ "$(field_of 2 posture.isolation.network)" = loopback ]
    case $MODE in
      setuid) [ "$(field_of 2 posture.privilege)" = setuid ] ;;
      caps) [ "$(field_of 2 posture.privilege)" = file-capabilities ] ;;
      unprivileged) [ "$(field_of 2 posture.privilege)" = unprivileged ] ;;
    esac
  else
    [ "$(field_of 2 posture.isolation.kind)" = container ]
    [ "$(field_of 2 posture.privilege)" = docker-engine ]
  fi
}

@test "api: airlock daemon status and stop" {
  run al daemon status
  [ "$status" -eq 3 ]
  [[ "$output" == *"not running"* ]]
  al session open s
  run al daemon status
  [ "$status" -eq 0 ]
  [[ "$output" == *"running, pid"*"1 session,"* ]]
  run al daemon stop
  [ "$status" -eq 0 ]
  [[ "$output" == *stopped* ]]
  run al daemon status
  [ "$status" -eq 3 ]
}

@test "api: airlock config show lists each key, its value and its origin" {
  write_cfg '{"exec": {"timeout": 99}}'
  run env EXTRA_ENV="$EXTRA_ENV AIRLOCK_JOBS_FINISHED_TTL=5 AIRLOCK_DOCKER_ENV={\"K\":\"secret\"}" \
    bash -c 'source tests/helpers.bash; as_user "$AIRLOCK" config show'
  [ "$status" -eq 0 ]
  [[ "$output" == *"exec.timeout "*"99  ($CFG)"* ]]
  [[ "$output" == *"jobs.finished_ttl "*"5  (environment variable AIRLOCK_JOBS_FINISHED_TTL)"* ]]
  [[ "$output" == *"session.idle_timeout "*"300  (default)"* ]]
  [[ "$output" == *'"K":"<hidden>"'* && "$output" != *secret* ]]
  run al config show --json
  [ "$status" -eq 0 ]
  printf '%s' "$output" | python3 -c 'import json,sys; assert json.load(sys.stdin)["exec"]["timeout"] == 99'
}

@test "api: an image or rootfs without bash says so" {
  [ "$BACKEND" != ssh ] || skip "ssh.bats: a remote user without bash"
  if [ "$BACKEND" = docker ]; then
    img=airlock-nobash:latest
    if ! /usr/bin/docker image inspect $img >/dev/null 2>&1; then
      d=$(mktemp -d); mkdir -p "$d/bin"; cp /bin/busybox "$d/bin/"; ln -s busybox "$d/bin/sh"
      tar -C "$d" -c . | /usr/bin/docker import - $img >/dev/null; rm -rf "$d"
    fi
    run al session open nb --image $img
    [ "$status" -eq 1 ]
    [[ "$output" == *"image $img has no /bin/bash; sessions need bash"* ]]
  else
    needs_static_supervisor "it cannot run in a busybox rootfs"
    write_cfg '{"local": {"rootfs": "'"$ROOTFS"'"}}'
    run al session open nb
    [ "$status" -eq 1 ]
    [[ "$output" == *"has no /bin/bash; sessions need bash"* ]]
  fi
}

@test "api: an OOM kill says so, with the limit, and exits 137" {
  [ "$BACKEND" = local ] && only_modes setuid # a memory cgroup of its own
  [ "$BACKEND" != ssh ] || skip "an ssh host has no memory limit of airlock's"
  run api '{"id":1,"op":"open","session":"m","workdir":"'"$WORK"'","memory":"32M"}' \
          '{"id":2,"op":"exec","session":"m","command":"a=x; while :; do a=$a$a; done","timeout":60}' \
          '{"id":3,"op":"exec","session":"m","command":"echo still here"}' \
          '{"id":4,"op":"exec","session":"m","command":"kill -KILL $$"}'
  echo "$output" | cut -c1-300
  [ "$(field_of 2 exit_code)" = 137 ]
  [ "$(field_of 2 oom_killed)" = true ]
  [[ "$(field_of 2 stderr)" == *"airlock: killed: out of memory (limit 32M)"* ]]
  [ "$(field_of 3 stdout)" = "still here" ]
  # A SIGKILL that is not the kernel's is not called one.
  [ "$(field_of 4 exit_code)" = 137 ]
  [ "$(field_of 4 oom_killed)" = false ]
}

@test "api: docs/config.md's config show example is what config show prints" {
  want=$(sed -n '/^\$ AIRLOCK_EXEC_TIMEOUT=60 airlock config show | head -n 4$/,/^```$/p' docs/config.md | sed '1d;$d')
  [ -n "$want" ]
  run env EXTRA_ENV="$EXTRA_ENV AIRLOCK_BACKEND= AIRLOCK_EXEC_TIMEOUT=60" \
    bash -c 'source tests/helpers.bash; as_user "$AIRLOCK" config show 2> "$T/config-show.err" | head -n 4'
  # (stderr apart: it failed once in CI on the ssh stream, output unseen,
  # and passed on every rerun; its stderr is printed when it fails)
  cat "$T/config-show.err" >&2 || true
  [ "$output" = "$want" ]
}

@test "api: a session opened with an owner is that client's: others get not_owner unless it is shared" {
  run api '{"id":1,"op":"open","session":"mine","workdir":"'"$WORK"'","owner":"agent-a"}' \
          '{"id":2,"op":"exec","session":"mine","command":"echo a","owner":"agent-a"}' \
          '{"id":3,"op":"exec","session":"mine","command":"echo b"}' \
          '{"id":4,"op":"exec","session":"mine","command":"echo c","owner":"agent-b"}' \
          '{"id":5,"op":"jobs","session":"mine","owner":"agent-b"}' \
          '{"id":6,"op":"close","session":"mine","owner":"agent-b"}' \
          '{"id":7,"op":"list","owner":"agent-a"}' '{"id":8,"op":"list"}' \
          '{"id":9,"op":"open","session":"ours","workdir":"'"$WORK"'","owner":"agent-a","share":true}' \
          '{"id":10,"op":"exec","session":"ours","command":"echo shared","owner":"agent-b"}' \
          '{"id":11,"op":"list","owner":"agent-b"}' \
          '{"id":12,"op":"open","session":"x","workdir":"'"$WORK"'","owner":""}' \
          '{"id":13,"op":"exec","session":"mine","command":"true","owner":7}'
  echo "$output"
  [ "$(field_of 2 stdout)" = a ]
  [ "$(field_of 3 error.code)" = not_owner ]
  [[ "$(field_of 3 error.message)" == *'session "mine" belongs to another client'* ]]
  [ "$(field_of 4 error.code)" = not_owner ]
  [ "$(field_of 5 error.code)" = not_owner ]
  [ "$(field_of 6 error.code)" = not_owner ]
  [ "$(field_of 7 sessions.0.access)" = yours ]
  [ "$(field_of 8 sessions.0.access)" = other ]
  [ "$(field_of 10 stdout)" = shared ]
  [ "$(field_of 11 sessions.0.access)" = shared ]
  [ "$(field_of 11 sessions.1.access)" = other ]
  [ "$(field_of 12 error.code)" = bad_request ]
  [ "$(field_of 13 error.code)" = wrong_type ]
  # Nothing started for the others.
  [ -z "$(printf '%s\n' "$output" | grep -E '"id":(3|4),.*"event":"started"')" ]
  [ -n "$(printf '%s\n' "$output" | grep -E '"id":2,.*"event":"started"')" ]
  # A person closes any session of theirs (the CLI forces it).
  run al session close mine
  [ "$status" -eq 0 ]
  run api '{"id":1,"op":"list"}'
  [[ "$output" != *'"session":"mine"'* ]]
  al session close ours
}
