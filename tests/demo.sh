#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# `make demo`: the build tree's airlock, nothing installed.  One line with
# the approval gate's verdict on a dangerous command, then a script run in
# a fresh local sandbox (tests/demo-sandbox.sh) that prints what it can and
# cannot do and checks every row.  Exits non-zero, so that `make demo`
# fails, when the sandbox cannot be set up or any row is not as it should.
# Run as root by `sudo make demo`: the sandbox then runs as the user who
# ran sudo; as root itself otherwise.
set -u
BUILDDIR=${1:-build}
cd "$(dirname "$0")/.."
case $BUILDDIR in /*) ;; *) BUILDDIR=$PWD/$BUILDDIR ;; esac

demo=$(mktemp -d /tmp/airlock-demo.XXXXXX)
chmod 0755 "$demo"
tag=${demo##*/}
# The demo's own daemon (started by `airlock run` for the gate's verdict)
# is stopped before its directory goes.
daemon_started=0
trap '[ "$daemon_started" = 0 ] || airlock daemon stop >/dev/null 2>&1
      rm -rf "$demo" "/tmp/$tag.private"' EXIT

# Copies of what `make install` would install, where the sandbox's user
# can reach them even when the tree is in root's home.  The env overrides
# point the uninstalled airlock at them instead of its compiled-in paths.
mkdir -p "$demo/bin" "$demo/home/run" "$demo/workspace"
chmod 0700 "$demo/home/run"
install -m 0755 "$BUILDDIR/airlock" "$BUILDDIR/airlock-daemon" "$BUILDDIR/airlock-helper" \
  "$demo/bin/" || exit 1
install -m 0644 policy/default.rules "$demo/default.rules" || exit 1
install -m 0644 tests/demo-sandbox.sh "$demo/workspace/demo-sandbox.sh" || exit 1
echo "hello from the workspace" > "$demo/workspace/notes.txt"
echo "a host file the sandbox must not see" > "$demo/outside.txt"

as=()
if [ "$(id -u)" = 0 ] && [ -n "${SUDO_USER:-}" ] && [ "$SUDO_USER" != root ]; then
  as=(runuser -u "$SUDO_USER" --)
  chown -R "$SUDO_USER" "$demo/home" "$demo/workspace"
fi
uid=$("${as[@]}" id -u) || { echo "demo: cannot run as ${SUDO_USER:-root}" >&2; exit 1; }
# The demo's own settings, allowlist, audit log and daemon (none of yours
# is read, written or asked), and deny mode: nothing here waits for an
# answer.
airlock () {
  "${as[@]}" env AIRLOCK_HELPER="$demo/bin/airlock-helper" \
    AIRLOCK_DAEMON="$demo/bin/airlock-daemon" XDG_RUNTIME_DIR="$demo/home/run" \
    AIRLOCK_DEFAULT_RULES="$demo/default.rules" \
    XDG_CONFIG_HOME="$demo/home/config" XDG_STATE_HOME="$demo/home/state" \
    AIRLOCK_POLICY_MODE=deny "$demo/bin/airlock" "$@"
}

daemon_started=1
failed=0
verdict=$(cd "$demo/workspace" && airlock policy check -- 'rm -rf ~' 2>&1)
gate=$?
# "deny (why; mode)" then one line per rule: "  ACTION  ID  TEXT  [file:line]".
line="approval gate: airlock policy check -- 'rm -rf ~'  =>  $(printf '%s\n' "$verdict" \
  | sed -e '1s/$/:/' -e '2,$s/ *\[[^]]*\]$//' -e '2,$s/^ *[a-z]\{1,\}  *\([^ ]*\)  *\(.*\)$/\1 (\2)/' \
  | paste -sd ' ')"
if [ "$gate" = 1 ]; then echo "$line"; else
  echo "$line   <-- WRONG: the gate must refuse it (exit $gate)"; failed=1; fi
echo

echo "airlock run -- bash ./demo-sandbox.sh   (as $("${as[@]}" id -un), in $demo/workspace)"
(cd "$demo/workspace" && airlock run -v --timeout 30 --env DEMO_UID="$uid" \
  --env DEMO_OUTSIDE="$demo/outside.txt" --env DEMO_TAG="$tag" -- bash ./demo-sandbox.sh)
status=$?
# What only the host can see: the workspace is the host's own directory,
# not a copy; the sandbox's /tmp is not the host's.
if [ "$status" = 0 ] && ! grep -qs "written in the sandbox" "$demo/workspace/out.txt"; then
  echo "  out.txt is not in the workspace on the host   <-- WRONG"
  status=3
fi
if [ "$status" = 0 ] && [ -e "/tmp/$tag.private" ]; then
  echo "  the sandbox's /tmp file is in the host's /tmp   <-- WRONG"
  status=3
fi

echo
case $status in
  0) echo "exit status 0: every row is as it should be.  (airlock run passes on the"
     echo "command's own exit status, except for its own: 77 refused by the approval"
     echo "gate, 124 timed out, 125 the sandbox could not be set up.)" ;;
  3) echo "exit status 3: the rows marked WRONG are not as they should be" ;;
  77) echo "exit status 77: the approval gate refused the command; it did not run" ;;
  124) echo "exit status 124: the sandbox timed out and was killed" ;;
  125) echo "exit status 125: the sandbox could not be set up (the reason is above);" \
            "nothing ran" ;;
  *) echo "exit status $status: the demo script's own (it did not finish)" ;;
esac
[ "$status" = 0 ] && [ "$failed" = 0 ]
