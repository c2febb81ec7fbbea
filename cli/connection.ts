/**
 * Where the API is and how to sign in: flags first, then the environment (HPCJOB_ENDPOINT, HPCJOB_KEY,
 * HPCJOB_TENANT_ID, HPCJOB_CLIENT_ID, HPCJOB_SCOPE, HPCJOB_AUTHORITY_HOST), then the profile file (--profile
 * <file>, else ~/.config/hpcjob/config.json). Each value is taken from the first place that has it, so a profile
 * can hold the endpoint and tenant while the key comes from the environment.
 */
import { existsSync, readFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { CliError, ExitCode } from './errors';

export interface ConnectionFlags {
  endpoint?: string;
  key?: string;
  profile?: string;
}

/** How the CLI gets Entra ID tokens for the API (cli/auth.ts); each only when configured. */
export interface SignInSettings {
  /** The Entra ID tenant (directory) id. */
  tenantId?: string;
  /** The CLI's own app registration (a public client) for the device code flow. */
  clientId?: string;
  /** The API's scope, e.g. api://hpc-jobs/.default. */
  scope?: string;
  /** Default https://login.microsoftonline.com; the local stack's issuer locally. */
  authorityHost?: string;
}

export interface Connection extends SignInSettings {
  endpoint: string;
  key?: string;
}

const SIGN_IN_SETTINGS = { tenantId: 'HPCJOB_TENANT_ID', clientId: 'HPCJOB_CLIENT_ID', scope: 'HPCJOB_SCOPE', authorityHost: 'HPCJOB_AUTHORITY_HOST' } as const;

type Profile = { endpoint?: string; key?: string } & SignInSettings;

export function defaultProfilePath(env: NodeJS.ProcessEnv = process.env): string {
  const configHome = env.XDG_CONFIG_HOME || path.join(env.HOME || os.homedir(), '.config');
  return path.join(configHome, 'hpcjob', 'config.json');
}

function readProfile(file: string, explicit: boolean): Profile {
  if (!existsSync(file)) {
    if (explicit) throw new CliError(`profile file ${file} does not exist`, ExitCode.Usage);
    return {};
  }
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(file, 'utf8'));
  } catch (err) {
    throw new CliError(`profile file ${file} is not valid JSON: ${(err as Error).message}`, ExitCode.Usage);
  }
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) throw new CliError(`profile file ${file} must hold a JSON object`, ExitCode.Usage);
  const profile: Profile = {};
  for (const k of ['endpoint', 'key', ...(Object.keys(SIGN_IN_SETTINGS) as (keyof SignInSettings)[])] as const) {
    const v = (raw as Record<string, unknown>)[k];
    if (v === undefined) continue;
    if (typeof v !== 'string') throw new CliError(`profile file ${file}: "${k}" must be a string`, ExitCode.Usage);
    profile[k] = v;
  }
  return profile;
}

export function resolveConnection(flags: ConnectionFlags, env: NodeJS.ProcessEnv = process.env): Connection {
  const profilePath = flags.profile ?? defaultProfilePath(env);
  const profile = readProfile(profilePath, flags.profile !== undefined);
  const endpoint = flags.endpoint || env.HPCJOB_ENDPOINT || profile.endpoint;
  if (!endpoint) {
    throw new CliError(`no API endpoint: pass --endpoint, set HPCJOB_ENDPOINT, or put "endpoint" in ${profilePath}`, ExitCode.Usage);
  }
  let url: URL;
  try {
    url = new URL(endpoint);
  } catch {
    throw new CliError(`the endpoint ${JSON.stringify(endpoint)} is not a URL (e.g. https://myapp.azurewebsites.net)`, ExitCode.Usage);
  }
  const key = flags.key || env.HPCJOB_KEY || profile.key;
  const signIn: SignInSettings = {};
  for (const [k, variable] of Object.entries(SIGN_IN_SETTINGS) as [keyof SignInSettings, string][]) {
    const value = env[variable] || profile[k];
    if (value) signIn[k] = value;
  }
  return { endpoint: url.origin + url.pathname.replace(/\/+$/, ''), ...(key ? { key } : {}), ...signIn };
}
