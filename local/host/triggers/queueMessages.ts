/** Queue message text ↔ what functions see, under host.json messageEncoding. */
import type { TypedData } from '../extension';

export function decodeMessageText(raw: string, encoding: 'base64' | 'none'): string {
  if (encoding === 'none') return raw;
  const compact = raw.replace(/\s+/g, '');
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(compact) || compact.length % 4 !== 0) {
    throw new Error(`Message is not valid base64 (host.json messageEncoding is "base64"): ${JSON.stringify(raw.slice(0, 80))}`);
  }
  return Buffer.from(compact, 'base64').toString('utf8');
}

export function encodeMessage(body: string | Uint8Array, encoding: 'base64' | 'none'): string {
  if (encoding === 'base64') return Buffer.from(body).toString('base64');
  return typeof body === 'string' ? body : Buffer.from(body).toString('utf8');
}

/** Messages an output binding value stands for: an array is several messages, anything else one. */
export function outputMessages(data: TypedData): (string | Uint8Array)[] {
  if (data.string !== undefined) return [data.string];
  if (data.bytes) return [data.bytes];
  if (data.stream) return [data.stream];
  if (data.int !== undefined) return [String(data.int)];
  if (data.double !== undefined) return [String(data.double)];
  if (data.collectionString) return data.collectionString.string;
  if (data.collectionBytes) return data.collectionBytes.bytes;
  if (data.collectionDouble) return data.collectionDouble.double.map(String);
  if (data.collectionSint64) return data.collectionSint64.sint64.map(String);
  if (data.json !== undefined) {
    const value: unknown = JSON.parse(data.json);
    const items = Array.isArray(value) ? value : [value];
    return items.map((v) => (typeof v === 'string' ? v : JSON.stringify(v)));
  }
  return [];
}

/** Host-style timestamp, e.g. 2022-08-25T05:06:39+00:00. */
export function hostTimestamp(d: Date | undefined): string | undefined {
  return d ? d.toISOString().replace(/\.\d{3}Z$/, '+00:00') : undefined;
}
