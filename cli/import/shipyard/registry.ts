/**
 * Private registries: which registry a job's images come from, and how nodes authenticate to it. Credentials never
 * cross: a job names an app setting the deployment declares as that registry's secret (REGISTRY_CREDENTIALS; intake
 * refuses anything else, a Key Vault URI included), so a password in credentials.yaml is reported by path and replaced
 * by such a setting the user must create, and a `password_keyvault_secret_id` becomes the setting that holds a Key
 * Vault reference to that secret.
 */
import * as P from '../../../shared/core/spec/patterns';
import { addComment, getIn, isObj, setIn, type MappingContext, type SpecDraft } from './context';
import type { ConfigFacts } from './globalResources';
import { joinKey } from './report';
import { NOT_NEEDED } from './notes';

const DOCKER_HUB = new Set(['docker.io', 'index.docker.io', 'registry-1.docker.io', 'registry.hub.docker.com']);

/** The registry host of an image reference, or undefined for Docker Hub and the Sylabs library. */
export function registryServerOf(image: string): string | undefined {
  if (image.startsWith('library://')) return undefined;
  const ref = image.replace(/^(docker|oras):\/\//, '');
  const first = ref.split('/')[0];
  if (!ref.includes('/') || !(first.includes('.') || first.includes(':') || first === 'localhost')) return undefined;
  return DOCKER_HUB.has(first) ? undefined : first.toLowerCase();
}

/** The app setting the user must create for a registry's password. */
export function passwordSettingName(server: string): string {
  return `REGISTRY_PASSWORD_${server.toUpperCase().replace(/[^A-Z0-9]+/g, '_')}`.slice(0, 128).replace(/_+$/, '');
}

export function mapRegistries(ctx: MappingContext, drafts: SpecDraft[], config: ConfigFacts): void {
  const creds = registryCredentials(ctx);
  const used = new Map<string, SpecDraft[]>();
  for (const d of drafts) jobRegistry(ctx, d, creds, used);
  reportListedRegistries(ctx, config, used);
  reportCredentialEntries(ctx, creds, used);
}

/** credentials.yaml's `credentials` mapping (empty without one). */
function registryCredentials(ctx: MappingContext): Record<string, unknown> {
  return isObj(ctx.sources.credentials?.value) && isObj((ctx.sources.credentials?.value as Record<string, unknown>).credentials)
    ? ((ctx.sources.credentials?.value as Record<string, unknown>).credentials as Record<string, unknown>)
    : {};
}

/**
 * The registry of one job's images (the first of its private ones) and how its nodes authenticate to it: the job is
 * noted in `used` under its registry group and server.
 */
function jobRegistry(ctx: MappingContext, d: SpecDraft, creds: Record<string, unknown>, used: Map<string, SpecDraft[]>): void {
  const images = (getIn(d.spec, ['container', 'images']) as unknown[] | undefined) ?? [];
  const runtime = getIn(d.spec, ['container', 'runtime']) as string;
  const servers = [
    ...new Set(
      images
        .filter((i): i is string => typeof i === 'string')
        .map(registryServerOf)
        .filter((s): s is string => !!s),
    ),
  ];
  if (servers.length === 0) return;
  const server = servers[0];
  if (servers.length > 1) {
    d.header.push(
      `TODO: images come from ${servers.length} registries (${servers.join(', ')}); a job authenticates to one (container.registry): images of the others must be public`,
    );
  }
  const group = runtime === 'singularity' ? 'singularity_registry' : 'docker_registry';
  const cred =
    isObj(creds[group]) && isObj((creds[group] as Record<string, unknown>)[server])
      ? ((creds[group] as Record<string, unknown>)[server] as Record<string, unknown>)
      : undefined;
  used.set(`${group}\u0000${server}`, [...(used.get(`${group}\u0000${server}`) ?? []), d]);
  if (!P.REGISTRY_SERVER_RE.test(server)) return;
  if (cred) withCredentials(ctx, d, server, group, cred);
  else if (/\.azurecr\.(io|cn|us)$/.test(server)) {
    setIn(d.spec, ['container', 'registry'], { server, identity: 'managed' });
    addComment(
      d,
      'container.registry',
      `${server} is an Azure Container Registry without credentials in the Shipyard files: pulled with the managed identity (grant it AcrPull on the registry)`,
    );
  }
}

/** A registry with credentials.yaml credentials: the app setting to create for its password, and its user name. */
function withCredentials(ctx: MappingContext, d: SpecDraft, server: string, group: string, cred: Record<string, unknown>): void {
  const base = joinKey(joinKey('credentials', group), server);
  const username = typeof cred.username === 'string' && P.REGISTRY_USERNAME_RE.test(cred.username) ? cred.username : undefined;
  const kv =
    typeof cred.password_keyvault_secret_id === 'string' && P.KEY_VAULT_SECRET_URI_RE.test(cred.password_keyvault_secret_id)
      ? cred.password_keyvault_secret_id
      : undefined;
  const secretRef = passwordSettingName(server);
  setIn(d.spec, ['container', 'registry'], { server, identity: { secretRef, username: username ?? 'TODO-username' } });
  ctx.mapped('credentials', base, 'container.registry.server', `private registry of the job's images`, [d]);
  const holding = kv ? `a Key Vault reference to ${kv} (@Microsoft.KeyVault(SecretUri=…))` : 'the registry password (in Azure a Key Vault reference)';
  addComment(
    d,
    'container.registry.identity.secretRef',
    `TODO: create the app setting ${secretRef} holding ${holding} and declare it in REGISTRY_CREDENTIALS (${server}=${secretRef})`,
  );
  d.header.push(`TODO: container.registry.identity.secretRef names the app setting ${secretRef}: create it and list it in REGISTRY_CREDENTIALS`);
  if (!username) {
    addComment(d, 'container.registry.identity.username', 'TODO: the registry user name');
    d.header.push('TODO: container.registry.identity.username');
  }
}

/** Registries config.yaml lists: mapped when a job's images are in them. */
function reportListedRegistries(ctx: MappingContext, config: ConfigFacts, used: Map<string, SpecDraft[]>): void {
  for (const r of config.registries) {
    const users = [...used.entries()].filter(([k]) => k.endsWith(`\u0000${r.server}`)).flatMap(([, ds]) => ds);
    if (users.length) ctx.mapped('config', r.path, 'container.registry.server', "registry of the job's images", users, { noComment: true });
    else ctx.mapped('config', r.path, undefined, NOT_NEEDED("none of the imported jobs' images is in it"));
  }
}

/** Every credentials.yaml registry entry, used or not. */
function reportCredentialEntries(ctx: MappingContext, creds: Record<string, unknown>, used: Map<string, SpecDraft[]>): void {
  for (const group of ['docker_registry', 'singularity_registry'] as const) {
    const entries = isObj(creds[group]) ? (creds[group] as Record<string, unknown>) : {};
    for (const [server, value] of Object.entries(entries)) {
      const base = joinKey(joinKey('credentials', group), server);
      const users = used.get(`${group}\u0000${server.toLowerCase()}`) ?? [];
      ctx.visit(
        'credentials',
        base,
        value,
        {
          username: (_u, p) =>
            users.length
              ? ctx.mapped('credentials', p, 'container.registry.identity.username', 'registry user', users)
              : ctx.mapped('credentials', p, undefined, NOT_NEEDED('no imported job pulls from this registry')),
          password: (_s, p) =>
            users.length
              ? ctx.secret(
                  'credentials',
                  p,
                  'approximated',
                  `a password in the file: reported here by path only and never written; container.registry.identity.secretRef names the app setting ${passwordSettingName(server)} you must create with it and declare in REGISTRY_CREDENTIALS`,
                  users,
                  'container.registry.identity.secretRef',
                )
              : ctx.secret('credentials', p, 'unsupported', 'a password in the file: not carried (never written); no imported job pulls from this registry'),
          password_keyvault_secret_id: (s, p) => {
            if (!users.length) return ctx.mapped('credentials', p, undefined, NOT_NEEDED('no imported job pulls from this registry'));
            if (typeof s === 'string' && P.KEY_VAULT_SECRET_URI_RE.test(s))
              ctx.mapped(
                'credentials',
                p,
                'container.registry.identity.secretRef',
                `the Key Vault secret holding the password, through the app setting ${passwordSettingName(server)} (a Key Vault reference, declared in REGISTRY_CREDENTIALS)`,
                users,
              );
            else ctx.unsupported('credentials', p, 'not a Key Vault secret URI (https://<vault>.vault.azure.net/secrets/<name>)', users);
          },
        },
        {},
        users.length ? users : undefined,
      );
      if (!users.length && !isObj(value)) ctx.unsupported('credentials', base, 'must be a mapping { username, password | password_keyvault_secret_id }');
    }
  }
}
