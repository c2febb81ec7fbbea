/**
 * GET /api/queues with several Batch accounts (queuesView, pure): each account's quota as placement weighs it and what
 * our jobs hold on it; a reservation without an account is the home account's. One account: no `accounts` section, and
 * the placement inputs (prices, offered sizes) never leak into `limits`.
 */
import { queuesView } from '../../shared/adapters/scheduling/admissionService';
import type { AdmissionLimits, Reservation } from '../../shared/core/scheduling/admission';
import { EMPTY_LEDGER, type AdmissionSnapshot } from '../../shared/core/scheduling/ledger';

const reservation = (jobId: string, cores: number, account?: string): Reservation => ({
  jobId,
  owner: 'alice',
  queue: 'default',
  family: 'standardDSv5Family',
  cores,
  nodes: cores / 2,
  pools: 1,
  grantedAt: '2026-11-27T20:00:00Z',
  grant: 1,
  acked: true,
  ...(account ? { account } : {}),
});

const snapshot = (rs: Reservation[]): AdmissionSnapshot => ({
  ledger: { ...EMPTY_LEDGER, grantSeq: rs.length, reservations: Object.fromEntries(rs.map((r) => [r.jobId, r])) },
  waiting: [],
});

const base: AdmissionLimits = { queues: [{ name: 'default', priority: 0 }], coreQuota: { families: {} }, backfillLimit: 0 };

test('several accounts: each with its quota and the reservations placed on it, home first', () => {
  const limits: AdmissionLimits = {
    ...base,
    accounts: [
      {
        name: 'home',
        coreQuota: { total: 10, families: { standardDSv5Family: 2 } },
        region: 'eastus',
        stagingAccounts: [],
        prices: { standard_d2s_v5: 0.1 },
        vmSizes: new Set(['standard_d2s_v5']),
      },
      { name: 'second', coreQuota: { total: 100, families: { standardDSv5Family: 64 } }, lowPriorityCores: 8, stagingAccounts: [] },
    ],
  };
  const view = queuesView(limits, snapshot([reservation('a', 4, 'second'), reservation('b', 2), reservation('c', 8, 'second')]));
  expect(view.accounts).toEqual([
    {
      name: 'home',
      region: 'eastus',
      coreQuota: { total: 10, families: { standardDSv5Family: 2 } },
      running: 1,
      reservedNodes: 1,
      reservedCores: { standardDSv5Family: 2 },
    },
    {
      name: 'second',
      coreQuota: { total: 100, families: { standardDSv5Family: 64 } },
      lowPriorityCores: 8,
      running: 2,
      reservedNodes: 6,
      reservedCores: { standardDSv5Family: 12 },
    },
  ]);
  expect(view.limits).not.toHaveProperty('accounts');
  expect(view.totals.cores).toBe(14);
});

test('one account: no accounts section', () => {
  const view = queuesView(base, snapshot([reservation('a', 4)]));
  expect(view).not.toHaveProperty('accounts');
  expect(view.limits).not.toHaveProperty('accounts');
});
