/**
 * Registers the activities with the Functions app. Lives beside the activities, not in runtime/: it wires each handler
 * to the composition root (the Batch account a placed job's input names), which orchestrator code must never import.
 */
import * as df from 'durable-functions';
import type { DurableClient } from 'durable-functions';
import type { InvocationContext } from '@azure/functions';
import type { ActivityHandler, ActivityInput, ActivityName, ActivityOutput } from '../../shared/core/contract';
import { inBatchAccount } from '../../shared/services';
import { batchAccountOf } from '../runtime/activityCalls';

export function registerActivity<N extends ActivityName>(name: N, handler: ActivityHandler<N>): void {
  df.app.activity(name, { handler: (input: ActivityInput<N>) => inBatchAccount(batchAccountOf(input), () => handler(input)) });
}

/** What an activity that talks to other orchestrations gets besides its input: the Durable client and its log. */
export interface ActivityEnv {
  client: DurableClient;
  log: Pick<InvocationContext, 'warn'>;
}

/** Registers an activity that raises events on other orchestrations (through the Durable client binding). */
export function registerClientActivity<N extends ActivityName>(
  name: N,
  handler: (input: ActivityInput<N>, env: ActivityEnv) => Promise<ActivityOutput<N>>,
): void {
  df.app.activity(name, {
    extraInputs: [df.input.durableClient()],
    handler: (input: ActivityInput<N>, context: InvocationContext) =>
      inBatchAccount(batchAccountOf(input), () => handler(input, { client: df.getClient(context), log: context })),
  });
}
