/**
 * The Batch management-plane client (Resource Manager, api-version 2023-11-01 through @azure/arm-batch 9.1.0), for
 * what the data plane cannot do: create a pool that carries a user-assigned identity. Authenticated with the app's
 * managed identity (DefaultAzureCredential) for the Resource Manager scope. The SDK's own retries are off: every
 * retry is ours (retry.ts), as for the data plane.
 */
import { BatchManagementClient } from '@azure/arm-batch';
import { DefaultAzureCredential, type AccessToken, type TokenCredential } from '@azure/identity';
import { bearerTokenAuthenticationPolicyName, type PipelinePolicy } from '@azure/core-rest-pipeline';
import type { AppConfig, PoolIdentityConfig } from '../config';
import { DEFAULT_RETRY_POLICY, type RetryRuntime } from './retry';

/** What the management-plane functions take: the client, where the account is, the identity, how to retry. */
export interface ArmBatchContext {
  client: BatchManagementClient;
  identity: PoolIdentityConfig;
  retry: RetryRuntime;
}

export interface ArmClientOptions {
  /** Default DefaultAzureCredential (the app's managed identity; AZURE_CLIENT_ID picks the user-assigned one). */
  credential?: TokenCredential;
}

export function createArmBatchClient(identity: PoolIdentityConfig, options: ArmClientOptions = {}): BatchManagementClient {
  const credential = options.credential ?? new DefaultAzureCredential();
  const loopbackHttp = identity.armEndpoint.startsWith('http://');
  const client = new BatchManagementClient(credential, identity.subscriptionId, {
    $host: identity.armEndpoint,
    endpoint: identity.armEndpoint,
    credentialScopes: [identity.armScope],
    retryOptions: { maxRetries: 0 },
    allowInsecureConnection: loopbackHttp,
  });
  if (loopbackHttp) {
    // shared/adapters/config allows http only on a loopback host (the local emulator). The SDK's bearer policy refuses any
    // http URL, so on loopback it is replaced by one that adds the same token; https endpoints keep the SDK's own.
    client.pipeline.removePolicy({ name: bearerTokenAuthenticationPolicyName });
    client.pipeline.addPolicy(loopbackBearerPolicy(credential, identity.armScope), { phase: 'Sign' });
  }
  return client;
}

const TOKEN_REFRESH_MARGIN_MS = 2 * 60_000;

function loopbackBearerPolicy(credential: TokenCredential, scope: string): PipelinePolicy {
  let cached: AccessToken | undefined;
  return {
    name: 'loopbackBearerTokenPolicy',
    async sendRequest(request, next) {
      if (!isLoopbackUrl(request.url)) throw new Error(`refusing to send a bearer token to ${new URL(request.url).host} over http`);
      if (!cached || cached.expiresOnTimestamp - TOKEN_REFRESH_MARGIN_MS <= Date.now()) {
        const token = await credential.getToken(scope);
        if (!token) throw new Error(`no access token was returned for scope ${scope}`);
        cached = token;
      }
      request.headers.set('Authorization', `Bearer ${cached.token}`);
      return next(request);
    },
  };
}

function isLoopbackUrl(url: string): boolean {
  const host = new URL(url).hostname;
  return host === 'localhost' || /^127\.\d+\.\d+\.\d+$/.test(host) || host === '[::1]';
}

/** The management-plane context, or undefined when the deployment has no pool identity. */
export function createArmBatchContext(config: AppConfig, options: ArmClientOptions & Partial<RetryRuntime> = {}): ArmBatchContext | undefined {
  if (!config.poolIdentity) return undefined;
  return {
    client: createArmBatchClient(config.poolIdentity, options),
    identity: config.poolIdentity,
    retry: {
      policy: options.policy ?? config.batchRetry ?? DEFAULT_RETRY_POLICY,
      sleep: options.sleep,
      random: options.random,
      onRetry: options.onRetry,
    },
  };
}
