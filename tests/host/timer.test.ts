import { BlobServiceClient } from '@azure/storage-blob';
import type { AzuriteHandle } from '../../local/azurite';
import { MONITOR_CONTAINER, statusBlobName } from '../../local/host/triggers/scheduleMonitor';
import { events, type AppEvent } from '../fixtures/host-app/src/events';
import { startAzurite, startFixtureHost, waitFor } from './harness';

const ticks = (): AppEvent[] => events().filter((e) => e.kind === 'tick');

describe('local host: timer triggers', () => {
  let azurite: AzuriteHandle;

  beforeAll(async () => {
    azurite = await startAzurite();
  });
  afterAll(async () => {
    await azurite?.stop();
  });
  beforeEach(() => {
    events().length = 0;
  });

  it('fires every second and reports isPastDue after the host fell behind', async () => {
    const { host } = await startFixtureHost(azurite, { env: { HOST_APP_TIMER_SCHEDULE: '*/1 * * * * *' } });
    try {
      await waitFor('two ticks', () => (ticks().length >= 2 ? true : undefined), 5000);
      expect(ticks().every((t) => t.isPastDue === false)).toBe(true);
      const t0 = ticks()[0].at as number;
      expect((ticks()[1].at as number) - t0).toBeGreaterThanOrEqual(500);

      // Block the event loop past the next occurrences: the host misses them.
      const blockedUntil = Date.now() + 2500;
      while (Date.now() < blockedUntil) {
        /* busy */
      }
      const before = ticks().length;
      await waitFor('the late tick', () => (ticks().length > before ? true : undefined), 3000);
      expect(ticks()[before].isPastDue).toBe(true);
      // Missed occurrences are folded into one invocation, and the schedule is back on time afterwards.
      await waitFor('an on-time tick', () => (ticks().length > before + 1 ? true : undefined), 3000);
      expect(ticks()[before + 1].isPastDue).toBe(false);
      const status = ticks()[before + 1].scheduleStatus as { last: string; next: string; lastUpdated: string };
      expect(Date.parse(status.next)).toBeGreaterThan(Date.parse(status.last));
    } finally {
      await host.stop();
    }
    const after = ticks().length;
    await new Promise((r) => setTimeout(r, 1200));
    expect(ticks().length).toBe(after); // no tick after stop
  });

  it('runs once at start-up with runOnStartup', async () => {
    const { host } = await startFixtureHost(azurite, {
      env: { HOST_APP_TIMER_SCHEDULE: '0 0 0 1 1 *', HOST_APP_TIMER_RUN_ON_STARTUP: 'true' },
    });
    try {
      await waitFor('the start-up tick', () => (ticks().length === 1 ? true : undefined), 3000);
      expect(ticks()[0].isPastDue).toBe(false);
      expect(host.banner()).toContain('tick: timerTrigger (schedule "0 0 0 1 1 *", runOnStartup)');
    } finally {
      await host.stop();
    }
    expect(ticks()).toHaveLength(1);
    expect(process.env.HOST_APP_TIMER_SCHEDULE).toBeUndefined(); // the host restored the environment
  });

  it('rejects a schedule that is not six-field NCRONTAB', async () => {
    await expect(startFixtureHost(azurite, { env: { HOST_APP_TIMER_SCHEDULE: '*/5 * * * *' } })).rejects.toThrow(/six fields/);
    // The failed start left nothing behind: a new host starts.
    const { host } = await startFixtureHost(azurite);
    await host.stop();
  });

  it('fires once with isPastDue at start when the stored schedule status shows a missed occurrence', async () => {
    // The status blob the host keeps for schedules at most once a minute (host id = app folder name).
    const blob = BlobServiceClient.fromConnectionString(azurite.connectionString())
      .getContainerClient(MONITOR_CONTAINER)
      .getBlockBlobClient(statusBlobName('host-app', 'tick'));
    await BlobServiceClient.fromConnectionString(azurite.connectionString()).getContainerClient(MONITOR_CONTAINER).createIfNotExists();
    const hourAgo = new Date(Date.now() - 3600_000).toISOString();
    const stale = JSON.stringify({ Last: hourAgo, Next: new Date(Date.now() - 60_000).toISOString(), LastUpdated: hourAgo });
    await blob.upload(stale, stale.length);

    const env = { HOST_APP_TIMER_SCHEDULE: '0 0 0 1 1 *' };
    const first = await startFixtureHost(azurite, { env });
    try {
      await waitFor('the past-due tick', () => (ticks().length === 1 ? true : undefined), 3000);
      expect(ticks()[0].isPastDue).toBe(true);
      expect((ticks()[0].scheduleStatus as { last: string }).last).toBe(hourAgo.replace(/\.\d{3}Z$/, '+00:00'));
    } finally {
      await first.host.stop();
    }
    const saved = JSON.parse((await blob.downloadToBuffer()).toString()) as { Next: string };
    expect(Date.parse(saved.Next)).toBeGreaterThan(Date.now());

    // Nothing was missed since: a restart does not fire.
    const second = await startFixtureHost(azurite, { env });
    await new Promise((r) => setTimeout(r, 300));
    await second.host.stop();
    expect(ticks()).toHaveLength(1);
  });
});
