/**
 * Builds the installable `hpcjob` package: one CommonJS file, dist/hpcjob.cjs, holding the CLI and the parts of
 * shared/ it uses (the spec validator, the offline explain, the Shipyard importer). npm packages stay external and
 * are this package's own `dependencies`, so `npm install -g hpcjob-<v>.tgz` with production dependencies only gives a
 * working command and nothing of the app's tree is needed beside it.
 *
 *   npm run build -w hpcjob        (or: npm pack -w hpcjob, which builds first)
 */
import { build } from 'esbuild';
import { readFileSync } from 'node:fs';
import * as path from 'node:path';

const HERE = __dirname;
const manifest = JSON.parse(readFileSync(path.join(HERE, 'package.json'), 'utf8')) as { version: string; dependencies: Record<string, string> };

export async function buildCli(outFile = path.join(HERE, 'dist', 'hpcjob.cjs')): Promise<string> {
  const result = await build({
    entryPoints: [path.join(HERE, 'index.ts')],
    outfile: outFile,
    bundle: true,
    platform: 'node',
    format: 'cjs',
    target: 'node20',
    // The commands' own modules, imported with import() when their action runs (cli/index.ts), become lazy
    // initialisers inside the bundle. An npm package imported that way (@azure/identity, cli-progress) would stay a real
    // import() and load the package's ES module build, another module graph than the CommonJS one the compiled CLI
    // loads: marked unsupported, esbuild turns it into a require() at the same place, still only when it runs.
    supported: { 'dynamic-import': false },
    // Every npm import must be a declared dependency of this package: anything else would be bundled silently or
    // missing at run time, so list them instead of `packages: 'external'` and fail the build on the rest below.
    external: Object.keys(manifest.dependencies),
    // The version is compiled in; minifySyntax drops the checkout's package.json lookups behind it.
    define: { __HPCJOB_VERSION__: JSON.stringify(manifest.version) },
    minifySyntax: true,
    metafile: true,
    logLevel: 'warning',
  });
  // The bundle's own imports (after dead code is dropped), not its inputs'.
  const undeclared = Object.values(result.metafile.outputs)
    .flatMap((output) => output.imports)
    .filter((i) => i.external && !i.path.startsWith('node:') && !isDeclared(i.path))
    .map((i) => i.path);
  if (undeclared.length > 0) throw new Error(`hpcjob build: imports not declared in cli/package.json: ${[...new Set(undeclared)].join(', ')}`);
  const bundled = Object.keys(result.metafile.inputs).filter((f) => f.includes('node_modules/'));
  if (bundled.length > 0) throw new Error(`hpcjob build: npm code bundled instead of declared: ${bundled.slice(0, 5).join(', ')}`);
  return outFile;
}

function isDeclared(spec: string): boolean {
  return Object.keys(manifest.dependencies).some((dep) => spec === dep || spec.startsWith(`${dep}/`));
}

if (require.main === module) {
  buildCli().then(
    (f) => console.log(`[hpcjob] built ${path.relative(process.cwd(), f)}`),
    (err: unknown) => {
      console.error(err instanceof Error ? err.message : err);
      process.exit(1);
    },
  );
}
