/**
 * The local Durable engine's longest idle wait between queue polls comes from host.json as the extension reads it
 * (extensions.durableTask.storageProvider.maxQueuePollingInterval), with the Azure Storage provider's 30 s default.
 */
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { resolveOptions } from '../../local/durable/config';

const REPO_HOST_JSON = JSON.parse(readFileSync(path.join(__dirname, '..', '..', 'host.json'), 'utf8')) as Record<string, unknown>;
const withInterval = (value: unknown) => ({ extensions: { durableTask: { storageProvider: { maxQueuePollingInterval: value } } } });

test("the app's host.json sets 5 s, and the engine's idle polls follow it", () => {
  expect(resolveOptions(REPO_HOST_JSON).maxPollingIntervalMs).toBe(5_000);
});

test('without the setting, the provider default of 30 s; a TimeSpan is read as the extension reads it', () => {
  expect(resolveOptions({}).maxPollingIntervalMs).toBe(30_000);
  expect(resolveOptions(withInterval('00:00:01.500')).maxPollingIntervalMs).toBe(1_500);
  expect(resolveOptions(withInterval('00:01:00')).maxPollingIntervalMs).toBe(60_000);
});

test('an explicit option wins over host.json', () => {
  expect(resolveOptions(REPO_HOST_JSON, { maxPollingIntervalMs: 250 }).maxPollingIntervalMs).toBe(250);
});

test('a value that is not a positive TimeSpan is refused, naming the setting', () => {
  expect(() => resolveOptions(withInterval('5 seconds'))).toThrow(/storageProvider\.maxQueuePollingInterval/);
  expect(() => resolveOptions(withInterval('00:00:00'))).toThrow(/must be positive/);
});
