# Sourced by bin/docker and bin/singularity: runs a node tool's TypeScript entry point with as little start-up
# cost as possible, because 40 emulated nodes may start it at once on two cores. The entry point is bundled once
# into one CommonJS file with the esbuild that tsx ships (rebuilt when any source is newer), and plain node runs
# that; when bundling is impossible it falls back to tsx.
# Inputs: $tool (docker|singularity), "$@" (the tool's arguments).
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)"
nodetools="$(cd "$here/.." && pwd -P)"
repo="$(cd "$nodetools/../../.." && pwd -P)"
entry="$nodetools/$tool/cli.ts"
export HPC_NODETOOLS_DIR="$nodetools"
cache="${TMPDIR:-/tmp}/hpc-nodetools-$(id -u)/$(printf '%s' "$repo" | cksum | cut -d' ' -f1)"
bundle="$cache/$tool.cjs"
stale() {
  [ ! -f "$bundle" ] || [ -n "$(find "$nodetools" "$repo/local/registry" -name '*.ts' -newer "$bundle" -print -quit 2>/dev/null)" ]
}
if stale && [ -x "$repo/node_modules/.bin/esbuild" ]; then
  mkdir -p "$cache"
  (
    flock 9
    if stale; then
      tmp="$bundle.tmp.$$"
      "$repo/node_modules/.bin/esbuild" "$entry" --bundle --platform=node --target=node20 --format=cjs \
        --log-level=error --outfile="$tmp" && mv -f "$tmp" "$bundle"
      rm -f "$tmp"
    fi
  ) 9>"$cache/.lock"
fi
if [ -f "$bundle" ] && ! stale; then
  exec node "$bundle" "$@"
fi
exec node --import "file://$repo/node_modules/tsx/dist/loader.mjs" "$entry" "$@"
