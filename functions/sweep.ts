/**
 * The operations sweep on a timer (SWEEP_SCHEDULE, NCRONTAB, default every 5 minutes). Adapter only: builds the
 * sweep's dependencies from configuration and the Durable client, runs shared/adapters/ops/sweep, logs one structured
 * summary line. Singleton through a blob lease (see shared/adapters/ops/lease.ts), so overlapping runs never act twice.
 */
import { app, type InvocationContext, type Timer } from '@azure/functions';
import * as df from 'durable-functions';
import type { DurableClient } from 'durable-functions';
import { sweepSchedule } from '../shared/adapters/config';
import { runSweep, type OrchestrationControl } from '../shared/adapters/ops/sweep';
import { blobAccount } from '../shared/adapters/storage/clients';
import {
  admissionDeps,
  appConfig,
  batchContext,
  batchContextFor,
  eventDelivery,
  jobStore,
  schedulingPolicy,
  schedulingStores,
  stagingAccounts,
} from '../shared/services';
import { redriveSubmission } from '../shared/core/intake/redrive';
import { schedulingHousekeeping } from '../shared/adapters/scheduling/housekeeping';
import { ADMISSION_EVENT, DEPENDENCY_EVENT } from '../shared/core/contract';
import { instanceStatus, orchestrationStarter } from './lib/durable';
import { sweepRunLevel } from '../shared/core/ops/routineRuns';

/** The Durable client as the sweep needs it: status (absent when there is no instance) and terminate. */
export function durableControl(client: DurableClient): OrchestrationControl {
  return {
    async status(instanceId) {
      const s = await instanceStatus(client, instanceId);
      if (!s || !s.runtimeStatus) return undefined;
      const custom = s.customStatus as { updatedAt?: unknown } | undefined;
      return {
        runtimeStatus: String(s.runtimeStatus),
        lastUpdatedTime: new Date(s.lastUpdatedTime).toISOString(),
        progressAt: typeof custom?.updatedAt === 'string' ? custom.updatedAt : undefined,
        // A terminated instance's output is the reason it was given.
        terminationReason: s.runtimeStatus === 'Terminated' && typeof s.output === 'string' ? s.output.slice(0, 500) : undefined,
      };
    },
    async terminate(instanceId, reason) {
      await client.terminate(instanceId, reason);
    },
    async purge(instanceId) {
      // An instance that is already gone answers 404, which the client reports as 0 instances purged.
      await client.purgeInstanceHistory(instanceId);
    },
  };
}

/**
 * Whether this host has finished a sweep yet. The first run after the host starts re-drives lost starts at once
 * (an unclean stop is when they happen, and nothing of the previous host can still be starting them).
 */
let sweptSinceStart = false;

export async function sweepTimer(timer: Timer, context: InvocationContext): Promise<void> {
  const cfg = appConfig();
  const events = await eventDelivery().catch((err: unknown) => {
    context.warn(`sweep: the event relay's tables are unavailable, their records of purged jobs stay: ${(err as Error).message}`);
    return undefined;
  });
  const store = await jobStore();
  const starter = orchestrationStarter(df.getClient(context));
  const policy = await schedulingPolicy();
  const report = await runSweep({
    batch: batchContext(),
    homeAccount: cfg.batch.accountName,
    // Every other account of BATCH_ACCOUNTS: jobs placed there leave their pools and Batch jobs there.
    otherAccounts: cfg.batchAccounts.filter((a) => a.name !== cfg.batch.accountName).map((a) => ({ name: a.name, batch: batchContextFor(a.name) })),
    store,
    orchestrations: durableControl(df.getClient(context)),
    redrive: async (jobId) => redriveSubmission(store, starter, policy, jobId),
    stagingAccounts: stagingAccounts(),
    hostBlobs: blobAccount(cfg.hostStorage).service,
    ...(events ? { eventDeliveries: events.deliveries } : {}),
    settings: {
      stallLimitMs: cfg.ops.stallLimitMs,
      graceMs: cfg.ops.graceMs,
      stagingRetentionMs: cfg.ops.stagingRetentionMs,
      jobsRetentionMs: cfg.ops.jobsRetentionMs,
      redriveAtOnce: !sweptSinceStart,
    },
  });
  if (report.ran) sweptSinceStart = true;
  const failed = report.actions.filter((a) => !a.ok);
  const client = df.getClient(context);
  const wake = (event: string) => async (ids: string[]) => {
    for (const id of ids) await client.raiseEvent(id, event, {}).catch(() => undefined);
  };
  const scheduling = report.ran
    ? await schedulingHousekeeping({
        store: await jobStore(),
        admission: await admissionDeps(),
        dependents: (await schedulingStores()).dependents,
        wakeAdmitted: wake(ADMISSION_EVENT),
        wakeDependents: wake(DEPENDENCY_EVENT),
      })
    : undefined;
  // One line per run, machine-readable: what was looked at, what each rule did, what failed, what was skipped.
  const line = JSON.stringify({
    event: 'sweep',
    runId: report.runId,
    ran: report.ran,
    isPastDue: timer.isPastDue,
    durationMs: report.durationMs,
    observed: report.observed,
    accounts: report.accounts,
    counts: report.counts,
    failed: failed.map((a) => a.error),
    skipped: report.skipped,
    scheduling,
    // Pools have owners: whose pool each deletion was (null: a pool from before owners, attributed by its job only).
    deletedPools: report.actions.flatMap((a) =>
      a.kind === 'deletePool' ? [{ poolId: a.poolId, jobId: a.jobId, owner: a.owner ?? null, rule: a.rule, ok: a.ok }] : [],
    ),
  });
  // A run that found nothing to do is routine: debug, not info.
  context[sweepRunLevel(report, scheduling)](line);
}

app.timer('sweep', { schedule: sweepSchedule(), extraInputs: [df.input.durableClient()], handler: sweepTimer });
