#!/usr/bin/env bash
# The image's root filesystem, the one list of what is in it: the Dockerfile's build stage runs this for
# registries, hack/image.sh (make image) runs it for podman, and tests/image checks the result.
#   usage: hack/rootfs.sh DIR BINARY
# DIR (created, must not exist) receives:
#   /usr/local/bin/o2ims-operator   the static binary (ENTRYPOINT)
#   /usr/local/bin/kopf             a link to it: the Python image's `kopf run …` as a command
#   /etc/ssl/certs/ca-certificates.crt   Debian's CA bundle (package ca-certificates)
#   /etc/passwd, /etc/group         root and o2ims, uid/gid 65535 (the image's USER)
# Everything is owned by root and read-only to the operator.
set -euo pipefail
dir="${1:?usage: hack/rootfs.sh DIR BINARY}"
bin="${2:?usage: hack/rootfs.sh DIR BINARY}"
ca=/etc/ssl/certs/ca-certificates.crt
if [[ ! -s "$ca" ]]; then
  echo "hack/rootfs.sh: $ca is missing: apt-get install ca-certificates" >&2
  exit 1
fi
if [[ -e "$dir" ]]; then
  echo "hack/rootfs.sh: $dir exists; give a new directory" >&2
  exit 1
fi
umask 022
mkdir -p "$dir/usr/local/bin" "$dir/etc/ssl/certs"
install -m 0755 "$bin" "$dir/usr/local/bin/o2ims-operator"
ln -s o2ims-operator "$dir/usr/local/bin/kopf"
install -m 0644 "$ca" "$dir/etc/ssl/certs/ca-certificates.crt"
printf '%s\n' 'root:x:0:0:root:/root:/usr/sbin/nologin' 'o2ims:x:65535:65535:o2ims-operator:/nonexistent:/usr/sbin/nologin' >"$dir/etc/passwd"
printf '%s\n' 'root:x:0:' 'o2ims:x:65535:' >"$dir/etc/group"
chmod 0644 "$dir/etc/passwd" "$dir/etc/group"
