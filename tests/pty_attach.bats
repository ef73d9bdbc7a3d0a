#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# The person's front ends to commands on a terminal (issue 19), local
# backend: `airlock shell` on a terminal runs each line on a terminal of
# the sandbox, and `airlock attach` puts our terminal on a running job
# again.  A person at a real terminal is tests/terminal_client.py.

load helpers

setup () {
  RUNDIR="$T/xdg-pty-attach-$BATS_TEST_NUMBER"
  mkdir -p "$RUNDIR"
  chown "$TEST_USER" "$RUNDIR"
  chmod 0700 "$RUNDIR"
  export EXTRA_ENV="XDG_RUNTIME_DIR=$RUNDIR AIRLOCK_SUPERVISOR=$AIRLOCK_SUPERVISOR AIRLOCK_BACKEND=local AIRLOCK_DAEMON_IDLE_EXIT=30 AIRLOCK=$AIRLOCK"
}

teardown () {
  stop_daemon
}

al () { as_user timeout -k 5 60 "$AIRLOCK" "$@"; }

# A person at a ROWS x COLS terminal: terminal_client.py's steps, then
# the airlock command after "--".
at_terminal () { as_user timeout -k 5 120 python3 "$TERM_CLIENT" "$@"; }

PROMPT='\[p [^]]*\][$!] '

# A background job on a terminal (24x80: no terminal here) that prints its
# window, echoes each line it reads, and ends with 7 at the end of input.
start_echo_job () {
  job=$(al exec p --background --pty -- \
    'echo start; stty size; while read l; do echo "got:$l"; [ "$l" = size ] && stty size; done; exit 7')
  [[ "$job" =~ ^[0-9]+$ ]]
}

@test "pty_attach: airlock shell on a terminal: full-screen programs see one; cd, export and Ctrl-C as in a shell" {
  al session open p
  run at_terminal 30 100 "expect:$PROMPT" \
    'type:tty; stty size; tput cols\r' 'expect:/dev/pts/[0-9]+\r\n30 100\r\n100\r\n' "expect:$PROMPT" \
    "type:python3 -c 'import curses; w = curses.initscr(); r, c = w.getmaxyx(); curses.endwin(); print(\"curses\", r, c)'\\r" \
    'expect:curses 30 100' "expect:$PROMPT" \
    'type:mkdir -p sub && cd sub && export GREETING=hi\r' 'expect:\[p [^]]*/sub\]\$ ' \
    'type:echo "$GREETING from $(pwd)"\r' 'expect:hi from /[^\r]*/sub\r\n' "expect:$PROMPT" \
    'type:read x; stty size\r' 'pause:0.5' 'resize:40:120' 'type:\r' 'expect:40 120' "expect:$PROMPT" \
    'type:sleep 30; echo reached-$((6*7))\r' 'pause:1' 'type:\x03' 'expect:\[p [^]]*/sub\]! ' \
    'type:echo still here\r' 'expect:still here' "expect:$PROMPT" \
    'type:exit\r' wait -- "$AIRLOCK" shell p
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "$output" == *"exit 0"*"terminal: cooked"* ]]
  [[ "$output" != *reached-42* ]] # ^C ended the command line, not only sleep
  # Without a terminal, line by line as before: no terminal for commands.
  run as_user timeout -k 5 60 sh -c "printf 'cd sub\ntty; pwd\n' | $AIRLOCK shell p"
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "$output" == *"not a tty"*/sub* ]]
}

@test "pty_attach: a terminal job outlives its client; attach replays its screen, types, resizes, detaches, comes back, and ends with its status" {
  al session open p
  start_echo_job
  # Its client (exec --background) is gone; the job runs on.
  sleep 1
  run al exec p -- 'echo other command'
  [ "$output" = "other command" ]
  run at_terminal 30 100 'expect:start\r\n24 80\r\n' 'type:hello\r' 'expect:got:hello' \
    'type:size\r' 'expect:got:size\r\n30 100' 'type:\x1c\x1c' 'expect:detached' wait \
    -- "$AIRLOCK" attach p "$job"
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "$output" == *"exit 0"*"terminal: cooked"* ]]
  [[ "$output" == *"job $job runs on (airlock attach p $job)"* ]]
  run al exec p -- 'sleep 0.5; echo still'
  [ "$output" = still ]
  # Again: the whole screen so far, then live; ^D ends the job, and attach
  # with its status.
  run at_terminal 30 100 'expect:start\r\n24 80\r\n' 'expect:got:hello' 'expect:got:size' \
    'type:bye\r' 'expect:got:bye' 'type:\x04' wait -- "$AIRLOCK" attach p "$job"
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "$output" == *"exit 7"*"terminal: cooked"* ]]
  # A finished job: its screen, then its status at once.
  run at_terminal 24 80 wait -- "$AIRLOCK" attach p "$job"
  [[ "$output" == *"exit 7"*"got:bye"* ]]
}

@test "pty_attach: a lone Ctrl-\\ still reaches the job; every way out restores our terminal" {
  al session open p
  start_echo_job
  # One Ctrl-\ and nothing after it for a second: the job's key after all.
  raw=$(al exec p --background --pty -- 'stty raw -echo; echo ready; head -c 2 | od -An -c; stty sane')
  run at_terminal 24 80 'expect:ready' 'type:\x1c' 'pause:1.5' 'type:b' 'expect:034 +b' wait \
    -- "$AIRLOCK" attach p "$raw"
  echo "$output"
  [[ "$output" == *"exit 0"*"terminal: cooked"* ]]
  [[ "$output" != *detached* ]]
  # Stopped from outside: detached, the job runs on.
  run at_terminal 24 80 'expect:start' 'signal:TERM' 'expect:interrupted' wait \
    -- "$AIRLOCK" attach p "$job"
  echo "$output"
  [[ "$output" == *"exit 0"*"terminal: cooked"* ]]
  run at_terminal 24 80 'expect:start' 'signal:HUP' wait -- "$AIRLOCK" attach p "$job"
  [[ "$output" == *"exit 0"*"terminal: cooked"* ]]
  # The daemon gone under it: said, status 1, terminal back.
  daemon=$(daemon_pid)
  [ -n "$daemon" ]
  run at_terminal 24 80 'expect:start' "sh:kill $daemon" wait -- "$AIRLOCK" attach p "$job"
  echo "$output"
  [[ "$output" == *"exit 1"*"terminal: cooked"* ]]
  [[ "$output" == *"session"* || "$output" == *"daemon went away"* ]]
}

@test "pty_attach: a job without a terminal is followed read-only; bad arguments are refused" {
  al session open p
  job=$(al exec p --background -- 'echo one; sleep 1; echo two >&2; exit 3')
  run al attach p "$job"
  echo "$output"
  [ "$status" -eq 3 ]
  [[ "$output" == *"does not run on a terminal"*"following its output only"* ]]
  [[ "$output" == *one*two* ]]
  run al attach p 999
  [ "$status" -eq 1 ]
  [[ "$output" == *"no job 999"* ]]
  [[ "$output" != *"does not run on a terminal"* ]]
  run al attach p x
  [ "$status" -eq 2 ]
  [[ "$output" == *"JOB 'x'"* ]]
  run al attach nosuch 1
  [ "$status" -eq 1 ]
  # The API says which jobs run on a terminal.
  start_echo_job
  run al exec p -- true
  run as_user timeout -k 5 30 sh -c "echo '{\"id\":1,\"op\":\"jobs\",\"session\":\"p\"}' | $AIRLOCK serve"
  echo "$output"
  [[ "$output" == *'"job":'"$job"',"command":'*'"pty":true'* ]]
  al exec p -- true
}
