/**
 * ISO 8601 durations as Azure Batch reads them (xs:duration), restricted to the unambiguous units.
 * Years and months are refused: their length depends on the calendar, and a timeout that means
 * "28 to 31 days" is not a limit anyone can reason about.
 */

/** Weeks alone (`P2W`), or days + a time part (`P1DT2H`, `PT5M`, `PT1.5S`). */
export const ISO_DURATION_PATTERN = /^P(?:(\d{1,6})W|(?:(\d{1,6})D)?(?:T(?:(\d{1,7})H)?(?:(\d{1,9})M)?(?:(\d{1,10}(?:\.\d{1,3})?)S)?)?)$/;

const MS = { second: 1000, minute: 60_000, hour: 3_600_000, day: 86_400_000, week: 604_800_000 } as const;

/** Milliseconds of an ISO 8601 duration, or undefined if it is not one we accept (see ISO_DURATION_PATTERN). */
export function parseIsoDuration(text: string): number | undefined {
  const m = ISO_DURATION_PATTERN.exec(text);
  if (!m) return undefined;
  const [, weeks, days, hours, minutes, seconds] = m;
  // "P" and "PT" alone match the pattern's optional groups but carry no amount.
  if (weeks === undefined && days === undefined && hours === undefined && minutes === undefined && seconds === undefined) {
    return undefined;
  }
  return (
    Number(weeks ?? 0) * MS.week +
    Number(days ?? 0) * MS.day +
    Number(hours ?? 0) * MS.hour +
    Number(minutes ?? 0) * MS.minute +
    Math.round(Number(seconds ?? 0) * MS.second)
  );
}

/** A canonical ISO 8601 duration for a millisecond count (used for defaults shown in docs). */
export function formatIsoDuration(ms: number): string {
  if (!Number.isFinite(ms) || ms < 0) throw new RangeError(`cannot format duration of ${ms} ms`);
  let rest = Math.round(ms);
  const days = Math.floor(rest / MS.day);
  rest -= days * MS.day;
  const hours = Math.floor(rest / MS.hour);
  rest -= hours * MS.hour;
  const minutes = Math.floor(rest / MS.minute);
  rest -= minutes * MS.minute;
  const seconds = rest / MS.second;
  let time = '';
  if (hours) time += `${hours}H`;
  if (minutes) time += `${minutes}M`;
  if (seconds) time += `${seconds}S`;
  if (!days && !time) return 'PT0S';
  return `P${days ? `${days}D` : ''}${time ? `T${time}` : ''}`;
}
