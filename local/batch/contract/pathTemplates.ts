/**
 * Matching request paths against the spec's path templates, e.g.
 * `/pools/{poolId}/nodes/{nodeId}` or `/certificates(thumbprintAlgorithm={thumbprintAlgorithm},thumbprint={thumbprint})`.
 */

export interface PathTemplate {
  template: string;
  regex: RegExp;
  paramNames: string[];
  /** Literal characters in the template: more literal text = more specific. */
  specificity: number;
  /** The text before the first parameter: a path that does not start with it cannot match (no regex run). */
  prefix: string;
}

/** Parameters that may span several path segments (file paths inside a task or node directory). */
const MULTI_SEGMENT_PARAMS = new Set(['filePath']);

export function compilePathTemplate(template: string): PathTemplate {
  const paramNames: string[] = [];
  let pattern = '';
  let specificity = 0;
  let last = 0;
  const re = /\{([^}]+)\}/g;
  for (let m = re.exec(template); m; m = re.exec(template)) {
    const literal = template.slice(last, m.index);
    pattern += escapeRegex(literal);
    specificity += literal.length;
    paramNames.push(m[1]);
    pattern += MULTI_SEGMENT_PARAMS.has(m[1]) ? '(.+)' : '([^/(),]+)';
    last = m.index + m[0].length;
  }
  const tail = template.slice(last);
  pattern += escapeRegex(tail);
  specificity += tail.length;
  const first = template.indexOf('{');
  return { template, regex: new RegExp(`^${pattern}/?$`), paramNames, specificity, prefix: first < 0 ? template : template.slice(0, first) };
}

/** Returns decoded parameter values when `path` (without query) fits the template. */
export function matchPathTemplate(t: PathTemplate, path: string): Record<string, string> | undefined {
  if (!path.startsWith(t.prefix)) return undefined;
  const m = t.regex.exec(path);
  if (!m) return undefined;
  const params: Record<string, string> = {};
  t.paramNames.forEach((name, i) => {
    params[name] = safeDecode(m[i + 1]);
  });
  return params;
}

function safeDecode(value: string): string {
  try {
    return decodeURIComponent(value);
  } catch {
    return value;
  }
}

function escapeRegex(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
