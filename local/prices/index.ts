/**
 * A local stand-in for the Azure Retail Prices API (https://prices.azure.com/api/retail/prices), so the control
 * plane's price path (query, paging, reading, caching) runs here as it does against Azure. Same request and answer
 * format: `GET /api/retail/prices?api-version=…&currencyCode=USD&$filter=…` → `{ BillingCurrency, CustomerEntityId,
 * CustomerEntityType, Items, NextPageLink, Count }`, `$skip` paging, 100 items a page. The prices it serves are
 * stand-ins (local/prices/catalog.ts), not Azure's. Not emulated, answered 501: currencies other than USD, filter
 * syntax beyond `eq` / `and` / `or` / parentheses, other paths.
 */
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { RetailPriceItem } from '../../shared/core/ops/retailPrices';
import { standInItems } from './catalog';
import { FilterNotEmulated, parseFilter } from './filter';

export interface RetailPricesStandIn {
  /** The API's URL on this machine: http://127.0.0.1:<port>/api/retail/prices */
  url: string;
  port: number;
  /** Requests answered so far (tests count them). */
  requests(): number;
  /** Answer the next n requests with this status (fault injection: an unreachable or failing API). */
  failNext(n: number, status?: number): void;
  stop(): Promise<void>;
}

export interface RetailPricesStandInOptions {
  port?: number;
  pageSize?: number;
  items?: RetailPriceItem[];
}

const PATH = '/api/retail/prices';

export async function startRetailPricesStandIn(opts: RetailPricesStandInOptions = {}): Promise<RetailPricesStandIn> {
  const items = opts.items ?? standInItems();
  const pageSize = opts.pageSize ?? 100;
  let count = 0;
  let failing = { n: 0, status: 503 };
  const send = (res: http.ServerResponse, status: number, body: unknown) => {
    res.writeHead(status, { 'content-type': 'application/json; charset=utf-8' });
    res.end(JSON.stringify(body));
  };
  const server = http.createServer((req, res) => {
    count++;
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    if (failing.n > 0) {
      failing.n--;
      return send(res, failing.status, { Error: { Code: 'InjectedFault', Message: 'fault injected by the local stand-in' } });
    }
    if (req.method !== 'GET' || url.pathname !== PATH)
      return send(res, 501, { Error: { Code: 'NotEmulated', Message: `${req.method} ${url.pathname} is not emulated by the Retail Prices stand-in` } });
    const currency = url.searchParams.get('currencyCode') ?? 'USD';
    if (currency !== 'USD') return send(res, 501, { Error: { Code: 'NotEmulated', Message: `currencyCode ${currency} is not emulated (USD only)` } });
    let selected = items;
    const filter = url.searchParams.get('$filter');
    if (filter) {
      try {
        const pred = parseFilter(filter);
        selected = items.filter(pred);
      } catch (err) {
        if (err instanceof FilterNotEmulated) return send(res, 501, { Error: { Code: 'NotEmulated', Message: `$filter: ${err.message}` } });
        throw err;
      }
    }
    const skip = Number(url.searchParams.get('$skip') ?? '0');
    if (!Number.isInteger(skip) || skip < 0) return send(res, 400, { Error: { Code: 'BadRequest', Message: '$skip must be a non-negative integer' } });
    const page = selected.slice(skip, skip + pageSize);
    let next: string | null = null;
    if (skip + pageSize < selected.length) {
      const n = new URL(`http://${req.headers.host ?? '127.0.0.1'}${PATH}`);
      for (const [k, v] of url.searchParams) if (k !== '$skip') n.searchParams.set(k, v);
      n.searchParams.set('$skip', String(skip + pageSize));
      next = n.toString();
    }
    send(res, 200, { BillingCurrency: 'USD', CustomerEntityId: 'Default', CustomerEntityType: 'Retail', Items: page, NextPageLink: next, Count: page.length });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, '127.0.0.1', () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}${PATH}`,
    port,
    requests: () => count,
    failNext(n, status = 503) {
      failing = { n, status };
    },
    stop: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** The app settings that point the control plane at the stand-in (the local Batch account has no region in its URL). */
export function localPriceSettings(prices: Pick<RetailPricesStandIn, 'url'>): Record<string, string> {
  return { RETAIL_PRICES_URL: prices.url, PRICES_REGION: 'eastus' };
}
