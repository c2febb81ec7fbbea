/** Command-line options of the benchmarks (`--name value`). Kept out of bench/*.ts: scripts/bench.sh runs every file there. */
export function textArg(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : fallback;
}

/** A positive number option (a count, a size); anything else stops the benchmark before it starts. */
export function numberArg(name: string, fallback: number): number {
  const v = Number(textArg(name, String(fallback)));
  if (!Number.isFinite(v) || v <= 0) throw new Error(`--${name} must be a positive number`);
  return v;
}
