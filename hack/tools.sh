#!/usr/bin/env bash
# Builds the real kube-apiserver, kubectl and etcd the tests and the local run use, from the Go module proxy
# (downloads from dl.k8s.io are impossible here). Cached outside the checkout and rebuilt only when missing or
# stale: the stamp covers the wrapper modules and the Go version, and each binary must report its version.
# Prints the directory holding the binaries on stdout; progress goes to stderr.
set -euo pipefail

KUBE_VERSION=v1.37.2
ETCD_VERSION=3.6.16
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dir="${O2IMS_TOOLS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/o2ims-operator/tools/kube-${KUBE_VERSION}-etcd-${ETCD_VERSION}}"
mkdir -p "$dir"
# Test packages run in parallel and each may ask for the tools: one builds, the others wait for it.
exec 9>"$dir/.lock"
flock 9

stamp="$( (go version; cat "$root"/hack/tools/kube/go.mod "$root"/hack/tools/kube/go.sum \
  "$root"/hack/tools/etcd/go.mod "$root"/hack/tools/etcd/go.sum) | sha256sum | cut -d' ' -f1)"

# Outputs are captured before matching: with pipefail, `cmd | grep -q` fails whenever grep exits before cmd
# finishes writing (SIGPIPE), which made the check flaky.
fresh() {
  [[ -f "$dir/stamp" && "$(cat "$dir/stamp")" == "$stamp" ]] || return 1
  local out
  out="$("$dir/kube-apiserver" --version 2>/dev/null)" || return 1
  [[ "$out" == "Kubernetes $KUBE_VERSION" ]] || return 1
  out="$("$dir/kubectl" version --client 2>/dev/null)" || return 1
  [[ "$out" == *"Client Version: $KUBE_VERSION"* ]] || return 1
  out="$("$dir/etcd" --version 2>/dev/null)" || return 1
  [[ "$out" == *"etcd Version: $ETCD_VERSION"* ]] || return 1
}

if fresh; then
  echo "$dir"
  exit 0
fi

# The first build takes ~5 minutes on 2 cores; say so, and keep saying it is alive.
start=$SECONDS
echo "building kube-apiserver/kubectl $KUBE_VERSION and etcd $ETCD_VERSION from the Go module proxy into $dir (first time: ~5 min)" >&2
( while sleep 30; do echo "  ... still building ($((SECONDS - start))s)" >&2; done ) &
ticker=$!
trap 'kill $ticker 2>/dev/null || true' EXIT

minor="${KUBE_VERSION#v1.}"; minor="${minor%%.*}"
ldflags="-s -w -X k8s.io/component-base/version.gitVersion=$KUBE_VERSION -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor -X k8s.io/component-base/version.gitTreeState=clean"
tmp="$(mktemp -d "$dir/.build.XXXXXX")"
(
  cd "$root/hack/tools/kube"
  CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o "$tmp/kube-apiserver" k8s.io/kubernetes/cmd/kube-apiserver
  echo "  kube-apiserver built ($((SECONDS - start))s)" >&2
  CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o "$tmp/kubectl" k8s.io/kubernetes/cmd/kubectl
  echo "  kubectl built ($((SECONDS - start))s)" >&2
)
(
  cd "$root/hack/tools/etcd"
  CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$tmp/etcd" go.etcd.io/etcd/server/v3
  echo "  etcd built ($((SECONDS - start))s)" >&2
)
mv -f "$tmp"/kube-apiserver "$tmp"/kubectl "$tmp"/etcd "$dir"/
rmdir "$tmp"
echo "$stamp" > "$dir/stamp"
fresh || { echo "built binaries do not report the expected versions" >&2; exit 1; }
echo "tools ready in $((SECONDS - start))s" >&2
echo "$dir"
