import type { BatchAadOptions } from './auth/bearer';
import type { FaultConfig } from './faults/faultConfig';
import type { NodeIdentityProvider } from './model/identity';
import type { ArmAccessConfig } from './arm/auth';
import type { AccountQuota } from './model/quota';
import type { NetworkService } from './runner/networkServices';

/** The fixed development key of the emulator (like Azurite's well-known key): never a secret. */
export const DEV_ACCOUNT_NAME = 'localbatch';
export const DEV_ACCOUNT_KEY = Buffer.from('local-batch-emulator-development-key-0123456789abcdef').toString('base64');
export const API_VERSION = '2022-10-01.16.0';

/** How long emulated node transitions take. Small in tests, a few seconds for demos. */
export interface EmulatorTiming {
  /** creating → starting (VM allocation). */
  allocateMs?: number;
  /** starting → waitingforstarttask/idle (boot + node agent). */
  bootMs?: number;
  /** How often the scheduler re-examines waiting work even without an event. */
  startTaskPollMs?: number;
  /** leavingpool → gone (and the pool `deleting` → gone). */
  leaveMs?: number;
  /** rebooting → starting. */
  rebootMs?: number;
  /** How long a deleted pool stays visible in state `deleting` (at least leaveMs); its id is refused with PoolBeingDeleted meanwhile. */
  poolDeleteMs?: number;
  /** How long a deleted job stays visible in state `deleting` (at least as long as its release tasks run); JobBeingDeleted meanwhile. */
  jobDeleteMs?: number;
}

export type ResolvedTiming = Required<EmulatorTiming>;

export const DEFAULT_TIMING: ResolvedTiming = {
  allocateMs: 300,
  bootMs: 300,
  startTaskPollMs: 250,
  leaveMs: 100,
  rebootMs: 300,
  poolDeleteMs: 200,
  jobDeleteMs: 200,
};

export interface ExchangeRecord {
  method: string;
  path: string;
  query: Record<string, string>;
  headers: Record<string, string>;
  requestBody: unknown;
  status: number;
  responseBody: unknown;
  /** Response headers as sent (lower-case names). */
  responseHeaders?: Record<string, string>;
}

export interface BatchEmulatorOptions {
  /** 0 = ephemeral (default). */
  port?: number;
  host?: string;
  accountName?: string;
  /** base64; default DEV_ACCOUNT_KEY. */
  accountKey?: string;
  /**
   * Whether the account allows shared key authentication (allowedAuthenticationModes SharedKey; default true). The
   * keyless local stack turns it off: a shared key request is refused with 403, as by an account allowing only AAD.
   */
  sharedKey?: boolean;
  /** The Microsoft Entra ID tenant whose bearer tokens the account accepts (auth/bearer.ts); none: bearer answers 501. */
  aad?: BatchAadOptions;
  /** Where node sandboxes live; default a fresh temp dir removed on stop. */
  dataDir?: string;
  timing?: EmulatorTiming;
  faults?: FaultConfig;
  /**
   * The account's quotas: dedicated cores per VM family and in total (enforced at allocation), low-priority cores,
   * pools and active jobs (reported by the management plane's account GET). Unset: not enforced, and the account GET
   * reports Batch's defaults for a new account (model/catalog.ts). See docs/azure-facts.md.
   */
  quota?: AccountQuota;
  onExchange?: (ex: ExchangeRecord) => void;
  /** Extra dirs prepended to every node's PATH (e.g. the nodetools bin dir). */
  nodePath?: string[];
  /** Where pool identities come from (the local identity service): lets management-plane pools carry one. */
  identity?: NodeIdentityProvider;
  /**
   * Serve the account's management plane (Resource Manager's Microsoft.Batch/batchAccounts/pools) on its own
   * listener: where the account sits, and who may call it (token verification and role assignments).
   */
  arm?: {
    subscriptionId: string;
    resourceGroup: string;
    access: ArmAccessConfig;
    port?: number;
    /** The account's region (default westeurope). */ location?: string;
  };
  /** Every management-plane exchange, for contract tests. */
  onArmExchange?: (ex: ExchangeRecord) => void;
  /**
   * Each node's network cap for node-to-node transfers, bytes per second in each direction (default: none). The
   * emulated nodes share one machine, so a node's NIC is modelled: a node's concurrent outgoing copies share this
   * budget, and so do its incoming ones (docs/local-batch.md, "Node-to-node bandwidth").
   */
  nodeBandwidthBytesPerSec?: number;
  /**
   * File servers in virtual networks (a head node's NFS export, NetApp Files, Azure Files NFS): each at its private
   * address in one subnet, mountable (`mount -t nfs <address>:<path>`) only from nodes of pools in that subnet
   * (runner/networkServices.ts; docs/local-batch.md, "Virtual networks").
   */
  networkServices?: NetworkService[];
  /**
   * PEM CA certificates the emulated nodes trust besides Node's public roots, for https resource files and the node
   * agent's identity transfers: what adding a CA to a real node's trust store does (e.g. a test's own https server).
   */
  trustedCertificates?: string[];
  /**
   * The emulated nodes' name resolution for public hosts the local stack stands in for: a host name as specs name it
   * (e.g. `wrf-release.example.org`) → the `host:port` of the local https server serving it. A node's https resource
   * file on such a host is read from there (its certificate must name that address and be trusted:
   * trustedCertificates), as a real node reaches the public host.
   */
  hostAliases?: Record<string, string>;
  /**
   * Keep the account across restarts: state is saved to `<dataDir>/state.json` (every second and on
   * stop) and loaded at start; stop() then keeps the node sandboxes. Needs `dataDir`.
   */
  persist?: boolean;
}
