import { nodeImageFor } from '../../../shared/core/images/catalog';
import { moduleTreeFor } from '../nodeimage/moduleTree';
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import type { ResolvedTiming } from '../config';
import { FaultState } from '../faults/faultConfig';
import { touch } from '../model/etag';
import type { Snapshot } from '../model/snapshot';
import { isDedicatedNode, lowPriorityNodesWithinQuota, LOW_PRIORITY_QUOTA_ERROR, nodesWithinQuota, QUOTA_ERROR, type AccountQuota } from '../model/quota';
import type { JobRecord, Json, NodeRecord, NodeState, PoolRecord, TaskRecord } from '../model/types';
import { nodeEnvironment } from './env';
import type { NodeIdentityProvider } from '../model/identity';
import type { NodeAgent } from './nodeIdentity';
import { runsUnder } from './leftovers';
import { isAlive, killGroup, killPid } from './processes';
import { createNodeSandbox, nodeDirs, writeAtomically, writeEnvFile, writeHostsFile } from './sandbox';
import { hardwareLine, nodeHardware } from '../model/hardware';
import { modelledMounts, mountConfigurationError, mountOnNode } from './mounts';
import { prepareNetworkServices, type NetworkService, type ServiceHostEntry } from './networkServices';
import { prepareTcpServices, type TcpServices } from './tcpServices';
import { poolSubnet } from '../handlers/network';
import { holdLauncher } from './launcher';

export interface EngineConfig {
  dataDir: string;
  accountName: string;
  baseUrl: () => string;
  timing: ResolvedTiming;
  faults: FaultState;
  nodePath: string[];
  /** Where pool identities come from (the local identity service); without it no pool can have one. */
  identity?: NodeIdentityProvider;
  /** Per-node cap on node-to-node transfers (bytes/s each way); none when undefined. */
  nodeBandwidthBytesPerSec?: number;
  /** File servers in virtual networks, reachable from nodes of pools in their subnet only (networkServices.ts). */
  networkServices?: NetworkService[];
  /** PEM certificates nodes trust besides the public roots (a node's CA store): https resource files, identity transfers. */
  trustedCertificates: string[];
  /** Public host names nodes resolve to a local server (config.ts hostAliases). */
  hostAliases: Record<string, string>;
  /** The account's dedicated core quota (none: unlimited). */
  quota?: AccountQuota;
}

/**
 * Owns the emulated account's state: pools and their nodes' lifecycles, jobs and tasks.
 * Task execution and scheduling live in TaskExecutor / Scheduler, which call back into this.
 */
export class Engine {
  readonly pools = new Map<string, PoolRecord>();
  readonly jobs = new Map<string, JobRecord>();
  readonly hostsFile: string;
  readonly hardwareFile: string;
  /** The shared-network services' hosts-map entries (fixed at start). */
  private readonly serviceHosts: ServiceHostEntry[];
  /** The network services' TCP ports as nodes reach them (fixed at start). */
  readonly tcpServices: TcpServices;
  private readonly tmpDirs = new Set<string>();
  /** Every process group started on any node and not yet known dead. */
  readonly pgids = new Set<number>();
  /** The same, per node (start, prep and release tasks belong to no task record). */
  private readonly nodeGroups = new Map<string, Set<number>>();
  /**
   * How many times each node's and task's processes were killed. A process starts asynchronously (launcher.ts): a
   * kill that came while it was starting is seen by its starter as a changed count, and the new group is killed too.
   */
  private readonly killCounts = new WeakMap<object, number>();
  private readonly timers = new Set<NodeJS.Timeout>();
  private ipBase = 1 + Math.floor(Math.random() * 254);
  private ipCounter = 0;
  private nodeCounter = 0;
  private stopped = false;
  /** Called whenever something that could let a waiting task run has changed. */
  onCapacityChange: () => void = () => undefined;
  /** Called when nodes go away (or stop taking tasks), so their tasks can be requeued or ended with `reason`. */
  onNodeLeaving: (node: NodeRecord, requeue: boolean, reason?: string) => void = () => undefined;

  /** The account's dedicated core quota; tests may change it at any time (setQuota). */
  quota: AccountQuota;

  /** Lets go of the process launcher (launcher.ts): it ends with the last engine that used it. */
  private readonly releaseLauncher: () => void;

  constructor(readonly cfg: EngineConfig) {
    this.releaseLauncher = holdLauncher();
    this.quota = { ...(cfg.quota ?? {}) };
    this.hostsFile = path.join(cfg.dataDir, 'hosts');
    this.hardwareFile = path.join(cfg.dataDir, 'hardware');
    this.serviceHosts = prepareNetworkServices(cfg.dataDir, cfg.networkServices ?? []);
    this.tcpServices = prepareTcpServices(cfg.dataDir, cfg.networkServices ?? []);
    // Nodes then see the machine's network at the modelled addresses (connections fail there): say why, once.
    if (!this.tcpServices.available) console.warn(`[batch emulator] network services' TCP ports are not reachable from nodes: ${this.tcpServices.reason}`);
    this.rewriteHosts();
    cfg.faults.onChange = (patch) => {
      if (patch.unusableNodes || patch.nodes) this.applyUnusableToLiveNodes();
      if (patch.nodes) this.applyPreemptions();
      if (patch.nodes !== undefined) this.rewriteHosts();
    };
  }

  /** A node that is already up can fail too: its tasks are requeued and it goes unusable. */
  private applyUnusableToLiveNodes(): void {
    for (const pool of this.pools.values()) {
      for (const node of this.liveNodes(pool)) {
        if (node.state !== 'idle' && node.state !== 'running') continue;
        if (!this.cfg.faults.nodeBecomesUnusable(pool.id, node.ordinal, node.id)) continue;
        this.onNodeLeaving(node, true);
        this.killNodeProcesses(node);
        this.checkUsable(pool, node);
      }
    }
  }

  /** Nodes an injected preemption already took (each is preempted once). */
  private readonly preemptedByFault = new Set<string>();

  /** Spot nodes whose fault says preempted and that are up (or booting) are taken back now. */
  private applyPreemptions(): void {
    for (const pool of this.pools.values()) {
      for (const node of this.liveNodes(pool)) {
        if (isDedicatedNode(node) || ['preempted', 'leavingpool'].includes(node.state) || this.preemptedByFault.has(node.id)) continue;
        if (!this.cfg.faults.nodeFault(pool.id, node.ordinal, node.id)?.preempted) continue;
        this.preemptedByFault.add(node.id);
        this.preempt(pool, node);
      }
    }
  }

  /**
   * Azure takes a Spot node back (batch-spot-vms): "The preempted VMs have their state updated to Preempted", "the
   * VM is effectively deleted, leading to loss of any data stored locally", "a list nodes operation on the pool still
   * returns the preempted nodes", and the tasks that ran on it are requeued. Batch then seeks the pool's target: when
   * capacity returns (spotRestoreMs) the node keeps its id and goes through creating and starting again.
   */
  preempt(pool: PoolRecord, node: NodeRecord): void {
    this.onNodeLeaving(node, true);
    this.killNodeProcesses(node);
    const d = nodeDirs(this.cfg.dataDir, pool.id, node.id);
    for (const dir of [d.workitems, d.shared, d.startup, d.volatile, d.containers, d.tmp]) rmSync(dir, { recursive: true, force: true });
    createNodeSandbox(d);
    node.jobTasks = new Map();
    delete node.startTaskInfo;
    this.setNodeState(node, 'preempted');
    touch(pool);
    const restoreMs = this.cfg.faults.current.spotRestoreMs;
    if (restoreMs === undefined) return;
    this.later(restoreMs, () => {
      if (node.removed || node.state !== 'preempted') return;
      node.allocationTime = new Date();
      this.setNodeState(node, 'creating');
      this.later(this.cfg.timing.allocateMs, () => {
        if (node.removed) return;
        this.setNodeState(node, 'starting');
        this.later(this.cfg.timing.bootMs, () => this.boot(pool, node));
      });
    });
  }

  get isStopped(): boolean {
    return this.stopped;
  }

  later(ms: number, fn: () => void): NodeJS.Timeout {
    const t = setTimeout(() => {
      this.timers.delete(t);
      if (!this.stopped) fn();
    }, ms);
    this.timers.add(t);
    return t;
  }

  cancel(t: NodeJS.Timeout | undefined): void {
    if (!t) return;
    clearTimeout(t);
    this.timers.delete(t);
  }

  findNode(poolId: string, nodeId: string): NodeRecord | undefined {
    return this.pools.get(poolId.toLowerCase())?.nodes.get(nodeId);
  }

  liveNodes(pool: PoolRecord): NodeRecord[] {
    return [...pool.nodes.values()].filter((n) => !n.removed);
  }

  setNodeState(node: NodeRecord, state: NodeState): void {
    if (node.state === state) return;
    node.state = state;
    node.stateTransitionTime = new Date();
    if (state === 'idle' || state === 'running') this.onCapacityChange();
  }

  /**
   * An up node's state from what runs on it: running while it has tasks, else offline when scheduling is
   * disabled (Batch's state for a node that takes no tasks), else idle.
   */
  settleNode(node: NodeRecord): void {
    if (!['idle', 'running', 'offline'].includes(node.state)) return;
    this.setNodeState(node, node.running.size ? 'running' : node.schedulingState === 'disabled' ? 'offline' : 'idle');
  }

  // ---- pools -------------------------------------------------------------------------------

  /**
   * Grows or shrinks the pool toward its targets, dedicated and low-priority (Spot) apart, honouring allocation
   * faults and the account's quotas: dedicated cores (AccountCoreQuotaReached) and low-priority cores
   * (AccountLowPriorityCoreQuotaReached) are counted separately, as Batch does. A preempted node still counts towards
   * its pool's low-priority nodes ("Spot/Low-priority Compute Nodes which have been preempted are included").
   */
  resize(pool: PoolRecord, target: number, deallocation: string = 'requeue', targetLow: number = pool.targetLowPriorityNodes): void {
    pool.targetDedicatedNodes = target;
    pool.targetLowPriorityNodes = targetLow;
    pool.resizeErrors = [];
    this.setAllocationState(pool, 'resizing');
    const live = this.liveNodes(pool).filter((n) => n.state !== 'leavingpool');
    const dedicated = live.filter(isDedicatedNode);
    const low = live.filter((n) => !isDedicatedNode(n));
    let shrinking = false;
    for (const [nodes, want] of [
      [dedicated, target],
      [low, targetLow],
    ] as const) {
      if (want >= nodes.length) continue;
      shrinking = true;
      // Shrink: preempted and idle nodes first, then the least busy.
      const victims = [...nodes]
        .sort((a, b) => Number(b.state === 'preempted') - Number(a.state === 'preempted') || a.running.size - b.running.size)
        .slice(0, nodes.length - want);
      for (const n of victims) this.removeNode(pool, n, deallocation);
    }
    let wanted = Math.max(0, target - dedicated.length);
    let wantedLow = Math.max(0, targetLow - low.length);
    if (wanted + wantedLow === 0) {
      this.later(shrinking ? this.cfg.timing.leaveMs : 0, () => this.finishResize(pool));
      return;
    }
    const limit = this.cfg.faults.allocationLimit(pool.id);
    let error: Json | undefined;
    if (limit && wanted + wantedLow > limit.maxNodes) {
      wanted = Math.min(wanted, limit.maxNodes);
      wantedLow = Math.min(wantedLow, limit.maxNodes - wanted);
      error = { code: limit.code, message: limit.message };
    }
    const room = nodesWithinQuota(this.quota, this.pools.values(), pool);
    if (wanted > room) {
      wanted = room;
      error = { ...QUOTA_ERROR };
    }
    const roomLow = lowPriorityNodesWithinQuota(this.quota, this.pools.values(), pool);
    if (wantedLow > roomLow) {
      wantedLow = roomLow;
      error ??= { ...LOW_PRIORITY_QUOTA_ERROR };
    }
    let longest = this.cfg.timing.allocateMs;
    for (let i = 0; i < wanted; i++) longest = Math.max(longest, this.createNode(pool));
    for (let i = 0; i < wantedLow; i++) longest = Math.max(longest, this.createNode(pool, false));
    this.later(longest, () => {
      if (error) {
        pool.resizeErrors = [error];
        // A failed resize leaves the target where it was asked to be; current stays lower.
      }
      this.finishResize(pool);
    });
  }

  private finishResize(pool: PoolRecord): void {
    if (pool.allocationState === 'steady') return;
    this.setAllocationState(pool, 'steady');
  }

  setAllocationState(pool: PoolRecord, s: PoolRecord['allocationState']): void {
    pool.allocationState = s;
    pool.allocationStateTransitionTime = new Date();
    touch(pool);
  }

  stopResize(pool: PoolRecord): void {
    this.setAllocationState(pool, 'stopping');
    this.later(Math.min(50, this.cfg.timing.allocateMs), () => {
      const live = this.liveNodes(pool);
      pool.targetDedicatedNodes = live.filter(isDedicatedNode).length;
      pool.targetLowPriorityNodes = live.length - pool.targetDedicatedNodes;
      this.setAllocationState(pool, 'steady');
    });
  }

  /** The pool's mounts on a new or restored node, less those an injected fault broke on it (brokenMounts). */
  private mount(pool: PoolRecord, ordinal: number, nodeId: string, dirs: ReturnType<typeof nodeDirs>): Json | undefined {
    const broken = new Set(this.cfg.faults.nodeFault(pool.id, ordinal, nodeId)?.brokenMounts ?? []);
    const network = { services: this.serviceHosts, subnet: poolSubnet(pool.spec) };
    const mounts = modelledMounts(this.cfg.dataDir, pool.spec.mountConfiguration, network);
    const failed = mounts.filter((m) => m.failure !== undefined);
    mountOnNode(
      dirs.root,
      dirs.mounts,
      mounts.filter((m) => m.failure === undefined && !broken.has(m.relativeMountPath)),
    );
    return failed.length ? mountConfigurationError(failed) : undefined;
  }

  /** Returns how long the node takes to be allocated. */
  private createNode(pool: PoolRecord, dedicated = true): number {
    const ordinal = pool.nodeCounter++;
    this.nodeCounter++;
    // Azure's shape and length (tvmps_<64 hex>_d, 72 characters): what carries node ids (the live status, the job
    // result, task and log names) meets the sizes it meets on Azure.
    const id = `tvmps_${createHash('sha256').update(`${Date.now()}:${this.nodeCounter}:${pool.id}`).digest('hex')}_d`;
    const dirs = nodeDirs(this.cfg.dataDir, pool.id, id);
    const ip = this.nextIp();
    const now = new Date();
    const node: NodeRecord = {
      id,
      poolId: pool.id,
      ordinal,
      state: 'creating',
      schedulingState: 'enabled',
      stateTransitionTime: now,
      allocationTime: now,
      ipAddress: ip,
      rootDir: dirs.root,
      totalTasksRun: 0,
      totalTasksSucceeded: 0,
      running: new Map(),
      errors: [],
      jobTasks: new Map(),
      removed: false,
      ...(dedicated ? {} : { isDedicated: false }),
    };
    createNodeSandbox(dirs);
    const mountError = this.mount(pool, ordinal, id, dirs);
    if (mountError) node.mountError = mountError;
    this.tmpDirs.add(dirs.tmp);
    writeEnvFile(dirs.envFile, this.nodeEnv(node));
    pool.nodes.set(id, node);
    this.rewriteHosts();
    const allocate = this.cfg.timing.allocateMs + this.cfg.faults.extraAllocateMs(pool.id, ordinal);
    this.later(allocate, () => {
      if (node.removed) return;
      this.setNodeState(node, 'starting');
      this.later(this.cfg.timing.bootMs, () => this.boot(pool, node));
    });
    return allocate;
  }

  private readonly imdsHandles = new Map<string, { endpoint: string; close(): void }>();

  /**
   * The instance metadata service of a pool's nodes (AZURE_POD_IDENTITY_AUTHORITY_HOST), opened on first use; undefined
   * for a pool without identity. Azure gives every VM one at 169.254.169.254 serving the identities of its pool.
   */
  imdsOf(poolId: string): string | undefined {
    const pool = this.pools.get(poolId.toLowerCase());
    const ids = pool?.identity?.userAssignedIdentities.map((i) => i.resourceId) ?? [];
    if (!pool || ids.length === 0 || !this.cfg.identity) return undefined;
    let handle = this.imdsHandles.get(pool.id.toLowerCase());
    if (!handle) {
      handle = this.cfg.identity.openImds(ids);
      this.imdsHandles.set(pool.id.toLowerCase(), handle);
    }
    return handle.endpoint;
  }

  /** What the node agent of a pool's nodes uses for identity transfers: its IMDS and the node image's extra CAs. */
  agentOf(poolId: string): NodeAgent {
    const imds = this.imdsOf(poolId);
    return { ...(imds ? { imds } : {}), trustedCertificates: this.cfg.trustedCertificates, hostAliases: this.cfg.hostAliases };
  }

  private closeImds(poolId: string): void {
    this.imdsHandles.get(poolId.toLowerCase())?.close();
    this.imdsHandles.delete(poolId.toLowerCase());
  }

  nodeEnv(node: NodeRecord): Record<string, string> {
    const imds = this.imdsOf(node.poolId);
    return nodeEnvironment({
      ...(imds ? { imdsEndpoint: imds } : {}),
      accountName: this.cfg.accountName,
      accountUrl: this.cfg.baseUrl(),
      poolId: node.poolId,
      nodeId: node.id,
      ipAddress: node.ipAddress,
      root: node.rootDir,
      hostsFile: this.hostsFile,
      hardwareFile: this.hardwareFile,
      nodePath: this.cfg.nodePath,
      nodeBandwidthBytesPerSec: this.cfg.nodeBandwidthBytesPerSec,
      subnet: poolSubnet(this.pools.get(node.poolId.toLowerCase())?.spec ?? {}),
      ...this.modulePathOf(node.poolId),
      isDedicated: isDedicatedNode(node),
      tcpServicesEnv: this.tcpServices.env,
    });
  }

  /**
   * The MODULEPATH of a pool's nodes: the catalog's modulefiles of its image (shared/core/images/catalog.ts), so a name
   * Azure's image lacks fails here too; the machine's own modulefiles (environment-modules' dot, null, …) after them
   * on images that have environment modules. An image not in the catalog keeps the emulator's default tree.
   */
  private modulePathOf(poolId: string): { modulePath?: string } {
    const vm = ((this.pools.get(poolId.toLowerCase())?.spec ?? {}) as Json).virtualMachineConfiguration as Json | undefined;
    const ref = (vm?.imageReference ?? {}) as Json;
    const pick = (v: unknown) => (typeof v === 'string' ? v : '');
    const image = nodeImageFor({ image: { publisher: pick(ref.publisher), offer: pick(ref.offer), sku: pick(ref.sku) } });
    if (!image) return {};
    if (!image.modulePath) return { modulePath: '' };
    return { modulePath: [moduleTreeFor(image, this.cfg.dataDir), '/usr/share/modules/modulefiles'].join(':') };
  }

  private nextIp(): string {
    const n = this.ipCounter++;
    return `127.${this.ipBase}.${Math.floor(n / 250) % 256}.${(n % 250) + 2}`;
  }

  rewriteHosts(): void {
    const entries: { ip: string; root: string; envFile: string; faults: string[]; subnet?: string }[] = [];
    for (const p of this.pools.values()) {
      for (const n of p.nodes.values()) {
        if (n.removed) continue;
        const f = this.cfg.faults.nodeFault(p.id, n.ordinal, n.id);
        const faults = [...(f?.sshRefused ? ['refuse'] : []), ...(f?.sshDelayMs ? [`delay=${Math.round(f.sshDelayMs)}`] : [])];
        entries.push({ ip: n.ipAddress, root: n.rootDir, envFile: nodeDirs(this.cfg.dataDir, p.id, n.id).envFile, faults });
      }
    }
    // A service is no ssh target: "refuse" makes the ssh launcher answer Connection refused.
    for (const s of this.serviceHosts) entries.push({ ip: s.ip, root: s.root, envFile: '-', faults: ['refuse'], subnet: s.subnet });
    writeHostsFile(this.hostsFile, entries);
    this.rewriteHardware();
  }

  /** The modelled hardware of every node (model/hardware.ts), read by the node's emulated ibstat, ib_write_bw and stream. */
  private rewriteHardware(): void {
    const lines: string[] = [];
    for (const p of this.pools.values()) {
      const vmSize = typeof p.spec.vmSize === 'string' ? p.spec.vmSize : '';
      for (const n of p.nodes.values()) {
        if (!n.removed) lines.push(hardwareLine(n.ipAddress, nodeHardware(vmSize, this.cfg.faults.nodeFault(p.id, n.ordinal, n.id))));
      }
    }
    writeAtomically(this.hardwareFile, lines.join('\n') + '\n');
  }

  /** Start-task hook set by the task executor (it owns process running). */
  runStartTask: (pool: PoolRecord, node: NodeRecord) => void = () => undefined;

  private boot(pool: PoolRecord, node: NodeRecord): void {
    if (node.removed) return;
    node.lastBootTime = new Date();
    // Batch mounts before the start task: a failed mount leaves the node unusable, and no start task runs.
    if (node.mountError) {
      node.errors = [node.mountError];
      this.setNodeState(node, 'unusable');
      return;
    }
    if (pool.startTask) {
      const waitForSuccess = pool.startTask.waitForSuccess !== false;
      this.setNodeState(node, waitForSuccess ? 'waitingforstarttask' : 'idle');
      if (!waitForSuccess && this.checkUsable(pool, node)) this.settleNode(node);
      this.runStartTask(pool, node);
    } else {
      this.nodeReady(pool, node);
    }
  }

  /** A node that finished booting (and its start task, if it must wait) becomes idle or, by fault, unusable. */
  nodeReady(pool: PoolRecord, node: NodeRecord): void {
    if (node.removed) return;
    if (!this.checkUsable(pool, node)) return;
    this.setNodeState(node, 'idle');
    this.settleNode(node);
    this.applyPreemptions();
  }

  private checkUsable(pool: PoolRecord, node: NodeRecord): boolean {
    if (!this.cfg.faults.nodeBecomesUnusable(pool.id, node.ordinal, node.id)) return true;
    node.errors = [
      {
        code: 'NodeUnusable',
        message: 'The node is unusable: it failed a health check (injected fault).',
        errorDetails: [{ name: 'Reason', value: 'InjectedFault' }],
      },
    ];
    this.setNodeState(node, 'unusable');
    return false;
  }

  reboot(pool: PoolRecord, node: NodeRecord, option: string): void {
    this.onNodeLeaving(node, option !== 'terminate');
    this.killNodeProcesses(node);
    this.bootAgain(pool, node);
  }

  /**
   * Reimage: "Reinstalls the operating system on the specified Compute Node": its tasks end (requeued unless
   * `terminate`), everything the node kept on its disk (task, shared, startup and volatile folders, its /tmp) is
   * gone, and it boots again through its start task. Mounted file systems are not the node's disk and stay.
   */
  reimage(pool: PoolRecord, node: NodeRecord, option: string): void {
    this.onNodeLeaving(node, option !== 'terminate');
    this.killNodeProcesses(node);
    const d = nodeDirs(this.cfg.dataDir, pool.id, node.id);
    for (const dir of [d.workitems, d.shared, d.startup, d.volatile, d.containers, d.tmp]) rmSync(dir, { recursive: true, force: true });
    createNodeSandbox(d);
    // The accounts added to the node lived on its OS disk.
    node.users = undefined;
    this.bootAgain(pool, node, 'reimaging');
  }

  /** rebooting (or reimaging) → starting → booted: the start task runs again, as on every Batch node reboot. */
  private bootAgain(pool: PoolRecord, node: NodeRecord, state: 'rebooting' | 'reimaging' = 'rebooting'): void {
    this.setNodeState(node, state);
    this.later(this.cfg.timing.rebootMs, () => {
      if (node.removed) return;
      this.setNodeState(node, 'starting');
      this.later(this.cfg.timing.bootMs, () => this.boot(pool, node));
    });
  }

  /** The node leaves the pool; `drop` false: it stays (leavingpool, its cores counted) until its deleted pool is gone. */
  removeNode(pool: PoolRecord, node: NodeRecord, deallocation: string, drop = true): void {
    if (node.removed || node.state === 'leavingpool') return;
    this.onNodeLeaving(node, deallocation !== 'terminate');
    this.setNodeState(node, 'leavingpool');
    this.killNodeProcesses(node);
    if (drop) this.later(this.cfg.timing.leaveMs, () => this.dropNode(pool, node));
  }

  /** Removes the node for good: processes, containers, sandbox, hosts entry. */
  dropNode(pool: PoolRecord, node: NodeRecord): void {
    if (node.removed) return;
    this.killNodeProcesses(node);
    node.removed = true;
    pool.nodes.delete(node.id);
    const dirs = nodeDirs(this.cfg.dataDir, pool.id, node.id);
    rmSync(dirs.root, { recursive: true, force: true });
    rmSync(dirs.tmp, { recursive: true, force: true });
    rmSync(dirs.envFile, { force: true });
    this.rewriteHosts();
    touch(pool);
  }

  /** The kill count of a node or task record (see killCounts). */
  killCount(of: object): number {
    return this.killCounts.get(of) ?? 0;
  }

  /** Counts a kill of the node's or task's processes (see killCounts). */
  countKill(of: object): void {
    this.killCounts.set(of, this.killCount(of) + 1);
  }

  groupsOf(node: NodeRecord): Set<number> {
    const key = `${node.poolId.toLowerCase()}/${node.id}`;
    let set = this.nodeGroups.get(key);
    if (!set) {
      set = new Set();
      this.nodeGroups.set(key, set);
    }
    return set;
  }

  /** Kills every process group started on the node (tasks, start/prep/release tasks) and its containers. */
  killNodeProcesses(node: NodeRecord): void {
    this.countKill(node);
    const groups = this.groupsOf(node);
    for (const g of groups) {
      killGroup(g);
      this.pgids.delete(g);
    }
    groups.clear();
    for (const r of node.running.values()) {
      const t = this.jobs.get(r.jobId.toLowerCase())?.tasks.get(r.taskId.toLowerCase());
      for (const g of t?.pgids ?? []) killGroup(g);
    }
    killContainers(node.rootDir);
  }

  deletePool(pool: PoolRecord): void {
    pool.state = 'deleting';
    pool.stateTransitionTime = new Date();
    pool.targetDedicatedNodes = 0;
    pool.targetLowPriorityNodes = 0;
    this.setAllocationState(pool, 'resizing');
    // A deleted pool's nodes count against the core quota until the pool is gone (model/quota.ts).
    for (const n of this.liveNodes(pool)) this.removeNode(pool, n, 'requeue', false);
    this.later(Math.max(this.cfg.timing.leaveMs + 20, this.cfg.timing.poolDeleteMs), () => {
      for (const n of [...pool.nodes.values()]) this.dropNode(pool, n);
      rmSync(path.join(this.cfg.dataDir, 'nodes', pool.id), { recursive: true, force: true });
      this.pools.delete(pool.id.toLowerCase());
      this.closeImds(pool.id);
    });
  }

  // ---- persistence ----------------------------------------------------------------------

  snapshot(): Snapshot {
    return {
      version: 1,
      savedAt: new Date().toISOString(),
      counters: { ipBase: this.ipBase, ipCounter: this.ipCounter, nodeCounter: this.nodeCounter },
      pools: [...this.pools.values()],
      jobs: [...this.jobs.values()],
    };
  }

  /**
   * Takes back a saved account. Node processes did not survive the restart, so every node comes back
   * the way Batch recovers a node whose host failed: it reboots (`rebooting` → `starting`, its start
   * task runs again, then `idle`), and the caller requeues the tasks that were running on it, which
   * Batch counts as a requeue, not a retry. Nodes still being allocated finish booting, unusable nodes
   * stay unusable, leaving ones leave, and deleting pools finish deleting.
   */
  restore(s: Snapshot): void {
    this.ipBase = s.counters.ipBase;
    this.ipCounter = s.counters.ipCounter;
    this.nodeCounter = s.counters.nodeCounter;
    for (const pool of s.pools) {
      this.pools.set(pool.id.toLowerCase(), pool);
      if (pool.allocationState !== 'steady') this.setAllocationState(pool, 'steady');
      for (const node of pool.nodes.values()) {
        node.running = new Map();
        const dirs = nodeDirs(this.cfg.dataDir, pool.id, node.id);
        createNodeSandbox(dirs);
        const mountError = this.mount(pool, node.ordinal, node.id, dirs);
        if (mountError) node.mountError = mountError;
        else delete node.mountError;
        this.tmpDirs.add(dirs.tmp);
        writeEnvFile(dirs.envFile, this.nodeEnv(node));
        if (node.state === 'leavingpool') {
          this.later(this.cfg.timing.leaveMs, () => this.dropNode(pool, node));
        } else if (node.state === 'creating' || node.state === 'starting') {
          this.setNodeState(node, 'starting');
          this.later(this.cfg.timing.bootMs, () => this.boot(pool, node));
        } else if (node.state !== 'unusable' && node.state !== 'preempted') {
          this.bootAgain(pool, node);
        }
      }
      if (pool.state === 'deleting') this.deletePool(pool);
    }
    for (const job of s.jobs) this.jobs.set(job.id.toLowerCase(), job);
    this.rewriteHosts();
  }

  // ---- shutdown ----------------------------------------------------------------------------

  stop(): void {
    this.stopped = true;
    this.releaseLauncher();
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
    for (const j of this.jobs.values()) {
      if (j.wallClockTimer) clearTimeout(j.wallClockTimer);
      for (const t of j.tasks.values()) {
        if (t.wallClockTimer) clearTimeout(t.wallClockTimer);
        for (const g of t.pgids) killGroup(g);
      }
    }
    for (const g of this.pgids) killGroup(g);
    for (const p of this.pools.values()) for (const n of p.nodes.values()) killContainers(n.rootDir);
    // Node temp dirs live outside the data dir (see nodeTmpDir): remove every one this engine made.
    for (const dir of this.tmpDirs) rmSync(dir, { recursive: true, force: true });
  }
}

/** Containers are recorded by the node's docker/singularity tools as containers/<name>/config.json. */
export function killContainers(nodeRoot: string): void {
  const dir = path.join(nodeRoot, 'containers');
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return;
  }
  for (const name of names) {
    try {
      const cfg = JSON.parse(readFileSync(path.join(dir, name, 'config.json'), 'utf8')) as { pid?: number; state?: string };
      if (cfg.state !== 'running' || typeof cfg.pid !== 'number' || cfg.pid <= 1 || !isAlive(cfg.pid)) continue;
      // pids recycle (pid_max can be 32768): only kill a process that really belongs to this node.
      if (!belongsToNode(cfg.pid, nodeRoot)) continue;
      killGroup(cfg.pid);
      killPid(cfg.pid);
    } catch {
      // not a container record
    }
  }
}

/** True when the process runs with this node's environment or inside its sandbox. */
function belongsToNode(pid: number, nodeRoot: string): boolean {
  return runsUnder(pid, [nodeRoot + path.sep]);
}

export function taskKey(task: TaskRecord): string {
  return `${task.jobId.toLowerCase()}/${task.id.toLowerCase()}`;
}
