#!/usr/bin/env bash
# The local stack for interactive use (Functions host on 127.0.0.1:7071). Ctrl-C stops it.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/node22.sh
bash scripts/ensure-deps.sh
# Local tooling from sources; the function app from dist/ (see scripts/demo.sh).
exec node --import tsx local/start.ts "$@"
