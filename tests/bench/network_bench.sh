#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# make bench, the network allowlist: connection latency and throughput
# through airlock-egress's stack (a sandbox with network: allowlist) against
# the same client on the host, loopback direct, side by side in one run.
# Prints figures only: timing never fails anything.  Needs the build in
# BUILDDIR; run as root (the helper runs in its root mode: the stack, not
# the privilege mode, is what is measured).
set -u
cd "$(dirname "$0")/../.." || exit 2
BUILDDIR=${BUILDDIR:-build}
case $BUILDDIR in /*) ;; *) BUILDDIR=$PWD/$BUILDDIR ;; esac
N=${NET_CONNECTS:-200}
MIB=${NET_MIB:-256}
if [ "$(id -u)" != 0 ]; then
  echo "network bench: skipped (needs root)"; exit 0
fi
for b in airlock airlock-daemon airlock-helper airlock-supervisor airlock-egress; do
  [ -x "$BUILDDIR/$b" ] || { echo "network bench: skipped ($BUILDDIR/$b is missing: make first)"; exit 0; }
done
T=$(mktemp -d /tmp/airlock-netbench.XXXXXX) || exit 0
SERVERS=''
cleanup () {
  [ -n "$SERVERS" ] && kill "$SERVERS" 2>/dev/null
  env HOME="$T/home" XDG_RUNTIME_DIR="$T/run" AIRLOCK_DAEMON="$BUILDDIR/airlock-daemon" \
    timeout -k 2 10 "$BUILDDIR/airlock" daemon stop >/dev/null 2>&1
  rm -rf "$T"
}
trap cleanup EXIT
mkdir -p "$T/home" "$T/run" "$T/net"
chmod 0700 "$T/run"
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=allowed.test \
  -keyout "$T/net/key.pem" -out "$T/net/cert.pem" 2>/dev/null
setsid python3 tests/network/servers.py "$T/net" "$T/net/cert.pem" "$T/net/key.pem" \
  > "$T/net/servers.log" 2>&1 < /dev/null &
SERVERS=$!
for _ in $(seq 100); do [ -s "$T/net/ports" ] && break; sleep 0.1; done
read -r HTTP1 _ < "$T/net/ports" || { echo "network bench: the test servers did not start"; exit 0; }
mkdir -p "$T/cfg"
cat > "$T/cfg/config.json" <<JSON
{"network": {"allow": ["allowed.test:$HTTP1"], "resolve": {"allowed.test": "127.0.0.1"},
             "allow_ranges": ["127.0.0.1/32"], "upstream_ranges": ["127.0.0.0/8"]}}
JSON
cp tests/bench/network_client.py "$T/home/client.py"
run_env=(env -i PATH=/usr/bin:/bin HOME="$T/home" XDG_RUNTIME_DIR="$T/run" AIRLOCK_CONFIG="$T/cfg/config.json"
  AIRLOCK_HELPER="$BUILDDIR/airlock-helper" AIRLOCK_DAEMON="$BUILDDIR/airlock-daemon"
  AIRLOCK_SUPERVISOR="$BUILDDIR/airlock-supervisor" AIRLOCK_EGRESS="$BUILDDIR/airlock-egress"
  AIRLOCK_DEFAULT_RULES="$PWD/policy/default.rules" AIRLOCK_POLICY_MODE=approve)
direct=$(timeout -k 5 600 python3 tests/bench/network_client.py 127.0.0.1 "$HTTP1" "$N" "$MIB") ||
  { echo "network bench: the direct run failed"; exit 0; }
stack=$(cd "$T/home" && timeout -k 5 600 "${run_env[@]}" "$BUILDDIR/airlock" run --network allowlist \
  --workdir "$T/home" -- python3 "$T/home/client.py" allowed.test "$HTTP1" "$N" "$MIB") ||
  { echo "network bench: the run through the stack failed: $stack"; exit 0; }
python3 - "$direct" "$stack" "$N" "$MIB" <<'PY'
import json, statistics, sys
d, s = json.loads(sys.argv[1]), json.loads(sys.argv[2])
n, mib = sys.argv[3], int(sys.argv[4])
def row(label, v):
    return f"  {label:<34} median {statistics.median(v):7.2f} ms   min {min(v):7.2f}   max {max(v):8.2f}"
print(f"network allowlist: {n} connections (connect + GET, new connection each), then one GET of {mib} MiB")
print(row("loopback direct (host)", d["connect_ms"]))
print(row("through airlock-egress (sandbox)", s["connect_ms"]))
print(f"  connection latency ratio, median to median: {statistics.median(s['connect_ms']) / statistics.median(d['connect_ms']):.2f}x")
td, ts = d["bulk_bytes"] / d["bulk_s"] / 2**20, s["bulk_bytes"] / s["bulk_s"] / 2**20
print(f"  throughput: direct {td:8.1f} MiB/s, through the stack {ts:8.1f} MiB/s ({ts / td:.2f}x)")
PY
