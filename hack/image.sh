#!/usr/bin/env bash
# make image: the OCI image, built with Debian's podman alone (apt-get install podman runc ca-certificates):
# no registry, no daemon, no base image. The binary (hack/build.sh) and the root filesystem
# (hack/rootfs.sh) are made here as the Dockerfile's build stage makes them; the Dockerfile's final stage
# (FROM scratch, one COPY of that root filesystem, then USER, ENTRYPOINT, CMD, …) is then built as written.
#   usage: hack/image.sh IMAGE [VERSION]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
image="${1:?usage: hack/image.sh IMAGE [VERSION]}"
version="${2:-dev}"
# The commit, for the image's org.opencontainers.image.revision label ("-dirty" with uncommitted changes).
revision="${REVISION:-$(git -C "$root" describe --always --dirty --abbrev=40 --match=NeVeR 2>/dev/null || echo unknown)}"
if ! command -v podman >/dev/null 2>&1; then
  echo "hack/image.sh: podman is not installed: apt-get install podman runc ca-certificates" >&2
  exit 1
fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir "$work/context"
"$root/hack/build.sh" "$work/o2ims-operator" "$version"
"$root/hack/rootfs.sh" "$work/context/rootfs" "$work/o2ims-operator"

# The final stage: from its FROM to the end, with the COPY from the build stage reading the context.
awk -v want='COPY --from=build /rootfs/ /' '
  /^FROM[ \t]/ { n = 0; delete stage }
  { stage[n++] = $0 }
  END {
    if (stage[0] !~ /^FROM[ \t]+scratch[ \t]*$/) { print "the final stage is not FROM scratch: " stage[0] > "/dev/stderr"; exit 1 }
    copies = 0
    for (i = 0; i < n; i++) {
      line = stage[i]
      if (line ~ /^(RUN|ADD|ONBUILD)[ \t]/) { print "the final stage may not " line > "/dev/stderr"; exit 1 }
      if (line ~ /^COPY[ \t]/) {
        if (line != want) { print "the final stage copies only \"" want "\", not: " line > "/dev/stderr"; exit 1 }
        line = "COPY rootfs/ /"; copies++
      }
      print line
    }
    if (copies != 1) { print "the final stage must " want " once" > "/dev/stderr"; exit 1 }
  }' "$root/Dockerfile" >"$work/Containerfile" || { echo "hack/image.sh: cannot use the Dockerfile's final stage" >&2; exit 1; }

podman build --pull=never --layers=false --network=none --build-arg "VERSION=$version" --build-arg "REVISION=$revision" \
  -f "$work/Containerfile" -t "$image" "$work/context"
