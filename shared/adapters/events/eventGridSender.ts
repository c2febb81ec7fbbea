/**
 * Publishes one event to an Event Grid topic whose input schema is CloudEvents 1.0, with the app's managed identity
 * (Entra token for https://eventgrid.azure.net/.default; the topic's local auth is off, the identity holds
 * EventGrid Data Sender on it, see infra/roles.json). The SDK's own retries are off: each try is one request, recorded
 * by the deliverer, which retries on its own schedule.
 */
import type { TokenCredential } from '@azure/core-auth';
import { EventGridPublisherClient, type EventGridPublisherClientOptions } from '@azure/eventgrid';
import type { JobCloudEvent } from './cloudEvent';
import type { EventEndpoint, SendResult } from './endpoint';

export const EVENT_GRID_ENDPOINT_NAME = 'eventgrid';

export function eventGridEndpoint(topicEndpoint: string, credential: TokenCredential, options: EventGridPublisherClientOptions = {}): EventEndpoint {
  const client = new EventGridPublisherClient(topicEndpoint, 'CloudEvent', credential, { retryOptions: { maxRetries: 0 }, ...options });
  return {
    name: EVENT_GRID_ENDPOINT_NAME,
    async send(event: JobCloudEvent): Promise<SendResult> {
      try {
        await client.send([
          {
            id: event.id,
            source: event.source,
            type: event.type,
            subject: event.subject,
            time: new Date(event.time),
            datacontenttype: event.datacontenttype,
            data: event.data,
            extensionAttributes: { sequence: event.sequence },
          },
        ]);
        return { ok: true, status: 200 };
      } catch (err) {
        const status = (err as { statusCode?: unknown }).statusCode;
        return { ok: false, ...(typeof status === 'number' ? { status } : {}), error: (err as Error).message.slice(0, 500) };
      }
    },
  };
}
