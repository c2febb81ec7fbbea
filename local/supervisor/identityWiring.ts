/**
 * Who holds which role on the local stack, wired between the identity service and the services that check tokens,
 * the way infra/main.bicep assigns roles in Azure (infra/roles.json): the app identity (id-app-local) may create pools
 * on the Batch account and assign the pool identity to them (Batch Account Contributor-level rights, Managed Identity
 * Operator on id-pool-local); the pool identity may pull from the registry (AcrPull). Tokens are checked against
 * the tenant's published keys, as any relying party does.
 */
import { randomBytes } from 'node:crypto';
import {
  APP_IDENTITY,
  OPERATOR_USER,
  POOL_IDENTITY,
  createEntraTokenVerifier,
  LOCAL_RESOURCE_GROUP,
  LOCAL_SUBSCRIPTION_ID,
  stableGuid,
  type IdentityService,
  type LocalManagedIdentity,
} from '../identity';
import type { ArmAccessConfig, BatchDataRoles, NodeIdentityProvider } from '../batch';
import type { RegistryAuthOptions } from '../registry';

export interface LocalIdentityWiring {
  app: LocalManagedIdentity;
  pool: LocalManagedIdentity;
  nodeIdentities: NodeIdentityProvider;
  arm: { subscriptionId: string; resourceGroup: string; access: ArmAccessConfig };
  /**
   * Batch data-plane roles (infra/roles.json: the app holds Azure Batch Data Contributor on the account; the operator,
   * like an account owner, may too). The pool identity and every other principal hold none: 403 on the data plane.
   */
  batchDataRoles: BatchDataRoles;
  /** A fresh registry credential (an ACR token's user name and password). */
  registryCredential(): { username: string; password: string };
  registryAuth(credential: { username: string; password: string }): RegistryAuthOptions;
}

export function localIdentityWiring(identity: IdentityService): LocalIdentityWiring {
  const mis = identity.managedIdentities;
  const app = APP_IDENTITY;
  const pool = POOL_IDENTITY;
  const verify = createEntraTokenVerifier({ jwks: identity.jwks, tenantId: identity.tenantId, extraIssuers: [identity.issuer] });
  return {
    app,
    pool,
    nodeIdentities: {
      lookup: (resourceId) => {
        const mi = mis.byResourceId(resourceId);
        return mi && { resourceId: mi.resourceId, clientId: mi.clientId, principalId: mi.principalId };
      },
      openImds: (ids) => identity.openImds(ids),
    },
    arm: {
      subscriptionId: LOCAL_SUBSCRIPTION_ID,
      resourceGroup: LOCAL_RESOURCE_GROUP,
      access: { verify, contributors: [app.principalId], identityOperators: { [pool.resourceId]: [app.principalId] }, authority: identity.authorityHost },
    },
    // Directory users' object ids are stableGuid(`user:<name>`) (identity/directory.ts localUser).
    batchDataRoles: { contributors: [app.principalId, stableGuid(`user:${OPERATOR_USER}`)], readers: [] },
    registryCredential: () => ({ username: 'hpc-pull', password: randomBytes(24).toString('base64url') }),
    registryAuth: (credential) => ({ verifyEntraToken: verify, pullPrincipals: [pool.principalId], credentials: [credential] }),
  };
}
