#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# What a session command leaves visible or inherited: no command text in
# any process's argv (ps, /proc/PID/cmdline, docker's view of an exec),
# and no session descriptor (the metadata channel, fd 3; the script, fd 4)
# in the command or anything it starts.  Backend-agnostic like
# sessions.bats: BACKEND selects the backend (default local).

load helpers

setup () {
  BACKEND=${BACKEND:-local}
  RUNDIR="$T/xdg-$BATS_TEST_NUMBER"
  mkdir -p "$RUNDIR"
  chown "$TEST_USER" "$RUNDIR"
  chmod 0700 "$RUNDIR"
  export EXTRA_ENV="XDG_RUNTIME_DIR=$RUNDIR AIRLOCK_SUPERVISOR=$AIRLOCK_SUPERVISOR AIRLOCK_BACKEND=$BACKEND AIRLOCK_DAEMON_IDLE_EXIT=${DAEMON_IDLE:-30} ${BACKEND_ENV:-} ${SESSION_ENV:-}"
}

teardown () {
  [ -z "${SERVE_PID:-}" ] || kill "$SERVE_PID" 2>/dev/null || true
  stop_daemon
  ssh_cleanup
}

al () { as_user "$AIRLOCK" "$@"; }

# A field of the last JSON line of $output.
field () {
  printf '%s\n' "$output" | grep '^{' | tail -n 1 |
    python3 -c 'import json,sys; v=json.load(sys.stdin); [v := v[int(k)] if isinstance(v, list) else v[k] for k in sys.argv[1].split(".")]; print(json.dumps(v) if not isinstance(v, str) else v)' "$1"
}

# Requests from a file, not from an argument: the test's own processes
# must not show the secret either.
api_file () { as_user "$AIRLOCK" serve < "$1"; }

@test "hygiene: another user's ps and /proc/PID/cmdline show no command text" {
  secret="airlock-hygiene-$RANDOM$RANDOM-$$"
  nap=$((100000 + RANDOM)) # a sleep of its own, to see when the command runs
  req="$T/hygiene-req-$BATS_TEST_NUMBER"
  printf '%s\n' '{"id":1,"op":"open","session":"s","workdir":"'"$WORK"'"}' \
    '{"id":2,"op":"exec","session":"s","command":"SECRET_TOKEN='"$secret"'; sleep '"$nap"'; echo done"}' > "$req"
  chmod 0644 "$req"
  api_file "$req" > "$T/hygiene-out" 2>&1 &
  SERVE_PID=$!
  for i in $(seq 300); do pgrep -fx "sleep $nap" >/dev/null && break; sleep 0.1; done
  pgrep -fx "sleep $nap"
  # Another local user's view: ps and every readable cmdline.
  run runuser -u "$OTHER_USER" -- ps -eo args
  [ "$status" -eq 0 ]
  [[ "$output" == *"sleep $nap"* ]]  # it sees the command's processes ...
  [[ "$output" != *"$secret"* ]]   # ... but not the command
  [[ "$output" != *"SECRET_TOKEN"* ]]
  run runuser -u "$OTHER_USER" -- sh -c 'cat /proc/[0-9]*/cmdline 2>/dev/null | tr "\0" " "'
  [[ "$output" != *"$secret"* ]]
  # root's view of every process, the container's included (same kernel).
  for f in /proc/[0-9]*/cmdline; do
    ! tr '\0' ' ' 2>/dev/null < "$f" | grep -qF "$secret" || { echo "in $f"; false; }
  done
  if [ "$BACKEND" = docker ]; then
    # What dockerd keeps of every exec of the session's container (there
    # is none: commands go to the container's supervisor, docker.bats).
    c=$(docker ps -q --filter "label=airlock.owner=$RUNDIR/airlock")
    [ -n "$c" ]
    for id in $(docker inspect -f '{{range .ExecIDs}}{{.}} {{end}}' $c); do
      run curl -s --unix-socket /var/run/docker.sock "http://localhost/exec/$id/json"
      [[ "$output" != *"$secret"* ]]
    done
    run docker inspect $c
    [[ "$output" != *"$secret"* ]]
  fi
  if [ "$BACKEND" = ssh ]; then
    # The remote side is this machine (its processes were in the ps
    # above); nor does our sshd's log have it (LogLevel VERBOSE), nor can
    # another user read it in the remote user's job directories.
    ! grep -F "$secret" "$SSHD_LOG" || false
    run runuser -u "$OTHER_USER" -- sh -c 'grep -rlF "$1" "$2" 2>/dev/null' sh "$secret" "$SSH_HOME"
    [ -z "$output" ]
  fi
  al session close s # ends the command
  wait "$SERVE_PID" 2>/dev/null || true
  SERVE_PID=
}

@test "hygiene: a command has only fds 0, 1 and 2; neither fd 3 nor fd 4 reach it" {
  al session open s
  # ls -l: every descriptor but 0-2 must be ls's own directory (which
  # busybox's ls has closed when it looks at it: its complaint is
  # dropped).
  run al exec s -- 'ls -l /proc/self/fd/ 2>/dev/null; echo "status $?"'
  printf '%s\n' "$output"
  [ "$(printf '%s\n' "$output" | grep -cE ' [012] -> ')" = 3 ]
  others=$(printf '%s\n' "$output" | grep -- '->' |
           grep -Ev ' [012] -> ' | grep -Ev -- '-> /proc/[0-9]+/fd$' || true)
  [ -z "$others" ]
  # In the shell itself, fd 3 and fd 4 are closed.
  run al exec s -- 'for f in 3 4; do { : >&$f; } 2>/dev/null && echo "open $f"; done; echo checked'
  [ "$status" -eq 0 ]
  [ "$output" = checked ]
  # And still the session's cwd is reported and kept, whatever the
  # command did with fd 3 and however it ended.
  # (In /tmp: a docker container's root may not write to the workspace.)
  run al exec s -- 'mkdir -p /tmp/hyg-$$/a && cd /tmp/hyg-$$/a && exec 3>/dev/null 10>/dev/null'
  [ "$status" -eq 0 ]
  run al exec s -- 'pwd'
  [[ "$output" == /tmp/hyg-*/a ]]
  dir=${output%/a}
  run al exec s -- 'f () { cd ..; exit 7; }; f'
  [ "$status" -eq 7 ]
  run al exec s -- 'pwd'
  [ "$output" = "$dir" ]
  al exec s -- "cd / && rm -rf $dir"
}

@test "hygiene: background children hold no session descriptor" {
  al session open s
  run al exec s -- 'sleep 100 & p=$!; sleep 0.3; ls /proc/$p/fd | sort -n | tr "\n" " "; kill $p'
  [ "$status" -eq 0 ]
  [ "$output" = "0 1 2 " ]
  # A background job's command, too.
  run al exec s --background -- 'ls -l /proc/self/fd/ > /tmp/hyg-job.$$ 2>/dev/null; mv /tmp/hyg-job.$$ /tmp/hyg-job'
  [ "$status" -eq 0 ]
  run al exec s -- 'for i in $(seq 300); do [ -e /tmp/hyg-job ] && break; sleep 0.1; done; cat /tmp/hyg-job && rm /tmp/hyg-job'
  printf '%s\n' "$output"
  [ "$status" -eq 0 ]
  [ "$(printf '%s\n' "$output" | grep -cE ' [012] -> ')" = 3 ]
  others=$(printf '%s\n' "$output" | grep -- '->' | grep -Ev ' [012] -> ' | grep -Ev -- '-> /proc/[0-9]+/fd$' || true)
  [ -z "$others" ]
}

@test "hygiene: a 900 KB command runs (its script is bigger than a pipe and an argument)" {
  req="$T/hygiene-big-$BATS_TEST_NUMBER"
  python3 - "$WORK" > "$req" <<'EOF'
import json, sys
cmd = "x='" + "a" * 900000 + "'; echo ${#x}; cd /tmp; export BIG=${x:0:3}"
print(json.dumps({"id": 1, "op": "open", "session": "s", "workdir": sys.argv[1]}))
print(json.dumps({"id": 2, "op": "exec", "session": "s", "command": cmd}))
print(json.dumps({"id": 3, "op": "exec", "session": "s", "command": "echo $BIG $PWD"}))
EOF
  chmod 0644 "$req"
  run api_file "$req"
  [ "$status" -eq 0 ]
  printf "%s\n" "$output" | cut -c1-300
  [ "$(printf '%s\n' "$output" | grep '^{' | python3 -c 'import json,sys; print([r for r in map(json.loads, sys.stdin) if r.get("id") == 2 and "exit_code" in r][0]["output"])')" = 900000 ]
  [ "$(field exit_code)" = 0 ]
  [ "$(field output)" = "aaa /tmp" ]
}

@test "hygiene: airlock exec --command-file keeps the command out of the client's argv too" {
  al session open s
  secret="airlock-cli-$RANDOM$RANDOM-$$"
  nap=$((200000 + RANDOM))
  printf 'TOKEN=%s; sleep %s; echo "[${#TOKEN}]"\n' "$secret" "$nap" > "$WORK/hygiene-cmd-$BATS_TEST_NUMBER"
  chown "$TEST_USER" "$WORK/hygiene-cmd-$BATS_TEST_NUMBER"
  as_user timeout -k 5 60 "$AIRLOCK" exec s --timeout 20 --command-file - \
    < "$WORK/hygiene-cmd-$BATS_TEST_NUMBER" > "$T/hygiene-cli-out" 2>&1 3>&- &
  for i in $(seq 300); do pgrep -fx "sleep $nap" >/dev/null && break; sleep 0.1; done
  pgrep -fx "sleep $nap"
  run runuser -u "$OTHER_USER" -- ps -eo args
  [[ "$output" == *"airlock exec s --timeout 20 --command-file -"* ]]
  [[ "$output" != *"$secret"* ]]
  pkill -fx "sleep $nap"
  wait
  # the whole command ran: the variable was set before the sleep
  grep -qx "\[${#secret}\]" "$T/hygiene-cli-out" || { cat "$T/hygiene-cli-out"; false; }
  # from a file; with words as well it is a usage error
  run al exec s --command-file "$WORK/hygiene-cmd-$BATS_TEST_NUMBER" -- true
  [ "$status" -eq 2 ]
  [[ "$output" == *"--command-file takes the place of COMMAND"* ]]
  echo 'echo from-a-file' > "$WORK/hygiene-cmd-$BATS_TEST_NUMBER"
  run al exec s --command-file "$WORK/hygiene-cmd-$BATS_TEST_NUMBER"
  [ "$status" -eq 0 ]
  [ "$output" = from-a-file ]
  run al exec s --command-file /no/such/file
  [ "$status" -eq 2 ]
  [[ "$output" == *"--command-file /no/such/file: No such file or directory"* ]]
  rm -f "$WORK/hygiene-cmd-$BATS_TEST_NUMBER"
}
