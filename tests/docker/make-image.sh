#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Build the docker backend's test image without a registry: busybox-static
# for the usual tools, plus this host's bash and the libraries it loads,
# packed into a tarball and `docker import`ed.  Idempotent: the image is
# labelled with a hash of its contents and rebuilt only when they change.
#
#   tests/docker/make-image.sh [IMAGE]     (default airlock-test:latest)
#
# Needs root (or docker group membership), busybox-static and bash.
set -euo pipefail
IMAGE=${1:-airlock-test:latest}
# Debian's CLI: the tests never depend on another docker binary in PATH.
DOCKER=${DOCKER:-/usr/bin/docker}
BUSYBOX=$(command -v busybox || true)
BASH_BIN=/bin/bash

if [ -z "$BUSYBOX" ] || ! "$BUSYBOX" --list >/dev/null 2>&1; then
  echo "make-image.sh: busybox not found (install busybox-static)" >&2
  exit 1
fi
case $(ldd "$BUSYBOX" 2>&1 || true) in
  *"not a dynamic executable"*|*"statically linked"*) ;;
  *) echo "make-image.sh: $BUSYBOX is not static (install busybox-static)" >&2; exit 1 ;;
esac

root=$(mktemp -d /tmp/airlock-image.XXXXXX)
trap 'rm -rf "$root"' EXIT
mkdir -p "$root"/{bin,etc,tmp,var/tmp,run,root,home/user,proc,sys,dev,usr/bin,sbin,usr/sbin}
chmod 1777 "$root/tmp" "$root/var/tmp"
cp "$BUSYBOX" "$root/bin/busybox"
for applet in $("$BUSYBOX" --list); do
  [ "$applet" = bash ] || [ "$applet" = busybox ] || ln -s busybox "$root/bin/$applet"
done
# Debian's bash with exactly what the dynamic loader needs for it.
cp "$BASH_BIN" "$root/bin/bash"
for lib in $(ldd "$BASH_BIN" | grep -o '/[^ ]*'); do
  mkdir -p "$root$(dirname "$lib")"
  cp -L "$lib" "$root$lib"
done
cat > "$root/etc/passwd" <<'PASSWD'
root:x:0:0:root:/root:/bin/bash
user:x:1000:1000:unprivileged test user:/home/user:/bin/bash
nobody:x:65534:65534:nobody:/nonexistent:/bin/false
PASSWD
cat > "$root/etc/group" <<'GROUP'
root:x:0:
user:x:1000:
nogroup:x:65534:
GROUP
chown 1000:1000 "$root/home/user"
chmod 0700 "$root/root"

# The content hash: file names, modes and bytes, in a stable order.
hash=$(cd "$root" && find . -print0 | LC_ALL=C sort -z |
       xargs -0 stat -c '%n %a %u %g %F' | sha256sum | cut -c1-16)
hash=$hash-$(cd "$root" && find . -type f -print0 | LC_ALL=C sort -z | xargs -0 cat | sha256sum | cut -c1-16)
have=$("$DOCKER" image inspect -f '{{index .Config.Labels "airlock.test-image"}}' "$IMAGE" 2>/dev/null || true)
if [ "$have" = "$hash" ]; then
  echo "make-image.sh: $IMAGE is up to date ($hash)"
  exit 0
fi
tar -C "$root" --numeric-owner -cf - . |
  "$DOCKER" import --change "LABEL airlock.test-image=$hash" \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'CMD ["/bin/sh"]' - "$IMAGE" >/dev/null
echo "make-image.sh: built $IMAGE ($hash)"
