#!/usr/bin/env bash
# The deployment package (dist-package/app.zip): installs what is missing first, like the other entry commands.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/node22.sh
bash scripts/ensure-deps.sh
exec node --import tsx scripts/package.ts "$@"
