#!/usr/bin/env bash
# The whole test suite: install what is missing, then the static checks side by side (build, type-check, lint,
# formatting, layering), then jest (unit, integration, end-to-end).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/node22.sh
bash scripts/ensure-deps.sh --no-compile chromium

# The static checks are single-threaded and independent of each other: run together they use both cores, and the
# slowest (ESLint's type-aware rules) sets the time instead of the sum. Each step's output is kept apart and printed
# whole, in this order; every step runs to its end, and any failure fails the command naming the step(s).
# ESLint's own --concurrency is not used: each worker thread builds its own TypeScript programs for the type-aware
# rules (measured: more than 247 CPU-s, unfinished, against 146 CPU-s for the whole run in one thread).
steps=(
  'build|compile the app into dist/ (scripts/compile.sh; tsc -p tsconfig.json type-checks it)|bash scripts/compile.sh'
  'types|type-check the dashboard (browser code, DOM types)|bash scripts/tsc.sh -p web/tsconfig.json'
  'eslint|eslint (eslint.config.mjs)|npx eslint . --max-warnings=0'
  'format|formatting (Prettier: .prettierrc.json; `npx prettier --write .` fixes it)|npx prettier --check . --log-level warn'
  'layering|layering (dependency-cruiser: .dependency-cruiser.cjs)|npx depcruise shared functions orchestrations cli local web/src bench scripts'
)
logs="$(mktemp -d)"
pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true; rm -rf "$logs"' EXIT
echo "[test] static checks, side by side: $(printf '%s\n' "${steps[@]}" | cut -d'|' -f1 | paste -sd' ')"
for step in "${steps[@]}"; do
  IFS='|' read -r name _ command <<<"$step"
  (
    start=$SECONDS
    rc=0
    bash -c "$command" >"$logs/$name.log" 2>&1 </dev/null || rc=$?
    echo "$rc $((SECONDS - start))" >"$logs/$name.rc"
  ) &
  pids+=("$!")
done
failed=()
for i in "${!steps[@]}"; do
  IFS='|' read -r name title _ <<<"${steps[$i]}"
  wait "${pids[$i]}" || true
  read -r rc seconds <"$logs/$name.rc" || { rc=1; seconds='?'; }
  if [ "$rc" = 0 ]; then echo "[test] $title: ok (${seconds} s)"; else echo "[test] $title: FAILED (exit $rc, ${seconds} s)"; failed+=("$name"); fi
  sed 's/^/  /' "$logs/$name.log"
done
pids=()
if [ ${#failed[@]} -gt 0 ]; then
  echo "[test] failed: ${failed[*]} (jest not run)" >&2
  exit 1
fi

# Node's compile cache (V8 code for the modules a process loads, keyed by their content): the suite starts the same
# programs hundreds of times (a Functions host and emulators per stack, the CLI per command), and each one compiled
# the same modules again; ~0.7 CPU-s less per stack start. A stale or damaged entry is refused by V8 and recompiled.
export NODE_COMPILE_CACHE="${NODE_COMPILE_CACHE:-$PWD/node_modules/.cache/node-compile-cache}"
echo "[test] jest"
npx jest "$@"
