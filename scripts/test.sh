#!/usr/bin/env bash
# The whole test suite: install what is missing, then the static checks side by side (build, type-check, lint,
# formatting, layering) and jest (unit, integration, end-to-end) as soon as the build it needs is done.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/node22.sh
bash scripts/ensure-deps.sh --no-compile chromium

# The static checks are single-threaded and independent of each other: run together they use both cores, and the
# slowest (ESLint's type-aware rules) sets the time instead of the sum. Each step's output is kept apart and printed
# whole when the step ends; every step runs to its end, and any failure fails the command naming the step(s).
# ESLint's own --concurrency is not used: each worker thread builds its own TypeScript programs for the type-aware
# rules (measured: more than 247 CPU-s, unfinished, against 146 CPU-s for the whole run in one thread).
# Jest needs only the build (dist/): it starts when the build is done, beside the other checks, which then fill the
# moments jest leaves the cores idle instead of holding it back (ESLint alone kept little more than one core busy).
# A failed build stops everything before jest; a failed check is printed as soon as it ends (Ctrl-C then stops the
# run) and fails the command once jest has ended too.
steps=(
  'build|compile the app into dist/ (scripts/compile.sh; TypeScript 7 type-checks it)|bash scripts/compile.sh'
  'types|type-check the dashboard (browser code, DOM types)|bash scripts/tsc.sh -p web/tsconfig.json'
  'eslint|eslint (eslint.config.mjs)|npx eslint . --max-warnings=0'
  'format|formatting (Prettier: .prettierrc.json; `npx prettier --write .` fixes it)|npx prettier --check . --log-level warn'
  'layering|layering (dependency-cruiser: .dependency-cruiser.cjs)|npx depcruise shared functions orchestrations cli local web/src bench scripts'
)
logs="$(mktemp -d)"
pids=()
# Each step runs in its own session (setsid): on an early exit or Ctrl-C its whole process tree is stopped with it.
trap 'for p in "${pids[@]}"; do kill -- "-$p" "$p" 2>/dev/null || true; done; rm -rf "$logs"' EXIT
echo "[test] static checks, side by side: $(printf '%s\n' "${steps[@]}" | cut -d'|' -f1 | paste -sd' ')"
for step in "${steps[@]}"; do
  IFS='|' read -r name _ command <<<"$step"
  # The build first: jest waits for it. The other checks yield the CPU to it and then to jest; they still end well
  # before jest does (at nice 10 ESLint ended only ~10 s before jest, at 5 it has room). A session of its own is also
  # a scheduling group of its own where Linux groups by session (autogroup), and there a process's nice counts only
  # inside its group: the group's nice is set too, or each check would get as much CPU as the whole of jest.
  nice=0
  [ "$name" = build ] || nice=5
  # shellcheck disable=SC2016 # expanded by the step's own bash
  setsid nice -n "$nice" bash -c '{ echo "$3" >/proc/self/autogroup; } 2>/dev/null || true
    start=$SECONDS; rc=0; bash -c "$1" >"$2.log" 2>&1 </dev/null || rc=$?; echo "$rc $((SECONDS - start))" >"$2.rc"' \
    step "$command" "$logs/$name" "$nice" &
  pids+=("$!")
done

# Prints step $1's verdict and output once it has ended (its .rc file), and whether it failed (exit status).
report() {
  local name title rc seconds
  IFS='|' read -r name title _ <<<"${steps[$1]}"
  # Until the step writes its verdict; a step killed before that (its process gone, no verdict) counts as failed.
  while [ ! -s "$logs/$name.rc" ] && kill -0 "${pids[$1]}" 2>/dev/null; do sleep 0.5; done
  read -r rc seconds <"$logs/$name.rc" 2>/dev/null || { rc=killed; seconds='?'; }
  if [ "$rc" = 0 ]; then echo "[test] $title: ok (${seconds} s)"; else echo "[test] $title: FAILED (exit $rc, ${seconds} s)"; fi
  sed 's/^/  /' "$logs/$name.log"
  [ "$rc" = 0 ]
}
# The names of the steps that failed, once all have ended.
failed_steps() {
  local step name rc
  for step in "${steps[@]}"; do
    IFS='|' read -r name _ <<<"$step"
    read -r rc _ <"$logs/$name.rc" || rc=1
    [ "$rc" = 0 ] || printf '%s ' "$name"
  done
}

if ! report 0; then
  echo "[test] failed: build (jest not run)" >&2
  exit 1
fi

# Node's compile cache (V8 code for the modules a process loads, keyed by their content): the suite starts the same
# programs hundreds of times (a Functions host and emulators per stack, the CLI per command), and each one compiled
# the same modules again; ~0.7 CPU-s less per stack start. A stale or damaged entry is refused by V8 and recompiled.
export NODE_COMPILE_CACHE="${NODE_COMPILE_CACHE:-$PWD/node_modules/.cache/node-compile-cache}"
echo "[test] jest (the other checks go on beside it)"
# The other checks' verdicts, in their order, as they end; jest stays in the foreground (Ctrl-C reaches it).
(for i in $(seq 1 $((${#steps[@]} - 1))); do report "$i" || true; done) &
pids+=("$!")
jest_rc=0
npx jest "$@" || jest_rc=$?
wait "${pids[@]}" || true
pids=()
failed="$(failed_steps)"
if [ -n "$failed" ]; then
  echo "[test] failed: ${failed% }" >&2
  exit 1
fi
exit "$jest_rc"
