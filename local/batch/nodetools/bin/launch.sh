# Sourced by bin/docker and bin/singularity: runs a node tool's TypeScript entry point with as little start-up
# cost as possible, because 40 emulated nodes may start it at once on two cores. The entry point is bundled once
# per checkout into one CommonJS file with the esbuild that tsx ships (rebuilt when any source is newer), and plain
# node runs that (through start.cjs: Node's compile cache); when bundling is impossible it falls back to tsx.
# The bundle lives in the checkout's node_modules/.cache, not under $TMPDIR: the emulator gives every node a TMPDIR
# of its own, which made every node build its own bundle. Each call costs only what it must: no subshell or
# external command before node starts (the staleness check is bash's own -nt over the sources).
# Inputs: $tool (docker|singularity), "$@" (the tool's arguments).
here="${BASH_SOURCE[0]%/*}"
case "$here" in /*) ;; *) here="$PWD/$here" ;; esac
nodetools="$here/.."
repo="$nodetools/../../.."
entry="$nodetools/$tool/cli.ts"
export HPC_NODETOOLS_DIR="$nodetools"
cache="$repo/node_modules/.cache/hpc-nodetools"
bundle="$cache/$tool.cjs"
shopt -s globstar
stale() {
  [ -f "$bundle" ] || return 0
  local f
  for f in "$nodetools"/**/*.ts "$repo"/local/registry/**/*.ts; do
    [ "$f" -nt "$bundle" ] && return 0
  done
  return 1
}
if ! stale; then
  exec node "$here/start.cjs" "$bundle" "$@"
fi
if [ -x "$repo/node_modules/.bin/esbuild" ] && mkdir -p "$cache" 2>/dev/null; then
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
  exec node "$here/start.cjs" "$bundle" "$@"
fi
exec node --import "file://$repo/node_modules/tsx/dist/loader.mjs" "$entry" "$@"
