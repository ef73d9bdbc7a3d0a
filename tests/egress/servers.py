# SPDX-License-Identifier: MIT
# The upstream servers of tests/egress.bats, on the host's loopback:
#   http   127.0.0.1  plain HTTP, serving DIR
#   https  127.0.0.1 and 127.0.0.2 (same port), HTTPS with CERT/KEY
#   opaque 127.0.0.1  speaks first ("SSH-2.0-egress-test"), then echoes
# Ports are chosen by the kernel and written as shell assignments to
# PORTS_FILE once every server listens.  Runs until killed.
import http.server, os, socket, socketserver, ssl, sys, threading

root, cert, key, ports_file = sys.argv[1:5]

class Quiet(http.server.SimpleHTTPRequestHandler):
    def __init__(self, *a, **kw):
        super().__init__(*a, directory=root, **kw)
    def log_message(self, *a):
        pass

class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True

def serve(srv):
    threading.Thread(target=srv.serve_forever, daemon=True).start()

plain = Server(("127.0.0.1", 0), Quiet)
serve(plain)

ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(cert, key)
tls1 = Server(("127.0.0.1", 0), Quiet)
tls_port = tls1.server_address[1]
tls2 = Server(("127.0.0.2", tls_port), Quiet)
for s in (tls1, tls2):
    s.socket = ctx.wrap_socket(s.socket, server_side=True)
    serve(s)

class Banner(socketserver.BaseRequestHandler):
    def handle(self):
        self.request.sendall(b"SSH-2.0-egress-test\r\n")
        while True:
            data = self.request.recv(4096)
            if not data:
                return
            self.request.sendall(data)

class Threading(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True

opaque = Threading(("127.0.0.1", 0), Banner)
serve(opaque)

with open(ports_file + ".tmp", "w") as f:
    f.write("HTTP_PORT=%d\nHTTPS_PORT=%d\nOPAQUE_PORT=%d\n"
            % (plain.server_address[1], tls_port, opaque.server_address[1]))
os.rename(ports_file + ".tmp", ports_file)
threading.Event().wait()
