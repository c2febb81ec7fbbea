/**
 * Issue 19 parts 3 and 4 end to end, on one stack for the file: a deployment with a pool identity (pools created
 * through the emulator's management plane with id-pool-local, the app reaching Resource Manager as id-app-local
 * through its managed identity endpoint, keyless like the rest of the stack) and a private registry (ACR's token service). Four real jobs, submitted over the public
 * API, pull hpc/mpi-demo from it and run real Open MPI on 2 emulated nodes each:
 *  - docker and singularity with the pool identity (container.registry.identity: managed);
 *  - docker and singularity with a credential by reference (identity: { secretRef: <app setting>, username }).
 * A fifth job names no registry and fails before any pool: the registry refuses the app's anonymous read of its image
 * config, as it would refuse the nodes' anonymous pull.
 * Asserted: no task command line, node environment, management-plane request, orchestration history or host log
 * holds the registry password or a token; the password reaches Batch only in the secret jobs' pull task
 * environment; the identity jobs' pools list the registry with the identity (identityReference), no password.
 */
import { mkdirSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import { TableServiceClient } from '@azure/data-tables';
import type { TokenCredential } from '@azure/core-auth';
import { startStack, REPO_ROOT, type Stack } from '../../local/stack';
import type { ExchangeRecord } from '../../local/batch';
import { checkCleanup, mpiOutput, submitSpec, watchJob, type JobViewLite } from '../../local/jobRunner';

let stack: Stack;
const dataPlane: ExchangeRecord[] = [];
const managementPlane: ExchangeRecord[] = [];
/** Every emulated node's environment file seen while the jobs ran (pools are deleted when their job ends). */
const nodeEnvironments = new Map<string, string>();
const views = new Map<string, JobViewLite>();
const hostLog = path.join(REPO_ROOT, 'test-artifacts', 'e2e-private-registry-host.log');
/** A JWT (registry tokens, Entra tokens): three base64url parts, the first an encoded JSON header. */
const JWT = /eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*/;

function spec(id: string, runtime: 'docker' | 'singularity', registry: string | undefined): string {
  const image = `${runtime === 'singularity' ? 'docker://' : ''}${stack.registry.host}/hpc/mpi-demo:1.0`;
  return [
    `id: ${id}`,
    `name: ${id}`,
    'pool: { vmSize: Standard_D4s_v5, nodes: 2 }',
    `container: { runtime: ${runtime}, images: ["${image}"]${registry ? `, registry: ${registry}` : ''} }`,
    'mpi: { runtime: openmpi, processesPerNode: 1, fabric: tcp, options: [--mca, btl_tcp_if_include, lo], command: mpi-demo run "$MPIJOB_DATA_DIR" }',
    'limits: { maxWallClock: PT20M }',
    // Azure's Ubuntu-HPC image has no Apptainer (docs/images.md); the emulated nodes do. The registry paths are what
    // this file tests, so the image check only warns here.
    ...(runtime === 'singularity' ? ['checks: { image: warn }'] : []),
  ].join('\n');
}

const password = () => stack.settings.LOCAL_REGISTRY_PASSWORD;

beforeAll(async () => {
  mkdirSync(path.dirname(hostLog), { recursive: true });
  stack = await startStack({
    port: 0,
    poolIdentity: true,
    registryAccess: 'private',
    logDestination: hostLog,
    demoImageFillerBytes: 64 * 1024,
    env: { NODE_TASK_MAX_ATTEMPTS: '1' },
    batch: { onExchange: (ex) => dataPlane.push(ex), onArmExchange: (ex) => managementPlane.push(ex) },
  });
  const identity = '{ server: "' + stack.registry.host + '", identity: managed }';
  const secret = `{ server: "${stack.registry.host}", identity: { secretRef: LOCAL_REGISTRY_PASSWORD, username: ${stack.settings.LOCAL_REGISTRY_USERNAME} } }`;
  const jobs: [string, 'docker' | 'singularity', string | undefined][] = [
    ['pr-docker-identity', 'docker', identity],
    ['pr-sing-identity', 'singularity', identity],
    ['pr-docker-secret', 'docker', secret],
    ['pr-sing-secret', 'singularity', secret],
    ['pr-docker-anonymous', 'docker', undefined],
  ];
  const ids = await Promise.all(jobs.map(([id, runtime, registry]) => submitSpec(stack, spec(id, runtime, registry))));
  const sampler = setInterval(() => {
    for (const id of ids) {
      for (const n of stack.batch.nodes(`hpc-${id}`)) {
        try {
          nodeEnvironments.set(n.envFile, readFileSync(n.envFile, 'utf8'));
        } catch {
          // removed between the listing and the read
        }
      }
    }
  }, 100);
  try {
    for (const v of await Promise.all(ids.map((id) => watchJob(stack, id, 420_000)))) views.set(v.id, v);
  } finally {
    clearInterval(sampler);
  }
}, 600_000);
afterAll(async () => stack?.stop(), 60_000);

async function expectSucceeded(id: string): Promise<JobViewLite> {
  const view = views.get(id) as JobViewLite;
  if (view.state !== 'Succeeded') throw new Error(`job ${id} ${view.state}: ${view.error?.message ?? ''}\n${await mpiOutput(stack, view)}`);
  const line = (view.result?.mpi?.stdoutTail ?? '').split('\n').find((l) => l.startsWith('RESULT '));
  expect(line && JSON.parse(line.slice('RESULT '.length))).toMatchObject({ ranks: 2, nodes: 2, badRecords: 0 });
  expect((view.progress as { progress?: { imagesPulled?: unknown } } | null)?.progress?.imagesPulled).toEqual({ done: 2, total: 2 });
  expect(await checkCleanup(stack, view)).toEqual([]);
  return view;
}

/** The pool-create body the product sent for a job, as it went over the wire to the management plane. */
function poolBody(jobId: string): Record<string, unknown> {
  const put = managementPlane.find((e) => e.method === 'PUT' && e.path.endsWith(`/pools/hpc-${jobId}`) && e.status === 200);
  if (!put) throw new Error(`no management-plane pool create for ${jobId}`);
  return put.requestBody as Record<string, unknown>;
}

type AddedTask = { id: string; commandLine: string; environmentSettings?: { name: string; value: string }[]; multiInstanceSettings?: unknown };

/** Every task the product added to Batch jobs whose id matches: one by one (Task_Add) or in collections (Task_AddCollection). */
function addedTasks(batchJob: RegExp): { path: string; task: AddedTask }[] {
  return dataPlane
    .filter((e) => e.method === 'POST')
    .flatMap((e) => {
      const m = /^\/jobs\/([^/]+)\/(tasks|addtaskcollection)$/.exec(e.path);
      if (!m || !batchJob.test(m[1])) return [];
      const tasks = m[2] === 'tasks' ? [e.requestBody as AddedTask] : (e.requestBody as { value: AddedTask[] }).value;
      return tasks.map((task) => ({ path: e.path, task }));
    });
}

/** The per-node pull tasks the product added for a job. */
function pullTasks(jobId: string): AddedTask[] {
  return addedTasks(new RegExp(`^hpc-${jobId}$`))
    .map((a) => a.task)
    .filter((t) => t.id.startsWith('pull'));
}

describe('pulls with the pool identity', () => {
  test.each(['pr-docker-identity', 'pr-sing-identity'])(
    '%s: the job succeeds on a pool that carries id-pool-local, pulling through IMDS and the token exchange',
    async (id) => {
      await expectSucceeded(id);
      const body = poolBody(id) as {
        identity: { userAssignedIdentities: Record<string, unknown> };
        properties: { deploymentConfiguration: { virtualMachineConfiguration: { containerConfiguration: { containerRegistries?: unknown[] } } } };
      };
      expect(Object.keys(body.identity.userAssignedIdentities)).toEqual([stack.settings.POOL_IDENTITY_RESOURCE_ID]);
      expect(body.properties.deploymentConfiguration.virtualMachineConfiguration.containerConfiguration.containerRegistries).toEqual([
        { registryServer: stack.registry.host, identityReference: { resourceId: stack.settings.POOL_IDENTITY_RESOURCE_ID } },
      ]);
      const tasks = pullTasks(id);
      expect(tasks.length).toBeGreaterThanOrEqual(2);
      for (const t of tasks) {
        expect(t.commandLine).toContain(`client_id=${stack.settings.POOL_IDENTITY_CLIENT_ID}`);
        expect(t.commandLine).toContain('/oauth2/exchange');
        expect(t.environmentSettings ?? []).toEqual([]);
      }
    },
  );
});

describe('pulls with a credential by reference', () => {
  test.each(['pr-docker-secret', 'pr-sing-secret'])('%s: the job succeeds; the secret reaches Batch only in the pull task environment', async (id) => {
    await expectSucceeded(id);
    const body = poolBody(id);
    expect(JSON.stringify(body)).not.toContain(password());
    for (const t of pullTasks(id)) {
      expect(t.environmentSettings).toEqual([{ name: 'MPIJOB_REGISTRY_PASSWORD', value: password() }]);
      expect(t.commandLine).toContain('"$MPIJOB_REGISTRY_PASSWORD"');
    }
  });
});

test('a job that names no registry is refused by the private registry before any pool (the image evidence read, docs/images.md)', async () => {
  const view = views.get('pr-docker-anonymous') as JobViewLite;
  expect(view.state).toBe('Failed');
  expect(view.error?.message ?? '').toMatch(
    /^container\.images\[0\]: image .*hpc\/mpi-demo:1\.0: .* refused an anonymous pull .*the nodes would pull with the same credentials/,
  );
  expect(dataPlane.concat(managementPlane).filter((e) => e.path.includes('hpc-pr-docker-anonymous'))).toEqual([]);
});

test('no command line, node environment, pool definition, orchestration history or log line holds the password or a token', async () => {
  expect(password()).toMatch(/^[A-Za-z0-9_-]{20,}$/);
  const leaks: string[] = [];
  const check = (where: string, text: string) => {
    if (text.includes(password())) leaks.push(`${where}: the registry password`);
    const jwt = JWT.exec(text);
    if (jwt) leaks.push(`${where}: a token ${jwt[0].slice(0, 24)}…`);
  };
  // Task definitions as Batch stored them: command lines of every task, and the environment of all but the secret pulls.
  const tasks = addedTasks(/./);
  expect(tasks.length).toBeGreaterThan(0);
  for (const { path: at, task: t } of tasks) {
    check(`task ${at}/${t.id} command line`, `${t.commandLine} ${JSON.stringify(t.multiInstanceSettings ?? '')}`);
    if (!t.id.startsWith('pull')) check(`task ${t.id} environment`, JSON.stringify(t.environmentSettings ?? []));
  }
  for (const e of dataPlane.filter((x) => x.method === 'POST' && (x.path === '/pools' || x.path === '/jobs')))
    check(`${e.path} body`, JSON.stringify(e.requestBody));
  for (const e of managementPlane) check(`management ${e.method} ${e.path}`, `${JSON.stringify(e.requestBody ?? '')} ${JSON.stringify(e.responseBody ?? '')}`);
  // Four jobs of 2 nodes: the anonymous job fails before its pool (its image read is refused).
  expect(nodeEnvironments.size).toBeGreaterThanOrEqual(8);
  for (const [file, env] of nodeEnvironments) check(`node environment ${file}`, env);
  // Nodes of the identity pools have their instance metadata service; every node of this deployment's pools does.
  expect([...nodeEnvironments.values()].every((env) => env.includes('AZURE_POD_IDENTITY_AUTHORITY_HOST='))).toBe(true);
  check('host log', readFileSync(hostLog, 'utf8'));
  // The orchestrations' history names the setting, never its value.
  // Read as the operator (the keyless stack refuses keys): the tenant admin's storage token.
  const tables = new TableServiceClient(stack.azurite.tableEndpoint(), stack.operator.credential as TokenCredential);
  let historyRows = 0;
  for await (const t of tables.listTables()) {
    if (!t.name?.endsWith('History') && !t.name?.endsWith('Instances')) continue;
    for await (const row of stack.operator.table(t.name).listEntities()) {
      historyRows++;
      check(`table ${t.name}`, JSON.stringify(row));
    }
  }
  expect(historyRows).toBeGreaterThan(50);
  expect(leaks).toEqual([]);
});
