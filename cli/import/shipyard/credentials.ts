/**
 * credentials.yaml, apart from registries (registry.ts): the identities Shipyard signed in with have no counterpart
 * (the control plane uses its managed identity, hpcjob signs in with Entra ID), and storage keys are never carried:
 * the pipeline reads data accounts with its own identity. Every credential is reported by path only.
 */
import { isObj, type MappingContext } from './context';
import { NOT_NEEDED } from './notes';

const IDENTITY = NOT_NEEDED('the control plane calls Batch and Storage with its managed identity; hpcjob signs in with Entra ID');

export function mapCredentials(ctx: MappingContext): void {
  const source = ctx.sources.credentials;
  if (!source) return;
  const role = 'credentials' as const;
  const secretsUnder = (path: string) => {
    for (const f of ctx.secrets.findings.filter((s) => s.role === role && (s.path.startsWith(`${path}.`) || s.path.startsWith(`${path}[`)))) {
      ctx.secret(role, f.path, 'unsupported', `a ${f.kind}: not carried (never written anywhere)`);
    }
  };
  const identity = (v: unknown, p: string) => {
    ctx.mapped(role, p, undefined, IDENTITY);
    secretsUnder(p);
    void v;
  };
  ctx.visit(role, '', source.value, {
    credentials: (c, base) =>
      ctx.visit(role, base, c, {
        aad: identity,
        batch: identity,
        management: identity,
        keyvault: identity,
        monitoring: (v, p) => {
          ctx.mapped(role, p, undefined, NOT_NEEDED('no monitoring VM is created; the dashboard shows jobs'));
          secretsUnder(p);
          void v;
        },
        storage: (s, p) =>
          ctx.visit(
            role,
            p,
            s,
            Object.fromEntries(
              Object.keys(isObj(s) ? s : {}).map((alias) => [
                alias,
                (v: unknown, q: string) => {
                  if (alias === 'aad') return identity(v, q);
                  ctx.visit(role, q, v, {
                    account: (_a, r) => ctx.mapped(role, r, undefined, `the account the alias "${alias}" names, wherever a Shipyard file uses it`),
                    account_key: (_k, r) =>
                      ctx.secret(
                        role,
                        r,
                        'unsupported',
                        "an account key: not carried (never written); the pipeline reads data accounts with its own identity through short-lived SAS, so list the account in the deployment's DATA_ACCOUNTS",
                      ),
                    account_key_keyvault_secret_id: (_k, r) =>
                      ctx.mapped(role, r, undefined, NOT_NEEDED("no account key is used: the pipeline's identity reads the account")),
                    endpoint: (_e, r) =>
                      ctx.approximated(role, r, undefined, 'the storage endpoint suffix is a deployment setting (STORAGE_ENDPOINT_SUFFIX), not per job'),
                    resource_group: (_g, r) => ctx.mapped(role, r, undefined, NOT_NEEDED('data accounts are named by account')),
                  });
                },
              ]),
            ),
          ),
        // Registries: registry.ts reports them against the jobs that use them.
        docker_registry: () => undefined,
        singularity_registry: () => undefined,
      }),
  });
}
