#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The network allowlist suite's upstream servers, all on this host's loopback:
HTTP and HTTPS on 127.0.0.1 (the tests map allowed.test there) and on
127.0.0.2 (other.test), and a UDP sink on 127.0.0.1 that records what it
receives (nothing may reach it from a sandbox).

  servers.py DIR CERT KEY

writes DIR/ports ("http1 https1 http2 https2 udp", once every socket
listens), logs each request to DIR/requests, each datagram to DIR/udp, and
runs until killed.  GET / answers "<label> host=<Host>"; GET /big answers
2 MiB of a fixed pattern (its sha256 is in DIR/big.sha256); GET /bytes/N,
N bytes (for make bench, not logged); GET /slow/N answers after N seconds."""
import hashlib
import http.server
import os
import socket
import ssl
import sys
import threading
import time

out_dir, cert, key = sys.argv[1:4]
BIG = bytes((i * 7 + (i >> 11)) & 0xFF for i in range(2 * 1024 * 1024))
lock = threading.Lock()


def log(name, line):
    with lock, open(os.path.join(out_dir, name), "a") as f:
        f.write(line + "\n")


def handler_for(label):
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self):
            host = self.headers.get("Host", "")
            if self.path.startswith("/bytes/"):  # make bench: unlogged, streamed
                n = int(self.path[7:])
                self.send_response(200)
                self.send_header("Content-Length", str(n))
                self.end_headers()
                chunk = BIG[:65536]
                while n > 0:
                    self.wfile.write(chunk[:min(n, len(chunk))])
                    n -= len(chunk)
                return
            if self.path.startswith("/slow/"):  # answers after N seconds
                time.sleep(int(self.path[6:]))
            log("requests", f"{label} {self.path} host={host}")
            body = BIG if self.path == "/big" else f"{label} host={host}\n".encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Content-Type", "application/octet-stream")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    return Handler


def serve(address, label, tls):
    srv = http.server.ThreadingHTTPServer((address, 0), handler_for(label))
    srv.daemon_threads = True
    if tls:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(cert, key)
        srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv.server_address[1]


def udp_sink():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("127.0.0.1", 0))

    def loop():
        while True:
            data, peer = s.recvfrom(65536)
            log("udp", f"{peer[0]}:{peer[1]} {len(data)}")

    threading.Thread(target=loop, daemon=True).start()
    return s.getsockname()[1]


ports = [serve("127.0.0.1", "allowed", False), serve("127.0.0.1", "allowed", True),
         serve("127.0.0.2", "other", False), serve("127.0.0.2", "other", True),
         udp_sink()]
with open(os.path.join(out_dir, "big.sha256"), "w") as f:
    f.write(hashlib.sha256(BIG).hexdigest() + "\n")
with open(os.path.join(out_dir, "ports.tmp"), "w") as f:
    f.write(" ".join(map(str, ports)) + "\n")
os.rename(os.path.join(out_dir, "ports.tmp"), os.path.join(out_dir, "ports"))
threading.Event().wait()
