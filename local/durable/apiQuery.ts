/**
 * Query string parsing as the Durable extension's HttpApiHandler does it: names are case-insensitive
 * (GetQueryNameValuePairs), repeated names join with commas, and a value that does not parse is ignored
 * (the TryGet...QueryParameterValue helpers), never answered with an error. Pure.
 */
import type { RuntimeStatus } from './state';

/** The query value of `name` (any case), repeated values joined with ",", as NameValueCollection[name]. */
export function queryValue(url: URL, name: string): string | undefined {
  const lower = name.toLowerCase();
  const values: string[] = [];
  for (const [k, v] of url.searchParams) if (k.toLowerCase() === lower) values.push(v.trim());
  return values.length ? values.join(',') : undefined;
}

/** bool.TryParse: "true"/"false" in any case around whitespace; anything else is `fallback`. */
export function parseBool(value: string | undefined, fallback: boolean): boolean {
  const v = value?.trim().toLowerCase();
  if (v === 'true') return true;
  if (v === 'false') return false;
  return fallback;
}

/** int.TryParse: an optionally signed decimal Int32; undefined when it does not parse. */
export function parseInt32(value: string | undefined): number | undefined {
  const v = value?.trim();
  if (!v || !/^[+-]?\d+$/.test(v)) return undefined;
  const n = Number(v);
  return n >= -2147483648 && n <= 2147483647 ? n : undefined;
}

/** double.TryParse, for the timeout / pollingInterval seconds. */
export function parseDouble(value: string | undefined): number | undefined {
  const v = value?.trim();
  if (!v || !/^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/.test(v)) return undefined;
  return Number(v);
}

/** DateTime.TryParse, approximated by the JS date parser; undefined when it does not parse. */
export function parseDate(value: string | undefined): Date | undefined {
  const v = value?.trim();
  if (!v) return undefined;
  const d = new Date(v);
  return Number.isNaN(d.getTime()) ? undefined : d;
}

/** OrchestrationRuntimeStatus in its numeric order (Enum.TryParse accepts the number too). */
const RUNTIME_STATUS_ORDER: readonly RuntimeStatus[] = ['Running', 'Completed', 'ContinuedAsNew', 'Failed', 'Canceled', 'Terminated', 'Pending', 'Suspended'];

/**
 * TryGetIEnumerableQueryParameterValue<OrchestrationRuntimeStatus>: comma-separated, each value parsed with
 * Enum.TryParse (case-sensitive names, or integers); values that do not parse are skipped, and when none
 * parses there is no status filter at all. An integer outside the enum (or "Unknown") is kept as a status
 * no instance has, so the filter matches nothing, as in Azure.
 */
export function parseRuntimeStatuses(value: string | undefined): string[] | undefined {
  if (value === undefined) return undefined;
  const out: string[] = [];
  for (const raw of value.split(',')) {
    const v = raw.trim();
    if (RUNTIME_STATUS_ORDER.includes(v as RuntimeStatus) || v === 'Unknown') out.push(v);
    else if (/^[+-]?\d+$/.test(v)) out.push(RUNTIME_STATUS_ORDER[Number(v)] ?? `#${Number(v)}`);
  }
  return out.length ? out : undefined;
}
