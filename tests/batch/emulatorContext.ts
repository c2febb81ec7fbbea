/** The Batch adapter's context for a running emulator, built from app settings the way the app builds its own, with test-speed retries. */
import type { BatchEmulatorHandle } from '../../local/batch';
import { loadConfig } from '../../shared/adapters/config';
import { createBatchContext, type BatchContext } from '../../shared/adapters/batch';

export function emulatorBatchContext(emu: BatchEmulatorHandle, maxAttempts = 4): BatchContext {
  const config = loadConfig({
    BATCH_ACCOUNT_URL: emu.url,
    BATCH_ACCOUNT_NAME: emu.accountName,
    BATCH_ACCOUNT_KEY: emu.accountKey,
    AzureWebJobsStorage: 'UseDevelopmentStorage=true',
    STAGING_ACCOUNTS: 'devstoreaccount1',
  });
  return createBatchContext(config, { policy: { maxAttempts, initialMs: 20, maxMs: 200, multiplier: 2, jitter: 0.5 } });
}
