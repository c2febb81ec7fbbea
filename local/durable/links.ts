/**
 * The URLs the Durable extension hands out: the durableClient binding data
 * (BindingHelper.DurableOrchestrationClientToString) and the check-status links
 * (HttpApiHandler.GetClientResponseLinks / GetInstanceCreationLinks). Every management URL carries the
 * webhook's system key as `code=`, exactly as in Azure, because the host refuses the webhook without it.
 */
export const WEBHOOK_PATH = '/runtime/webhooks/durabletask';
export const RPC_PATH = '/durabletask/';
/** The connection name the extension reports by default (DurableTaskExtension.GetDefaultConnectionName). */
export const CONNECTION_NAME = 'Storage';
/** The managementUrls placeholder the library replaces with an instance id. */
const INSTANCE_ID_PLACEHOLDER = 'INSTANCEID';

/** The webhook as the host gives it to the extension: `<origin>/runtime/webhooks/durabletask?code=<systemKey>`. */
export interface Webhook {
  /** e.g. http://127.0.0.1:7071 */
  origin: string;
  /** The query string without `?`: `code=<systemKey>`. */
  query: string;
}

export function webhookFromUrl(url: string): Webhook {
  const u = new URL(url);
  return { origin: u.origin, query: u.search.replace(/^\?/, '') };
}

/** .NET WebUtility.UrlEncode: spaces become `+`, the rest as encodeURIComponent with !'()* kept. */
export function urlEncode(s: string): string {
  return encodeURIComponent(s).replace(/%20/g, '+');
}

export interface ManagementUrls {
  id: string;
  statusQueryGetUri: string;
  sendEventPostUri: string;
  terminatePostUri: string;
  rewindPostUri: string;
  purgeHistoryDeleteUri: string;
  restartPostUri: string;
  suspendPostUri: string;
  resumePostUri: string;
}

/** HttpManagementPayload for one instance; `origin` is the request's (or the webhook's when there is no request). */
export function managementUrls(webhook: Webhook, origin: string, instanceId: string, hubName: string): ManagementUrls {
  const inst = `${origin}${WEBHOOK_PATH}/instances/${urlEncode(instanceId)}`;
  let q = `taskHub=${urlEncode(hubName)}&connection=${urlEncode(CONNECTION_NAME)}`;
  if (webhook.query) q += `&${webhook.query}`;
  return {
    id: instanceId,
    statusQueryGetUri: `${inst}?${q}`,
    sendEventPostUri: `${inst}/raiseEvent/{eventName}?${q}`,
    terminatePostUri: `${inst}/terminate?reason={text}&${q}`,
    rewindPostUri: `${inst}/rewind?reason={text}&${q}`,
    purgeHistoryDeleteUri: `${inst}?${q}`,
    restartPostUri: `${inst}/restart?${q}`,
    suspendPostUri: `${inst}/suspend?reason={text}&${q}`,
    resumePostUri: `${inst}/resume?reason={text}&${q}`,
  };
}

/** The check-status payload of the HTTP 202 answers (CreateCheckStatusResponseMessage: no rewind link). */
export function checkStatusBody(links: ManagementUrls): Record<string, string> {
  return {
    id: links.id,
    statusQueryGetUri: links.statusQueryGetUri,
    sendEventPostUri: links.sendEventPostUri,
    terminatePostUri: links.terminatePostUri,
    purgeHistoryDeleteUri: links.purgeHistoryDeleteUri,
    restartPostUri: links.restartPostUri,
    suspendPostUri: links.suspendPostUri,
    resumePostUri: links.resumePostUri,
  };
}

/** The durableClient binding data the library's getClient reads. `rpcBaseUrl` is the engine's loopback RPC endpoint. */
export function clientBindingData(webhook: Webhook, hubName: string, rpcBaseUrl: string): Record<string, unknown> {
  const base = `${webhook.origin}${WEBHOOK_PATH}`;
  const creation = `${base}/orchestrators/{functionName}[/{instanceId}]`;
  return {
    taskHubName: hubName,
    creationUrls: {
      createNewInstancePostUri: `${creation}?${webhook.query}`,
      createAndWaitOnNewInstancePostUri: `${creation}?timeout={timeoutInSeconds}&pollingInterval={intervalInSeconds}&${webhook.query}`,
    },
    managementUrls: managementUrls(webhook, webhook.origin, INSTANCE_ID_PLACEHOLDER, hubName),
    baseUrl: base,
    requiredQueryStringParameters: webhook.query,
    rpcBaseUrl,
  };
}
