# SPDX-License-Identifier: MIT
# The ssh backend's session agent (backends/ssh_session.c): one long-lived
# process per session on one ssh channel that starts and follows the
# session's commands, so that a command costs neither a channel nor the
# wrapper's start.  It runs in bash (required by the session anyway, and
# `read -t` waits for a request or a timeout with no process), after
# ssh_wrapper.sh with M=agent, whose functions it uses (ks, sec, wd, sg,
# pid).  The job directories are those of ssh_wrapper.sh, so a command
# the agent started is resumed by that wrapper if the agent's channel
# drops.  Preamble: B, TOK (the session's token: job J is $B/$TOK-J).
#
# Requests (stdin): "N J SL EL T G\n", a line of sh words (the working
# directory, then the argv), SL bytes of script, EL bytes of the env
# file's text, "G\n"; "K J SIG\n", "T J GRACE\n" as in ssh_wrapper.sh;
# "A J\n" delivered: remove the directory.  The end of stdin ends the
# agent, never its jobs.
# Frames (stdout): "H\n" alive, "S J PID\n", "O J STREAM OFFSET LEN\n" +
# LEN bytes, "R J STATUS\n", "L J WORDS\n" lost, "E J WORDS\n" failed.
#
# Two processes: rd reads the requests and starts the jobs; am writes
# every frame.  rd's stdout is a pipe to am, and so is each runner's: rd
# says "N J" as it starts a job, its runner "P J PID RUNNER" and, when it
# wrote the exit status, "X J" (lines shorter than PIPE_BUF: whole).  am
# waits on that pipe with a timeout, so a command's end is delivered at
# once, and what still runs is polled for output.
LC_ALL=C
# The jobs get exactly their env file (and who runs them): nothing of the
# agent's environment but these is exported.
for v in $(compgen -e); do
  case $v in HOME | USER | LOGNAME | SHELL) ;; *) export -n "$v" ;; esac
done

# Job $i's runner (in rd's fork): the job, as a session of its own; its
# exit status to rc (a whole line: the followers read only whole ones).
ar() {
  # (its events to am may find am gone: the status is written anyway)
  trap '' PIPE
  exec 3> >(exec cat > "$J/meta")
  mc=$!
  (
    trap - PIPE
    [ -d "$J" ] || exit 125
    export AIRLOCK_SSH_JOB=$JN
    eval "$E"
    cd "$CW" 2> /dev/null || cd /
    exec setsid "$@"
  ) 4< "$J/script" > "$J/out" 2> "$J/err" < /dev/null 7>&- &
  p=$!
  exec 3>&-
  echo $p > "$J/pid"
  printf 'P %s %s %s\n' "$i" "$p" "$BASHPID"
  # The remote deadline: a fork reading a pipe that we close at the end,
  # with a timeout (no sleep to start, nothing to kill).
  wp=
  [ "$T" -gt 0 ] && exec 7> >(
    exec > /dev/null 2>&1
    printf -v t '%d.%03d' $((T / 1000)) $((T % 1000))
    read -r -t $t
    [ $? -gt 128 ] || exit 0
    [ ! -d "$J" ] || [ -e "$J/rc" ] || ks 15 $p "$JN\$"
    printf -v t '%d.%03d' $((G / 1000)) $((G % 1000))
    read -r -t $t
    [ $? -gt 128 ] || exit 0
    [ ! -d "$J" ] || [ -e "$J/rc" ] || ks 9 $p "$JN\$"
  ) && wp=$!
  wait $p
  rc=$?
  wait $mc
  echo $rc > "$J/rc"
  exec 7>&-
  printf 'X %s\n' "$i"
  # (it ends at once now: reaped here, not left to init)
  [ -z "$wp" ] || wait $wp
}

rd() {
  while read -r c i a b t g; do
    JN=$TOK-$i J=$B/$TOK-$i
    case $c in
    N)
      IFS= read -r w || break
      eval "set -- $w"
      CW=$1 T=$t G=$g
      shift
      # Script and env are text (bash reads no NUL): read here rather
      # than by a process of their own.
      S= E=
      [ "$a" -gt 0 ] && { IFS= read -r -N "$a" S || break; }
      [ "$b" -gt 0 ] && { IFS= read -r -N "$b" E || break; }
      IFS= read -r g || break
      e=
      mkdir "$J" 2> /dev/null || mkdir -p "$B" 2> /dev/null
      [ -d "$J" ] || e=$(mkdir "$J" 2>&1) || e="cannot create the job directory $J on the remote host: $e"
      if [ -z "$e" ] && ! { printf %s "$S" > "$J/script" && : > "$J/out" && : > "$J/err" \
             && : > "$J/meta"; } 2> /dev/null; then
        # Again for the words of the error (in a variable: on a full disk
        # a file for it stays empty).
        e=$({ printf %s "$S" > "$J/script" && : > "$J/out" && : > "$J/err" && : > "$J/meta"; } 2>&1)
        e="cannot write the job directory $J on the remote host: ${e:-no space left on its disk?}"
      fi
      if [ -n "$e" ]; then
        rm -rf "$J"
        printf 'F %s %s\n' "$i" "$e"
        continue
      fi
      # Followed before its runner can say anything of it.
      printf 'N %s\n' "$i"
      ( ar "$@" ) < /dev/null 2> /dev/null &
      echo $! > "$J/runner"
      ;;
    K | T) sg "$c" "$a" ;;
    A) rm -rf "$J" & ;;
    esac
  done
  printf 'Q\n'
}

# File $1 read whole into rs (its parts ended by NUL) and rl (the rest),
# n its size, when it is small (16 KiB, 16 parts; bash reads about a
# byte per 0.3 us, a part costs more): read by builtins, which keep every
# byte but NUL, put back between the parts.  1 when larger.
sm() {
  local x
  rs=() n=0
  while IFS= read -r -d '' -n 16385 x; do
    rs+=("$x")
    n=$((n + ${#x} + 1))
    [ $n -le 16384 ] && [ ${#rs[@]} -le 16 ] || return 1
  done < "$1"
  rl=$x
  n=$((n + ${#x}))
  [ $n -le 16384 ]
}

# Follow job $1: its new output, then its end.  1 when it ended.
fl() {
  local i=$1 e=0 rc= n k s o f a=1
  J=$B/$TOK-$i
  [ -e "$J/rc" ] && read -r rc < "$J/rc" && e=1
  if [ $e = 1 ]; then
    # Ended: what is small and not sent yet goes without a process.
    for k in 1 2 3; do
      case $k in 1) f=out ;; 2) f=err ;; *) f=meta ;; esac
      eval "o=\$o${k}_$i"
      [ "$o" = 0 ] && [ -e "$J/$f" ] || { a=0; continue; }
      [ -s "$J/$f" ] || continue
      sm "$J/$f" || { a=0; continue; }
      printf 'O %s %s 0 %s\n' "$i" $k $n || exit 0
      [ ${#rs[@]} = 0 ] || printf '%s\0' "${rs[@]}"
      printf %s "$rl"
      eval "o${k}_$i=$n"
      mv=1
    done
  else
    a=0
  fi
  if [ $a = 0 ]; then
    set -- $(stat -c %s "$J/out" "$J/err" "$J/meta" 2> /dev/null)
    if [ $# != 3 ]; then
      printf 'L %s %s\n' "$i" "its job directory $J vanished on the remote host while it ran"
      return 1
    fi
    for k in 1 2 3; do
      eval "o=\$o${k}_$i s=\$$k"
      [ "$s" -gt "$o" ] || continue
      n=$((s - o))
      case $k in 1) f=out ;; 2) f=err ;; *) f=meta ;; esac
      printf 'O %s %s %s %s\n' "$i" $k "$o" "$n" || exit 0
      dd if="$J/$f" bs=64K iflag=skip_bytes,count_bytes skip="$o" count="$n" status=none || exit 0
      eval "o${k}_$i=$s"
      mv=1
    done
  fi
  [ $e = 1 ] || return 0
  eval "s=\$sp_$i"
  [ -n "$s" ] || { read -r s < "$J/pid"; printf 'S %s %s\n' "$i" "$s"; }
  printf 'R %s %s\n' "$i" "$rc" || exit 0
  return 1
}

am() {
  # Output of what runs is polled every 100 ms, then 200 (an end is an
  # event: no poll waits for it).
  jl= d=100 hb=0 hn=0 ev=0
  printf 'H\n'
  while :; do
    to=2
    [ -z "$jl" ] || printf -v to '0.%03d' $d
    # A timeout may fall inside a line (bash reads a pipe byte by byte):
    # its rest is read then.
    l=
    IFS= read -r -t $to l
    st=$?
    if [ $st -gt 128 ] && [ -n "$l" ]; then
      IFS= read -r r
      st=$?
      l=$l$r
    fi
    if [ $st = 0 ]; then
      read -r c i a b <<< "$l"
      case $c in
      N) jl="$jl $i"; eval "o1_$i=0 o2_$i=0 o3_$i=0 sp_$i= rp_$i=" ;;
      P)
        eval "sp_$i=$a rp_$i=$b"
        printf 'S %s %s\n' "$i" "$a" || exit 0
        ;;
      X)
        if ! fl $i; then
          jl=" $jl "
          jl=${jl/ $i / }
        fi
        ;;
      F) printf 'E %s\n' "$i $a $b" ;;
      Q) exit 0 ;;
      esac
      ev=$((ev + 1))
      # Events in a row would starve the others' output: polled anyway.
      [ $ev -ge 20 ] || continue
    elif [ $st -le 128 ]; then
      exit 0
    fi
    ev=0
    [ -n "$jl" ] || { printf 'H\n' || exit 0; continue; }
    mv=0 l=
    for i in $jl; do fl $i && l="$l $i"; done
    jl=$l
    if [ $mv = 1 ]; then d=100 hb=0; continue; fi
    hb=$((hb + d)) d=200
    if [ $hb -ge 2000 ]; then
      hb=0
      printf 'H\n' || exit 0
      hn=$((hn + 1))
      l=
      for i in $jl; do
        J=$B/$TOK-$i
        [ $((hn % 30)) != 0 ] || touch "$J"
        eval "rp=\$rp_$i sp=\$sp_$i"
        if [ -n "$rp" ] && ! kill -0 "$rp" 2> /dev/null && [ ! -e "$J/rc" ]; then
          [ -z "$sp" ] || ks 9 "$sp" "$TOK-$i\$"
          rm -rf "$J"
          printf 'L %s %s\n' "$i" "its remote wrapper (pid $rp) was killed on the remote host before the command ended, so its exit status is lost"
        else
          l="$l $i"
        fi
      done
      jl=$l
    fi
  done
}

rd | am
