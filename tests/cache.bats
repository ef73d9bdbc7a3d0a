#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# The singularity backend's SIF cache through `airlock cache` and the
# daemon (docs/cache.md): built once, listed, evicted under a small cap,
# rebuilt with a notice when deleted or corrupted behind its back, a build
# refused under the free-disk floor (a small tmpfs), two daemons fetching
# one image build it once, prune.  The builds are a fake `apptainer
# build` of this file's (it writes a SIF header and counts builds in a
# log); nothing here depends on the privilege mode, so it runs in one.

load helpers

setup () {
  N=$BATS_TEST_NUMBER
  RUNDIR="$T/xdg-cache-$N"
  RUNDIR2="$T/xdg-cache2-$N"
  FAKE="$T/cache-fake-$N"
  CROOT="$T/cache-$N"
  MNT="$T/cache-tmpfs-$N"
  rm -rf "$RUNDIR" "$RUNDIR2" "$FAKE" "$CROOT"
  mkdir -p "$RUNDIR" "$RUNDIR2" "$FAKE" "$CROOT"
  chown "$TEST_USER" "$RUNDIR" "$RUNDIR2" "$CROOT"
  chmod 0700 "$RUNDIR" "$RUNDIR2"
  # The fake: knobs (DELAY, SIZE) from $FAKE/knobs, one log line a run.
  cat > "$FAKE/apptainer" <<SH
#!/bin/sh
[ -f "$FAKE/knobs" ] && . "$FAKE/knobs"
echo "\$*" >> "$FAKE/log"
[ "\$1" = build ] || { echo "FATAL:   this fake only builds" >&2; exit 255; }
echo "INFO:    Starting build..." >&2
[ -n "\${DELAY:-}" ] && sleep "\$DELAY"
{ printf '#!/usr/bin/env run-singularity\n\0SIF_MAGIC01'; head -c \$(( \${SIZE:-1048576} - 43 )) /dev/zero; } > "\$2"
echo "INFO:    Creating SIF file..." >&2
SH
  chmod 0755 "$FAKE" "$FAKE/apptainer"
  touch "$FAKE/log"
  chown "$TEST_USER" "$FAKE/log"
  CDIR="$CROOT/sif"
  export EXTRA_ENV="XDG_RUNTIME_DIR=$RUNDIR AIRLOCK_DAEMON_IDLE_EXIT=30 AIRLOCK_SINGULARITY_EXECUTABLE=$FAKE/apptainer AIRLOCK_SINGULARITY_CACHE_DIR=$CDIR AIRLOCK_SINGULARITY_DISK_FLOOR=1M"
}

teardown () {
  local d
  for d in "$RUNDIR" "$RUNDIR2"; do
    EXTRA_ENV="XDG_RUNTIME_DIR=$d" as_user timeout -k 5 20 "$AIRLOCK" daemon stop >/dev/null 2>&1 || true
  done
  mountpoint -q "$MNT" && umount "$MNT"
  rm -rf "$RUNDIR" "$RUNDIR2" "$FAKE" "$CROOT" "$MNT"
}

# airlock cache as the test user; extra assignments first (they win).
cache () { as_user timeout -k 5 60 "$AIRLOCK" cache "$@"; }
cache_with () { local extra=$1; shift; EXTRA_ENV="$EXTRA_ENV $extra" cache "$@"; }
serve_lines () { printf '%s\n' "$@" | as_user timeout -k 5 60 "$AIRLOCK" serve; }
builds () { grep -c '^build ' "$FAKE/log" || true; }
hashname () { printf '%s' "$1" | sha256sum | cut -c1-32; }

@test "cache: fetch builds once, then ls shows it" {
  run cache fetch docker://debian:bookworm-slim
  echo "$output"
  [ "$status" -eq 0 ]
  sif="$CDIR/$(hashname docker://debian:bookworm-slim).sif"
  [[ "$output" == *"building docker://debian:bookworm-slim into a SIF"* ]]
  [[ "$output" == *"INFO:    Starting build..."* ]]
  [ "$(printf '%s\n' "$output" | tail -n 1)" = "$sif" ]
  [ "$(dd if="$sif" bs=1 skip=32 count=9 2>/dev/null)" = SIF_MAGIC ]
  [ "$(builds)" -eq 1 ]
  # the build ran with a temp and cache dir of its own, outside the user's
  grep -q "^build $CDIR/.tmp-" "$FAKE/log"
  run cache fetch docker://debian:bookworm-slim
  [ "$status" -eq 0 ]
  [[ "$output" == *"already in the cache"* ]]
  [ "$(builds)" -eq 1 ]
  run cache ls
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "$output" == *"docker://debian:bookworm-slim"*"1M"*" ok "*"$sif"* ]]
  [[ "$output" == *"1 SIF, 1M of 20G (singularity.cache_max), in $CDIR"* ]]
  # what the directory holds: the SIF and its record, nothing half-done
  [ -f "${sif%.sif}.json" ]
  ! ls -a "$CDIR" | grep -q '^\.tmp-' || false
  [ "$(stat -c %a "$CDIR")" = 700 ]
}

@test "cache: the least recently used SIFs are evicted under a small cap" {
  cap="AIRLOCK_SINGULARITY_CACHE_MAX=2500K"
  cache_with "$cap" fetch docker://a
  cache_with "$cap" fetch docker://b
  # a used again: b is now the least recently used
  cache_with "$cap" fetch docker://a
  run cache_with "$cap" fetch docker://c
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "$output" == *"evicted docker://b (1M, last used "*"): the cache was over singularity.cache_max 2.4M"* ]]
  [ ! -e "$CDIR/$(hashname docker://b).sif" ]
  [ ! -e "$CDIR/$(hashname docker://b).json" ]
  run cache_with "$cap" ls
  echo "$output"
  [[ "$output" == *"docker://a"* && "$output" == *"docker://c"* && "$output" != *"docker://b"* ]]
  [[ "$output" == *"2 SIFs, 2M of 2.4M"* ]]
  [ "$(builds)" -eq 3 ]
}

@test "cache: a cached SIF deleted or corrupted behind the cache's back is rebuilt, with a notice" {
  cache fetch docker://x
  sif="$CDIR/$(hashname docker://x).sif"
  rm "$sif"
  run cache ls
  [[ "$output" == *"docker://x"*" missing "* ]]
  run cache fetch docker://x
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "$output" == *"cached SIF for docker://x is missing; rebuilding"* ]]
  [ "$(builds)" -eq 2 ]
  # the magic overwritten (the size kept)
  printf 'XXXXXXXXX' | dd of="$sif" bs=1 seek=32 conv=notrunc 2>/dev/null
  run cache fetch docker://x
  [[ "$output" == *"cached SIF for docker://x is corrupt (no SIF magic); rebuilding"* ]]
  [ "$(builds)" -eq 3 ]
  # cut short (a /scratch cleanup, a full disk)
  truncate -s 4096 "$sif"
  run cache fetch docker://x
  [[ "$output" == *"cached SIF for docker://x is corrupt (4096 bytes, its record says 1048576); rebuilding"* ]]
  [ "$(builds)" -eq 4 ]
  [ "$(stat -c %s "$sif")" -eq 1048576 ]
}

@test "cache: a build that would cross the free-disk floor is refused, with the numbers" {
  mkdir -p "$MNT"
  mount -t tmpfs -o size=20M,mode=0700,uid="$(id -u "$TEST_USER")" tmpfs "$MNT"
  CDIR="$MNT/sif"
  env="AIRLOCK_SINGULARITY_CACHE_DIR=$CDIR"
  # never built: the size is a guess
  run cache_with "$env" fetch docker://big
  echo "$output"
  [ "$status" -eq 1 ]
  [[ "$output" == *"not building docker://big: 20M free on the filesystem of $CDIR, the SIF needs about 512M (a guess: it was never built here), which would leave nothing, below singularity.disk_floor 1M"* ]]
  [ "$(builds)" -eq 0 ]
  # its record says 8M (the SIF itself was cleaned away): 12M would be
  # left, below a 16M floor; above a 4M one it builds
  name=$(hashname docker://big)
  printf '{"ref":"docker://big","size":8388608,"built_at":1,"last_used":1}\n' > "$CDIR/$name.json"
  chown "$TEST_USER" "$CDIR/$name.json"
  run cache_with "$env AIRLOCK_SINGULARITY_DISK_FLOOR=16M" fetch docker://big
  echo "$output"
  [ "$status" -eq 1 ]
  [[ "$output" == *"cached SIF for docker://big is missing; rebuilding"* ]]
  [[ "$output" == *"20M free on the filesystem of $CDIR, the SIF needs about 8M (its last build's size), which would leave 12M, below singularity.disk_floor 16M"* ]]
  [ "$(builds)" -eq 0 ]
  echo 'SIZE=8388608' > "$FAKE/knobs"
  run cache_with "$env AIRLOCK_SINGULARITY_DISK_FLOOR=4M" fetch docker://big
  echo "$output"
  [ "$status" -eq 0 ]
  [ "$(builds)" -eq 1 ]
  [ "$(stat -c %s "$CDIR/$name.sif")" -eq 8388608 ]
}

@test "cache: two daemons fetching one image at once build it once" {
  echo 'DELAY=3' > "$FAKE/knobs"
  cache fetch docker://shared > "$CROOT/first.out" 2>&1 &
  first=$!
  # the first build is running: the second daemon's fetch must wait for it
  for i in $(seq 100); do [ "$(builds)" -ge 1 ] && break; sleep 0.1; done
  [ "$(builds)" -eq 1 ]
  run cache_with "XDG_RUNTIME_DIR=$RUNDIR2" fetch docker://shared
  wait $first
  echo "first: $(cat "$CROOT/first.out")"
  echo "second: $output"
  [ "$status" -eq 0 ]
  [[ "$output" == *"waiting for another build of docker://shared to finish"* ]]
  [[ "$output" == *"already in the cache"* ]]
  sif="$CDIR/$(hashname docker://shared).sif"
  [ "$(tail -n 1 "$CROOT/first.out")" = "$sif" ]
  [ "$(printf '%s\n' "$output" | tail -n 1)" = "$sif" ]
  [ "$(builds)" -eq 1 ]
  # two daemons did it: one in each runtime directory
  [ -S "$RUNDIR/airlock/daemon.sock" ] && [ -S "$RUNDIR2/airlock/daemon.sock" ]
}

@test "cache: prune evicts down to the cap, prune --all removes every SIF" {
  cache fetch docker://a
  cache fetch docker://b
  cache fetch docker://c
  run cache prune
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "$output" == "removed 0 SIFs, nothing freed" ]]
  run cache_with AIRLOCK_SINGULARITY_CACHE_MAX=2M prune
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "$output" == *"evicted docker://a (1M, last used "* ]]
  [[ "$output" == *"removed 1 SIF, 1M freed" ]]
  # what an interrupted build left goes too
  touch "$CDIR/.tmp-$(hashname docker://z)-1.sif"
  chown "$TEST_USER" "$CDIR/.tmp-$(hashname docker://z)-1.sif"
  run cache prune --all
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "$output" == *"removed docker://b (1M"* && "$output" == *"removed docker://c (1M"* ]]
  [[ "$output" == *"removed 2 SIFs, 2M freed" ]]
  [ ! -e "$CDIR/.tmp-$(hashname docker://z)-1.sif" ]
  run cache ls
  [[ "$output" == *"0 SIFs, 0 bytes of 20G"* ]]
}

@test "cache: bad requests are errors that say what is wrong" {
  run cache fetch shub://x
  [ "$status" -eq 1 ]
  [[ "$output" == *"unsupported scheme 'shub://': use docker://, oras:// or library://"* ]]
  run cache fetch
  [ "$status" -eq 2 ]
  run cache prune --everything
  [ "$status" -eq 2 ]
  run as_user timeout -k 5 60 "$AIRLOCK" cache --help
  [ "$status" -eq 0 ]
  [[ "$output" == *"airlock cache fetch IMAGE"* ]]
  run cache_with AIRLOCK_SINGULARITY_EXECUTABLE=/no/such/apptainer fetch docker://x
  [ "$status" -eq 1 ]
  [[ "$output" == *"singularity.executable /no/such/apptainer: not an executable file"* ]]
  run serve_lines '{"id":1,"op":"cache","action":"ls","verbose":true}' \
    '{"id":2,"op":"cache","action":"list"}' '{"id":3,"op":"cache","action":"ls","image":"docker://x"}'
  echo "$output"
  [[ "$output" == *'"id":1,"ok":false,"error":{"code":"unknown_field","message":"unknown field \"verbose\" for op \"cache\" (it takes: action, image, all, client_env)"}'* ]]
  [[ "$output" == *'"id":2,"ok":false,"error":{"code":"bad_request"'* ]]
  [[ "$output" == *'"id":3,"ok":false,"error":{"code":"bad_request","message":"field \"image\" is for fetch only"}'* ]]
}
