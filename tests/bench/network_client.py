#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""make bench's network client: run once inside an allowlist sandbox (through
airlock-egress's stack) and once on the host (loopback direct), same code.

  network_client.py HOST PORT CONNECTS MIBYTES

prints one JSON object: the per-connection times (connect + one small GET
over a new connection, ms) and the seconds one GET of MIBYTES MiB took."""
import json
import socket
import sys
import time

host, port, n, mib = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])


def get(path):
    s = socket.create_connection((host, port), timeout=60)
    s.sendall(f"GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode())
    got = 0
    while True:
        b = s.recv(1 << 16)
        if not b:
            break
        got += len(b)
    s.close()
    return got


times = []
for _ in range(n):
    t0 = time.perf_counter()
    get("/")
    times.append((time.perf_counter() - t0) * 1000)
t0 = time.perf_counter()
got = get(f"/bytes/{mib << 20}")
secs = time.perf_counter() - t0
print(json.dumps({"connect_ms": times, "bulk_s": secs, "bulk_bytes": got}))
