/**
 * The packages a source tree imports by bare name (not relative paths, not Node's built-ins), found by reading the
 * files: static imports and re-exports, require() and dynamic import(). Used by the package checks in tests/deploy/.
 */
import { builtinModules } from 'node:module';
import { readFileSync, readdirSync, statSync } from 'node:fs';
import * as path from 'node:path';

const IMPORT_RE =
  /(?:^|\n)\s*(?:import|export)\s[^'"]*?from\s+['"]([^'"]+)['"]|\brequire(?:\.resolve)?\(\s*['"]([^'"]+)['"]\s*\)|\bimport\(\s*['"]([^'"]+)['"]\s*\)/g;
/** Folders never read: installed or generated code, build output, and test fixtures that break rules on purpose. */
const SKIPPED = new Set(['node_modules', 'generated', 'fixtures', 'dist']);

/** The TypeScript and JavaScript files under `dir`. */
export function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const full = path.join(dir, name);
    if (SKIPPED.has(name)) return [];
    if (statSync(full).isDirectory()) return sourceFiles(full);
    return /\.(ts|mts|cts|js|cjs|mjs)$/.test(name) ? [full] : [];
  });
}

/** The package an import specifier names, or undefined for relative paths and Node's built-ins. */
export function packageOf(specifier: string): string | undefined {
  if (specifier.startsWith('.') || specifier.startsWith('node:') || builtinModules.includes(specifier.split('/')[0])) return undefined;
  const parts = specifier.split('/');
  return specifier.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0];
}

/** The packages `file` imports. */
export function bareImports(file: string): string[] {
  const found = new Set<string>();
  for (const m of readFileSync(file, 'utf8').matchAll(IMPORT_RE)) {
    const pkg = packageOf(m[1] ?? m[2] ?? m[3]);
    if (pkg) found.add(pkg);
  }
  return [...found];
}
