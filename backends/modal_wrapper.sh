# SPDX-License-Identifier: MIT
# The sandbox half of the modal backend (backends/modal_session.c), in
# POSIX sh: the exec's command is ["sh", "-c", this, "airlock-modal", N,
# T, G, IN, CW, argv...] (N the job's name, T its deadline in ms (0
# none), G the grace between TERM and KILL in ms, IN 1 when the command
# reads stdin, CW the working directory, then the session layer's fixed
# loader); or ["sh", "-c", this, "airlock-modal", "kill", N, SIGNAL].
# Nothing secret is in that argv: the command's script and
# environment come first on the exec's stdin, as a line "LS LE K" and
# then LS bytes of script and LE bytes of environment (sh export lines);
# K is a marker of this job's.  The rest of stdin is the command's.
#
# The command's stdout and stderr are the exec's, read by offset by the
# client (TaskExecStdioRead), so nothing is relayed here.  Its fd 3 (the
# session layer's state report, which must be a pipe) goes to a file,
# said on stderr after the command ended, behind a line holding K: the
# client takes what follows the last "\nK\n" as the report.  The exit
# status is the command's (128+N for a signal).
# The build strips comment lines and indentation (build/gen/modal_wrapper.h).
# Signal $1 to the session $2 (the job's pid is its sid) and to every
# process carrying the job's mark (those that left the session).
ks() {
  for d in /proc/[0-9]*; do
    l=
    read -r l < "$d/stat" 2>/dev/null || continue
    l=${l##*) }
    set -- "$1" "$2" $l
    if [ "$6" = "$2" ] || grep -qz "^AIRLOCK_MODAL_JOB=$N\$" "$d/environ" 2>/dev/null; then
      kill -"$1" "${d#/proc/}" 2>/dev/null
    fi
  done
}
umask 077
B=/tmp/.airlock-jobs
# The kill path: ["sh", "-c", this, "airlock-modal", "kill", N, SIGNAL].
if [ "$1" = kill ]; then
  N=$2
  p=
  read -r p < "$B/$N/pid" 2>/dev/null || exit 0
  ks "$3" "$p"
  exit 0
fi
# The job directory from the header on stdin (see above).
# The remote deadline, for when the client cannot reach us: TERM to the
# session of $1 (and the job's mark) after T ms, KILL G ms later; its pid
# in w, ended with KILL (it ignores TERM: a terminal job's watchdog is in
# the session it signals).
deadline() {
  w=
  [ "$T" -gt 0 ] || return 0
  (
    trap "" TERM
    sleep "$((T / 1000)).$((T % 1000 / 100))"
    ks 15 "$1"
    sleep "$((G / 1000)).$((G % 1000 / 100))"
    ks 9 "$1"
  ) > /dev/null 2>&1 < /dev/null &
  w=$!
}

prep() {
  mkdir -p "$B" 2>/dev/null
  chmod 700 "$B" 2>/dev/null
  e=$(mkdir "$J" 2>&1) || { echo "airlock: cannot create the job directory $J in the sandbox: $e" >&2; exit 125; }
  read -r LS LE K || { rm -rf "$J"; echo "airlock: the command's script did not come" >&2; exit 125; }
  if ! { head -c "$LS" > "$J/script" && head -c "$LE" > "$J/env"; } 2>/dev/null; then
    rm -rf "$J"
    echo "airlock: cannot write the job directory $J in the sandbox (is its disk full?)" >&2
    exit 125
  fi
}
# A command on a terminal is three execs, so that nothing secret passes
# through the terminal (it echoes what it is given):
# ["sh", "-c", this, "airlock-modal", "prep", N] writes the job
# directory from stdin (errors on stdout, the one stream read);
# ["sh", "-c", this, "airlock-modal", "pty", N, T, G, CW, argv...] runs
# the command on the exec's terminal, in this shell's session and
# foreground (so ^C, ^Z and SIGWINCH reach it), keeping the state report
# in the job directory; ["sh", "-c", this, "airlock-modal", "done", N]
# prints that report on stdout and removes the directory.
if [ "$1" = prep ]; then
  J=$B/$2
  exec 2>&1
  prep
  exit 0
fi
if [ "$1" = done ]; then
  J=$B/$2
  cat "$J/meta" 2>/dev/null
  rm -rf "$J"
  exit 0
fi
# ["sh", "-c", this, "airlock-modal", "resize", N, ROWS, COLS]: the
# terminal job N's window (its foreground group gets SIGWINCH).
if [ "$1" = resize ]; then
  i=0
  while [ ! -s "$B/$2/tty" ] && [ "$i" -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
  t=
  read -r t < "$B/$2/tty" 2>/dev/null || exit 0
  stty rows "$3" cols "$4" < "$t"
  exit
fi
if [ "$1" = pty ]; then
  N=$2 T=$3 G=$4 CW=$5
  shift 5
  J=$B/$N
  [ -f "$J/env" ] || { echo "airlock: the job directory $J in the sandbox was not prepared" >&2; exit 125; }
  mkfifo "$J/m" || { echo "airlock: cannot make a pipe in $J" >&2; exit 125; }
  cat "$J/m" > "$J/meta" < /dev/null 2> /dev/null &
  mc=$!
  # Our session (we lead it when the exec is on a terminal): the kill path
  # signals it and every process with the job's mark.
  echo "$$" > "$J/pid"
  tty > "$J/tty" 2>/dev/null || rm -f "$J/tty"
  deadline "$$"
  # Handled, not ignored: the command gets them as a person expects
  # (an ignored signal would stay ignored across exec), and this shell
  # lives on to keep the report.
  trap : HUP INT QUIT TERM TSTP
  env -i AIRLOCK_MODAL_JOB="$N" sh -c '. "$0/env"; cd "$1" 2>/dev/null || cd /; shift; exec "$@"' \
    "$J" "$CW" "$@" 3> "$J/m" 4< "$J/script"
  rc=$?
  [ -z "$w" ] || kill -9 "$w" 2>/dev/null
  wait "$mc"
  exit "$rc"
fi
N=$1 T=$2 G=$3 IN=$4 CW=$5
shift 5
J=$B/$N
prep
mkfifo "$J/m" || { rm -rf "$J"; echo "airlock: cannot make a pipe in $J" >&2; exit 125; }
cat "$J/m" > "$J/meta" &
mc=$!
# (a command started with & gets /dev/null as stdin unless told otherwise)
if [ "$IN" = 1 ]; then exec 5<&0; else exec 5< /dev/null; fi
env -i AIRLOCK_MODAL_JOB="$N" sh -c '. "$0/env"; cd "$1" 2>/dev/null || cd /; shift; exec setsid "$@"' \
  "$J" "$CW" "$@" 3> "$J/m" 4< "$J/script" <&5 5<&- &
exec 5<&-
p=$!
echo "$p" > "$J/pid"
deadline "$p"
wait "$p"
rc=$?
[ -z "$w" ] || kill -9 "$w" 2>/dev/null
wait "$mc"
printf '\n%s\n' "$K" >&2
cat "$J/meta" >&2
rm -rf "$J"
exit "$rc"
