/** The small part of Go templates that scripts pass to `docker inspect -f` / `ps --format`: `{{.A.B}}`, `{{json .A}}`. */
function lookup(obj: unknown, dotted: string): unknown {
  if (dotted === '.') return obj;
  let cur: unknown = obj;
  for (const part of dotted.replace(/^\./, '').split('.')) {
    if (cur === null || typeof cur !== 'object') return undefined;
    cur = (cur as Record<string, unknown>)[part];
  }
  return cur;
}

function show(v: unknown): string {
  if (v === undefined || v === null) return '<no value>';
  if (Array.isArray(v)) return `[${v.map(show).join(' ')}]`;
  if (typeof v === 'object')
    return `map[${Object.entries(v as Record<string, unknown>)
      .map(([k, x]) => `${k}:${show(x)}`)
      .join(' ')}]`;
  return String(v);
}

export function renderTemplate(template: string, data: unknown): string {
  const body = template.replace(/\\n/g, '\n').replace(/\\t/g, '\t');
  return body.replace(/\{\{\s*(json\s+)?(\.[A-Za-z0-9_.]*)\s*\}\}/g, (_m, json: string | undefined, expr: string) => {
    const v = lookup(data, expr);
    return json ? JSON.stringify(v ?? null) : show(v);
  });
}
