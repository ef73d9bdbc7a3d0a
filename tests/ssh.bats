#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# The ssh backend against a real sshd on 127.0.0.1 (BACKEND=ssh only:
# run-tests.sh starts it with tests/ssh/sshd.sh and exports its
# SSHD_*/SSH_* variables).  Faults while a command prints a numbered
# counter for 20 s (the ControlMaster killed, the server's connection
# process killed or stopped, sshd restarted): the output arrives complete, in order,
# with the right status.  A timeout while the host is down: 124 and
# kill_pending, and nothing of the command left once it is back.  The
# failures (host key changed, key refused, no bash, no sshd) are clear
# errors.  No command text in another user's ps; job directories removed
# after delivery, stale ones swept; close leaves nothing on either side.

load helpers

SSHD_SH="$BATS_TEST_DIRNAME/ssh/sshd.sh"
# 20 s of numbered lines, then a status of its own.
COUNTER='for i in $(seq 1 200); do echo $i; sleep 0.1; done; exit 7'

setup () {
  [ "${BACKEND:-}" = ssh ] || skip "BACKEND=ssh only (run-tests.sh runs it against its own sshd)"
  RUNDIR="$T/xdg-ssh-$BATS_TEST_NUMBER"
  rm -rf "$RUNDIR"
  mkdir -p "$RUNDIR"
  chown "$TEST_USER" "$RUNDIR"
  chmod 0700 "$RUNDIR"
  # Dead links found in seconds, not the default 45.
  export EXTRA_ENV="XDG_RUNTIME_DIR=$RUNDIR AIRLOCK_BACKEND=ssh AIRLOCK_DAEMON_IDLE_EXIT=60 ${BACKEND_ENV:-} AIRLOCK_SSH_CONNECT_TIMEOUT=3 AIRLOCK_SSH_SERVER_ALIVE_INTERVAL=1 AIRLOCK_SSH_SERVER_ALIVE_COUNT=3 ${SESSION_ENV:-}"
  marker=$((RANDOM + 1000))
}

teardown () {
  [ "${BACKEND:-}" = ssh ] || return 0
  # sshd as the test found it: running, not stopped.
  local l
  l=$(cat "$SSHD_DIR/listener.pid" 2>/dev/null)
  [ -n "$l" ] && kill -CONT "$l" 2>/dev/null
  "$SSHD_SH" kill-connections "$SSHD_DIR" CONT
  [ -e "$SSHD_DIR/listener.pid" ] || "$SSHD_SH" start-again "$SSHD_DIR"
  stop_daemon
  ssh_cleanup
  local m
  for m in "$T"/ssh-full-*; do
    [ -d "$m" ] || continue
    mountpoint -q "$m" && umount "$m"
    rmdir "$m"
  done
  rm -f "$T/ssh-"*
}

# Every call bounded.
al () { as_user timeout -k 5 "${AL_TIMEOUT:-90}" "$AIRLOCK" "$@"; }
api () { printf '%s\n' "$@" | as_user timeout -k 5 "${AL_TIMEOUT:-90}" "$AIRLOCK" serve; }

field () {
  printf '%s\n' "$output" | grep '^{' | tail -n 1 |
    python3 -c 'import json,sys; v=json.load(sys.stdin); [v := v[int(k)] if isinstance(v, list) else v[k] for k in sys.argv[1].split(".")]; print(json.dumps(v) if not isinstance(v, str) else v)' "$1"
}

# Wait up to $2 s (default 10) for file $1 to have at least $3 lines.
lines_within () {
  local i
  for i in $(seq $((${2:-10} * 10))); do
    [ "$(wc -l < "$1" 2>/dev/null || echo 0)" -ge "$3" ] && return 0
    sleep 0.1
  done
  echo "$1 has $(wc -l < "$1" 2>/dev/null) lines, not $3"
  return 1
}

# The test user's ssh master of this test (one pid).
master_pid () { # fails when there is none
  local p
  p=$(pgrep -u "$TEST_USER" -f "^ssh: $RUNDIR/.*\[mux\]") || return 1
  echo "${p%%$'\n'*}"
}

# The remote user's processes running something matching $1.
remote_procs () {
  pgrep -a -u "$SSH_USER" -f "$1"
}

# Wait up to $2 s (default 10) for no remote process to match $1.
remote_gone () {
  local i
  for i in $(seq $((${2:-10} * 10))); do
    remote_procs "$1" > /dev/null || return 0
    sleep 0.1
  done
  remote_procs "$1"
  return 1
}

# Run the counter in session s in the background: stdout to
# $T/ssh-out, stderr to $T/ssh-err, its status to $T/ssh-rc.
start_counter () {
  (rc=0; al exec s --timeout 120 -- "$COUNTER" > "$T/ssh-out" 2> "$T/ssh-err" || rc=$?
   echo "$rc" > "$T/ssh-rc") 3>&- &
  COUNTER_PID=$!
  # 3 s of it before the fault.
  lines_within "$T/ssh-out" 20 30
}

# The counter's end: every line once, in order, and its status.
counter_complete () {
  local i
  for i in $(seq 600); do [ -s "$T/ssh-rc" ] && break; sleep 0.1; done
  wait "$COUNTER_PID" 2>/dev/null || true
  echo "status $(cat "$T/ssh-rc" 2>/dev/null), $(wc -l < "$T/ssh-out") lines; stderr:"
  cat "$T/ssh-err"
  [ "$(cat "$T/ssh-rc")" = 7 ]
  [ "$(sha256sum < "$T/ssh-out")" = "$(seq 1 200 | sha256sum)" ] || { diff <(seq 1 200) "$T/ssh-out" | head; false; }
}

@test "ssh: the ControlMaster killed mid-command: every line once, in order, and the status" {
  al session open s
  start_counter
  m=$(master_pid)
  [ -n "$m" ] || { pgrep -a -u "$TEST_USER" ssh; false; }
  kill -KILL "$m"
  counter_complete
  run al exec s -- 'echo still usable'
  [ "$output" = "still usable" ]
}

@test "ssh: the server's connection process killed mid-command: every line once, in order" {
  al session open s
  start_counter
  [ -n "$(pgrep -P "$(cat "$SSHD_DIR/listener.pid")")" ]
  "$SSHD_SH" kill-connections "$SSHD_DIR" KILL
  counter_complete
  run al exec s -- 'echo still usable'
  [ "$output" = "still usable" ]
}

@test "ssh: sshd restarted mid-command (connections dropped): every line once, in order" {
  al session open s
  start_counter
  "$SSHD_SH" stop "$SSHD_DIR"
  sleep 2
  "$SSHD_SH" start-again "$SSHD_DIR"
  counter_complete
  run al exec s -- 'echo still usable'
  [ "$output" = "still usable" ]
}

@test "ssh: a hung connection (its sshd processes stopped) mid-command: every line once, in order" {
  al session open s
  start_counter
  [ -n "$(pgrep -P "$(cat "$SSHD_DIR/listener.pid")")" ]
  # No answer and no close: only ServerAlive (1 s x 3 here) notices.
  "$SSHD_SH" kill-connections "$SSHD_DIR" STOP
  counter_complete
  run al exec s -- 'echo still usable'
  [ "$output" = "still usable" ]
}

@test "ssh: a command that ended while the link was down still delivers all of it" {
  al session open s
  (rc=0; al exec s -- 'seq 1 20000; sleep 2; seq 20001 40000; exit 3' > "$T/ssh-out" 2> "$T/ssh-err" || rc=$?
   echo "$rc" > "$T/ssh-rc") 3>&- &
  lines_within "$T/ssh-out" 20 1
  "$SSHD_SH" stop "$SSHD_DIR"
  # The command ends (in 2 s) while no connection exists.
  sleep 4
  "$SSHD_SH" start-again "$SSHD_DIR"
  for i in $(seq 600); do [ -s "$T/ssh-rc" ] && break; sleep 0.1; done
  cat "$T/ssh-err"
  [ "$(cat "$T/ssh-rc")" = 3 ]
  [ "$(sha256sum < "$T/ssh-out")" = "$(seq 1 40000 | sha256sum)" ]
}

@test "ssh: a timeout while the host is down: 124 and kill_pending; once back, nothing of it left" {
  al session open s
  api '{"id":1,"op":"exec","session":"s","command":"trap \"\" TERM; sleep '"$marker"'.1 & sleep '"$marker"'.2; true","timeout":5}' \
    > "$T/ssh-out" 2>&1 &
  waiter=$!
  for i in $(seq 100); do remote_procs "^sleep $marker\.2" > /dev/null && break; sleep 0.1; done
  remote_procs "^sleep $marker\.2"
  start=$(date +%s)
  "$SSHD_SH" stop "$SSHD_DIR"
  wait "$waiter" || true
  end=$(date +%s)
  output=$(cat "$T/ssh-out")
  echo "$output"
  # The local deadline holds: the timeout (5 s) plus the grace and one
  # failed reach of the host (connect timeout 3 s), with room to spare.
  [ $((end - start)) -le 30 ]
  [ "$(field exit_code)" = 124 ]
  [ "$(field kill_pending)" = true ]
  "$SSHD_SH" start-again "$SSHD_DIR"
  run al exec s -- 'echo back'
  [ "$output" = back ]
  remote_gone "^sleep $marker\." 15
}

@test "ssh: a changed host key is refused: the error names the host and the known_hosts line; nothing replaced" {
  kh="$T/ssh-known_hosts"
  ssh-keygen -q -t ed25519 -N '' -f "$T/ssh-wrong-key"
  {
    echo "[127.0.0.2]:$SSHD_PORT $(cut -d' ' -f1,2 "$T/ssh-wrong-key.pub")"
    echo "[127.0.0.1]:$SSHD_PORT $(cut -d' ' -f1,2 "$T/ssh-wrong-key.pub")"
  } > "$kh"
  chown "$TEST_USER" "$kh"
  cp "$kh" "$T/ssh-known_hosts.orig"
  # Both settings refuse it: accept-new takes only hosts never seen.
  for strict in accept-new yes; do
    SESSION_ENV="AIRLOCK_SSH_KNOWN_HOSTS=$kh AIRLOCK_SSH_STRICT_HOST_KEY_CHECKING=$strict" setup
    run al session open s
    echo "$strict: $output"
    [ "$status" -ne 0 ]
    [[ "$output" == *127.0.0.1* ]]
    [[ "$output" == *"$kh:2"* ]]
    cmp "$kh" "$T/ssh-known_hosts.orig"
    run al session ls
    [[ "$output" != *"s "*idle* ]]
    stop_daemon
  done
}

@test "ssh: a key the server refuses: the error says which identities were tried" {
  SESSION_ENV="AIRLOCK_SSH_KEY=$SSH_UNKNOWN_KEY" setup
  run al session open s
  echo "$output"
  [ "$status" -ne 0 ]
  fp=$(ssh-keygen -lf "$SSH_UNKNOWN_KEY" | cut -d' ' -f2)
  [[ "$output" == *"$SSH_UNKNOWN_KEY"* || "$output" == *"$fp"* ]]
}

@test "ssh: a remote without bash: the error says the session needs bash" {
  # (tests/ssh/sshd.sh checked that this user's PATH has sh and
  # coreutils but no bash.)
  SESSION_ENV="AIRLOCK_SSH_USER=$SSH_NOBASH_USER" setup
  run al session open s
  echo "$output"
  [ "$status" -ne 0 ]
  [[ "$output" == *bash* ]]
}

@test "ssh: a full remote disk for the job directory: a clear error; usable again once there is room" {
  full="$T/ssh-full-$marker"
  mkdir -p "$full"
  mount -t tmpfs -o size=256k,mode=0700,uid="$(id -u "$SSH_USER")" tmpfs "$full"
  SESSION_ENV="AIRLOCK_SSH_REMOTE_DIR=$full/jobs" setup
  al session open s
  # Nothing left for the next command's script (root fills it: tmpfs
  # keeps nothing back for root).
  dd if=/dev/zero of="$full/fill" bs=4k 2>/dev/null || true
  run al exec s -- 'echo "this never runs"'
  echo "$output"
  rm -f "$full/fill"
  [ "$status" -ne 0 ]
  [[ "$output" == *"No space left"* ]]
  [[ "$output" == *"$full/jobs"* ]]
  [[ $'\n'"$output"$'\n' != *$'\nthis never runs\n'* ]]
  run al exec s -- 'echo room again'
  echo "$output"
  [ "$output" = "room again" ]
  al session close s
}

@test "ssh: --host (CLI) and the API's host field choose the host over the configuration" {
  SESSION_ENV="AIRLOCK_SSH_HOST=nowhere.invalid AIRLOCK_SSH_PORT=1 AIRLOCK_SSH_USER=nobody" setup
  run al session open h --host "$SSH_USER@127.0.0.1:$SSHD_PORT"
  echo "$output"
  [ "$status" -eq 0 ]
  run al exec h -- 'id -un'
  [ "$output" = "$SSH_USER" ]
  al session close h
  # No workdir: an ssh session's is ssh.workdir, on the remote host.
  run api '{"id":1,"op":"open","session":"a","host":"'"$SSH_USER@127.0.0.1:$SSHD_PORT"'"}'
  echo "$output"
  [ "$(field ok)" = true ]
  [ "$(field backend)" = ssh ]
  [ "$(field cwd)" = "$SSH_WORKDIR" ]
  run al exec a -- 'id -un'
  [ "$output" = "$SSH_USER" ]
  al session close a
  run al session open bad --host 'me@two words'
  echo "$output"
  [ "$status" -ne 0 ]
  [[ "$output" == *host* ]]
}

@test "ssh: an unreachable host (a closed port): a clear error, in bounded time" {
  port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  SESSION_ENV="AIRLOCK_SSH_PORT=$port" setup
  start=$(date +%s)
  run al session open s
  end=$(date +%s)
  echo "$output"
  [ "$status" -ne 0 ]
  [[ "$output" == *127.0.0.1* ]]
  [[ "$output" == *"$port"* ]]
  [[ "$output" == *[Rr]efused* || "$output" == *[Uu]nreachable* ]]
  [ $((end - start)) -le 30 ]
}

@test "ssh: another user's ps shows no command text, on either side" {
  secret="airlock-ssh-$RANDOM$RANDOM-$$"
  nap=$((300000 + RANDOM))
  al session open s
  printf 'TOKEN=%s; sleep %s; echo "[${#TOKEN}]"\n' "$secret" "$nap" > "$T/ssh-cmd"
  chmod 0644 "$T/ssh-cmd"
  (al exec s --timeout 60 --command-file - < "$T/ssh-cmd" > "$T/ssh-out" 2>&1) 3>&- &
  for i in $(seq 100); do pgrep -fx "sleep $nap" > /dev/null && break; sleep 0.1; done
  # it runs as the remote user, on this machine
  [ "$(pgrep -u "$SSH_USER" -fx "sleep $nap")" ]
  run runuser -u "$OTHER_USER" -- ps -eo args
  [[ "$output" == *"sleep $nap"* ]]
  [[ "$output" != *"$secret"* ]]
  for f in /proc/[0-9]*/cmdline; do
    ! tr '\0' ' ' 2>/dev/null < "$f" | grep -qF "$secret" || { echo "in $f: $(tr '\0' ' ' < "$f")"; false; }
  done
  ! grep -F "$secret" "$SSHD_LOG" || false
  kill $(pgrep -u "$SSH_USER" -fx "sleep $nap")
  wait
  grep -qx "\[${#secret}\]" "$T/ssh-out" || { cat "$T/ssh-out"; false; }
}

@test "ssh: job directories are removed after delivery" {
  al session open s
  # What the session itself keeps there (its shell state, say), once.
  al exec s -- true
  # The remote removes a job's directory once our acknowledgment of its exit status arrives, so a
  # moment after `exec` returned: wait (bounded) until no job directory (SESSION-JOB) is left.
  no_job_dirs() {
    local i
    for i in $(seq 100); do
      [ -z "$(find "$SSH_HOME/.airlock" -mindepth 1 -maxdepth 1 -name '*-[0-9]*' 2>/dev/null)" ] && return 0
      sleep 0.1
    done
    find "$SSH_HOME/.airlock"; false
  }
  no_job_dirs
  before=$(find "$SSH_HOME/.airlock" -mindepth 1 2>/dev/null | sort)
  for i in 1 2 3; do
    run al exec s -- "echo $i; echo err >&2; exit $i"
    [ "$status" -eq "$i" ]
  done
  run al exec s --background -- 'echo bg'
  [ "$status" -eq 0 ]
  # the background job's directory comes and goes after its id is printed
  run api '{"op":"job_wait","session":"s","job":'"${lines[${#lines[@]}-1]}"',"timeout":30}'
  [ "$(field state)" = exited ]
  no_job_dirs
  after=$(find "$SSH_HOME/.airlock" -mindepth 1 2>/dev/null | sort)
  diff <(echo "$before") <(echo "$after")
  al session close s
  [ -z "$(find "$SSH_HOME/.airlock" -type f 2>/dev/null)" ] || { find "$SSH_HOME/.airlock"; false; }
}

@test "ssh: stale job directories (a dead daemon's) are swept on the next connection; fresh ones kept" {
  SESSION_ENV="AIRLOCK_SSH_JOB_TTL=3600" setup
  al session open s
  # Where this backend keeps job directories: that of a running job.
  touch "$T/ssh-stamp"
  run al exec s --background -- "sleep $marker.1"
  for i in $(seq 50); do remote_procs "^sleep $marker\.1" > /dev/null && break; sleep 0.1; done
  job=$(find "$SSH_HOME/.airlock" -mindepth 1 -type d -newer "$T/ssh-stamp" | awk '{ print length, $0 }' | sort -n | tail -n 1 | cut -d' ' -f2-)
  [ -n "$job" ] || { find "$SSH_HOME/.airlock"; false; }
  base=${job%/*} name=${job##*/}
  # Two copies of it, named like it: one left by a daemon that died two
  # days ago, one half an hour old (younger than the TTL: another daemon's,
  # perhaps running).  Its process is gone once the session is closed.
  stale=${name%????}dead fresh=${name%????}beef
  cp -a "$job" "$base/$stale"
  cp -a "$job" "$base/$fresh"
  al session close s
  stop_daemon
  for i in $(seq 50); do master_pid > /dev/null || break; sleep 0.1; done
  ! master_pid || false
  remote_gone "^sleep $marker\."
  find "$base/$stale" -exec touch -h -d '2 days ago' {} +
  find "$base/$fresh" -exec touch -h -d '30 minutes ago' {} +
  al session open s2
  al exec s2 -- true
  [ ! -e "$base/$stale" ] || { ls -la "$base"; false; }
  [ -d "$base/$fresh" ]
}

@test "ssh: close leaves no remote process and no local ssh master" {
  al session open s
  run api '{"id":1,"op":"exec","session":"s","background":true,"command":"setsid sleep '"$marker"'.1 & sleep '"$marker"'.2"}'
  for i in $(seq 50); do remote_procs "^sleep $marker\.2" > /dev/null && break; sleep 0.1; done
  remote_procs "^sleep $marker\.2"
  master_pid
  al session close s
  remote_gone "^sleep $marker\." 10
  for i in $(seq 50); do master_pid > /dev/null || break; sleep 0.1; done
  ! master_pid || false
  # Nothing of the remote user's at all: its connections ended too.
  for i in $(seq 50); do pgrep -u "$SSH_USER" > /dev/null || break; sleep 0.1; done
  ! pgrep -a -u "$SSH_USER" || false
}

@test "ssh: the master's ControlPath is in a 0700 directory of the daemon's runtime dir" {
  al session open s
  m=$(master_pid)
  [ -n "$m" ]
  path=$(tr '\0' ' ' < "/proc/$m/cmdline" | sed -n 's/^ssh: \(.*\) \[mux\] *$/\1/p')
  [ -S "$path" ]
  [[ "$path" == "$RUNDIR/"* ]]
  [ "$(stat -c '%a %U' "${path%/*}")" = "700 $TEST_USER" ]
  # short enough for sun_path (108) with ssh's temporary suffix
  [ "${#path}" -le 90 ]
}

# ---- terminal jobs (exec with "pty"): `ssh -tt` over the master ----

# A person at a terminal job's keyboard (tests/pty_client.py), remotely.
typist () { EXTRA_ENV="$EXTRA_ENV AIRLOCK=$AIRLOCK" as_user timeout -k 5 90 python3 "$PTY_CLIENT" "$SSH_WORKDIR" "$@"; }

@test "ssh pty: the remote command's stdio is a real remote terminal, at the size and TERM asked" {
  run api '{"id":1,"op":"open","session":"s"}' \
    '{"id":2,"op":"exec","session":"s","command":"tty; stty size; echo \"$TERM\"; [ -t 0 ] && [ -t 2 ] && echo all; ps -o tty= -p $$","pty":{"rows":30,"cols":100,"term":"vt100"}}'
  echo "$output"
  [ "$(field exit_code)" = 0 ]
  [[ "$(field stdout)" =~ ^/dev/pts/[0-9]+$'\r\n30 100\r\nvt100\r\nall\r\npts/'[0-9]+$'\r'$ ]]
  [ "$(field stderr)" = "" ]
}

@test "ssh pty: a resize reaches the remote program (SIGWINCH, then the new stty size)" {
  run typist 'trap "echo winch; stty size" WINCH; stty size; until read -t 0.2 x; do :; done; echo done' \
    'expect:24 80\r\n' 'resize:40:120' 'expect:winch\r\n40 120\r\n' 'type:\n' 'expect:done' wait
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "$output" == *"exit 0 exited"* ]]
}

@test "ssh pty: bash -i remotely; ^C stops the foreground program only, ^D ends the shell" {
  run typist 'bash --norc -i' 'expect:\$ $' 'type:sleep '"$marker"'.5\n' pause:1 'type:\x03' \
    'expect:\$ $' "type:echo al''ive\n" 'expect:alive\r\n' 'expect:\$ $' eof wait
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "$output" == *"exit 0 exited"* ]]
  remote_gone "^sleep $marker" 5
}

@test "ssh pty: another user's ps shows no command text of a terminal job" {
  secret="airlock-ssh-$RANDOM$RANDOM-$$"
  al session open s
  run api '{"id":1,"op":"exec","session":"s","background":true,"pty":{},"command":"TOKEN='"$secret"'; sleep '"$marker"'.4; echo ${#TOKEN}"}'
  for i in $(seq 100); do remote_procs "^sleep $marker\.4" > /dev/null && break; sleep 0.1; done
  remote_procs "^sleep $marker\.4"
  # The remote terminal runs a path, its job's file, not the text.
  pgrep -a -u "$SSH_USER" -f "^bash .*/pty$"
  run runuser -u "$OTHER_USER" -- ps -eo args
  [[ "$output" == *"sleep $marker.4"* ]]
  [[ "$output" != *"$secret"* ]]
  for f in /proc/[0-9]*/cmdline; do
    ! tr '\0' ' ' 2>/dev/null < "$f" | grep -qF "$secret" || { echo "in $f: $(tr '\0' ' ' < "$f")"; false; }
  done
  ! grep -F "$secret" "$SSHD_LOG" || false
  al session close s
  remote_gone "^sleep $marker" 10
}

@test "ssh pty: a terminal job's timeout kills its whole remote tree" {
  run api '{"id":1,"op":"open","session":"s"}' \
    '{"id":2,"op":"exec","session":"s","command":"sleep '"$marker"'.1 & setsid sleep '"$marker"'.2 & sleep '"$marker"'.3","timeout":2,"pty":{}}'
  echo "$output"
  [ "$(field cause)" = timed_out ]
  [ "$(field exit_code)" = 124 ]
  remote_gone "^sleep $marker" 10
}

@test "ssh pty: the ControlMaster killed during a terminal job: it ends, saying why, and nothing of it is left remotely" {
  al session open s
  run api '{"id":1,"op":"exec","session":"s","background":true,"pty":{},"command":"trap \"\" HUP; sleep '"$marker"'.6 & sleep '"$marker"'.7"}'
  job=$(field job)
  [ -n "$job" ]
  for i in $(seq 100); do remote_procs "^sleep $marker\.7" > /dev/null && break; sleep 0.1; done
  remote_procs "^sleep $marker\.7"
  m=$(master_pid)
  [ -n "$m" ]
  kill -KILL "$m"
  start=$(date +%s)
  run api '{"id":2,"op":"job_wait","session":"s","job":'"$job"',"timeout":40}'
  echo "$output"
  [ $(($(date +%s) - start)) -le 40 ]
  [[ "$output" == *'"cause":"lost"'* ]]
  [[ "$output" == *terminal* ]]
  # Killed on the next connection (the run channel's resume), HUP ignored or not.
  remote_gone "^sleep $marker\." 30
  run al exec s -- 'echo still usable'
  [ "$output" = "still usable" ]
}
