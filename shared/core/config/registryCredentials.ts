/**
 * Registry credentials by reference: REGISTRY_CREDENTIALS lists, per registry server, the app settings that hold a
 * password or token for it (`server=SETTING[,server=SETTING…]`). In Azure each such setting is a Key Vault reference
 * (`@Microsoft.KeyVault(…)`) the platform resolves with the app identity, so the secret is never in the template or
 * the job spec. A job names the setting (container.registry.identity.secretRef); it may name only a setting listed
 * here for the server it pulls from, so a job can neither read another app setting nor send a secret to a registry
 * of its choosing.
 */

export interface RegistryCredential {
  /** Registry host (with optional port), lower case. */
  server: string;
  /** The app setting holding the secret. */
  setting: string;
  /** Its value. Never logged, never in a command line: it reaches a node only as a task environment variable. */
  secret: string;
}

const SETTING_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;
const SERVER = /^[a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?(:\d{1,5})?$/;

/** Settings the app itself reads: never a registry secret, whatever a deployment lists. */
const RESERVED =
  /^(AzureWebJobs|WEBSITE_|FUNCTIONS_|APPSETTING_|AZURE_|IDENTITY_|MSI_|BATCH_|OPERATOR_API_KEYS$|AUTH_|STAGING_ACCOUNTS$|DATA_ACCOUNTS$|APPLICATIONINSIGHTS_)/i;

export function parseRegistryCredentials(list: string | undefined, env: Record<string, string | undefined>, problems: string[]): RegistryCredential[] {
  const out: RegistryCredential[] = [];
  (list ?? '').split(',').forEach((raw, i) => {
    const entry = raw.trim();
    if (!entry) return;
    const eq = entry.indexOf('=');
    const server = eq < 0 ? '' : entry.slice(0, eq).trim().toLowerCase();
    const setting = eq < 0 ? '' : entry.slice(eq + 1).trim();
    const where = `REGISTRY_CREDENTIALS: entry ${i + 1}`;
    if (!SERVER.test(server) || !SETTING_NAME.test(setting)) {
      problems.push(`${where} must be "<registry server>=<app setting name>", e.g. "myregistry.azurecr.io=REGISTRY_MYREGISTRY_TOKEN"`);
      return;
    }
    if (RESERVED.test(setting)) {
      problems.push(`${where}: ${setting} is a setting of the app or the platform, never a registry secret`);
      return;
    }
    if (out.some((c) => c.setting === setting && c.server !== server)) {
      problems.push(`${where}: ${setting} is already the secret of ${out.find((c) => c.setting === setting)?.server}; one secret serves one registry`);
      return;
    }
    const value = (env[setting] ?? '').trim();
    // Say which setting is wrong, never what it holds.
    if (!value) problems.push(`${where}: the app setting ${setting} is not set or empty`);
    else if (/^@Microsoft\.KeyVault\(/i.test(value))
      problems.push(`${where}: ${setting} is an unresolved Key Vault reference (the secret is missing or the app identity cannot read it)`);
    else out.push({ server, setting, secret: value });
  });
  return out;
}
