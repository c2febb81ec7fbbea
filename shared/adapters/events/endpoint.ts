/** What the deliverer needs of an endpoint (a webhook, an Event Grid topic): send one event, say how it went. */
import type { JobCloudEvent } from './cloudEvent';

export interface SendResult {
  ok: boolean;
  /** HTTP status, when the endpoint answered. */
  status?: number;
  /** Why it failed (never a secret). */
  error?: string;
}

export interface EventEndpoint {
  /** `webhook-<name>` or `eventgrid`: the cursor and the attempt records are kept under it. */
  readonly name: string;
  send(event: JobCloudEvent): Promise<SendResult>;
}
