#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# The files API (upload, download, airlock cp) on any backend: BACKEND
# selects it (default local), as in sessions.bats.  The session's workdir
# is outside /tmp here (FW), so that a path leaving it is really outside
# both places a transfer may write.

load helpers

setup () {
  BACKEND=${BACKEND:-local}
  RUNDIR="$T/xdg-files-$BATS_TEST_NUMBER"
  mkdir -p "$RUNDIR"
  chown "$TEST_USER" "$RUNDIR"
  chmod 0700 "$RUNDIR"
  export EXTRA_ENV="XDG_RUNTIME_DIR=$RUNDIR AIRLOCK_SUPERVISOR=$AIRLOCK_SUPERVISOR AIRLOCK_BACKEND=$BACKEND AIRLOCK_DAEMON_IDLE_EXIT=30 ${BACKEND_ENV:-}"
  FW=$(mktemp -d /var/tmp/airlock-files.XXXXXX)
  FW0=$FW
  H=$(mktemp -d "$T/files-host.XXXXXX") # the host's side: sources, dests
  chown "$TEST_USER" "$FW" "$H"
  chmod 0755 "$FW" "$H"
  # ssh: the remote host is this machine (run-tests.sh's sshd), so FW is
  # the remote user's and the session's workdir there (ssh.workdir: the
  # API's workdir is a local path).
  if [ "$BACKEND" = ssh ]; then
    chown "$SSH_USER" "$FW"
    EXTRA_ENV+=" AIRLOCK_SSH_WORKDIR=$FW"
  fi
  VICTIM=/tmp/airlock-files-victim-$$-$BATS_TEST_NUMBER
}

teardown () {
  stop_daemon
  ssh_cleanup
  rm -rf "$FW0" "$H" "$VICTIM"
}

al () { as_user timeout -k 5 "${AL_TIMEOUT:-120}" "$AIRLOCK" "$@"; }
open_session () {
  al session open "${1:-f}" --workdir "$FW" > /dev/null
  # daytona: the workdir is the sandbox's own (the double's sandboxes are
  # directories of this host, at the same path).
  if [ "$BACKEND" = daytona ]; then
    FW=$(daytona_home "${1:-f}")
  elif [ "$BACKEND" = modal ]; then
    FW=$(modal_home)
  fi
}
api () { printf '%s\n' "$@" | as_user timeout -k 5 120 "$AIRLOCK" serve; }

# A field of the last JSON line of $output.
field () {
  printf '%s\n' "$output" | grep '^{' | tail -n 1 |
    python3 -c 'import json,sys; v=json.load(sys.stdin); [v := v[k] for k in sys.argv[1].split(".")]; print(json.dumps(v) if not isinstance(v, str) else v)' "$1"
}

# A tree of n small files (names with spaces, two modes), as the test user.
make_tree () {
  as_user bash -c 'set -e; mkdir -p "$1/sub dir/deep"; for i in $(seq "$2"); do
      d="$1"; [ $((i % 3)) = 0 ] && d="$1/sub dir"; [ $((i % 7)) = 0 ] && d="$1/sub dir/deep"
      printf "file %s\n" "$i" > "$d/f $i.txt"; done
    chmod 0750 "$1/sub dir/f 3.txt"; chmod 0700 "$1/sub dir/deep"; ln -s "f 1.txt" "$1/link"' _ "$1" "$2"
}

# Names, types, modes and link targets of a tree, and its files' sums.
tree_sum () {
  (cd "$1" && find . -printf '%p %y %m %l\n' | sort && find . -type f -print0 | sort -z | xargs -0 sha256sum)
}

@test "files: 500 small files round-trip intact (names with spaces, modes, a symlink)" {
  open_session
  make_tree "$H/src" 500
  run al cp "$H/src" f:up
  [ "$status" -eq 0 ]
  # In the sandbox, as it was on the host.
  [ "$(tree_sum "$H/src")" = "$(tree_sum "$FW/up")" ]
  run al exec f -- 'find up -type f | wc -l; stat -c %a "up/sub dir/f 3.txt"; readlink up/link'
  [ "${lines[0]}" -eq 500 ]
  [ "${lines[1]}" = 750 ]
  [ "${lines[2]}" = "f 1.txt" ]
  run al cp f:up "$H/back"
  [ "$status" -eq 0 ]
  [ "$(tree_sum "$H/src")" = "$(tree_sum "$H/back")" ]
  diff -r "$H/src" "$H/back"
}

@test "files: a 200 MB binary round-trips intact, in bounded daemon memory" {
  open_session
  # A name of its own: on ssh the remote /tmp is this machine's, shared.
  tb=/tmp/airlock-files-big.$$
  as_user head -c 200000000 /dev/urandom > "$H/big"
  chown "$TEST_USER" "$H/big"
  chmod 0640 "$H/big"
  AL_TIMEOUT=300 run al cp "$H/big" f:"$tb"
  echo "$output"
  [ "$status" -eq 0 ]
  run al exec f -- "sha256sum $tb; stat -c %a $tb"
  [ "${lines[0]%% *}" = "$(sha256sum < "$H/big" | cut -d' ' -f1)" ]
  [ "${lines[1]}" = 640 ]
  AL_TIMEOUT=300 run al cp f:"$tb" "$H/big2"
  echo "$output"
  [ "$status" -eq 0 ]
  cmp "$H/big" "$H/big2"
  al exec f -- "rm -f $tb"
  # Streamed, never held: the daemon stays far below the file's size
  # (ASan's quarantine alone is larger).
  local rss
  rss=$(ps -o rss= -p "$(daemon_pid)")
  [ "${VARIANT:-release}" = asan ] || [ "$rss" -lt 100000 ]
  # The download's spool went with it (and, through a files API, the
  # stream's host file each way).
  [ -z "$(find "$RUNDIR" -name 'airlock-job-*' -size +1M)" ]
  [ -z "$(find "$RUNDIR" -name 'transfer.*')" ]
  if [ "$BACKEND" = daytona ]; then
    # through the toolbox files API: the stream one request each way, and
    # nothing of it left in the sandbox
    run bash -c "timeout -k 5 30 curl -sS '$DAYTONA_DOUBLE/_double/log' | grep -c -e '/files/bulk-upload\\|/files/download'"
    [ "$output" -ge 2 ]
    run al exec f -- "ls -a /tmp | grep -c '^\\.airlock-\\(upload\\|download\\)' || true"
    [ "$output" = 0 ]
  fi
}

@test "files: paths leaving the workdir and /tmp are refused, for upload and download" {
  open_session
  as_user bash -c "echo x > '$H/x'"
  local p
  for p in ../x /etc/x ../../../../../../etc/passwd; do
    run al cp "$H/x" "f:$p"
    [ "$status" -eq 1 ]
    [[ "$output" == *"outside the session's workdir"*"refused"* ]] || [[ "$output" == *"no such directory"* ]]
  done
  for p in ../ /etc/hostname /etc; do
    run al cp "f:$p" "$H/out"
    [ "$status" -eq 1 ]
    [[ "$output" == *"outside the session's workdir"*"refused"* ]]
  done
  [ ! -e "$H/out" ]
  [ ! -e "$(dirname "$FW")/x" ]
}

@test "files: a symlink in the workdir leading out is refused, on the way and at the end" {
  open_session
  as_user bash -c "echo x > '$H/x'"
  al exec f -- 'ln -s /etc out; ln -s /etc/hostname host; mkdir -p in; ln -s in ok'
  run al cp "$H/x" f:out/x
  [ "$status" -eq 1 ]
  [[ "$output" == *"out/x is /etc/x, outside"* ]]
  run al cp "$H/x" f:out
  [ "$status" -eq 1 ]
  run al cp f:out/hostname "$H/o1"
  [ "$status" -eq 1 ]
  run al cp f:host "$H/o2"
  [ "$status" -eq 1 ]
  [[ "$output" == *"host is /etc/hostname, outside"* ]]
  [ ! -e "$H/o1" ] && [ ! -e "$H/o2" ]
  # A link that stays inside is followed.
  run al cp "$H/x" f:ok/x
  [ "$status" -eq 0 ]
  run al exec f -- 'cat in/x'
  [ "$output" = x ]
}

@test "files: a hostile sandbox cannot write outside dest on the host" {
  open_session
  # In the sandbox: links to a host path beside real files, and a file
  # written through one (in the sandbox's own /tmp).
  al exec f -- "mkdir -p d/sub && echo ok > d/sub/f && mkdir -p '$VICTIM' && ln -s '$VICTIM' d/link && echo bad > d/link/file && ln -s ../../.. d/sub/up && ln -s sub/f d/fine"
  run al cp f:d "$H/got"
  [ "$status" -eq 0 ]
  [[ "$output" == *"skipped d/link -> $VICTIM: a symlink leading out of dest"* ]]
  [[ "$output" == *"skipped d/sub/up -> ../../..: a symlink leading out"* ]]
  # (ssh: the remote's /tmp is this machine's, where the command itself
  # made VICTIM: nothing of the download's may be in it.)
  if [ "$BACKEND" = ssh ]; then [ "$(ls -A "$VICTIM")" = file ]; else [ ! -e "$VICTIM" ]; fi
  [ ! -e "$H/got/link" ]
  [ "$(cat "$H/got/sub/f")" = ok ]
  [ "$(readlink "$H/got/fine")" = sub/f ]
  # Never over an existing host file.
  run al cp f:d/sub/f "$H/got/sub/f"
  [ "$status" -eq 1 ]
  [[ "$output" == *"exists; a download never overwrites"* ]]
  [ "$(cat "$H/got/sub/f")" = ok ]
}

@test "files: clear errors: no session, no source, an existing dest, a bad dest" {
  run al cp /etc/hostname nosuch:x
  [ "$status" -eq 1 ]
  [[ "$output" == *'no session "nosuch"'* ]]
  open_session
  run al cp "$H/missing" f:x
  [ "$status" -eq 1 ]
  [[ "$output" == *"missing: No such file or directory"* ]]
  run al cp f:nothing "$H/x"
  [ "$status" -eq 1 ]
  [[ "$output" == *"nothing: no such file or directory"* ]]
  run al cp f:. "$H/no/such/dir"
  [ "$status" -eq 1 ]
  [[ "$output" == *"does not exist"* ]]
  run al cp f:x f:y
  [ "$status" -eq 2 ]
  run al cp a b
  [ "$status" -eq 2 ]
  [[ "$output" == *"one path must be SESSION:PATH"* ]]
  # An existing directory takes it under its own name; a directory of
  # that name there already is refused, not merged.
  make_tree "$H/src" 3
  al cp "$H/src" f:src
  run al cp "$H/src" f:src/
  [ "$status" -eq 0 ]
  [ -f "$FW/src/src/f 1.txt" ]
  run al cp "$H/src" f:.
  [ "$status" -eq 1 ]
  [[ "$output" == *"$FW/src is an existing directory"* ]]
}

@test "files: the API: inline data both ways, unknown fields, absolute host paths" {
  open_session
  run api '{"id":1,"op":"upload","session":"f","path":"hello.sh","data":"ZWNobyBoaQo=","mode":"0755"}'
  [ "$(field ok)" = true ]
  [ "$(field path)" = "$FW/hello.sh" ]
  [ "$(field bytes)" = 8 ]
  run al exec f -- './hello.sh; stat -c %a hello.sh'
  [ "$output" = "hi
755" ]
  run api '{"id":2,"op":"download","session":"f","path":"hello.sh"}'
  [ "$(field data)" = ZWNobyBoaQo= ]
  [ "$(field mode)" = 0755 ]
  al exec f -- 'head -c 2000000 /dev/zero > big; mkdir -p dir'
  run api '{"op":"download","session":"f","path":"big"}'
  [ "$(field error.code)" = refused ]
  [[ "$(field error.message)" == *"over the inline limit"*"give dest"* ]]
  run api '{"op":"download","session":"f","path":"dir"}'
  [[ "$(field error.message)" == *"not a regular file"* ]]
  run api '{"op":"upload","session":"f","path":"x","data":"aGk=","sorce":"/x"}'
  [ "$(field error.code)" = unknown_field ]
  run api '{"op":"upload","session":"f","path":"x","source":"rel/path"}'
  [[ "$(field error.message)" == *"must be an absolute host path"* ]]
  run api '{"op":"upload","session":"f","path":"x","data":"not base64!"}'
  [[ "$(field error.message)" == *"not base64"* ]]
  run api '{"op":"upload","session":"f","path":"x","data":"aGk=","source":"/etc/hostname"}'
  [[ "$(field error.message)" == *"one of"* ]]
}

@test "files: a transfer is a job of the session: not listed, nothing left behind, session usable meanwhile" {
  open_session
  make_tree "$H/src" 20
  al cp "$H/src" f:a
  run al exec f -- 'ls -a; echo done'
  [[ "$output" != *".airlock-upload"* ]]
  [ "${lines[-1]}" = done ]
  run api '{"op":"jobs","session":"f"}'
  [ "$(field jobs)" = "[]" ]
}
