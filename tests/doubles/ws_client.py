#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""A small WebSocket client (RFC 6455, masked frames) for the Daytona
double's PTY tests (tests/daytona-double.bats).  Debian's python3 only.

    ws_client.py URL STEP...      (bearer token from $DAYTONA_API_KEY)

URL: ws://127.0.0.1:PORT/PATH.  Each server message is printed as it
comes: `text TEXT` for a text message, `close CODE REASON` for the
server's close frame; binary messages (the terminal's output) are kept and
matched by `expect`.  Steps, in order:

    send:TEXT        one binary message (\\n, \\r, \\xHH, \\\\ decoded)
    sendtext:TEXT    one text message
    frag:TEXT        one text message in three fragments, a ping between
    ping:DATA        a ping; the pong must come back with DATA
    expect:REGEX     wait until the output so far matches (then it is
                     consumed up to the match's end)
    noexpect:REGEX   the output so far must not match
    connected        wait for the text {"type":"control","status":"connected"}
    wait-close       wait for the server's close frame (answered)
    close            send close 1000, wait for the server's answer
    drop             end the TCP connection at once (no close frame)
    eof              wait for the connection's end without a close frame
    sleep:SECONDS
Exit 0 when every step succeeded, 1 (saying why) otherwise; every wait is
bounded by $WS_TIMEOUT seconds (default 15).
"""

import base64
import os
import re
import select
import socket
import struct
import sys
import time
import urllib.parse

TIMEOUT = float(os.environ.get("WS_TIMEOUT") or 15)


def decode_escapes(s):
    return s.encode("latin-1", "backslashreplace").decode("unicode_escape").encode("latin-1")


class Client:
    def __init__(self, url):
        u = urllib.parse.urlsplit(url)
        self.sock = socket.create_connection((u.hostname, u.port or 80), timeout=TIMEOUT)
        key = base64.b64encode(os.urandom(16)).decode()
        path = u.path + ("?" + u.query if u.query else "")
        head = ["GET %s HTTP/1.1" % path, "Host: %s:%d" % (u.hostname, u.port or 80),
                "Upgrade: websocket", "Connection: Upgrade", "Sec-WebSocket-Key: " + key,
                "Sec-WebSocket-Version: 13"]
        if os.environ.get("DAYTONA_API_KEY"):
            head.append("Authorization: Bearer " + os.environ["DAYTONA_API_KEY"])
        self.sock.sendall(("\r\n".join(head) + "\r\n\r\n").encode())
        self.buf = b""
        while b"\r\n\r\n" not in self.buf:
            self.fill()
        resp, self.buf = self.buf.split(b"\r\n\r\n", 1)
        status = resp.split(b"\r\n")[0].decode()
        if " 101 " not in status + " ":
            raise SystemExit("no upgrade: %s" % resp.decode(errors="replace"))
        self.output = b""
        self.texts = []
        self.closed = None      # (code, reason) of the server's close
        self.eof = False
        self.close_sent = False
        self.pongs = []

    def fill(self, deadline=None):
        left = None if deadline is None else max(0.0, deadline - time.monotonic())
        self.sock.settimeout(left if left is not None else TIMEOUT)
        try:
            data = self.sock.recv(65536)
        except socket.timeout:
            return False
        if not data:
            self.eof = True
            raise EOFError()
        self.buf += data
        return True

    def need(self, n, deadline):
        while len(self.buf) < n:
            if time.monotonic() > deadline or not self.fill(deadline):
                raise TimeoutError()
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def send_frame(self, opcode, payload, fin=True):
        mask = os.urandom(4)
        n = len(payload)
        b0 = (0x80 if fin else 0) | opcode
        if n < 126:
            head = struct.pack(">BB", b0, 0x80 | n)
        elif n < 65536:
            head = struct.pack(">BBH", b0, 0x80 | 126, n)
        else:
            head = struct.pack(">BBQ", b0, 0x80 | 127, n)
        masked = bytes(c ^ mask[i % 4] for i, c in enumerate(payload))
        self.sock.sendall(head + mask + masked)
        if opcode == 8:
            self.close_sent = True

    def read_message(self, deadline):
        """One server frame handled; returns its opcode."""
        b0, b1 = self.need(2, deadline)
        if b1 & 0x80:
            raise SystemExit("a masked server frame")
        n = b1 & 0x7f
        if n == 126:
            n = struct.unpack(">H", self.need(2, deadline))[0]
        elif n == 127:
            n = struct.unpack(">Q", self.need(8, deadline))[0]
        payload = self.need(n, deadline)
        op = b0 & 0x0f
        if not b0 & 0x80:
            raise SystemExit("a fragmented server frame (this client does not expect any)")
        if op == 2:
            self.output += payload
        elif op == 1:
            t = payload.decode()
            self.texts.append(t)
            print("text %s" % t, flush=True)
        elif op == 8:
            code = struct.unpack(">H", payload[:2])[0] if len(payload) >= 2 else 1005
            self.closed = (code, payload[2:].decode())
            print("close %d %s" % self.closed, flush=True)
            if not self.close_sent:
                self.send_frame(8, payload[:2])
        elif op == 10:
            self.pongs.append(payload)
        return op

    def pump(self, cond, what):
        deadline = time.monotonic() + TIMEOUT
        while not cond():
            if self.closed is not None or self.eof:
                raise SystemExit("%s: the connection ended first (close %s); output so far: %r"
                                 % (what, self.closed, self.output))
            try:
                self.read_message(deadline)
            except TimeoutError:
                raise SystemExit("%s: timed out; output so far: %r" % (what, self.output))
            except EOFError:
                continue


def main():
    if len(sys.argv) < 2:
        raise SystemExit(__doc__)
    c = Client(sys.argv[1])
    for step in sys.argv[2:]:
        name, _, arg = step.partition(":")
        if name == "send":
            c.send_frame(2, decode_escapes(arg))
        elif name == "sendtext":
            c.send_frame(1, decode_escapes(arg))
        elif name == "frag":
            data = decode_escapes(arg)
            k = len(data) // 3
            c.send_frame(1, data[:k], fin=False)
            c.send_frame(9, b"mid")
            c.send_frame(0, data[k:2 * k], fin=False)
            c.send_frame(0, data[2 * k:], fin=True)
        elif name == "ping":
            c.send_frame(9, arg.encode())
            c.pump(lambda: arg.encode() in c.pongs, "pong")
        elif name == "expect":
            rx = re.compile(arg.encode())
            c.pump(lambda: rx.search(c.output) is not None, "expect %r" % arg)
            c.output = c.output[rx.search(c.output).end():]
        elif name == "noexpect":
            if re.search(arg.encode(), c.output):
                raise SystemExit("noexpect %r: the output has it: %r" % (arg, c.output))
        elif name == "connected":
            c.pump(lambda: any('"status":"connected"' in t.replace(" ", "") for t in c.texts),
                   "connected")
        elif name == "wait-close":
            deadline = time.monotonic() + TIMEOUT
            while c.closed is None:
                try:
                    c.read_message(deadline)
                except TimeoutError:
                    raise SystemExit("wait-close: timed out; output: %r" % c.output)
                except EOFError:
                    raise SystemExit("wait-close: the connection ended without a close frame")
        elif name == "close":
            c.send_frame(8, struct.pack(">H", 1000))
            deadline = time.monotonic() + TIMEOUT
            while c.closed is None:
                try:
                    c.read_message(deadline)
                except (TimeoutError, EOFError):
                    raise SystemExit("close: no close frame in answer")
        elif name == "drop":
            c.sock.shutdown(socket.SHUT_RDWR)
            c.sock.close()
            return
        elif name == "eof":
            deadline = time.monotonic() + TIMEOUT
            while not c.eof:
                try:
                    c.read_message(deadline)
                except TimeoutError:
                    raise SystemExit("eof: the connection is still open")
                except EOFError:
                    break
                if c.closed is not None:
                    raise SystemExit("eof: a close frame came")
            print("eof", flush=True)
        elif name == "sleep":
            time.sleep(float(arg))
        else:
            raise SystemExit("unknown step %r" % step)
    c.sock.close()


if __name__ == "__main__":
    try:
        main()
    except SystemExit as e:
        if isinstance(e.code, str):
            print("ws_client: %s" % e.code, file=sys.stderr, flush=True)
            sys.exit(1)
        raise
    except (OSError, EOFError) as e:
        print("ws_client: %s: %s" % (type(e).__name__, e), file=sys.stderr, flush=True)
        sys.exit(1)
