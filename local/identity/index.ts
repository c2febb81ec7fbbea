/**
 * The local identity service: a small OpenID Connect issuer standing in for the Entra ID tenant, so the app's
 * token validation, the CLI's @azure/identity credentials and the tests run against real signed tokens. One RSA
 * signing key, one tenant (see directory.ts), Entra's v2.0 endpoint layout. Two listeners share the routes:
 *   https (self-signed, tls.ts): what MSAL/@azure/identity need (they refuse an http authority);
 *   http on loopback: where the app reads the metadata and keys (AUTH_METADATA_URL), so the in-process app needs
 *   no extra trust store. Tokens name the https issuer either way.
 * It also stands for what Azure gives apps and tools for the Azure resources themselves: the App Service managed
 * identity endpoint (IDENTITY_ENDPOINT, handlers/appServiceIdentity.ts) through which the local Functions host and
 * the app get their identity's tokens, and v1.0 resource tokens (resourceTokens.ts) for Storage and Batch, which the
 * storage gate in front of Azurite and the Batch emulator validate against this service's key. Its certificate is
 * the stack's certificate: Azurite serves https with it too. Hosts other than the app (emulated pools with a
 * user-assigned identity) get their identity's tokens from an instance metadata service of their own
 * (handlers/imds.ts, openImds).
 */
import * as http from 'node:http';
import * as https from 'node:https';
import * as os from 'node:os';
import * as path from 'node:path';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { defaultDirectory, type Directory, type LocalUser } from './directory';
import { createSigningKey } from './signingKey';
import { IdentityState } from './state';
import { route } from './server';
import { ensureCertificate } from './tls';
import { approveDeviceCode } from './handlers/deviceCode';
import { userAccessToken } from './tokens';
import { resourceAccessToken, v1Issuer } from './resourceTokens';
import { APP_SERVICE_IDENTITY_PATH } from './handlers/appServiceIdentity';
import { AZURE_CLI_CLIENT_ID, type LocalManagedIdentity, type ManagedIdentities } from './managedIdentities';
import { LocalTenantCredential } from './localCredential';
import type { JSONWebKeySet } from 'jose';

export { AUTOMATION_CLIENT_ID, AUTOMATION_CLIENT_SECRET, CLI_CLIENT_ID, API_APP_ID_URI, LOCAL_TENANT_ID, stableGuid } from './directory';
export type { Directory, LocalUser, LocalClient } from './directory';
export {
  APP_IDENTITY,
  POOL_IDENTITY,
  OPERATOR_USER,
  AZURE_CLI_CLIENT_ID,
  LOCAL_SUBSCRIPTION_ID,
  LOCAL_RESOURCE_GROUP,
  userAssignedIdentity,
  type LocalManagedIdentity,
  type ManagedIdentities,
} from './managedIdentities';
export { AZURE_RESOURCES, v1Issuer } from './resourceTokens';
export { createEntraTokenVerifier, TokenRejected, type EntraTokenVerifier, type VerifiedToken } from './verify';

export interface IdentityServiceOptions {
  /**
   * Folder for the TLS certificate and the signing key (both reused across starts, so saved tokens outlive a
   * restart); default a temp folder removed on stop, with a new key at every start.
   */
  dataDir?: string;
  directory?: Directory;
  /** Ports (default 0: ephemeral). */
  httpsPort?: number;
  httpPort?: number;
}

export interface IdentityService {
  tenantId: string;
  /** The `iss` of tokens and AUTH_ISSUER: https://127.0.0.1:<port>/<tenant>/v2.0. */
  issuer: string;
  /** For @azure/identity's `authorityHost`: https://127.0.0.1:<port>. */
  authorityHost: string;
  /** Loopback http metadata URL, for the app's AUTH_METADATA_URL. */
  metadataUrl: string;
  /** Loopback http origin (the /local/token endpoint and the device page also answer here). */
  httpUrl: string;
  /** The self-signed certificate (PEM) and its file, to trust the https listener (NODE_EXTRA_CA_CERTS). */
  caCert: string;
  caFile: string;
  /** The certificate's private key file: Azurite serves https with the same certificate. */
  keyFile: string;
  /** The `iss` of v1.0 tokens for Azure resources (Storage, Batch): https://sts.windows.net/<tenant>/. */
  resourceIssuer: string;
  /** The tenant's signing keys (public), for whoever validates its tokens. */
  jwks(): JSONWebKeySet;
  /**
   * The App Service managed identity endpoint of the local Function App: what the local Functions host sets as
   * IDENTITY_ENDPOINT and IDENTITY_HEADER, as App Service does.
   */
  appServiceIdentity: { endpoint: string; header: string; identities: readonly LocalManagedIdentity[] };
  /** A v1.0 access token for an Azure resource: a user's (through the Azure CLI's client) or a managed identity's. */
  resourceToken(resource: string, principal: { user: string } | { identity: LocalManagedIdentity }, opts?: { lifetimeSeconds?: number }): Promise<string>;
  /** A TokenCredential of a user of the tenant for Azure resources (the local tooling's DefaultAzureCredential). */
  userCredential(username: string): LocalTenantCredential;
  /** Accepted audiences for AUTH_AUDIENCES: the API's app id URI and client id. */
  audiences: string[];
  /** The scope clients ask for: <app id URI>/.default. */
  scope: string;
  directory: Directory;
  /** A signed access token for a user of the tenant (added with `roles` when new). */
  userToken(username: string, opts?: { roles?: string[]; name?: string; lifetimeSeconds?: number; audience?: string }): Promise<string>;
  /** What a person does on the device page: approve the code for a user. */
  approveDeviceCode(userCode: string, username?: string): boolean;
  user(username: string): LocalUser | undefined;
  /** The subscription's user-assigned identities (the app's, the pools') and the emulated hosts carrying them. */
  managedIdentities: ManagedIdentities;
  /** The instance metadata service of a new host carrying these identities: AZURE_POD_IDENTITY_AUTHORITY_HOST for it. */
  openImds(resourceIds: string[]): { endpoint: string; close(): void };
  stop(): Promise<void>;
}

async function listen(server: http.Server | https.Server, port: number): Promise<number> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve());
  });
  return (server.address() as AddressInfo).port;
}

export async function startIdentityService(opts: IdentityServiceOptions = {}): Promise<IdentityService> {
  const tempDir = opts.dataDir ? undefined : mkdtempSync(path.join(os.tmpdir(), 'local-identity-'));
  const tls = ensureCertificate(opts.dataDir ?? (tempDir as string));
  const directory = opts.directory ?? defaultDirectory();
  const key = await createSigningKey(opts.dataDir);
  // The issuer names the https port, known only once listening: requests before that are answered 503.
  const ready: { state?: IdentityState } = {};
  const handler = (origin: () => string) => (req: http.IncomingMessage, res: http.ServerResponse) => {
    if (!ready.state) {
      res.writeHead(503).end();
      return;
    }
    void route(req, res, ready.state, origin());
  };
  let httpsOrigin = '';
  let httpOrigin = '';
  const secure = https.createServer(
    { cert: tls.cert, key: tls.key },
    handler(() => httpsOrigin),
  );
  const plain = http.createServer(handler(() => httpOrigin));
  try {
    httpsOrigin = `https://127.0.0.1:${await listen(secure, opts.httpsPort ?? 0)}`;
    httpOrigin = `http://127.0.0.1:${await listen(plain, opts.httpPort ?? 0)}`;
  } catch (err) {
    secure.close();
    plain.close();
    throw err;
  }
  const issuer = `${httpsOrigin}/${directory.tenantId}/v2.0`;
  const live = new IdentityState({ issuer, directory, key });
  ready.state = live;
  return {
    tenantId: directory.tenantId,
    issuer,
    authorityHost: httpsOrigin,
    metadataUrl: `${httpOrigin}/${directory.tenantId}/v2.0/.well-known/openid-configuration`,
    httpUrl: httpOrigin,
    caCert: tls.cert,
    caFile: tls.certFile,
    keyFile: tls.keyFile,
    resourceIssuer: v1Issuer(directory.tenantId),
    jwks: () => ({ keys: [key.publicJwk] }),
    appServiceIdentity: { endpoint: `${httpOrigin}${APP_SERVICE_IDENTITY_PATH}`, header: live.appService.header, identities: live.appService.identities },
    async resourceToken(resource, principal, o = {}) {
      return (await mintResourceToken(live, resource, principal, o.lifetimeSeconds)).token;
    },
    userCredential: (username) => new LocalTenantCredential((resource) => mintResourceToken(live, resource, { user: username })),
    audiences: [directory.api.appIdUri, directory.api.clientId],
    scope: `${directory.api.appIdUri}/.default`,
    directory,
    async userToken(username, o = {}) {
      const user = live.ensureUser(username, o.roles, o.name);
      return (await userAccessToken(live.iss, user, undefined, { lifetimeSeconds: o.lifetimeSeconds, audience: o.audience })).token;
    },
    approveDeviceCode: (userCode, username = directory.defaultUser) => approveDeviceCode(live, userCode, username),
    user: (username) => live.user(username),
    managedIdentities: live.managed,
    openImds(resourceIds) {
      const key = live.managed.registerHost(resourceIds);
      return { endpoint: `${httpOrigin}/imds/${key}`, close: () => live.managed.unregisterHost(key) };
    },
    async stop() {
      for (const server of [secure, plain]) {
        server.closeAllConnections();
        await new Promise<void>((resolve) => server.close(() => resolve()));
      }
      if (tempDir) rmSync(tempDir, { recursive: true, force: true });
    },
  };
}

async function mintResourceToken(
  state: IdentityState,
  resource: string,
  principal: { user: string } | { identity: LocalManagedIdentity },
  lifetimeSeconds?: number,
) {
  if ('identity' in principal) return resourceAccessToken(state.iss, { kind: 'managedIdentity', identity: principal.identity }, resource, { lifetimeSeconds });
  const user = state.user(principal.user);
  if (!user) throw new Error(`no user ${principal.user} in the local tenant`);
  return resourceAccessToken(state.iss, { kind: 'user', user, clientId: AZURE_CLI_CLIENT_ID }, resource, { lifetimeSeconds });
}
