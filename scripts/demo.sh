#!/usr/bin/env bash
# The main job: a real MPI job through the whole pipeline on the local stack (installs what is missing first).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/node22.sh
bash scripts/ensure-deps.sh
# The local tooling runs from its TypeScript sources (it is never deployed and reads assets beside them);
# the function app it hosts is loaded compiled from dist/, exactly as in Azure.
exec node --import tsx local/demo.ts "$@"
