/** ISO-8601 durations as Batch uses them (PT5M, P7D, PT0.5S, P10675199DT2H48M5.4775807S) → ms. */
export function parseDurationMs(text: string): number | undefined {
  const m = /^P(?:(\d+(?:\.\d+)?)D)?(?:T(?:(\d+(?:\.\d+)?)H)?(?:(\d+(?:\.\d+)?)M)?(?:(\d+(?:\.\d+)?)S)?)?$/.exec(text);
  if (!m || text === 'P' || text.endsWith('T')) return undefined;
  const [d, h, mi, s] = m.slice(1).map((x) => (x ? Number(x) : 0));
  return ((d * 24 + h) * 60 + mi) * 60_000 + s * 1000;
}

/** Durations beyond a timer's range (e.g. Batch's "infinite" default) mean "no limit". */
export function timerMs(text: unknown): number | undefined {
  if (typeof text !== 'string') return undefined;
  const ms = parseDurationMs(text);
  return ms !== undefined && ms < 2 ** 31 - 1 ? ms : undefined;
}
