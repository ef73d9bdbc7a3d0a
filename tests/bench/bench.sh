#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# `make bench`: what airlock costs, side by side with the obvious baselines,
# in one run:
#   0. the command-line client's start (`airlock --version`) against
#      /bin/true;
#   1. per command in a warm local session (`airlock exec S -- true`, and the
#      same through one `airlock serve` JSON-API connection) against spawning
#      `bash -c true` directly, and against the original's per-command
#      wrapper (hermes-agent: source a snapshot, eval, `export -p` + mv,
#      `pwd -P`), emulated unsandboxed from its description;
#   2. creating a sandbox (`airlock run -- true` with the setuid helper and
#      with the unprivileged one, `airlock session open`/`close` by the CLI
#      and by the API) against `bwrap --unshare-all --die-with-parent
#      --new-session --ro-bind / / --proc /proc --dev /dev true`, and the
#      peers an agent would pick instead when `make bench-peers` installed
#      them: Anthropic's `srt -c true`, OpenAI's `codex sandbox -- true`;
#   3. per command in a warm docker session (CLI and API) against
#      `docker exec CONTAINER true` on the same container, and a docker
#      session's open (+ close) against `docker run --rm IMAGE true`, when a
#      dockerd answers (the test image is built by tests/docker/make-image.sh);
#   4. files: `airlock cp TREE bench:DIR` of 500 small files into the warm
#      local session against `cp -r TREE` into its workdir (N_FILES rounds);
#   6. per command in a warm daytona session (CLI and API) against one
#      bare toolbox call that runs `true` (POST /process/execute), and 500
#      small files up with `airlock cp` against one bare bulk-upload of
#      their tar, both against the Daytona double (tests/doubles/daytona,
#      started by the worker on 127.0.0.1: it measures airlock's protocol
#      and the double's costs, not Daytona's network);
#   5. per command in a warm ssh session (CLI and API) against plain
#      `ssh -o ControlPath=MASTER host true` over the session's own master,
#      and an upload of 500 small files with `airlock cp` against `scp -r`
#      over that master, against a per-run sshd on 127.0.0.1
#      (tests/ssh/sshd.sh; as root only: it creates the remote user);
# then issue 11's and issue 12's goals, each ratio met or not.  Prints n, median, mean,
# p95, min and max in ms, and ratios to the baseline.  The series of a
# table are interleaved (one of each per round) so drift hits them alike; a
# few warm-up rounds are not counted.
#
# Prints figures, never fails: timing, a missing bwrap or peer, a sandbox
# that cannot start are all reported and the exit status is 0.  Exit status
# 2 only when the build (BUILDDIR) is missing.
#
# As root, everything measured runs as the unprivileged system user
# airlock-bench (created if missing, and removed again when this run created
# it), from a private 0755 prefix under /tmp holding a copy of the build
# with the helper setuid root; missing bwrap is installed (Debian package
# bubblewrap).  As a normal user, the same as that user (the helper then
# uses unprivileged user namespaces).  Either way the whole measurement
# runs in one process as that user (no runuser/sudo per run), with a
# private XDG_RUNTIME_DIR and its own daemon, which is stopped by its pid
# at the end.
#
# Environment: BENCH_ONLY (ssh: only table 5 and issue 12's goals, as when
# working on the ssh backend), BUILDDIR (build), N_EXEC (200), N_OPEN (20), N_FILES (10),
# N_DAYTONA (40), WARMUP (5), BENCH_USER (airlock-bench; root only), BENCH_SSH_USER (the
# remote user, created for the run: airlock-sshb plus BENCH_USER's suffix),
# BENCH_TIMEOUT (seconds, 1200).
set -u
export LC_ALL=C
SELF=$(readlink -f "$0")

posint () { # value, default
  case $1 in ''|*[!0-9]*|0) echo "$2" ;; *) echo "$1" ;; esac
}

# ======================================================================
# The outer part: checks, user, prefix, bwrap; then the worker; cleanup.
# ======================================================================

T='' RUN_USER='' CREATED_USER=0 DOCKER_NOTE='' SSH_NOTE=''
DOCKER_CLI=/usr/bin/docker
DOCKER_IMAGE=airlock-test:latest

is_our_daemon () { # pid: the daemon the worker started, in our prefix
  [[ $1 =~ ^[0-9]+$ ]] || return 1
  case "$(tr '\0' ' ' < "/proc/$1/cmdline" 2>/dev/null)" in
    "$T/bin/airlock daemon "|"airlock daemon ") ;;
    *) return 1 ;;
  esac &&
    grep -qzx "XDG_RUNTIME_DIR=$T/xdg" "/proc/$1/environ" 2>/dev/null
}

cleanup () {
  local pid i
  if [ -n "$T" ] && [ -r "$T/xdg/bench-daemon.pid" ]; then
    pid=$(head -c 20 "$T/xdg/bench-daemon.pid")
    if is_our_daemon "$pid"; then
      kill -TERM "$pid" 2>/dev/null
      for i in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null
    fi
  fi
  # The sshd and its remote users (the daemon, gone now, closed its
  # session and master).
  [ -n "$T" ] && [ -e "$T/sshd" ] && "$(dirname "$SELF")/../ssh/sshd.sh" remove "$T/sshd"
  [ -n "$T" ] && rm -rf "$T"
  [ -n "${PEER_HOME:-}" ] && rm -rf "$PEER_HOME"
  if [ "$CREATED_USER" = 1 ]; then
    for i in $(seq 30); do pgrep -u "$RUN_USER" >/dev/null || break; sleep 0.1; done
    if pgrep -u "$RUN_USER" >/dev/null; then
      echo "bench: user $RUN_USER still has processes; not removed" >&2
    else
      userdel "$RUN_USER" 2>/dev/null || echo "bench: could not remove user $RUN_USER" >&2
    fi
  fi
}

main () {
  cd "$(dirname "$SELF")/../.." || exit 2
  local root b rc
  root=$(pwd)
  BUILDDIR=${BUILDDIR:-build}
  case $BUILDDIR in /*) ;; *) BUILDDIR=$root/$BUILDDIR ;; esac
  local missing=()
  for b in airlock airlock-helper airlock-supervisor; do
    [ -x "$BUILDDIR/$b" ] || missing+=("$BUILDDIR/$b")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    echo "bench: the build is missing: ${missing[*]} (run make first)" >&2
    exit 2
  fi
  N_EXEC=$(posint "${N_EXEC:-}" 200)
  N_OPEN=$(posint "${N_OPEN:-}" 20)
  N_FILES=$(posint "${N_FILES:-}" 10)
  WARMUP=$(posint "${WARMUP:-}" 5)
  BENCH_TIMEOUT=$(posint "${BENCH_TIMEOUT:-}" 1200)
  BWRAP_NOTE=''

  trap cleanup EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
  if ! T=$(mktemp -d /tmp/airlock-bench.XXXXXX); then
    T=''
    echo "bench: cannot create a prefix under /tmp; nothing measured"
    exit 0
  fi
  chmod 0755 "$T"

  if [ "$(id -u)" = 0 ]; then
    RUN_USER=${BENCH_USER:-airlock-bench}
    if ! id "$RUN_USER" >/dev/null 2>&1; then
      if useradd --system --no-create-home --shell /usr/sbin/nologin "$RUN_USER"; then
        CREATED_USER=1
      else
        echo "bench: cannot create the user $RUN_USER; nothing measured"
        exit 0
      fi
    fi
    if ! command -v bwrap >/dev/null; then
      if command -v apt-get >/dev/null; then
        echo "bench: bwrap is missing: installing the Debian package bubblewrap"
        export DEBIAN_FRONTEND=noninteractive
        apt-get install -y -q bubblewrap > "$T/apt.log" 2>&1 ||
          { apt-get update -q >> "$T/apt.log" 2>&1 &&
            apt-get install -y -q bubblewrap >> "$T/apt.log" 2>&1; }
        command -v bwrap >/dev/null ||
          BWRAP_NOTE="apt-get install bubblewrap failed: $(tail -n 1 "$T/apt.log")"
      else
        BWRAP_NOTE="bwrap is not installed and there is no apt-get to install bubblewrap"
      fi
    fi
  else
    RUN_USER=$(id -un)
    command -v bwrap >/dev/null ||
      BWRAP_NOTE="bwrap is not installed (Debian: apt-get install bubblewrap; make bench as root installs it)"
  fi

  # docker: a reachable dockerd, the test image, and a user who may use
  # the socket (root-equivalent: only a user this run created is added to
  # group docker, and it is removed again at the end).
  if [ ! -x "$DOCKER_CLI" ]; then
    DOCKER_NOTE="no docker CLI at $DOCKER_CLI (Debian package docker.io)"
  elif ! "$DOCKER_CLI" info > /dev/null 2>&1; then
    DOCKER_NOTE="no dockerd answers (start it: dockerd, or systemctl start docker)"
  elif [ "$(id -u)" = 0 ] && ! "$(dirname "$SELF")/../docker/make-image.sh" "$DOCKER_IMAGE" > "$T/image.log" 2>&1; then
    DOCKER_NOTE="the test image cannot be built: $(tail -n 1 "$T/image.log")"
  elif [ "$(id -u)" = 0 ] && ! id -nG "$RUN_USER" | grep -qw docker; then
    if [ "$CREATED_USER" = 1 ]; then
      usermod -aG docker "$RUN_USER" || DOCKER_NOTE="cannot add $RUN_USER to group docker"
    else
      DOCKER_NOTE="$RUN_USER is not in group docker (not changed for an existing user)"
    fi
  fi

  # ssh: our own sshd on 127.0.0.1 with a remote user of its own, and the
  # measured user as the client (its key, a known_hosts with the host key).
  local -A SSHV=()
  if [ "$(id -u)" != 0 ]; then
    SSH_NOTE="needs root, to start a test sshd with a remote user (tests/ssh/sshd.sh)"
  elif [ ! -x /usr/sbin/sshd ]; then
    SSH_NOTE="no /usr/sbin/sshd (Debian package openssh-server)"
  else
    local ssh_user=${BENCH_SSH_USER:-}
    if [ -z "$ssh_user" ]; then
      case $RUN_USER in
        airlock-bench*) ssh_user=airlock-sshb${RUN_USER#airlock-bench} ;;
        *) ssh_user=airlock-sshb ;;
      esac
    fi
    if "$(dirname "$SELF")/../ssh/sshd.sh" start "$T/sshd" "$RUN_USER" "$ssh_user" > "$T/sshd-start.log" 2>&1; then
      local k v
      while IFS='=' read -r k v; do SSHV[$k]=$v; done < "$T/sshd/env"
    else
      SSH_NOTE="the test sshd did not start: $(tail -n 1 "$T/sshd-start.log")"
    fi
  fi

  # The private prefix: a copy of the build, a workspace, a runtime dir.
  # As root the helper is installed setuid there (the usual install; the
  # prefix is root's and 0755), with an unprivileged copy beside it.
  mkdir -p "$T/bin" "$T/libexec/airlock" "$T/work" "$T/xdg" "$T/home"
  install -m 0755 "$BUILDDIR/airlock" "$T/bin/airlock" &&
    install -m 0755 "$BUILDDIR/airlock-helper" "$T/libexec/airlock/airlock-helper" &&
    install -m 0755 "$BUILDDIR/airlock-helper" "$T/libexec/airlock/airlock-helper-userns" &&
    install -m 0755 "$BUILDDIR/airlock-supervisor" "$T/libexec/airlock/airlock-supervisor" &&
    install -D -m 0644 policy/default.rules "$T/share/airlock/default.rules" &&
    install -m 0644 "$SELF" "$T/bench.sh" &&
    install -D -m 0755 tests/doubles/daytona "$T/doubles/daytona" &&
    install -m 0755 tests/doubles/daytona-agent "$T/doubles/daytona-agent" ||
    { echo "bench: cannot copy the build into $T; nothing measured"; exit 0; }
  if [ -x "$BUILDDIR/airlock-daemon" ]; then
    install -m 0755 "$BUILDDIR/airlock-daemon" "$T/libexec/airlock/airlock-daemon" ||
      { echo "bench: cannot copy the build into $T; nothing measured"; exit 0; }
  fi
  if [ "$(id -u)" = 0 ]; then
    chown root:root "$T/libexec/airlock/airlock-helper" && chmod 4755 "$T/libexec/airlock/airlock-helper"
  fi
  chmod 0700 "$T/xdg"
  if [ "$(id -u)" = 0 ]; then
    chown "$RUN_USER" "$T/work" "$T/xdg" "$T/home"
  fi

  # The peers (make bench-peers): run from where they were installed, by
  # a user who can reach them, with a home outside /tmp (codex refuses to
  # put its helper links under a temporary directory).
  PEERS_NOTE='' PEERS_BIN=$BUILDDIR/peers/node_modules/.bin PEER_HOME=''
  if [ ! -x "$PEERS_BIN/srt" ] || [ ! -x "$PEERS_BIN/codex" ]; then
    PEERS_NOTE="not installed (make bench-peers installs them into $BUILDDIR/peers)"
  elif [ "$(id -u)" = 0 ] && ! runuser -u "$RUN_USER" -- test -x "$PEERS_BIN/srt"; then
    PEERS_NOTE="$RUN_USER cannot reach $PEERS_BIN"
  elif ! PEER_HOME=$(mktemp -d /var/tmp/airlock-bench-home.XXXXXX); then
    PEER_HOME='' PEERS_NOTE="cannot create a home for them under /var/tmp"
  else
    [ "$(id -u)" = 0 ] && chown "$RUN_USER" "$PEER_HOME"
  fi

  local cmd=(env -i PATH=/usr/local/bin:/usr/bin:/bin LC_ALL=C
    HOME="$T/home" XDG_CONFIG_HOME="$T/home/.config" XDG_RUNTIME_DIR="$T/xdg"
    AIRLOCK_HELPER="$T/libexec/airlock/airlock-helper"
    AIRLOCK_SUPERVISOR="$T/libexec/airlock/airlock-supervisor"
    AIRLOCK_DAEMON="$T/libexec/airlock/airlock-daemon"
    AIRLOCK_DEFAULT_RULES="$T/share/airlock/default.rules"
    PEERS_NOTE="$PEERS_NOTE" PEERS_BIN="$PEERS_BIN" PEER_HOME="$PEER_HOME"
    AIRLOCK_DAEMON_IDLE_EXIT=60
    BENCH_T="$T" BENCH_BUILDDIR="$BUILDDIR" BENCH_ROOT_RUN="$([ "$(id -u)" = 0 ] && echo 1)"
    BENCH_ONLY="${BENCH_ONLY:-}" N_DAYTONA="$(posint "${N_DAYTONA:-}" 40)" N_EXEC="$N_EXEC" N_OPEN="$N_OPEN" N_FILES="$N_FILES" WARMUP="$WARMUP" BWRAP_NOTE="$BWRAP_NOTE"
    SSH_NOTE="$SSH_NOTE" SSHD_PORT="${SSHV[SSHD_PORT]:-}" SSH_USER="${SSHV[SSH_USER]:-}"
    SSH_KEY="${SSHV[SSH_KEY]:-}" SSH_KNOWN_HOSTS="${SSHV[SSH_KNOWN_HOSTS]:-}" SSH_WORKDIR="${SSHV[SSH_WORKDIR]:-}"
    DOCKER_NOTE="$DOCKER_NOTE" AIRLOCK_DOCKER_IMAGE="$DOCKER_IMAGE" AIRLOCK_DOCKER_PULL=false
    bash "$T/bench.sh" --worker)
  [ "$(id -u)" = 0 ] && cmd=(runuser -u "$RUN_USER" -- "${cmd[@]}")
  (cd "$T/work" && timeout --foreground -k 10 "$BENCH_TIMEOUT" "${cmd[@]}")
  rc=$?
  case $rc in
    0) ;;
    124|137) echo "bench: stopped after ${BENCH_TIMEOUT}s (BENCH_TIMEOUT); the figures are incomplete" ;;
    *) echo "bench: the measurement ended early (status $rc); the figures are incomplete" ;;
  esac
  exit 0
}

# ======================================================================
# The worker: runs as the measured user, in $T/work, and prints the tables.
# ======================================================================

declare -A DATA FAIL FSTATUS
COUNTING=0

# One sample: start and end of $EPOCHREALTIME, and the status.  Failed runs
# are counted apart and left out of the figures.
record () { # key t0 t1 status
  ((COUNTING)) || return 0
  if [ "$4" = 0 ]; then
    DATA[$1]+="$(( ${3//[.,]/} - ${2//[.,]/} )) "
  else
    FAIL[$1]=$(( ${FAIL[$1]:-0} + 1 ))
    : "${FSTATUS[$1]:=$4}"
  fi
}

# Time one command (its stdout discarded, its stderr kept for the report).
timed () { # key command...
  local key=$1 t0 t1 rc
  shift
  t0=$EPOCHREALTIME
  "$@" > /dev/null 2>> "$R/err.$key"
  rc=$?
  t1=$EPOCHREALTIME
  record "$key" "$t0" "$t1" "$rc"
  return "$rc"
}

# ---- the JSON API through one `airlock serve` connection ----
# (The coproc is named API, so bash owns API_PID: ours is SERVE_PID.)
API_IN='' API_OUT='' SERVE_PID='' API_ID=0 API_LAST=''

api_start () {
  coproc API { exec "$AL" serve 2>> "$R/serve.log"; }
  API_IN=${API[1]} API_OUT=${API[0]} SERVE_PID=$API_PID
}

# Send one request and wait for its answer (for exec: its result event).
# Status 0 when it succeeded (for exec: exit code 0).
api () { # json-without-id
  local line
  [ -n "$SERVE_PID" ] && kill -0 "$SERVE_PID" 2>/dev/null || { API_LAST="the serve connection is gone"; return 1; }
  API_ID=$((API_ID + 1))
  printf '{"id":%d,%s\n' "$API_ID" "${1#\{}" >&"$API_IN" ||
    { API_LAST="cannot write to airlock serve"; return 1; }
  while IFS= read -r -t 60 line <&"$API_OUT"; do
    # (an answer to an earlier request that gave up waiting is not ours)
    [[ $line == '{"id":'"$API_ID"[,}]* ]] || continue
    case $line in
      *'"event":"output"'*|*'"event":"started"'*) ;;
      *'"event":"result"'*) API_LAST=$line; [[ $line == *'"exit_code":0,'* ]]; return ;;
      *'"ok":true'*) API_LAST=$line; return 0 ;;
      *) API_LAST=$line; return 1 ;;
    esac
  done
  API_LAST="no answer from airlock serve within 60 s"
  return 1
}

api_timed () { # key json
  local t0 t1 rc
  t0=$EPOCHREALTIME
  api "$2"
  rc=$?
  t1=$EPOCHREALTIME
  record "$1" "$t0" "$t1" "$rc"
  [ "$rc" = 0 ] || echo "$API_LAST" >> "$R/err.$1"
  return "$rc"
}

# One session opened and closed through the API: the open timed as
# open-key, open + close as cycle-key.
api_open_close () { # open-key cycle-key session open-json
  local t0 t1 t2 rc1 rc2
  t0=$EPOCHREALTIME
  api "$4"
  rc1=$?
  [ "$rc1" = 0 ] || echo "$API_LAST" | tee -a "$R/err.$1" >> "$R/err.$2"
  t1=$EPOCHREALTIME
  api '{"op":"close","session":"'"$3"'"}'
  rc2=$?
  [ "$rc2" = 0 ] || echo "$API_LAST" >> "$R/err.$2"
  t2=$EPOCHREALTIME
  record "$1" "$t0" "$t1" "$rc1"
  record "$2" "$t0" "$t2" "$((rc1 || rc2))"
}

api_stop () {
  [ -n "$SERVE_PID" ] || return 0
  eval "exec $API_IN>&- $API_OUT<&-"
  local i
  for i in $(seq 30); do kill -0 "$SERVE_PID" 2>/dev/null || break; sleep 0.1; done
  kill -0 "$SERVE_PID" 2>/dev/null && kill -TERM "$SERVE_PID" 2>/dev/null
  wait "$SERVE_PID" 2>/dev/null
  SERVE_PID=''
}

# ---- figures ----

# S_N S_MEAN S_MED S_P95 S_MIN S_MAX (µs) of a series.
stats () { # key
  S_N=0 S_MEAN='' S_MED='' S_P95='' S_MIN='' S_MAX=''
  [ -n "${DATA[$1]:-}" ] || return 0
  read -r S_N S_MEAN S_MED S_P95 S_MIN S_MAX < <(printf '%s\n' ${DATA[$1]} | sort -n | awk '
    { v[NR] = $1; s += $1 }
    END {
      med = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
      i = int(0.95 * NR); if (i < 0.95 * NR) i++
      printf "%d %.1f %.1f %.1f %.1f %.1f\n", NR, s / NR, med, v[i], v[1], v[NR]
    }')
}

ms () { awk -v u="$1" 'BEGIN { printf "%.2f", u / 1000 }'; }
ratio () { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2fx", a / b; else printf "-" }'; }

TABLE_FMT='%-50s %4s %8s %8s %8s %8s %8s %9s %9s'

table_head () { # title
  printf '\n== %s\n' "$1"
  printf "$TABLE_FMT\n" "" n median mean p95 min max "x median" "x mean"
}

row () { # label key baseline-key
  local label=$1 key=$2 base=$3 note='' first bmean='' bmed=''
  if [ -n "$base" ]; then
    stats "$base"
    bmean=$S_MEAN bmed=$S_MED
  fi
  stats "$key"
  if [ "${FAIL[$key]:-0}" -gt 0 ]; then
    note="${FAIL[$key]} failed (first: status ${FSTATUS[$key]})"
    first=$(grep -v '^$' "$R/err.$key" 2>/dev/null | head -n 1 | cut -c 1-100)
    [ -n "$first" ] && note+=": $first"
  fi
  if [ "$S_N" = 0 ]; then
    printf "$TABLE_FMT  %s\n" "$label" 0 - - - - - - - "$note"
    return
  fi
  local rm=- rd=-
  if [ -n "$bmean" ]; then
    if [ "$key" = "$base" ]; then rm=baseline rd=baseline
    else rm=$(ratio "$S_MEAN" "$bmean"); rd=$(ratio "$S_MED" "$bmed"); fi
  fi
  printf "$TABLE_FMT" "$label" "$S_N" "$(ms "$S_MED")" "$(ms "$S_MEAN")" \
    "$(ms "$S_P95")" "$(ms "$S_MIN")" "$(ms "$S_MAX")" "$rd" "$rm"
  [ -n "$note" ] && printf '  %s' "$note"
  echo
}

# One line of the goals table: median of key over median of base, against
# the goal (a ratio: at most goal).
GOALS=''
goal () { # label key base goal
  local km bm r verdict
  stats "$2"; km=$S_MED
  stats "$3"; bm=$S_MED
  if [ -z "$km" ] || [ -z "$bm" ]; then
    GOALS+=$(printf '%-58s %9s %8s  %s' "$1" - "<= $4x" "not measured")$'\n'
    return
  fi
  r=$(awk -v a="$km" -v b="$bm" 'BEGIN { printf "%.2f", a / b }')
  verdict=$(awk -v r="$r" -v g="$4" 'BEGIN { print (r <= g) ? "met" : "not met" }')
  GOALS+=$(printf '%-58s %8sx %8s  %s' "$1" "$r" "<= $4x" "$verdict")$'\n'
}

# The original's per-command wrapper (hermes-agent's local backend, as
# ../shared/reference describes it): source the snapshot, cd, eval the
# command, dump `export -p` to a temporary file and mv it over the
# snapshot, write `pwd -P` to a file and a marker with $(pwd -P).  Written
# here from that description, run unsandboxed as the original did.
orig_wrapper () { # dir
  local d=$1
  cat <<EOF
source '$d/snap.sh' >/dev/null 2>&1 || true
builtin cd -- '$WORK' || exit 126
eval 'true'
__ec=\$?
umask 077
{ export -p > '$d/snap.sh.tmp.'\$BASHPID && mv -f '$d/snap.sh.tmp.'\$BASHPID '$d/snap.sh'; } 2>/dev/null || rm -f '$d/snap.sh.tmp.'\$BASHPID 2>/dev/null || true
pwd -P > '$d/cwd' 2>/dev/null || true
printf '\n__CWD_bench__%s__CWD_bench__\n' "\$(pwd -P)"
exit \$__ec
EOF
}

# The ssh master of this worker's daemon: its ControlPath, from ps
# ("ssh: PATH [mux]"), in our runtime directory.
ssh_master_path () {
  local p
  for p in $(pgrep -u "$(id -u)" -f "^ssh: $R/"); do
    ps -o args= -p "$p" | sed -n 's/^ssh: \(.*\) \[mux\] *$/\1/p'
  done | head -n 1
}

worker () {
  T=$BENCH_T
  AL=$T/bin/airlock
  WORK=$T/work
  R=$XDG_RUNTIME_DIR
  trap '' PIPE
  local BW=(bwrap --unshare-all --die-with-parent --new-session --ro-bind / / --proc /proc --dev /dev true)
  local out i DPID='' daemon_ok=0 session_ok=0 run_ok=0 run_userns_ok=0 bwrap_ok=0
  local SETUID_HELPER=$T/libexec/airlock/airlock-helper USERNS_HELPER=$T/libexec/airlock/airlock-helper-userns

  # ---- what we run on ----
  local cpu mem mode
  cpu=$(awk -F': *' '/^model name/ { print $2; exit }' /proc/cpuinfo 2>/dev/null)
  mem=$(awk '/^MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo 2>/dev/null)
  if [ -u "$SETUID_HELPER" ]; then mode="setuid root (a copy in the private prefix)"
  else mode="not setuid, no file capabilities (unprivileged user namespaces)"; fi
  echo "airlock benchmark, $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
  echo "  machine: $(uname -srm), nproc $(nproc), ${cpu:-cpu unknown}, ${mem:-memory unknown}"
  echo "  airlock: $("$AL" --version 2>&1 | head -n 1), build $BENCH_BUILDDIR, copied to $T"
  echo "  airlock: ldd bin/airlock: $(ldd "$AL" 2>/dev/null | grep -c '=>') shared libraries"
  echo "  helper:  $mode"
  echo "  user:    $(id -un) (uid $(id -u))$([ -n "$BENCH_ROOT_RUN" ] && echo ", started by root"), private XDG_RUNTIME_DIR, its own daemon"
  echo "  bash:    $BASH_VERSION; timing: \$EPOCHREALTIME around each run, in this one bash process"

  if [ -z "$BWRAP_NOTE" ]; then
    if ! command -v bwrap >/dev/null; then
      BWRAP_NOTE="bwrap is not on PATH"
    elif ! out=$("${BW[@]}" 2>&1); then
      BWRAP_NOTE="bwrap cannot run here as $(id -un): $(echo "$out" | head -n 1)"
    else
      bwrap_ok=1
    fi
  fi
  if ((bwrap_ok)); then
    echo "  bwrap:   $(bwrap --version 2>&1 | head -n 1) ($(command -v bwrap)$([ -u "$(command -v bwrap)" ] && echo ", setuid"))"
  else
    echo "  bwrap:   comparison skipped: $BWRAP_NOTE"
  fi

  # The peers, when make bench-peers installed them and they run here.
  local SRT=() CODEX=() srt_ok=0 codex_ok=0
  if [ -n "$PEERS_NOTE" ]; then
    echo "  peers:   srt and codex skipped: $PEERS_NOTE"
  else
    SRT=(env HOME="$PEER_HOME" "$PEERS_BIN/srt" -c true)
    CODEX=(env HOME="$PEER_HOME" "$PEERS_BIN/codex" sandbox -- true)
    if out=$("${SRT[@]}" 2>&1); then srt_ok=1
      echo "  srt:     Anthropic sandbox-runtime $("$PEERS_BIN/srt" --version 2>&1 | head -n 1) ($PEERS_BIN/srt -c true)"
    else echo "  srt:     skipped: srt -c true failed here: $(echo "$out" | tail -n 1 | cut -c 1-120)"; fi
    if out=$("${CODEX[@]}" 2>&1); then codex_ok=1
      echo "  codex:   $(env HOME="$PEER_HOME" "$PEERS_BIN/codex" --version 2>&1 | tail -n 1) ($PEERS_BIN/codex sandbox -- true)"
    else echo "  codex:   skipped: codex sandbox -- true failed here: $(echo "$out" | tail -n 1 | cut -c 1-120)"; fi
  fi

  # ---- our daemon, started here so that we know its pid ----
  "$AL" daemon >> "$R/daemon.log" 2>&1 &
  DPID=$!
  echo "$DPID" > "$R/bench-daemon.pid"
  for i in $(seq 100); do
    [ -S "$R/airlock/daemon.sock" ] && { daemon_ok=1; break; }
    kill -0 "$DPID" 2>/dev/null || break
    sleep 0.05
  done
  if ((daemon_ok)); then
    api_start
    if out=$("$AL" session open bench --workdir "$WORK" 2>&1); then
      session_ok=1
    else
      echo "  session: airlock session open failed: $out"
    fi
  else
    echo "  daemon:  airlock daemon did not start: $(tail -n 1 "$R/daemon.log" 2>/dev/null)"
  fi
  if out=$("$AL" run -v -- true 2>&1); then
    run_ok=1
    echo "  sandbox: $(echo "$out" | grep -o 'limits: .*' | head -n 1)"
  else
    echo "  sandbox: airlock run -- true failed here: $(echo "$out" | tail -n 1)"
  fi
  if [ -u "$SETUID_HELPER" ] && [ -x "$USERNS_HELPER" ] &&
     AIRLOCK_HELPER=$USERNS_HELPER "$AL" run -- true > /dev/null 2>&1; then
    run_userns_ok=1
  fi

  echo "  rounds:  $N_EXEC (commands) and $N_OPEN (sandboxes), after $WARMUP warm-up rounds each"

  # The original's wrapper: its snapshot starts as this shell's exports.
  local ORIG="$R/orig" WRAP
  mkdir -p "$ORIG" && export -p > "$ORIG/snap.sh"
  WRAP=$(orig_wrapper "$ORIG")

  local rounds
  if [ "$BENCH_ONLY" != ssh ]; then
    # ---- 0 and 1. the CLI's start, and one command in a warm session ----
    rounds=$((WARMUP + N_EXEC))
    for ((i = 0; i < rounds; i++)); do
      ((COUNTING = i >= WARMUP))
      timed true /bin/true
      timed version "$AL" --version
      timed bash bash -c true
      timed orig bash -c "$WRAP"
      if ((session_ok)); then
        timed cli "$AL" exec bench -- true
        api_timed api '{"op":"exec","session":"bench","command":"true"}'
      fi
    done

    # ---- 2. a fresh sandbox ----
    local t0 t1 t2 rc1 rc2
    rounds=$((WARMUP + N_OPEN))
    for ((i = 0; i < rounds; i++)); do
      ((COUNTING = i >= WARMUP))
      ((bwrap_ok)) && timed bwrap "${BW[@]}"
      ((run_ok)) && timed run "$AL" run -- true
      ((run_userns_ok)) && AIRLOCK_HELPER=$USERNS_HELPER timed run_userns "$AL" run -- true
      ((srt_ok)) && timed srt "${SRT[@]}"
      ((codex_ok)) && timed codex "${CODEX[@]}"
      if ((session_ok)); then
        t0=$EPOCHREALTIME
        "$AL" session open fresh --workdir "$WORK" > /dev/null 2>> "$R/err.open_cli"
        rc1=$?
        t1=$EPOCHREALTIME
        "$AL" session close fresh > /dev/null 2>> "$R/err.close_cli"
        rc2=$?
        t2=$EPOCHREALTIME
        record open_cli "$t0" "$t1" "$rc1"
        record close_cli "$t1" "$t2" "$rc2"
        [ "$rc1" = 0 ] || cat "$R/err.open_cli" >> "$R/err.cycle_cli"
        [ "$rc2" = 0 ] || cat "$R/err.close_cli" >> "$R/err.cycle_cli"
        record cycle_cli "$t0" "$t2" "$((rc1 || rc2))"

        api_open_close open_api cycle_api fresh-api '{"op":"open","session":"fresh-api","workdir":"'"$WORK"'"}'
      fi
    done

    # ---- 4. files: 500 small files into the warm local session ----
    if ((session_ok)); then
      local tree="$R/tree" k
      mkdir -p "$tree/sub"
      for k in $(seq 500); do printf 'file %d\n' "$k" > "$tree/$([ $((k % 2)) = 0 ] && echo sub/)f$k"; done
      rounds=$((2 + N_FILES))
      for ((i = 0; i < rounds; i++)); do
        ((COUNTING = i >= 2))
        timed fcp cp -r "$tree" "$WORK/bench-cp"
        timed fup "$AL" cp "$tree" bench:bench-up
        rm -rf "$WORK/bench-cp" "$WORK/bench-up"
      done
      rm -rf "$tree"
    fi

  fi

  # ---- 3. docker: one command in a warm session, and a fresh one ----
  local docker_ok=0 container=''
  [ "$BENCH_ONLY" != ssh ] || DOCKER_NOTE="BENCH_ONLY=ssh"
  if ((daemon_ok)) && [ -z "$DOCKER_NOTE" ]; then
    if api '{"op":"open","session":"dbench","workdir":"'"$WORK"'","backend":"docker"}'; then
      container=$("$DOCKER_CLI" ps -q --filter "label=airlock.owner=$R/airlock" \
                    --filter label=airlock.session=dbench 2>&1)
      if [ -n "$container" ] && "$DOCKER_CLI" exec "$container" true > /dev/null 2>&1; then
        docker_ok=1
      else
        DOCKER_NOTE="docker exec on the session's container failed: $container"
      fi
    else
      DOCKER_NOTE="the docker session did not open: $API_LAST"
    fi
  fi
  if ((docker_ok)); then
    rounds=$((WARMUP + N_EXEC))
    for ((i = 0; i < rounds; i++)); do
      ((COUNTING = i >= WARMUP))
      timed dexec "$DOCKER_CLI" exec "$container" true
      timed dcli "$AL" exec dbench -- true
      api_timed dapi '{"op":"exec","session":"dbench","command":"true"}'
    done
    rounds=$((WARMUP + N_OPEN))
    for ((i = 0; i < rounds; i++)); do
      ((COUNTING = i >= WARMUP))
      timed drun "$DOCKER_CLI" run --rm --network none "$AIRLOCK_DOCKER_IMAGE" true
      api_open_close dopen dcycle dfresh '{"op":"open","session":"dfresh","workdir":"'"$WORK"'","backend":"docker"}'
    done
  fi

  # ---- 5. ssh: one command in a warm session, and an upload ----
  local ssh_ok=0 ssh_opened=0 cp_ok=0 sock='' SSHB=() SCPB=() CP_NOTE=''
  if ((daemon_ok)) && [ -z "$SSH_NOTE" ]; then
    # (the session's settings from the environment, as a client gives them)
    if AIRLOCK_SSH_HOST=127.0.0.1 AIRLOCK_SSH_PORT=$SSHD_PORT AIRLOCK_SSH_USER=$SSH_USER \
       AIRLOCK_SSH_KEY=$SSH_KEY AIRLOCK_SSH_KNOWN_HOSTS=$SSH_KNOWN_HOSTS \
       AIRLOCK_SSH_STRICT_HOST_KEY_CHECKING=yes AIRLOCK_SSH_WORKDIR=$SSH_WORKDIR \
       "$AL" session open sbench --backend ssh > "$R/ssh-open.log" 2>&1; then
      ssh_opened=1
      sock=$(ssh_master_path)
      SSHB=(ssh -F /dev/null -o BatchMode=yes -o ControlMaster=no -o ControlPath="$sock"
            -o UserKnownHostsFile="$SSH_KNOWN_HOSTS" -p "$SSHD_PORT" "$SSH_USER@127.0.0.1")
      SCPB=(scp -q -r -F /dev/null -o BatchMode=yes -o ControlMaster=no -o ControlPath="$sock"
            -o UserKnownHostsFile="$SSH_KNOWN_HOSTS" -P "$SSHD_PORT")
      if [ -z "$sock" ]; then
        SSH_NOTE="no ssh master of the session found (ps: ssh: $R/... [mux])"
      elif ! out=$("${SSHB[@]}" true 2>&1); then
        SSH_NOTE="ssh true over the session's master ($sock) failed: $out"
      else
        ssh_ok=1
      fi
    else
      SSH_NOTE="the ssh session did not open: $(tail -n 1 "$R/ssh-open.log")"
    fi
  fi
  if ((ssh_ok)); then
    echo "  ssh:     OpenSSH $(ssh -V 2>&1 | cut -d, -f1), sshd on 127.0.0.1:$SSHD_PORT (tests/ssh/sshd.sh), remote user $SSH_USER, master $sock"
    rounds=$((WARMUP + N_EXEC))
    for ((i = 0; i < rounds; i++)); do
      ((COUNTING = i >= WARMUP))
      timed sshtrue "${SSHB[@]}" true
      timed scli "$AL" exec sbench -- true
      api_timed sapi '{"op":"exec","session":"sbench","command":"true"}'
    done
    # 500 small files (1 KB each, each its own), a new destination each
    # round; airlock cp when this build has it (the files API).
    mkdir -p "$WORK/files500"
    local kb
    printf -v kb '%01000d' 0
    for ((i = 1; i <= 500; i++)); do printf '%d %s\n' "$i" "$kb" > "$WORK/files500/f$i"; done
    if [[ $("$AL" cp --help 2>&1) == *"unknown command"* ]]; then
      CP_NOTE="this airlock has no cp command (the files API): its row is not measured"
    else
      cp_ok=1
    fi
    rounds=$((WARMUP + N_FILES))
    for ((i = 0; i < rounds; i++)); do
      ((COUNTING = i >= WARMUP))
      timed scp "${SCPB[@]}" "$WORK/files500" "$SSH_USER@127.0.0.1:$SSH_WORKDIR/scp-$i"
      ((cp_ok)) && timed cp500 "$AL" cp "$WORK/files500" "sbench:$SSH_WORKDIR/cp-$i"
    done
    # What arrived, once: 500 files each way.
    local got
    got=$("${SSHB[@]}" "find $SSH_WORKDIR/scp-0 -type f | wc -l" 2>&1)
    [ "$got" = 500 ] || CP_NOTE+="${CP_NOTE:+; }scp -r delivered $got files, not 500"
    if ((cp_ok)); then
      got=$("${SSHB[@]}" "find $SSH_WORKDIR/cp-0 -type f | wc -l" 2>&1)
      [ "$got" = 500 ] || CP_NOTE+="${CP_NOTE:+; }airlock cp delivered $got files, not 500"
    fi
    "${SSHB[@]}" "rm -rf $SSH_WORKDIR/scp-* $SSH_WORKDIR/cp-*" > /dev/null 2>&1
    rm -rf "$WORK/files500"
  else
    echo "  ssh:     skipped: ${SSH_NOTE:-no daemon}"
  fi

  # ---- 6. daytona: against the double, started here as this user ----
  local dt_ok=0 dt_opened=0 DT_NOTE='' DTPID='' DT_TB='' dport='' DTAUTH=()
  if ((daemon_ok)) && [ "$BENCH_ONLY" != ssh ]; then
    mkdir -p "$T/home/dt-state"
    DAYTONA_DOUBLE_API_KEY=bench-key /usr/bin/python3 "$T/doubles/daytona" --port 0 \
      --airlock "$AL" --state "$T/home/dt-state" > "$R/dt.out" 2> "$R/dt.err" &
    DTPID=$!
    for i in $(seq 100); do
      dport=$(sed -n 's/^listening on 127\.0\.0\.1:\([0-9]*\)$/\1/p' "$R/dt.out")
      [ -n "$dport" ] && break
      sleep 0.1
    done
    if [ -z "$dport" ]; then
      DT_NOTE="the Daytona double did not start: $(tail -n 1 "$R/dt.err")"
    elif ! DAYTONA_API_URL=http://127.0.0.1:$dport/api DAYTONA_API_KEY=bench-key \
         "$AL" session open dtbench --backend daytona > "$R/dt-open.log" 2>&1; then
      DT_NOTE="the daytona session did not open: $(tail -n 1 "$R/dt-open.log")"
    else
      dt_opened=1
      DTAUTH=(-H "Authorization: Bearer bench-key")
      local sbid
      sbid=$(curl -sS "http://127.0.0.1:$dport/_double/sandboxes" |
             sed -n 's/.*"id": "\([^"]*\)".*/\1/p' | head -n 1)
      DT_TB=http://127.0.0.1:$dport/toolbox/$sbid
      if [ -z "$sbid" ] || ! curl -sSf "${DTAUTH[@]}" -H 'Content-Type: application/json' \
           -d '{"command":"true"}' "$DT_TB/process/execute" > /dev/null 2>> "$R/err.dtcurl"; then
        DT_NOTE="a bare toolbox call to the double's sandbox failed"
      else
        dt_ok=1
      fi
    fi
  fi
  if ((dt_ok)); then
    echo "  daytona: the Daytona double (tests/doubles/daytona) on 127.0.0.1:$dport, its sandboxes airlock local sandboxes of $(id -un)"
    rounds=$((WARMUP + N_DAYTONA))
    for ((i = 0; i < rounds; i++)); do
      ((COUNTING = i >= WARMUP))
      timed dtcurl curl -sSf "${DTAUTH[@]}" -H 'Content-Type: application/json' \
        -d '{"command":"true"}' "$DT_TB/process/execute"
      timed dtcli "$AL" exec dtbench -- true
      api_timed dtapi '{"op":"exec","session":"dtbench","command":"true"}'
    done
    mkdir -p "$WORK/files500"
    local kb2
    printf -v kb2 '%01000d' 0
    for ((i = 1; i <= 500; i++)); do printf '%d %s\n' "$i" "$kb2" > "$WORK/files500/f$i"; done
    rounds=$((WARMUP + N_FILES))
    for ((i = 0; i < rounds; i++)); do
      ((COUNTING = i >= WARMUP))
      timed dtbulk bash -c 'tar -C "$1" -cf - files500 | curl -sSf "${@:4}" -F "files[0].path=/tmp/raw-$2.tar" -F "files[0].file=@-" "$3/files/bulk-upload"' \
        _ "$WORK" "$i" "$DT_TB" "${DTAUTH[@]}"
      timed dtcp "$AL" cp "$WORK/files500" "dtbench:/tmp/cp-$i"
    done
    local got
    got=$("$AL" exec dtbench -- "find /tmp/cp-0 -type f | wc -l" 2>&1)
    [ "$got" = 500 ] || DT_NOTE="airlock cp delivered $got files, not 500"
    rm -rf "$WORK/files500"
  else
    [ "$BENCH_ONLY" = ssh ] || echo "  daytona: skipped: ${DT_NOTE:-no daemon}"
  fi

  # ---- the tables ----
  if [ "$BENCH_ONLY" != ssh ]; then
    table_head "0. The command-line client's start, against /bin/true"
    row "/bin/true, spawned directly (baseline)" true true
    row "airlock --version" version true

    table_head "1. One command (true) in a warm local session, against bash -c true"
    row "bash -c true, spawned directly (baseline)" bash bash
    row "the original's wrapper, unsandboxed (emulated)" orig bash
    if ((session_ok)); then
      row "airlock exec bench -- true (CLI)" cli bash
      row "  JSON API exec, one airlock serve connection" api bash
      echo "  (against the original's wrapper, median to median: CLI $(stats cli; c=$S_MED; stats orig; ratio "$c" "$S_MED"), API $(stats api; c=$S_MED; stats orig; ratio "$c" "$S_MED"))"
    else
      echo "  airlock side skipped: no session (see above)"
    fi

    local base=bwrap
    ((bwrap_ok)) || base=''
    table_head "2. A fresh sandbox, against bwrap --unshare-all ... true"
    if ((bwrap_ok)); then
      row "bwrap --unshare-all ... true (baseline)" bwrap bwrap
    else
      echo "  bwrap baseline skipped: $BWRAP_NOTE; no ratios"
    fi
    ((run_ok)) && row "airlock run -- true ($( [ -u "$SETUID_HELPER" ] && echo setuid || echo userns) helper)" run "$base"
    ((run_userns_ok)) && row "airlock run -- true (userns helper)" run_userns "$base"
    ((run_ok || session_ok)) || echo "  airlock side skipped: no sandbox starts here (see above)"
    ((srt_ok)) && row "srt -c true (Anthropic sandbox-runtime)" srt "$base"
    ((codex_ok)) && row "codex sandbox -- true (OpenAI Codex CLI)" codex "$base"
    if ((session_ok)); then
      row "airlock session open (CLI)" open_cli "$base"
      row "airlock session close (CLI)" close_cli "$base"
      row "airlock session open + close (CLI)" cycle_cli "$base"
      row "  JSON API open" open_api "$base"
      row "  JSON API open + close" cycle_api "$base"
    fi

    table_head "3. Docker: one command (true) in a warm session, against docker exec CONTAINER true; a fresh one against docker run"
    if ((docker_ok)); then
      row "docker exec CONTAINER true, the CLI (baseline)" dexec dexec
      row "airlock exec dbench -- true (CLI)" dcli dexec
      row "  JSON API exec, one airlock serve connection" dapi dexec
      row "docker run --rm --network none IMAGE true (baseline)" drun drun
      row "  JSON API open (docker)" dopen drun
      row "  JSON API open + close (docker)" dcycle drun
    else
      echo "  skipped: ${DOCKER_NOTE:-no daemon}"
    fi

    table_head "4. Files: 500 small files into a warm local session, against cp -r into its workdir"
    if ((session_ok)); then
      row "cp -r TREE WORKDIR/DIR (baseline)" fcp fcp
      row "airlock cp TREE bench:DIR" fup fcp
    else
      echo "  skipped: no session (see above)"
    fi

  fi

  table_head "5. SSH: one command (true) in a warm session, against ssh -o ControlPath=MASTER host true over its master; 500 files up, against scp -r"
  if ((ssh_ok)); then
    row "ssh -o ControlPath=MASTER host true (baseline)" sshtrue sshtrue
    row "airlock exec sbench -- true (CLI)" scli sshtrue
    row "  JSON API exec, one airlock serve connection" sapi sshtrue
    row "scp -r 500 files, over the master (baseline)" scp scp
    if ((cp_ok)); then
      row "airlock cp 500 files sbench:DIR" cp500 scp
    fi
    [ -n "$CP_NOTE" ] && echo "  $CP_NOTE"
  else
    echo "  skipped: ${SSH_NOTE:-no daemon}"
  fi

  if [ "$BENCH_ONLY" != ssh ]; then
    table_head "6. Daytona (against the local double): one command (true) in a warm session, against one bare toolbox call running true; 500 files up, against one bare bulk-upload of their tar"
    if ((dt_ok)); then
      row "curl POST /process/execute {true} (baseline)" dtcurl dtcurl
      row "airlock exec dtbench -- true (CLI)" dtcli dtcurl
      row "  JSON API exec, one airlock serve connection" dtapi dtcurl
      row "tar | curl POST /files/bulk-upload, 500 files (baseline)" dtbulk dtbulk
      row "airlock cp 500 files dtbench:DIR (+ the checked extraction)" dtcp dtbulk
      [ -n "$DT_NOTE" ] && echo "  $DT_NOTE"
    else
      echo "  skipped: ${DT_NOTE:-no daemon}"
    fi

    # ---- issue 11's goals, median to median ----
    goal "airlock --version / /bin/true" version true 1.3
    goal "airlock run -- true / bwrap" run bwrap 0.7
    goal "airlock exec S -- true (CLI) / bash -c true" cli bash 2.5
    goal "JSON API exec / bash -c true" api bash 2
    goal "airlock exec S -- true (CLI) / the original's wrapper" cli orig 1
    goal "JSON API exec / the original's wrapper" api orig 1
    goal "docker: airlock exec S -- true (CLI) / docker exec" dcli dexec 0.25
    printf '\n== Goals (issue 11), median to median\n%s' "$GOALS"
  fi
  GOALS=''
  goal "ssh: airlock exec S -- true (CLI) / ssh host true (master)" scli sshtrue 1.3
  goal "ssh: JSON API exec / ssh host true (master)" sapi sshtrue 1.3
  printf '\n== Goals (issue 12), median to median\n%s' "$GOALS"

  echo
  echo "Times in ms, per run, as seen by the caller (wall clock); x = ratio to the"
  echo "table's baseline (median to median, mean to mean); p95 by nearest rank."
  if ((session_ok)); then
    local c a
    stats cli; c=$S_MED
    stats api; a=$S_MED
    [ -n "$c" ] && [ -n "$a" ] &&
      echo "airlock exec start-up (its process, connecting to the daemon): about $(ms "$(awk -v c="$c" -v a="$a" 'BEGIN { print c - a }')") ms (median CLI - median API)."
  fi

  # ---- stop what we started ----
  ((ssh_opened)) && { api '{"op":"close","session":"sbench"}' || "$AL" session close sbench > /dev/null 2>&1; }
  ((dt_opened)) && { api '{"op":"close","session":"dtbench"}' || "$AL" session close dtbench > /dev/null 2>&1; }
  if [ -n "$DTPID" ]; then
    kill -TERM "$DTPID" 2>/dev/null
    for i in $(seq 100); do kill -0 "$DTPID" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$DTPID" 2>/dev/null && kill -KILL "$DTPID" 2>/dev/null
    wait "$DTPID" 2>/dev/null
  fi
  ((docker_ok)) && { api '{"op":"close","session":"dbench"}' || "$AL" session close dbench > /dev/null 2>&1; }
  if ((session_ok)); then
    api '{"op":"close","session":"bench"}' || "$AL" session close bench > /dev/null 2>&1
  fi
  api_stop
  if [ -n "$DPID" ] && kill -0 "$DPID" 2>/dev/null; then
    kill -TERM "$DPID" 2>/dev/null
    for i in $(seq 50); do kill -0 "$DPID" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$DPID" 2>/dev/null && kill -KILL "$DPID" 2>/dev/null
  fi
  wait "$DPID" 2>/dev/null
  rm -f "$R/bench-daemon.pid"
  return 0
}

if [ "${1:-}" = --worker ]; then
  worker
  exit 0
fi
main
