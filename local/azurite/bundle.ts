/**
 * Azurite as one file. Starting Azurite from its package spent about half of its ~0.7 CPU-s start-up resolving
 * modules (thousands of stat calls over its dependency tree), and the suite starts it ~90 times, the demo and
 * `npm start` once each. Bundled once per checkout with the esbuild that tsx ships (as the node tools are:
 * local/batch/nodetools/bin/launch.sh) into node_modules/.cache, it starts in ~0.35 CPU-s. The same code runs:
 * lokijs stays a module of its own because autosave.cjs configures the LokiJS that Azurite loads, and the SQL drivers
 * of Azurite's optional SQL metadata stores stay outside (this stack never selects them; they are not installed).
 * When the bundle cannot be built, Azurite runs from its package as before.
 */
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import * as path from 'node:path';

const AZURITE_PACKAGE = require.resolve('azurite/package.json');
/** Azurite's own entry point. */
export const AZURITE_MAIN = require.resolve('azurite/dist/src/azurite.js');
const NODE_MODULES = path.dirname(path.dirname(AZURITE_PACKAGE));
const CACHE_DIR = path.join(NODE_MODULES, '.cache', 'hpc-azurite');
const ESBUILD = path.join(NODE_MODULES, '.bin', 'esbuild');
/** Left out of the bundle: loaded at run time from node_modules, as Azurite loads them from its package. */
const EXTERNAL = ['lokijs', 'pg', 'pg-hstore', 'mysql2', 'tedious', 'mariadb', 'sqlite3', 'oracledb', 'ibm_db', 'snowflake-sdk'];

let pending: Promise<string> | undefined;

/** The file to run Azurite from: the bundle of this Azurite version (built on first use), or its package's entry. */
export function azuriteEntry(): Promise<string> {
  pending ??= bundled().catch(() => AZURITE_MAIN);
  return pending;
}

/** esbuild's arguments besides the output file. */
const BUILD_ARGS = [
  AZURITE_MAIN,
  '--bundle',
  '--platform=node',
  '--target=node22',
  '--format=cjs',
  '--log-level=error',
  '--minify-whitespace',
  ...EXTERNAL.map((e) => `--external:${e}`),
];

async function bundled(): Promise<string> {
  const { version } = JSON.parse(readFileSync(AZURITE_PACKAGE, 'utf8')) as { version: string };
  // Named by what built it, so a bundle made by other arguments (another externals list) is never run.
  const recipe = createHash('sha256').update(JSON.stringify(BUILD_ARGS)).digest('hex').slice(0, 12);
  const bundle = path.join(CACHE_DIR, `azurite-${version}-${recipe}.cjs`);
  if (existsSync(bundle)) return bundle;
  // The bundle must load the same lokijs as Azurite would (autosave.cjs patches that one).
  const lokiFromAzurite = require.resolve('lokijs', { paths: [path.dirname(AZURITE_PACKAGE)] });
  mkdirSync(CACHE_DIR, { recursive: true });
  if (require.resolve('lokijs', { paths: [CACHE_DIR] }) !== lokiFromAzurite || !existsSync(ESBUILD)) return AZURITE_MAIN;
  // Several stacks may start at once on a fresh checkout: each builds its own file and renames it into place.
  const tmp = `${bundle}.${process.pid}.tmp`;
  const code = await new Promise<number | null>((resolve) => {
    const child = spawn(ESBUILD, [...BUILD_ARGS, `--outfile=${tmp}`], { stdio: 'ignore' });
    child.once('error', () => resolve(null));
    child.once('exit', (c) => resolve(c));
  });
  if (code !== 0 || !existsSync(tmp)) {
    rmSync(tmp, { force: true });
    return AZURITE_MAIN;
  }
  renameSync(tmp, bundle);
  return bundle;
}
