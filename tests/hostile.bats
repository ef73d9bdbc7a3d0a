#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# airlock-helper against a hostile caller (tests/hostile.c, the checklist of
# sandbox-prior-art.md §5.2), and the refusals that a misused or
# misconfigured helper must give.  Everything runs as the test user.

load helpers

setup () {
  scratch=$(mktemp -d "$T/hostile.XXXXXX")
  chmod 0755 "$scratch"
}

teardown () {
  reset_conf
  chmod 0755 "$(dirname "$HELPER_CONF")" 2>/dev/null || true
  rm -rf "$scratch" "$WORK/.hostile-links"
}

# The hostile tool as the test user, against the helper under test.
hostile () {
  as_user "$HOSTILE" "$AIRLOCK_HELPER" "$@"
}

# A directory of the test user's own (the symlink attacks need one).
user_dir () {
  as_user mkdir -p "$WORK/.hostile-links"
  echo "$WORK/.hostile-links"
}

# A plain root-owned 0755 copy of the helper, to misconfigure.
helper_copy () {
  local c="$scratch/$1"
  cp "$AIRLOCK_HELPER" "$c"
  chown root:root "$c"
  setcap -r "$c" 2>/dev/null || true
  chmod 0755 "$c"
  echo "$c"
}

# A refused run: exit 125, the reason given, the command never ran.
assert_refused () {
  echo "$output"
  [ "$status" -eq 125 ]
  [[ "$output" == *"$1"* ]]
  [[ "$output" != *RAN* ]]
}

# ---- Malformed requests (checklist 9 and 11) ----

# assert_frame_refused MESSAGE SUBCOMMAND [ARG]: the frame is refused with
# a SETUP_FAILED report naming the problem, exit 125, and no sandbox.
assert_frame_refused () {
  local message=$1
  shift
  run hostile "$@"
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "$output" == *"report: SETUP_FAILED step=reading the request"* ]]
  [[ "$output" == *"$message"* ]]
  [[ "$output" == *"helper: exit 125"* ]]
  [[ "$output" != *"report: STARTED"* ]]
  [[ "$output" == *"result: safe: rejected"* ]]
}

@test "hostile frame: truncated field" {
  assert_frame_refused "field length overruns the message" frame-truncated
}

@test "hostile frame: one byte over the size limit" {
  assert_frame_refused "request larger than 262144 bytes" frame-oversized
}

@test "hostile frame: wrong protocol version" {
  assert_frame_refused "unsupported protocol version" frame-wrong-version
}

@test "hostile frame: bad magic" {
  assert_frame_refused "bad magic" frame-bad-magic
}

@test "hostile frame: unknown field type" {
  assert_frame_refused "unknown field type" frame-unknown-field
}

@test "hostile frame: a report sent as a request" {
  assert_frame_refused "not a run request" frame-report-type
}

@test "hostile frame: channel closed without a request" {
  assert_frame_refused "closed the channel without a request" frame-empty
}

@test "hostile frame: a valid request carrying a file descriptor" {
  assert_frame_refused "unexpected file descriptors" frame-with-fds
}

@test "hostile frame from a file: garbage, header only, relative workdir" {
  head -c 300 /dev/urandom > "$scratch/garbage"
  # "ALK1", version 1, RUN, length 16: no command, no workdir.
  printf 'ALK1\001\000\001\000\020\000\000\000\000\000\000\000' > "$scratch/header-only"
  # ARGV "/bin/true" and WORKDIR "tmp": 44 bytes.
  printf '%b' 'ALK1\01\0\01\0\054\0\0\0\0\0\0\0' \
    '\01\0\0\0\011\0\0\0/bin/true' '\03\0\0\0\03\0\0\0tmp' > "$scratch/relative"
  chmod 0644 "$scratch"/*
  assert_frame_refused "malformed request: bad magic" frame "$scratch/garbage"
  assert_frame_refused "run request without a command" frame "$scratch/header-only"
  assert_frame_refused "path is not absolute" frame "$scratch/relative"
}

# ---- Process start (checklist 4, 5, 6) ----

@test "hostile: an empty argument list is refused on stderr with exit 125" {
  run hostile argc0
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "$output" == *"helper stderr: airlock-helper: "*"empty argument list"* ]]
  [[ "$output" == *"helper: exit 125"* ]]
  [[ "$output" != *"report: STARTED"* ]]
}

@test "hostile: fds 0-2 closed: the command gets null devices, nothing of the helper's" {
  run hostile closed-stdio
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "$output" == *"report: EXITED code=0"* ]]
  [ "$(echo "$output" | grep -c '^command fd [012] ')" -eq 3 ]
  [[ "$output" == *"result: safe: ran with fds 0-2 on null devices"* ]]
}

@test "hostile: 1000 inherited fds and a secret file: none reaches the sandbox" {
  run hostile many-fds
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "$output" == *"open: 1000 extra fds"* ]]
  echo "$output" | grep -qx 'fds: none'
}

@test "hostile: 1000 inherited fds, as airlock-probe sees them" {
  [ -x "$PROBE" ] || skip "no airlock-probe at $PROBE"
  run hostile many-fds "$PROBE" fds
  echo "$output"
  [ "$status" -eq 0 ]
  echo "$output" | grep -qx 'fds: none'
}

@test "hostile: a poisoned environment (LD_*, NL*, GCONV_PATH, locale) changes nothing" {
  run hostile env-hostile
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "$output" == *'stdout: "hello\n" (6 bytes)'* ]]
  [[ "$output" == *"result: safe"* ]]
}

# ---- ptrace (CVE-2016-8659, CVE-2026-41163; checklist 1) ----

@test "hostile ptrace: no access to any helper process while it holds privilege" {
  only_modes setuid caps
  run hostile ptrace
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "$output" == *"mode: $MODE"* ]]
  echo "$output" | grep -Eq '^attempts: [1-9][0-9]*, successes: [0-9]+, violations: 0$'
  [[ "$output" != *VIOLATION* ]]
  [[ "$output" == *"runs completed: 4 of 4"* ]]
}

@test "hostile ptrace, setuid: the sandbox's root-owned user namespace is out of reach entirely" {
  only_modes setuid
  run hostile ptrace 2
  echo "$output"
  [ "$status" -eq 0 ]
  echo "$output" | grep -Eq '^attempts: [1-9][0-9]*, successes: 0, violations: 0$'
}

@test "hostile ptrace, unprivileged: only the caller's own unprivileged processes are reachable" {
  only_modes unprivileged
  run hostile ptrace
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "$output" == *"mode: unprivileged"* ]]
  # The command itself is the caller's: reaching it shows the attack works.
  echo "$output" | grep -Eq '^attempts: [0-9]+, successes: [1-9][0-9]*, violations: 0$'
  [[ "$output" != *VIOLATION* ]]
}

@test "hostile join: the caller cannot enter a running sandbox's user namespace" {
  only_modes setuid caps
  run hostile join
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "$output" != *JOINED* ]]
  [[ "$output" == *"result: safe: the sandbox's namespaces are out of the caller's reach"* ]]
}

@test "hostile join, unprivileged: the namespaces are the caller's own (the attack works)" {
  only_modes unprivileged
  run hostile join
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "$output" == *"JOINED its user namespace"* ]]
  [[ "$output" == *"result: safe: joined, as expected unprivileged"* ]]
}

# ---- Symlinks and races (checklist 12) ----

@test "hostile: a bind source swapped with a symlink never shows the target" {
  dir=$(user_dir)
  run hostile symlink-race "$dir" 40
  echo "$output"
  [ "$status" -eq 0 ]
  echo "$output" | grep -Eq '^runs: 40, .*leaked: 0$'
  [[ "$output" == *"result: safe"* ]]
}

@test "hostile: symlinks in a bind source, workspace, rootfs or destination are refused" {
  dir=$(user_dir)
  run hostile symlink-bind "$dir"
  echo "$output"
  [ "$status" -eq 0 ]
  [ "$(echo "$output" | grep -c '^case .*: refused: ')" -eq 6 ]
  [[ "$output" != *ACCEPTED* ]]
}

# ---- What the caller may not reach through the broker (checklist 13) ----

@test "a workspace the caller cannot write is refused" {
  mkdir "$scratch/rootdir"
  run arun --workdir "$scratch/rootdir" -- echo RAN
  assert_refused "$scratch/rootdir is not readable and writable by you"
}

@test "a bind of /root is refused" {
  [ "$(stat -c %a /root)" = 700 ] || skip "/root is not 0700 here"
  run arun --ro-bind /root -- echo RAN
  assert_refused "/root is not readable by you"
}

@test "a bind of another user's 0700 directory is refused" {
  mkdir "$scratch/private"
  chown "${OTHER_USER:-nobody}" "$scratch/private"
  chmod 0700 "$scratch/private"
  run arun --ro-bind "$scratch/private" -- echo RAN
  assert_refused "$scratch/private is not readable by you"
  run arun --bind "$scratch/private:/mnt/p" -- echo RAN
  assert_refused "$scratch/private is not readable and writable by you"
}

# ---- helper.conf (the administrator's policy) ----

@test "helper.conf writable by group is refused, naming the file" {
  write_conf "pids = 100"
  chmod 0664 "$HELPER_CONF"
  run arun -- echo RAN
  assert_refused "$HELPER_CONF must be owned by root and not writable by group or others"
}

@test "helper.conf in a directory writable by others is refused" {
  write_conf "pids = 100"
  chmod 0777 "$(dirname "$HELPER_CONF")"
  run arun -- echo RAN
  assert_refused "the directory of $HELPER_CONF must be owned by root"
}

@test "helper.conf owned by the caller is refused" {
  write_conf "allow_host_network = yes"
  chown "$TEST_USER" "$HELPER_CONF"
  run arun --network host -- echo RAN
  assert_refused "$HELPER_CONF must be owned by root"
}

@test "helper.conf group = a group the caller is not in: refused; the caller's group: allowed" {
  write_conf "group = root"
  run arun -- echo RAN
  assert_refused "helper.conf allows only members of group 0"
  write_conf "group = $(id -gn "$TEST_USER")"
  run arun -- echo RAN
  echo "$output"
  [ "$status" -eq 0 ]
  [ "$output" = RAN ]
}

@test "helper.conf naming a group that does not exist is an error with its line" {
  write_conf "# airlock" "group = no-such-group-airlock"
  run arun -- echo RAN
  assert_refused "$HELPER_CONF:2: group 'no-such-group-airlock' does not exist"
}

@test "--network host is refused by default and allowed by allow_host_network = yes" {
  run arun --network host -- echo RAN
  assert_refused "host networking is not allowed here"
  write_conf "allow_host_network = yes"
  run arun --network host -- cat /proc/net/dev
  echo "$output"
  [ "$status" -eq 0 ]
  # The host's own interfaces are visible, not just lo.
  for ifc in $(ls /sys/class/net); do
    [[ "$output" == *"$ifc:"* ]]
  done
}

@test "helper.conf with an unknown key or a bad value is an error naming the line" {
  write_conf "pids = 100" "bogus_key = 1"
  run arun -- echo RAN
  assert_refused "$HELPER_CONF:2: unknown key 'bogus_key'"
  write_conf "max_memory = lots"
  run arun -- echo RAN
  assert_refused "$HELPER_CONF:1: bad value 'lots' for max_memory"
}

# ---- Privilege misconfiguration (checklist 3) ----
# These depend only on the copies made here, not on the mode under test:
# they run once, in setuid mode, which only the release build has (a
# sanitizer runtime has no place in a setuid binary).

@test "a setuid helper that also has file capabilities is refused" {
  only_modes setuid
  c=$(helper_copy suid-caps)
  setcap cap_dac_override,cap_sys_admin+ep "$c"
  chmod 4755 "$c"
  [ -u "$c" ] && [ -n "$(getcap "$c")" ]
  AIRLOCK_HELPER=$c run arun -- echo RAN
  assert_refused "setuid and file capabilities at once"
}

@test "a helper with more file capabilities than it needs is refused" {
  only_modes setuid
  c=$(helper_copy extra-caps)
  setcap cap_dac_override,cap_setgid,cap_setuid,cap_sys_admin,cap_net_raw+ep "$c"
  AIRLOCK_HELPER=$c run arun -- echo RAN
  assert_refused "unexpected capabilities"
}

@test "a helper with only one of its four file capabilities is refused" {
  only_modes setuid
  c=$(helper_copy one-cap)
  setcap cap_sys_admin+ep "$c"
  AIRLOCK_HELPER=$c run arun -- echo RAN
  assert_refused "unexpected capabilities"
}

@test "a helper setuid to a user other than root is refused" {
  only_modes setuid
  c=$(helper_copy suid-nobody)
  chown nobody "$c"
  chmod 4755 "$c"
  AIRLOCK_HELPER=$c run arun -- echo RAN
  assert_refused "setuid to uid $(id -u nobody), not root"
}

@test "a setgid helper is refused" {
  only_modes setuid
  c=$(helper_copy sgid)
  chmod 2755 "$c"
  AIRLOCK_HELPER=$c run arun -- echo RAN
  assert_refused "installed setgid"
}
