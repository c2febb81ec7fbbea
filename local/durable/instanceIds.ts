/**
 * Orchestration instance id rules of the Durable client (DurableClient.StartNewAsync): not starting with
 * "@" (entity ids), none of / \ # ? or control characters (Table Storage key rules), at most 256 characters.
 * The messages are the .NET exception messages the HTTP API returns.
 */
const MAX_INSTANCE_ID_LENGTH = 256;

/** / \ ? # and char.IsControl (U+0000–U+001F, U+007F–U+009F). */
function isInvalidChar(c: string): boolean {
  const code = c.charCodeAt(0);
  return c === '/' || c === '\\' || c === '?' || c === '#' || code <= 0x1f || (code >= 0x7f && code <= 0x9f);
}

/** The ArgumentException message for an invalid id, or undefined when the id is valid. */
export function instanceIdError(instanceId: string): string | undefined {
  // The extension passes the arguments of `new ArgumentException(nameof(instanceId), message)` swapped,
  // so .NET reports "instanceId" as the message and the rule as the parameter name.
  if (instanceId.startsWith('@')) return "instanceId (Parameter 'Orchestration instance ids must not start with @.')";
  if ([...instanceId].some(isInvalidChar)) return "instanceId (Parameter 'Orchestration instance ids must not contain /, \\, #, ?, or control characters.')";
  if (instanceId.length > MAX_INSTANCE_ID_LENGTH) return `Instance ID lengths must not exceed ${MAX_INSTANCE_ID_LENGTH} characters.`;
  return undefined;
}
