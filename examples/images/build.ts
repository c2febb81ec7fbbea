/**
 * Writes the demo image into an OCI image layout:
 *   node --import tsx examples/images/build.ts <layout-dir> [--filler-mb N]
 */
import { DEFAULT_FILLER_BYTES, buildDemoImage } from './buildDemoImage';

async function main(argv: string[]): Promise<void> {
  const i = argv.indexOf('--filler-mb');
  const fillerBytes = i >= 0 ? Math.round(Number(argv[i + 1]) * 1024 * 1024) : DEFAULT_FILLER_BYTES;
  const rest = argv.filter((_, j) => j !== i && j !== i + 1);
  const out = rest[0];
  if (!out || !Number.isFinite(fillerBytes)) {
    process.stderr.write('usage: build.ts <layout-dir> [--filler-mb N]\n');
    process.exit(2);
  }
  const image = await buildDemoImage({ fillerBytes, layoutDir: out });
  const bytes = image.manifest.layers.reduce((s, l) => s + l.size, image.manifest.config.size);
  process.stdout.write(`${image.repository}:${image.tag} ${image.manifestDigest} (${bytes} bytes) -> ${out}\n`);
}

main(process.argv.slice(2)).catch((err: Error) => {
  process.stderr.write(`${err.message}\n`);
  process.exit(1);
});
