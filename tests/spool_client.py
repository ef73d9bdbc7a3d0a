#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A raw client of the daemon's socket, for tests/spool.bats: the things
the CLI never does on purpose (stop reading, vanish mid-output, send
bytes that are not JSON text).  Every mode is bounded in time.

  spool_client.py SOCKET raw                   stdin's bytes as they are;
                                               prints each answer line
  spool_client.py SOCKET noread SESSION CMD    exec, print the job id, then
                                               never read again (sleeps)
  spool_client.py SOCKET cut SESSION CMD MIN OUT
                                               exec, save the output events'
                                               data to OUT until MIN bytes,
                                               print "JOB NEXT_OFFSET", vanish
  spool_client.py SOCKET attach SESSION JOB OFFSET OUT
                                               attach, save the data to OUT,
                                               print the end line
"""
import json
import os
import socket
import sys
import time


def connect(path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(120)
    s.connect(path)
    return s


def lines(s):
    buf = b""
    while True:
        while b"\n" in buf:
            line, buf = buf.split(b"\n", 1)
            yield line
        chunk = s.recv(65536)
        if not chunk:
            return
        buf += chunk


def send(s, obj):
    s.sendall(json.dumps(obj).encode() + b"\n")


def main():
    path, mode = sys.argv[1], sys.argv[2]
    s = connect(path)
    if mode == "raw":
        data = sys.stdin.buffer.read()
        s.sendall(data)
        s.shutdown(socket.SHUT_WR)
        for line in lines(s):
            print(line.decode("utf-8", "backslashreplace"), flush=True)
        return
    if mode == "noread":
        send(s, {"id": 1, "op": "exec", "session": sys.argv[3],
                 "command": sys.argv[4], "timeout": 600})
        first = json.loads(next(lines(s)))
        print(first["job"], flush=True)
        time.sleep(600)
        return
    if mode == "cut":
        session, cmd, want, out = sys.argv[3], sys.argv[4], int(sys.argv[5]), sys.argv[6]
        send(s, {"id": 1, "op": "exec", "session": session, "command": cmd,
                 "timeout": 600})
        job, nxt = None, 0
        with open(out, "wb") as f:
            for line in lines(s):
                m = json.loads(line)
                if m.get("event") == "started":
                    job = m["job"]
                elif m.get("event") == "output":
                    f.write(m["data"].encode())
                    nxt = m["next_offset"]
                    if nxt >= want:
                        break
                else:
                    sys.exit("unexpected: %s" % line[:200])
        print(job, nxt, flush=True)
        os._exit(0)  # gone, without a word
    if mode == "attach":
        session, job, off, out = sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), sys.argv[6]
        send(s, {"id": 7, "op": "attach", "session": session, "job": job,
                 "offset": off})
        with open(out, "wb") as f:
            for line in lines(s):
                m = json.loads(line)
                if m.get("event") == "output":
                    f.write(m["data"].encode())
                else:
                    print(line.decode(), flush=True)
                    return
        sys.exit("the daemon closed the connection before the end")
    sys.exit("unknown mode " + mode)


if __name__ == "__main__":
    main()
