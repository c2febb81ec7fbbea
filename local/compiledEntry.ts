/**
 * Where a local TypeScript entry point can run compiled: the local tooling runs from its sources through tsx, which
 * transpiles and source-maps every module again at each start (~1 CPU-s more than the compiled twin for a Functions
 * host). Processes the stack starts again and again (the host worker of `npm start`, the crash tests' host) start
 * the twin in dist/ instead whenever scripts/compile.sh's build is current for the sources they run.
 */
import { existsSync, readdirSync, statSync } from 'node:fs';
import * as path from 'node:path';

/** The repository root (host.json beside package.json), whether the caller runs from sources or from dist/. */
export function findRepoRoot(from: string): string {
  for (let dir = from; ; dir = path.dirname(dir)) {
    if (existsSync(path.join(dir, 'host.json')) && existsSync(path.join(dir, 'package.json'))) return dir;
    if (path.dirname(dir) === dir) throw new Error(`no host.json above ${from}`);
  }
}

/** scripts/compile.sh touches this after every build. */
const BUILD_STAMP = path.join('dist', '.build-stamp');

/**
 * The compiled twin (dist/<same path>.js) of `sourceFile`, a .ts file in the repository, when it exists and no
 * TypeScript file under `sourceDirs` (relative to the repository root: what the entry imports) is newer than the last
 * build; otherwise undefined, and the caller runs the sources, so an edit without a rebuild is never run stale.
 */
export function currentCompiledEntry(sourceFile: string, sourceDirs: readonly string[]): string | undefined {
  if (!sourceFile.endsWith('.ts')) return undefined;
  const root = findRepoRoot(path.dirname(sourceFile));
  const twin = path.join(root, 'dist', path.relative(root, sourceFile)).replace(/\.ts$/, '.js');
  const stamp = path.join(root, BUILD_STAMP);
  if (!existsSync(twin) || !existsSync(stamp)) return undefined;
  const built = statSync(stamp).mtimeMs;
  const newer = (dir: string): boolean =>
    readdirSync(dir, { withFileTypes: true }).some((e) =>
      e.isDirectory() ? e.name !== 'node_modules' && newer(path.join(dir, e.name)) : e.name.endsWith('.ts') && statSync(path.join(dir, e.name)).mtimeMs > built,
    );
  return sourceDirs.some((dir) => existsSync(path.join(root, dir)) && newer(path.join(root, dir))) ? undefined : twin;
}

/**
 * Node's arguments that run `entry`: its compiled twin when current (above), else a .ts source through tsx, else the
 * .js file itself (an entry that already runs from dist/).
 */
export function nodeEntryArgs(entry: string, sourceDirs: readonly string[]): string[] {
  const compiled = currentCompiledEntry(entry, sourceDirs);
  if (compiled) return [compiled];
  return entry.endsWith('.ts') ? ['--import', 'tsx', entry] : [entry];
}
