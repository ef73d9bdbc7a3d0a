#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# airlock-egress alone (issue 18), as root: airlock-egress-tap
# (tests/egress_tap.c) does what the helper and the broker will do: a tap
# eth0 in a new network namespace, the tap fd on airlock-egress's fd 3
# (which runs in the host's namespace), the policy on its fd 0.  Clients
# run in the namespace (nsenter), with /etc/resolv.conf naming 10.99.0.3.
# Upstream servers (tests/egress/servers.py) listen on 127.0.0.1 and
# 127.0.0.2 only, and network.upstream_ranges is 127.0.0.0/8: no packet
# leaves this machine.
#
#   bats tests/egress.bats     (after make build/airlock-egress
#                               build/airlock-egress-tap)
# AIRLOCK_EGRESS / AIRLOCK_EGRESS_TAP name other builds (e.g. ASan's).
# The peek deadline is shortened to 1.5 s with AIRLOCK_EGRESS_PEEK_MS
# (a test-only variable; 10 s otherwise).

load helpers

BUILDDIR=${BUILDDIR:-build}
EGRESS=${AIRLOCK_EGRESS:-$BUILDDIR/airlock-egress}
EGRESS_TAP=${AIRLOCK_EGRESS_TAP:-$BUILDDIR/airlock-egress-tap}

# Start one airlock-egress through the tap tool: $1 policy file, $2 a
# directory for its files.  Sets NS (the namespace holder), EG (the
# egress) and TAP_PID; the tool's exit status lands in $2/status.
start_egress () {
  local dir=$2 i
  mkdir -p "$dir/state"
  ( export XDG_STATE_HOME="$dir/state" AIRLOCK_EGRESS_PEEK_MS=1500 \
      AIRLOCK_DEFAULT_RULES="${AIRLOCK_DEFAULT_RULES:-$BATS_TEST_DIRNAME/../policy/default.rules}"
    timeout -k 5 900 "$EGRESS_TAP" --policy "$1" --resolv "$BATS_FILE_TMPDIR/resolv.conf" \
      -- "$EGRESS" --session egress-test --backend local > "$dir/out" 2> "$dir/err" &
    echo $! > "$dir/tap.pid"
    wait $!
    echo $? > "$dir/status" ) 3>&- &
  for i in $(seq 100); do
    grep -q '^ready ' "$dir/out" 2>/dev/null && break
    [ -e "$dir/status" ] && break
    sleep 0.1
  done
  TAP_PID=$(cat "$dir/tap.pid")
  read -r _ HASH NS EG < "$dir/out" || return 1
}

setup_file () {
  [ "$(id -u)" = 0 ] || skip "needs root (a network namespace and a tap)"
  [ -x "$EGRESS" ] && [ -x "$EGRESS_TAP" ] || skip "build $EGRESS and $EGRESS_TAP first"
  local d=$BATS_FILE_TMPDIR
  echo "nameserver 10.99.0.3" > "$d/resolv.conf"
  mkdir -p "$d/www"
  echo "hello from allowed.test" > "$d/www/index.html"
  head -c 3000000 /dev/urandom > "$d/www/big.bin"
  timeout -k 5 30 openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=allowed.test \
    -keyout "$d/key.pem" -out "$d/cert.pem" 2>/dev/null
  ( timeout -k 5 900 python3 "$BATS_TEST_DIRNAME/egress/servers.py" "$d/www" "$d/cert.pem" \
      "$d/key.pem" "$d/ports" > "$d/servers.log" 2>&1 & echo $! > "$d/servers.pid" ) 3>&-
  local i
  for i in $(seq 100); do [ -e "$d/ports" ] && break; sleep 0.1; done
  . "$d/ports"
  cat > "$d/policy.json" <<EOF
{"allow": ["allowed.test:$HTTP_PORT,$HTTPS_PORT", "git.test:$OPAQUE_PORT",
           "loopback.test:$HTTP_PORT", "guard.test:$HTTP_PORT", "idle.test"],
 "resolve": {"allowed.test": "127.0.0.1", "other.test": "127.0.0.2",
             "git.test": "127.0.0.1", "loopback.test": "127.0.0.3",
             "guard.test": "10.0.0.1", "idle.test": "127.0.0.1"},
 "allow_ranges": ["127.0.0.1/32", "127.0.0.2/32", "10.0.0.1/32"],
 "upstream_ranges": ["127.0.0.0/8"]}
EOF
  start_egress "$d/policy.json" "$d/main"
  printf 'HASH=%s\nNS=%s\nEG=%s\nTAP_PID=%s\n' "$HASH" "$NS" "$EG" "$TAP_PID" > "$d/main/pids"
}

teardown_file () {
  local d=$BATS_FILE_TMPDIR
  if [ -e "$d/main/pids" ]; then
    . "$d/main/pids"
    kill "$TAP_PID" 2>/dev/null || true
  fi
  if [ -e "$d/servers.pid" ]; then
    kill "$(cat "$d/servers.pid")" 2>/dev/null || true
  fi
}

setup () {
  D=$BATS_FILE_TMPDIR
  . "$D/ports"
  . "$D/main/pids"
  AUDIT=$D/main/state/airlock/audit.log
}

# A command in the sandbox's namespaces, bounded.
in_ns () {
  timeout -k 2 "${NS_TIMEOUT:-20}" nsenter -t "$NS" -n -m -- "$@"
}

# The directory of the listeners of airlock-egress $1 (after a name was
# resolved), from its listening unix sockets.
listener_dir () {
  ss -xlpn | grep "pid=$1," | awk '{print $5}' | grep /airlock-egress. | head -n 1 | xargs -r dirname
}

# The audit lines whose reason contains $1.
audit_with () {
  grep -F -- "$1" "$AUDIT"
}

@test "ready line: the policy's hash, and the stack runs" {
  [[ "$HASH" =~ ^[0-9a-f]{16}$ ]]
  [ -d /proc/"$EG" ]
  run in_ns ip -4 addr show eth0
  [[ "$output" == *"10.99.0.100/32"* ]]
}

@test "an allowed name resolves to a fake address; another name does not resolve" {
  run in_ns getent hosts allowed.test
  [ "$status" -eq 0 ]
  [[ "$output" =~ ^10\.99\.1\.[0-9]+\ +allowed\.test ]]
  # stable: the same address again
  first=$output
  run in_ns getent hosts allowed.test
  [ "$output" = "$first" ]
  ! in_ns getent hosts other.test || false
  audit_with '"reason":"no network.allow rule names other.test"'
  # AAAA of an allowed name: no error, no answer (NODATA)
  run in_ns python3 -c '
import socket, struct
q = struct.pack(">HHHHHH", 0x1234, 0x0100, 1, 0, 0, 0)
q += b"".join(bytes([len(p)]) + p.encode() for p in "allowed.test".split(".")) + b"\0"
q += struct.pack(">HH", 28, 1)
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(5)
s.sendto(q, ("10.99.0.3", 53))
r = s.recv(600)
ident, flags, qd, an = struct.unpack(">HHHH", r[:8])
print(hex(ident), flags & 15, an)'
  [ "$output" = "0x1234 0 0" ]
}

@test "HTTP to an allowed name works, and is audited with the real address" {
  run in_ns curl -sS -m 10 --noproxy '*' "http://allowed.test:$HTTP_PORT/"
  [ "$status" -eq 0 ]
  [ "$output" = "hello from allowed.test" ]
  line=$(audit_with '"reason":"Host allowed.test matches"' | tail -n 1)
  [[ "$line" == *'"decision":"allow"'* ]]
  [[ "$line" == *'"decided_by":"network-allowlist"'* ]]
  [[ "$line" == *"\"rules\":[\"allowed.test:$HTTP_PORT,$HTTPS_PORT\"]"* ]]
  [[ "$line" == *"\"address\":\"127.0.0.1\",\"port\":$HTTP_PORT"* ]]
  [[ "$line" == *'"host":"allowed.test"'* ]]
  [[ "$line" == *'"session":"egress-test"'* ]]
}

@test "HTTPS to an allowed name works (SNI matches)" {
  run in_ns curl -sS -m 10 -k "https://allowed.test:$HTTPS_PORT/"
  [ "$status" -eq 0 ]
  [ "$output" = "hello from allowed.test" ]
  audit_with '"reason":"SNI allowed.test matches"' | grep -q '"sni":"allowed.test"'
}

@test "a 3 MB download through the stack arrives intact" {
  want=$(sha256sum < "$D/www/big.bin")
  got=$(in_ns curl -sS -m 30 "http://allowed.test:$HTTP_PORT/big.bin" | sha256sum)
  [ "$got" = "$want" ]
}

@test "TLS to allowed.test's fake address with SNI other.test is refused" {
  fake=$(in_ns getent hosts allowed.test | awk '{print $1}')
  ! in_ns curl -sS -m 10 -k --resolve "other.test:$HTTPS_PORT:$fake" "https://other.test:$HTTPS_PORT/" || false
  audit_with '"reason":"SNI other.test does not match allowed.test"' | grep -q '"decision":"deny"'
}

@test "HTTP to allowed.test with Host: other.test is refused" {
  ! in_ns curl -sS -m 10 -H 'Host: other.test' "http://allowed.test:$HTTP_PORT/" || false
  audit_with '"reason":"Host other.test does not match allowed.test"'
}

@test "the gateway, another address of the subnet and a disallowed port are refused at once" {
  for url in "http://10.99.0.1:$HTTP_PORT/" "http://10.99.0.50:$HTTP_PORT/" "http://10.99.0.3:53/" \
             "http://allowed.test:22/"; do
    start=$(date +%s%N)
    run in_ns curl -sS -m 10 "$url"
    end=$(date +%s%N)
    echo "$url: $status $output"
    [ "$status" -eq 7 ]   # connection refused, not a timeout (28)
    [ $(( (end - start) / 1000000 )) -lt 2000 ]
  done
  audit_with "\"reason\":\"TCP to 10.99.0.1:$HTTP_PORT: not the address of an allowed name\""
  audit_with "\"reason\":\"TCP to 10.99.0.50:$HTTP_PORT: not the address of an allowed name\""
  audit_with '"reason":"port 22 is not allowed for allowed.test"'
}

@test "UDP other than DNS to the resolver is dropped and audited" {
  # a UDP listener on the host would see nothing: nothing is relayed
  in_ns bash -c 'echo probe > /dev/udp/10.99.0.50/9'
  in_ns bash -c 'echo probe > /dev/udp/10.99.0.3/5353'
  sleep 0.3
  audit_with '"reason":"UDP to 10.99.0.50:9 is not DNS to the resolver"'
  audit_with '"reason":"UDP to 10.99.0.3:5353 is not DNS to the resolver"'
  # ICMP too (a raw socket: root in the namespace)
  in_ns python3 -c '
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
s.sendto(bytes([8, 0, 0xf7, 0xff, 0, 0, 0, 0]), ("10.99.0.1", 0))'
  sleep 0.3
  audit_with '"reason":"ICMP to 10.99.0.1 is not allowed"'
}

@test "an allowed name whose real address the policy does not open is refused" {
  # loopback.test -> 127.0.0.3: loopback, and no allow_ranges entry covers it
  ! in_ns curl -sS -m 10 "http://loopback.test:$HTTP_PORT/" || false
  audit_with '"name":"loopback.test"' | grep '"decision":"deny"' | grep -q '127.0.0.3'
  # guard.test -> 10.0.0.1: opened by allow_ranges, but outside upstream_ranges
  ! in_ns curl -sS -m 10 "http://guard.test:$HTTP_PORT/" || false
  audit_with '"name":"guard.test"' | grep '"decision":"deny"' | grep -q 'upstream_ranges'
}

@test "a flow that sends nothing is closed at the peek deadline" {
  # idle.test's rule names no port (80 and 443): it must say TLS or HTTP
  # (a rule naming another port lets other protocols through, below)
  run in_ns python3 -c '
import socket, sys, time
s = socket.create_connection(("idle.test", int(sys.argv[1])), timeout=10)
t = time.monotonic()
data = s.recv(100)
print(repr(data), round(time.monotonic() - t, 1))' 80
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "$output" == "b'' "* ]]
  secs=${output#b\'\' }
  # AIRLOCK_EGRESS_PEEK_MS=1500
  python3 -c "import sys; sys.exit(not (1.0 <= $secs <= 5.0))"
  audit_with '"reason":"no TLS SNI or HTTP Host within 1500 ms"'
}

@test "a rule naming another port explicitly lets a protocol that is neither TLS nor HTTP through" {
  run in_ns python3 -c '
import socket, sys
s = socket.create_connection(("git.test", int(sys.argv[1])), timeout=10)
banner = s.recv(100)
s.sendall(b"ping\n")
echo = s.recv(100)
print(banner.decode().strip(), echo.decode().strip())' "$OPAQUE_PORT"
  echo "$output"
  [ "$status" -eq 0 ]
  [ "$output" = "SSH-2.0-egress-test ping" ]
  audit_with "\"reason\":\"neither TLS nor HTTP on port $OPAQUE_PORT, which git.test:$OPAQUE_PORT names: bound to git.test by its fake address only\""
}

@test "300 connections in a row: no fd or thread left behind, and the audit log is rate-limited" {
  fds_before=$(ls /proc/"$EG"/fd | wc -l)
  audit_start=$(wc -l < "$AUDIT")
  flood_start=$SECONDS
  NS_TIMEOUT=120 in_ns bash -c 'for i in $(seq 300); do
      curl -sS -o /dev/null -m 10 "http://allowed.test:$1/" || exit 1; done' _ "$HTTP_PORT"
  flood_end=$SECONDS
  # slirp keeps a closed connection's socket through TIME_WAIT (2 MSL,
  # 10 s): wait for them to go
  for i in $(seq 30); do
    fds_after=$(ls /proc/"$EG"/fd | wc -l)
    [ "$fds_after" -le "$fds_before" ] && break
    sleep 1
  done
  threads=$(ls /proc/"$EG"/task | wc -l)
  echo "fds $fds_before -> $fds_after, threads $threads"
  [ "$fds_after" -le "$fds_before" ]
  [ "$threads" -eq 1 ]
  # the window of the last lines over: the next line says how many were
  # held back since the last one written
  sleep $(( 11 - (SECONDS - flood_end) > 0 ? 11 - (SECONDS - flood_end) : 0 ))
  in_ns curl -sS -o /dev/null -m 10 "http://allowed.test:$HTTP_PORT/"
  # At most 20 allow lines for allowed.test per 10 s window of the flood,
  # however fast the machine ran it; and nothing lost: every connection is
  # a line or counted in a later line's "suppressed".
  windows=$(( (flood_end - flood_start) / 10 + 2 ))
  tail -n +"$((audit_start + 1))" "$AUDIT" | python3 -c '
import json, sys
windows = int(sys.argv[1])
lines = [json.loads(l) for l in sys.stdin if "\"decided_by\":\"network-allowlist\"" in l]
hosts = [e for e in lines if e.get("reason") == "Host allowed.test matches"]
held = sum(e.get("suppressed", 0) for e in lines
           if e["decision"] == "allow" and (e.get("network") or {}).get("name") == "allowed.test")
print(len(hosts), "lines,", held, "suppressed,", windows, "windows")
assert len(hosts) <= 20 * windows, "not rate-limited"
assert len(hosts) < 301 and len(hosts) + held >= 301, "a decision was lost"' "$windows"
}

@test "a bad policy: exit 2, a message, no ready line" {
  d=$BATS_TEST_TMPDIR
  echo '{"allow": ["bad name!"], "nonsense": 1}' > "$d/bad.json"
  start_egress "$d/bad.json" "$d/bad" || true
  for i in $(seq 50); do [ -e "$d/bad/status" ] && break; sleep 0.1; done
  [ "$(cat "$d/bad/status")" = 2 ]
  ! grep -q ready "$d/bad/out" || false
  grep -q '^airlock-egress: ' "$d/bad/err"
}

@test "SIGTERM stops it: exit 0, listeners removed" {
  d=$BATS_TEST_TMPDIR
  start_egress "$D/policy.json" "$d/term"
  NS=$(awk '{print $3}' "$d/term/out")
  in_ns getent hosts allowed.test
  dir=$(listener_dir "$EG")
  [ -d "$dir" ]
  kill -TERM "$EG"
  for i in $(seq 50); do [ -e "$d/term/status" ] && break; sleep 0.1; done
  [ "$(cat "$d/term/status")" = 0 ]
  ended "$EG"
  [ ! -e "$dir" ]
}

@test "EOF on fd 0 stops it: exit 0, nothing left (and no sanitizer report)" {
  dir=$(listener_dir "$EG")
  [ -d "$dir" ]
  kill -TERM "$TAP_PID"   # the tool closes the egress's fd 0
  for i in $(seq 100); do [ -e "$D/main/status" ] && break; sleep 0.1; done
  cat "$D/main/err"
  [ "$(cat "$D/main/status")" = 0 ]
  ended "$EG"
  ! grep -E 'AddressSanitizer|LeakSanitizer|runtime error' "$D/main/err" || false
  [ ! -e "$dir" ]
}
