#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A person at a real terminal, running one airlock command there, for
tests/pty_attach.bats: the command gets a pseudo-terminal of ROWS x COLS
(TERM=xterm) as its stdin, stdout and stderr, and each STEP runs in turn,
each bounded in time.

  terminal_client.py ROWS COLS STEP... -- COMMAND [ARG]...

  type:TEXT     type TEXT (Python escapes: \\r, \\x03, \\x1c ...)
  expect:REGEX  wait (20 s at most) until the screen's bytes since the last
                expect match REGEX; else print what came, exit 1
  pause:S       sleep S seconds
  resize:R:C    change the window (the command gets SIGWINCH)
  signal:NAME   send the command a signal (TERM, HUP, ...)
  sh:LINE       run LINE with sh beside it (e.g. stop the daemon under it)
  wait          until the command ends (20 s at most): "exit N", then
                "terminal: cooked" or "terminal: raw" (how it left it)

and prints everything the terminal showed at the end.
"""
import codecs
import fcntl
import os
import pty
import re
import select
import signal
import struct
import sys
import termios
import time

split = sys.argv.index("--")
rows, cols = int(sys.argv[1]), int(sys.argv[2])
steps, command = sys.argv[3:split], sys.argv[split + 1:]

pid, master = pty.fork()
if pid == 0:
    fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
    os.environ["TERM"] = "xterm"
    os.execvp(command[0], command)

screen = b""
mark = 0
status = None


def read_some(timeout):
    """What the terminal shows within timeout; False once it is closed."""
    global screen
    if not select.select([master], [], [], timeout)[0]:
        return True
    try:
        chunk = os.read(master, 65536)
    except OSError:  # EIO: nothing holds the terminal any more
        return False
    screen += chunk
    return bool(chunk)


def reap(block):
    global status
    if status is None:
        got, st = os.waitpid(pid, 0 if block else os.WNOHANG)
        if got:
            status = os.waitstatus_to_exitcode(st)


def fail(why):
    print(f"terminal_client: {why}")
    print(screen.decode(errors="replace"))
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    sys.exit(1)


for step in steps:
    verb, _, arg = step.partition(":")
    if verb == "type":
        os.write(master, codecs.decode(arg, "unicode_escape").encode("latin-1"))
    elif verb == "expect":
        deadline = time.monotonic() + 20
        while True:
            m = re.search(arg.encode(), screen[mark:])
            if m:
                mark += m.end()
                break
            left = deadline - time.monotonic()
            if left <= 0 or not read_some(left):
                fail(f"expected /{arg}/")
    elif verb == "pause":
        end = time.monotonic() + float(arg)
        while time.monotonic() < end and read_some(end - time.monotonic()):
            pass
    elif verb == "resize":
        r, c = arg.split(":")
        fcntl.ioctl(master, termios.TIOCSWINSZ, struct.pack("HHHH", int(r), int(c), 0, 0))
    elif verb == "sh":
        os.spawnlp(os.P_WAIT, "sh", "sh", "-c", arg)
    elif verb == "signal":
        os.kill(pid, getattr(signal, "SIG" + arg))
    elif verb == "wait":
        deadline = time.monotonic() + 20
        while status is None and time.monotonic() < deadline:
            read_some(0.1)
            reap(False)
        if status is None:
            fail("the command did not end")
        while read_some(0.1) and select.select([master], [], [], 0)[0]:
            pass
        lflag = termios.tcgetattr(master)[3]
        cooked = lflag & termios.ICANON and lflag & termios.ECHO
        print(f"exit {status}")
        print("terminal: " + ("cooked" if cooked else "raw"))
    else:
        fail(f"unknown step {step}")

reap(False)
if status is None:
    os.kill(pid, signal.SIGKILL)
    reap(True)
print(screen.decode(errors="replace"))
