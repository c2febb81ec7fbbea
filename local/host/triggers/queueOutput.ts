/** The storage queue output binding (`output.storageQueue`): each value becomes one message, arrays several. */
import type { QueueClient } from '@azure/storage-queue';
import type { Logger } from 'pino';
import type { BindingInfo, RegisteredFunction, TypedData } from '../extension';
import type { HostJson } from '../hostJson';
import type { OutputBindingWriter } from '../invoke';
import { resolveAppSettingExpressions } from './bindingSettings';
import { connectionKey, queueServiceClient, resolveStorageConnection } from '../storageConnection';
import { encodeMessage, outputMessages } from './queueMessages';
import { queueOptions } from './queueOptions';

export function createQueueOutputWriter(hostJson: HostJson, log: Logger): OutputBindingWriter {
  const { messageEncoding } = queueOptions(hostJson);
  const ready = new Map<string, Promise<QueueClient>>();
  const queueFor = (binding: BindingInfo, fn: RegisteredFunction): Promise<QueueClient> => {
    const what = `Function "${fn.name}" output binding "${binding.name}"`;
    const name = resolveAppSettingExpressions(String(binding.queueName ?? ''), what).toLowerCase();
    if (!name) throw new Error(`${what}: no queueName`);
    const conn = resolveStorageConnection(binding.connection, 'queue', what);
    const key = `${connectionKey(conn)}\n${name}`;
    let client = ready.get(key);
    if (!client) {
      const queue = queueServiceClient(conn).getQueueClient(name);
      // The host creates an output queue on first use.
      client = queue.createIfNotExists().then(() => queue);
      client.catch(() => ready.delete(key));
      ready.set(key, client);
    }
    return client;
  };
  return async (binding: BindingInfo, data: TypedData, fn: RegisteredFunction) => {
    const queue = await queueFor(binding, fn);
    const messages = outputMessages(data);
    for (const m of messages) await queue.sendMessage(encodeMessage(m, messageEncoding));
    log.debug({ functionName: fn.name, queue: queue.name, count: messages.length }, 'Queue output written');
  };
}
