/**
 * The string and number formats the Batch spec uses, registered on an ajv instance.
 * ajv-formats supplies the standard ones (date-time, uuid, uri); duration and the AutoRest-specific ones are
 * defined here.
 */
import type Ajv from 'ajv';
import addFormats from 'ajv-formats';

const INT32_MIN = -(2 ** 31);
const INT32_MAX = 2 ** 31 - 1;

/** RFC 1123 dates as HTTP headers carry them: "Sun, 06 Nov 1994 08:49:37 GMT". */
const RFC1123 = /^(Mon|Tue|Wed|Thu|Fri|Sat|Sun), \d{2} (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) \d{4} \d{2}:\d{2}:\d{2} GMT$/;

export function isRfc1123Date(value: string): boolean {
  return RFC1123.test(value) && !Number.isNaN(Date.parse(value));
}

/**
 * ISO 8601 durations as Batch reads them (.NET TimeSpan): seconds may have a fraction (PT0.5S, and Batch's own
 * "unlimited" P10675199DT2H48M5.4775807S), which ajv-formats' duration refuses.
 */
const DURATION = /^P(?!$)(\d+Y)?(\d+M)?(\d+W)?(\d+D)?(T(?=\d)(\d+H)?(\d+M)?(\d+(\.\d+)?S)?)?$/;

export function registerBatchFormats(ajv: Ajv): void {
  addFormats(ajv, ['date-time', 'uuid', 'uri']);
  ajv.addFormat('duration', DURATION);
  ajv.addFormat('int32', { type: 'number', validate: (n: number) => Number.isInteger(n) && n >= INT32_MIN && n <= INT32_MAX });
  ajv.addFormat('int64', { type: 'number', validate: (n: number) => Number.isInteger(n) });
  ajv.addFormat('double', { type: 'number', validate: (n: number) => Number.isFinite(n) });
  ajv.addFormat('date-time-rfc1123', { type: 'string', validate: isRfc1123Date });
}
