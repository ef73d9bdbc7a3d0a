#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# What a command sees from inside the local sandbox, in each privilege mode.

load helpers

teardown () { reset_conf; }

@test "no capability in any set; no_new_privs; a seccomp filter" {
  run arun -- "$PROBE" caps
  [ "$status" -eq 0 ]
  for set in CapInh CapPrm CapEff CapBnd CapAmb; do
    echo "$output" | grep -qx "$set:[[:space:]]*0000000000000000"
  done
  echo "$output" | grep -qx 'NoNewPrivs:[[:space:]]*1'
  echo "$output" | grep -qx 'Seccomp:[[:space:]]*2'
}

@test "runs as the caller, mapping only the caller's own ids, setgroups denied" {
  run arun -- sh -c 'id -u; id -g; cat /proc/self/uid_map /proc/self/gid_map /proc/self/setgroups'
  [ "$status" -eq 0 ]
  uid=$(id -u "$TEST_USER"); gid=$(id -g "$TEST_USER")
  [ "${lines[0]}" = "$uid" ]
  [ "${lines[1]}" = "$gid" ]
  [ "$(echo "${lines[2]}" | tr -s ' ')" = " $uid $uid 1" ]
  [ "$(echo "${lines[3]}" | tr -s ' ')" = " $gid $gid 1" ]
  [ "${lines[4]}" = "deny" ]
  [ "${#lines[@]}" -eq 5 ]
}

@test "own pid namespace: the command is pid 2 and host processes are invisible" {
  sleep 30 & host_pid=$!
  run arun -- sh -c 'echo $$; ls /proc | grep -c "^[0-9]"; ls /proc'
  kill "$host_pid"
  [ "$status" -eq 0 ]
  [ "${lines[0]}" = 2 ]
  [ "${lines[1]}" -le 4 ]
  ! echo "$output" | grep -qx "$host_pid" || false
}

@test "own hostname" {
  run arun -- cat /proc/sys/kernel/hostname
  [ "$status" -eq 0 ]
  [ "$output" = airlock ]
}

@test "network loopback: only lo, and it is up and works" {
  run arun -- sh -c 'ip -o link | cut -d: -f2; busybox nc -l -p 5555 -w 5 > /tmp/got & sleep 0.5; echo over-lo | busybox nc -w 2 127.0.0.1 5555; wait; cat /tmp/got'
  [ "$status" -eq 0 ]
  [ "$(echo "${lines[0]}" | tr -d ' ')" = lo ]
  [ "${#lines[@]}" -eq 2 ]
  [ "${lines[1]}" = over-lo ]
}

@test "network none: lo exists but is down" {
  run arun --network none -- ip -o link
  [ "$status" -eq 0 ]
  [ "${#lines[@]}" -eq 1 ]
  echo "$output" | grep -q 'lo:.*state DOWN\|lo: <LOOPBACK>'
  ! echo "$output" | grep -q '<.*UP.*>' || false
}

@test "network host: refused by default, allowed by helper.conf" {
  run arun --network host -- true
  [ "$status" -eq 125 ]
  [[ "$output" == *"host networking is not allowed"*"allow_host_network"* ]]
  write_conf "allow_host_network = yes"
  run arun --network host -- ip -o link
  [ "$status" -eq 0 ]
  [ "${#lines[@]}" -eq "$(ip -o link | wc -l)" ]
}

@test "writes outside the workspace and /tmp fail; inside they work" {
  run arun -- sh -c 'for d in / /usr /etc /bin /dev /proc; do touch $d/airlock-probe-file 2>/dev/null && echo "wrote $d"; done; touch ./ok /tmp/ok && echo inside-ok'
  [ "$status" -eq 0 ]
  [ "$output" = inside-ok ]
  [ -f "$WORK/ok" ]
  rm -f "$WORK/ok"
}

@test "/tmp is private: the host's /tmp is not visible" {
  touch /tmp/airlock-host-marker.$$
  run arun -- sh -c 'ls -A /tmp'
  rm -f /tmp/airlock-host-marker.$$
  [ "$status" -eq 0 ]
  ! echo "$output" | grep -q airlock-host-marker || false
}

@test "/etc/shadow, /root and other users' homes are unreadable or absent" {
  home=$(getent passwd "$OTHER_USER" | cut -d: -f6)
  run arun -- sh -c "cat /etc/shadow /etc/gshadow 2>/dev/null; ls /root 2>&1 >/dev/null | head -c 0; cat '$home/secret' 2>/dev/null; ls /home 2>/dev/null; echo end"
  [ "$status" -eq 0 ]
  [ "$output" = end ]
  [ -s /etc/shadow ]   # the host has one: the test means something
}

@test "/etc/ssh host keys are masked" {
  ls /etc/ssh/*_key >/dev/null 2>&1 || skip "no ssh host keys on this host"
  run arun -- sh -c 'for k in /etc/ssh/*_key; do cat "$k"; done 2>/dev/null; echo end'
  [ "$output" = end ]
}

@test "airlock's own configuration directory is not visible" {
  write_conf "pids = 100"
  conf_dir=$(dirname "$HELPER_CONF")
  run arun -- sh -c "ls -A '$conf_dir' 2>/dev/null; cat '$HELPER_CONF' 2>/dev/null; echo end"
  [ "$output" = end ]
}

@test "a minimal /dev" {
  run arun -- sh -c 'ls /dev | tr "\n" " "; echo; echo x > /dev/null && head -c 4 /dev/zero | wc -c && test -c /dev/urandom && test -d /dev/pts && test -d /dev/shm && echo dev-ok'
  [ "$status" -eq 0 ]
  [ "${lines[0]}" = "fd full null ptmx pts random shm stderr stdin stdout tty urandom zero " ]
  [ "${lines[2]}" = dev-ok ]
}

@test "the baseline seccomp filter blocks namespace, mount, key and bpf calls" {
  for what in unshare-user clone-newuser mount open-tree fsopen keyctl bpf \
              perf-event-open userfaultfd io-uring setns kexec init-module; do
    run arun -- "$PROBE" "$what"
    echo "$what: $output"
    [ "$status" -eq 0 ]
    [[ "$output" == blocked* ]]
  done
}

@test "TIOCSTI is blocked, also with high bits set in the request number" {
  for what in tiocsti-pty tiocsti-high; do
    run arun -- "$PROBE" "$what"
    echo "$what: $output"
    [ "$status" -eq 0 ]
    [[ "$output" == blocked* ]]
  done
}

@test "foreign syscall ABIs (x32, i386) are refused" {
  for what in x32 i386; do
    run arun -- "$PROBE" "$what"
    echo "$what: $output"
    [ "$status" -eq 0 ]
    [[ "$output" == blocked* ]]
  done
}

@test "ptrace of the sandbox's pid 1 and of outside processes fails" {
  run arun -- "$PROBE" ptrace 1
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "$output" == blocked* ]]
  sleep 30 & host_pid=$!
  run arun -- "$PROBE" ptrace "$host_pid"
  kill "$host_pid"
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "$output" == blocked* ]]
}

@test "no helper file descriptor reaches the sandbox" {
  run arun -- "$PROBE" fds
  [ "$status" -eq 0 ]
  [ "$output" = "fds: none" ]
}

@test "a clean environment plus --env" {
  EXTRA_ENV="SECRET_TOKEN=hunter2 LD_PRELOAD=/nonexistent.so" run arun --env FOO=bar -- env
  [ "$status" -eq 0 ]
  echo "$output" | grep -qx FOO=bar
  echo "$output" | grep -qx "HOME=$WORK"
  ! echo "$output" | grep -q '^SECRET_TOKEN=' || false
  ! echo "$output" | grep -q '^LD_PRELOAD=' || false
}

@test "--workdir picks the workspace, visible at the same path" {
  mkdir -p "$WORK/sub"; chown "$TEST_USER" "$WORK/sub"
  run arun --workdir "$WORK/sub" -- sh -c 'pwd; touch made-here; ls "$0" 2>&1; true' "$WORK/.tools"
  [ "$status" -eq 0 ]
  [ "${lines[0]}" = "$WORK/sub" ]
  [ -f "$WORK/sub/made-here" ]
  [[ "${lines[1]}" == *"No such file"* ]]   # the parent workspace is not bound
  rm -rf "$WORK/sub"
}

@test "--ro-bind is read-only, --bind is writable, both at their destination" {
  mkdir -p "$T/shared-ro" "$T/shared-rw"; echo data > "$T/shared-ro/f"
  chown "$TEST_USER" "$T/shared-rw"
  run arun --ro-bind "$T/shared-ro:/mnt/ro" --bind "$T/shared-rw:/mnt/rw" -- \
    sh -c 'cat /mnt/ro/f; touch /mnt/ro/g 2>/dev/null && echo ro-writable; echo new > /mnt/rw/h && echo rw-ok'
  [ "$status" -eq 0 ]
  [ "$output" = "data
rw-ok" ]
  [ "$(cat "$T/shared-rw/h")" = new ]
  rm -rf "$T/shared-ro" "$T/shared-rw"
}

@test "--rootfs: a busybox root the caller owns" {
  run arun --rootfs "$ROOTFS" -- /bin/sh -c 'ls /; ls /usr 2>&1; id -u; touch /newfile 2>&1 || echo ro-root'
  [ "$status" -eq 0 ]
  echo "$output" | grep -qx bin
  echo "$output" | grep -qx proc
  echo "$output" | grep -q "/usr.*No such file"
  echo "$output" | grep -qx "$(id -u "$TEST_USER")"
  echo "$output" | grep -qx ro-root
}

@test "--rootfs must be owned by the caller" {
  mkdir -p "$T/root-owned-rootfs"
  run arun --rootfs "$T/root-owned-rootfs" -- /bin/sh -c true
  rmdir "$T/root-owned-rootfs"
  [ "$status" -eq 125 ]
  [[ "$output" == *"must be a directory you own"* ]]
}

@test "without user namespaces the unprivileged helper refuses, naming the fix" {
  only_modes unprivileged
  run as_user "$HOSTILE" "$AIRLOCK_HELPER" no-userns "$AIRLOCK" run -- true
  [ "$status" -eq 125 ]
  [[ "$output" == *"unprivileged users create user namespaces"* ]]
  [[ "$output" == *"make install-setuid"* ]]
}
