# A stand-in, written for this project, for the vendor environment scripts HPC codes source before they launch
# (Intel MKL's mklvars.sh, Intel MPI's mpivars.sh, OpenFOAM's etc/bashrc). Like them it reads variables that are
# normally unset, runs tests that fail, expands arrays that may be empty and takes its architecture as "$1": each of
# these aborts a shell running under `set -euo pipefail`, which is why user code never runs under it.
mkl_arch="${1}"
if [ -z "${MKLROOT}" ]; then
  MKLROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
fi
[ -n "${MKL_DEBUG_CPU_TYPE}" ] && echo "MKL_DEBUG_CPU_TYPE is set"
for extra in "${MKL_EXTRA_PATHS[@]}"; do LD_LIBRARY_PATH="${extra}:${LD_LIBRARY_PATH}"; done
export MKLROOT
export CPATH="${MKLROOT}/include${CPATH+:$CPATH}:${CPATH_FROM_MODULES}"
export LD_LIBRARY_PATH="${MKLROOT}/lib/${mkl_arch}:${LD_LIBRARY_PATH}"
export NLSPATH="${MKLROOT}/lib/${mkl_arch}/locale/%l_%t/%N:${NLSPATH}"
export MKL_ARCH="${mkl_arch}"
grep -q avx512 /proc/cpuinfo 2>/dev/null | head -n 1
