# SPDX-License-Identifier: MIT
# The sandbox half of the managed Modal backend
# (backends/modal_managed_session.c), in POSIX sh.  It is the fixed
# `command` of every exec the client starts through the gateway (the
# build strips comment lines and indentation: build/gen/
# modal_managed_wrapper.h); nothing of a job is in it.  The job comes on
# stdin (the exec's stdinData): base64 of a header line, then its parts.
#
#   "R LS LE K M": run.  LS bytes of the session layer's script (given to
#     the command on fd 4), LE bytes of prelude (sh: the job's env as
#     export lines, its cd, `set --` with its argv), then the command's
#     own stdin.  The command runs under `env -i` with exactly that env
#     plus AIRLOCK_MODAL_JOB=M (its mark: what the kill path finds its
#     processes by), in a session of its own, fd 3 a fifo into a file.
#     Its stdout and stderr, merged, go through enc: lines of base64, one
#     per read (the gateway's output is text; this keeps it binary-safe
#     and live).  When it ends: whatever is left of it is killed, then the
#     line ":K" (never base64: ':' is not in its alphabet), then the fd-3
#     file in base64 (one line), and the exit status is its.
#   "X M SIG": kill.  SIG to every process of job M: those with its mark,
#     and the sessions its marked processes lead.
#   "A K T N O": a part of an upload (file_put), the rest of the input,
#     appended to /tmp/.airlock-upload-T-N.tar (T random, N the ticket),
#     which the first part (O = 0) creates (0600, never an existing one)
#     and which must have O bytes before; then ":K SIZE".
#   "G K": a download (file_get): the file named by the rest of the input
#     as enc lines, then removed, then ":K SIZE".  "D": that file removed.
#
# Anything else the wrapper says is a plain "airlock: ..." line (exit 125).
#
# The gateway's cancel and timeout kill the exec's process group, which
# the job left: a watchdog in a session of its own kills the job (its mark
# in the job directory's k) and removes the job directory when this
# wrapper dies before it is done.
umask 077
KS='m=$1 s=$2 l=
e=$(grep -lzs "^AIRLOCK_MODAL_JOB=$m\$" /proc/[0-9]*/environ)
for f in $e; do
  d=${f%/environ}
  t=
  read -r t 2>/dev/null < "$d/stat" || continue
  t=${t##*) }
  set -- $t
  [ "$4" != "${d#/proc/}" ] || l="$l $4"
  kill -"$s" "${d#/proc/}" 2>/dev/null
done
[ -n "$l" ] || exit 0
for d in /proc/[0-9]*; do
  t=
  read -r t 2>/dev/null < "$d/stat" || continue
  t=${t##*) }
  set -- $t
  for i in $l; do [ "$4" != "$i" ] || kill -"$s" "${d#/proc/}" 2>/dev/null; done
done'
fail() { echo "airlock: $*"; [ -z "${D:-}" ] || rm -rf "$D"; exit 125; }
enc() {
  b=${1:-65536}
  while c=$(dd bs="$b" count=1 2>/dev/null | base64 -w 0) && [ -n "$c" ]; do
    printf '%s\n' "$c" || return 1
  done
}
D=$(mktemp -d /tmp/.airlock-modal.XXXXXXXX) || fail "cannot make a job directory in the sandbox's /tmp"
setsid sh -c 'while kill -0 "$1" 2>/dev/null; do sleep 0.5; done
[ -d "$2" ] || exit 0
m=
read -r m 2>/dev/null < "$2/k"
[ -z "$m" ] || sh -c "$3" sh "$m" 9 2>/dev/null
rm -rf "$2"' sh "$$" "$D" "$KS" < /dev/null > /dev/null 2>&1 &
base64 -d > "$D/p" 2>/dev/null || fail "the job did not arrive whole (base64)"
read -r W A B C E < "$D/p" || fail "the job has no header"
case $W in
X)
  case $A$B in *[!0-9a-f]*|'') fail "a bad kill request" ;; esac
  rm -rf "$D"
  sh -c "$KS" sh "$A" "$B" 2>/dev/null
  exit 0 ;;
A)
  case $A$B in *[!0-9a-f]*|'') fail "a bad upload request" ;; esac
  case $C$E in *[!0-9]*|'') fail "a bad upload request" ;; esac
  f=/tmp/.airlock-upload-$B-$C.tar
  h=$(head -n 1 "$D/p" | wc -c)
  if [ "$E" = 0 ]; then
    (set -C; : > "$f") 2>/dev/null || fail "cannot create the upload's file in the sandbox's /tmp"
  fi
  [ -f "$f" ] && [ ! -L "$f" ] || fail "the upload's file is gone from the sandbox"
  z=$(($(wc -c < "$f")))
  [ "$z" = "$E" ] || fail "the upload's file has $z bytes in the sandbox, not $E"
  tail -c +$((h + 1)) "$D/p" >> "$f" || fail "cannot write the upload's file (is the sandbox's disk full?)"
  rm -rf "$D"
  printf ':%s %s\n' "$A" "$(($(wc -c < "$f")))"
  exit 0 ;;
G|D)
  h=$(head -n 1 "$D/p" | wc -c)
  f=$(tail -c +$((h + 1)) "$D/p")
  rm -rf "$D"
  D=
  [ -n "$f" ] || fail "no file named"
  [ "$W" = G ] || { rm -f "$f"; exit 0; }
  case $A in *[!0-9a-f]*|'') rm -f "$f"; fail "a bad download request" ;; esac
  [ -f "$f" ] && [ -r "$f" ] || { rm -f "$f"; fail "the download's file is not in the sandbox"; }
  z=$(($(wc -c < "$f")))
  enc 1048576 < "$f" || { rm -f "$f"; fail "cannot read the download's file"; }
  rm -f "$f"
  printf ':%s %s\n' "$A" "$z"
  exit 0 ;;
R) ;;
*) fail "an unknown request" ;;
esac
case $A$B$C$E in *[!0-9a-f]*|'') fail "a bad job header" ;; esac
echo "$E" > "$D/k" || fail "cannot write the job directory (is the sandbox's disk full?)"
h=$(head -n 1 "$D/p" | wc -c)
{ tail -c +$((h + 1)) "$D/p" | head -c "$A" > "$D/s" &&
  tail -c +$((h + A + 1)) "$D/p" | head -c "$B" > "$D/e" &&
  tail -c +$((h + A + B + 1)) "$D/p" > "$D/i" && rm -f "$D/p" &&
  mkfifo "$D/m" "$D/o"; } 2>/dev/null || fail "cannot write the job directory (is the sandbox's disk full?)"
cat "$D/m" > "$D/meta" &
mc=$!
enc < "$D/o" &
ec=$!
env -i AIRLOCK_MODAL_JOB="$E" sh -c '. "$0/e" && exec setsid "$@"' "$D" 3> "$D/m" 4< "$D/s" < "$D/i" > "$D/o" 2>&1 &
p=$!
wait "$p"
rc=$?
sh -c "$KS" sh "$E" 9 2>/dev/null
wait "$ec"
wait "$mc"
printf ':%s\n' "$C"
base64 -w0 < "$D/meta"
rm -rf "$D"
exit "$rc"
