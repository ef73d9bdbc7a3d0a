#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Run every example of docs/api.md against a real daemon and compare.

An example is a fenced block whose info string is `jsonl`:

    → {"id":1,"op":"ping"}        a request, sent as it is (bytes after "→ ")
    ← {"id":1,"ok":true}          an answer expected
    ⏱ 0.5                         wait that many seconds before what follows
    # text                        a comment

HTML comments just before a block set options, one a comment:
    doctest: env NAME=VALUE       in the environment of `airlock serve`
    doctest: setup SHELL          run with sh -c before the block
    doctest: ignore-output        output events are not compared
    doctest: fresh                stop the daemon first (a new one starts)
    doctest: skip REASON          not run (say why)

All blocks of a file run in order against one daemon, each block on one
`airlock serve` connection (stdin closed after the last request, so every
answer comes).  Answers are compared per request id: the non-output
answers in order and exactly (keys and values), the output events of an
id merged per stream.  The values of a few keys vary from run to run and
are compared by type only (VOLATILE).  The paths the document shows are
replaced by this run's: /tmp/apidoc/project (the workspace) and
/run/user/1000 (XDG_RUNTIME_DIR).

Usage: api_doctest.py AIRLOCK DOC WORKDIR RUNTIME_DIR [--print | --fill]
With --print, each block's actual answers are printed; --fill writes them
into DOC in place of the expected ones (for writing docs: read the diff).
"""
import json
import os
import re
import subprocess
import sys
import time

VOLATILE = {"duration_ms", "idle_ms", "uptime_ms", "pid", "config_hash",
            "spill_path", "timeout_ms", "clients", "built_at", "last_used"}
DOC_WORK = "/tmp/apidoc/project"
DOC_RUNTIME = "/run/user/1000"


def blocks(text):
    """(line number, options, lines) of each jsonl block."""
    out = []
    lines = text.split("\n")
    i = 0
    opts = []
    while i < len(lines):
        line = lines[i]
        m = re.match(r"\s*<!--\s*(doctest:.*?)\s*-->\s*$", line)
        if m:
            opts.append(m.group(1)[len("doctest:"):].strip())
            i += 1
            continue
        if line.strip() == "```jsonl":
            start = i + 1
            body = []
            i += 1
            while i < len(lines) and lines[i].strip() != "```":
                body.append(lines[i])
                i += 1
            out.append((start, opts, body))
            opts = []
        elif line.strip():
            opts = []
        i += 1
    return out


def same(want, got, path=""):
    """None when equal (VOLATILE keys: same type), else a description."""
    key = path.rsplit(".", 1)[-1]
    if key in VOLATILE:
        if want is None or got is None:
            return None if (want is None) == (got is None) else f"{path}: {got!r} is not like {want!r}"
        return None if type(want) == type(got) or (isinstance(want, (int, float)) and isinstance(got, (int, float))) \
            else f"{path}: {got!r} is not like {want!r}"
    if isinstance(want, dict) and isinstance(got, dict):
        if list(want) != list(got):
            return f"{path}: keys {list(got)} (expected {list(want)})"
        for k in want:
            d = same(want[k], got[k], f"{path}.{k}" if path else k)
            if d:
                return d
        return None
    if isinstance(want, list) and isinstance(got, list):
        if len(want) != len(got):
            return f"{path}: {len(got)} items (expected {len(want)})"
        for n, (w, g) in enumerate(zip(want, got)):
            d = same(w, g, f"{path}.{n}")
            if d:
                return d
        return None
    if want != got or type(want) != type(got):
        return f"{path or 'answer'}: {json.dumps(got)[:300]} (expected {json.dumps(want)[:300]})"
    return None


def group(answers, ignore_output):
    """{id: ([non-output answers], {stream: text})} (ids as JSON text)."""
    g = {}
    for a in answers:
        k = json.dumps(a.get("id", "<none>"), sort_keys=True)
        rest, streams = g.setdefault(k, ([], {}))
        if a.get("event") == "output":
            if not ignore_output:
                streams[a["stream"]] = streams.get(a["stream"], "") + a["data"]
        else:
            rest.append(a)
    return g


def interleave(body, got, shown):
    """The block with each request followed by its answers (for --fill)."""
    by_id = {}
    for a, line in zip(got, shown):
        by_id.setdefault(json.dumps(a.get("id", "<none>"), sort_keys=True), []).append(line)
    out = []
    for l in body:
        if l.startswith("← "):
            continue
        out.append(l)
        if l.startswith("→ "):
            try:
                req = json.loads(l[2:])
                k = json.dumps(req.get("id", "<none>") if isinstance(req, dict) else "<none>",
                               sort_keys=True)
            except ValueError:
                k = json.dumps("<none>")
            if k == json.dumps("<none>"):
                out.extend(by_id.get(k, [])[:1])
                by_id[k] = by_id.get(k, [])[1:]
            else:
                out.extend(by_id.pop(k, []))
    for rest in by_id.values():
        out.extend(rest)
    return out


def main():
    airlock, doc, work, runtime = sys.argv[1:5]
    show = "--print" in sys.argv
    fill = "--fill" in sys.argv
    fills = []
    text = open(doc, encoding="utf-8").read()
    passed = failed = 0
    for start, opts, body in blocks(text):
        where = f"{doc}:{start}"

        def local(s):
            return s.replace(DOC_WORK, work).replace(DOC_RUNTIME, runtime)

        env = dict(os.environ)
        ignore_output = False
        skip = None
        for o in opts:
            if o.startswith("env "):
                k, _, v = o[4:].partition("=")
                env[k] = v
            elif o.startswith("setup "):
                r = subprocess.run(["sh", "-ec", local(o[6:])], env=env, cwd=work,
                                   timeout=60, capture_output=True)
                if r.returncode:
                    print(f"# {where}: setup failed ({r.returncode}): "
                          + (r.stdout + r.stderr).decode(errors="replace")[-500:])
            elif o == "ignore-output":
                ignore_output = True
            elif o == "fresh":
                subprocess.run([airlock, "daemon", "stop"], env=env, timeout=30,
                               stdout=subprocess.DEVNULL)
            elif o.startswith("skip"):
                skip = o
            else:
                print(f"not ok {where}: unknown doctest option {o!r}")
                failed += 1
                skip = "bad option"
        expected = [json.loads(local(l[2:])) for l in body if l.startswith("← ")]
        if skip:
            print(f"ok {where} # SKIP {skip}")
            continue
        p = subprocess.Popen([airlock, "serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, env=env)
        for l in body:
            if l.startswith("→ "):
                p.stdin.write((local(l[2:]) + "\n").encode())
                p.stdin.flush()
            elif l.startswith("⏱ "):
                time.sleep(float(l[2:]))
        try:
            out, err = p.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            p.kill()
            out, err = p.communicate()
        p.stdout, p.stderr = out, err
        try:
            got = [json.loads(l) for l in p.stdout.decode().splitlines() if l.strip()]
        except ValueError as e:
            print(f"not ok {where}: not JSON: {e}: {p.stdout[:500]!r}")
            failed += 1
            continue
        if ignore_output:
            got = [a for a in got if a.get("event") != "output"]
        shown = ["← " + json.dumps(a, ensure_ascii=False, separators=(",", ":"))
                 .replace(work, DOC_WORK).replace(runtime, DOC_RUNTIME) for a in got]
        if show:
            print(f"--- {where}")
            print("\n".join(shown))
        if fill:
            fills.append((start, len(body), interleave(body, got, shown)))
        want_g, got_g = group(expected, ignore_output), group(got, ignore_output)
        problem = None
        if sorted(want_g) != sorted(got_g):
            problem = f"answers for ids {sorted(got_g)}, expected {sorted(want_g)}"
        for k in want_g if not problem else []:
            (wrest, wstreams), (grest, gstreams) = want_g[k], got_g[k]
            if len(wrest) != len(grest):
                problem = f"id {k}: {len(grest)} answers, expected {len(wrest)}: {grest}"
                break
            for w, g in zip(wrest, grest):
                problem = same(w, g)
                if problem:
                    problem = f"id {k}: {problem}"
                    break
            if not problem and wstreams != gstreams:
                problem = f"id {k}: output {gstreams!r}, expected {wstreams!r}"
            if problem:
                break
        if problem:
            print(f"not ok {where}: {problem}")
            if p.stderr:
                print("# stderr: " + p.stderr.decode(errors="replace")[-500:])
            failed += 1
        else:
            print(f"ok {where}")
            passed += 1
    if fill:
        lines = text.split("\n")
        for start, n, new in reversed(fills):
            lines[start:start + n] = new
        open(doc, "w", encoding="utf-8").write("\n".join(lines))
    print(f"# {passed} examples agree, {failed} differ")
    return 1 if failed or not passed else 0


if __name__ == "__main__":
    sys.exit(main())
