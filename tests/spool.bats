#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# The output spool and the clients of a job (issue 10): every byte kept
# on disk by offset, a slow, stalled or vanished client costs the daemon
# nothing, a client can re-attach and resume, the cap and a full disk are
# reported, spill files belong to the client, bad request bytes get one
# clear error.  Backend-agnostic: BACKEND=local (default), docker or ssh.

load helpers

setup () {
  BACKEND=${BACKEND:-local}
  RUNDIR="$T/spool-xdg-$BATS_TEST_NUMBER"
  mkdir -p "$RUNDIR"
  chown "$TEST_USER" "$RUNDIR"
  chmod 0700 "$RUNDIR"
  SOCK="$RUNDIR/airlock/daemon.sock"
  export EXTRA_ENV="XDG_RUNTIME_DIR=$RUNDIR AIRLOCK_SUPERVISOR=$AIRLOCK_SUPERVISOR AIRLOCK_BACKEND=$BACKEND AIRLOCK_DAEMON_IDLE_EXIT=30 ${BACKEND_ENV:-} ${SESSION_ENV:-}"
}

teardown () {
  [ -n "${client:-}" ] && kill -KILL "$client" 2>/dev/null
  # a raw client this test left waiting, and only it
  pkill -KILL -u "$TEST_USER" -f "spool_client.py $SOCK " 2>/dev/null
  stop_daemon
  ssh_cleanup
  mountpoint -q "$RUNDIR" && umount -l "$RUNDIR"
  rm -rf "$RUNDIR"
  true
}

al () { as_user "$AIRLOCK" "$@"; }
api () { printf '%s\n' "$@" | as_user "$AIRLOCK" serve; }
client_py () { as_user timeout -k 5 "${CLIENT_TIMEOUT:-120}" python3 "$SPOOL_CLIENT" "$SOCK" "$@"; }

# A field of the last JSON line of $output.
field () {
  printf '%s\n' "$output" | grep '^{' | tail -n 1 |
    python3 -c 'import json,sys; v=json.load(sys.stdin); [v := v[int(k)] if isinstance(v, list) else v[k] for k in sys.argv[1].split(".")]; print(json.dumps(v) if not isinstance(v, str) else v)' "$1"
}

# CPU seconds (user + system) the process has used.
cpu_seconds () {
  awk '{ printf "%.2f\n", ($14 + $15) / 100 }' "/proc/$1/stat" 2>/dev/null || echo 0
}

@test "spool: a reader slower than the command gets every byte, in order, stdout and stderr apart" {
  al session open s
  as_user "$AIRLOCK" exec s -- 'seq 1 200000; seq 1 5000 >&2' 2> "$T/spool-err" |
    (sleep 2; sha256sum) > "$T/spool-sum"
  [ "$(cut -d' ' -f1 < "$T/spool-sum")" = "$(seq 1 200000 | sha256sum | cut -d' ' -f1)" ]
  # stderr: the command's, then airlock's word on where the whole output is
  grep -v '^airlock: the full output is in ' "$T/spool-err" > "$T/spool-err2"
  [ "$(sha256sum < "$T/spool-err2" | cut -d' ' -f1)" = "$(seq 1 5000 | sha256sum | cut -d' ' -f1)" ]
}

@test "spool: a client that never reads 1 GB of output costs the daemon under 64 MB" {
  al session open s
  client_py noread s 'head -c 1000000000 /dev/zero; echo done' > "$T/spool-job" 3>&- &
  for i in $(seq 100); do [ -s "$T/spool-job" ] && break; sleep 0.1; done
  job=$(cat "$T/spool-job")
  [ -n "$job" ]
  pid=$(daemon_pid)
  # The command runs to its end while its client reads nothing: the
  # output goes to the spool, not to memory.
  run api '{"id":1,"op":"job_wait","session":"s","job":'"$job"',"timeout":240}'
  echo "$output"
  [ "$(field state)" = exited ]
  [ "$(field exit_code)" = 0 ]
  [ "$(field output_bytes)" = 1000000005 ]
  hwm=$(awk '/^VmHWM/ { print $2 }' "/proc/$pid/status")
  echo "daemon peak RSS: $hwm kB"
  [ "$hwm" -lt 65536 ]
  # And the output is all there, by offset, for whoever wants it.
  run api '{"id":2,"op":"job_output","session":"s","job":'"$job"',"offset":1000000000}'
  [ "$(field data)" = "done" ]
}

@test "spool: kill -9 of the CLI mid-output: the command is interrupted and the daemon goes idle" {
  al session open s
  marker=$((RANDOM + 1000))
  as_user "$AIRLOCK" exec s -- "yes $marker" > /dev/null 2>&1 3>&- &
  for i in $(seq 100); do
    client=$(pgrep -u "$TEST_USER" -f "airlock exec s -- yes $marker") && break
    sleep 0.1
  done
  sleep 1
  kill -KILL "$client"
  pid=$(daemon_pid)
  # The first command of the session is job 2 (1 is the shell's bootstrap).
  # (An ssh job's output first lands on the remote disk: what it wrote
  # before the kill reached it arrives after, up to the spool's cap.)
  run api '{"id":1,"op":"job_wait","session":"s","job":2,"timeout":30}'
  echo "$output"
  [ "$(field cause)" = interrupted ]
  gone "^yes $marker"
  before=$(cpu_seconds "$pid")
  sleep 5
  after=$(cpu_seconds "$pid")
  echo "daemon CPU over 5 s: $before -> $after"
  awk -v a="$after" -v b="$before" 'BEGIN { exit !(a - b < 0.25) }'
  run al exec s -- 'echo usable'
  [ "$output" = usable ]
}

@test "spool: a client that vanishes and re-attaches at its offset gets every byte once" {
  SESSION_ENV="AIRLOCK_JOBS_ON_CLIENT_GONE=background" setup
  al session open s
  cmd='for i in $(seq 1 60000); do echo "line $i of the job"; done; sleep 1; seq 1 1000'
  run client_py cut s "$cmd" 200000 "$RUNDIR/part1"
  echo "$output"
  [ "$status" -eq 0 ]
  read -r job off <<< "$output"
  [ "$off" -ge 200000 ]
  [ "$(stat -c %s "$RUNDIR/part1")" -eq "$off" ]
  # The command went on without its client, as a background job.
  run client_py attach s "$job" "$off" "$RUNDIR/part2"
  echo "$output"
  [ "$status" -eq 0 ]
  [ "$(field event)" = end ]
  [ "$(field cause)" = exited ]
  [ "$(field exit_code)" = 0 ]
  want=$(bash -c "$cmd" | sha256sum | cut -d' ' -f1)
  got=$(cat "$RUNDIR/part1" "$RUNDIR/part2" | sha256sum | cut -d' ' -f1)
  [ "$got" = "$want" ]
}

@test "spool: attach replays a finished command from any offset; job_output reads it too" {
  run api '{"id":1,"op":"open","session":"s","workdir":"'"$WORK"'"}' \
          '{"id":2,"op":"exec","session":"s","command":"echo one; sleep 0.2; echo two >&2; sleep 0.2; echo three"}' \
          '{"id":3,"op":"attach","session":"s","job":2,"offset":4}' \
          '{"id":5,"op":"attach","session":"s","job":99}'
  echo "$output"
  [[ "$output" == *'"id":2,"ok":true,"event":"started","job":2'* ]]
  [[ "$output" == *'"id":2,"ok":true,"event":"result","exit_code":0,"job":2,"cause":"exited"'* ]]
  # attach from byte 4: the spool's bytes after it, each labelled with its
  # stream, exactly as the exec streamed them (between stdout and stderr the
  # spool has the order the daemon read them in, which a loaded remote
  # backend may not keep across 0.2 s: compare with the exec's own events)
  printf '%s\n' "$output" | grep '^{' | python3 -c '
import json, sys
labels = {2: [], 3: []}
for line in sys.stdin:
    m = json.loads(line)
    if m.get("event") == "output" and m["id"] in labels:
        labels[m["id"]] += [(m["stream"], ch) for ch in m["data"]]
        assert m["next_offset"] == len(labels[m["id"]]) + (4 if m["id"] == 3 else 0), m
full = labels[2]
assert "".join(c for _, c in full if _ == "stdout") == "one\nthree\n", full
assert "".join(c for _, c in full if _ == "stderr") == "two\n", full
assert labels[3] == full[4:], (labels[3], full)
'
  [[ "$output" == *'"id":3,"ok":true,"event":"end","job":2'*'"cause":"exited","next_offset":14}'* ]]
  [[ "$output" == *'"id":5,"ok":false,"error":{"code":"no_job"'* ]]
  # Finished: replayed whole, and readable by offset, in the spool's order
  # (the exec's own events above, whichever stream came first).
  full=$(printf '%s\n' "$output" | grep '^{' | python3 -c '
import json, sys
print(json.dumps([[m["stream"], m["data"]] for m in map(json.loads, sys.stdin)
                  if m.get("event") == "output" and m["id"] == 2]))')
  run api '{"id":6,"op":"attach","session":"s","job":2}' \
          '{"id":7,"op":"job_output","session":"s","job":2,"offset":0}'
  echo "$output"
  printf '%s\n' "$output" | grep '^{' | FULL="$full" python3 -c '
import json, os, sys
full = [(st, ch) for st, d in json.loads(os.environ["FULL"]) for ch in d]
replay, data = [], None
for m in map(json.loads, sys.stdin):
    if m.get("event") == "output" and m["id"] == 6:
        replay += [(m["stream"], ch) for ch in m["data"]]
    if m["id"] == 7:
        assert m["ok"] and m["next_offset"] == 14, m
        data = m["data"]
assert replay == full, (replay, full)
assert data == "".join(ch for _, ch in full), (data, full)
'
}

@test "spool: the cap is reported as spool_error; the command runs on, or stops by config" {
  SESSION_ENV="AIRLOCK_JOBS_SPOOL_MAX=1M" setup
  run api '{"id":1,"op":"open","session":"s","workdir":"'"$WORK"'"}' \
          '{"id":2,"op":"exec","session":"s","command":"head -c 3000000 /dev/zero; echo end >&2"}'
  echo "$output" | cut -c1-300
  [ "$(field exit_code)" = 0 ]
  [ "$(field cause)" = exited ]
  [[ "$(field spool_error)" == *"cap of 1048576 bytes (jobs.spool_max): 1951"*" later bytes were not kept"* ]]
  [ "$(stat -c %s "$(field spill_path)")" -eq 1048576 ]
  SESSION_ENV="AIRLOCK_JOBS_SPOOL_MAX=1M AIRLOCK_JOBS_ON_SPOOL_FULL=stop" setup
  run api '{"id":1,"op":"open","session":"t","workdir":"'"$WORK"'"}' \
          '{"id":2,"op":"exec","session":"t","command":"yes"}'
  echo "$output" | cut -c1-300
  [ "$(field cause)" = killed ]
  [[ "$(field spool_error)" == *"cap of 1048576 bytes"* ]]
}

@test "spool: a full disk is reported as spool_error, never silence" {
  # The daemon's runtime directory on a 4 MB file system.
  mount -t tmpfs -o size=4m,mode=0700 tmpfs "$RUNDIR"
  chown "$TEST_USER" "$RUNDIR"
  run api '{"id":1,"op":"open","session":"s","workdir":"'"$WORK"'"}' \
          '{"id":2,"op":"exec","session":"s","command":"head -c 8000000 /dev/zero"}'
  echo "$output" | cut -c1-300
  [ "$(field exit_code)" = 0 ]
  [ "$(field truncated)" = true ]
  [[ "$(field spool_error)" == *"could not be written (No space left on device)"*"later bytes were not kept"* ]]
}

@test "spool: spill files are the client's; a closed session's spools are gone" {
  run api '{"id":1,"op":"open","session":"s","workdir":"'"$WORK"'"}' \
          '{"id":2,"op":"exec","session":"s","command":"head -c 200000 /dev/zero | tr \"\\\\0\" y"}' \
          '{"id":3,"op":"exec","session":"s","background":true,"command":"yes | head -c 100000; sleep 300"}'
  spill=$(printf '%s\n' "$output" | grep '"id":2,"ok":true,"event":"result"' |
          python3 -c 'import json,sys; print(json.load(sys.stdin)["spill_path"])')
  [ "$(stat -c %s "$spill")" -eq 200000 ]
  ls "$RUNDIR/airlock/"
  # the background job's spool and its index, besides the spill
  [ "$(ls "$RUNDIR/airlock/" | grep -c '^airlock-job-')" -ge 3 ]
  al session close s
  [ "$(stat -c %s "$spill")" -eq 200000 ]
  ls "$RUNDIR/airlock/"
  [ "$(ls "$RUNDIR/airlock/" | grep '^airlock-job-')" = "$(basename "$spill")" ]
}

@test "spool: invalid UTF-8, a NUL byte and a 100 MB line get one clear error each" {
  al session open s
  {
    printf '{"id":1,"op":"ping","x":"\377\376"}\n'
    printf '{"id":2,"op":"ping"}\0{"id":3}\n'
    head -c 100000000 /dev/zero | tr '\0' a
    printf '\n{"id":4,"op":"ping"}\n'
  } > "$T/spool-bad"
  run client_py raw < "$T/spool-bad"
  echo "$output" | cut -c1-300
  [ "$status" -eq 0 ]
  [ "${#lines[@]}" -eq 4 ]
  [[ "${lines[0]}" == '{"ok":false,"error":{"code":"bad_request","message":"the request is not valid UTF-8 (at byte 25)'* ]]
  [[ "${lines[1]}" == '{"ok":false,"error":{"code":"bad_request","message":"the request holds a NUL byte at byte 20'* ]]
  [[ "${lines[2]}" == *'"code":"bad_request","message":"request line longer than 4 MiB: ignored up to its newline"'* ]]
  [ "${lines[3]}" = '{"id":4,"ok":true}' ]
  # Every answer is JSON text.
  printf '%s\n' "${lines[@]}" | python3 -c 'import json,sys; [json.loads(l) for l in sys.stdin]'
}
