/**
 * A reader for the parts of infra/main.bicep the infra test checks: declarations (params, vars, resources with their
 * bodies), the Function App's app settings and the role assignments. It is not a Bicep compiler (none is reachable
 * here): it understands comments, strings ('…', '''…''', ${…} interpolation) and bracket nesting, and the few shapes
 * main.bicep is written in. Anything in a role assignment or an app setting it does not recognise is an error, so a
 * reshaped template fails the test instead of passing unread.
 *
 * Why a reader and not a structured source the Bicep is generated from: the Bicep stays the file Azure users read,
 * review and run with `azd up`; only the role ids live in data (infra/roles.json, loaded by the Bicep itself).
 */

export interface BicepResource {
  symbol: string;
  type: string;
  apiVersion: string;
  existing: boolean;
  /** `[for … : { … }]` */
  loop: boolean;
  /** The loop's index variable (`i` in `[for i in range(…)` or `[for (x, i) in …`), or its item variable. */
  loopVariable?: string;
  /** The object body, `{` to `}` inclusive (comments removed). */
  body: string;
}

export interface BicepParam {
  name: string;
  type: string;
  /** The default value's source text, if any. */
  defaultValue?: string;
  decorators: string[];
}

export interface AppSetting {
  name: string;
  /** The value's source text (a Bicep expression). */
  value: string;
}

export interface RoleAssignmentDecl {
  symbol: string;
  /** The resource symbol of the scope (`staging` for `staging[i]`). */
  scope: string;
  /** The index into a scope collection (`i` for `staging[i]`). */
  scopeIndex?: string;
  /** The symbol of the identity whose principalId is assigned. */
  principal: string;
  /** The key in roles.json (`roles.<key>.id`). */
  role: string;
  loop: boolean;
  loopVariable?: string;
  /** The assignment name's guid(…) arguments. */
  nameArgs: string[];
}

/** Removes // and /* *\/ comments, leaving strings intact. */
export function stripComments(src: string): string {
  let out = '';
  let i = 0;
  while (i < src.length) {
    if (src.startsWith("'''", i)) {
      const end = src.indexOf("'''", i + 3);
      if (end < 0) throw new Error(`unterminated ''' string at offset ${i}`);
      out += src.slice(i, end + 3);
      i = end + 3;
    } else if (src[i] === "'") {
      const end = stringEnd(src, i);
      out += src.slice(i, end);
      i = end;
    } else if (src.startsWith('//', i)) {
      while (i < src.length && src[i] !== '\n') i++;
    } else if (src.startsWith('/*', i)) {
      const end = src.indexOf('*/', i + 2);
      if (end < 0) throw new Error(`unterminated comment at offset ${i}`);
      i = end + 2;
    } else {
      out += src[i++];
    }
  }
  return out;
}

/** Offset just past the single-quoted string starting at `start` (escapes and ${…} holes included). */
function stringEnd(src: string, start: number): number {
  let i = start + 1;
  while (i < src.length) {
    const c = src[i];
    if (c === '\\') i += 2;
    else if (c === "'") return i + 1;
    else if (src.startsWith('${', i)) i = matchingClose(src, i + 1) + 1;
    else if (c === '\n') throw new Error(`unterminated string at offset ${start}`);
    else i++;
  }
  throw new Error(`unterminated string at offset ${start}`);
}

/** Offset of the bracket closing the one at `open` (`{`, `[` or `(`), skipping strings. */
export function matchingClose(src: string, open: number): number {
  const pairs: Record<string, string> = { '{': '}', '[': ']', '(': ')' };
  const stack: string[] = [];
  let i = open;
  while (i < src.length) {
    const c = src[i];
    if (src.startsWith("'''", i)) {
      i = src.indexOf("'''", i + 3) + 3;
      continue;
    }
    if (c === "'") {
      i = stringEnd(src, i);
      continue;
    }
    if (pairs[c]) stack.push(pairs[c]);
    else if (c === '}' || c === ']' || c === ')') {
      if (stack.pop() !== c) throw new Error(`unbalanced '${c}' at offset ${i}`);
      if (stack.length === 0) return i;
    }
    i++;
  }
  throw new Error(`no closing bracket for offset ${open}`);
}

/** Splits the inside of `[ … ]` or `( … )` into top-level items (newline- or comma-separated). */
export function topLevelItems(inner: string): string[] {
  const items: string[] = [];
  let current = '';
  let i = 0;
  while (i < inner.length) {
    const c = inner[i];
    if (c === '{' || c === '[' || c === '(') {
      const close = matchingClose(inner, i);
      current += inner.slice(i, close + 1);
      i = close + 1;
    } else if (c === "'") {
      const end = inner.startsWith("'''", i) ? inner.indexOf("'''", i + 3) + 3 : stringEnd(inner, i);
      current += inner.slice(i, end);
      i = end;
    } else if (c === ',' || c === '\n') {
      if (current.trim()) items.push(current.trim());
      current = '';
      i++;
    } else {
      current += c;
      i++;
    }
  }
  if (current.trim()) items.push(current.trim());
  return items;
}

export class BicepFile {
  readonly code: string;

  constructor(readonly source: string) {
    this.code = stripComments(source);
  }

  params(): BicepParam[] {
    const out: BicepParam[] = [];
    const re = /^param\s+(\w+)\s+(\w+)(?:\s*=\s*(.+))?$/gm;
    for (let m; (m = re.exec(this.code));) {
      // Decorators are the @lines right above the declaration.
      const before = this.code.slice(0, m.index).split('\n').reverse();
      const decorators: string[] = [];
      for (const line of before.slice(1)) {
        if (line.trim().startsWith('@')) decorators.unshift(line.trim());
        else break;
      }
      out.push({ name: m[1], type: m[2], defaultValue: m[3]?.trim(), decorators });
    }
    return out;
  }

  /** `var name = <expression>` (single-line expressions only). */
  vars(): Map<string, string> {
    const out = new Map<string, string>();
    const re = /^var\s+(\w+)\s*=\s*(.+)$/gm;
    for (let m; (m = re.exec(this.code));) out.set(m[1], m[2].trim());
    return out;
  }

  resources(): BicepResource[] {
    const out: BicepResource[] = [];
    const re = /^resource\s+(\w+)\s+'([^'@]+)@([^']+)'\s+(existing\s+)?=\s*/gm;
    for (let m; (m = re.exec(this.code));) {
      let start = re.lastIndex;
      let loop = false;
      let loopVariable: string | undefined;
      if (this.code[start] === '[') {
        loop = true;
        const header = /^\[for\s+(?:\(\s*\w+\s*,\s*(\w+)\s*\)|(\w+))\s+in\s/.exec(this.code.slice(start));
        if (!header) throw new Error(`resource ${m[1]}: loop header not in the form [for x in …] or [for (x, i) in …]`);
        loopVariable = header[1] ?? header[2];
        const colon = this.code.indexOf(':', start); // `[for x in y: {`
        start = this.code.indexOf('{', colon);
      }
      if (this.code[start] !== '{' && !loop) throw new Error(`resource ${m[1]}: expected '{' after '='`);
      const end = matchingClose(this.code, start);
      out.push({ symbol: m[1], type: m[2], apiVersion: m[3], existing: Boolean(m[4]), loop, loopVariable, body: this.code.slice(start, end + 1) });
    }
    return out;
  }

  resource(symbol: string): BicepResource {
    const r = this.resources().find((x) => x.symbol === symbol);
    if (!r) throw new Error(`main.bicep declares no resource "${symbol}"`);
    return r;
  }

  /** The app settings of a Microsoft.Web/sites resource (`siteConfig.appSettings: [ { name: '…', value: … } ]`). */
  appSettings(siteSymbol: string): AppSetting[] {
    const body = this.resource(siteSymbol).body;
    const at = body.search(/\bappSettings:\s*\[/);
    if (at < 0) throw new Error(`${siteSymbol}: no appSettings list`);
    const open = body.indexOf('[', at);
    const inner = body.slice(open + 1, matchingClose(body, open));
    return topLevelItems(inner).map((item) => {
      const m = /^\{\s*name:\s*'([^']+)'\s*[,\n]\s*value:\s*([\s\S]+?)\s*\}$/.exec(item);
      if (!m) throw new Error(`${siteSymbol}: app setting not in the form { name: '…', value: … }: ${item}`);
      return { name: m[1], value: m[2] };
    });
  }

  roleAssignments(): RoleAssignmentDecl[] {
    return this.resources()
      .filter((r) => r.type === 'Microsoft.Authorization/roleAssignments')
      .map((r) => {
        const scope = /\bscope:\s*(\w+)(?:\[(\w+)\])?\s*\n/.exec(r.body);
        const principal = /\bprincipalId:\s*(\w+)\.properties\.principalId\b/.exec(r.body);
        const role = /\broleDefinitionId:\s*subscriptionResourceId\('Microsoft\.Authorization\/roleDefinitions',\s*roles\.(\w+)\.id\)/.exec(r.body);
        const name = /\bname:\s*guid\(([^)]*)\)/.exec(r.body);
        if (!scope || !principal || !role || !name) {
          throw new Error(
            `role assignment ${r.symbol} is not in the shape this reader knows (scope: <resource>, principalId: <identity>.properties.principalId, roleDefinitionId from roles.<key>.id, name: guid(…)):\n${r.body}`,
          );
        }
        return {
          symbol: r.symbol,
          scope: scope[1],
          scopeIndex: scope[2],
          principal: principal[1],
          role: role[1],
          loop: r.loop,
          loopVariable: r.loopVariable,
          nameArgs: name[1].split(',').map((s) => s.trim()),
        };
      });
  }
}
