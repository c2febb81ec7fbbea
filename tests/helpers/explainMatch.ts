/**
 * Comparing a request the pipeline really made with the explain document's version of it: exact, except that each
 * placeholder of the document ("<run-time: …>", "<deployment: …>") stands for one or more characters of the real value.
 */
import { PER_BLOB_SAS, PLACEHOLDER_RE } from '../../shared/adapters/intake/explain';

type Json = Record<string, unknown>;
const escapeRe = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** Where `actual` differs from `explained`, one line per difference with its JSON path (empty when it matches). */
export function differences(explained: unknown, actual: unknown, at = '$'): string[] {
  if (typeof explained === 'string') {
    if (typeof actual !== 'string') return [`${at}: ${JSON.stringify(actual)} is not a string`];
    const literal = explained.split(PLACEHOLDER_RE);
    if (literal.length === 1) return explained === actual ? [] : [`${at}: ${JSON.stringify(actual)} != ${JSON.stringify(explained)}`];
    return new RegExp(`^${literal.map(escapeRe).join('[\\s\\S]+?')}$`).test(actual)
      ? []
      : [`${at}: ${JSON.stringify(actual)} does not match ${JSON.stringify(explained)}`];
  }
  if (Array.isArray(explained)) {
    if (!Array.isArray(actual)) return [`${at}: ${JSON.stringify(actual)} is not a list`];
    if (explained.some(perBlob)) return perBlobDifferences(explained, actual, at);
    if (actual.length !== explained.length) return [`${at}: ${JSON.stringify(actual)} has not ${explained.length} items`];
    return explained.flatMap((e, i) => differences(e, actual[i], `${at}[${i}]`));
  }
  if (explained && typeof explained === 'object') {
    if (!actual || typeof actual !== 'object') return [`${at}: ${JSON.stringify(actual)} is not an object`];
    const keys = [...new Set([...Object.keys(explained), ...Object.keys(actual)])].sort();
    return keys.flatMap((k) => differences((explained as Json)[k], (actual as Json)[k], `${at}.${k}`));
  }
  return explained === actual ? [] : [`${at}: ${JSON.stringify(actual)} != ${JSON.stringify(explained)}`];
}

/** A resource file entry of the document that stands for every blob under a `files[].prefix` (shared/core/planning/explain.ts). */
function perBlob(entry: unknown): boolean {
  return !!entry && typeof entry === 'object' && typeof (entry as Json).httpUrl === 'string' && ((entry as Json).httpUrl as string).includes(PER_BLOB_SAS);
}

/** A list with per-blob entries: each of those matches the run of consecutive actual items it matches (none or more), any other entry one item. */
function perBlobDifferences(explained: unknown[], actual: unknown[], at: string): string[] {
  let i = 0;
  for (const [k, e] of explained.entries()) {
    if (perBlob(e)) {
      while (i < actual.length && differences(e, actual[i]).length === 0) i++;
      continue;
    }
    const problems = differences(e, actual[i], `${at}[${i}] (entry ${k} of the document)`);
    if (problems.length) return problems;
    i++;
  }
  return i === actual.length ? [] : [`${at}: ${JSON.stringify(actual.slice(i))} are items the document does not show`];
}

/**
 * A shard download task against the document's template: the template's one resource file entry stands for each of
 * the node's shards (none for a node without shards).
 */
export function downloadTaskDifferences(template: Json, actual: Json, at = '$'): string[] {
  const entry = Array.isArray(template.resourceFiles) ? (template.resourceFiles as Json[])[0] : undefined;
  const files = (actual.resourceFiles as Json[] | undefined) ?? [];
  return [
    ...(entry
      ? files.flatMap((f, i) => differences(entry, f, `${at}.resourceFiles[${i}]`))
      : files.length
        ? [`${at}: resource files the document does not show`]
        : []),
    ...differences({ ...template, resourceFiles: undefined }, { ...actual, resourceFiles: undefined }, at),
  ];
}
