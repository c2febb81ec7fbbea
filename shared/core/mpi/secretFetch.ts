/**
 * The node-side half of secret references: shell lines, run on the master node at task start before the launcher,
 * that read each referenced Key Vault secret with the pool's managed identity and export it into the task's own
 * processes only. The control plane builds these lines from references (vault, name, version); no value ever passes
 * through it, its storage or its answers.
 *
 * As Key Vault's REST API is used by any client (learn.microsoft.com/rest/api/keyvault/secrets/get-secret/get-secret):
 *  1. an Entra token for the resource `https://vault.azure.net` from the node's instance metadata service (IMDS,
 *     169.254.169.254, or AZURE_POD_IDENTITY_AUTHORITY_HOST where the emulator puts it), for the pool identity named
 *     by client id (MPIJOB_KEYVAULT_CLIENT_ID, set in the task environment by the activity that adds the task);
 *  2. `GET <vault URL>/secrets/<name>[/<version>]?api-version=7.4` with the token; the vault URL is the deployment's
 *     template (MPIJOB_KEYVAULT_URL_TEMPLATE, "https://{vault}.vault.azure.net" in Azure) with the vault's name.
 *
 * The token and values stay in shell variables and pipes: the bearer header reaches curl through its config on stdin
 * (`-K -`, printf being a builtin), so neither the token nor a value is ever in a process's arguments. The JSON
 * answer is read by python3 (every Azure HPC and Ubuntu image has it); `$(…)` drops trailing newlines of a value.
 * A failure names the variable and Key Vault's error code and message (which never contain the value), and stops
 * the task before any rank starts.
 */
import { PlanningError } from '../planning/errors';
import { shellQuote } from './shellQuote';

/** Key Vault's Entra audience (what IMDS is asked for). */
export const KEY_VAULT_AUDIENCE = 'https://vault.azure.net';
/** The Key Vault REST API version of the GET (the current GA version). */
export const KEY_VAULT_API_VERSION = '7.4';
/** Task environment variables the activity sets (non-secret: a client id and a URL template). */
export const KEY_VAULT_CLIENT_ID_ENV = 'MPIJOB_KEYVAULT_CLIENT_ID';
export const KEY_VAULT_URL_TEMPLATE_ENV = 'MPIJOB_KEYVAULT_URL_TEMPLATE';
/** Azure's vault URL shape; the deployment setting KEY_VAULT_URL_TEMPLATE may name another (sovereign clouds, the local stack). */
export const DEFAULT_KEY_VAULT_URL_TEMPLATE = 'https://{vault}.vault.azure.net';

/** One environment variable of the task whose value is a Key Vault secret. */
export interface SecretFetch {
  /** The variable exported to the task's processes. */
  env: string;
  /** The vault's name (already reduced from a URI). */
  vault: string;
  name: string;
  version?: string;
  /** Where the reference came from in the spec, for the error message (e.g. "mpi.env.PODKEY"). */
  from: string;
}

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;
const VAULT = /^[a-z][a-z0-9-]{1,22}[a-z0-9]$/;
const SECRET = /^[A-Za-z0-9-]{1,127}$/;
const VERSION = /^[0-9a-f]{32}$/;
const FROM = /^[A-Za-z0-9_.[\]-]{1,200}$/;

function check(f: SecretFetch): void {
  if (!ENV_NAME.test(f.env)) throw new PlanningError("a secret's variable must be an environment variable name", { env: f.env });
  if (!VAULT.test(f.vault)) throw new PlanningError("a secret's vault must be a lowercase Key Vault name", { vault: f.vault });
  if (!SECRET.test(f.name)) throw new PlanningError('a Key Vault secret name is 1-127 letters, digits and hyphens', { name: f.name });
  if (f.version !== undefined && !VERSION.test(f.version))
    throw new PlanningError('a Key Vault secret version is 32 lowercase hex digits', { version: f.version });
  if (!FROM.test(f.from)) throw new PlanningError("a secret's origin must be a field path", { from: f.from });
}

const PY_VALUE = 'import json,sys; sys.stdout.write(json.load(sys.stdin)["value"])';
const PY_ERROR =
  'import json,sys\ntry:\n e=json.load(sys.stdin).get("error",{}); sys.stdout.write("%s: %s" % (e.get("code"), e.get("message")))\nexcept Exception:\n sys.stdout.write("no Key Vault error body")';

/**
 * Lines for a strict (`set -euo pipefail`) script that export every secret, or stop the script naming the first that
 * could not be read. Empty for no secrets. The helper variables are unset at the end.
 */
export function secretFetchLines(fetches: readonly SecretFetch[]): string[] {
  if (!fetches.length) return [];
  const names = new Set<string>();
  for (const f of fetches) {
    check(f);
    if (names.has(f.env)) throw new PlanningError('two secrets are exported into the same variable', { env: f.env });
    names.add(f.env);
  }
  const resource = encodeURIComponent(KEY_VAULT_AUDIENCE);
  const lines = [
    'mpijob_kv_imds="${AZURE_POD_IDENTITY_AUTHORITY_HOST:-http://169.254.169.254}"',
    `mpijob_kv_token=$(curl -sS --fail --retry 3 -H Metadata:true "$mpijob_kv_imds/metadata/identity/oauth2/token?api-version=2018-02-01&resource=${resource}\${${KEY_VAULT_CLIENT_ID_ENV}:+&client_id=$${KEY_VAULT_CLIENT_ID_ENV}}" | sed -n 's/.*"access_token" *: *"\\([^"]*\\)".*/\\1/p' || true)`,
    `if [ -z "$mpijob_kv_token" ]; then echo "[mpijob] secrets: no Key Vault token for the pool identity \${${KEY_VAULT_CLIENT_ID_ENV}:-(default)} from the instance metadata service" >&2; exit 1; fi`,
    // Not as a ${VAR:-default}: the template's own braces would end the expansion.
    `mpijob_kv_template="\${${KEY_VAULT_URL_TEMPLATE_ENV}:-}"; if [ -z "$mpijob_kv_template" ]; then mpijob_kv_template=${shellQuote(DEFAULT_KEY_VAULT_URL_TEMPLATE)}; fi`,
    // $1 vault, $2 secret path (name[/version]), $3 where the reference is in the spec; prints the value.
    'mpijob_kv_get() { local url body code; url="${mpijob_kv_template//\\{vault\\}/$1}/secrets/$2?api-version=' +
      KEY_VAULT_API_VERSION +
      '"; ' +
      'if ! body=$(printf \'header = "Authorization: Bearer %s"\\n\' "$mpijob_kv_token" | curl -sS --retry 3 -K - -w \'\\n%{http_code}\' "$url"); then echo "[mpijob] $3: Key Vault $1 is unreachable from this node" >&2; return 1; fi; ' +
      "code=${body##*$'\\n'}; body=${body%$'\\n'*}; " +
      `if [ "$code" != 200 ]; then echo "[mpijob] $3: Key Vault $1 answered HTTP $code for secret $2: $(printf '%s' "$body" | python3 -c ${shellQuote(PY_ERROR)})" >&2; return 1; fi; ` +
      `printf '%s' "$body" | python3 -c ${shellQuote(PY_VALUE)}; }`,
  ];
  for (const f of fetches) {
    const secretPath = f.version ? `${f.name}/${f.version}` : f.name;
    lines.push(`if ! mpijob_kv_value=$(mpijob_kv_get ${f.vault} ${secretPath} ${shellQuote(f.from)}); then exit 1; fi`);
    lines.push(`export ${f.env}="$mpijob_kv_value"`);
  }
  lines.push('unset mpijob_kv_token mpijob_kv_value mpijob_kv_imds mpijob_kv_template; unset -f mpijob_kv_get');
  return lines;
}
