#!/usr/bin/env bash
# Runs every fuzz target for a bounded time (CI: a few seconds each; `make fuzz FUZZTIME=5m` for longer).
set -euo pipefail
fuzztime="${1:-10s}"
cd "$(dirname "$0")/.."
for pkg in $(go list ./...); do
  dir=$(go list -f '{{.Dir}}' "$pkg")
  for target in $(grep -h -o '^func Fuzz[A-Za-z0-9_]*' "$dir"/*_test.go 2>/dev/null | sed 's/^func //' | sort -u); do
    echo "fuzz ${pkg#github.com/o2ims-operator/o2ims-operator/}:${target} for ${fuzztime}"
    go test -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" "$pkg" >/tmp/fuzz.$$.log 2>&1 || { cat /tmp/fuzz.$$.log; exit 1; }
  done
done
rm -f /tmp/fuzz.$$.log
