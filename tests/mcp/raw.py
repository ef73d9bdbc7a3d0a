#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# `airlock mcp` at the protocol level, below any SDK: raw lines on its
# stdin, every line of its stdout a JSON-RPC message.  Usage:
#   raw.py COMMAND... (the command that runs `airlock mcp`)
# Exits 0 after "ok raw", else 1 naming the first answer that is wrong.
import json
import select
import subprocess
import sys
import time

CMD = sys.argv[1:]


class Server:
    def __init__(self):
        self.p = subprocess.Popen(CMD, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self.buf = b""

    def send(self, line):
        self.p.stdin.write((line if isinstance(line, str) else json.dumps(line)).encode() + b"\n")
        self.p.stdin.flush()

    def read(self, timeout=20):
        """The next message, or None when none came within timeout."""
        end = time.time() + timeout
        while b"\n" not in self.buf:
            left = end - time.time()
            if left <= 0 or not select.select([self.p.stdout], [], [], left)[0]:
                return None
            chunk = self.p.stdout.read1(65536)
            if not chunk:
                return None
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        try:
            msg = json.loads(line)
        except ValueError:
            fail(f"stdout has a line that is not JSON: {line[:200]!r}")
        if not isinstance(msg, dict) or msg.get("jsonrpc") != "2.0":
            fail(f"not a JSON-RPC 2.0 message: {line[:200]!r}")
        return msg

    def ask(self, line, timeout=20):
        self.send(line)
        msg = self.read(timeout)
        if msg is None:
            fail(f"no answer to {line}")
        return msg

    def init(self, version="2025-11-25"):
        r = self.ask({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": version, "capabilities": {},
            "clientInfo": {"name": "raw", "version": "1"}}})
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return r

    def alive(self, after):
        r = self.ask({"jsonrpc": "2.0", "id": "p", "method": "ping"})
        expect(r == {"jsonrpc": "2.0", "id": "p", "result": {}}, f"ping answers after {after}", r)

    def close(self):
        self.p.stdin.close()
        try:
            rc = self.p.wait(15)
        except subprocess.TimeoutExpired:
            self.p.kill()
            fail("the server did not exit at the end of its stdin")
        expect(rc == 0, "exit status 0 at the end of stdin", rc)


def fail(what):
    print(f"not ok raw: {what}", file=sys.stderr)
    sys.exit(1)


def expect(cond, what, got=None):
    if not cond:
        fail(f"{what}; got {json.dumps(got)}")


def error_of(r, code, want_id, what):
    expect("result" not in r and r.get("error", {}).get("code") == code and r.get("id", "absent") == want_id
           and isinstance(r["error"].get("message"), str), f"{what}: error {code} with id {want_id!r}", r)


def tool_error(r, want_id, what):
    res = r.get("result", {})
    expect(r.get("id") == want_id and res.get("isError") is True and "structuredContent" not in res
           and len(res.get("content", [])) == 1 and res["content"][0].get("type") == "text",
           f"{what}: a tool result with isError", r)


# Versions: a supported one is echoed, anything else gets the latest.
for asked, want in [("2025-06-18", "2025-06-18"), ("2024-11-05", "2024-11-05"),
                    ("2025-03-26", "2025-03-26"), ("1999-01-01", "2025-11-25")]:
    s = Server()
    r = s.init(asked)
    expect(r.get("id") == 0 and r["result"]["protocolVersion"] == want, f"initialize {asked} -> {want}", r)
    s.close()

s = Server()
r = s.init()
expect(r["result"]["serverInfo"]["name"] == "airlock", "serverInfo", r)
s.alive("initialize")

error_of(s.ask("{not json"), -32700, None, "malformed JSON")
s.alive("malformed JSON")
error_of(s.ask('{"jsonrpc":"2.0","id":1,"method":"ping"'), -32700, None, "a cut line")
s.alive("a cut line")
error_of(s.ask("[1,2]"), -32600, None, "an array")
s.alive("an array")
error_of(s.ask("42"), -32600, None, "a number")
s.alive("a number")
r = s.ask('{"id":5,"method":"ping"}')
expect(r.get("error", {}).get("code") == -32600 and r.get("id") in (5, None), "no jsonrpc: -32600", r)
s.alive("a request without jsonrpc")
r = s.ask('{"jsonrpc":"1.0","id":6,"method":"ping"}')
expect(r.get("error", {}).get("code") == -32600 and r.get("id") in (6, None), "jsonrpc 1.0: -32600", r)
s.alive("jsonrpc 1.0")
r = s.ask('{"jsonrpc":"2.0","id":7,"method":42}')
expect(r.get("error", {}).get("code") == -32600 and r.get("id") in (7, None), "a method that is a number", r)
s.alive("a numeric method")
error_of(s.ask({"jsonrpc": "2.0", "id": 8, "method": "no/such"}), -32601, 8, "unknown method")
s.alive("an unknown method")
# A notification gets no answer, even one nobody knows.
s.send({"jsonrpc": "2.0", "method": "notifications/no-such"})
s.alive("an unknown notification")
error_of(s.ask({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {"name": "no_such_tool", "arguments": {}}}),
         -32602, 9, "an unknown tool")
s.alive("an unknown tool")
error_of(s.ask({"jsonrpc": "2.0", "id": 10, "method": "tools/call", "params": {"arguments": {}}}),
         -32602, 10, "tools/call without a name")
s.alive("tools/call without a name")
error_of(s.ask({"jsonrpc": "2.0", "id": 11, "method": "resources/read", "params": {"uri": "file:///etc/passwd"}}),
         -32602, 11, "resources/read of another uri")
s.alive("a bad uri")
s.alive("resources/read")

# Bad tool arguments: results with isError, not protocol errors.
for i, (name, args, what) in enumerate([
        ("exec", {"session": "x", "command": "true", "bogus": 1}, "an unknown field"),
        ("exec", {"session": 5, "command": "true"}, "a session that is a number"),
        ("exec", {"session": "x"}, "no command"),
        ("exec", {"session": "x", "command": "true", "background": "yes"}, "a string for a boolean"),
        ("job_output", {"session": "x", "job": "one"}, "a string for an integer"),
        ("list_sessions", {"extra": True}, "an argument list_sessions does not take"),
        ("open_session", {"session": "a b"}, "a bad session name"),
        ("exec", {"session": "no-such-session", "command": "true"}, "a session that is not there")], start=20):
    r = s.ask({"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {"name": name, "arguments": args}})
    tool_error(r, i, what)
    s.alive(what)
r = s.ask({"jsonrpc": "2.0", "id": 40, "method": "tools/call",
           "params": {"name": "exec", "arguments": {"session": "no-such-session", "command": "true"}}})
expect(r["result"]["content"][0]["text"].startswith("no_session: "), "a daemon error keeps its code", r)

r = s.ask({"jsonrpc": "2.0", "id": 41, "method": "tools/list"})
expect(len(r["result"]["tools"]) == 10, "tools/list", r)
# Responses to requests it never sent are ignored.
s.send({"jsonrpc": "2.0", "id": 999, "result": {}})
s.alive("a stray response")
s.close()
print("ok raw")
