# Sourced by the entry scripts (test, demo, start, bench, package): the project runs on Node 22 LTS, as the function
# app does in Azure (infra/main.bicep; Node 20 ended on 2026-04-30). When the machine's `node` is older, the official
# Node 22 binary is fetched once from the npm registry (the `node` package, cached by npx) and put first on PATH, so
# npm, jest, the local stack and every process it starts run on it. Without the registry it says so and goes on with
# the machine's node (>= 20.19 still runs everything; tests/unit passes on both).
NODE22_PIN="22.23.3"
if [ "$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)" -lt 22 ]; then
  if node22_bin="$(npx -y "node@${NODE22_PIN}" -p 'process.execPath' 2>/dev/null)" && [ -x "$node22_bin" ]; then
    PATH="$(dirname "$node22_bin"):$PATH"
    export PATH
    echo "[node] Node ${NODE22_PIN} from the npm registry (the machine has $(command -p node --version 2>/dev/null || echo 'no node'))"
  else
    echo "[node] could not fetch Node ${NODE22_PIN} from the npm registry; running on the machine's $(node --version)" >&2
  fi
fi
