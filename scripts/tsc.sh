#!/usr/bin/env bash
# The TypeScript compiler every build and type-check here uses: TypeScript 7, the native port (package alias
# `typescript7`), ~3x less CPU than TypeScript 6 on this tree and the same JavaScript out. The `typescript` package
# (6.x) stays for the tools that need the compiler's JavaScript API, which TypeScript 7 does not offer: ESLint's
# type-aware rules (typescript-eslint supports TypeScript < 6.1). Both read tsconfig.json, so they judge the same
# program; `npx tsc` runs TypeScript 6.
set -euo pipefail
exec node "$(dirname "$0")/../node_modules/typescript7/bin/tsc" "$@"
