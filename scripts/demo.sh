#!/usr/bin/env bash
# The main job: a real MPI job through the whole pipeline on the local stack (installs what is missing first).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/ensure-deps.sh
exec node dist/local/demo.js "$@"
