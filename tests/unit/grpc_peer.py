#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A gRPC server for tests/unit/test_grpc_call.c: python3-grpcio with
generic handlers, raw bytes in and out (no .proto, no codegen), h2c on
127.0.0.1 at a free port.  Prints "listening on 127.0.0.1:PORT" and
serves until its stdin closes (the test ends, or dies).  With
--tls CERT KEY it also serves TLS (HTTP/2 over ALPN) on a second free
port, printed next as "tls on 127.0.0.1:PORT".

Methods of /airlock.test.Peer/ (request text -> answer):
  Echo          any bytes -> the same bytes
  Metadata      -> the request's metadata, one "key=value" a line
  Fail          "CODE message" -> that status, trailers only
  Stream        "n1,n2,..." -> one message per size, byte j of message i
                being (i + j) % 251
  StreamAbort   like Stream, then UNAVAILABLE "going away"
  Big           "n" -> one message of n bytes
  Slow          "seconds" -> sleeps, then "late"
  Flaky         "k" -> UNAVAILABLE for the first k calls with the same
                x-idempotency-key, then "key=K attempt=A calls=C"
"""
import os
import sys
import threading
import time
from concurrent import futures

os.environ.setdefault("GRPC_VERBOSITY", "NONE")  # the refused TLS test
import grpc  # noqa: E402  pylint: disable=wrong-import-position

FLAKY_CALLS = {}
FLAKY_LOCK = threading.Lock()


def pattern(i, size):
    """Message i of a stream: size bytes the client can check."""
    return bytes((i + j) % 251 for j in range(size))


def sizes(request):
    return [int(s) for s in request.decode().split(",") if s]


def echo(request, context):
    return request


def metadata(request, context):
    lines = [f"{k}={v}" for k, v in context.invocation_metadata()]
    return "\n".join(lines).encode()


def fail(request, context):
    code, _, message = request.decode().partition(" ")
    status = next(s for s in grpc.StatusCode if s.value[0] == int(code))
    context.abort(status, message)


def stream(request, context):
    for i, size in enumerate(sizes(request)):
        yield pattern(i, size)


def stream_abort(request, context):
    yield from stream(request, context)
    context.abort(grpc.StatusCode.UNAVAILABLE, "going away")


def big(request, context):
    return b"x" * int(request.decode())


def slow(request, context):
    time.sleep(float(request.decode()))
    return b"late"


def flaky(request, context):
    meta = dict(context.invocation_metadata())
    key = meta.get("x-idempotency-key", "")
    with FLAKY_LOCK:
        FLAKY_CALLS[key] = FLAKY_CALLS.get(key, 0) + 1
        calls = FLAKY_CALLS[key]
    if calls <= int(request.decode()):
        context.abort(grpc.StatusCode.UNAVAILABLE, "try again")
    attempt = meta.get("x-retry-attempt", "0")
    return f"key={key} attempt={attempt} calls={calls}".encode()


UNARY = {"Echo": echo, "Metadata": metadata, "Fail": fail, "Big": big,
         "Slow": slow, "Flaky": flaky}
STREAM = {"Stream": stream, "StreamAbort": stream_abort}


class Peer(grpc.GenericRpcHandler):
    """Routes /airlock.test.Peer/NAME; bytes pass through untouched."""

    def service(self, handler_call_details):
        prefix = "/airlock.test.Peer/"
        name = handler_call_details.method
        if not name.startswith(prefix):
            return None
        name = name[len(prefix):]
        if name in UNARY:
            return grpc.unary_unary_rpc_method_handler(UNARY[name])
        if name in STREAM:
            return grpc.unary_stream_rpc_method_handler(STREAM[name])
        return None


def main():
    limit = 64 << 20
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=8),
        handlers=[Peer()],
        options=[("grpc.max_send_message_length", limit),
                 ("grpc.max_receive_message_length", limit)])
    port = server.add_insecure_port("127.0.0.1:0")
    tls_port = None
    if len(sys.argv) == 4 and sys.argv[1] == "--tls":
        with open(sys.argv[2], "rb") as c, open(sys.argv[3], "rb") as k:
            creds = grpc.ssl_server_credentials([(k.read(), c.read())])
        tls_port = server.add_secure_port("127.0.0.1:0", creds)
    server.start()
    print(f"listening on 127.0.0.1:{port}", flush=True)
    if tls_port:
        print(f"tls on 127.0.0.1:{tls_port}", flush=True)
    sys.stdin.read()  # until the test closes it
    server.stop(0)


if __name__ == "__main__":
    main()
