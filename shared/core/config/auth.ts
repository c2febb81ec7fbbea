/**
 * Who may call the job API: the settings of the app's own authentication (shared/adapters/auth). Parsed here, beside the
 * rest of the configuration, so nothing else reads these variables. See docs/security.md.
 *
 *   AUTH_ISSUER              the Entra ID issuer, https://login.microsoftonline.com/<tenant id>/v2.0 (unset: no bearer tokens)
 *   AUTH_AUDIENCES           comma-separated accepted `aud` values: the API's application id URI and/or client id
 *   AUTH_METADATA_URL        OpenID metadata; default <AUTH_ISSUER>/.well-known/openid-configuration
 *   AUTH_CLOCK_SKEW_SECONDS  tolerance on exp/nbf (default 120)
 *   OPERATOR_API_KEYS        comma-separated operator keys (x-functions-key header or ?code=); in Azure a Key Vault reference
 *   ANONYMOUS_ROLE           none (default) | reader | submitter | admin: what a caller without credentials may do
 */
import { z } from 'zod';

export const ROLES = ['reader', 'submitter', 'admin'] as const;
export type Role = (typeof ROLES)[number];

export interface BearerConfig {
  /** Exact `iss` of accepted tokens (Entra v2: https://login.microsoftonline.com/<tid>/v2.0). */
  issuer: string;
  /** Accepted `aud` values (any one). */
  audiences: string[];
  /** Where the OpenID metadata (and through it the JWKS) is read. */
  metadataUrl: string;
  clockSkewSeconds: number;
}

export interface AuthConfig {
  /** Absent: bearer tokens are not accepted (only operator keys, and anonymous if allowed). */
  bearer?: BearerConfig;
  operatorKeys: string[];
  anonymousRole: Role | 'none';
}

/** Operator keys shorter than this are refused: a key is a password for an admin. */
export const MIN_OPERATOR_KEY_LENGTH = 24;

export const authEnvSchema = {
  AUTH_ISSUER: z.string().trim().optional(),
  AUTH_AUDIENCES: z.string().trim().optional(),
  AUTH_METADATA_URL: z.string().trim().optional(),
  AUTH_CLOCK_SKEW_SECONDS: z.string().trim().optional(),
  OPERATOR_API_KEYS: z.string().optional(),
  ANONYMOUS_ROLE: z.string().trim().optional(),
};

type AuthEnv = { [K in keyof typeof authEnvSchema]?: string };

function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '127.0.0.1' || host === '[::1]';
}

/** An https URL, or http on a loopback host (the local stack's issuer): `what` names the variable in errors. */
function checkedUrl(value: string, what: string, problems: string[]): URL | undefined {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    problems.push(`${what}: must be a URL, got ${JSON.stringify(value)}`);
    return undefined;
  }
  if (url.protocol === 'https:' || (url.protocol === 'http:' && isLoopback(url.hostname))) return url;
  problems.push(`${what}: must be an https URL (http only on a loopback host), got ${JSON.stringify(value)}`);
  return undefined;
}

/** Reads the authentication settings; every problem is pushed to `problems` with the variable's name. */
export function parseAuthConfig(env: AuthEnv, problems: string[]): AuthConfig {
  const anonymous = (env.ANONYMOUS_ROLE || 'none').toLowerCase();
  let anonymousRole: AuthConfig['anonymousRole'] = 'none';
  if (anonymous === 'none' || (ROLES as readonly string[]).includes(anonymous)) anonymousRole = anonymous as AuthConfig['anonymousRole'];
  else problems.push(`ANONYMOUS_ROLE: must be one of none, ${ROLES.join(', ')}, got ${JSON.stringify(env.ANONYMOUS_ROLE)}`);

  // App Service leaves a Key Vault reference it cannot resolve as the setting's text: that text must never be a key.
  const unresolved = /^@Microsoft\.KeyVault\(/i.test((env.OPERATOR_API_KEYS ?? '').trim());
  if (unresolved) problems.push('OPERATOR_API_KEYS: an unresolved Key Vault reference (the secret is missing or the app identity cannot read it)');
  const operatorKeys = unresolved
    ? []
    : (env.OPERATOR_API_KEYS ?? '')
        .split(',')
        .map((k) => k.trim())
        .filter(Boolean);
  operatorKeys.forEach((k, i) => {
    if (k.length < MIN_OPERATOR_KEY_LENGTH) problems.push(`OPERATOR_API_KEYS: key ${i + 1} is shorter than ${MIN_OPERATOR_KEY_LENGTH} characters`);
  });

  let bearer: BearerConfig | undefined;
  const skewText = env.AUTH_CLOCK_SKEW_SECONDS || '120';
  const clockSkewSeconds = Number(skewText);
  if (!Number.isInteger(clockSkewSeconds) || clockSkewSeconds < 0 || clockSkewSeconds > 600) {
    problems.push(`AUTH_CLOCK_SKEW_SECONDS: must be an integer in [0, 600], got "${skewText}"`);
  }
  if (env.AUTH_ISSUER) {
    const issuer = checkedUrl(env.AUTH_ISSUER, 'AUTH_ISSUER', problems);
    const audiences = (env.AUTH_AUDIENCES ?? '')
      .split(',')
      .map((a) => a.trim())
      .filter(Boolean);
    if (!audiences.length) problems.push("AUTH_AUDIENCES is required with AUTH_ISSUER (the API's application id URI and/or client id)");
    const issuerText = env.AUTH_ISSUER.replace(/\/+$/, '');
    const metadataText = env.AUTH_METADATA_URL || `${issuerText}/.well-known/openid-configuration`;
    // A derived metadata URL is only as good as the issuer: report the issuer once, not twice.
    const metadata = issuer || env.AUTH_METADATA_URL ? checkedUrl(metadataText, 'AUTH_METADATA_URL', problems) : undefined;
    if (issuer && metadata && audiences.length) {
      // Entra's issuer has no trailing slash (v2.0); keep it exactly as configured otherwise.
      bearer = { issuer: env.AUTH_ISSUER, audiences, metadataUrl: metadata.toString(), clockSkewSeconds };
    }
  } else if (env.AUTH_AUDIENCES || env.AUTH_METADATA_URL) {
    problems.push('AUTH_ISSUER is required when AUTH_AUDIENCES or AUTH_METADATA_URL is set');
  }
  return { bearer, operatorKeys, anonymousRole };
}
