/**
 * A small stand-in for Azure Key Vault's secrets data plane, so a job's secret references run on the local stack
 * the way they run in Azure: a node asks its IMDS for a token for `https://vault.azure.net` with the pool identity and
 * reads `GET /secrets/<name>[/<version>]?api-version=…`. What is emulated, with Key Vault's answers and errors
 * (learn.microsoft.com/rest/api/keyvault/secrets/get-secret/get-secret, …/general/authentication):
 *   GET {vault}/secrets/{name}[/{version}]   200 { value, id, attributes, tags }
 *   401 Unauthorized (AKV10000/AKV10022/…) with Key Vault's Bearer challenge: no token, a bad or expired token,
 *       a token for another audience;
 *   403 Forbidden (innererror ForbiddenByRbac): a caller without the "Key Vault Secrets User" role on the vault;
 *   404 SecretNotFound for a secret or version the vault does not hold; 404 for a vault that does not exist;
 *   400 BadParameter for a missing or unknown api-version.
 * Any other operation of Key Vault (set, list, delete, keys, certificates) answers 501.
 *
 * Addressing: Azure tells vaults apart by host name (<vault>.vault.azure.net); locally every vault is a path prefix
 * of one loopback server, `http://127.0.0.1:<port>/<vault>`, which is what the deployment's KEY_VAULT_URL_TEMPLATE
 * says ("http://127.0.0.1:<port>/{vault}"). Plain http on loopback only: the secrets never leave the machine.
 * Secrets and who may read them come from a seed (a JSON file or the caller), held in memory; nothing is persisted.
 */
import { createHash } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { readFileSync } from 'node:fs';
import { TokenRejected, type EntraTokenVerifier } from '../identity/verify';

export const KEY_VAULT_AUDIENCES = ['https://vault.azure.net', 'https://vault.azure.net/'];
/** api-versions of the secrets API Key Vault answers (7.0 onward, GA). */
const API_VERSIONS = new Set(['7.0', '7.1', '7.2', '7.3', '7.4', '7.5', '2025-07-01']);

export interface SeededVault {
  /** Secret name → its current value (a one-version history). */
  secrets: Record<string, string>;
  /** Object ids (principal ids) holding "Key Vault Secrets User" on the vault. */
  readers: string[];
}

export interface KeyVaultSeed {
  vaults: Record<string, SeededVault>;
}

export interface KeyVaultOptions {
  port?: number;
  seed: KeyVaultSeed;
  verify: EntraTokenVerifier;
  tenantId: string;
  /** Where Key Vault's challenge sends clients for a token. */
  authority: string;
}

export interface KeyVaultHandle {
  url: string;
  port: number;
  /** The KEY_VAULT_URL_TEMPLATE nodes use to reach this server. */
  urlTemplate: string;
  stop(): Promise<void>;
}

/** A seed file: { "vaults": { "<name>": { "secrets": { "<name>": "<value>" }, "readers": ["<principal id>"] } } }. */
export function readKeyVaultSeed(file: string): KeyVaultSeed {
  const raw = JSON.parse(readFileSync(file, 'utf8')) as KeyVaultSeed;
  if (!raw || typeof raw !== 'object' || typeof raw.vaults !== 'object')
    throw new Error(`${file}: a Key Vault seed is { "vaults": { "<name>": { "secrets": {…}, "readers": […] } } }`);
  return raw;
}

/** A secret's one version: a stable 32-hex id derived from vault, name and value, so a restart keeps it. */
export function secretVersion(vault: string, name: string, value: string): string {
  return createHash('sha256').update(`${vault}\0${name}\0${value}`).digest('hex').slice(0, 32);
}

function send(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'Content-Type': 'application/json; charset=utf-8',
    'Content-Length': Buffer.byteLength(text),
    'x-ms-keyvault-service-version': '1.9.0.0',
    ...headers,
  });
  res.end(text);
}

const kvError = (code: string, message: string, inner?: string) => ({ error: { code, message, ...(inner ? { innererror: { code: inner } } : {}) } });

export function keyVaultHandler(opts: KeyVaultOptions, origin: () => string) {
  const challenge = { 'WWW-Authenticate': `Bearer authorization="${opts.authority.replace(/\/+$/, '')}/${opts.tenantId}", resource="https://vault.azure.net"` };
  return async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const url = new URL(req.url ?? '/', origin());
    const [vaultName, collection, name, version, ...rest] = url.pathname.split('/').filter(Boolean).map(decodeURIComponent);
    const vault = vaultName ? opts.seed.vaults[vaultName.toLowerCase()] : undefined;
    if (!vault) return send(res, 404, kvError('VaultNotFound', `no vault ${vaultName ?? ''} on this server: the URL is http://127.0.0.1:<port>/<vault>/…`));
    if (collection !== 'secrets' || !name || rest.length || req.method !== 'GET') {
      return send(
        res,
        501,
        kvError('NotImplemented', `${req.method ?? 'GET'} ${url.pathname}: the local Key Vault serves only GET /secrets/{name}[/{version}]`),
      );
    }
    const apiVersion = url.searchParams.get('api-version');
    if (!apiVersion || !API_VERSIONS.has(apiVersion)) {
      return send(
        res,
        400,
        kvError(
          'BadParameter',
          apiVersion
            ? `The specified version (${apiVersion}) is not recognized. Consider using the latest supported version (7.4).`
            : 'The request URI contains an invalid or missing api-version.',
        ),
      );
    }
    const auth = String(req.headers.authorization ?? '');
    if (!/^Bearer\s+\S+$/i.test(auth)) return send(res, 401, kvError('Unauthorized', 'AKV10000: Request is missing a Bearer or PoP token.'), challenge);
    let caller: string;
    try {
      caller = (await opts.verify(auth.replace(/^Bearer\s+/i, ''), KEY_VAULT_AUDIENCES)).oid;
    } catch (err) {
      const problem = err instanceof TokenRejected ? err.problem : 'malformed';
      const text =
        problem === 'audience'
          ? 'AKV10022: Invalid audience.'
          : problem === 'expired'
            ? 'AKV10032: Token expired.'
            : problem === 'issuer'
              ? 'AKV10032: Invalid issuer.'
              : 'AKV10002: Invalid token.';
      return send(res, 401, kvError('Unauthorized', `${text} ${(err as Error).message}`), challenge);
    }
    if (!vault.readers.includes(caller)) {
      return send(
        res,
        403,
        kvError(
          'Forbidden',
          `Caller is not authorized to perform action on resource.\r\nCaller: oid=${caller}\r\nAction: 'Microsoft.KeyVault/vaults/secrets/getSecret/action'\r\nVault: ${vaultName}`,
          'ForbiddenByRbac',
        ),
      );
    }
    const value = Object.prototype.hasOwnProperty.call(vault.secrets, name) ? vault.secrets[name] : undefined;
    const current = value === undefined ? undefined : secretVersion(vaultName.toLowerCase(), name, value);
    if (value === undefined || (version !== undefined && version !== current)) {
      return send(
        res,
        404,
        kvError(
          'SecretNotFound',
          `A secret with (name/id) ${name}${version ? `/${version}` : ''} was not found in this key vault. If you recently deleted this secret you may be able to recover it using the correct recovery command. For help resolving this issue, please see https://go.microsoft.com/fwlink/?linkid=2125182`,
        ),
      );
    }
    send(res, 200, {
      value,
      id: `${origin()}/${vaultName}/secrets/${name}/${current}`,
      attributes: { enabled: true, created: 1_700_000_000, updated: 1_700_000_000, recoveryLevel: 'Recoverable+Purgeable', recoverableDays: 90 },
      tags: {},
    });
  };
}

export async function startKeyVault(opts: KeyVaultOptions): Promise<KeyVaultHandle> {
  let origin = 'http://127.0.0.1';
  const handler = keyVaultHandler(opts, () => origin);
  const server: Server = createServer((req, res) => {
    handler(req, res).catch((err: unknown) => {
      if (!res.headersSent) send(res, 500, kvError('InternalError', (err as Error).message));
      else res.destroy();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, '127.0.0.1', () => resolve());
  });
  const port = (server.address() as { port: number }).port;
  origin = `http://127.0.0.1:${port}`;
  return {
    url: origin,
    port,
    urlTemplate: `${origin}/{vault}`,
    stop: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** The secret `npm start` seeds: vault "hpclocal", secret "demo-license-key", readable by the pool identity. */
export const DEMO_VAULT = 'hpclocal';
export const DEMO_SECRET = 'demo-license-key';
export const DEMO_SECRET_VALUE = 'local-demo-license-key (not a real secret)';
/** The second demo secret (examples/workloads/licensed-app-flexlm.yaml's app token). */
export const DEMO_TOKEN_SECRET = 'demo-app-token';
export const DEMO_TOKEN_SECRET_VALUE = 'local-demo-app-token (not a real secret)';
/**
 * What the local Key Vault holds unless a caller seeds its own: the example's two secrets with documented local
 * values (docs/local-stack.md). Held in memory and seeded at every start, so a restart finds the same values.
 */
export const DEMO_VAULT_SEED: Readonly<Record<string, { secrets: Record<string, string> }>> = {
  [DEMO_VAULT]: { secrets: { [DEMO_SECRET]: DEMO_SECRET_VALUE, [DEMO_TOKEN_SECRET]: DEMO_TOKEN_SECRET_VALUE } },
};

/** A seed where vaults that name no readers are readable by `defaultReaders` (the pool identity). */
export function seedWithReaders(vaults: Record<string, { secrets: Record<string, string>; readers?: string[] }>, defaultReaders: string[]): KeyVaultSeed {
  return {
    vaults: Object.fromEntries(
      Object.entries(vaults).map(([name, v]) => [name.toLowerCase(), { secrets: { ...v.secrets }, readers: v.readers ?? defaultReaders }]),
    ),
  };
}
