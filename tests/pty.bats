#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# Commands on a terminal (exec with "pty", issue 19): the sandbox's own
# pseudo-terminal, driven through the JSON-lines API (and
# tests/pty_client.py, a person typing) and `airlock exec --pty`.
# BACKEND selects the backend (default local; run-tests.sh runs it on
# modal too, against the Modal double, which allocates a real terminal
# for an exec with pty_info as Modal does).

load helpers

setup () {
  RUNDIR="$T/xdg-pty-$BATS_TEST_NUMBER"
  mkdir -p "$RUNDIR"
  chown "$TEST_USER" "$RUNDIR"
  chmod 0700 "$RUNDIR"
  BACKEND=${BACKEND:-local}
  export EXTRA_ENV="XDG_RUNTIME_DIR=$RUNDIR AIRLOCK_SUPERVISOR=$AIRLOCK_SUPERVISOR AIRLOCK_BACKEND=$BACKEND AIRLOCK_DAEMON_IDLE_EXIT=30 AIRLOCK=$AIRLOCK ${BACKEND_ENV:-}"
}

teardown () {
  stop_daemon
}

al () { as_user timeout -k 5 60 "$AIRLOCK" "$@"; }

# One API conversation: the JSON lines given, the answers printed.
api () { printf '%s\n' "$@" | as_user timeout -k 5 60 "$AIRLOCK" serve; }

# A person at the terminal: tests/pty_client.py's steps.
typist () { as_user timeout -k 5 90 python3 "$PTY_CLIENT" "$WORK" "$@"; }

field () {
  printf '%s\n' "$output" | grep '^{' | tail -n 1 |
    python3 -c 'import json,sys; v=json.load(sys.stdin); [v := v[int(k)] if isinstance(v, list) else v[k] for k in sys.argv[1].split(".")]; print(json.dumps(v) if not isinstance(v, str) else v)' "$1"
}

open_line () { echo '{"id":1,"op":"open","session":"p","workdir":"'"$WORK"'"}'; }

@test "pty: the command's stdio is a terminal of the sandbox, at the size and TERM asked" {
  run api "$(open_line)" \
    '{"id":2,"op":"exec","session":"p","command":"tty; stty size; echo \"$TERM\"; [ -t 0 ] && [ -t 2 ] && echo all","pty":{"rows":30,"cols":100,"term":"vt100"}}'
  [ "$status" -eq 0 ]
  [ "$(field exit_code)" = 0 ]
  [[ "$(field stdout)" =~ ^/dev/pts/[0-9]+$'\r\n30 100\r\nvt100\r\nall\r'$ ]] # $( ) took the \n
  [ "$(field stderr)" = "" ]
  # Defaults: 24x80, xterm-256color; without pty, no terminal.
  run api "$(open_line)" \
    '{"id":2,"op":"exec","session":"p","command":"stty size; echo \"$TERM\"","pty":{}}' \
    '{"id":3,"op":"exec","session":"p","command":"tty"}'
  [[ "$output" == *'"stdout":"24 80\r\nxterm-256color\r\n"'* ]]
  [ "$(field stdout)" = "not a tty" ]
}

@test "pty: bad pty fields are refused, as everywhere in the API" {
  run api "$(open_line)" \
          '{"id":1,"op":"exec","session":"p","command":"true","pty":{"rows":24,"colour":1}}' \
          '{"id":2,"op":"exec","session":"p","command":"true","pty":{"rows":0}}' \
          '{"id":3,"op":"exec","session":"p","command":"true","pty":{"cols":1001}}' \
          '{"id":4,"op":"exec","session":"p","command":"true","pty":{"term":"../x"}}' \
          '{"id":5,"op":"exec","session":"p","command":"true","pty":true}' \
          '{"id":6,"op":"resize","session":"p","job":1,"rows":10}' \
          '{"id":7,"op":"resize","session":"p","job":1,"rows":10,"cols":10,"x":1}'
  echo "$output"
  # (by id: a cloud session's open answers after the refusals)
  answer () { printf '%s\n' "$output" | grep -F "{\"id\":$1,\"ok\":false,"; }
  [[ "$(answer 1)" == *'"code":"unknown_field"'*'colour'* ]]
  [[ "$(answer 2)" == *'"code":"wrong_type"'*'rows'* ]]
  [[ "$(answer 3)" == *'"code":"wrong_type"'*'cols'* ]]
  [[ "$(answer 4)" == *'"code":"bad_request"'*'term'* ]]
  [[ "$(answer 5)" == *'"code":"wrong_type"'*'pty'* ]]
  [[ "$(answer 6)" == *'"code":"missing_field"'* ]]
  [[ "$(answer 7)" == *'"code":"unknown_field"'* ]]
}

@test "pty: resize reaches the command's terminal; a job without one says so" {
  run typist 'stty size; read x; stty size' 'expect:24 80' 'resize:40:120' 'type:\n' \
    'expect:40 120' wait
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "$output" == *"exit 0 exited"* ]]
  run api "$(open_line)" \
    '{"id":2,"op":"exec","session":"p","command":"sleep 5","background":true}' \
    '{"id":3,"op":"resize","session":"p","job":2,"rows":10,"cols":10}' \
    '{"id":4,"op":"kill","session":"p","job":2}'
  [[ "$output" == *'"id":3,"ok":false,"error":{"code":"bad_request","message":"job 2 does not run on a terminal'* ]]
}

@test "pty: bash -i through the API; Ctrl-C stops the foreground program, not the shell" {
  run typist 'bash --norc -i' 'expect:\$ $' "type:echo h''i\n" 'expect:hi\r\n' \
    'type:sleep 100\n' pause:1 'type:\x03' 'expect:\$ $' "type:echo al''ive\n" \
    'expect:alive\r\n' 'type:exit\n' wait
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "$output" == *"exit 0 exited"* ]]
  gone 'sleep 100' 3
}

@test "pty: the end of input is a typed ^D: it ends cat, and the shell reads on" {
  run typist 'bash --norc -i' 'expect:\$ $' 'type:cat\n' pause:0.5 'type:one\n' 'expect:one\r\n' eof \
    'expect:\$ $' "type:echo st''ill here\n" 'expect:still here\r\n' \
    'expect:\$ $' eof wait
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "$output" == *"exit 0 exited"* ]]
}

@test "pty: python3 -i evaluates, and the end of input (^D) ends it" {
  run typist 'python3 -i' 'expect:>>> $' 'type:6*7\n' 'expect:42\r\n>>> $' eof wait
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "$output" == *"exit 0 exited"* ]]
}

@test "pty: binary output through a raw terminal is intact in the spool" {
  # 200,000 bytes of every value decode to more than the 50,000
  # characters of a result: the spill file is the spool, every raw byte.
  # (Random ones where the workspace is this host's; a cloud sandbox
  # makes a pattern of its own.)
  make_bytes='import sys; sys.stdout.buffer.write(bytes(range(255, -1, -1)) * 800)'
  if [ "$BACKEND" = local ]; then
    head -c 200000 /dev/urandom > "$WORK/random.bin"
    chmod 0644 "$WORK/random.bin"
    cmd='stty raw -echo; cat random.bin'
  else
    python3 -c "$make_bytes" > "$WORK/random.bin"
    cmd="stty raw -echo; python3 -c '$make_bytes'"
  fi
  run api "$(open_line)" \
    '{"id":2,"op":"exec","session":"p","command":"'"$cmd"'","pty":{}}'
  [ "$(field exit_code)" = 0 ]
  spill=$(field spill_path)
  cmp "$spill" "$WORK/random.bin"
  rm -f "$spill" "$WORK/random.bin"
  # Cooked, text passes whole too (ONLCR adds the \r only).
  run api "$(open_line)" \
    '{"id":2,"op":"exec","session":"p","command":"head -c 30000 /dev/urandom > r; base64 r | tr -d \"\\n\"; echo; sha256sum < r","pty":{}}'
  out=$(field stdout)
  sum=$(printf '%s' "${out%%$'\r\n'*}" | base64 -d | sha256sum)
  [ "${sum%% *}" = "$(printf '%s' "$out" | tail -n 1 | tr -d '\r -')" ]
  rm -f "$WORK/r"
}

@test "pty: a terminal job's timeout kills its whole tree" {
  run api "$(open_line)" \
    '{"id":2,"op":"exec","session":"p","command":"sleep 301 & setsid sleep 302 & sleep 303","timeout":1,"pty":{}}'
  [ "$(field cause)" = timed_out ]
  [ "$(field exit_code)" = 124 ]
  gone 'sleep 30[123]' 5
}

@test "pty: airlock exec --pty through script(1)" {
  al session open p
  run as_user timeout -k 5 60 script -qec "$AIRLOCK exec p --pty -- 'tty; stty size'" /dev/null
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "$output" =~ /dev/pts/[0-9]+ ]]
  # Without a terminal on stdin: 24x80, input from the pipe.
  run as_user timeout -k 5 60 sh -c "printf '6*7\n' | $AIRLOCK exec p --pty -- \"python3 -c 'print(eval(input()))'\""
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "$output" == *$'6*7\r\n42\r'* ]] # run took the last \n
  run al exec p --pty -- stty size
  [[ "$output" == *"24 80"* ]]
}

@test "pty: a shell on a terminal needs approval where the session reaches the host" {
  [ "$BACKEND" = local ] || skip "a cloud sandbox is the isolated floor (policy.bats)"
  # A local session's workspace is the host's: the whole gate applies.
  run api "$(open_line)" \
    '{"id":2,"op":"exec","session":"p","command":"bash -i","pty":{},"approval":"deny","stdin":"exit\n"}' \
    '{"id":3,"op":"exec","session":"p","command":"tty","pty":{},"approval":"deny"}' \
    '{"id":4,"op":"exec","session":"p","command":"bash -c true","approval":"deny","stdin":"exit\n"}'
  echo "$output"
  [[ "${lines[1]}" == *'"id":2,"ok":false,"error":{"code":"denied"'*'interactive shell or interpreter on a terminal'*'(terminal-interpreter)'* ]]
  [[ "$output" == *'"id":3,"ok":true,"event":"result","exit_code":0'* ]]
  [[ "$output" == *'"id":4,"ok":true,"event":"result","exit_code":0'* ]]
}
