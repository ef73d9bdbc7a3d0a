# SPDX-License-Identifier: MIT
# Shared by every bats file.  tests/run-tests.sh exports:
#   AIRLOCK        the installed broker (the thin client)
#   AIRLOCK_DAEMON the installed daemon program (airlock-daemon), which the
#                  client also finds at its compiled-in path
#   AIRLOCK_HELPER the helper of the privilege mode under test
#   MODE           unprivileged | setuid | caps
#   TEST_USER      the unprivileged user the tests run as
#   WORK           a 0755 workspace owned by TEST_USER (cwd of as_user)
#   PROBE          airlock-probe, inside WORK so the sandbox sees it
#   HOSTILE        airlock-hostile (runs outside the sandbox)
#   SESSION_DRIVER airlock-session-driver (one local session, see its source)
#   PTY_CLIENT     tests/pty_client.py (a person at a terminal job's keyboard)
#   TERM_CLIENT    tests/terminal_client.py (a person at a real terminal running
#                  an airlock command: shell, attach)
#   AIRLOCK_SUPERVISOR the installed airlock-supervisor
#   HELPER_CONF    the helper.conf path compiled into this build
#   T              the private test prefix (root-owned, 0755)
#   TEST_HOME      the test user's home for this run (config, allowlist,
#                  audit log); suites other than policy.bats run in the
#                  approval gate's "approve" mode (logged), since they test
#                  sandboxes, not the gate

# Run a command as the test user, in $WORK, with a minimal environment
# (EXTRA_ENV's assignments come last and win).
as_user () {
  (cd "$WORK" && runuser -u "$TEST_USER" -- env -i \
    PATH=/usr/local/bin:/usr/bin:/bin AIRLOCK_HELPER="$AIRLOCK_HELPER" \
    AIRLOCK_DAEMON="${AIRLOCK_DAEMON:-}" HOME="$TEST_HOME" AIRLOCK_POLICY_MODE=approve ${EXTRA_ENV:-} "$@")
}

# airlock run as the test user.
arun () {
  as_user "$AIRLOCK" run "$@"
}

# Skip unless the current privilege mode is one of the arguments.
only_modes () {
  local m
  for m in "$@"; do [ "$MODE" = "$m" ] && return 0; done
  skip "not applicable in $MODE mode"
}

# Write helper.conf (root-owned 0644); `reset_conf` removes it.
write_conf () {
  mkdir -p "$(dirname "$HELPER_CONF")"
  printf '%s\n' "$@" > "$HELPER_CONF"
  chown root:root "$HELPER_CONF" "$(dirname "$HELPER_CONF")"
  chmod 0644 "$HELPER_CONF"
}
reset_conf () {
  rm -f "$HELPER_CONF"
}

# Whether process $1 has ended within $2 seconds (default 5): gone, or a
# zombie (an orphan's new parent may be an init that reaps late, as the pid 1
# of CI's virtual machines does).
ended () {
  local i st
  for i in $(seq $((${2:-5} * 10))); do
    st=$(ps -o stat= -p "$1" 2>/dev/null) || return 0
    [[ "$st" == Z* ]] && return 0
    sleep 0.1
  done
  echo "process $1 is still there: $(ps -o pid=,stat=,args= -p "$1")" >&2
  return 1
}

# Wait up to $2 seconds (default 5) for no process to match the pattern
# $1 (a unique sleep).
gone () {
  local i
  for i in $(seq $((${2:-5} * 10))); do
    pgrep -f "$1" >/dev/null || return 0
    sleep 0.1
  done
  pgrep -af "$1"
  return 1
}

# Skip where the supervisor cannot run: the ASan build links it
# dynamically, so it cannot start in a container or a bare rootfs.
needs_static_supervisor () {
  [ "${VARIANT:-release}" != asan ] || skip "the ASan build's supervisor is not static: $*"
}

# The pid of this test's daemon (the one started with XDG_RUNTIME_DIR=
# $RUNDIR), if any.  Other runs' daemons may be listed after it: the
# loop's status must not be the last grep's (bats runs with set -e).
daemon_pid () {
  pgrep -f "^airlock daemon" | while read -r p; do
    grep -qz "XDG_RUNTIME_DIR=$RUNDIR" "/proc/$p/environ" 2>/dev/null && echo "$p"; true; done
}

# The test user's processes other than airlock daemons (`airlock run`
# starts one for the approval gate's verdict, and it stays until idle).
user_processes () {
  pgrep -a -u "$TEST_USER" | grep -v '^[0-9]* airlock daemon$'
}

# This test's daemon, politely (SIGTERM: it closes its sessions), and
# only it; waits up to 5 s for it to go.
stop_daemon () {
  local pid i
  pid=$(daemon_pid)
  [ -n "$pid" ] && kill $pid 2>/dev/null
  for i in $(seq 50); do [ -z "$pid" ] || ! kill -0 $pid 2>/dev/null && break; sleep 0.1; done
  true
}

# Skip a test that checks one backend's own behaviour.
only_backend () {
  local b
  for b in "$@"; do [ "${BACKEND:-local}" = "$b" ] && return 0; done
  skip "tests the $* backend, not ${BACKEND:-local}"
}

# The session's working directory as its commands see it: the workspace
# for local and docker (bound at the same path), for ssh the remote one
# (SSH_WORKDIR, in the remote user's home: run-tests.sh takes it from
# tests/ssh/sshd.sh).
# daytona: the working directory of the Daytona double's sandbox of
# session $1 (default: the newest sandbox), which is also its path on this
# host (tests/doubles/README.md).
daytona_home () {
  timeout -k 5 30 curl -sS "$DAYTONA_DOUBLE/_double/sandboxes" | python3 -c 'import json,sys
s = [x for x in json.load(sys.stdin) if not sys.argv[1] or x["name"].endswith("-" + sys.argv[1])]
print(s[-1]["home"] if s else "")' "${1:-}"
}

# modal: the home directory of the Modal double's (or the gateway
# double's) newest sandbox (a directory of this host, at the same path:
# tests/doubles/README.md).
modal_home () {
  if [ -n "${MODAL_GATEWAY_DOUBLE:-}" ]; then
    timeout -k 5 30 curl -sS "$MODAL_GATEWAY_DOUBLE/_double/sandboxes" | python3 -c 'import json,sys
s = json.load(sys.stdin)
print(s[-1]["home"] if s else "")'
  else
    ls -td "$MODAL_DOUBLE_STATE"/sb-*/work/home 2>/dev/null | head -n 1
  fi
}

session_workdir () {
  case ${BACKEND:-local} in
    ssh) echo "$SSH_WORKDIR" ;;
    daytona) daytona_home ;;
    modal) modal_home ;;
    *) echo "$WORK" ;;
  esac
}

# ssh: what a test may leave on either side, all of it this run's own:
# the test user's ssh masters whose ControlPath is in the test's runtime
# directory, the processes of the run's remote users other than sshd's
# (a remote job a failed test left running), and the remote job
# directories (ssh.remote_dir's default, .airlock in the remote home) a
# killed daemon leaves for the next connection's sweep.
ssh_cleanup () {
  [ "${BACKEND:-local}" = ssh ] || return 0
  local p u
  [ -n "${RUNDIR:-}" ] &&
    for p in $(pgrep -u "$TEST_USER" -f "^ssh: $RUNDIR/"); do kill -TERM "$p" 2>/dev/null; done
  for u in ${SSH_USER:-} ${SSH_NOBASH_USER:-}; do
    for p in $(pgrep -u "$u"); do
      [ "$(readlink "/proc/$p/exe" 2>/dev/null)" = /usr/sbin/sshd ] || kill -KILL "$p" 2>/dev/null
    done
  done
  [ -n "${SSH_HOME:-}" ] && rm -rf "$SSH_HOME/.airlock"
  true
}

# ssh: the test user's ssh masters of this test (ControlPath in $RUNDIR).
ssh_masters () {
  pgrep -a -u "$TEST_USER" -f "^ssh: $RUNDIR/.*\[mux\]"
}
