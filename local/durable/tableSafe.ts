/**
 * What the engine may put into a Table Storage entity-group transaction.
 *
 * Why: a raw U+2028 or U+2029 in a property value (JSON.stringify leaves both unescaped) breaks Azurite's
 * batch parser, which cuts each sub-request's JSON body with a regular expression whose `.` stops at line
 * terminators. The sub-request then fails with an error Azurite cannot serialize, the exception escapes
 * before Azurite resets its transaction bookkeeping, and from then on every transaction of that Azurite
 * process, in every table, answers 500 "Transaction Overlap!" (found in azurite 3.35.0,
 * TableBatchSerialization.deserializeBatchRequest and TableBatchOrchestrator.submitRequestsToHandlers). The
 * operations of the failed batch that ran before the bad one also stay applied. One job spec with a line
 * separator in `mpi.command` therefore stopped every orchestration of the stack, and again after each
 * restart, when the instance's messages came back.
 *
 * So every string the engine writes in a transaction goes through `escapeForTable`: the characters a
 * transaction cannot carry safely (line and paragraph separators), plus the ones that are unsafe to show
 * (C1 controls such as U+0085, bidirectional controls, noncharacters) become `\uXXXX` escapes. The engine's
 * stored strings are JSON texts, where that escape is exact: JSON.parse gives back the very same string.
 * `assertTransactionSafe` then checks each transaction before it is sent, so nothing unsafe and nothing over
 * Azure's size limits reaches the table service: such an instance fails on its own (UnstorableError),
 * without touching the store or other instances.
 */

/** Escaped in stored JSON text: line/paragraph separators, DEL and C1 controls, bidi controls, BOM, noncharacters. */
const UNSAFE = /[\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ufeff\ufffe\uffff]/g;
/** What must never reach a transaction (the characters that wedge Azurite's batch parser). */
const TRANSACTION_BREAKING = /[\u2028\u2029]/;

/**
 * Replaces the unsafe characters of a JSON text by `\uXXXX` escapes. In JSON these characters can only
 * occur inside string literals, where the escape denotes the same character, so the result is the same
 * JSON value. For a plain (non-JSON) diagnostic column it is a readable, unambiguous rendering.
 */
export function escapeForTable(text: string): string {
  return text.replace(UNSAFE, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/** Azure Table limits (https://learn.microsoft.com/rest/api/storageservices/understanding-the-table-service-data-model). */
const MAX_PROPERTY_CHARS = 32 * 1024; // 64 KiB of UTF-16
const MAX_ENTITY_BYTES = 1024 * 1024;
const MAX_PROPERTIES = 252;
const MAX_TRANSACTION_BYTES = 4 * 1024 * 1024;

/** Data the table service cannot hold: the instance that produced it fails; nothing was written. */
export class UnstorableError extends Error {}

/** Approximate wire size of an entity (UTF-16 for strings, as the service counts them, plus names). */
function entityBytes(entity: Record<string, unknown>): number {
  let n = 0;
  for (const [k, v] of Object.entries(entity)) {
    n += 8 + k.length * 2;
    if (typeof v === 'string') n += 4 + v.length * 2;
    else n += 8;
  }
  return n;
}

/** Checks the entities of one transaction; throws UnstorableError naming what does not fit. */
export function assertTransactionSafe(what: string, entities: Record<string, unknown>[]): void {
  let total = 0;
  for (const e of entities) {
    const props = Object.entries(e).filter(([k]) => k !== 'partitionKey' && k !== 'rowKey');
    if (props.length > MAX_PROPERTIES) throw new UnstorableError(`${what}: an entity has ${props.length} properties (Azure Table allows ${MAX_PROPERTIES})`);
    for (const [k, v] of Object.entries(e)) {
      if (typeof v !== 'string') continue;
      if (TRANSACTION_BREAKING.test(v)) throw new UnstorableError(`${what}: property ${k} holds a raw line or paragraph separator`);
      if (v.length > MAX_PROPERTY_CHARS)
        throw new UnstorableError(`${what}: property ${k} holds ${v.length} characters (Azure Table allows ${MAX_PROPERTY_CHARS})`);
    }
    const bytes = entityBytes(e);
    if (bytes > MAX_ENTITY_BYTES) throw new UnstorableError(`${what}: an entity of about ${bytes} bytes exceeds Azure Table's 1 MiB`);
    total += bytes;
  }
  if (total > MAX_TRANSACTION_BYTES) throw new UnstorableError(`${what}: a transaction of about ${total} bytes exceeds Azure Table's 4 MiB`);
}
