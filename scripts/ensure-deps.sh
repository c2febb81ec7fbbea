#!/usr/bin/env bash
# Installs what the project needs on a fresh machine: npm packages (from package-lock.json),
# Debian's Open MPI (mpirun + mpicc), which the local Batch emulator uses to run real MPI jobs,
# environment-modules (`module`, as on Azure's HPC images; emulated nodes load mpi/openmpi with it), and zip/unzip,
# which build and check the deployment package (npm run package, tests/deploy).
# Safe to run repeatedly: each step is skipped when already satisfied. Arguments: `chromium` (also Debian's chromium,
# for the dashboard's browser tests), `--no-compile` (install only; scripts/compile.sh builds dist/).
set -euo pipefail
cd "$(dirname "$0")/.."

want_apt=()
command -v mpirun >/dev/null 2>&1 || want_apt+=(openmpi-bin)
command -v mpicc  >/dev/null 2>&1 || want_apt+=(libopenmpi-dev)
command -v zip    >/dev/null 2>&1 || want_apt+=(zip)
command -v unzip  >/dev/null 2>&1 || want_apt+=(unzip)
[ -r /etc/profile.d/modules.sh ] || want_apt+=(environment-modules)
no_compile=0
for extra in "$@"; do
  case "$extra" in
    --no-compile) no_compile=1 ;;
    chromium) command -v chromium >/dev/null 2>&1 || want_apt+=(chromium) ;;
  esac
done
if [ ${#want_apt[@]} -gt 0 ]; then
  echo "[deps] installing Debian packages: ${want_apt[*]}"
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${want_apt[@]}" >/dev/null
fi

# Install when node_modules is missing or older than the lock file, exactly as the lock pins it (`npm ci`: the lock
# carries every platform's optional binaries, e.g. @swc/core-darwin-*, so it installs on any OS without rewriting it;
# tests/deploy/lockfile.test.ts keeps it so).
if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  echo "[deps] installing npm packages (npm ci, versions from package-lock.json)"
  npm ci --no-audit --no-fund --loglevel=error
fi

# Compile once (scripts/compile.sh: only when a source changed); `--no-compile` leaves it to the caller, as
# scripts/test.sh does to run it beside the lint steps.
[ "$no_compile" = 1 ] || bash scripts/compile.sh
