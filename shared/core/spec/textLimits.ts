/**
 * Limits on the submitted text, checked before the YAML parser builds anything. A job spec is small (its canonical
 * JSON is at most LIMITS.maxSpecJsonChars) and shallow (five levels), so these bounds never refuse a spec that could
 * be valid, while they keep hostile documents (deep nesting, tens of thousands of keys, megabytes of text) away from
 * the parser, whose time and memory grow with them: no request may hold the host for long.
 *
 * The check runs the yaml library's own lexer (the same tokenizer the parser uses, so it sees exactly what the
 * parser would) and stops at the first limit crossed.
 */
import { Lexer } from 'yaml';

export const TEXT_LIMITS = {
  /** Characters of the whole body (a valid spec's canonical JSON is at most 200,000). */
  maxChars: 262_144,
  /** Nesting of flow collections ([ ] and { }). */
  maxFlowDepth: 32,
  /** Lexer tokens: about seven per "key: value" line; the largest valid spec needs about 5,000. */
  maxTokens: 20_000,
} as const;

export interface TextLimitProblem {
  message: string;
}

export function checkSpecTextSize(text: string): TextLimitProblem | undefined {
  return text.length > TEXT_LIMITS.maxChars
    ? { message: `the request body is too large: ${text.length} characters, at most ${TEXT_LIMITS.maxChars}` }
    : undefined;
}

/** Size, flow nesting and token count of a YAML (or JSON-as-YAML) document. */
export function checkYamlText(text: string): TextLimitProblem | undefined {
  const size = checkSpecTextSize(text);
  if (size) return size;
  let depth = 0;
  let tokens = 0;
  for (const token of new Lexer().lex(text)) {
    if (++tokens > TEXT_LIMITS.maxTokens) return { message: `the document is too complex: more than ${TEXT_LIMITS.maxTokens} YAML tokens` };
    if (token === '[' || token === '{') {
      if (++depth > TEXT_LIMITS.maxFlowDepth) return { message: `collections are nested more than ${TEXT_LIMITS.maxFlowDepth} deep` };
    } else if (token === ']' || token === '}') {
      depth = Math.max(0, depth - 1);
    }
  }
  return undefined;
}
