/**
 * infra/main.bicep kept honest without a Bicep compiler or Azure (neither is reachable here): it is read with the
 * small reader of tests/deploy/bicep.ts and checked against the code.
 *   (a) every app setting it sets is one shared/adapters/config reads or one the platform reads (listed below with the
 *       documentation that says so), and the settings it sets, with its parameter defaults, pass loadConfig: every
 *       required setting is there, keyless (no Batch key, host storage by account name);
 *   (b) it assigns exactly the roles of infra/roles.json, on the resources the settings name, and roles.json
 *       still matches the code (each listed call is in its file; every Azure SDK the product imports is covered);
 *   (c) no storage connection string, account key, listKeys or other key-bearing construct appears, and every
 *       resource that has a key-based mode has it switched off;
 *   and infra/README.md's role table is the one generated from roles.json, azure.yaml deploys the package.
 */
import { readFileSync, readdirSync } from 'node:fs';
import * as path from 'node:path';
import { parse as parseYaml } from 'yaml';
import { loadConfig, SETTING_NAMES } from '../../shared/adapters/config';
import { BicepFile, stripComments, type RoleAssignmentDecl } from './bicep';
import { INFRA_README, readRoles, renderRoleTable, withRoleTable } from '../../scripts/infraRoles';

const ROOT = path.resolve(__dirname, '..', '..');
const bicep = new BicepFile(readFileSync(path.join(ROOT, 'infra', 'main.bicep'), 'utf8'));
const roles = readRoles();
const APP = 'app';

/**
 * Settings the Functions platform or the Azure SDK reads, not shared/adapters/config:
 * - AzureWebJobsStorage__credential/__clientId: the host's identity-based storage connection with a user-assigned
 *   identity (https://learn.microsoft.com/azure/azure-functions/functions-reference#connecting-to-host-storage-with-an-identity);
 * - AZURE_CLIENT_ID: DefaultAzureCredential's choice of managed identity (@azure/identity, used by shared/services.ts);
 * - APPLICATIONINSIGHTS_CONNECTION_STRING / _AUTHENTICATION_STRING: host telemetry, sent with the identity
 *   (https://learn.microsoft.com/azure/azure-functions/configure-monitoring).
 */
const PLATFORM_SETTINGS = [
  'AzureWebJobsStorage__credential',
  'AzureWebJobsStorage__clientId',
  'AZURE_CLIENT_ID',
  'APPLICATIONINSIGHTS_CONNECTION_STRING',
  'APPLICATIONINSIGHTS_AUTHENTICATION_STRING',
];

/** Example values for settings whose Bicep value is a resource property (the rest come from the Bicep itself). */
const EXAMPLE_VALUES: Record<string, string> = {
  AzureWebJobsStorage__accountName: 'stexamplehost01',
  BATCH_ACCOUNT_URL: 'https://baexample.westeurope.batch.azure.com',
  BATCH_ACCOUNT_NAME: 'baexample',
  STAGING_ACCOUNTS: 'stg0example,stg1example',
  DATA_ACCOUNTS: 'dataexample',
  DATA_ACCOUNTS_HNS: 'dataexample',
  DEFAULT_OUTPUTS: 'dataexample/results',
  STORAGE_ENDPOINT_SUFFIX: 'core.windows.net',
  AUTH_ISSUER: 'https://login.microsoftonline.com/72f988bf-0000-0000-0000-000000000000/v2.0',
  AUTH_AUDIENCES: 'api://hpc-jobs',
  OPERATOR_API_KEYS: 'an-operator-key-read-from-key-vault-0001',
  EVENTS_TOPIC_ENDPOINT: 'https://evgt-example.westeurope-1.eventgrid.azure.net/api/events',
  BATCH_SUBSCRIPTION_ID: '0b1f6471-1bf0-4dda-aec3-111122223333',
  BATCH_RESOURCE_GROUP: 'hpc-cp',
  POOL_IDENTITY_RESOURCE_ID:
    '/subscriptions/0b1f6471-1bf0-4dda-aec3-111122223333/resourceGroups/hpc-cp/providers/Microsoft.ManagedIdentity/userAssignedIdentities/id-pool-abc',
  POOL_IDENTITY_CLIENT_ID: '6f2b3a10-8d4e-4c1b-9a7f-0123456789ab',
  POOL_SUBNET_ID:
    '/subscriptions/0b1f6471-1bf0-4dda-aec3-111122223333/resourceGroups/hpc-cp/providers/Microsoft.Network/virtualNetworks/vnet-abc/subnets/compute',
};

describe('(a) app settings', () => {
  const settings = bicep.appSettings(APP);
  const params = new Map(bicep.params().map((p) => [p.name, p]));
  const vars = bicep.vars();

  /** The value a setting gets with the template's defaults, where the template alone decides it. */
  function valueOf(name: string, expr: string): string {
    const literal = /^'([^'$]*)'$/.exec(expr);
    if (literal) return literal[1];
    const fromParam = /^string\((\w+)\)$/.exec(expr);
    if (fromParam) {
      const source = params.get(fromParam[1])?.defaultValue ?? vars.get(fromParam[1]);
      if (source === undefined) throw new Error(`${name}: ${fromParam[1]} has no default in main.bicep`);
      return source;
    }
    const example = EXAMPLE_VALUES[name];
    if (example === undefined) throw new Error(`${name} = ${expr}: add an example value to EXAMPLE_VALUES`);
    return example;
  }

  it('sets each setting once, and only settings shared/adapters/config or the platform reads', () => {
    const names = settings.map((s) => s.name);
    expect(names.filter((n, i) => names.indexOf(n) !== i)).toEqual([]);
    const read = new Set([...SETTING_NAMES, 'APP_VERSION', ...PLATFORM_SETTINGS]);
    expect(names.filter((n) => !read.has(n))).toEqual([]);
    // Flex Consumption takes the runtime from functionAppConfig and has no content share: these must not be set.
    for (const deprecated of [
      'FUNCTIONS_WORKER_RUNTIME',
      'FUNCTIONS_EXTENSION_VERSION',
      'WEBSITE_RUN_FROM_PACKAGE',
      'WEBSITE_CONTENTSHARE',
      'WEBSITE_CONTENTAZUREFILECONNECTIONSTRING',
      'WEBSITE_NODE_DEFAULT_VERSION',
      'SCM_DO_BUILD_DURING_DEPLOYMENT',
      'AzureWebJobsStorage',
    ]) {
      expect(names).not.toContain(deprecated);
    }
  });

  it('with the template defaults, the settings pass shared/adapters/config: every required one is set, and nothing needs a key', () => {
    const env = Object.fromEntries(settings.filter((s) => !PLATFORM_SETTINGS.includes(s.name)).map((s) => [s.name, valueOf(s.name, s.value)]));
    const config = loadConfig(env); // throws ConfigError naming each missing or invalid setting
    expect(config.batch.auth).toEqual({ kind: 'aad', scope: 'https://batch.core.windows.net//.default' });
    expect(config.hostStorage.kind).toBe('managedIdentity');
    for (const account of [...config.stagingAccounts, ...config.dataAccess.accounts]) expect(account.kind).toBe('managedIdentity');
    expect(settings.map((s) => s.name)).not.toContain('BATCH_ACCOUNT_KEY');
    // Pools carry the pool identity: they come from the management plane, at Resource Manager's public endpoint.
    expect(config.poolIdentity).toMatchObject({ armEndpoint: 'https://management.azure.com', armScope: 'https://management.azure.com/.default' });
  });

  it('names the pool identity and where the Batch account sits in Resource Manager', () => {
    const value = (n: string) => settings.find((s) => s.name === n)?.value;
    expect(value('POOL_IDENTITY_RESOURCE_ID')).toBe('poolIdentity.id');
    expect(value('POOL_IDENTITY_CLIENT_ID')).toBe('poolIdentity.properties.clientId');
    expect(value('BATCH_SUBSCRIPTION_ID')).toBe('subscription().subscriptionId');
    expect(value('BATCH_RESOURCE_GROUP')).toBe('resourceGroup().name');
    // The Batch account is in this resource group (the template creates it here).
    expect(bicep.code).toMatch(/resource batch 'Microsoft\.Batch\/batchAccounts@2023-11-01' = \{/);
  });

  it('operator keys come from Key Vault, and a reference App Service could not resolve is refused, never taken as a key', () => {
    expect(settings.find((s) => s.name === 'OPERATOR_API_KEYS')?.value).toBe(
      "empty(operatorKeysSecretName) ? '' : '@Microsoft.KeyVault(VaultName=${vault.name};SecretName=${operatorKeysSecretName})'",
    );
    const env = Object.fromEntries(settings.filter((s) => !PLATFORM_SETTINGS.includes(s.name)).map((s) => [s.name, valueOf(s.name, s.value)]));
    expect(() => loadConfig({ ...env, OPERATOR_API_KEYS: '@Microsoft.KeyVault(VaultName=kv-abc;SecretName=operator-api-keys)' })).toThrow(
      /OPERATOR_API_KEYS: an unresolved Key Vault reference/,
    );
  });

  it('points the app identity at the host storage, DefaultAzureCredential and telemetry (user-assigned identity)', () => {
    const value = (n: string) => settings.find((s) => s.name === n)?.value;
    expect(value('AzureWebJobsStorage__accountName')).toBe('hostStorage.name');
    expect(value('AzureWebJobsStorage__credential')).toBe("'managedidentity'");
    expect(value('AzureWebJobsStorage__clientId')).toBe('appIdentity.properties.clientId');
    expect(value('AZURE_CLIENT_ID')).toBe('appIdentity.properties.clientId');
    expect(value('APPLICATIONINSIGHTS_AUTHENTICATION_STRING')).toBe("'ClientId=${appIdentity.properties.clientId};Authorization=AAD'");
  });

  it('tells the app the accounts the roles are assigned on', () => {
    const value = (n: string) => settings.find((s) => s.name === n)?.value;
    // Staging: the staging resources are named from the same list STAGING_ACCOUNTS joins.
    expect(value('STAGING_ACCOUNTS')).toBe("join(stagingAccountNames, ',')");
    expect(/\[for name in stagingAccountNames:/.test(bicep.code.slice(bicep.code.indexOf("resource staging '")))).toBe(true);
    // Data: the created data account and the existing ones, exactly the dataAccounts scope of roles.json.
    expect(value('DATA_ACCOUNTS')).toBe("join(concat([ dataAccountName ], existingDataAccountNames), ',')");
    expect(bicep.resource('dataAccount').body).toMatch(/\bname:\s*dataAccountName\b/);
    expect(bicep.code).toMatch(/resource existingData '[^']+' existing = \[for name in existingDataAccountNames:/);
    expect(roles.scopes.dataAccounts.bicep.sort()).toEqual(['dataAccount', 'existingData']);
    expect(bicep.resource('hostStorage').body).toMatch(/\bname:\s*hostStorageName\b/);
  });

  it('QUEUE_MAX_DEQUEUE_COUNT equals host.json maxDequeueCount, and Durable polls queues at least every 10 s (Flex Consumption advice)', () => {
    const host = JSON.parse(readFileSync(path.join(ROOT, 'host.json'), 'utf8')) as {
      extensions: { queues: { maxDequeueCount: number }; durableTask: { storageProvider: { maxQueuePollingInterval: string } } };
    };
    expect(settings.find((s) => s.name === 'QUEUE_MAX_DEQUEUE_COUNT')?.value).toBe('string(queueMaxDequeueCount)');
    expect(Number(bicep.vars().get('queueMaxDequeueCount'))).toBe(host.extensions.queues.maxDequeueCount);
    const [h, m, s] = host.extensions.durableTask.storageProvider.maxQueuePollingInterval.split(':').map(Number);
    expect(h * 3600 + m * 60 + s).toBeLessThanOrEqual(10);
  });
});

describe('(b) role assignments', () => {
  const declared = bicep.roleAssignments();
  const key = (a: { role: string; principal: string; scope: string }) => `${a.role} → ${a.principal} @ ${a.scope}`;
  const principalSymbol = (p: string) => roles.principals[p].bicep;

  it('main.bicep takes its role ids from roles.json, which holds built-in role ids', () => {
    expect(bicep.vars().get('roles')).toBe("loadJsonContent('roles.json', '$.roles')");
    for (const [k, r] of Object.entries(roles.roles)) {
      expect({ k, id: /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/.test(r.id) }).toEqual({ k, id: true });
      expect(r.doc).toMatch(/^https:\/\/learn\.microsoft\.com\/azure\/role-based-access-control\/built-in-roles\//);
    }
    expect(new Set(Object.values(roles.roles).map((r) => r.id)).size).toBe(Object.keys(roles.roles).length);
  });

  it('assigns every role of roles.json on every resource of its scope, and nothing else', () => {
    const wanted = roles.assignments.flatMap((a) =>
      roles.scopes[a.scope].bicep.map((symbol) => key({ role: a.role, principal: principalSymbol(a.principal), scope: symbol })),
    );
    const got = declared.map((d) => key(d));
    expect([...got].sort()).toEqual([...new Set(wanted)].sort());
    expect(got.length).toBe(new Set(got).size);
  });

  it('scopes are the resource types roles.json names; loops cover every staging and existing data account', () => {
    const resources = new Map(bicep.resources().map((r) => [r.symbol, r]));
    for (const [scope, s] of Object.entries(roles.scopes)) {
      for (const symbol of s.bicep) expect({ scope, symbol, type: resources.get(symbol)?.type }).toEqual({ scope, symbol, type: s.type });
    }
    for (const p of Object.values(roles.principals)) expect(resources.get(p.bicep)?.type).toBe('Microsoft.ManagedIdentity/userAssignedIdentities');
    const loopFor = (d: RoleAssignmentDecl) => resources.get(d.scope)?.loop ?? false;
    for (const d of declared) {
      // A loop over a collection of accounts assigns on element i of it, never on one fixed element.
      expect({ assignment: d.symbol, loop: d.loop, index: d.scopeIndex }).toEqual({
        assignment: d.symbol,
        loop: loopFor(d),
        index: d.loop ? d.loopVariable : undefined,
      });
    }
    expect(bicep.code).toMatch(/resource stagingContributor '[^']+' = \[for i in range\(0, stagingAccountCount\):/);
    expect(bicep.code).toMatch(/resource existingDataReader '[^']+' = \[for \(name, i\) in existingDataAccountNames:/);
    expect(bicep.code).toMatch(/resource poolExistingDataReader '[^']+' = \[for \(name, i\) in existingDataAccountNames:/);
  });

  it('names each assignment after its scope, principal and role (idempotent, one per triple)', () => {
    for (const d of declared) {
      const scope = d.scopeIndex ? `${d.scope}[${d.scopeIndex}]` : d.scope;
      expect({ assignment: d.symbol, nameArgs: d.nameArgs }).toEqual({
        assignment: d.symbol,
        nameArgs: [`${scope}.id`, `${d.principal}.id`, `roles.${d.role}.id`],
      });
    }
  });

  it('roles.json still describes the code: each listed call is in its file', () => {
    for (const a of roles.assignments) {
      expect(roles.roles[a.role]).toBeDefined();
      expect(roles.principals[a.principal]).toBeDefined();
      expect(roles.scopes[a.scope]).toBeDefined();
      for (const c of a.calls) {
        const text = readFileSync(path.join(ROOT, c.file), 'utf8');
        expect({ file: c.file, contains: c.contains, found: text.includes(c.contains) }).toEqual({ file: c.file, contains: c.contains, found: true });
      }
    }
  });

  it('every Azure package the product tree imports is covered by a role (or calls no service)', () => {
    const files = ['functions', 'orchestrations', 'shared', 'web/generated'].flatMap((d) => tsFiles(path.join(ROOT, d)));
    const imported = new Set<string>();
    for (const f of files) {
      for (const m of readFileSync(f, 'utf8').matchAll(/from '((?:@azure\/[^'/]+)|durable-functions)(?:\/[^']*)?'/g)) imported.add(m[1]);
    }
    expect(imported.size).toBeGreaterThan(3);
    const covered = new Set([
      ...roles.assignments.flatMap((a) => a.sdk),
      ...Object.keys(roles.notServices).filter((k) => k.startsWith('@') || k === 'durable-functions'),
    ]);
    expect([...imported].filter((p) => !covered.has(p))).toEqual([]);
  });

  it('infra/README.md shows the role table generated from roles.json (regenerate: node --import tsx scripts/infraRoles.ts --write)', () => {
    const readme = readFileSync(INFRA_README, 'utf8');
    expect(withRoleTable(readme, renderRoleTable(roles))).toBe(readme);
  });
});

describe('(c) no keys', () => {
  it('has no connection string, account key, listKeys or secret parameter', () => {
    const code = bicep.code;
    expect(code).not.toMatch(/list[A-Za-z]*\(/); // listKeys, listCredentials, listSecrets, …
    expect(code).not.toMatch(/AccountKey|SharedAccessKey|DefaultEndpointsProtocol|primaryKey|secondaryKey|@secure\(\)/i);
    expect(code).not.toMatch(/WEBSITE_CONTENTAZUREFILECONNECTIONSTRING|StorageAccountConnectionString/);
    // The one connection string is Application Insights' (an endpoint and an identifier, not a credential: the
    // component refuses ingestion without an Entra token, see DisableLocalAuth below).
    const mentions = [...code.matchAll(/connection_?string/gi)].length;
    expect(mentions).toBe(2); // the setting's name and insights.properties.ConnectionString
    expect(bicep.appSettings(APP).find((s) => s.name === 'APPLICATIONINSIGHTS_CONNECTION_STRING')?.value).toBe('insights.properties.ConnectionString');
  });

  it('switches off every key-based mode: storage shared keys, Batch keys, registry admin, App Insights keys, publishing passwords', () => {
    const resources = bicep.resources();
    const storage = resources.filter((r) => r.type === 'Microsoft.Storage/storageAccounts' && !r.existing);
    expect(storage.map((r) => r.symbol).sort()).toEqual(['dataAccount', 'hostStorage', 'staging']);
    for (const r of storage)
      expect({ account: r.symbol, body: r.body }).toEqual({
        account: r.symbol,
        body: expect.stringMatching(/allowSharedKeyAccess: false[\s\S]*defaultToOAuthAuthentication: true/),
      });
    expect(bicep.resource('batch').body).toMatch(/allowedAuthenticationModes: \[ 'AAD' \]/);
    expect(bicep.resource('acr').body).toMatch(/adminUserEnabled: false/);
    expect(bicep.resource('vault').body).toMatch(/enableRbacAuthorization: true/);
    expect(bicep.resource('insights').body).toMatch(/DisableLocalAuth: true/);
    expect(bicep.resource('eventTopic').body).toMatch(/inputSchema: 'CloudEventSchemaV1_0'[\s\S]*disableLocalAuth: true/);
    for (const symbol of ['scmBasicAuth', 'ftpBasicAuth']) {
      const r = bicep.resource(symbol);
      expect(r.type).toBe('Microsoft.Web/sites/basicPublishingCredentialsPolicies');
      expect(r.body).toMatch(/parent: app\b[\s\S]*properties: \{ allow: false \}/);
    }
    expect(bicep.code).not.toMatch(/allowSharedKeyAccess: true|adminUserEnabled: true|allow: true/);
  });

  it('hosts on Flex Consumption, deploying from a blob container read with the app identity (no file share)', () => {
    expect(bicep.resource('plan').body).toMatch(/name: 'FC1'\s*\n\s*tier: 'FlexConsumption'/);
    const app = bicep.resource(APP).body;
    expect(app).toMatch(/type: 'blobContainer'\s*\n\s*value: '\$\{hostStorage\.properties\.primaryEndpoints\.blob\}\$\{deploymentContainerName\}'/);
    expect(app).toMatch(/authentication: \{\s*\n\s*type: 'UserAssignedIdentity'\s*\n\s*userAssignedIdentityResourceId: appIdentity\.id/);
    expect(app).toMatch(/runtime: \{\s*\n\s*name: 'node'\s*\n\s*version: '22'/);
    expect(app).toMatch(/type: 'UserAssigned'/);
    expect(app).toMatch(/'azd-service-name': 'api'/);
  });

  it('the reader sees comments as comments (a key mentioned in a comment is not code, a key in code is caught)', () => {
    expect(stripComments("// listKeys(x)\nvar a = 'http://x' // c\n")).toBe("\nvar a = 'http://x' \n");
    expect(new BicepFile("var k = listKeys(sa.id, '2023-01-01').keys[0].value\n").code).toMatch(/list[A-Za-z]*\(/);
  });
});

describe('azure.yaml', () => {
  it('deploys the service the Bicep tags, from the staged production package, without a remote build', () => {
    const doc = parseYaml(readFileSync(path.join(ROOT, 'azure.yaml'), 'utf8')) as {
      infra: { provider: string; path: string; module: string };
      services: Record<string, { project: string; language: string; host: string; dist: string; remoteBuild: boolean; hooks: { prepackage: { run: string } } }>;
    };
    expect(doc.infra).toEqual({ provider: 'bicep', path: 'infra', module: 'main' });
    expect(Object.keys(doc.services)).toEqual(['api']);
    const api = doc.services.api;
    expect(api).toMatchObject({ project: '.', host: 'function', dist: 'dist-package/app', remoteBuild: false });
    expect(api.hooks.prepackage.run).toBe('npm run package');
    const pkg = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
    // The package command installs what it needs first, as `npm run demo` and `npm test` do (a fresh clone has no tsx).
    expect(pkg.scripts.package).toBe('bash scripts/package.sh');
    const script = readFileSync(path.join(ROOT, 'scripts/package.sh'), 'utf8');
    expect(script.indexOf('source scripts/node22.sh')).toBeGreaterThan(-1);
    expect(script.indexOf('bash scripts/ensure-deps.sh')).toBeGreaterThan(script.indexOf('source scripts/node22.sh'));
    // azd refuses remoteBuild: false when .funcignore excludes node_modules.
    const funcignore = readFileSync(path.join(ROOT, '.funcignore'), 'utf8')
      .split('\n')
      .map((l) => l.trim());
    expect(funcignore.filter((l) => /node_modules/.test(l) && !l.startsWith('#'))).toEqual([]);
  });
});

function tsFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const full = path.join(dir, e.name);
    return e.isDirectory() ? tsFiles(full) : e.name.endsWith('.ts') ? [full] : [];
  });
}
