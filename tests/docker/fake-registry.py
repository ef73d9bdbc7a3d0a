#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A test double of a container registry: the Docker Registry HTTP API V2
(the distribution spec's pull side: /v2/, manifests, blobs), serving one
image read from a `docker save` archive.  No registry is reachable from
the test machines; this lets `docker pull` -- and airlock's pull of a
missing image -- run for real against 127.0.0.1.

Usage: fake-registry.py SAVED.tar NAME:TAG PORTFILE
Listens on 127.0.0.1 on a free port, writes the port to PORTFILE, serves
until killed.  Every request is logged on stderr."""

import gzip
import hashlib
import http.server
import io
import json
import sys
import tarfile

MANIFEST_V2 = "application/vnd.docker.distribution.manifest.v2+json"
CONFIG_V1 = "application/vnd.docker.container.image.v1+json"
LAYER_GZIP = "application/vnd.docker.image.rootfs.diff.tar.gzip"


def load(saved):
    """Config and gzipped layers of the one image in a `docker save` tar."""
    with tarfile.open(saved) as tar:
        index = json.load(tar.extractfile("manifest.json"))[0]
        config = tar.extractfile(index["Config"]).read()
        layers = []
        for name in index["Layers"]:
            raw = tar.extractfile(name).read()
            buf = io.BytesIO()
            with gzip.GzipFile(fileobj=buf, mode="wb", mtime=0) as gz:
                gz.write(raw)
            layers.append(buf.getvalue())
    return config, layers


def digest(data):
    return "sha256:" + hashlib.sha256(data).hexdigest()


def main():
    saved, ref, portfile = sys.argv[1:4]
    name, tag = ref.rsplit(":", 1)
    config, layers = load(saved)
    blobs = {digest(config): config}
    for layer in layers:
        blobs[digest(layer)] = layer
    manifest = json.dumps({
        "schemaVersion": 2,
        "mediaType": MANIFEST_V2,
        "config": {"mediaType": CONFIG_V1, "size": len(config),
                   "digest": digest(config)},
        "layers": [{"mediaType": LAYER_GZIP, "size": len(layer),
                    "digest": digest(layer)} for layer in layers],
    }).encode()

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def reply(self, status, body=b"", ctype="application/json",
                  extra=None, head=False):
            self.send_response(status)
            self.send_header("Docker-Distribution-API-Version", "registry/2.0")
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            for k, v in (extra or {}).items():
                self.send_header(k, v)
            self.end_headers()
            if not head:
                self.wfile.write(body)

        def route(self, head):
            path = self.path.split("?", 1)[0]
            if path in ("/v2", "/v2/"):
                return self.reply(200, b"{}", head=head)
            prefix = "/v2/%s/" % name
            if path.startswith(prefix + "manifests/"):
                want = path[len(prefix + "manifests/"):]
                if want in (tag, digest(manifest)):
                    return self.reply(200, manifest, MANIFEST_V2,
                                      {"Docker-Content-Digest": digest(manifest)},
                                      head)
            if path.startswith(prefix + "blobs/"):
                blob = blobs.get(path[len(prefix + "blobs/"):])
                if blob is not None:
                    return self.reply(200, blob, "application/octet-stream",
                                      {"Docker-Content-Digest": digest(blob)},
                                      head)
            err = {"errors": [{"code": "MANIFEST_UNKNOWN" if "manifests" in path
                               else "NAME_UNKNOWN", "message": "not here"}]}
            self.reply(404, json.dumps(err).encode(), head=head)

        def do_GET(self):
            self.route(False)

        def do_HEAD(self):
            self.route(True)

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    with open(portfile + ".tmp", "w") as f:
        f.write(str(server.server_address[1]))
    import os
    os.rename(portfile + ".tmp", portfile)
    server.serve_forever()


if __name__ == "__main__":
    main()
