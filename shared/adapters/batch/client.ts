/**
 * Building the BatchServiceClient from configuration: shared key when a key is configured (the local
 * emulator), otherwise Microsoft Entra ID tokens from DefaultAzureCredential (managed identity in Azure).
 *
 * @azure/batch 10 speaks ms-rest-js `ServiceClientCredentials`; BearerTokenCredentials adapts an
 * @azure/identity TokenCredential to it with the Batch scope (ms-rest-js' own adapter would ask for
 * the Resource Manager scope).
 */
import { BatchServiceClient, BatchSharedKeyCredentials } from '@azure/batch';
import type { RequestPolicy, RequestPolicyFactory, RequestPolicyOptionsLike, ServiceClientCredentials, WebResourceLike } from '@azure/ms-rest-js';
import { DefaultAzureCredential, type AccessToken, type TokenCredential } from '@azure/identity';
import type { AppConfig, BatchConfig } from '../config';
import { DEFAULT_RETRY_POLICY, type RetryRuntime } from './retry';

/** What every adapter function takes: the client and how to retry its calls. */
export interface BatchContext {
  client: BatchServiceClient;
  retry: RetryRuntime;
}

/** Refresh a token this long before it expires. */
const TOKEN_REFRESH_MARGIN_MS = 2 * 60_000;

export class BearerTokenCredentials implements ServiceClientCredentials {
  private cached?: AccessToken;

  constructor(
    private readonly credential: TokenCredential,
    private readonly scope: string,
  ) {}

  async signRequest(webResource: WebResourceLike): Promise<WebResourceLike> {
    const now = Date.now();
    if (!this.cached || this.cached.expiresOnTimestamp - TOKEN_REFRESH_MARGIN_MS <= now) {
      const token = await this.credential.getToken(this.scope);
      if (!token) throw new Error(`no access token was returned for scope ${this.scope}`);
      this.cached = token;
    }
    webResource.headers.set('authorization', `Bearer ${this.cached.token}`);
    return webResource;
  }
}

export interface BatchClientOptions {
  /** For AAD auth; default DefaultAzureCredential. */
  credential?: TokenCredential;
  /** Per-request timeout, so a hung connection cannot stall an activity (default 60 s). */
  requestTimeoutMs?: number;
}

export function createBatchClient(config: BatchConfig, options: BatchClientOptions = {}): BatchServiceClient {
  const credentials: ServiceClientCredentials =
    config.auth.kind === 'sharedKey'
      ? new BatchSharedKeyCredentials(config.accountName, config.auth.accountKey)
      : new BearerTokenCredentials(options.credential ?? new DefaultAzureCredential(), config.auth.scope);
  const timeoutMs = options.requestTimeoutMs ?? 60_000;
  return new BatchServiceClient(credentials, config.accountUrl, {
    // Retries are ours (retry.ts): the SDK would otherwise repeat non-idempotent calls blindly.
    noRetryPolicy: true,
    requestPolicyFactories: (defaults: RequestPolicyFactory[]) => [requestTimeoutPolicy(timeoutMs), ...defaults],
  });
}

export function createBatchContext(config: AppConfig, options: BatchClientOptions & Partial<RetryRuntime> = {}): BatchContext {
  return {
    client: createBatchClient(config.batch, options),
    retry: {
      policy: options.policy ?? config.batchRetry ?? DEFAULT_RETRY_POLICY,
      sleep: options.sleep,
      random: options.random,
      onRetry: options.onRetry,
    },
  };
}

/**
 * Aborts a request whose response has not started within `timeoutMs`. (ms-rest-js' own
 * WebResource.timeout leaves its timer running after the response, which keeps a process alive.)
 */
function requestTimeoutPolicy(timeoutMs: number): RequestPolicyFactory {
  return {
    create: (next: RequestPolicy, _options: RequestPolicyOptionsLike): RequestPolicy => ({
      sendRequest(request: WebResourceLike) {
        if (request.abortSignal) return next.sendRequest(request);
        const controller = new AbortController();
        const timer = setTimeout(() => controller.abort(), timeoutMs);
        timer.unref();
        // Node's AbortSignal does what ms-rest-js' AbortSignalLike needs; only its onabort typing differs.
        request.abortSignal = controller.signal as unknown as WebResourceLike['abortSignal'];
        return next.sendRequest(request).finally(() => clearTimeout(timer));
      },
    }),
  };
}
