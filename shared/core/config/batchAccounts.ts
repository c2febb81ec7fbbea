/**
 * The Batch accounts jobs may be placed on (BATCH_ACCOUNTS, docs/scheduling.md "Placement over several Batch
 * accounts"). Without the setting the deployment has one account: the one BATCH_ACCOUNT_URL / BATCH_ACCOUNT_NAME /
 * BATCH_ACCOUNT_KEY / BATCH_LOCATION name, a list of one. With it, a JSON list of every account; the account
 * BATCH_ACCOUNT_NAME names must be one of them (the home account: reused pools, facts checks and everything that was
 * never placed use it). Each problem names the setting and the entry.
 */
import { z } from 'zod';
import { regionOfBatchAccountUrl } from '../ops/retailPrices';

/** How the control plane authenticates to a Batch account's data plane. */
export type BatchAuth = { kind: 'sharedKey'; accountKey: string } | { kind: 'aad'; scope: string };

export interface BatchAccountRef {
  /** The account's name (what the job record and the timeline keep). */
  name: string;
  accountUrl: string;
  auth: BatchAuth;
  /** The account's region (Batch sizes are per region); else the URL's, else unknown. */
  location?: string;
  /** Where Retail Prices are read for this account (default: its region). */
  priceRegion?: string;
  /** Where the account sits in Resource Manager (its quotas and management-plane pools); default the home account's. */
  arm?: { subscriptionId?: string; resourceGroup?: string; endpoint?: string };
  /** The deployment's own cap on this account's dedicated cores (as ADMISSION_CORE_QUOTA), lowering the account's quota. */
  coreQuota?: { total?: number; families: Record<string, number> };
  /** Staging accounts in this account's region: data locality breaks ties between accounts (names of STAGING_ACCOUNTS). */
  stagingAccounts: string[];
}

const NAME = /^[a-z0-9]{3,24}$/;
const REGION = /^[a-z0-9]{2,40}$/;
const GUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const RESOURCE_GROUP = /^[-\w._()]{0,89}[-\w_()]$/;
const ACCOUNT_ID = /^\/subscriptions\/([0-9a-f-]{36})\/resourceGroups\/([-\w._()]{1,90})\/providers\/Microsoft\.Batch\/batchAccounts\/([a-z0-9]{3,24})$/i;
const SETTING = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;

const isLoopback = (host: string) => host === 'localhost' || /^127\.\d+\.\d+\.\d+$/.test(host) || host === '[::1]';

function originOf(v: string, loopbackHttp: boolean): string | undefined {
  try {
    const u = new URL(v);
    if (u.pathname.replace(/\/+$/, '') !== '' || u.search || u.hash) return undefined;
    if (u.protocol === 'https:' || (u.protocol === 'http:' && (!loopbackHttp || isLoopback(u.hostname)))) return u.origin;
  } catch {
    /* refused below */
  }
  return undefined;
}

const EntrySchema = z.strictObject({
  name: z.string().regex(NAME, { error: 'must be 3-24 lowercase letters or digits' }),
  url: z
    .string()
    .refine((v) => originOf(v, false) !== undefined, { error: 'must be an http(s) URL with no path, e.g. https://myaccount.westeurope.batch.azure.com' }),
  location: z.string().regex(REGION, { error: 'must be an Azure region name such as "westeurope"' }).optional(),
  priceRegion: z.string().regex(REGION, { error: 'must be an Azure region name such as "westeurope"' }).optional(),
  resourceId: z
    .string()
    .regex(ACCOUNT_ID, { error: 'must be /subscriptions/<id>/resourceGroups/<rg>/providers/Microsoft.Batch/batchAccounts/<name>' })
    .optional(),
  subscriptionId: z.string().regex(GUID, { error: 'must be a subscription id (a GUID)' }).optional(),
  resourceGroup: z.string().regex(RESOURCE_GROUP, { error: 'must be a resource group name' }).optional(),
  armEndpoint: z
    .string()
    .refine((v) => originOf(v, true) !== undefined, { error: 'must be an https URL with no path (http only on a loopback host)' })
    .optional(),
  keySetting: z.string().regex(SETTING, { error: 'must be the name of an app setting holding the account key' }).optional(),
  coreQuota: z.record(z.string().min(1).max(100), z.number().int().min(0).max(100_000_000)).optional(),
  stagingAccounts: z.array(z.string().min(1).max(100)).max(100).optional(),
});

type Entry = z.infer<typeof EntrySchema>;

export interface BatchAccountsEnv {
  BATCH_ACCOUNTS?: string;
  BATCH_ACCOUNT_URL: string;
  BATCH_ACCOUNT_NAME: string;
  BATCH_LOCATION?: string;
  PRICES_REGION?: string;
}

export interface HomeAccount {
  accountUrl: string;
  accountName: string;
  auth: BatchAuth;
}

const zodIssues = (err: z.ZodError) => err.issues.map((i) => `${i.path.length ? `${i.path.join('.')}: ` : ''}${i.message}`).join('; ');

/**
 * BATCH_ACCOUNTS, e.g.
 * `[{"name":"hpcweu","url":"https://hpcweu.westeurope.batch.azure.com","location":"westeurope"},
 *   {"name":"hpcneu","url":"https://hpcneu.northeurope.batch.azure.com","resourceId":"/subscriptions/…/batchAccounts/hpcneu","stagingAccounts":["stageneu"]}]`.
 * `env` resolves `keySetting` (the account's shared key, for deployments on keys); `stagingNames` are the configured
 * staging accounts. Returns the list with the home account first; problems are pushed, never thrown.
 */
export function parseBatchAccounts(
  e: BatchAccountsEnv,
  home: HomeAccount,
  env: Record<string, string | undefined>,
  stagingNames: readonly string[],
  problems: string[],
): BatchAccountRef[] {
  const homeRef: BatchAccountRef = {
    name: home.accountName,
    accountUrl: home.accountUrl,
    auth: home.auth,
    ...locationOf(e.BATCH_LOCATION, home.accountUrl),
    ...(e.PRICES_REGION ? { priceRegion: e.PRICES_REGION } : {}),
    stagingAccounts: [],
  };
  const text = e.BATCH_ACCOUNTS?.trim();
  if (!text) return [homeRef];
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    problems.push(`BATCH_ACCOUNTS: not JSON: ${(err as Error).message}`);
    return [homeRef];
  }
  if (!Array.isArray(raw) || raw.length === 0 || raw.length > 50) {
    problems.push('BATCH_ACCOUNTS: must be a JSON list of 1 to 50 accounts ([{"name": …, "url": …}, …])');
    return [homeRef];
  }
  const before = problems.length;
  const entries: Entry[] = [];
  raw.forEach((item, i) => {
    const parsed = EntrySchema.safeParse(item);
    if (!parsed.success) problems.push(`BATCH_ACCOUNTS[${i}]: ${zodIssues(parsed.error)}`);
    else entries.push(parsed.data);
  });
  if (problems.length > before) return [homeRef];
  const names = entries.map((a) => a.name);
  const twice = names.find((n, i) => names.indexOf(n) !== i);
  if (twice) problems.push(`BATCH_ACCOUNTS: account "${twice}" is listed twice`);
  const urls = entries.map((a) => originOf(a.url, false));
  const twiceUrl = urls.find((u, i) => urls.indexOf(u) !== i);
  if (twiceUrl) problems.push(`BATCH_ACCOUNTS: the URL ${twiceUrl} is listed twice`);
  const homeIndex = names.indexOf(home.accountName);
  if (homeIndex < 0) problems.push(`BATCH_ACCOUNTS: must list the account BATCH_ACCOUNT_NAME names ("${home.accountName}"): it is the home account`);
  else if (urls[homeIndex] !== originOf(home.accountUrl, false))
    problems.push(
      `BATCH_ACCOUNTS[${homeIndex}].url: ${entries[homeIndex].url} is not BATCH_ACCOUNT_URL (${home.accountUrl}) although both name "${home.accountName}"`,
    );
  const refs = entries.map((a, i): BatchAccountRef => {
    const at = `BATCH_ACCOUNTS[${i}]`;
    const id = a.resourceId ? ACCOUNT_ID.exec(a.resourceId) : null;
    if (id && id[3] !== a.name) problems.push(`${at}.resourceId: names the account "${id[3]}", not "${a.name}"`);
    if (id && (a.subscriptionId || a.resourceGroup)) problems.push(`${at}: give either resourceId or subscriptionId/resourceGroup, not both`);
    for (const s of a.stagingAccounts ?? [])
      if (!stagingNames.includes(s)) problems.push(`${at}.stagingAccounts: "${s}" is not one of STAGING_ACCOUNTS (${stagingNames.join(', ')})`);
    const { total, ...families } = a.coreQuota ?? {};
    let auth: BatchAuth = i === homeIndex ? home.auth : { kind: 'aad', scope: home.auth.kind === 'aad' ? home.auth.scope : AAD_SCOPE };
    if (a.keySetting) {
      const key = env[a.keySetting]?.trim();
      if (!key) problems.push(`${at}.keySetting: app setting ${a.keySetting} is not set`);
      else auth = { kind: 'sharedKey', accountKey: key };
    }
    const subscriptionId = id?.[1] ?? a.subscriptionId;
    const resourceGroup = id?.[2] ?? a.resourceGroup;
    const endpoint = a.armEndpoint ? originOf(a.armEndpoint, true) : undefined;
    return {
      name: a.name,
      accountUrl: originOf(a.url, false) as string,
      auth,
      ...locationOf(a.location ?? (i === homeIndex ? e.BATCH_LOCATION : undefined), a.url),
      ...(a.priceRegion ? { priceRegion: a.priceRegion } : i === homeIndex && e.PRICES_REGION ? { priceRegion: e.PRICES_REGION } : {}),
      ...(subscriptionId || resourceGroup || endpoint
        ? {
            arm: {
              ...(subscriptionId ? { subscriptionId: subscriptionId.toLowerCase() } : {}),
              ...(resourceGroup ? { resourceGroup } : {}),
              ...(endpoint ? { endpoint } : {}),
            },
          }
        : {}),
      ...(a.coreQuota ? { coreQuota: total === undefined ? { families } : { total, families } } : {}),
      stagingAccounts: [...(a.stagingAccounts ?? [])],
    };
  });
  if (homeIndex < 0 || problems.length > before) return [homeRef];
  // The home account first: what is not placed runs there, and ties between equal accounts are broken in this order.
  return [refs[homeIndex], ...refs.filter((_, i) => i !== homeIndex)];
}

/** The data plane's Entra scope (kept here as well as in index.ts to avoid a value import cycle). */
const AAD_SCOPE = 'https://batch.core.windows.net//.default';

function locationOf(setting: string | undefined, url: string): { location?: string } {
  const location = setting || regionOfBatchAccountUrl(url);
  return location ? { location } : {};
}

/**
 * The region a job's node prices are read for: the home account keeps the deployment's Retail Prices region
 * (PRICES_REGION, else the home account's); another account its own `priceRegion`, else its `location`, else the
 * home one (the cost record of a job placed there must not carry the home region's price).
 */
export function priceRegionOf(ref: Pick<BatchAccountRef, 'priceRegion' | 'location'>, isHome: boolean, homeRegion: string | undefined): string | undefined {
  return isHome ? homeRegion : (ref.priceRegion ?? ref.location ?? homeRegion);
}
