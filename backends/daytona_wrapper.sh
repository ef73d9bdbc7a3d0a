# SPDX-License-Identifier: MIT
# The sandbox half of the daytona backend (backends/daytona_session.c), in
# POSIX sh.  Each command is one async exec in a toolbox session of its
# own; Daytona sources the exec's text in that session's shell, inside
# `( ... )` so nothing here touches the shell itself.  The text is a
# preamble of variables, then this code (the build strips comment lines
# and indentation: build/gen/daytona_wrapper.h).
#
# Preamble: M run (or relay, prep, pty: below), RID this relay's number,
# N the job's name, S and E the command's script and its env
# file (sh export lines) in base64, IN 1 when stdin is a pipe, T deadline
# ms (0 none), G grace ms, CW the working directory, "$@" the argv; P and
# K for a terminal (M=prep, M=pty).
#
# Daytona's session log is line-based (each line of the exec's stdout is
# read by a shell `read`: NUL bytes would be lost, a last line without its
# newline gets one), and the exec's exit code is written only after every
# holder of its stdout closed it.  So the command never gets that stdout:
# its stdout, stderr and fd 3 go to files in a 0700 job directory, and
# this wrapper relays them as ASCII lines, each stream by byte offset:
#   "S PID" started, "O STREAM OFFSET BASE64" bytes, "R STATUS" ended,
#   "F WORDS" failed before it started.
# The client removes the job directory once it has the end.
# The client keeps the log's offset, so a lost or repeated read of the log
# neither loses nor doubles a byte.  stdin (IN=1) comes from the toolbox
# command's input as "D LEN" lines, each followed by LEN bytes of base64
# and a newline, and "C" (its end).
umask 077
B=/tmp/.airlock-jobs
J=$B/$N
# Signal $1 to the session $2 (the job's pid is its sid) and to every
# process carrying the job's mark (those that left the session).
ks() {
  for d in /proc/[0-9]*; do
    l=
    read -r l < "$d/stat" 2>/dev/null || continue
    l=${l##*) }
    set -- "$1" "$2" $l
    if [ "$6" = "$2" ] || grep -qz "^AIRLOCK_DAYTONA_JOB=$N\$" "$d/environ" 2>/dev/null; then
      kill -"$1" "${d#/proc/}" 2>/dev/null
    fi
  done
}
sec() { printf '%d.%03d' $(($1 / 1000)) $(($1 % 1000)); }
# A command on a terminal (M=pty): this text is the job directory's
# "go" file (written by M=prep, below), which the client has the login
# shell of a Daytona PTY session exec, so that only that file's path is
# typed into the terminal (which echoes it), never the script.  We lead
# the terminal's session (the shell we replaced did).  K, printed first,
# marks where the command's output begins: what the client got before it
# (the shell's banner, prompt and echo) is not the command's.  The
# command runs in the foreground, the state report (fd 3) goes to meta,
# the exit status to rc; the client reads both once the terminal closed.
if [ "$M" = pty ]; then
  [ -f "$J/env" ] || { echo "airlock: the job directory $J in the sandbox was not prepared"; exit 125; }
  printf '%s' "$K"
  mkfifo "$J/m" || { echo "airlock: cannot make a pipe in $J"; exit 125; }
  cat "$J/m" > "$J/meta" < /dev/null 2> /dev/null &
  mc=$!
  echo "$$" > "$J/pid"
  # The remote deadline (for when the client cannot reach us); it ignores
  # TERM (it is in the session it signals) and is ended with KILL.
  w=
  if [ "$T" -gt 0 ]; then
    (
      trap "" TERM
      sleep "$(sec "$T")"
      ks 15 "$$"
      sleep "$(sec "$G")"
      ks 9 "$$"
    ) > /dev/null 2>&1 < /dev/null &
    w=$!
  fi
  # Handled, not ignored: the command gets them as a person expects (an
  # ignored signal stays ignored across exec), and this shell lives on
  # to keep the report.
  trap : HUP INT QUIT TERM TSTP
  env -i AIRLOCK_DAYTONA_JOB="$N" sh -c '. "$0/env"; cd "$1" 2>/dev/null || cd /; shift; exec "$@"' \
    "$J" "$CW" "$@" 3> "$J/m" 4< "$J/script"
  rc=$?
  [ -z "$w" ] || kill -9 "$w" 2>/dev/null
  wait "$mc"
  echo "$rc" > "$J/rc"
  exit "$rc"
fi
mkdir -p "$B" 2>/dev/null
chmod 700 "$B" 2>/dev/null
# A relay of its own (M=relay): the job runs already; its output from
# offsets O1 O2 O3 into this log (the old one grew too long to read again
# and again).  The relay whose RID is in the job directory's relay file is
# the one: the others end.
if [ "$M" = relay ]; then
  [ -d "$J" ] || { echo "F the job directory $J vanished from the sandbox"; exit 0; }
else
O1=0 O2=0 O3=0
e=$(mkdir "$J" 2>&1) || { echo "F cannot create the job directory $J in the sandbox: $e"; exit 0; }
if ! { printf %s "$S" | base64 -d > "$J/script" && printf %s "$E" | base64 -d > "$J/env" \
       && : > "$J/out" && : > "$J/err" && : > "$J/meta"; } 2>/dev/null; then
  rm -rf "$J"
  echo "F cannot write the job directory $J in the sandbox (is its disk full?)"
  exit 0
fi
fi
# M=prep: the job directory of a command on a terminal, and its "go" file
# from P (base64; see M=pty above).  "P" when done.
if [ "$M" = prep ]; then
  if ! printf %s "$P" | base64 -d > "$J/go" 2>/dev/null; then
    rm -rf "$J"
    echo "F cannot write the job directory $J in the sandbox (is its disk full?)"
    exit 0
  fi
  echo P
  exit 0
fi
S= E=
echo "$RID" > "$J/relay"
if [ "$M" != relay ]; then
# The toolbox command's input, kept on fd 5: a command started with `&`
# gets /dev/null as its stdin.
exec 5<&0
# The runner: the command as a session of its own, fd 3 a pipe (the
# session layer's shell wrapper finds it by its pipe identity) into meta;
# its exit status to rc once its fd 3 is drained.
(
  mkfifo "$J/m" && cat "$J/m" > "$J/meta" &
  mc=$!
  i=/dev/null
  if [ "$IN" = 1 ]; then
    mkfifo "$J/in"
    (
      # "D LEN" then LEN bytes of base64 and a newline; head reads no
      # more than it is asked from a pipe.
      while read -r k n; do
        case $k in
        D) head -c "$n" | base64 -d || break ;;
        C) break ;;
        esac
      done <&5 > "$J/in"
    ) &
    i=$J/in
  fi
  while [ ! -p "$J/m" ]; do sleep 0.01; done
  env -i AIRLOCK_DAYTONA_JOB="$N" sh -c '. "$0/env"; cd "$1" 2>/dev/null || cd /; shift; exec setsid "$@"' \
    "$J" "$CW" "$@" 3> "$J/m" 4< "$J/script" > "$J/out" 2> "$J/err" < "$i" 5<&- &
  p=$!
  echo $p > "$J/pid"
  wait $p
  rc=$?
  wait $mc
  echo $rc > "$J/rc.t" && mv "$J/rc.t" "$J/rc"
) > /dev/null 2>&1 &
exec 5<&-
fi
# Stream $1 of file $2 from its offset: frames of 48 KiB at most.
o1=$O1 o2=$O2 o3=$O3
em() {
  eval "o=\$o$1"
  s=$(stat -c %s "$2" 2>/dev/null) || return 0
  while [ "$s" -gt "$o" ]; do
    n=$((s - o))
    [ $n -le 49152 ] || n=49152
    printf 'O %s %s ' "$1" "$o"
    dd if="$2" bs=64K iflag=skip_bytes,count_bytes skip="$o" count="$n" status=none | base64 -w0
    echo
    o=$((o + n))
  done
  eval "o$1=\$o"
}
# The remote deadline (for when the client cannot reach us): kept by this
# loop's own clock, its sleeps added up (so it only ever runs late).
p=
t=10
el=0
while :; do
  if [ -z "$p" ] && [ -s "$J/pid" ]; then
    read -r p < "$J/pid"
    echo "S $p"
  fi
  rc=
  [ ! -e "$J/rc" ] || read -r rc < "$J/rc"
  r=
  read -r r < "$J/relay" 2>/dev/null
  [ "$r" = "$RID" ] || exit 0
  em 1 "$J/out"
  em 2 "$J/err"
  [ -z "$rc" ] || break
  sleep "$(sec $t)"
  el=$((el + t))
  if [ "$T" -gt 0 ] && [ -n "$p" ] && [ $el -ge "$T" ]; then
    if [ $el -ge $((T + G)) ]; then ks 9 "$p"; else ks 15 "$p"; fi
  fi
  [ $t -ge 200 ] || t=$((t * 2))
done
em 3 "$J/meta"
echo "R $rc"
