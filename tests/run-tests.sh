#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The whole test suite (`make check`): protocol unit tests, then three streams
# side by side, each with test users, a private prefix and a scratch dir of
# its own: (1) the command-line tests run as an unprivileged user against
# the helper in each privilege mode (unprivileged user namespaces, setuid
# root, file capabilities), the README's demo, the build tests, a few rounds
# of `make bench`, the Debian package (built, installed, its suites, purged);
# (2) a fuzz smoke run under ASan+UBSan, the docker
# suites, the ssh suites against a real sshd on 127.0.0.1
# (tests/ssh/sshd.sh), the singularity suites on the Apptainer stand-in
# (tests/doubles/apptainer), then the local suites again with an
# ASan+UBSan build; (3) the daytona and modal backends against their
# doubles, and the doubles' own suites with the official SDKs.
# Needs root: it creates test users and installs a setuid helper into a
# private 0755 prefix (CI's clone may sit where the test user cannot enter).
# Knobs: TEST_USER, OTHER_USER (BACKENDS_TEST_USER, BACKENDS_OTHER_USER:
# stream 2's, by default the same with a "b" appended; CLOUD_TEST_USER,
# CLOUD_OTHER_USER: stream 3's, "c"), MODES, SUITES,
# ASAN_SUITES, DOCKER_SUITES, SSH_SUITES, SINGULARITY_SUITES, DAYTONA_SUITES,
# MODAL_SUITES, MODAL_SESSION_SUITES, MODAL_MANAGED_SESSION_SUITES, ONCE_SUITES
# (" " or "" for none), SINGULARITY_MODE (its privilege mode, default
# unprivileged), SKIP_ASAN=1, FUZZ_SECONDS, PARALLEL=0 (one stream after the
# other).
# Ends with one line: "N passed, N failed, N skipped".
set -u
cd "$(dirname "$0")/.."
ROOT=$(pwd)
BUILDDIR=${BUILDDIR:-build}
FUZZ_SECONDS=${FUZZ_SECONDS:-60}
MODES=${MODES:-unprivileged setuid caps}
SUITES=${SUITES:-sandbox run limits hostile protect session sessions pty pty_attach files spool hygiene lifecycle api doctest policy install standin network}
ASAN_SUITES=${ASAN_SUITES:-sandbox run hostile protect session sessions pty files spool hygiene lifecycle api policy network}
# Suites that do not depend on the privilege mode: in the first mode only.
ONE_MODE_SUITES=${ONE_MODE_SUITES-cache mcp}

if [ "$(id -u)" != 0 ]; then
  echo "tests/run-tests.sh: run as root (sudo make check): it creates the test" \
       "users and installs a setuid helper into a private prefix" >&2
  exit 2
fi

T=$(mktemp -d /tmp/airlock-check.XXXXXX)
chmod 0755 "$T"
cleanup () {
  # An ssh run cut short: its sshd and remote users (tests/ssh/sshd.sh).
  local d
  for d in "$T/sshd" "$T"/*/sshd; do [ -e "$d" ] && "$ROOT/tests/ssh/sshd.sh" remove "$d"; done
  rm -rf "$T"
}
trap cleanup EXIT

passed=0 failed=0 skipped=0
failures=()

# Count one TAP stream (a file), remembering what failed.
tally () {
  local label=$1 file=$2 line
  while IFS= read -r line; do
    case "$line" in
      "not ok"*) failed=$((failed + 1)); failures+=("[$label] ${line#not ok }") ;;
      "ok "*"# skip"*|"ok "*"# SKIP"*) skipped=$((skipped + 1)) ;;
      "ok "*) passed=$((passed + 1)) ;;
    esac
  done < "$file"
}

# One pass/fail result of our own.
result () {
  local label=$1 status=$2
  if [ "$status" = 0 ]; then passed=$((passed + 1)); else
    failed=$((failed + 1)); failures+=("[$label]"); fi
}

# Each section's header says when it started (minutes:seconds into the run).
STARTED=$SECONDS
section () { local t=$((SECONDS - STARTED)); printf '\n== [%d:%02d] %s\n' $((t / 60)) $((t % 60)) "$*"; }

# Run tests/SUITE.bats, print its failures and counts, tally it as LABEL.
bats_suite () { # label, suite
  section "$1: $2.bats"
  bats --tap "tests/$2.bats" > "$T/out.tap" 2>&1
  grep -E '^not ok' -A 30 "$T/out.tap" | head -n 120
  tally "$1 $2" "$T/out.tap"
  printf '%s\n' "$(grep -c '^ok' "$T/out.tap") ok, $(grep -c '^not ok' "$T/out.tap") not ok"
}

# ---- 1. Unit tests (cmocka, built with ASan+UBSan) ----
for unit in "$BUILDDIR"/test_*; do
  name=${unit##*/test_}
  section "unit tests: $name"
  case $unit in /*) ;; *) unit=$ROOT/$unit ;; esac
  (cd "$T" && CMOCKA_MESSAGE_OUTPUT=TAP "$unit") > "$T/unit.tap" 2>&1
  grep -E '^not ok' -A 3 "$T/unit.tap" | head -n 20
  printf '%s\n' "$(grep -c '^ok' "$T/unit.tap") ok, $(grep -c '^not ok' "$T/unit.tap") not ok"
  tally "unit $name" "$T/unit.tap"
done

# ---- 3. Three streams, side by side ----
# The local privilege modes (then the README's demo, the build and bench
# tests) and the other backends (the fuzz smoke run, docker, ssh, then the
# ASan+UBSan variant of the local suites) run at the same time, each with its own test
# users, private prefix, helper.conf and scratch directory T: most of the
# suite waits on sandboxes, daemons and remote hosts rather than on the
# CPU.  PARALLEL=0 runs them one after the other.

# A stream's private install, users, workspace and home, all under T (its
# own): the helper reads $T/etc/airlock/helper.conf, which tests rewrite.
install_variant () { # name, extra make args...
  local name=$1; shift
  make -s install BUILDDIR="$T/$name-build" PREFIX="$T/$name" SYSCONFDIR="$T/etc" WERROR=1 "$@" \
    > "$T/$name-build.log" 2>&1 || { cat "$T/$name-build.log"; return 1; }
  local h="$T/$name/libexec/airlock/airlock-helper"
  cp "$h" "$h-setuid"; chown root:root "$h-setuid"; chmod 4755 "$h-setuid"
  cp "$h" "$h-caps"; chmod 0755 "$h-caps"; setcap cap_dac_override,cap_setgid,cap_setuid,cap_sys_admin+ep "$h-caps"
}

prepare_stream () { # T, test user, other user
  export T=$1 TEST_USER=$2 OTHER_USER=$3
  mkdir -p "$T" && chmod 0755 "$T"
  section "installing into $T/prefix (test users $TEST_USER, $OTHER_USER)"
  id "$TEST_USER" >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin "$TEST_USER"
  id "$OTHER_USER" >/dev/null 2>&1 || useradd --create-home --shell /usr/sbin/nologin "$OTHER_USER"
  local other_home
  other_home=$(getent passwd "$OTHER_USER" | cut -d: -f6)
  # The docker suites run as the test user, who needs the Docker socket;
  # the other user must not have it (the permission-denied test).
  getent group docker >/dev/null && usermod -aG docker "$TEST_USER"
  getent group docker >/dev/null && gpasswd -d "$OTHER_USER" docker >/dev/null 2>&1
  echo "another user's secret" > "$other_home/secret" && chmod 0644 "$other_home/secret"
  install_variant prefix || return 1

  export WORK="$T/work"
  mkdir -p "$WORK/.tools"
  install -m 0755 "$BUILDDIR/airlock-probe" "$WORK/.tools/airlock-probe"
  install -m 0755 "$BUILDDIR/airlock-hostile" "$T/airlock-hostile"
  install -m 0755 "$BUILDDIR/airlock-session-driver" "$T/airlock-session-driver"
  install -m 0755 "$BUILDDIR/airlock-daytona-driver" "$T/airlock-daytona-driver"
  install -m 0755 "$BUILDDIR/airlock-modal-managed-driver" "$T/airlock-modal-managed-driver"
  install -m 0755 tests/spool_client.py "$T/spool_client.py"
  install -m 0755 tests/pty_client.py "$T/pty_client.py"
  install -m 0755 tests/terminal_client.py "$T/terminal_client.py"
  chown -R "$TEST_USER" "$WORK"
  # The Apptainer stand-in (tests/doubles/README.md), where the test user
  # can run it: `apptainer` and its `singularity` symlink.
  cp -a tests/doubles "$T/doubles"
  chmod -R a+rX "$T/doubles"
  export STANDIN_DIR="$T/doubles"

  # A busybox root for --rootfs, owned by the test user.
  export ROOTFS="$T/rootfs"
  mkdir -p "$ROOTFS/bin"
  cp /bin/busybox "$ROOTFS/bin/busybox"
  for tool in sh ls cat echo id mkdir touch; do ln -s busybox "$ROOTFS/bin/$tool"; done
  chown -R "$TEST_USER" "$ROOTFS"

  # The test user's home for this run: its airlock config, allowlist and
  # audit log start empty.
  export TEST_HOME="$T/home"
  mkdir -p "$TEST_HOME"
  chown "$TEST_USER" "$TEST_HOME"
  chmod 0700 "$TEST_HOME"

  export PROBE="$WORK/.tools/airlock-probe" HOSTILE="$T/airlock-hostile"
  export SESSION_DRIVER="$T/airlock-session-driver" SPOOL_CLIENT="$T/spool_client.py"
  export PTY_CLIENT="$T/pty_client.py" TERM_CLIENT="$T/terminal_client.py"
  export DAYTONA_DRIVER="$T/airlock-daytona-driver" MODAL_MANAGED_DRIVER="$T/airlock-modal-managed-driver"
  export HELPER_CONF="$T/etc/airlock/helper.conf"
}

# `airlock run` gets its verdict from the test user's daemon, started on
# demand in the default runtime directory (as_user sets none): stopped
# after each suite, so that none outlives the suite that started it.
stop_run_daemon () {
  (cd / && runuser -u "$TEST_USER" -- env -i PATH=/usr/bin:/bin HOME="$TEST_HOME" \
    timeout -k 5 20 "$AIRLOCK" daemon stop) > /dev/null 2>&1 || true
}

# Run tests/SUITE.bats with the environment given (BATS_FILTER: only the
# tests whose names match, for a targeted run), print its failures and
# counts, tally it as LABEL.
run_bats () { # label, suite, env assignments...
  local label=$1 suite=$2; shift 2
  env "$@" timeout -k 10 1800 bats --tap ${BATS_FILTER:+--filter "$BATS_FILTER"} "tests/$suite.bats" > "$T/out.tap" 2>&1
  grep -E '^not ok' -A 30 "$T/out.tap" | head -n 120
  tally "$label" "$T/out.tap"
  printf '%s\n' "$(grep -c '^ok' "$T/out.tap") ok, $(grep -c '^not ok' "$T/out.tap") not ok"
}

run_suites () { # label, prefix, modes
  local label=$1 prefix=$2 modes=$3 mode suite
  export VARIANT=$label # release, or asan (whose supervisor is not static)
  export AIRLOCK="$prefix/bin/airlock"
  export AIRLOCK_DAEMON="$prefix/libexec/airlock/airlock-daemon"
  export AIRLOCK_SUPERVISOR="$prefix/libexec/airlock/airlock-supervisor"
  for mode in $modes; do
    export MODE=$mode
    case $mode in
      unprivileged) export AIRLOCK_HELPER="$prefix/libexec/airlock/airlock-helper" ;;
      setuid) export AIRLOCK_HELPER="$prefix/libexec/airlock/airlock-helper-setuid" ;;
      caps) export AIRLOCK_HELPER="$prefix/libexec/airlock/airlock-helper-caps" ;;
    esac
    local once=
    [ "$label" = release ] && [ "$mode" = "${modes%% *}" ] && once=$ONE_MODE_SUITES
    for suite in $SUITES $once; do
      section "$label: $suite.bats, $mode mode"
      run_bats "$label $mode $suite" "$suite"
      stop_run_daemon
    done
  done
}

# The backend suites run against the release prefix, in one privilege
# mode (the backends do not use the helper, except through local jobs).
use_release_prefix () {
  export AIRLOCK="$T/prefix/bin/airlock" MODE=unprivileged VARIANT=release
  export AIRLOCK_DAEMON="$T/prefix/libexec/airlock/airlock-daemon"
  export AIRLOCK_SUPERVISOR="$T/prefix/libexec/airlock/airlock-supervisor"
  export AIRLOCK_HELPER="$T/prefix/libexec/airlock/airlock-helper"
}

# ---- 3a. The local sandbox: each privilege mode, then once ----
stream_local () {
  prepare_stream "$1" "$TEST_USER" "$OTHER_USER" || { result install 1; return; }
  run_suites release "$T/prefix" "$MODES"

  # Once, as root: the README's demo; build-time paths and flags; bench;
  # the Debian package, whose installed-package suites (their TAP in
  # $T/package-installed.tap) count one by one.
  for suite in ${ONCE_SUITES-demo build bench package egress}; do bats_suite once "$suite"; done
  if [ -f "$T/package-installed.tap" ]; then
    section "once: the installed package's suites, caps mode"
    grep -E '^not ok' -A 12 "$T/package-installed.tap" | head -n 60
    tally "once package installed" "$T/package-installed.tap"
    printf '%s\n' "$(grep -c '^ok' "$T/package-installed.tap") ok, $(grep -c '^not ok' "$T/package-installed.tap") not ok"
  fi
}

# ---- 3b. The fuzz smoke run, the other backends, then ASan ----
stream_backends () {
  prepare_stream "$1" "$BACKENDS_TEST_USER" "$BACKENDS_OTHER_USER" || { result install 1; return; }

  # Fuzz smoke run (libFuzzer, ASan+UBSan): CPU-bound, while the other
  # stream waits on its sandboxes.
  section "fuzz smoke run: ${FUZZ_SECONDS}s per harness"
  if make -s fuzz BUILDDIR="$BUILDDIR" FUZZ_SECONDS="$FUZZ_SECONDS" > "$T/fuzz.log" 2>&1; then
    grep -E 'stat::number_of_executed_units|Done [0-9]+ runs' "$T/fuzz.log" | tail -n 2
    result fuzz 0
  else
    tail -n 30 "$T/fuzz.log"; result fuzz 1
  fi

  # The docker backend, against the real dockerd, with a test image built
  # without a registry.  dockerd not reachable: the suites fail when
  # AIRLOCK_REQUIRE_DOCKER=1 (CI), else they are skipped with the reason.
  if [ -n "$DOCKER_SUITES" ]; then
    section "docker: dockerd and the test image"
    local docker_why='' suite
    if ! /usr/bin/docker info > "$T/docker.log" 2>&1; then
      docker_why="dockerd is not reachable: $(tail -n 1 "$T/docker.log")"
    elif ! tests/docker/make-image.sh airlock-test:latest > "$T/docker.log" 2>&1; then
      docker_why="the test image cannot be built: $(tail -n 1 "$T/docker.log")"
    fi
    if [ -z "$docker_why" ]; then
      cat "$T/docker.log"
      use_release_prefix
      for suite in $DOCKER_SUITES; do
        section "docker: $suite.bats (BACKEND=docker)"
        run_bats "docker $suite" "$suite" BACKEND=docker \
          BACKEND_ENV="AIRLOCK_DOCKER_IMAGE=airlock-test:latest AIRLOCK_DOCKER_PULL=false AIRLOCK_DOCKER_MOUNT_WORKDIR=true"
      done
      # Nothing of the test user's may outlive the run.
      local left
      left=$(/usr/bin/docker ps -aq --filter "label=airlock.user=$(id -u "$TEST_USER")")
      [ -z "$left" ] || /usr/bin/docker rm -f $left > /dev/null 2>&1
    elif [ "${AIRLOCK_REQUIRE_DOCKER:-0}" = 1 ]; then
      echo "FAILED: $docker_why (AIRLOCK_REQUIRE_DOCKER=1)"
      result "docker suites" 1
    else
      echo "skipped: $docker_why"
      skipped=$((skipped + 1))
    fi
  fi

  # The ssh backend, against a real sshd on 127.0.0.1: tests/ssh/sshd.sh
  # makes it for this run (fresh keys, its own config, a free port) with
  # a remote user of its own (bash, a home, the session's workdir in it)
  # and one without bash; removed again at the end.  The suites run as the
  # test user, the client, with the run's key and known_hosts (strict: the
  # host key is known beforehand).  A suite that does not exist (on a
  # branch without it) is left out, and says so.
  if [ -n "$SSH_SUITES" ]; then
    section "ssh: sshd on 127.0.0.1 and the remote users"
    local ssh_user
    case $TEST_USER in
      airlock-test*) ssh_user=${SSH_USER:-airlock-ssh${TEST_USER#airlock-test}} ;;
      *) ssh_user=${SSH_USER:-airlock-ssh-$TEST_USER} ;;
    esac
    if tests/ssh/sshd.sh start "$T/sshd" "$TEST_USER" "$ssh_user" > "$T/sshd-start.log" 2>&1; then
      set -a
      . "$T/sshd/env"
      set +a
      echo "sshd on 127.0.0.1:$SSHD_PORT (pid $(cat "$T/sshd/listener.pid")), remote users $SSH_USER and $SSH_NOBASH_USER"
      use_release_prefix
      local ssh_env="AIRLOCK_SSH_HOST=127.0.0.1 AIRLOCK_SSH_PORT=$SSHD_PORT AIRLOCK_SSH_USER=$SSH_USER"
      ssh_env+=" AIRLOCK_SSH_KEY=$SSH_KEY AIRLOCK_SSH_KNOWN_HOSTS=$SSH_KNOWN_HOSTS"
      ssh_env+=" AIRLOCK_SSH_STRICT_HOST_KEY_CHECKING=yes AIRLOCK_SSH_WORKDIR=$SSH_WORKDIR"
      for suite in $SSH_SUITES; do
        if [ ! -f "tests/$suite.bats" ]; then
          echo "ssh: tests/$suite.bats does not exist (yet): not run"
          continue
        fi
        section "ssh: $suite.bats (BACKEND=ssh)"
        run_bats "ssh $suite" "$suite" BACKEND=ssh BACKEND_ENV="$ssh_env"
      done
    else
      echo "FAILED: the test sshd did not start:"
      tail -n 20 "$T/sshd-start.log"
      result "ssh: sshd" 1
    fi
    # The test user's ssh masters of this run (their ControlPath is under
    # $T): a session that was never closed leaves one for ControlPersist.
    for p in $(pgrep -u "$TEST_USER" -f "^ssh: $T/"); do kill -TERM "$p" 2>/dev/null; done
    tests/ssh/sshd.sh remove "$T/sshd"
  fi

  # The singularity backend on the Apptainer stand-in (Debian packages
  # neither Apptainer nor Singularity): tests/doubles/apptainer first in
  # PATH, its instances in airlock's own local sandbox (in one privilege
  # mode, SINGULARITY_MODE), the session image a SIF it built.  A suite
  # that does not exist (on a branch without it) is left out, and says so.
  if [ -n "$SINGULARITY_SUITES" ] && [ ! -f backends/singularity_session.c ]; then
    section "singularity: this tree has no singularity backend (yet): not run"
  elif [ -n "$SINGULARITY_SUITES" ]; then
    section "singularity: the Apptainer stand-in and its image"
    use_release_prefix
    export MODE=$SINGULARITY_MODE
    case $MODE in
      unprivileged) ;;
      setuid|caps) export AIRLOCK_HELPER="$T/prefix/libexec/airlock/airlock-helper-$MODE" ;;
      *) echo "SINGULARITY_MODE is unprivileged, setuid or caps, not $MODE"
         result singularity 1; SINGULARITY_SUITES= ;;
    esac
    export SINGULARITY_IMAGE="$T/singularity/airlock-test.sif"
    mkdir -p "$T/singularity"
    chown "$TEST_USER" "$T/singularity"
    local sing_path="$STANDIN_DIR:/usr/local/bin:/usr/bin:/bin" sing_env
    if (cd / && runuser -u "$TEST_USER" -- env -i PATH="$sing_path" HOME="$TEST_HOME" \
          timeout -k 5 60 apptainer build "$SINGULARITY_IMAGE" docker://debian:bookworm-slim) \
          > "$T/singularity.log" 2>&1; then
      echo "$("$STANDIN_DIR/apptainer" --version) (the stand-in), image $SINGULARITY_IMAGE, $MODE mode"
      sing_env="PATH=$sing_path STANDIN_AIRLOCK=$AIRLOCK AIRLOCK_SINGULARITY_IMAGE=$SINGULARITY_IMAGE AIRLOCK_SINGULARITY_MOUNT_WORKDIR=true"
      for suite in $SINGULARITY_SUITES; do
        if [ ! -f "tests/$suite.bats" ]; then
          echo "singularity: tests/$suite.bats does not exist (yet): not run"
          continue
        fi
        section "singularity: $suite.bats (BACKEND=singularity)"
        run_bats "singularity $suite" "$suite" BACKEND=singularity BACKEND_ENV="$sing_env"
      done
    else
      echo "FAILED: the stand-in could not build the test image:"
      tail -n 20 "$T/singularity.log"
      result "singularity: the test image" 1
    fi
    # Instances the suites left (each is the stand-in's airlock run).
    (cd / && runuser -u "$TEST_USER" -- env -i PATH="$sing_path" HOME="$TEST_HOME" \
      timeout -k 5 60 apptainer instance stop --all --force) > /dev/null 2>&1
  fi

  # The local suites again with an ASan+UBSan build of broker and helper
  # (the unprivileged mode only: a sanitizer runtime has no place in a
  # setuid binary).
  if [ "${SKIP_ASAN:-0}" != 1 ]; then
    section "building the ASan+UBSan variant"
    if install_variant asan SANITIZE=1; then
      SUITES="$ASAN_SUITES" run_suites asan "$T/asan" unprivileged
    else
      result "asan build" 1
    fi
  fi
}

# ---- 3c. The cloud backends against their doubles: daytona, modal ----
stream_cloud () {
  prepare_stream "$1" "$CLOUD_TEST_USER" "$CLOUD_OTHER_USER" || { result install 1; return; }

  # The daytona backend against the Daytona double (tests/doubles/daytona,
  # tests/doubles/README.md): an HTTP server on 127.0.0.1 speaking Daytona's
  # REST and toolbox APIs, run as the other user, whose sandboxes are that
  # user's airlock local sandboxes (unprivileged mode).  The suites run as
  # the test user, the client, with the run's API key in its environment.
  if [ -n "$DAYTONA_SUITES" ]; then
    section "daytona: the Daytona double"
    use_release_prefix
    # Its sandboxes' directories outside /tmp: the files API lets a
    # session write in its workdir and /tmp, so a workdir under /tmp would
    # hide what files.bats checks.
    local dstate dkey
    dstate=$(mktemp -d /var/tmp/airlock-daytona.XXXXXX)
    dkey=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
    chown "$OTHER_USER" "$dstate"
    chmod 0755 "$dstate"
    # The key reaches the double in a file, read before it listens and then
    # removed: never in an argv (runuser's lives as long as the double).
    local dkeyfile
    dkeyfile=$(mktemp /var/tmp/airlock-daytona-key.XXXXXX)
    printf '%s\n' "$dkey" > "$dkeyfile"
    chown "$OTHER_USER" "$dkeyfile"
    install -m 0755 tests/doubles/daytona tests/doubles/daytona-agent "$T/"
    (cd / && exec runuser -u "$OTHER_USER" -- env -i PATH=/usr/local/bin:/usr/bin:/bin \
       HOME="$dstate" DAYTONA_DOUBLE_API_KEY_FILE="$dkeyfile" timeout -k 5 5400 "$T/daytona" --port 0 \
       --airlock "$AIRLOCK" --state "$dstate") > "$T/daytona-double.out" 2> "$T/daytona-double.err" &
    local dpid=$! dport=
    for _ in $(seq 100); do
      dport=$(sed -n 's/^listening on 127\.0\.0\.1:\([0-9]*\)$/\1/p' "$T/daytona-double.out")
      [ -z "$dport" ] || break
      sleep 0.1
    done
    rm -f "$dkeyfile"
    if [ -n "$dport" ]; then
      export DAYTONA_DOUBLE="http://127.0.0.1:$dport" DAYTONA_API_URL="http://127.0.0.1:$dport/api"
      export DAYTONA_API_KEY="$dkey"
      echo "the Daytona double on 127.0.0.1:$dport (pid $dpid)"
      for suite in $DAYTONA_SUITES; do
        if [ ! -f "tests/$suite.bats" ]; then
          echo "daytona: tests/$suite.bats does not exist (yet): not run"
          continue
        fi
        section "daytona: $suite.bats (BACKEND=daytona)"
        run_bats "daytona $suite" "$suite" BACKEND=daytona \
          BACKEND_ENV="DAYTONA_API_URL=$DAYTONA_API_URL DAYTONA_API_KEY=$dkey"
      done
    else
      echo "FAILED: the Daytona double did not start:"
      tail -n 20 "$T/daytona-double.err"
      result "daytona: the double" 1
    fi
    kill -TERM "$dpid" 2>/dev/null
    wait "$dpid" 2>/dev/null
    rm -rf "$dstate"
    unset DAYTONA_DOUBLE DAYTONA_API_URL DAYTONA_API_KEY
  fi

  # The modal backend (direct) against the Modal gRPC double
  # (tests/doubles/modal), run as the other user, whose sandboxes are that
  # user's airlock local sandboxes; the suites run as the test user, the
  # client, with the run's credentials in its environment.
  if [ -n "$MODAL_SESSION_SUITES" ]; then
    section "modal: the Modal double"
    use_release_prefix
    local mstate mid msecret msecretfile
    mstate=$(mktemp -d /var/tmp/airlock-modal.XXXXXX)
    mid="ak-$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')"
    msecret="as-$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')"
    chown "$OTHER_USER" "$mstate"
    chmod 0755 "$mstate"
    install -d -m 0755 "$mstate/proto"
    install -m 0644 backends/modal.proto backends/modal_router.proto "$mstate/proto/"
    install -m 0755 tests/doubles/modal "$T/modal-double"
    # The secret in a file read at start and then removed: never in an argv.
    msecretfile=$(mktemp /var/tmp/airlock-modal-secret.XXXXXX)
    printf '%s\n' "$msecret" > "$msecretfile"
    chown "$OTHER_USER" "$msecretfile"
    (cd / && exec runuser -u "$OTHER_USER" -- env -i PATH=/usr/local/bin:/usr/bin:/bin \
       HOME="$mstate" MODAL_DOUBLE_PROTO_DIR="$mstate/proto" MODAL_DOUBLE_TOKEN_ID="$mid" \
       MODAL_DOUBLE_TOKEN_SECRET_FILE="$msecretfile" timeout -k 5 5400 "$T/modal-double" --port 0 \
       --airlock "$AIRLOCK" --state "$mstate/state") > "$T/modal-double.out" 2> "$T/modal-double.err" &
    local mpid=$! mport=
    for _ in $(seq 150); do
      mport=$(sed -n 's/^listening on 127\.0\.0\.1:\([0-9]*\)$/\1/p' "$T/modal-double.out")
      [ -z "$mport" ] || break
      sleep 0.1
    done
    rm -f "$msecretfile"
    if [ -n "$mport" ]; then
      export MODAL_DOUBLE_STATE="$mstate/state" MODAL_SERVER_URL="http://127.0.0.1:$mport"
      echo "the Modal double on 127.0.0.1:$mport (pid $mpid)"
      local suite
      for suite in $MODAL_SESSION_SUITES; do
        section "modal: $suite.bats (BACKEND=modal)"
        run_bats "modal $suite" "$suite" BACKEND=modal \
          BACKEND_ENV="MODAL_SERVER_URL=$MODAL_SERVER_URL MODAL_TOKEN_ID=$mid MODAL_TOKEN_SECRET=$msecret AIRLOCK_MODAL_LEASE=5"
      done
    else
      echo "FAILED: the Modal double did not start:"
      tail -n 20 "$T/modal-double.err"
      result "modal: the double" 1
    fi
    kill -TERM "$mpid" 2>/dev/null
    wait "$mpid" 2>/dev/null
    rm -rf "$mstate"
    unset MODAL_DOUBLE_STATE MODAL_SERVER_URL
  fi

  # The modal backend, managed mode, against the gateway double
  # (tests/doubles/modal-gateway), as the other user, its sandboxes airlock
  # local sandboxes; the token reaches it in a file, the client in its
  # environment.
  if [ -n "$MODAL_MANAGED_SESSION_SUITES" ]; then
    section "modal managed: the gateway double"
    use_release_prefix
    local gstate gtoken gpid gport=
    gstate=$(mktemp -d /var/tmp/airlock-modal-gw.XXXXXX)
    gtoken=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
    printf '%s\n' "$gtoken" > "$gstate/token"
    chmod 0600 "$gstate/token"
    chown -R "$OTHER_USER" "$gstate"
    chmod 0755 "$gstate"
    (cd / && exec runuser -u "$OTHER_USER" -- env -i PATH=/usr/local/bin:/usr/bin:/bin \
       HOME="$gstate" MODAL_GATEWAY_DOUBLE_TOKEN_FILE="$gstate/token" timeout -k 5 5400 \
       "$T/doubles/modal-gateway" --port 0 --airlock "$AIRLOCK" --state "$gstate/state") \
       > "$T/modal-gw.out" 2> "$T/modal-gw.err" &
    gpid=$!
    for _ in $(seq 150); do
      gport=$(sed -n 's/^listening on 127\.0\.0\.1:\([0-9]*\)$/\1/p' "$T/modal-gw.out")
      [ -z "$gport" ] || break
      sleep 0.1
    done
    if [ -n "$gport" ]; then
      export MODAL_GATEWAY_DOUBLE="http://127.0.0.1:$gport"
      echo "the gateway double on 127.0.0.1:$gport (pid $gpid)"
      local suite
      for suite in $MODAL_MANAGED_SESSION_SUITES; do
        section "modal managed: $suite.bats (BACKEND=modal, modal.mode managed)"
        run_bats "modal managed $suite" "$suite" BACKEND=modal MODAL_MODE=managed \
          BACKEND_ENV="AIRLOCK_MODAL_MODE=managed MODAL_GATEWAY_URL=$MODAL_GATEWAY_DOUBLE TOOL_GATEWAY_USER_TOKEN=$gtoken"
      done
    else
      echo "FAILED: the gateway double did not start:"
      tail -n 20 "$T/modal-gw.err"
      result "modal managed: the double" 1
    fi
    kill -TERM "$gpid" 2>/dev/null
    wait "$gpid" 2>/dev/null
    rm -rf "$gstate"
    unset MODAL_GATEWAY_DOUBLE
  fi

  # The Modal gRPC double (tests/doubles/modal) and the official JavaScript
  # SDK against it, and the managed gateway's double: each bats file starts
  # and stops its own double, as the other user, its sandboxes airlock
  # local sandboxes.
  if [ -n "$MODAL_SUITES" ]; then
    use_release_prefix
    local msuite
    for msuite in $MODAL_SUITES; do
      section "modal: $msuite.bats"
      run_bats "modal $msuite" "$msuite"
    done
  fi
}

# A stream's counts and failures, for the summary.
save_tally () { # file
  { echo "$passed $failed $skipped"; printf '%s\n' "${failures[@]}"; } > "$1"
}
load_tally () { # file
  local p f s line
  { read -r p f s
    passed=$((passed + p)) failed=$((failed + f)) skipped=$((skipped + s))
    while IFS= read -r line; do [ -n "$line" ] && failures+=("$line"); done
  } < "$1"
}

TEST_USER=${TEST_USER:-airlock-test}
OTHER_USER=${OTHER_USER:-airlock-other}
BACKENDS_TEST_USER=${BACKENDS_TEST_USER:-${TEST_USER}b}
BACKENDS_OTHER_USER=${BACKENDS_OTHER_USER:-${OTHER_USER}b}
CLOUD_TEST_USER=${CLOUD_TEST_USER:-${TEST_USER}c}
CLOUD_OTHER_USER=${CLOUD_OTHER_USER:-${OTHER_USER}c}
DOCKER_SUITES=${DOCKER_SUITES-sessions pty files spool hygiene lifecycle api docker}
SSH_SUITES=${SSH_SUITES-sessions spool hygiene lifecycle api ssh files pty}
SINGULARITY_SUITES=${SINGULARITY_SUITES-sessions pty singularity files}
DAYTONA_SUITES=${DAYTONA_SUITES-daytona-double sessions files daytona daytona-exec pty}
MODAL_SUITES=${MODAL_SUITES-modal-double modal modal-gateway modal-managed}
MODAL_MANAGED_SESSION_SUITES=${MODAL_MANAGED_SESSION_SUITES-sessions files}
MODAL_SESSION_SUITES=${MODAL_SESSION_SUITES-sessions modal-exec files pty}
SINGULARITY_MODE=${SINGULARITY_MODE:-unprivileged}
export BUILDDIR FUZZ_SECONDS

TOP=$T # each stream sets T to its own directory under it
if [ "${PARALLEL:-1}" = 1 ]; then
  section "three streams side by side: the local sandbox ($T/local.log), the other backends ($T/backends.log), the cloud backends' doubles ($T/cloud.log)"
  ( passed=0 failed=0 skipped=0 failures=()
    stream_local "$T/l" > "$T/local.log" 2>&1; save_tally "$TOP/local.tally" ) &
  local_pid=$!
  ( passed=0 failed=0 skipped=0 failures=()
    stream_backends "$T/b" > "$T/backends.log" 2>&1; save_tally "$TOP/backends.tally" ) &
  backends_pid=$!
  ( passed=0 failed=0 skipped=0 failures=()
    stream_cloud "$T/c" > "$T/cloud.log" 2>&1; save_tally "$TOP/cloud.tally" ) &
  cloud_pid=$!
  wait "$local_pid" "$backends_pid" "$cloud_pid"
  for s in local backends cloud; do
    section "stream $s (its sections' times count from the start of the run)"
    cat "$T/$s.log"
    if [ -f "$T/$s.tally" ]; then load_tally "$T/$s.tally"; else result "stream $s" 1; fi
  done
else
  ( passed=0 failed=0 skipped=0 failures=()
    stream_local "$T/l"; save_tally "$TOP/local.tally" )
  ( passed=0 failed=0 skipped=0 failures=()
    stream_backends "$T/b"; save_tally "$TOP/backends.tally" )
  ( passed=0 failed=0 skipped=0 failures=()
    stream_cloud "$T/c"; save_tally "$TOP/cloud.tally" )
  for s in local backends cloud; do
    if [ -f "$T/$s.tally" ]; then load_tally "$T/$s.tally"; else result "stream $s" 1; fi
  done
fi

echo
if [ ${#failures[@]} -gt 0 ]; then
  echo "Failed:"
  printf '  %s\n' "${failures[@]}"
fi
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" = 0 ]
