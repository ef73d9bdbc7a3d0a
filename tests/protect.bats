#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# airlock's own directories (config, state, runtime) are hidden from a
# sandbox that would show them, never shown and never refused for it
# (policy/protected_paths.h); the fallback runtime directory that no other
# user can take; bind destinations the sandbox must keep.  As the test
# user, in each privilege mode.

load helpers

setup () {
  # A fresh home per test, with a config, an allowlist and an audit log.
  PHOME="$T/protect-home-$BATS_TEST_NUMBER"
  rm -rf "$PHOME" # every privilege mode runs this file again
  mkdir -p "$PHOME/.config/airlock" "$PHOME/proj"
  echo '{"policy": {"deny": ["shred *"]}}' > "$PHOME/.config/airlock/config.json"
  echo 'secret-rule-id' > "$PHOME/.config/airlock/allowlist"
  echo 'project data' > "$PHOME/proj/notes"
  chown -R "$TEST_USER" "$PHOME"
  chmod 0700 "$PHOME"
  STATE="$PHOME/.local/state/airlock"
  RUNTIME="$STATE/run-$(hostname)"
  # No XDG_RUNTIME_DIR: the fallback under the state directory.
  export EXTRA_ENV="HOME=$PHOME AIRLOCK_SUPERVISOR=$AIRLOCK_SUPERVISOR AIRLOCK_DAEMON_IDLE_EXIT=30"
  as_user "$AIRLOCK" run --workdir "$PHOME/proj" -- true # audit log, state dir
}

teardown () {
  # The daemon of this test's home, and only it.
  pid=$(pgrep -u "$TEST_USER" -f "^airlock daemon" | while read -r p; do
          grep -qz "^HOME=$PHOME\$" "/proc/$p/environ" 2>/dev/null && echo "$p"; done)
  [ -n "$pid" ] && kill $pid 2>/dev/null
  for i in $(seq 50); do [ -z "$pid" ] || ! kill -0 $pid 2>/dev/null && break; sleep 0.1; done
  [ -z "${squat:-}" ] || rm -rf "$squat"
  true
}

al () { as_user "$AIRLOCK" "$@"; }

# A script for the sandbox: what it finds at each of airlock's directories
# (entries, whether a file can be made there) and in the rest of the home.
probe_script () {
  cat <<EOF
for d in $PHOME/.config/airlock $PHOME/.local/state/airlock; do
  echo "\$d: \$(ls -A \$d | wc -l) entries"
  touch \$d/planted 2>/dev/null && echo "\$d: writable"
done
cat $PHOME/.config/airlock/config.json $PHOME/.config/airlock/allowlist $STATE/audit.log 2>/dev/null
cat $PHOME/proj/notes; echo made > $PHOME/proj/made && echo wrote-home
ls -A $RUNTIME 2>&1 || true
EOF
}

assert_masked () {
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "$output" == *"$PHOME/.config/airlock: 0 entries"* ]]
  [[ "$output" == *"$PHOME/.local/state/airlock: 0 entries"* ]]
  [[ "$output" == *"$RUNTIME': No such file"* || "$output" == *"$RUNTIME: No such file"* ]]
  [[ "$output" != *writable* ]]
  [[ "$output" != *shred* && "$output" != *secret-rule-id* && "$output" != *decision* ]]
  [[ "$output" == *"project data"* ]]
  [[ "$output" == *wrote-home* ]]
  [ "$(cat "$PHOME/proj/made")" = made ]
  [ ! -e "$PHOME/.config/airlock/planted" ] && [ ! -e "$STATE/planted" ]
  [ -s "$PHOME/.config/airlock/config.json" ]
}

@test "the home as workdir: config, state and runtime dirs empty and read-only, the rest there" {
  [ -d "$RUNTIME" ] # made by the broker, inside the state dir
  run al run --workdir "$PHOME" -- sh -c "$(probe_script)"
  assert_masked
}

@test "/tmp as workdir: the host's /tmp, with the home in it masked" {
  marker=$(mktemp /tmp/airlock-protect-marker.XXXXXX)
  chmod 0644 "$marker"
  run al run --workdir /tmp -- sh -c "cat '$marker' && echo marker-seen; $(probe_script)"
  rm -f "$marker"
  assert_masked
  [[ "$output" == *marker-seen* ]]
}

@test "a bind of the home elsewhere, read-only: masked at its destination" {
  run al run --workdir "$PHOME/proj" --ro-bind "$PHOME:/h" -- sh -c 'ls -A /h/.config/airlock | wc -l; cat /h/.config/airlock/config.json 2>&1; cat /h/proj/notes'
  echo "$output"
  [ "$status" -eq 0 ]
  [ "${lines[0]}" = 0 ]
  [[ "$output" == *"No such file"* ]]
  [[ "$output" == *"project data"* ]]
}

@test "the rename attack: a mask's parents cannot be moved, a fresh airlock dir cannot be made" {
  run al run --workdir "$PHOME" -- sh -c '
    mv .config .config-old 2>&1 || echo mv-config-refused
    mv .local/state .local/state-old 2>&1 || echo mv-state-refused
    rmdir .config/airlock 2>&1 || echo rmdir-refused
    mkdir .config/airlock/x 2>&1 || echo mkdir-refused
    rm -rf .config 2>/dev/null; echo "{}" > .config/airlock/config.json 2>&1 || echo write-refused'
  echo "$output"
  for what in mv-config mv-state rmdir mkdir write; do
    [[ "$output" == *"$what-refused"* ]]
  done
  [[ "$output" == *"busy"* ]]
  [ ! -e "$PHOME/.config-old" ] && [ ! -e "$PHOME/.local/state-old" ]
  grep -q shred "$PHOME/.config/airlock/config.json"
}

@test "no config yet: the broker makes the directory (0700), so a sandbox cannot plant one" {
  rm -rf "$PHOME/.config"
  run al run --workdir "$PHOME" -- sh -c 'mkdir -p .config/airlock; echo "{\"policy\":{\"mode\":\"approve\"}}" > .config/airlock/config.json || echo refused'
  echo "$output"
  [[ "$output" == *refused* ]]
  [ ! -e "$PHOME/.config/airlock/config.json" ]
  [ "$(stat -c '%U %a' "$PHOME/.config/airlock")" = "$TEST_USER 700" ]
}

@test "a symlink a sandbox could redirect is refused; read-only it is not" {
  mkdir -p "$PHOME/dotfiles"
  mv "$PHOME/.config" "$PHOME/dotfiles/config"
  ln -s dotfiles/config "$PHOME/.config"
  chown -hR "$TEST_USER" "$PHOME/dotfiles" "$PHOME/.config"
  run al run --workdir "$PHOME" -- true
  echo "$output"
  [ "$status" -eq 125 ]
  [[ "$output" == *"$PHOME/.config, on the way to it, is a symlink"* ]]
  run al run --workdir "$PHOME/proj" --ro-bind "$PHOME:$PHOME" -- sh -c "cat $PHOME/.config/airlock/config.json 2>&1; ls -A $PHOME/dotfiles/config/airlock | wc -l"
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "$output" != *shred* ]]
  [ "${lines[1]}" = 0 ]
}

@test "a session in the home: masked, and its commands run" {
  run al session open s --workdir "$PHOME"
  echo "$output"
  [ "$status" -eq 0 ]
  run al exec s -- 'ls -A .config/airlock | wc -l; ls -A .local/state/airlock | wc -l; cat proj/notes; touch .config/airlock/x 2>&1'
  echo "$output"
  [ "${lines[0]}" = 0 ] && [ "${lines[1]}" = 0 ]
  [[ "$output" == *"project data"* ]]
  [[ "$output" == *"Read-only file system"* ]]
  [ ! -e "$PHOME/.config/airlock/x" ]
  # The daemon's socket is in the fallback runtime dir, which the
  # session cannot reach.
  [ -S "$RUNTIME/daemon.sock" ]
  run al exec s -- "ls -A '$RUNTIME' 2>&1"
  [[ "$output" == *"No such file"* ]]
  al session close s
}

@test "the fallback runtime dir: in the user's state dir, 0700; /tmp/airlock-UID squatted does not matter" {
  uid=$(id -u "$TEST_USER")
  squat=/tmp/airlock-$uid
  rm -rf "$squat"
  mkdir -m 0700 "$squat"
  chown "$OTHER_USER" "$squat"
  run al session ls
  echo "$output"
  [ "$status" -eq 0 ]
  [ "$(stat -c '%U %a' "$RUNTIME")" = "$TEST_USER 700" ]
  [ -S "$RUNTIME/daemon.sock" ]
  [ "$(stat -c %U "$squat")" = "$OTHER_USER" ]
}

@test "a squatted or unsafe runtime dir is a clear error naming the path and the fix" {
  # Another user's directory in its place.
  chown "$OTHER_USER" "$RUNTIME"
  run al session ls
  echo "$output"
  [ "$status" -ne 0 ]
  [[ "$output" == *"$RUNTIME must be a directory owned by you"*"remove it"* ]]
  # A directory on the way that others could write to.
  rm -rf "$RUNTIME"
  chmod 0777 "$STATE"
  run al session ls
  echo "$output"
  [ "$status" -ne 0 ]
  [[ "$output" == *"$STATE is writable by group or others"*"chmod go-w"* ]]
  chmod 0700 "$STATE"
  # Too long for a unix socket.
  long="$T/protect-xdg-$BATS_TEST_NUMBER/$(printf 'd%.0s' $(seq 90))"
  mkdir -p "$long"
  chown -R "$TEST_USER" "$T/protect-xdg-$BATS_TEST_NUMBER"
  EXTRA_ENV="$EXTRA_ENV XDG_RUNTIME_DIR=$long" run al session ls
  rm -rf "$T/protect-xdg-$BATS_TEST_NUMBER"
  echo "$output"
  [ "$status" -ne 0 ]
  [[ "$output" == *"too long for a unix socket"*"XDG_RUNTIME_DIR"* ]]
}

@test "binds over /, /proc, /dev, into /etc or over a system directory are refused, naming the bind" {
  for dst in / /proc /proc/sys /dev /dev/shm/x /etc /etc/ssh /usr /lib64; do
    run al run --workdir "$PHOME/proj" --ro-bind "$PHOME/proj:$dst" -- true
    echo "$dst: $output"
    [ "$status" -eq 125 ]
    [[ "$output" == *"bind $PHOME/proj:$dst: it would"* ]]
  done
  # Nor inside a mask, where the mount point would be made in airlock's
  # own directory on the host.
  run al run --workdir "$PHOME" --ro-bind "$PHOME/proj:$PHOME/.config/airlock/p" -- true
  [ "$status" -eq 125 ]
  [[ "$output" == *"it would be inside $PHOME/.config/airlock"* ]]
  [ ! -e "$PHOME/.config/airlock/p" ]
  run al run --workdir /proc -- true
  [ "$status" -eq 125 ]
  [[ "$output" == *"--workdir /proc: it would cover the sandbox's own /proc or /dev"* ]]
  # Elsewhere, /tmp and below a system directory are fine.
  run al run --workdir "$PHOME/proj" --ro-bind "$PHOME/proj:/tmp/p" --ro-bind "$PHOME/proj:/opt/p" -- cat /tmp/p/notes /opt/p/notes
  [ "$status" -eq 0 ]
  [ "${lines[0]}" = "project data" ]
  [ "${lines[1]}" = "project data" ]
}

# A run request written by hand (the broker would not send it), straight
# to the helper: field TYPE VALUE... (a pair is "SRC DST").
le32 () { printf '\\x%02x\\x%02x\\x%02x\\x%02x' $(($1 & 255)) $((($1 >> 8) & 255)) $((($1 >> 16) & 255)) $((($1 >> 24) & 255)); }
field () { printf '%b' "\\x$(printf %02x "$1")\\x00\\x00\\x00$(le32 ${#2})"; printf '%s' "$2"; }
pair () {
  printf '%b' "\\x$(printf %02x "$1")\\x00\\x00\\x00$(le32 $((4 + ${#2} + ${#3})))$(le32 ${#2})"
  printf '%s%s' "$2" "$3"
}
frame () { # OUT, then the fields (already encoded) on stdin
  local body; body=$(mktemp)
  cat > "$body"
  { printf '%b' "ALK1\\x01\\x00\\x01\\x00$(le32 $((16 + $(stat -c %s "$body"))))\\x00\\x00\\x00\\x00"; cat "$body"; } > "$1"
  rm -f "$body"; chmod 0644 "$1"
}

@test "the helper itself refuses /proc and /dev destinations, and fails closed on a mask it cannot apply" {
  f="$T/protect-frame-$BATS_TEST_NUMBER"
  { field 1 /bin/true; field 3 "$WORK"; pair 5 "$WORK" /proc/x; } | frame "$f"
  run as_user "$HOSTILE" "$AIRLOCK_HELPER" frame "$f"
  echo "$output"
  [[ "$output" == *"SETUP_FAILED step=validating the request"*"cannot mount /proc/x over the sandbox's own /proc or /dev"* ]]
  [[ "$output" != *"STARTED"* ]]
  { field 1 /bin/true; field 3 "$WORK"; field 12 "$WORK/no-such-dir"; } | frame "$f"
  run as_user "$HOSTILE" "$AIRLOCK_HELPER" frame "$f"
  echo "$output"
  [[ "$output" == *"SETUP_FAILED step=bind mounts"*"cannot mask $WORK/no-such-dir"* ]]
  [[ "$output" != *"EXITED"* ]]
  rm -f "$f"
}

@test "airlock run -v says which privilege mode the helper ran in" {
  run al run -v --workdir "$PHOME/proj" -- true
  echo "$output"
  [ "$status" -eq 0 ]
  case $MODE in
    unprivileged) want=unprivileged ;;
    setuid) want=setuid ;;
    caps) want=file-capabilities ;;
  esac
  [[ "$output" == *"helper: $want, limits: "* ]]
}
