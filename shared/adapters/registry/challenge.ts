/**
 * The distribution spec's token authentication: a 401 carries `WWW-Authenticate: Bearer realm="…",service="…",
 * scope="…"` and the client asks the realm for a token (with Basic credentials when it has any). Pure parsing.
 */
export interface Challenge {
  scheme: 'bearer' | 'basic';
  params: Record<string, string>;
}

/** Parses one WWW-Authenticate challenge, or undefined for a scheme registries do not use. */
export function parseChallenge(header: string | null | undefined): Challenge | undefined {
  if (!header) return undefined;
  const m = /^\s*(\w+)\s*(.*)$/s.exec(header);
  if (!m) return undefined;
  const scheme = m[1].toLowerCase();
  if (scheme !== 'bearer' && scheme !== 'basic') return undefined;
  const params: Record<string, string> = {};
  for (const p of m[2].matchAll(/(\w+)=(?:"((?:[^"\\]|\\.)*)"|([^,\s]*))/g)) params[p[1].toLowerCase()] = (p[2] ?? p[3] ?? '').replace(/\\(.)/g, '$1');
  return { scheme, params };
}
