#!/usr/bin/env bash
# `make demo`: one sandboxed command that shows what it can and cannot see.
set -u
BUILDDIR=${1:-build}
cd "$(dirname "$0")/.."
work=$(mktemp -d /tmp/airlock-demo.XXXXXX)
chmod 0755 "$work"
trap 'rm -rf "$work"' EXIT
echo "hello from the workspace" > "$work/notes.txt"
as=()
if [ "$(id -u)" = 0 ] && [ -n "${SUDO_USER:-}" ] && [ "$SUDO_USER" != root ]; then
  chown -R "$SUDO_USER" "$work"
  as=(runuser -u "$SUDO_USER" --)
fi
echo "airlock demo: running a shell in a fresh local sandbox (workspace $work)"
echo
cd "$work"
"${as[@]}" env AIRLOCK_HELPER="$OLDPWD/$BUILDDIR/airlock-helper" \
  "$OLDPWD/$BUILDDIR/airlock" run -v --timeout 30 -- bash -c '
see () { printf "  %-44s %s\n" "$1" "$2"; }
echo "What the sandbox CAN see and do:"
see "who am I" "$(id -un 2>/dev/null || id -u) (uid $(id -u))"
see "hostname" "$(hostname)"
see "the workspace (read-write, same path)" "$(pwd): $(cat notes.txt)"
see "write to the workspace" "$(echo ok > out.txt && echo yes)"
see "write to a private /tmp" "$(echo ok > /tmp/x && echo yes)"
see "network interfaces" "$(ip -o link | cut -d: -f2 | tr -d " " | tr "\n" " ")"
see "processes it can see" "$(ls /proc | grep -c "^[0-9]") (its own)"
echo
echo "What it CANNOT:"
see "write to /usr or /etc" "$(touch /usr/x /etc/x 2>&1 | head -n 1 | sed "s/.*: //")"
see "read /etc/shadow" "$(cat /etc/shadow 2>&1 | head -n 1 | sed "s/.*: //")"
see "see /home and /root" "$(ls /home /root 2>&1 | head -n 1 | sed "s/.*: //")"
see "capabilities (CapEff)" "$(grep CapEff /proc/self/status | cut -f2)"
see "no_new_privs / seccomp" "$(grep NoNewPrivs /proc/self/status | cut -f2) / mode $(grep "^Seccomp:" /proc/self/status | cut -f2)"
see "create a user namespace" "$(unshare -U true 2>&1 | sed "s/.*: //")"
see "mount something" "$(mount -t tmpfs x /tmp 2>&1 | sed "s/.*: //" | head -n 1)"
'
status=$?
echo
echo "exit status: $status (the command's own; 124 timeout, 125 setup failure)"
