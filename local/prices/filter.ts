/**
 * The part of the Retail Prices API's OData $filter the stand-in understands: `<field> eq '<value>'` terms joined by
 * `and` / `or`, with parentheses, over the fields the API documents as filterable. Values match case-sensitively, as
 * from api-version 2023-01-01-preview. Anything else (functions such as contains, other operators) is not emulated:
 * the caller answers 501 rather than a silently wrong page.
 */
import type { RetailPriceItem } from '../../shared/core/ops/retailPrices';

export class FilterNotEmulated extends Error {}

/** Filter field → item field (priceType is `type` in the items). */
const FIELDS: Record<string, keyof RetailPriceItem> = {
  armRegionName: 'armRegionName',
  location: 'location',
  meterName: 'meterName',
  productName: 'productName',
  skuName: 'skuName',
  serviceName: 'serviceName',
  priceType: 'type',
  armSkuName: 'armSkuName',
  currencyCode: 'currencyCode',
};

type Token = { kind: 'word'; v: string } | { kind: 'str'; v: string } | { kind: '(' } | { kind: ')' };

function tokens(text: string): Token[] {
  const out: Token[] = [];
  let i = 0;
  while (i < text.length) {
    const c = text[i];
    if (/\s/.test(c)) {
      i++;
      continue;
    }
    if (c === '(' || c === ')') {
      out.push({ kind: c });
      i++;
      continue;
    }
    if (c === "'") {
      let v = '';
      i++;
      for (;;) {
        if (i >= text.length) throw new FilterNotEmulated('unterminated string');
        if (text[i] === "'" && text[i + 1] === "'") {
          v += "'";
          i += 2;
          continue;
        }
        if (text[i] === "'") {
          i++;
          break;
        }
        v += text[i++];
      }
      out.push({ kind: 'str', v });
      continue;
    }
    const m = /^[A-Za-z_][A-Za-z0-9_]*/.exec(text.slice(i));
    if (!m) throw new FilterNotEmulated(`unexpected "${c}"`);
    out.push({ kind: 'word', v: m[0] });
    i += m[0].length;
  }
  return out;
}

type Pred = (item: RetailPriceItem) => boolean;

export function parseFilter(text: string): Pred {
  const ts = tokens(text);
  let p = 0;
  const word = (w: string) => ts[p]?.kind === 'word' && (ts[p] as { v: string }).v.toLowerCase() === w;
  const or = (): Pred => {
    let left = and();
    while (word('or')) {
      p++;
      const l = left,
        r = and();
      left = (x) => l(x) || r(x);
    }
    return left;
  };
  const and = (): Pred => {
    let left = term();
    while (word('and')) {
      p++;
      const l = left,
        r = term();
      left = (x) => l(x) && r(x);
    }
    return left;
  };
  const term = (): Pred => {
    const t = ts[p];
    if (t?.kind === '(') {
      p++;
      const inner = or();
      if (ts[p]?.kind !== ')') throw new FilterNotEmulated('missing ")"');
      p++;
      return inner;
    }
    if (t?.kind !== 'word') throw new FilterNotEmulated('expected a field name');
    const field = FIELDS[t.v];
    if (!field) throw new FilterNotEmulated(`field "${t.v}" is not emulated`);
    p++;
    if (!word('eq')) throw new FilterNotEmulated('only "eq" is emulated');
    p++;
    const v = ts[p];
    if (v?.kind !== 'str') throw new FilterNotEmulated('expected a quoted value');
    p++;
    return (x) => x[field] === v.v;
  };
  const pred = or();
  if (p !== ts.length) throw new FilterNotEmulated('unexpected text after the filter');
  return pred;
}
