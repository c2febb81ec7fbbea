/**
 * Entra ID tokens for the API, through @azure/identity, in this order:
 *   1. --key / HPCJOB_KEY: no token at all, the operator key is sent instead (apiClient.ts);
 *   2. the token `hpcjob login` saved (~/.config/hpcjob/token.json, mode 600) while it has minutes left;
 *   3. DefaultAzureCredential, the usual chain (environment service principal, workload and managed identity,
 *      `az login`, azd, PowerShell);
 *   4. on a terminal: the device code flow (DeviceCodeCredential), prompting on stderr; the token is saved.
 * Without a terminal and with nothing above, the command stops and says to run `hpcjob login`. Access tokens are
 * saved, refresh tokens are not (@azure/identity keeps them in memory only without its persistence plugin), so a
 * login lasts as long as its access token (about an hour in Entra by default).
 */
import { chmodSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
// Types only here: @azure/identity (~270 modules with MSAL and the Azure core) is loaded where a token is asked
// for, so commands that need none (validate, explain --offline, a call with --key or without a scope) do not pay for it.
import type { AccessToken, TokenCredential } from '@azure/identity';
import type { Connection } from './connection';
import { defaultProfilePath } from './connection';
import { AccessRefused, CliError, ExitCode } from './errors';

const DEFAULT_AUTHORITY = 'https://login.microsoftonline.com';
/** A saved token with less than this left is not used (a long command would see it expire). */
const MIN_LIFETIME_MS = 5 * 60_000;

interface SavedToken {
  endpoint: string;
  scope: string;
  accessToken: string;
  expiresOn: number;
}

export function tokenFilePath(env: NodeJS.ProcessEnv = process.env): string {
  return path.join(path.dirname(defaultProfilePath(env)), 'token.json');
}

function readSaved(conn: Connection, scope: string): SavedToken | undefined {
  const file = tokenFilePath();
  if (!existsSync(file)) return undefined;
  try {
    const saved = JSON.parse(readFileSync(file, 'utf8')) as SavedToken;
    if (saved.endpoint !== conn.endpoint || saved.scope !== scope || typeof saved.accessToken !== 'string') return undefined;
    return saved.expiresOn - Date.now() > MIN_LIFETIME_MS ? saved : undefined;
  } catch {
    return undefined;
  }
}

function save(conn: Connection, scope: string, token: AccessToken): void {
  const file = tokenFilePath();
  mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  const saved: SavedToken = { endpoint: conn.endpoint, scope, accessToken: token.token, expiresOn: token.expiresOnTimestamp };
  writeFileSync(file, `${JSON.stringify(saved)}\n`, { mode: 0o600 });
  chmodSync(file, 0o600);
}

export function forgetToken(): boolean {
  const file = tokenFilePath();
  if (!existsSync(file)) return false;
  rmSync(file);
  return true;
}

function scopeOf(conn: Connection): string {
  if (!conn.scope)
    throw new CliError(
      'no API scope to sign in for: set HPCJOB_SCOPE or "scope" in the profile (e.g. api://hpc-jobs/.default), or pass an operator key with --key',
      ExitCode.Usage,
    );
  return conn.scope;
}

function credentialOptions(conn: Connection) {
  // A non-Microsoft authority (the local stack's issuer) is not in Entra's instance metadata.
  const custom = Boolean(conn.authorityHost && conn.authorityHost !== DEFAULT_AUTHORITY);
  return { authorityHost: conn.authorityHost ?? DEFAULT_AUTHORITY, ...(custom ? { disableInstanceDiscovery: true } : {}) };
}

export async function deviceCodeCredential(conn: Connection, prompt: (message: string) => void): Promise<TokenCredential> {
  if (!conn.tenantId || !conn.clientId) {
    throw new CliError(
      'device code sign-in needs the tenant and the CLI\'s client id: set HPCJOB_TENANT_ID and HPCJOB_CLIENT_ID (or "tenantId"/"clientId" in the profile)',
      ExitCode.Usage,
    );
  }
  const { DeviceCodeCredential } = await import('@azure/identity');
  return new DeviceCodeCredential({
    tenantId: conn.tenantId,
    clientId: conn.clientId,
    ...credentialOptions(conn),
    userPromptCallback: (info) => prompt(info.message),
  });
}

/** The device code flow, always (hpcjob login): the token is saved for later commands. */
export async function login(conn: Connection, prompt: (message: string) => void): Promise<AccessToken> {
  const scope = scopeOf(conn);
  let token: AccessToken | null;
  try {
    token = await (await deviceCodeCredential(conn, prompt)).getToken(scope);
  } catch (err) {
    throw new CliError(`sign-in failed: ${(err as Error).message}`, ExitCode.Api);
  }
  if (!token) throw new CliError('sign-in failed: no token', ExitCode.Api);
  save(conn, scope, token);
  return token;
}

export interface TokenSourceOptions {
  /** Whether the device code flow may prompt (stdin and stderr are a terminal). */
  interactive: boolean;
  prompt: (message: string) => void;
}

/**
 * A function giving the bearer token for each request (see the order above); undefined when no API scope is
 * configured (the request then goes without credentials, for a deployment that allows anonymous callers).
 */
export function tokenSource(conn: Connection, opts: TokenSourceOptions): () => Promise<string | undefined> {
  let cached: AccessToken | undefined;
  return async () => {
    if (!conn.scope) return undefined;
    if (cached && cached.expiresOnTimestamp - Date.now() > 60_000) return cached.token;
    const scope = scopeOf(conn);
    const saved = readSaved(conn, scope);
    if (saved) return saved.accessToken;
    const { DefaultAzureCredential } = await import('@azure/identity');
    try {
      const chained = await new DefaultAzureCredential({ ...(conn.tenantId ? { tenantId: conn.tenantId } : {}), ...credentialOptions(conn) }).getToken(scope);
      if (chained) return (cached = chained).token;
    } catch {
      // Nothing in the chain could sign in here: fall through to the device code flow or the advice below.
    }
    if (!opts.interactive) throw new AccessRefused('not signed in: run `hpcjob login`, sign in with `az login`, or pass an operator key with --key', 401);
    cached = await login(conn, opts.prompt);
    return cached.token;
  };
}
