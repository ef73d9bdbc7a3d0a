#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Drives one command on a terminal through the JSON-lines API, for
tests/pty.bats: a person at a keyboard, in steps, each bounded in time.

  pty_client.py WORKDIR COMMAND STEP...

runs `airlock serve` (AIRLOCK), opens a session in WORKDIR, starts COMMAND
as a background job with "pty" (24x80), follows its output (attach), then
runs each STEP:

  type:TEXT     job_stdin TEXT (Python escapes: \\n, \\x03, ...)
  eof           job_stdin "" with eof
  expect:REGEX  wait (20 s at most) until the output since the last
                expect matches REGEX; else print the output, exit 1
  pause:S       sleep S seconds (a program must be running before ^C)
  resize:R:C    the resize op
  wait          until the job ends; print its exit code ("exit N")

and prints the job's whole output, as received, at the end.
"""
import atexit
import json
import os
import re
import select
import signal
import subprocess
import sys
import time

proc = subprocess.Popen([os.environ["AIRLOCK"], "serve"], stdin=subprocess.PIPE,
                        stdout=subprocess.PIPE)
pending = b""
output = ""
mark = 0
next_id = 10


def send(req):
    proc.stdin.write((json.dumps(req) + "\n").encode())
    proc.stdin.flush()


def read_line(deadline):
    """One answer line, or None when the deadline passed."""
    global pending
    while b"\n" not in pending:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([proc.stdout], [], [], left)[0]:
            return None
        chunk = os.read(proc.stdout.fileno(), 65536)
        if not chunk:
            sys.exit("pty_client: airlock serve ended")
        pending += chunk
    line, pending = pending.split(b"\n", 1)
    return json.loads(line)


def take(msg):
    """Keep the attach's output; answer whether msg ends request `want`."""
    global output
    if msg.get("id") == 3 and msg.get("event") == "output":
        output += msg["data"]


def request(req, timeout=30):
    """Send req and return its answer (events of other requests kept)."""
    global next_id
    next_id += 1
    req["id"] = next_id
    send(req)
    deadline = time.monotonic() + timeout
    while True:
        msg = read_line(deadline)
        if msg is None:
            sys.exit(f"pty_client: no answer to {req['op']}")
        take(msg)
        if msg.get("id") == next_id and "event" not in msg:
            if not msg.get("ok"):
                print(json.dumps(msg))
                sys.exit(1)
            return msg


def expect(pattern):
    """The next match starts after this one (not after what came with it)."""
    global mark
    deadline = time.monotonic() + 20
    while not (found := re.search(pattern, output[mark:])):
        msg = read_line(deadline)
        if msg is None:
            print(output)
            sys.exit(f"pty_client: no {pattern!r} in the output")
        take(msg)
    mark += found.end()


# However we end (a failed step, timeout's SIGTERM), airlock serve goes
# too: left behind, it would hold the caller's output open.
atexit.register(proc.kill)
signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
SESSION = f"pty-{os.getpid()}"  # the daemon may outlive a failed run
workdir, command = sys.argv[1], sys.argv[2]
request({"op": "open", "session": SESSION, "workdir": workdir}, 60)
job = request({"op": "exec", "session": SESSION, "command": command,
               "background": True, "pty": {}})["job"]
send({"id": 3, "op": "attach", "session": SESSION, "job": job})
for step in sys.argv[3:]:
    verb, _, arg = step.partition(":")
    if verb == "type":
        text = arg.encode().decode("unicode_escape")
        request({"op": "job_stdin", "session": SESSION, "job": job, "data": text})
    elif verb == "eof":
        request({"op": "job_stdin", "session": SESSION, "job": job, "data": "", "eof": True})
    elif verb == "expect":
        expect(arg)
    elif verb == "pause":
        time.sleep(float(arg))
    elif verb == "resize":
        rows, cols = arg.split(":")
        request({"op": "resize", "session": SESSION, "job": job, "rows": int(rows),
                 "cols": int(cols)})
    elif verb == "wait":
        end = request({"op": "job_wait", "session": SESSION, "job": job, "timeout": 20}, 30)
        print(f"exit {end.get('exit_code')} {end.get('state')}")
    else:
        sys.exit(f"pty_client: unknown step {step!r}")
request({"op": "close", "session": SESSION})
print(output)
