#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# `network: allowlist` end to end, through the real helper of each privilege
# mode and airlock-egress: a sandbox reaches exactly the allowed names.
#
# Nothing leaves this machine: the upstream servers (tests/network/servers.py)
# listen on 127.0.0.1 (allowed.test) and 127.0.0.2 (other.test), the config
# maps the names there with network.resolve, and network.upstream_ranges
# 127.0.0.0/8 stops airlock-egress from connecting anywhere else, whatever
# the policy says.

load helpers

setup_file () {
  export NET="$T/network"
  rm -rf "$NET"
  mkdir -p "$NET"
  chmod 0755 "$NET"
  openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=allowed.test \
    -addext subjectAltName=DNS:allowed.test,DNS:other.test \
    -keyout "$NET/key.pem" -out "$NET/cert.pem" 2>/dev/null
  chmod 0644 "$NET/cert.pem"
  # The sandbox has a /tmp of its own: the clients read the CA from the
  # workspace.
  cp "$NET/cert.pem" "$WORK/network-ca.pem"
  chmod 0644 "$WORK/network-ca.pem"
  setsid python3 "$BATS_TEST_DIRNAME/network/servers.py" "$NET" "$NET/cert.pem" "$NET/key.pem" \
    > "$NET/servers.log" 2>&1 < /dev/null &
  echo $! > "$NET/servers.pid"
  for _ in $(seq 100); do [ -s "$NET/ports" ] && break; sleep 0.1; done
  [ -s "$NET/ports" ]
}

teardown_file () {
  kill "$(cat "$NET/servers.pid")" 2>/dev/null || true
  rm -f "$WORK/network-ca.pem"
}

setup () {
  read -r HTTP1 HTTPS1 HTTP2 HTTPS2 UDP1 < "$NET/ports"
  CA="$WORK/network-ca.pem"
  RUNDIR="$T/xdg-net-$BATS_TEST_NUMBER"
  mkdir -p "$RUNDIR"
  chown "$TEST_USER" "$RUNDIR"
  chmod 0700 "$RUNDIR"
  CFG="$RUNDIR/config.json"
  write_config "\"allowed.test:$HTTP1,$HTTPS1\""
  ADMIN_RULES="$(dirname "$HELPER_CONF")/policy.rules"
  AUDIT="$TEST_HOME/.local/state/airlock/audit.log"
  export EXTRA_ENV="XDG_RUNTIME_DIR=$RUNDIR AIRLOCK_CONFIG=$CFG AIRLOCK_SUPERVISOR=$AIRLOCK_SUPERVISOR AIRLOCK_DAEMON_IDLE_EXIT=30"
}

teardown () {
  stop_daemon
  rm -f "$ADMIN_RULES"
  reset_conf
}

# The allowlist config: allow entries (JSON strings), then optional extra
# keys of "network" as JSON text.
write_config () {
  cat > "$CFG" <<JSON
{"network": {"allow": [$1],
             "resolve": {"allowed.test": "127.0.0.1", "other.test": "127.0.0.2"},
             "allow_ranges": ["127.0.0.1/32", "127.0.0.2/32"],
             "upstream_ranges": ["127.0.0.0/8"]${2:+, $2}}}
JSON
  chown "$TEST_USER" "$CFG"
}

# airlock run with the allowlist, bounded.
nrun () {
  as_user timeout -k 5 60 "$AIRLOCK" run --network allowlist -- "$@"
}

# Lines of the audit log written by airlock-egress since the test began.
net_audit () {
  grep '"decided_by":"network-allowlist"' "$AUDIT" 2>/dev/null | tail -n "${1:-50}"
}

@test "network: curl reaches an allowed name over HTTP and HTTPS, proxies or not" {
  run nrun curl -sS --max-time 20 "http://allowed.test:$HTTP1/"
  [ "$status" -eq 0 ]
  [ "$output" = "allowed host=allowed.test:$HTTP1" ]
  run nrun curl -sS --max-time 20 --noproxy '*' --cacert "$CA" "https://allowed.test:$HTTPS1/"
  [ "$status" -eq 0 ]
  [ "$output" = "allowed host=allowed.test:$HTTPS1" ]
  # The sandbox sees a fake address, never the real one.
  run nrun getent ahostsv4 allowed.test
  [ "$status" -eq 0 ]
  [[ "${lines[0]}" == 10.99.* ]]
}

@test "network: Python's urllib and Node's fetch reach it too, with no proxy settings" {
  run nrun python3 -c "import ssl, urllib.request as u; c = ssl.create_default_context(cafile='$CA'); print(u.urlopen('https://allowed.test:$HTTPS1/', context=c, timeout=20).read().decode().strip())"
  [ "$status" -eq 0 ]
  [ "$output" = "allowed host=allowed.test:$HTTPS1" ]
  command -v node || skip "node is not installed"
  # Node reserves more address space for WebAssembly than the default
  # memory limit gives where it is an rlimit (RLIMIT_AS).
  write_conf "max_memory = 64G"
  run as_user timeout -k 5 60 "$AIRLOCK" run --network allowlist --memory 48G \
    --env "NODE_EXTRA_CA_CERTS=$CA" -- node -e "fetch('https://allowed.test:$HTTPS1/').then(r => r.text()).then(t => process.stdout.write(t), e => { console.error(e.cause || e); process.exit(3); })"
  echo "$output"
  [ "$status" -eq 0 ]
  [ "$output" = "allowed host=allowed.test:$HTTPS1" ]
}

@test "network: a name the allowlist does not hold does not resolve" {
  run nrun getent hosts other.test
  [ "$status" -ne 0 ]
  run nrun curl -sS --max-time 20 "http://other.test:$HTTP2/"
  [ "$status" -eq 6 ] # could not resolve host
  net_audit | grep '"decision":"deny"' | grep -q other.test
}

@test "network: a large download through the stack arrives intact" {
  run nrun sh -c "curl -sS --max-time 60 --cacert $CA https://allowed.test:$HTTPS1/big | sha256sum"
  [ "$status" -eq 0 ]
  [ "${output%% *}" = "$(cat "$NET/big.sha256")" ]
}

@test "network: any address but an allowed fake one is refused by the stack, at once" {
  # The gateway, another address of the stack's network, a real address.
  for target in 10.99.0.1 10.99.0.50 10.99.200.7 127.0.0.1; do
    start=$(date +%s)
    run nrun python3 -c "
import socket, sys
s = socket.socket(); s.settimeout(15)
try:
    s.connect(('$target', $HTTP1))
except OSError as e:
    print(type(e).__name__); sys.exit(1)
print('connected')"
    echo "$target: $output"
    [ "$status" -eq 1 ]
    [ "$output" != connected ]
    [ $(( $(date +%s) - start )) -lt 14 ] # refused, not left to time out
  done
  net_audit | grep '"decision":"deny"' | grep -q 10.99.0.50
}

@test "network: TLS whose SNI names another host is refused, and so is HTTP with another Host" {
  # In one sandbox: a fake address is handed out when its name resolves.
  run nrun sh -c "fake=\$(getent ahostsv4 allowed.test | awk 'NR == 1 { print \$1 }')
    echo \"fake \$fake\"
    curl -sS --max-time 20 --cacert '$CA' --resolve \"other.test:$HTTPS1:\$fake\" https://other.test:$HTTPS1/"
  echo "$output"
  [ "$status" -ne 0 ]
  [[ "${lines[0]}" == "fake 10.99."* ]]
  [[ "$output" != *"other host"* ]]
  run nrun curl -sS --max-time 20 -H 'Host: other.test' "http://allowed.test:$HTTP1/"
  [ "$status" -ne 0 ]
  [[ "$output" != *host=* ]]
  # TLS with no SNI at all names nothing: refused too.
  run nrun python3 -c "
import socket, ssl
c = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT); c.check_hostname = False; c.verify_mode = ssl.CERT_NONE
s = socket.create_connection(('allowed.test', $HTTPS1), timeout=20)
try:
    t = c.wrap_socket(s); t.sendall(b'GET / HTTP/1.0\r\n\r\n'); print('answered', t.recv(100))
except (OSError, ssl.SSLError) as e:
    print('refused', type(e).__name__)"
  echo "$output"
  [[ "$output" == refused* ]]
  # The upstream server saw neither.
  ! grep -q "host=other.test" "$NET/requests" || false
  net_audit | grep '"decision":"deny"' | grep -q '"sni":"other.test"'
  net_audit | grep '"decision":"deny"' | grep -q '"host":"other.test"'
}

@test "network: a port the rule does not name is refused" {
  write_config '"allowed.test:443"'
  run nrun curl -sS --max-time 20 "http://allowed.test:$HTTP1/"
  [ "$status" -ne 0 ]
  [[ "$output" != *"allowed host"* ]]
}

@test "network: UDP to anything but the resolver is refused and never delivered" {
  run nrun python3 -c "
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for a in ('10.99.0.1', '10.99.0.50', '127.0.0.1'):
    s.sendto(b'x' * 100, (a, $UDP1))
fake = socket.gethostbyname('allowed.test')
s.sendto(b'y' * 100, (fake, $UDP1))
print('sent')"
  [ "$status" -eq 0 ]
  sleep 1
  [ ! -s "$NET/udp" ]
  net_audit | grep '"decision":"deny"' | grep -q UDP
}

@test "network: each decision is in the audit log with the name, address, port and rule" {
  run nrun curl -sS --max-time 20 --cacert "$CA" "https://allowed.test:$HTTPS1/"
  [ "$status" -eq 0 ]
  line=$(net_audit | grep '"decision":"allow"' | tail -n 1)
  echo "$line"
  echo "$line" | python3 -c "
import json, sys
e = json.loads(sys.stdin.read())
n = e['network']
assert n['name'] == 'allowed.test', n
assert n['address'] == '127.0.0.1', n
assert n['port'] == $HTTPS1, n
assert n['sni'] == 'allowed.test', n
assert e['rules'] == ['allowed.test:$HTTP1,$HTTPS1'], e"
}

@test "network: special addresses are refused unless a range opens them; the upstream guard holds" {
  # other.test -> 127.0.0.2, loopback: allowed by name, but no range opens it.
  cat > "$CFG" <<JSON
{"network": {"allow": ["other.test:$HTTP2"], "resolve": {"other.test": "127.0.0.2"},
             "upstream_ranges": ["127.0.0.0/8"]}}
JSON
  run nrun curl -sS --max-time 20 "http://other.test:$HTTP2/"
  [ "$status" -ne 0 ]
  net_audit | grep '"decision":"deny"' | grep -q 'loopback'
  # Opened by a range, but outside upstream_ranges: still refused.
  cat > "$CFG" <<JSON
{"network": {"allow": ["other.test:$HTTP2"], "resolve": {"other.test": "127.0.0.2"},
             "allow_ranges": ["127.0.0.0/8"], "upstream_ranges": ["127.0.0.1/32"]}}
JSON
  run nrun curl -sS --max-time 20 "http://other.test:$HTTP2/"
  [ "$status" -ne 0 ]
  net_audit | grep '"decision":"deny"' | grep -q 'upstream_ranges'
  # Both open: it works.
  cat > "$CFG" <<JSON
{"network": {"allow": ["other.test:$HTTP2"], "resolve": {"other.test": "127.0.0.2"},
             "allow_ranges": ["127.0.0.2/32"], "upstream_ranges": ["127.0.0.0/8"]}}
JSON
  run nrun curl -sS --max-time 20 "http://other.test:$HTTP2/"
  [ "$status" -eq 0 ]
  [ "$output" = "other host=other.test:$HTTP2" ]
}

@test "network: a bad allowlist is refused before anything runs, naming the entry" {
  write_config '"allowed.test:99999"'
  run nrun echo ran
  [ "$status" -eq 125 ]
  [[ "$output" != *ran* ]]
  [[ "$output" == *99999* ]]
}

@test "network: the administrator's caps in policy.rules limit what a user may allow" {
  mkdir -p "$(dirname "$ADMIN_RULES")"
  printf '%s\n' 'network-allow *.example.org' > "$ADMIN_RULES"
  chmod 0644 "$ADMIN_RULES"
  run nrun echo ran
  [ "$status" -eq 125 ]
  [[ "$output" != *ran* ]]
  [[ "$output" == *allowed.test* ]]
  printf '%s\n' 'network-allow allowed.test' 'network-range 127.0.0.0/8' > "$ADMIN_RULES"
  run nrun curl -sS --max-time 20 "http://allowed.test:$HTTP1/"
  [ "$status" -eq 0 ]
  printf '%s\n' 'network-allow allowed.test' 'network-range 10.0.0.0/8' > "$ADMIN_RULES"
  run nrun echo ran
  [ "$status" -eq 125 ]
  [[ "$output" == *127.0.0.1/32* ]]
}

@test "network: a session with the allowlist network, its posture and its stack's end" {
  as_user "$AIRLOCK" session open s --network allowlist
  run as_user "$AIRLOCK" exec s -- curl -sS --max-time 20 "http://allowed.test:$HTTP1/"
  [ "$status" -eq 0 ]
  [ "$output" = "allowed host=allowed.test:$HTTP1" ]
  run as_user "$AIRLOCK" exec s -- getent hosts other.test
  [ "$status" -ne 0 ]
  run sh -c "printf '%s\n' '{\"id\":1,\"op\":\"exec\",\"session\":\"s\",\"command\":\"true\"}' | runuser -u $TEST_USER -- env -i HOME=$TEST_HOME PATH=/usr/bin:/bin $EXTRA_ENV AIRLOCK_HELPER=$AIRLOCK_HELPER AIRLOCK_DAEMON=${AIRLOCK_DAEMON:-} $AIRLOCK serve"
  echo "$output"
  echo "$output" | grep -q '"network":"allowlist"'
  echo "$output" | grep -Eq '"network_policy":"[0-9a-f]{16}"'
  pid=$(pgrep -u "$TEST_USER" -f "airlock-egress --session s" | head -n 1)
  [ -n "$pid" ]
  as_user "$AIRLOCK" session close s
  ended "$pid" 10
}

@test "network: airlock-egress ends with the command, and a killed one leaves the sandbox without network, not hanging" {
  run nrun sh -c 'echo $$'
  [ "$status" -eq 0 ]
  ! pgrep -u "$TEST_USER" -f airlock-egress || false
  as_user "$AIRLOCK" session open k --network allowlist
  pid=$(pgrep -u "$TEST_USER" -f "airlock-egress --session k" | head -n 1)
  [ -n "$pid" ]
  kill -KILL "$pid"
  run as_user timeout -k 5 60 "$AIRLOCK" exec k -- curl -sS --max-time 10 "http://allowed.test:$HTTP1/"
  [ "$status" -ne 0 ]
  [ "$status" -ne 124 ]
  as_user "$AIRLOCK" session close k
}

@test "network: a backend that cannot enforce the allowlist refuses it at open" {
  for b in docker singularity ssh modal daytona; do
    run as_user "$AIRLOCK" session open "x$b" --backend "$b" --network allowlist
    echo "$b: $output"
    [ "$status" -ne 0 ]
    [[ "$output" == *"cannot enforce an allowlist"* ]]
  done
}

@test "network: the sandbox cannot reconfigure its network, open raw or packet sockets, or make a tap" {
  run nrun sh -c '
    ip addr add 10.99.0.7/32 dev eth0 2>/dev/null && echo changed-address
    ip route del default 2>/dev/null && echo changed-route
    ip link set eth0 down 2>/dev/null && echo link-down
    python3 -c "import socket; socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_TCP)" 2>/dev/null && echo raw-socket
    python3 -c "import socket; socket.socket(socket.AF_PACKET, socket.SOCK_RAW)" 2>/dev/null && echo packet-socket
    [ -e /dev/net/tun ] && echo tun-device
    grep ^CapEff /proc/self/status
    ip route'
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "$output" != *changed-* && "$output" != *link-down* ]]
  [[ "$output" != *-socket* && "$output" != *tun-device* ]]
  echo "$output" | grep -qx 'CapEff:	0000000000000000'
  echo "$output" | grep -q '^default via 10.99.0.1 dev eth0'
}

@test "network: docs/network.md's configuration example is a valid allowlist" {
  sed -n '/^```json$/,/^```$/p' "$BATS_TEST_DIRNAME/../docs/network.md" | sed -n '1,/^```$/p' | sed '1d;$d' > "$CFG"
  grep -q '"allow"' "$CFG"
  chown "$TEST_USER" "$CFG"
  run as_user "$AIRLOCK" config show
  [ "$status" -eq 0 ]
  [[ "$output" == *pythonhosted* ]]
  # Checked by airlock-egress, which runs it: the examples resolve nowhere
  # here, so the command only proves the sandbox starts with this policy.
  run nrun true
  [ "$status" -eq 0 ]
}

@test "network: without airlock-egress installed, the error names its path and the fix" {
  EXTRA_ENV+=" AIRLOCK_EGRESS=$T/no-such-egress" run nrun true
  echo "$output"
  [ "$status" -eq 125 ]
  [[ "$output" == *"$T/no-such-egress: No such file or directory (named by AIRLOCK_EGRESS)"* ]]
}

@test "network: a client that goes away while the server is silent leaves airlock-egress idle, not spinning" {
  # The client resets its connection (SO_LINGER 0) while the server
  # sleeps: the stack closes its end of the flow at once.
  as_user timeout -k 5 60 "$AIRLOCK" run --network allowlist -- python3 -c "
import socket, struct, time
s = socket.create_connection(('allowed.test', $HTTP1))
s.sendall(b'GET /slow/20 HTTP/1.1\r\nHost: allowed.test\r\n\r\n')
time.sleep(1)
s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack('ii', 1, 0))
s.close()
time.sleep(9)" > /dev/null 2>&1 &
  runner=$!
  pid=''
  for _ in $(seq 50); do
    pid=$(pgrep -u "$TEST_USER" -f "airlock-egress --session" | head -n 1)
    [ -n "$pid" ] && break
    sleep 0.1
  done
  [ -n "$pid" ]
  sleep 3.5 # curl is gone; the server still holds the request
  t0=$(awk '{ print $14 + $15 }' "/proc/$pid/stat")
  sleep 3
  t1=$(awk '{ print $14 + $15 }' "/proc/$pid/stat")
  echo "airlock-egress used $((t1 - t0)) ticks in 3 s"
  [ $((t1 - t0)) -lt 60 ]
  wait "$runner" || true
}
