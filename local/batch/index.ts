import { mkdtempSync, mkdirSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { DEFAULT_TIMING, DEV_ACCOUNT_KEY, DEV_ACCOUNT_NAME, type BatchEmulatorOptions } from './config';
import { FaultState, type FaultConfig } from './faults/faultConfig';
import type { AccountQuota } from './model/quota';
import { createBatchServer } from './handlers/server';
import { createArmServer } from './arm/server';
import type { Server } from 'node:http';
import { continueTaskSeqAfter } from './handlers/tasks';
import { loadSnapshot, saveSnapshot } from './model/snapshot';
import { Engine } from './runner/engine';
import { JobLifecycle } from './runner/jobLifecycle';
import { killLeftoverNodeProcesses } from './runner/leftovers';
import { nodeDirs } from './runner/sandbox';
import { Scheduler } from './runner/scheduler';
import { TaskExecutor } from './runner/taskExecutor';

export { DEV_ACCOUNT_KEY, DEV_ACCOUNT_NAME, API_VERSION } from './config';
export type { BatchEmulatorOptions, EmulatorTiming, ExchangeRecord } from './config';
export type { FaultConfig, NodeFault } from './faults/faultConfig';
export type { NodeIdentityProvider } from './model/identity';
export type { ArmAccessConfig } from './arm/auth';
export { ARM_AUDIENCES } from './arm/auth';
export { BATCH_AUDIENCE, type BatchAadOptions, type BatchDataRoles } from './auth/bearer';
export type { AccountQuota } from './model/quota';
export { SSH_LAUNCHER, LAUNCHER_BIN_DIR } from './runner/env';

export interface EmulatedNodeInfo {
  id: string;
  state: string;
  ipAddress: string;
  /** AZ_BATCH_NODE_ROOT_DIR */
  rootDir: string;
  sharedDir: string;
  startupDir: string;
  /** Shell-sourceable node environment (what the ssh launcher applies). */
  envFile: string;
}

export interface BatchEmulatorHandle {
  /** http://127.0.0.1:port */
  url: string;
  /** The management plane's endpoint (ARM_ENDPOINT), when `arm` was given. */
  armUrl?: string;
  accountName: string;
  /** The account's key; refused when the account allows Microsoft Entra ID only (`sharedKeyAllowed` false). */
  accountKey: string;
  sharedKeyAllowed: boolean;
  /** Where node sandboxes live. */
  dataDir: string;
  setFaults(f: Partial<FaultConfig>): void;
  /** Replaces the account's dedicated core quota. */
  setQuota(q: AccountQuota): void;
  /** The account's pools now (a pool being deleted is listed until it is gone), with their allocated nodes. */
  pools(): { id: string; state: string; vmSize: string; nodes: number }[];
  nodes(poolId: string): EmulatedNodeInfo[];
  /** Whether nodes reach the network services' TCP ports (runner/tcpServices.ts), and why not when they do not. */
  tcpServices: { available: boolean; reason?: string };
  /** Kills every task/container process, removes sandboxes, closes the server. */
  stop(): Promise<void>;
}

export async function startBatchEmulator(opts: BatchEmulatorOptions = {}): Promise<BatchEmulatorHandle> {
  const host = opts.host ?? '127.0.0.1';
  const accountName = opts.accountName ?? DEV_ACCOUNT_NAME;
  const accountKey = opts.accountKey ?? DEV_ACCOUNT_KEY;
  const ownsDataDir = !opts.dataDir;
  const dataDir = opts.dataDir ?? mkdtempSync(path.join(os.tmpdir(), 'batch-emu-'));
  mkdirSync(dataDir, { recursive: true });
  if (opts.persist && !opts.dataDir) throw new Error('startBatchEmulator: persist needs a dataDir to keep the state in');
  const faults = new FaultState(opts.faults);
  let url = '';
  const engine = new Engine({
    dataDir,
    accountName,
    baseUrl: () => url,
    timing: { ...DEFAULT_TIMING, ...(opts.timing ?? {}) },
    faults,
    nodePath: opts.nodePath ?? [],
    identity: opts.identity,
    nodeBandwidthBytesPerSec: opts.nodeBandwidthBytesPerSec,
    ...(opts.networkServices ? { networkServices: opts.networkServices } : {}),
    trustedCertificates: opts.trustedCertificates ?? [],
    hostAliases: opts.hostAliases ?? {},
    quota: opts.quota,
  });
  const executor = new TaskExecutor(engine);
  const scheduler = new Scheduler(engine, executor);
  const jobs = new JobLifecycle(engine, executor);
  const stateFile = path.join(dataDir, 'state.json');
  const saved = opts.persist ? loadSnapshot(stateFile) : undefined;
  // A run that was killed could not end its tasks: they must not run on beside their requeued selves.
  if (opts.persist) killLeftoverNodeProcesses(dataDir);
  // Set once the saved state is back in the engine: no save before that may overwrite it.
  let restored = false;
  const server = createBatchServer({
    accountName,
    accountKey,
    auth: { sharedKey: opts.sharedKey ?? true, aad: opts.aad },
    faults,
    services: { engine, executor, scheduler, jobs },
    baseUrl: () => url,
    onExchange: opts.onExchange,
    // The periodic save below keeps the emulator's own progress (nodes booting, tasks ending); a change a client was
    // told was accepted (a pool deleted, a job terminated) is saved before the answer, or a SIGKILL within the save
    // interval would lose it and the client would wait for a deletion Batch never forgets.
    beforeAnswer: opts.persist
      ? (method, status) => {
          if (restored && method !== 'GET' && method !== 'HEAD' && status < 400) saveSnapshot(stateFile, engine.snapshot());
        }
      : undefined,
  });
  // Keep-alive sockets from SDK clients must not hold stop() open.
  server.keepAliveTimeout = 1000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, host, () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  url = `http://${host}:${port}`;
  let armUrl: string | undefined;
  let armServer: Server | undefined;
  if (opts.arm) {
    armServer = createArmServer({
      scope: { subscriptionId: opts.arm.subscriptionId, resourceGroup: opts.arm.resourceGroup, accountName },
      access: opts.arm.access,
      identity: opts.identity,
      services: { engine, executor, scheduler, jobs },
      baseUrl: () => armUrl as string,
      accountUrl: () => url,
      location: opts.arm.location,
      sharedKey: opts.sharedKey ?? true,
      onExchange: opts.onArmExchange,
    });
    armServer.keepAliveTimeout = 1000;
    const listening = armServer;
    await new Promise<void>((resolve, reject) => {
      listening.once('error', reject);
      listening.listen(opts.arm?.port ?? 0, host, () => resolve());
    });
    armUrl = `http://${host}:${(listening.address() as AddressInfo).port}`;
  }
  if (saved) {
    engine.restore(saved);
    let maxSeq = -1;
    for (const j of saved.jobs) for (const t of j.tasks.values()) maxSeq = Math.max(maxSeq, t.seq);
    continueTaskSeqAfter(maxSeq);
    jobs.resumeAfterRestore();
    scheduler.kick();
  }
  restored = true;
  const saver = opts.persist ? setInterval(() => saveSnapshot(stateFile, engine.snapshot()), 1000) : undefined;
  saver?.unref();

  return {
    tcpServices: { available: engine.tcpServices.available, ...(engine.tcpServices.reason ? { reason: engine.tcpServices.reason } : {}) },
    url,
    armUrl,
    accountName,
    accountKey,
    sharedKeyAllowed: opts.sharedKey ?? true,
    dataDir,
    setFaults: (f) => faults.update(f),
    setQuota: (q) => {
      engine.quota = { ...q };
    },
    pools: () =>
      [...engine.pools.values()].map((p) => ({
        id: p.id,
        state: p.state,
        vmSize: String(p.spec.vmSize ?? ''),
        nodes: [...p.nodes.values()].filter((n) => !n.removed).length,
      })),
    nodes: (poolId) => {
      const pool = engine.pools.get(poolId.toLowerCase());
      if (!pool) return [];
      return [...pool.nodes.values()]
        .filter((n) => !n.removed)
        .map((n) => {
          const d = nodeDirs(dataDir, pool.id, n.id);
          return { id: n.id, state: n.state, ipAddress: n.ipAddress, rootDir: d.root, sharedDir: d.shared, startupDir: d.startup, envFile: d.envFile };
        });
    },
    stop: async () => {
      scheduler.stop();
      if (saver) {
        clearInterval(saver);
        saveSnapshot(stateFile, engine.snapshot());
      }
      engine.stop();
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      if (armServer) {
        const closing = armServer;
        await new Promise<void>((resolve) => {
          closing.close(() => resolve());
          closing.closeAllConnections();
        });
      }
      if (ownsDataDir) rmSync(dataDir, { recursive: true, force: true });
      else if (!opts.persist) {
        rmSync(path.join(dataDir, 'nodes'), { recursive: true, force: true });
        rmSync(path.join(dataDir, 'mounts'), { recursive: true, force: true });
      }
    },
  };
}
