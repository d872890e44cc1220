#!/usr/bin/env bash
# Builds ORY Hydra (the OAuth 2.0 authorization server the NBI's OAuth tests run against) from the Go module
# proxy, as hack/tools.sh builds kube-apiserver: the hack/tools/hydra module pins it (go get -tool, with
# Hydra's own replace of pop), cached outside the checkout and rebuilt only when the module or Go changes.
# CGO and the sqlite tags: Hydra then serves from an in-memory SQLite database (DSN=memory).
# Prints the path of the binary on stdout; progress goes to stderr.
set -euo pipefail

HYDRA_VERSION=v2.3.0
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dir="${O2IMS_TOOLS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/o2ims-operator/tools}/hydra-${HYDRA_VERSION}"
mkdir -p "$dir"
exec 9>"$dir/.lock"
flock 9

stamp="$( (go version; cat "$root"/hack/tools/hydra/go.mod "$root"/hack/tools/hydra/go.sum) | sha256sum | cut -d' ' -f1)"
fresh() {
  [[ -f "$dir/stamp" && "$(cat "$dir/stamp")" == "$stamp" ]] || return 1
  local out
  out="$("$dir/hydra" version 2>/dev/null)" || return 1
  [[ "$out" == *"$HYDRA_VERSION"* ]]
}
if fresh; then
  echo "$dir/hydra"
  exit 0
fi

start=$SECONDS
echo "building ORY Hydra $HYDRA_VERSION from the Go module proxy into $dir (first time: ~10 min on 2 cores)" >&2
( while sleep 30; do echo "  ... still building Hydra ($((SECONDS - start))s)" >&2; done ) &
ticker=$!
trap 'kill $ticker 2>/dev/null || true' EXIT
tmp="$(mktemp -d "$dir/.build.XXXXXX")"
(
  cd "$root/hack/tools/hydra"
  CGO_ENABLED=1 go build -trimpath -tags sqlite,sqlite_omit_load_extension \
    -ldflags "-s -w -X github.com/ory/hydra/v2/driver/config.Version=$HYDRA_VERSION" -o "$tmp/hydra" github.com/ory/hydra/v2
)
mv -f "$tmp/hydra" "$dir/hydra"
rmdir "$tmp"
echo "$stamp" > "$dir/stamp"
fresh || { echo "the built hydra does not report $HYDRA_VERSION" >&2; exit 1; }
echo "Hydra ready in $((SECONDS - start))s" >&2
echo "$dir/hydra"
