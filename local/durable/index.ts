/**
 * The embedded Durable Functions engine as a local Functions host extension: it dispatches the
 * orchestrationTrigger and activityTrigger functions the app registers with durable-functions v3,
 * provides the durableClient binding, and serves the Durable HTTP management API.
 * See docs/local-durable.md.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import type { BindingInfo, HostContext, HostExtension, TypedData } from '../host/extension';
import { ActivityDispatcher } from './activities';
import { ManagementApi } from './api';
import { resolveOptions, type DurableOptions, type ResolvedOptions } from './config';
import { HostLoad } from './hostLoad';
import { clientBindingData, webhookFromUrl, type Webhook } from './links';
import { OrchestrationDispatcher } from './orchestrations';
import { recover, recoverInstance, type RecoveryReport } from './recovery';
import { startRpcListener, type RpcListener } from './rpcListener';
import { DurableStore } from './store';

/** The extension's webhook name: /runtime/webhooks/durabletask, system key `durabletask_extension`. */
const WEBHOOK_NAME = 'durabletask';

export type { DurableOptions } from './config';
export { DurableStore } from './store';

export interface DurableExtension extends HostExtension {
  /** Engine counters (for benchmarks and tests); undefined before start. */
  stats():
    | {
        episodes: number;
        deliveredEvents: number;
        activitiesCompleted: number;
        activitiesFailed: number;
        peakActivityConcurrency: number;
        peakEpisodeConcurrency: number;
        /** The most episodes / activities running at once when one of them started while the host's load held the engine at its floor. */
        peakEpisodesAtFloor: number;
        peakActivitiesAtFloor: number;
      }
    | undefined;
  /** The resolved settings (hub name, concurrency limits); undefined before start. */
  options(): ResolvedOptions | undefined;
  /** What start-up recovery re-sent; undefined before start. */
  recovery(): RecoveryReport | undefined;
  /** The loopback RPC endpoint's base URL without its credentials (for logs and tests); undefined before start. */
  rpcEndpoint(): string | undefined;
}

export function createDurableExtension(opts: DurableOptions = {}): DurableExtension {
  let running:
    | {
        store: DurableStore;
        orchestrations: OrchestrationDispatcher;
        activities: ActivityDispatcher;
        api: ManagementApi;
        options: ResolvedOptions;
        log: Logger;
        host: HostContext;
        recovery: RecoveryReport;
        webhook: Webhook;
        rpc: RpcListener;
        load: HostLoad;
        rpcBaseUrl: string;
      }
    | undefined;

  return {
    name: 'durable',
    triggerTypes: ['orchestrationTrigger', 'activityTrigger'],
    inputBindingTypes: ['durableClient', 'orchestrationClient'],

    async provideInputBinding(_binding: BindingInfo): Promise<TypedData> {
      if (!running) throw new Error('The durableClient binding was requested before the Durable extension started');
      return { string: JSON.stringify(clientBindingData(running.webhook, running.options.hubName, running.rpcBaseUrl)) };
    },

    async handleHttp(req: IncomingMessage, res: ServerResponse, url: URL): Promise<boolean> {
      if (!running) return false;
      return running.api.handle(req, res, url, 'webhook');
    },

    async start(host: HostContext): Promise<void> {
      const options = resolveOptions(host.hostJson(), opts);
      const log = host.log.child({ component: 'durable', hub: options.hubName });
      const entities = host.functions().filter((f) => f.trigger.type === 'entityTrigger');
      if (entities.length > 0) {
        log.warn({ functions: entities.map((f) => f.name) }, 'entity functions are not supported by the local Durable engine and will not run');
      }
      const store = new DurableStore(host.storage(), options.hubName);
      store.onUnreadable = (m) => log.error(m, 'durable queue message unreadable: deleted');
      await store.init();
      const load = new HostLoad(host.ingress, options.maxConcurrentWhileHostBusy);
      const orchestrations = new OrchestrationDispatcher(store, host, options, log, load);
      const activities = new ActivityDispatcher(store, host, options, log, load);
      orchestrations.onWorkItems = () => activities.wake();
      activities.onAnswer = () => orchestrations.wake();
      orchestrations.onEpisodeError = (instanceId) => recoverInstance(store, orchestrations, instanceId);
      // As the extension asks the host's webhook provider: the URL carries the system key (created on first use).
      const webhookUrl = host.webhookUrl(WEBHOOK_NAME);
      const webhook = webhookFromUrl(webhookUrl);
      const systemKey = new URL(webhookUrl).searchParams.get('code') ?? '';
      const api = new ManagementApi(store, orchestrations, host, options, webhook, log);
      const rpc = await startRpcListener({
        port: options.rpcPort,
        handle: (req, res, url) => api.handle(req, res, url, 'rpc'),
        authorize: (presented) => host.isWebhookKey(WEBHOOK_NAME, presented),
        log,
      });
      let report: RecoveryReport;
      try {
        report = await recover(store, orchestrations, log);
      } catch (err) {
        load.stop();
        await rpc.close();
        throw err;
      }
      orchestrations.start();
      activities.start();
      running = { store, orchestrations, activities, api, options, log, host, recovery: report, webhook, rpc, load, rpcBaseUrl: rpc.baseUrlWithKey(systemKey) };
      log.info(
        {
          maxConcurrentActivityFunctions: options.maxConcurrentActivityFunctions,
          maxConcurrentOrchestratorFunctions: options.maxConcurrentOrchestratorFunctions,
          maxConcurrentWhileHostBusy: options.maxConcurrentWhileHostBusy,
          webhook: `${webhook.origin}/runtime/webhooks/${WEBHOOK_NAME}`,
          rpcEndpoint: `http://127.0.0.1:${rpc.port}/durabletask/`,
        },
        'Durable engine started',
      );
    },

    async stop(): Promise<void> {
      const r = running;
      if (!r) return;
      running = undefined;
      await r.activities.stop();
      await r.orchestrations.stop();
      r.load.stop();
      await r.rpc.close();
      r.log.info('Durable engine stopped');
    },

    stats() {
      if (!running) return undefined;
      const o = running.orchestrations.stats;
      const a = running.activities.stats;
      return {
        episodes: o.episodes,
        deliveredEvents: o.deliveredEvents,
        activitiesCompleted: a.completed,
        activitiesFailed: a.failed,
        peakActivityConcurrency: a.peakConcurrency,
        peakEpisodeConcurrency: o.peakConcurrency,
        peakEpisodesAtFloor: o.peakAtFloor,
        peakActivitiesAtFloor: a.peakAtFloor,
      };
    },
    options: () => running?.options,
    recovery: () => running?.recovery,
    rpcEndpoint: () => (running ? `http://127.0.0.1:${running.rpc.port}/durabletask/` : undefined),
  };
}
