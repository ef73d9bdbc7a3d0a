#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# What `make demo` runs inside a fresh airlock sandbox, as
# `bash ./demo-sandbox.sh` in the demo's workspace (tests/demo.sh copies it
# there).  The approval gate judges that command line; what this file then
# tries is the sandbox's to allow or to stop.  One row per attempt; a row
# that is not as it should be is marked WRONG, and the script exits 3.
# From tests/demo.sh: DEMO_UID (the caller's uid), DEMO_OUTSIDE (a host
# file next to the workspace), DEMO_TAG (a unique name, for a file in /tmp
# that tests/demo.sh then checks is not in the host's /tmp).
# Every attempt is harmless where it succeeds (and is undone), since
# outside a sandbox it would.
set -u
: "${DEMO_TAG:?run by tests/demo.sh (make demo), in a sandbox}"
wrong=0

# row LABEL SHOWN OK: one line of the table; OK 0 means as it should be.
row () {
  if [ "$3" = 0 ]; then
    printf '  %-38s %s\n' "$1" "$2"
  else
    printf '  %-38s %s   <-- WRONG\n' "$1" "$2"
    wrong=$((wrong + 1))
  fi
}

# can LABEL CMD...: CMD must succeed; shows its output's first line.
can () {
  local label=$1 out status
  shift
  out=$("$@" 2>&1)
  status=$?
  row "$label" "$(printf '%s\n' "$out" | head -n 1)" $((status != 0))
}

# cannot LABEL CMD...: CMD must fail; shows why (its error, without the
# "program: path:" prefix).
cannot () {
  local label=$1 out status
  shift
  out=$("$@" 2>&1)
  status=$?
  out=$(printf '%s\n' "$out" | head -n 1)
  if [ "$status" = 0 ]; then
    row "$label" "it succeeded${out:+: $out}" 1
  else
    row "$label" "$(printf '%s\n' "$out" | sed 's/.*: //')" 0
  fi
}

# The attempts, each succeeding only if the thing could be done.
own_uid () { printf '%s (uid %s)\n' "$(id -un 2>/dev/null || echo '?')" "$(id -u)"; [ "$(id -u)" = "$DEMO_UID" ]; }
read_workspace () { printf '%s: ' "$PWD"; cat notes.txt; }
write_workspace () { echo "written in the sandbox" > out.txt && echo "yes (out.txt)"; }
write_tmp () { echo ok > "/tmp/$DEMO_TAG.private" && echo "yes (its own: not the host's)"; }
loopback_only () { local l; l=$(ip -o link | cut -d: -f2 | tr -d ' ' | paste -sd ' '); echo "$l"; [ "$l" = lo ]; }
own_processes () { local n; n=$(ls /proc | grep -c '^[0-9]'); echo "$n (its own)"; [ "$n" -lt 10 ]; }
write_system () {
  local f
  for f in /usr/.airlock-demo-$DEMO_TAG /etc/.airlock-demo-$DEMO_TAG; do
    touch "$f" && rm -f "$f" && return 0
  done
  return 1
}
list_homes () { local l; l=$(ls -A /home /root 2>/dev/null | grep -v -e ':$' -e '^$'); echo "${l:-nothing there}"; [ -n "$l" ]; }
read_outside () { cat "$DEMO_OUTSIDE"; }
has_capabilities () { local c; c=$(grep CapEff /proc/self/status | cut -f2); echo "none (CapEff $c)"; [ "$c" != 0000000000000000 ]; }
can_gain_privileges () {
  local n s
  n=$(grep NoNewPrivs /proc/self/status | cut -f2)
  s=$(grep '^Seccomp:' /proc/self/status | cut -f2)
  echo "no_new_privs $n, seccomp mode $s"
  [ "$n" != 1 ] || [ "$s" != 2 ]
}
reach_network () { ip route get 192.0.2.1; }
set_hostname () { hostname "$(hostname)"; } # the same name: no change
mount_tmpfs () { mkdir -p mnt && mount -t tmpfs demo mnt && umount mnt; }

echo "What the sandbox CAN see and do:"
can "who am I (your own uid)" own_uid
can "its own hostname" hostname
can "read the workspace (same path)" read_workspace
can "write to the workspace" write_workspace
can "write to a private /tmp" write_tmp
can "network interfaces" loopback_only
can "processes it can see" own_processes
echo
echo "What it CANNOT:"
cannot "write to /usr or /etc" write_system
cannot "read /etc/shadow" cat /etc/shadow
cannot "see anything in /home or /root" list_homes
cannot "see the host's files next to it" read_outside
cannot "reach the network" reach_network
cannot "hold any capability" has_capabilities
cannot "gain privileges (setuid, new filters)" can_gain_privileges
cannot "set the hostname" set_hostname
cannot "create a user namespace" unshare -U true
cannot "mount something" mount_tmpfs
[ "$wrong" = 0 ] || exit 3
