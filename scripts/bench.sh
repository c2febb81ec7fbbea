#!/usr/bin/env bash
# Every benchmark in bench/, one after the other, each printing its figures side by side with its baseline.
# `npm run bench -- durable registry` runs only the named ones; `--name value` options go to every bench run
# (e.g. `npm run bench -- calls --nodes 4,40`).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/node22.sh
bash scripts/ensure-deps.sh
mkdir -p bench/results
names=()
opts=()
while [ $# -gt 0 ]; do
  case "$1" in
    --*) opts+=("$1" "${2:-}"); shift 2 || shift ;;
    *) names+=("$1"); shift ;;
  esac
done
for f in bench/*.ts; do
  name=$(basename "$f" .ts)
  if [ ${#names[@]} -gt 0 ] && [[ ! " ${names[*]} " == *" $name "* ]]; then continue; fi
  echo "=== bench/$name.ts"
  node --import tsx "$f" ${opts[@]+"${opts[@]}"} | tee "bench/results/$name.txt"
  echo
done
