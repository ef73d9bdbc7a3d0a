#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Cross-check of airlock's protobuf codec (backends/protobuf_wire.c)
against the protobuf library, for tests/unit/test_protobuf_wire.c.

    wire_check.py GENDIR check CASE FILE   FILE (written by the C encoder)
                                           must parse as CASE's message and
                                           be the library's own encoding
    wire_check.py GENDIR emit CASE FILE    write CASE's message, for the C
                                           decoder to read back

GENDIR holds wire_check_pb2.py, made by protoc --python_out from
wire_check.proto.  Exit 0 on success; 1 with the difference on stderr.
"""
import sys


def cases(pb):
    """The test messages by name; the C test builds the same ones."""
    inner = pb.Inner(name="top", n=1, children=[
        pb.Inner(name="mid", n=2, children=[pb.Inner(name="leaf", n=3)])])
    return {
        "empty": pb.All(),
        "scalars": pb.All(
            u32=4294967295, u64=18446744073709551615, i32=-1,
            i64=-9223372036854775808, flag=True, kind=pb.KIND_B, f=55.0,
            d=-2.25, fx32=0xDEADBEEF, fx64=0x0123456789ABCDEF,
            s="h\u00e9llo", b=b"\x00\xff\x01", code=-2, last=7),
        "negative": pb.All(i32=-123456, u64=2**63, signal=9),
        "nested": pb.All(
            inner=inner, names=["a", "", "\u00fc"],
            env={"EMPTY": "", "PATH": "/usr/bin"},
            items=[pb.Inner(name="x" * 200), pb.Inner()]),
        "defaults": pb.All(opt_u32=0, opt_s="", opt_b=False, opt_f=0.0,
                           code=0),
    }


PRESENT = {"defaults": ["opt_u32", "opt_s", "opt_b", "opt_f", "code"]}


def check(pb, name, data):
    """Problems with the C encoder's bytes for case name, as text."""
    want = cases(pb)[name]
    got = pb.All()
    try:
        got.ParseFromString(data)
    except Exception as e:  # the library's DecodeError and friends
        return [f"does not parse: {e}"]
    problems = []
    if got != want:
        problems.append(f"got:\n{got}\nwant:\n{want}")
    problems += [f"{f} is not present" for f in PRESENT.get(name, [])
                 if not got.HasField(f)]
    canonical = want.SerializeToString(deterministic=True)
    if data != canonical:
        problems.append(f"bytes differ:\n got  {data.hex()}\n want "
                        f"{canonical.hex()}")
    return problems


def emit(pb, name):
    """Case name's bytes; "unknown" adds fields All does not know."""
    if name == "unknown":
        known = pb.All(u32=5, s="kept", names=["one", "two"])
        extra = pb.Unknowns(x64=2**64 - 1, x32=7, xb=b"skip me", xv=2**40,
                            xm=pb.Inner(name="deep"))
        return (extra.SerializeToString() + known.SerializeToString()
                + extra.SerializeToString())
    return cases(pb)[name].SerializeToString()


def main(argv):
    if len(argv) != 5 or argv[2] not in ("check", "emit"):
        sys.stderr.write(__doc__)
        return 2
    sys.path.insert(0, argv[1])
    import wire_check_pb2 as pb  # pylint: disable=import-outside-toplevel
    mode, name, path = argv[2:]
    if mode == "emit":
        with open(path, "wb") as f:
            f.write(emit(pb, name))
        return 0
    with open(path, "rb") as f:
        problems = check(pb, name, f.read())
    for p in problems:
        sys.stderr.write(f"wire_check {name}: {p}\n")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
