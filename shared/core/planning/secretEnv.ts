/**
 * What a job's secret references and licence servers become in its MPI task, by reference only: the secrets the
 * master reads from Key Vault at task start (shared/core/mpi/secretFetch.ts), the plain environment left to the task's
 * environment settings (with LM_LICENSE_FILE for the licence servers), and the two non-secret settings the activity
 * adds to the task when it has secrets (the pool identity's client id and the deployment's vault URL template).
 * Pure: the orchestration's history holds only references.
 */
import type { JobSpec } from '../spec/schema';
import { isSecretEnvValue, licenseKeyEnv, lmLicenseFile, vaultNameOf, type SecretRef } from '../spec/sections/secrets';
import { DEFAULT_KEY_VAULT_URL_TEMPLATE, KEY_VAULT_CLIENT_ID_ENV, KEY_VAULT_URL_TEMPLATE_ENV, type SecretFetch } from '../mpi/secretFetch';

const fetchOf = (env: string, ref: SecretRef, from: string): SecretFetch => ({
  env,
  vault: vaultNameOf(ref.vault),
  name: ref.name,
  ...(ref.version ? { version: ref.version } : {}),
  from,
});

/** Every Key Vault secret the job's task reads: mpi.env references, then licence keys. */
export function jobSecrets(spec: Pick<JobSpec, 'mpi' | 'licenses'>): SecretFetch[] {
  const fromEnv = Object.entries(spec.mpi.env)
    .filter((e): e is [string, { secretRef: SecretRef }] => isSecretEnvValue(e[1]))
    .map(([name, v]) => fetchOf(name, v.secretRef, `mpi.env.${name}`));
  const fromLicenses = (spec.licenses ?? []).flatMap((l, i) => (l.secretRef ? [fetchOf(licenseKeyEnv(i), l.secretRef, `licenses[${i}].secretRef`)] : []));
  return [...fromEnv, ...fromLicenses];
}

/** The job's plain environment: mpi.env's string values, plus LM_LICENSE_FILE for FlexLM servers. */
export function plainEnv(spec: Pick<JobSpec, 'mpi' | 'licenses'>): Record<string, string> {
  const env = Object.fromEntries(Object.entries(spec.mpi.env).filter((e): e is [string, string] => typeof e[1] === 'string'));
  const lm = lmLicenseFile(spec.licenses ?? []);
  return lm === undefined ? env : { ...env, LM_LICENSE_FILE: lm };
}

/** The deployment's side of Key Vault access: whom the node asks IMDS for, and how a vault name becomes a URL. */
export interface KeyVaultAccess {
  /** The pool identity's client id; undefined: IMDS's only identity of the node. */
  clientId?: string;
  /** "https://{vault}.vault.azure.net" in Azure (KEY_VAULT_URL_TEMPLATE). */
  urlTemplate?: string;
}

/** The non-secret task environment a task that reads secrets gets from the activity that adds it. */
export function keyVaultTaskEnvironment(access: KeyVaultAccess): { name: string; value: string }[] {
  return [
    ...(access.clientId ? [{ name: KEY_VAULT_CLIENT_ID_ENV, value: access.clientId }] : []),
    { name: KEY_VAULT_URL_TEMPLATE_ENV, value: access.urlTemplate ?? DEFAULT_KEY_VAULT_URL_TEMPLATE },
  ];
}
