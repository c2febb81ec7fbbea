/**
 * Credentials in Shipyard files: passwords, account keys, tokens, SAS URLs, connection strings, and environment
 * variables whose names say they hold one. They are found by path before any mapping runs, so no mapper copies such a
 * value into a spec, a comment or the report: the report names the path, never the value.
 */
import type { ShipyardFileRole, ShipyardSource } from './source';
import { joinIndex, joinKey } from './report';

export interface SecretFinding {
  role: ShipyardFileRole;
  file: string;
  path: string;
  line?: number;
  /** What kind of credential the path holds (never the value). */
  kind: 'password' | 'account key' | 'token' | 'SAS' | 'connection string' | 'private key' | 'secret value';
}

/** Keys whose value is a credential. */
const SECRET_KEY_RE =
  /^(?:password|passwd|pass|admin_password|secret|client_secret|auth_key|account_key|access_key|api_key|instrumentation_key|key|token|sas|sas_token|sas_key|passphrase|connection_string|private_key_data)$|_(?:password|passwd|secret|auth_key|account_key|access_key|api_key|token|sas|passphrase|connection_string)$/i;
/** Keys that look like credentials but hold references, public keys, fingerprints or file paths. */
const NOT_SECRET_KEYS = new Set([
  'ssh_public_key',
  'ssh_public_key_data',
  'ssh_private_key',
  'rsa_private_key_pem',
  'key_file',
  'signing_key',
  'fingerprint',
  'x509_cert_sha1_thumbprint',
  'sha1_thumbprint',
  'generated_sas_expiry_days',
]);
/** Environment variable names that announce a credential (PWD is the working directory, not a password). */
const SECRET_ENV_RE = /(?:^|_)(?:PASSWORD|PASSWD|SECRET|TOKEN|KEY|ACCESS_?KEY|API_?KEY|SAS|CONNECTION_?STRING|CREDENTIALS?)(?:_|$)/i;
/** Values that carry a credential whatever their key: storage connection strings and SAS query strings. */
const SECRET_VALUE_RE = /AccountKey=|SharedAccessSignature=|[?&]sig=[^&\s]+|(?:^|[,\s])(?:password|passwd|pass|pwd)=[^,\s]/i;

export function findSecrets(sources: readonly ShipyardSource[]): SecretFinding[] {
  const out: SecretFinding[] = [];
  for (const s of sources)
    walk(s.value, '', undefined, (path, kind) => {
      const line = s.lineOf(path);
      out.push({ role: s.role, file: s.name, path, kind, ...(line !== undefined ? { line } : {}) });
    });
  return out;
}

function walk(value: unknown, path: string, key: string | undefined, found: (path: string, kind: SecretFinding['kind']) => void): void {
  if (Array.isArray(value)) {
    value.forEach((v, i) => walk(v, joinIndex(path, i), undefined, found));
    return;
  }
  if (value !== null && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) walk(v, joinKey(path, k), k, found);
    return;
  }
  if (value === null || value === undefined || value === '') return;
  const kind = classify(key, value, path);
  if (kind) found(path, kind);
}

function classify(key: string | undefined, value: unknown, path: string): SecretFinding['kind'] | undefined {
  const text = String(value);
  if (key !== undefined && isEnvVarPath(path) && SECRET_ENV_RE.test(key)) return 'secret value';
  if (key !== undefined && !NOT_SECRET_KEYS.has(key) && !/_keyvault_secret_id$/.test(key) && SECRET_KEY_RE.test(key)) {
    if (/connection_string/i.test(key)) return 'connection string';
    if (/account_key|access_key/i.test(key)) return 'account key';
    if (/token|api_key|auth_key|instrumentation_key/i.test(key)) return 'token';
    if (/sas/i.test(key)) return 'SAS';
    return 'password';
  }
  if (/AccountKey=/i.test(text)) return 'connection string';
  if (/(?:^|[,\s])(?:password|passwd|pass|pwd)=/i.test(text)) return 'password';
  if (SECRET_VALUE_RE.test(text)) return 'SAS';
  if (/-----BEGIN [A-Z ]*PRIVATE KEY-----/.test(text)) return 'private key';
  return undefined;
}

/** True when the path is a direct child of an environment_variables mapping (a variable, not something deeper). */
function isEnvVarPath(path: string): boolean {
  return /environment_variables(?:\.[A-Za-z_$][A-Za-z0-9_$]*|\["(?:[^"\\]|\\.)*"\])$/.test(path);
}

/** Lookup of findings by file and path. */
export class SecretIndex {
  private readonly paths: Set<string>;

  constructor(readonly findings: readonly SecretFinding[]) {
    this.paths = new Set(findings.map((f) => `${f.role}\u0000${f.path}`));
  }

  has(role: ShipyardFileRole, path: string): boolean {
    return this.paths.has(`${role}\u0000${path}`);
  }

  /** Whether the path or anything below it holds a credential. */
  within(role: ShipyardFileRole, path: string): boolean {
    return this.findings.some((f) => f.role === role && (f.path === path || f.path.startsWith(`${path}.`) || f.path.startsWith(`${path}[`)));
  }
}

/** What replaces a credential in a value the importer reads: never the credential, and a valid word where one is needed. */
export const REDACTED = 'REDACTED';

/**
 * The value with its credential removed: a SAS query string dropped from a URL, `password=…` options blanked, any other
 * secret value replaced whole. Mappers only ever see this, so no mapper can copy a credential into a spec, a comment or
 * the report, even through a field that is not meant to hold one (a pool id, a command line).
 */
export function redactValue(value: string, kind: SecretFinding['kind']): string {
  if (kind === 'SAS') {
    const stripped = value.replace(/\?[^\s"']*(?:sig|se|sv|sp)=[^\s"']*/gi, '');
    return SECRET_VALUE_RE.test(stripped) ? REDACTED : stripped;
  }
  if (kind === 'password' && /(?:^|[,\s])(?:password|passwd|pass|pwd)=/i.test(value)) {
    return value.replace(/((?:^|[,\s])(?:password|passwd|pass|pwd)=)[^,\s]*/gi, `$1${REDACTED}`);
  }
  return REDACTED;
}

/** A copy of the source whose secret values are redacted (value and scalar text alike). */
export function redactSource(source: ShipyardSource, findings: readonly SecretFinding[]): ShipyardSource {
  const mine = findings.filter((f) => f.role === source.role);
  if (!mine.length) return source;
  const value = structuredClone(source.value);
  const byPath = new Map(mine.map((f) => [f.path, f.kind]));
  const walk = (v: unknown, path: string): unknown => {
    if (Array.isArray(v)) return v.map((x, i) => walk(x, joinIndex(path, i)));
    if (v !== null && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, walk(x, joinKey(path, k))]));
    const kind = byPath.get(path);
    return kind === undefined || v === null || v === undefined ? v : redactValue(String(v), kind);
  };
  const redacted = walk(value, '');
  return {
    ...source,
    value: redacted,
    scalarText: (path) => {
      const kind = byPath.get(path);
      const text = source.scalarText(path);
      return kind === undefined || text === undefined ? text : redactValue(text, kind);
    },
  };
}
