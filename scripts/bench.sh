#!/usr/bin/env bash
# Every benchmark in bench/, one after the other, each printing its figures side by side with its baseline.
# `npm run bench -- durable registry` runs only the named ones.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/ensure-deps.sh
mkdir -p bench/results
names=("$@")
for f in bench/*.ts; do
  name=$(basename "$f" .ts)
  if [ ${#names[@]} -gt 0 ] && [[ ! " ${names[*]} " == *" $name "* ]]; then continue; fi
  echo "=== bench/$name.ts"
  node --import tsx "$f" | tee "bench/results/$name.txt"
  echo
done
