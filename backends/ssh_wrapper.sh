# SPDX-License-Identifier: MIT
# The remote half of the ssh backend (backends/ssh_session.c), in POSIX sh.
# Nothing is installed remotely: every ssh channel runs the same fixed
# bootstrap (SSH_REMOTE_BOOTSTRAP), which reads a length line and then this
# code, behind a preamble of variable assignments, from its stdin; so no
# command text, script or environment value is ever in a remote argv.
# The build strips comment lines and indentation (build/gen/ssh_wrapper.h).
#
# Preamble: M mode (probe run resume close), B base directory of the job
# directories, J job name (close: the names, space-separated), and for run:
# SL/EL/PL bytes of script/env/terminal file (PL: a terminal job, see pt)
# that follow, IN 1 when stdin is a pipe, T
# deadline ms (0 none), G grace ms, CW working directory, "$@" the argv;
# for resume: O1 O2 O3 the offsets of out, err, meta; probe: WD, TTL.
#
# Frames to the local side (stdout): "O STREAM OFFSET LEN\n" + LEN bytes,
# "S PID\n" started, "Y\n" ready for the terminal, "R STATUS\n" ended, "H\n" heartbeat, "L WORDS\n" lost,
# "E WORDS\n" failed, "P KEY VALUE\n" probe answers.  From the local side
# (stdin): "D LEN\n" + LEN bytes of stdin, "C\n" end of stdin, "K SIG\n" a
# signal to the job's session, "T GRACE\n" TERM then KILL after GRACE ms,
# "A\n" delivered: remove the job directory.
umask 077
case $B in /*) ;; *) B=$HOME/$B ;; esac
# Signal $1 to every process of session $2 (the job's pid is its sid; ""
# none) and to every process whose environment has AIRLOCK_SSH_JOB=$3
# (its descendants that left the session); $3 ending in "-": a session's.
# KP: pids spared (a terminal job's bash, which writes its exit status).
KP=
ks() {
  if [ -n "$3" ]; then
    for f in $(grep -laz "^AIRLOCK_SSH_JOB=$3" /proc/[0-9]*/environ 2>/dev/null); do
      f=${f#/proc/}
      kill -"$1" "${f%/environ}" 2>/dev/null
    done
  fi
  if [ -z "$2" ]; then
    :
  elif [ -z "$KP" ] && command -v pkill >/dev/null 2>&1; then
    pkill -"$1" -s "$2" 2>/dev/null
  else
    for q in /proc/[0-9]*; do
      case " $KP " in *" ${q#/proc/} "*) continue ;; esac
      s=$(cat "$q/stat" 2>/dev/null) || continue
      s=${s##*) }
      set -- "$1" "$2" $s
      [ "$6" = "$2" ] && kill -"$1" "${q#/proc/}" 2>/dev/null
    done
  fi
  return 0
}
# Milliseconds as seconds for sleep (GNU sleep takes fractions).
sec() { printf '%d.%03d' $(($1 / 1000)) $(($1 % 1000)); }
fail() { printf 'E %s\n' "$*"; exit 0; }

if [ "$M" = probe ]; then
  printf 'P home %s\n' "$HOME"
  printf 'P bash %s\n' "$(command -v bash)"
  miss=
  for c in setsid head dd stat mkfifo find env; do
    command -v $c >/dev/null 2>&1 || miss="$miss $c"
  done
  printf 'P missing %s\n' "$miss"
  if [ -n "$WD" ]; then
    w=$(cd "$WD" 2>&1 && pwd) || fail "the remote working directory $WD: $w"
  else
    w=$(pwd)
  fi
  printf 'P wd %s\n' "$w"
  e=$(mkdir -p "$B" 2>&1 && chmod 700 "$B" 2>&1 && : > "$B/.probe" 2>&1) \
    || fail "cannot use the remote job directory $B: $e"
  rm -f "$B/.probe"
  # Job directories nobody has followed for TTL (a follower touches its
  # directory every minute): their daemon died.  What still runs of
  # them is killed.
  find "$B" -mindepth 1 -maxdepth 1 -type d -mmin +$((TTL / 60)) 2>/dev/null |
  while read -r d; do
    # By its mark only: after so long its session id may be another's.
    [ -e "$d/rc" ] || ks 9 "" "${d##*/}\$"
    rm -rf "$d"
  done
  printf 'P ok 1\n'
  exit 0
fi

if [ "$M" = close ]; then
  for j in $J; do
    p=
    [ -r "$B/$j/pid" ] && [ ! -e "$B/$j/rc" ] && read -r p < "$B/$j/pid"
    # The directory goes first: a job not started yet finds it gone and
    # does not start (runner); one that started carries its mark from
    # its first exec, so the kill after the removal finds it.
    rm -rf "$B/$j"
    ks 9 "$p" "$j\$"
  done
  # What the session's commands left running (they ended, their
  # background processes did not).
  [ -z "$TOK" ] || ks 9 "" "$TOK-"
  exit 0
fi

JN=$J
J=$B/$J
# A signal request for job $J: K SIG, or T GRACE (TERM, then KILL after
# GRACE ms: by session while the job runs, else, its sid may be reused,
# only what carries its mark).
sg() {
  if ! pid; then
    # A terminal job whose terminal has not opened yet never starts (pt
    # takes "go" first): its end is written here.
    [ -f "$J/pty" ] && mkdir "$J/go" 2>/dev/null \
      && echo $((128 + ${2:-15})) > "$J/rc.tmp" && mv "$J/rc.tmp" "$J/rc"
    return 0
  fi
  KP=
  [ -f "$J/pty" ] && KP=$p
  if [ "$1" = K ]; then ks "$2" "$p" "$JN\$"; return 0; fi
  ks 15 "$p" "$JN\$"
  (
    sleep "$(sec "$2")"
    if [ -d "$J" ] && [ ! -e "$J/rc" ]; then ks 9 "$p" "$JN\$"; else ks 9 "" "$JN\$"; fi
  ) < /dev/null > /dev/null 2>&1 &
}
# The remote deadline of job $J (pid $1): TERM T ms after its start, KILL
# G ms later, unless it ended.  Its pid in w (a child of ours: reaped).
wd() {
  (
    # In a terminal job's session: spared too (bash gives $BASHPID).
    [ -z "$KP" ] || KP="$KP $BASHPID"
    trap 'kill $s 2>/dev/null; exit 0' TERM
    sleep "$(sec "$T")" & s=$!
    wait $s
    [ ! -d "$J" ] || [ -e "$J/rc" ] || ks 15 $1 "$JN\$"
    sleep "$(sec "$G")" & s=$!
    wait $s
    [ ! -d "$J" ] || [ -e "$J/rc" ] || ks 9 $1 "$JN\$"
  ) < /dev/null > /dev/null 2>&1 &
  w=$!
}
# Wait up to 5 s for the job's pid (the runner writes it as it starts).
pid() {
  i=0
  while [ ! -s "$J/pid" ] && [ $i -lt 500 ] && [ -d "$J" ]; do
    sleep 0.01; i=$((i + 1))
  done
  p=
  [ -r "$J/pid" ] && read -r p < "$J/pid"
  [ -n "$p" ]
}

# Run the job ("$@") and write its exit status to rc.
runner() {
  # fd 3 must be a pipe (the shell wrapper finds it by its pipe identity).
  mkfifo "$J/m"
  cat "$J/m" > "$J/meta" &
  mc=$!
  # The job's environment is exactly the env file (and who it runs as).
  i=/dev/null
  [ "$IN" = 1 ] && i=$J/in
  # The mark is in the environment from the first exec on, and the job
  # starts only while its directory is there (close removes it first).
  env -i AIRLOCK_SSH_JOB="$JN" HOME="$HOME" USER="$USER" LOGNAME="$LOGNAME" SHELL="$SHELL" \
    sh -c '[ -d "$0" ] || exit 125; . "$0/env"; cd "$1" 2>/dev/null || cd /; shift; exec setsid "$@"' "$J" "$CW" "$@" \
    3> "$J/m" 4< "$J/script" > "$J/out" 2> "$J/err" < "$i" &
  p=$!
  echo $p > "$J/pid"
  w=
  [ "$T" -gt 0 ] && wd $p
  wait $p
  rc=$?
  wait $mc
  echo $rc > "$J/rc.tmp" && mv "$J/rc.tmp" "$J/rc"
  [ -z "$w" ] || kill $w 2>/dev/null
  # Wake the follower, if it is still our parent.
  read -r st < /proc/self/stat
  st=${st##*) }
  set -- $st
  [ "$2" != "$$" ] || kill -USR1 $$ 2>/dev/null
}

# run and resume: one job on this channel.
fw() {
  # The runner wakes the follower when the job ended (USR1 ends its sleep).
  wk=0
  trap 'wk=1' USR1
  if [ "$M" = run ]; then
    mkdir "$J" 2>/dev/null || mkdir -p "$B" 2>/dev/null
    [ -d "$J" ] || e=$(mkdir "$J" 2>&1) || fail "cannot create the job directory $J on the remote host: $e"
    # From here on the local side resumes rather than gives up.
    printf 'H\n'
    # The error in a variable: on a full disk a file for it stays empty.
    if ! e=$({ head -c "$SL" > "$J/script" && head -c "$EL" > "$J/env" \
               && { [ -z "$PL" ] || head -c "$PL" > "$J/pty"; } \
               && : > "$J/out" && : > "$J/err" && : > "$J/meta"; } 2>&1); then
      rm -rf "$J"
      fail "cannot write the job directory $J on the remote host: ${e:-no space left on its disk?}"
    fi
    [ "$IN" = 1 ] && mkfifo "$J/in"
    # The runner, apart from the ssh channel's stdio so that it outlives
    # the channel; the job is a session of its own (pid = sid) so that
    # killing it spares the runner, which then writes the exit status
    # atomically.
    if [ -n "$PL" ]; then
      # A terminal job: ready for its `ssh -tt` (pt below runs it).
      printf 'Y\n'
    else
      ( runner "$@" ) < /dev/null > /dev/null 2>&1 &
      echo $! > "$J/runner"
    fi
  elif [ "$M" = resume ]; then
    [ -d "$J" ] || { printf 'L %s\n' "its job directory $J is gone from the remote host (removed, or the host was reinstalled or its /home wiped)"; exit 0; }
    IN=0
  else
    fail "unknown mode $M"
  fi

  # The local side's requests, beside the output.  On the end of its input
  # without "A" (the connection dropped) the follower stops too: a resume
  # follows.
  rd() {
    [ "$IN" = 1 ] && exec 6> "$J/in"
    while read -r c a; do
      case $c in
      D)
        head -c "$a" > "$J/ib"
        if [ "$IN" = 1 ]; then cat "$J/ib" >&6 2>/dev/null || { IN=0; exec 6>&-; }; fi
        ;;
      C) [ "$IN" = 1 ] && { IN=0; exec 6>&-; } ;;
      K | T) sg "$c" "$a" ;;
      A) rm -rf "$J"; exit 0 ;;
      esac
    done
    kill $$ 2>/dev/null
    exit 0
  }
  exec 5<&0
  rd <&5 &
  r=$!
  exec 5<&-

  O1=${O1:-0} O2=${O2:-0} O3=${O3:-0}
  # Stream $2 (file $3 of size $4) from offset O$2.
  em() {
    eval "o=\$O$1"
    [ "$3" -gt "$o" ] || return 1
    n=$(($3 - o))
    printf 'O %s %s %s\n' "$1" "$o" "$n" || exit 0
    dd if="$J/$2" bs=64K iflag=skip_bytes,count_bytes skip="$o" count="$n" status=none || exit 0
    eval "O$1=$3"
  }
  d=20 ds=0.02 idle=0 hb=0 hn=0
  sp=
  while :; do
    if [ -z "$sp" ] && [ -s "$J/pid" ]; then
      read -r sp < "$J/pid"
      printf 'S %s\n' "$sp" || exit 0
    fi
    # rc is complete with its newline (a runner may write it in place).
    e=0
    [ -e "$J/rc" ] && read -r rc < "$J/rc" && e=1
    set -- $(stat -c %s "$J/out" "$J/err" "$J/meta" 2>/dev/null)
    if [ $# != 3 ]; then
      printf 'L %s\n' "its job directory $J vanished on the remote host while it ran"
      exit 0
    fi
    m=0
    em 1 out "$1" && m=1
    em 2 err "$2" && m=1
    em 3 meta "$3" && m=1
    if [ $e = 1 ]; then
      printf 'R %s\n' "$rc" || exit 0
      while kill -0 $r 2>/dev/null; do wait $r; done
      exit 0
    fi
    if [ $m = 1 ]; then
      d=20 ds=0.02 hb=0
      continue
    fi
    if [ $wk = 0 ]; then
      sleep $ds &
      wait $! || kill $! 2>/dev/null
    fi
    wk=0
    idle=$((idle + d)) hb=$((hb + d))
    case $d in 20) d=50 ds=0.05 ;; 50) d=100 ds=0.1 ;; *) d=200 ds=0.2 ;; esac
    if [ $hb -ge 2000 ]; then
      hb=0
      printf 'H\n' || exit 0
      # Followed: not stale (the sweep at connect time).
      hn=$((hn + 1))
      [ $((hn % 30)) != 0 ] || touch "$J"
      rp=
      [ -r "$J/runner" ] && read -r rp < "$J/runner"
      if [ -n "$rp" ] && ! kill -0 "$rp" 2>/dev/null && [ ! -e "$J/rc" ]; then
        # Nothing of it may run on unaccounted for.
        [ -z "$sp" ] || ks 9 "$sp" "$JN\$"
        rm -rf "$J"
        if [ -f "$J/pty" ]; then
          printf 'L %s\n' "its remote terminal ended (hung up: the ssh connection carrying it dropped, or its bash, pid $rp, was killed) before the command did; a terminal cannot be resumed, so the command was killed and its exit status is lost"
        else
          printf 'L %s\n' "its remote wrapper (pid $rp) was killed on the remote host before the command ended, so its exit status is lost"
        fi
        exit 0
      fi
    fi
  done
}
# A terminal job (M=pty): the file $J/pty (its preamble and this wrapper),
# run by bash on the terminal `ssh -tt` gave it, as that terminal's session
# leader: its pid is the job's session id, so every kill path above holds.
# bash's job control (set -m) gives the command a foreground group of its
# own, so ^C reaches it and not bash; ks spares bash (KP), which outlives a
# killed command to write its exit status as the runner does.
pt() {
  # Once only, and never after a kill that came first (sg).
  mkdir "$J/go" 2>/dev/null || exit 125
  echo $$ > "$J/runner"
  mkfifo "$J/m"
  cat "$J/m" > "$J/meta" &
  mc=$!
  KP=$$
  echo $$ > "$J/pid"
  w=
  [ "$T" -gt 0 ] && wd $$
  set -- env -i AIRLOCK_SSH_JOB="$JN" HOME="$HOME" USER="$USER" LOGNAME="$LOGNAME" SHELL="$SHELL" \
    sh -c '. "$0/env"; cd "$1" 2>/dev/null || cd /; shift; exec "$@"' "$J" "$CW" "$@"
  # bash hands the terminal to a job only while its own stderr is that
  # terminal, so it stays: a command killed by a signal gets bash's
  # one-line note there ("... Killed  "$@" ..."), as from any shell.
  set -m
  "$@" 3> "$J/m" 4< "$J/script"
  rc=$?
  # ^Z: on the local backends the command leads its session, where the
  # kernel ignores a terminal's stop; here it is continued at once.
  while [ -n "$(jobs -s)" ]; do fg > /dev/null; rc=$?; done
  set +m
  wait $mc
  echo $rc > "$J/rc.tmp" && mv "$J/rc.tmp" "$J/rc"
  [ -z "$w" ] || kill $w 2>/dev/null
  exit $rc
}
case $M in
agent) ;;
pty) pt "$@" ;;
*) fw "$@" ;;
esac
