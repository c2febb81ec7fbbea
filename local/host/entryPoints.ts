/**
 * Finds the app's entry points from `package.json#main`, which the Node worker treats as a glob
 * (e.g. `dist/functions/*.js`). Supports `*`, `**`, `?` and `{a,b}`; enough for entry-point patterns.
 */
import { readFileSync, readdirSync } from 'node:fs';
import * as path from 'node:path';

export function readPackageMain(appDir: string): string {
  const file = path.join(appDir, 'package.json');
  let pkg: { main?: unknown };
  try {
    pkg = JSON.parse(readFileSync(file, 'utf8')) as { main?: unknown };
  } catch (err) {
    throw new Error(`Cannot read the app's package.json at ${file}: ${(err as Error).message}`);
  }
  if (pkg.main === undefined) return 'index.js'; // the worker's default
  if (typeof pkg.main !== 'string' || pkg.main.trim() === '') {
    throw new Error(`${file}: "main" must be a non-empty string (a file or glob), got ${JSON.stringify(pkg.main)}`);
  }
  return pkg.main;
}

/** Absolute paths of the files `pattern` matches under `appDir`, sorted. */
export function expandEntryPoints(appDir: string, pattern: string): string[] {
  const normalized = pattern.replace(/\\/g, '/').replace(/^\.\//, '');
  const segments = normalized.split('/');
  // Walk only below the literal prefix of the pattern (e.g. dist/functions).
  const literal: string[] = [];
  for (const seg of segments.slice(0, -1)) {
    if (/[*?{[]/.test(seg)) break;
    literal.push(seg);
  }
  const root = path.join(appDir, ...literal);
  const matcher = globToRegExp(normalized);
  const out: string[] = [];
  const walk = (dir: string): void => {
    let entries;
    try {
      entries = readdirSync(dir, { withFileTypes: true });
    } catch {
      return;
    }
    for (const entry of entries) {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) {
        if (entry.name === 'node_modules' || entry.name.startsWith('.')) continue;
        walk(full);
      } else if (matcher.test(path.relative(appDir, full).split(path.sep).join('/'))) {
        out.push(full);
      }
    }
  };
  walk(root);
  return out.sort();
}

export function globToRegExp(glob: string): RegExp {
  let re = '';
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i];
    if (c === '*') {
      if (glob[i + 1] === '*') {
        // `**/` matches zero or more directories.
        const slash = glob[i + 2] === '/';
        re += slash ? '(?:.*/)?' : '.*';
        i += slash ? 2 : 1;
      } else {
        re += '[^/]*';
      }
    } else if (c === '?') {
      re += '[^/]';
    } else if (c === '{') {
      const end = glob.indexOf('}', i);
      if (end < 0) throw new Error(`Unbalanced "{" in glob ${glob}`);
      re +=
        '(?:' +
        glob
          .slice(i + 1, end)
          .split(',')
          .map(escapeRegExp)
          .join('|') +
        ')';
      i = end;
    } else {
      re += escapeRegExp(c);
    }
  }
  return new RegExp(`^${re}$`);
}

function escapeRegExp(s: string): string {
  return s.replace(/[.+^${}()|[\]\\*?]/g, '\\$&');
}
