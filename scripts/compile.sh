#!/usr/bin/env bash
# Compiles the app into dist/ when a source is newer than the last build (or there is none): the local stack runs the
# compiled app exactly as Azure would. scripts/ensure-deps.sh runs it last; `npm test` runs it beside the lint steps
# (scripts/test.sh), since nothing they read is written here (web/build.ts replaces its generated module atomically).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -d dist ] || [ -n "$(find functions orchestrations shared local tests bench cli examples web scripts \( -name '*.ts' -o -name '*.html' -o -name '*.css' \) -newer dist/.build-stamp 2>/dev/null | head -n 1)" ] || [ ! -f dist/.build-stamp ]; then
  echo "[deps] compiling TypeScript"
  rm -rf dist  # a file removed or moved in the sources must not linger in what the host loads
  node --import tsx web/build.ts
  bash scripts/tsc.sh -p tsconfig.json
  touch dist/.build-stamp
fi
