/**
 * The readable summary of an explain document (hpcjob explain without --json): one block per stage of the pipeline,
 * the command lines in full (they are what runs), the run-time values named. Pure: returns text, prints nothing.
 */
import type { ExplainDocument } from '../shared/core/contract/explain';

type Json = Record<string, unknown>;

const str = (v: unknown): string => (v === undefined || v === null ? '' : String(v));
const obj = (v: unknown): Json => (v && typeof v === 'object' ? (v as Json) : {});
const arr = (v: unknown): Json[] => (Array.isArray(v) ? (v as Json[]) : []);

/** A labelled block: the first line after the label, the others indented under it. */
function block(label: string, lines: string[]): string[] {
  const pad = ' '.repeat(10);
  return lines.filter((l) => l !== '').map((l, i) => `${i === 0 ? label.padEnd(10) : pad}${l}`);
}

function resourceFiles(files: unknown): string[] {
  return arr(files).map((f) => {
    const from = str(f.httpUrl) || `${str(f.storageContainerUrl)}${f.blobPrefix ? ` (prefix ${str(f.blobPrefix)})` : ''}`;
    return `  ${str(f.filePath) || '.'} ← ${from}${f.fileMode ? ` (mode ${str(f.fileMode)})` : ''}`;
  });
}

function outputFiles(files: unknown): string[] {
  return arr(files).map((f) => {
    const dest = obj(obj(f.destination).container);
    return `  ${str(f.filePattern)} → ${str(dest.path)} (${str(obj(f.uploadOptions).uploadCondition)})`;
  });
}

function environment(env: unknown): string {
  return arr(env)
    .map((e) => `${str(e.name)}=${str(e.value)}`)
    .join(' ');
}

function poolLines(doc: ExplainDocument): string[] {
  const p = doc.pool;
  if (p.action === 'reuse') {
    return [`reuse ${p.poolId} (${p.nodes} node(s)${p.vmSize ? ` of ${p.vmSize}` : ''}); never deleted`, ...p.reuseChecks.map((c) => `  check: ${c}`)];
  }
  // The data plane's Pool_Add, or the management plane's Pools_Create body (its properties, named a little differently).
  const management = p.plane === 'management';
  const r = management ? obj(obj(p.request).properties) : obj(p.request);
  const vm = management ? obj(obj(r.deploymentConfiguration).virtualMachineConfiguration) : obj(r.virtualMachineConfiguration);
  const image = obj(vm.imageReference);
  const imageId = management ? image.id : image.virtualMachineImageId;
  const imageText = imageId ? str(imageId) : [image.publisher, image.offer, image.sku, image.version].map(str).join('/');
  const start = obj(r.startTask);
  const identity = management ? Object.keys(obj(obj(obj(p.request).identity).userAssignedIdentities)) : [];
  return [
    `create ${p.poolId}: ${p.nodes} × ${str(r.vmSize)}, image ${imageText} (${str(management ? vm.nodeAgentSkuId : vm.nodeAgentSKUId)}), inter-node communication, ` +
      `no image preload, allocation within ${p.resizeTimeoutMinutes} min${p.minNodes < p.nodes ? ` (runs on ${p.minNodes}+ nodes)` : ''}; deleted: ${p.deleteAfter}`,
    ...(management ? [`through the management plane (Resource Manager) with the pool identity ${identity.join(', ')}`] : []),
    ...(r.startTask ? [`start task (every node, elevated): ${str(start.commandLine)}`, ...resourceFiles(start.resourceFiles)] : []),
    ...p.mounts.map(
      (m) =>
        `mount ${m.name} (${m.kind}${m.access === 'readOnly' ? ', read-only' : ''}) at ${m.path}: ${m.credential}${m.atJobEnd ? `; at job end: ${m.atJobEnd}` : ''}`,
    ),
  ];
}

export function formatExplain(doc: ExplainDocument): string {
  const source =
    doc.settings.source === 'deployment'
      ? 'as this deployment would run it (its settings and policies)'
      : "offline, with the documented default settings (the deployment's policies are not checked)";
  return [
    `job ${doc.jobId} (id from ${doc.jobIdFrom}), ${source}: nothing was created`,
    '',
    ...block('Queue', queueLines(doc)),
    ...block('Pool', poolLines(doc)),
    ...block('Batch job', batchJobLines(doc)),
    ...block('Images', imageLines(doc)),
    ...block('Staging', stagingLines(doc)),
    ...(doc.nodeFiles.length ? block('Files', fileLines(doc)) : []),
    ...(doc.scratch ? block('Scratch', scratchLines(doc.scratch)) : []),
    ...block('MPI task', mpiTaskLines(doc)),
    ...block('Preflight', preflightLines(doc)),
    ...block('Retry', retryLines(doc)),
    ...(doc.outputs ? block('Outputs', outputsLines(doc.outputs)) : []),
    ...block('Limits', limitsLines(doc)),
    ...block('Cost', costLines(doc.cost)),
    ...(doc.notes.length ? block('Notes', doc.notes) : []),
    '',
    `${doc.placeholders.length} value(s) are left open until the job runs (or, offline, to the deployment): shown as <run-time: …> / <deployment: …>.`,
    'The full requests: hpcjob --json explain <spec>.',
  ].join('\n');
}

function queueLines(doc: ExplainDocument): string[] {
  const q = doc.scheduling;
  return [
    `${q.queue}, priority ${q.priority}${q.dependsOn.length ? `, after ${q.dependsOn.map((d) => `${d.job} (${d.condition})`).join(', ')}` : ''}`,
    ...(q.array ? [`array of ${q.array.jobs} job(s) ${q.array.firstJobId} … ${q.array.lastJobId}; shown: ${q.array.shownJobId}`] : []),
  ];
}

function batchJobLines(doc: ExplainDocument): string[] {
  const job = obj(doc.batchJob.request);
  return [
    `${doc.batchJob.batchJobId} on pool ${doc.pool.poolId}; ${
      doc.batchJob.autoComplete
        ? `terminates itself when its tasks complete, set ${doc.batchJob.autoComplete.after === 'mpiTaskAdded' ? 'once the MPI task is added' : 'after the node upload tasks'}`
        : 'stays active after its tasks (cleanup.autoComplete false) until cleanup terminates it'
    }`,
    `preparation (every node): ${str(obj(job.jobPreparationTask).commandLine)}`,
    `release (every node, elevated): ${str(obj(job.jobReleaseTask).commandLine)}`,
  ];
}

function imageLines(doc: ExplainDocument): string[] {
  const pulls = doc.imagePulls;
  return pulls
    ? [
        `${pulls.nodes} node(s) pull ${pulls.images.length} image(s) with ${pulls.runtime}, at most ${pulls.concurrency} node(s) at once, ${pulls.maxAttempts} attempt(s) each`,
        ...pulls.images.map((i) => `  ${i.image}: ${i.pulledAs}${i.sifPath ? ` → ${i.sifPath}` : ''}`),
        `task per node: ${str(obj(pulls.task.request).commandLine)}`,
      ]
    : ['none (the program runs natively)'];
}

function stagingLines(doc: ExplainDocument): string[] {
  const s = doc.staging;
  return [
    s.inputs.length
      ? `${s.inputs.map((i) => `${i.account}/${i.container}/${i.prefix}`).join(', ')} → shards of ${s.shardSizeMB.min}–${s.shardSizeMB.max} MB` +
        ` in ${s.stagingAccounts.join(', ')} (container ${s.container}), read-only SAS ${s.sasMinutes} min`
      : 'no inputs',
    `every node downloads its shards into ${s.destination} ($MPIJOB_DATA_DIR), ${s.concurrency} node(s) at once`,
  ];
}

function fileLines(doc: ExplainDocument): string[] {
  return doc.nodeFiles.map(
    (f) => `${f.path} ← ${f.source}${f.fileMode ? ` (mode ${f.fileMode})` : ''}${f.sasMinutes !== null ? ` (SAS ${f.sasMinutes} min)` : ''}`,
  );
}

function scratchLines(scratch: NonNullable<ExplainDocument['scratch']>): string[] {
  const where =
    scratch.kind === 'mount'
      ? `on pool mount ${str(scratch.mount)}`
      : scratch.kind === 'beeond'
        ? "BeeOND (BeeGFS on demand) over the local disks of all the job's nodes: beeond start by the master before the ranks, beeond stop by the job release task"
        : "NFS export of the master's local disk, mounted by the other nodes";
  const at = scratch.path ? `${scratch.path} ($MPIJOB_SCRATCH, bind-mounted from ${scratch.directory})` : `${scratch.directory} ($MPIJOB_SCRATCH)`;
  return [`${at}: ${where}`];
}

function mpiTaskLines(doc: ExplainDocument): string[] {
  const m = doc.mpiTask;
  const task = obj(m.request);
  const multi = obj(task.multiInstanceSettings);
  return [
    `${m.taskId}: ${m.numberOfInstances} instance(s), ${m.mpiRuntime}${m.mpiVersion ? ` ${m.mpiVersion}` : ''} over ${m.fabric}, ${m.launcher} launcher, ` +
      `${m.processesPerNode} per node = ${m.ranks} rank(s)${obj(task.constraints).maxWallClockTime ? `, wall clock ${str(obj(task.constraints).maxWallClockTime)}` : ''}`,
    ...(m.preset ? [`preset ${m.preset.family}: ${m.preset.reason}`] : []),
    ...(m.imageEvidence ? [`image evidence: ${m.imageEvidence.note}`] : []),
    ...(m.containerRunOptions ? [`container on every node: docker run ${m.containerRunOptions.join(' ')}`] : []),
    `coordination (every node): ${str(multi.coordinationCommandLine)}`,
    `application (master): ${str(task.commandLine)}`,
    ...(arr(task.environmentSettings).length ? [`environment: ${environment(task.environmentSettings)}`] : []),
    ...(arr(multi.commonResourceFiles).length
      ? ['files (every node, relative to the task directory; wd/ is the working directory):', ...resourceFiles(multi.commonResourceFiles)]
      : []),
    ...(arr(task.outputFiles).length ? ['output files (master, when the task ends):', ...outputFiles(task.outputFiles)] : []),
  ];
}

function preflightLines(doc: ExplainDocument): string[] {
  const p = doc.preflight;
  return p
    ? [
        `${p.taskIds} on every node before the MPI task: ssh within ${p.maxSshMs} ms, ${p.minFreeMB} MB free` +
          `${p.pingPong.enabled ? `, MPI ping-pong (${pingPongLimits(p.pingPong)})` : ''}` +
          `${p.runsPreExecutionCommand ? ', after the pre-execution command' : ''}; bad nodes replaced, up to ${p.rounds} more check(s)`,
      ]
    : ['none (preflight.enabled false)'];
}

function retryLines(doc: ExplainDocument): string[] {
  const r = doc.retry;
  return [
    r.maxAttempts > 1
      ? `up to ${r.maxAttempts} attempts on ${[...r.on, ...(r.exitCodes.length ? [`exit codes ${r.exitCodes.join(', ')}`] : [])].join(', ') || 'nothing'}, backoff ${r.backoffSeconds.initial}–${r.backoffSeconds.max} s, failed nodes replaced`
      : 'one attempt (retry.maxAttempts 1)',
  ];
}

function outputsLines(o: NonNullable<ExplainDocument['outputs']>): string[] {
  const uploads = o.nodeUploads;
  return [
    `${o.account}/${o.container}/${o.prefix}/, files when ${o.when}${o.logs ? ', logs always' : ''}, upload failures: ${o.onUploadFailure}`,
    ...(uploads?.master ? ['upload task on the master:', ...outputFiles(uploads.master.outputFiles)] : []),
    ...(uploads?.otherNodes ? ['upload task on every other node:', ...outputFiles(uploads.otherNodes.outputFiles)] : []),
  ];
}

function limitsLines(doc: ExplainDocument): string[] {
  const l = doc.limits;
  return [
    `MPI wall clock ${l.mpiMaxWallClockSeconds !== null ? `${l.mpiMaxWallClockSeconds} s` : 'none'}, retries ${l.maxRetries}, pipeline budget ${l.pipelineBudgetMinutes} min`,
  ];
}

function pingPongLimits(pp: { maxLatencyUs: number | null; minBandwidthMBps: number | null }): string {
  const limits = [
    ...(pp.maxLatencyUs !== null ? [`latency ≤ ${pp.maxLatencyUs} µs`] : []),
    ...(pp.minBandwidthMBps !== null ? [`bandwidth ≥ ${pp.minBandwidthMBps} MB/s`] : []),
  ];
  return limits.length ? limits.join(', ') : 'figures recorded, not judged';
}

/** The estimate and the price's source: a fallback price says so on its own line. */
export function costLines(c: ExplainDocument['cost']): string[] {
  const amount = (n: number) => `${n.toFixed(2)} ${c.currency}`;
  const lines =
    c.perHour !== null && c.worstCase !== null
      ? [
          `${c.nodes} × ${c.vmSize} at ${c.pricePerNodeHour} ${c.currency}/node-hour = ${amount(c.perHour)} per hour; worst case ${amount(c.worstCase)} ` +
            `(bound by ${c.boundBy}, ${c.wallClockHours} h)`,
        ]
      : ['no estimate'];
  if (c.maxCost) lines.push(`maxCost ${c.maxCost.amount} ${c.maxCost.currency}: the job is cancelled when its estimated cost passes it`);
  lines.push(`${c.fallback ? 'FALLBACK price' : 'price'}: ${c.priceSource}`);
  lines.push(...c.notes);
  return lines;
}
