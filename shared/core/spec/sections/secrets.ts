/**
 * Secret references and licence servers: what a job may say about the secrets and licences its program needs,
 * without ever carrying a secret. A reference names a Key Vault secret (`{ secretRef: { vault, name, version? } }`);
 * the value is fetched on the node at task start with the pool's managed identity (shared/core/mpi/secretFetch.ts) and
 * lives only in the task's processes. The control plane stores and shows the reference, never the value.
 *
 * Key Vault's own naming rules (learn.microsoft.com/azure/key-vault/general/about-keys-secrets-certificates#objects-identifiers-and-versioning
 * and …/general/overview "vault name"): a vault name is 3–24 characters, letters, digits and hyphens, starting with
 * a letter, ending with a letter or digit, no two hyphens in a row; a secret name is 1–127 letters, digits and
 * hyphens; a version is 32 lowercase hex digits.
 */
import { z } from 'zod';
import { classifyHost } from '../address';

export const KEY_VAULT_NAME_RE = /^(?=.{3,24}$)[A-Za-z](?!.*--)[A-Za-z0-9-]*[A-Za-z0-9]$/;
export const KEY_VAULT_SECRET_NAME_RE = /^[A-Za-z0-9-]{1,127}$/;
export const KEY_VAULT_VERSION_RE = /^[0-9a-f]{32}$/;
/** A vault URI of any Azure cloud (public, China, US Government), with an optional trailing slash. */
export const KEY_VAULT_URI_RE = /^https:\/\/([A-Za-z0-9-]{3,24})\.vault\.(?:azure\.net|azure\.cn|usgovcloudapi\.net)\/?$/;

/** The vault name a spec's `vault` names (a name as given, or the name inside a vault URI). */
export function vaultNameOf(vault: string): string {
  const m = KEY_VAULT_URI_RE.exec(vault);
  return (m ? m[1] : vault).toLowerCase();
}

const VAULT_RULE =
  'a Key Vault name (3–24 letters, digits and hyphens, starting with a letter, ending with a letter or digit, no "--") or its URI "https://<name>.vault.azure.net"';

export const SecretRefSchema = z
  .strictObject({
    vault: z
      .string({ error: `must be a string: ${VAULT_RULE}` })
      .refine((v) => KEY_VAULT_NAME_RE.test(vaultNameOf(v)) && (KEY_VAULT_NAME_RE.test(v) || KEY_VAULT_URI_RE.test(v)), { error: `must be ${VAULT_RULE}` })
      .meta({
        description:
          "The Key Vault: its name, or its URI (https://<name>.vault.azure.net); the deployment's KEY_VAULT_URL_TEMPLATE turns the name into the URL nodes call.",
      }),
    name: z
      .string({ error: 'must be a string: a Key Vault secret name' })
      .regex(KEY_VAULT_SECRET_NAME_RE, { error: 'must be a Key Vault secret name (1–127 letters, digits and hyphens)' })
      .meta({ description: "The secret's name in the vault." }),
    version: z
      .string({ error: 'must be a string: a Key Vault secret version' })
      .regex(KEY_VAULT_VERSION_RE, { error: 'must be a Key Vault secret version (32 lowercase hex digits)' })
      .optional()
      .meta({ description: 'A fixed version; default: the current one when the task starts.' }),
  })
  .meta({
    description:
      "A Key Vault secret, read on the node at task start with the pool's managed identity (it needs the Key Vault Secrets User role on the vault). Only this reference is stored or shown; never the value.",
  });

export type SecretRef = z.output<typeof SecretRefSchema>;

export const SecretEnvValueSchema = z
  .strictObject({ secretRef: SecretRefSchema })
  .meta({ description: 'An environment value read from Key Vault on the node (never stored or shown by the control plane).' });

export type SecretEnvValue = z.output<typeof SecretEnvValueSchema>;

export function isSecretEnvValue(v: unknown): v is SecretEnvValue {
  return typeof v === 'object' && v !== null && 'secretRef' in v;
}

/** A licence server's host: a DNS name or an IPv4 literal (IPv6 servers are rare for FlexLM and not taken). */
const LICENSE_HOST_RE = /^(?=.{1,253}$)(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$/;

/** "host:port" → its parts, or undefined when it is not that shape. */
export function parseLicenseServer(server: string): { host: string; port: number } | undefined {
  const m = /^([^:\s]+):(\d{1,5})$/.exec(server);
  if (!m || !LICENSE_HOST_RE.test(m[1])) return undefined;
  const port = Number(m[2]);
  return port >= 1 && port <= 65535 ? { host: m[1].toLowerCase(), port } : undefined;
}

/**
 * Hosts no licence server can be, even on a private network: the instance metadata service and the wire server hand
 * out the node's identity and platform state. Loopback (the node itself) is refused at intake unless the deployment
 * lists the host in ALLOWED_INTERNAL_HOSTS (the local stack, whose nodes share 127.0.0.1; secretPolicy.ts). Private ranges are allowed on purpose:
 * licence servers live on the customer's network (a head node, a VM in the pool's subnet), reached from the nodes
 * only, never from the control plane; preflight only opens a TCP connection to them from the job's own nodes.
 */
function forbiddenLicenseHost(host: string): string | undefined {
  const verdict = classifyHost(host);
  if (!verdict.internal) return undefined;
  return /instance metadata|wire server|"this network"|multicast|reserved/.test(verdict.why) ? verdict.why : undefined;
}

const port = (what: string) =>
  z
    .number({ error: `must be a number: ${what}` })
    .int({ error: `must be a whole number: ${what}` })
    .min(1, { error: 'must be 1..65535' })
    .max(65535, { error: 'must be 1..65535' });

export const LicenseSchema = z
  .strictObject({
    kind: z
      .literal('flexlm', { error: 'must be "flexlm" (the only licence manager known so far)' })
      .meta({ description: 'The licence manager: FlexLM/FlexNet (lmgrd), the one ANSYS, Siemens (STAR-CCM+), Altair and most HPC codes use.' }),
    server: z
      .string({ error: 'must be a string: "host:port" of the licence server' })
      .superRefine((v, ctx) => {
        const p = parseLicenseServer(v);
        if (!p) {
          ctx.addIssue({
            code: 'custom',
            message: 'must be "host:port": a DNS name or IPv4 address and the lmgrd port (1..65535), e.g. "lic01.corp.example:27000" or "10.1.0.4:27000"',
          });
          return;
        }
        const why = forbiddenLicenseHost(p.host);
        if (why) ctx.addIssue({ code: 'custom', message: `names ${why}; a licence server must be another host (private addresses are fine)` });
      })
      .meta({
        description:
          'lmgrd\'s "host:port". Private addresses are expected (licence servers live in the customer\'s network); loopback, IMDS and the wire server are refused. Exported as LM_LICENSE_FILE=port@host.',
      }),
    vendorPort: port("the vendor daemon's TCP port")
      .optional()
      .meta({ description: "The vendor daemon's fixed port (the VENDOR line's port=), when the licence file pins one: preflight checks it too." }),
    secretRef: SecretRefSchema.optional().meta({
      description: "A licence key or password in Key Vault, read on the node and exported as MPIJOB_LICENSE_<n>_KEY (n: this entry's index).",
    }),
  })
  .meta({ description: 'A licence server the program checks licences out from.' });

export type License = z.output<typeof LicenseSchema>;

export const LicensesSchema = z
  .array(LicenseSchema, { error: 'must be a list of { kind: "flexlm", server: "host:port", vendorPort?, secretRef? }' })
  .max(8, { error: 'must list at most 8 licence servers' })
  .default([])
  .meta({
    description:
      'Licence servers: exported to every rank (FlexLM: LM_LICENSE_FILE, all servers joined with ":"), and checked from every node in preflight (TCP to the server port and the vendor port).',
  });

/** The environment variable a licence's key arrives in. */
export const licenseKeyEnv = (index: number) => `MPIJOB_LICENSE_${index}_KEY`;

/**
 * FlexLM's client search path: `port@host` per server, joined with ":" (the FlexNet Publisher License
 * Administration Guide, "Setting the path with an environment variable"; Windows uses ";", Linux nodes ":").
 */
export function lmLicenseFile(licenses: readonly License[]): string | undefined {
  const entries = licenses
    .filter((l) => l.kind === 'flexlm')
    .map((l) => {
      const p = parseLicenseServer(l.server) as { host: string; port: number };
      return `${p.port}@${p.host}`;
    });
  return entries.length ? entries.join(':') : undefined;
}
