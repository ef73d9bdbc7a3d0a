#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# Commands on a terminal (exec with "pty", issue 19): the sandbox's own
# pseudo-terminal, driven through the JSON-lines API (and
# tests/pty_client.py, a person typing) and `airlock exec --pty`.
# BACKEND selects the backend (default local), as in sessions.bats; every
# backend that gives a terminal runs this same file (tests/run-tests.sh),
# modal against the Modal double, which allocates a real terminal for an
# exec with pty_info as Modal does.
# The commands use only what every test sandbox has (bash and the tools of
# busybox); files are made inside the sandbox, so the host never needs to
# see its workdir.  Process markers are unique per test: other runs of this
# file may be under way on the same machine.

load helpers

setup () {
  BACKEND=${BACKEND:-local}
  RUNDIR="$T/xdg-pty-$BATS_TEST_NUMBER"
  mkdir -p "$RUNDIR"
  chown "$TEST_USER" "$RUNDIR"
  chmod 0700 "$RUNDIR"
  export EXTRA_ENV="XDG_RUNTIME_DIR=$RUNDIR AIRLOCK_SUPERVISOR=$AIRLOCK_SUPERVISOR AIRLOCK_BACKEND=$BACKEND AIRLOCK_DAEMON_IDLE_EXIT=30 AIRLOCK=$AIRLOCK ${BACKEND_ENV:-}"
  marker=$((RANDOM + 1000))
}

teardown () {
  stop_daemon
  ssh_cleanup
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

# Skip, saying so, where the backend's test sandbox lacks a program (the
# docker test image is busybox and bash: tests/docker/make-image.sh).
needs_in_sandbox () {
  run api "$(open_line)" '{"id":2,"op":"exec","session":"p","command":"command -v '"$1"'"}'
  [ "$(field exit_code)" = 0 ] || skip "the $BACKEND test sandbox has no $1"
}

# The answer to request $1 in $output (a backend may send progress
# events of the open first).
answer () { printf '%s\n' "$output" | grep -F "{\"id\":$1,\"ok\":" | tail -n 1; }

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
          '{"id":2,"op":"exec","session":"p","command":"true","pty":{"rows":24,"colour":1}}' \
          '{"id":3,"op":"exec","session":"p","command":"true","pty":{"rows":0}}' \
          '{"id":4,"op":"exec","session":"p","command":"true","pty":{"cols":1001}}' \
          '{"id":5,"op":"exec","session":"p","command":"true","pty":{"term":"../x"}}' \
          '{"id":6,"op":"exec","session":"p","command":"true","pty":true}' \
          '{"id":7,"op":"resize","session":"p","job":1,"rows":10}' \
          '{"id":8,"op":"resize","session":"p","job":1,"rows":10,"cols":10,"x":1}'
  echo "$output"
  [[ "$(answer 2)" == *'"code":"unknown_field"'*'colour'* ]]
  [[ "$(answer 3)" == *'"code":"wrong_type"'*'rows'* ]]
  [[ "$(answer 4)" == *'"code":"wrong_type"'*'cols'* ]]
  [[ "$(answer 5)" == *'"code":"bad_request"'*'term'* ]]
  [[ "$(answer 6)" == *'"code":"wrong_type"'*'pty'* ]]
  [[ "$(answer 7)" == *'"code":"missing_field"'* ]]
  [[ "$(answer 8)" == *'"code":"unknown_field"'* ]]
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

@test "pty: a full-screen program hears the resize (SIGWINCH) and reads the new size" {
  # What a curses program does, with what every test sandbox has: the
  # size from the terminal (stty size: TIOCGWINSZ) at start, and again
  # after a SIGWINCH (the trap only notes it, the loop redraws, as curses
  # does; read -t: the loop runs however bash's read treats a trap).
  run typist 'trap "w=1" WINCH; echo start $(stty size); until read -r -t 0.2 x; do [ -z "$w" ] || { w=; echo winch $(stty size); }; done; echo bye' \
    'expect:start 24 80\r\n' 'resize:40:120' 'expect:winch 40 120\r\n' pause:0.3 'resize:9:33' \
    'expect:winch 9 33\r\n' 'type:\n' 'expect:bye\r\n' wait
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "$output" == *"exit 0 exited"* ]]
}

@test "pty: a python3 curses program redraws at the new size after a resize" {
  needs_in_sandbox python3
  # curses.wrapper: the terminal's own size at start, then a redraw at
  # the current size on every KEY_RESIZE (ncurses' SIGWINCH handler), as
  # a full-screen program does; q ends it.  Every KEY_RESIZE, not only the
  # first: on Modal the window changes by stty, which sets rows and then
  # columns (two SIGWINCHs, the first at 30x80).
  prog='import curses
def main(w):
    y, x = w.getmaxyx()
    w.addstr(0, 0, "size %d %d" % (y, x)); w.refresh()
    while True:
        c = w.getch()
        if c == ord("q"):
            break
        if c == curses.KEY_RESIZE:
            y, x = w.getmaxyx()
            w.addstr(1, 0, "now %d %d" % (y, x)); w.clrtoeol(); w.refresh()
curses.wrapper(main)'
  run typist "python3 -c '$prog'" 'expect:size 24 80' pause:0.5 'resize:30:100' \
    'expect:now 30 100' 'type:q' wait
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "$output" == *"exit 0 exited"* ]]
}

@test "pty: bash -i through the API; Ctrl-C stops the foreground program, not the shell" {
  run typist 'bash --norc -i' 'expect:\$ $' "type:echo h''i\n" 'expect:hi\r\n' \
    "type:sleep $marker.1\\n" pause:1 'type:\x03' 'expect:\$ $' "type:echo al''ive\n" \
    'expect:alive\r\n' 'type:exit\n' wait
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "$output" == *"exit 0 exited"* ]]
  gone "^sleep $marker\\.1" 3
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
  needs_in_sandbox python3
  run typist 'python3 -i' 'expect:>>> $' 'type:6*7\n' 'expect:42\r\n>>> $' eof wait
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "$output" == *"exit 0 exited"* ]]
}

@test "pty: binary output through a raw terminal is intact in the spool" {
  # 200,000 random bytes, made in the sandbox (its sha256 from a job
  # without a terminal), decode to more than the 50,000 characters of a
  # result: the spill file is the spool, every raw byte.
  run api "$(open_line)" \
    '{"id":2,"op":"exec","session":"p","command":"head -c 200000 /dev/urandom > random.bin && sha256sum < random.bin"}' \
    '{"id":3,"op":"exec","session":"p","command":"stty raw -echo; cat random.bin; rm random.bin","pty":{}}'
  echo "$output"
  [ "$(field exit_code)" = 0 ]
  sum=$(printf '%s\n' "$output" | grep '"id":2' | tail -n 1 | python3 -c 'import json,sys; print(json.load(sys.stdin)["stdout"].split()[0])')
  spill=$(field spill_path)
  [ "$(stat -c %s "$spill")" -eq 200000 ]
  [ "$(sha256sum < "$spill" | cut -d' ' -f1)" = "$sum" ]
  rm -f "$spill"
  # Cooked, text passes whole too (ONLCR adds the \r only).
  run api "$(open_line)" \
    '{"id":2,"op":"exec","session":"p","command":"head -c 30000 /dev/urandom > r; base64 r | tr -d \"\\n\"; echo; sha256sum < r; rm r","pty":{}}'
  out=$(field stdout)
  sum=$(printf '%s' "${out%%$'\r\n'*}" | base64 -d | sha256sum)
  [ "${sum%% *}" = "$(printf '%s' "$out" | tail -n 1 | tr -d '\r -')" ]
}

@test "pty: a terminal job's timeout kills its whole tree" {
  run api "$(open_line)" \
    '{"id":2,"op":"exec","session":"p","command":"sleep '$marker'.1 & setsid sleep '$marker'.2 & sleep '$marker'.3","timeout":1,"pty":{}}'
  [ "$(field cause)" = timed_out ]
  [ "$(field exit_code)" = 124 ]
  gone "^sleep $marker\\." 5
}

@test "pty: airlock exec --pty through script(1)" {
  al session open p
  run as_user timeout -k 5 60 script -qec "$AIRLOCK exec p --pty -- 'tty; stty size'" /dev/null
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "$output" =~ /dev/pts/[0-9]+ ]]
  # Without a terminal on stdin: 24x80, input from the pipe.
  run as_user timeout -k 5 60 sh -c "printf '6*7\n' | $AIRLOCK exec p --pty -- 'read -r x; echo \$((x))'"
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "$output" == *$'6*7\r\n42\r'* ]] # run took the last \n
  run al exec p --pty -- stty size
  [[ "$output" == *"24 80"* ]]
}

@test "pty: a shell on a terminal needs approval where the session reaches the host" {
  only_backend local docker
  # A local session's workspace is the host's, and so is a docker session's
  # whose workdir is mounted (as run-tests.sh runs them): the whole gate.
  run api "$(open_line)" \
    '{"id":2,"op":"exec","session":"p","command":"bash -i","pty":{},"approval":"deny","stdin":"exit\n"}' \
    '{"id":3,"op":"exec","session":"p","command":"tty","pty":{},"approval":"deny"}' \
    '{"id":4,"op":"exec","session":"p","command":"bash -c true","approval":"deny","stdin":"exit\n"}'
  echo "$output"
  [[ "$(answer 2)" == *'"ok":false,"error":{"code":"denied"'*'interactive shell or interpreter on a terminal'*'(terminal-interpreter)'* ]]
  [[ "$output" == *'"id":3,"ok":true,"event":"result","exit_code":0'* ]]
  [[ "$output" == *'"id":4,"ok":true,"event":"result","exit_code":0'* ]]
  [ "$BACKEND" = docker ] || return 0
  # A container without the host's workdir (not mounted: it starts in /)
  # is the isolated floor: a shell on its terminal runs without asking.
  stop_daemon
  EXTRA_ENV+=" AIRLOCK_DOCKER_MOUNT_WORKDIR=false"
  run api '{"id":1,"op":"open","session":"iso","workdir":"'"$WORK"'"}' \
    '{"id":2,"op":"exec","session":"iso","command":"bash --norc -i","pty":{},"approval":"deny","stdin":"echo in\"\"side\nexit\n"}'
  echo "$output"
  [ "$(field exit_code)" = 0 ]
  [[ "$(field stdout)" == *$'inside\r\n'* ]]
}

@test "pty: the container killed under a terminal job: the job ends with an error that says so, and the next one runs" {
  only_backend docker
  api "$(open_line)" '{"id":2,"op":"exec","session":"p","command":"echo started; sleep '$marker'.1","pty":{}}' \
    > "$RUNDIR/result" 2>&1 3>&- &
  for i in $(seq 150); do pgrep -f "^sleep $marker\\.1" >/dev/null && break; sleep 0.1; done
  c=$(/usr/bin/docker ps -q --filter "label=airlock.owner=$RUNDIR/airlock" --filter "label=airlock.session=p")
  [ -n "$c" ]
  /usr/bin/docker kill "$c" >/dev/null
  for i in $(seq 300); do grep -q '"id":2,"ok":' "$RUNDIR/result" && break; sleep 0.1; done
  output=$(cat "$RUNDIR/result")
  echo "$output"
  [[ "$output" == *'"id":2,"ok":'*"stopped container"*"someone stopped the container"* ]]
  gone "^sleep $marker\\." 5
  # The next terminal job runs in a new container, and says why.
  run api '{"id":3,"op":"exec","session":"p","command":"tty","pty":{}}'
  echo "$output"
  [[ "$(field stdout)" == /dev/pts/* ]]
  [[ "$(field stderr)" == *"had stopped"*"a new one was created"* ]]
  wait
}

@test "pty: singularity: a bind of the host's /dev/pts makes a terminal job an error, never the host's terminal" {
  only_backend singularity
  cfg="$T/pty-cfg-$BATS_TEST_NUMBER"
  mkdir -p "$cfg"
  printf '%s\n' '{"singularity": {"binds": ["/dev/pts:/hostpts:ro"]}}' > "$cfg/config.json"
  chmod 0755 "$cfg"
  chmod 0644 "$cfg/config.json"
  EXTRA_ENV+=" AIRLOCK_CONFIG=$cfg/config.json"
  run api "$(open_line)" \
    '{"id":2,"op":"exec","session":"p","command":"tty","pty":{}}' \
    '{"id":3,"op":"exec","session":"p","command":"echo piped"}'
  echo "$output"
  rm -rf "$cfg"
  [[ "$(answer 2)" == *'"ok":false'*"singularity.binds /dev/pts:/hostpts:ro puts the host's /dev/pts in the instance"* ]]
  [ "$(field stdout)" = piped ]
}
