#!/usr/bin/env bash
# The one build command, shared by the Makefile and the Dockerfile: a static, reproducible binary.
set -euo pipefail
out="${1:-bin/o2ims-operator}"
version="${2:-dev}"
CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=${version}" -o "$out" .
