#!/usr/bin/env bash
# The whole test suite: install what is missing, type-check, lint, then jest (unit, integration, end-to-end).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/node22.sh
bash scripts/ensure-deps.sh chromium
echo "[test] type-check the dashboard (browser code, DOM types)"
npx tsc -p web/tsconfig.json
echo "[test] eslint"
npx eslint . --max-warnings=0
echo "[test] formatting (Prettier: .prettierrc.json; \`npx prettier --write .\` fixes it)"
npx prettier --check . --log-level warn
echo "[test] layering (dependency-cruiser: .dependency-cruiser.cjs)"
npx depcruise shared functions orchestrations cli local web/src bench scripts
echo "[test] jest"
npx jest "$@"
