/**
 * pool.yaml (`pool_specification`) into the `pool` section of every generated spec. Shipyard pools outlived their
 * jobs and were shared; here each job creates its own pool of the same shape and deletes it when it ends.
 */
import { isGpuSize, retiredVmSize } from '../../../shared/core/planning/vmSizes';
import { gpuGeneration } from '../../../shared/core/mpi/generation';
import { isRdmaCapable } from '../../../shared/core/mpi/rdmaPresets';
import { shellQuote } from '../../../shared/core/mpi/shellQuote';
import { parseIsoDuration } from '../../../shared/core/spec/duration';
import * as P from '../../../shared/core/spec/patterns';
import { isObj, setIn, type MappingContext, type Obj, type SpecDraft } from './context';
import { joinIndex, joinKey } from './report';
import { NOT_NEEDED } from './notes';
import { inputData } from './data';
import { blobUrlParts } from './storage';
import { imageVerdict, retiredNodeAgent, shipyardTimespanToIso, successorVmSize, toTagValue } from './values';

export interface PoolFacts {
  /** The size the specs use (a retired one's successor). */
  vmSize?: string;
  /** The size the recipe named (what Shipyard chose its fabric settings by). */
  originalVmSize?: string;
  rdma: boolean;
  gpu: boolean;
  dedicated?: number;
  lowPriority: number;
  perJobAutoScratch: boolean;
  /** The pool's image was replaced by the spec's default (Ubuntu) one. */
  imageReplaced: boolean;
  /** Start-task pieces; the job's own preparation command is appended per job. */
  start: StartTaskParts;
}

export interface StartTaskParts {
  exports: string[];
  commands: string[];
  resourceFiles: { account: string; container: string; blob: string; path: string }[];
  chmods: string[];
}

const NOT_CARRIED = {
  autoscale: "the job's pool has a fixed size: it is created for the job and deleted after it, so there is nothing to scale",
  reboot_on_start_task_failed:
    "a node whose start task fails is not rebooted: the job fails with the node's start-task error, or continues on fewer nodes with pool.partialAllocation",
  attempt_recovery_on_unusable: 'unusable nodes are not recovered: the job fails, or continues on fewer nodes with pool.partialAllocation',
  upload_diagnostics_logs_on_unusable: 'node service logs are not uploaded; the job view shows the node states and start-task errors',
  transfer_files_on_pool_creation: 'data ingress from your machine (global_resources.files) is not carried: upload the data to a data account (azcopy) first',
  ssh: 'no login user is created on the nodes; the job view, hpcjob logs and the dashboard show the MPI output (Batch remote login to nodes is outside the job spec)',
  rdp: 'Windows pools are not supported: MPI jobs run on Linux InfiniBand nodes',
  remote_access_control: 'inbound endpoint rules are not configurable: the job needs no inbound access',
  virtual_network: 'pools cannot join your virtual network from the job spec',
  public_ips: 'pools cannot use your public IPs from the job spec',
  certificates: 'Batch certificates are retired (February 2024); the job spec installs none',
  batch_insights_enabled: 'Batch Insights is not installed; the job result records stage timings and node-minutes',
  prometheus: 'node exporters are not installed; the job view and dashboard show progress, node states and timings',
} as const;

export function mapPool(ctx: MappingContext, drafts: SpecDraft[]): PoolFacts {
  const role = 'pool' as const;
  const root = ctx.sources.pool?.value;
  const facts: PoolFacts = {
    rdma: false,
    gpu: false,
    lowPriority: 0,
    perJobAutoScratch: false,
    imageReplaced: false,
    start: { exports: [], commands: [], resourceFiles: [], chmods: [] },
  };
  ctx.visit(
    role,
    '',
    root,
    {
      pool_specification: (spec, base) => poolSpecification(ctx, spec, base, drafts, facts),
    },
    {},
    drafts,
  );
  applyStartTask(drafts, facts);
  return facts;
}

/** pool_specification: the pool's shape (size first: other settings depend on it), start task and runtimes. */
function poolSpecification(ctx: MappingContext, spec: unknown, base: string, drafts: SpecDraft[], facts: PoolFacts): void {
  const role = 'pool' as const;
  const set = (path: string[], value: unknown) => drafts.forEach((d) => setIn(d.spec, path, value));
  const s = isObj(spec) ? spec : {};
  // The size first: other settings (GPUs, fabric) depend on it.
  mapVmSize(ctx, s.vm_size, joinKey(base, 'vm_size'), drafts, facts);
  if (s.vm_configuration !== undefined) facts.imageReplaced = mapVmConfiguration(ctx, s.vm_configuration, joinKey(base, 'vm_configuration'), drafts);
  ctx.visit(
    role,
    base,
    spec,
    {
      id: (v, p) => {
        const tag = typeof v === 'string' ? toTagValue(v) : '';
        if (tag) set(['tags', 'shipyard-pool'], tag);
        ctx.mapped(
          role,
          p,
          tag ? 'tags.shipyard-pool' : undefined,
          'not needed as an id: each job creates its own pool of this shape (named by the control plane) and deletes it when it ends; kept as a tag',
          drafts,
        );
      },
      vm_size: () => undefined,
      vm_configuration: () => undefined,
      vm_count: (v, p) => vmCount(ctx, v, p, drafts, facts),
      resize_timeout: (v, p) => {
        const iso = shipyardTimespanToIso(v);
        if (!iso) return ctx.unsupported(role, p, 'not a Shipyard time span ("HH:MM:SS" or "D.HH:MM:SS"): the default PT15M applies', drafts);
        const low = (parseIsoDuration(iso) ?? 0) < 5 * 60_000;
        set(['pool', 'resizeTimeout'], low ? 'PT5M' : iso);
        if (low) ctx.approximated(role, p, 'pool.resizeTimeout', `${iso} raised to PT5M, the shortest resize timeout Batch accepts`, drafts);
        else ctx.mapped(role, p, 'pool.resizeTimeout', iso, drafts);
      },
      max_tasks_per_node: (v, p) =>
        v === 1
          ? ctx.mapped(role, p, undefined, "not needed: the job's pool runs its one MPI task, one per node", drafts)
          : ctx.approximated(role, p, undefined, "the job's pool runs its one MPI task, one per node: more task slots have no use", drafts),
      node_fill_type: (_v, p) => ctx.mapped(role, p, undefined, 'not needed: the pool runs one multi-instance task, which takes every node', drafts),
      inter_node_communication_enabled: (v, p) =>
        v === true
          ? ctx.mapped(role, p, undefined, 'every pool the control plane creates has inter-node communication', drafts)
          : ctx.approximated(role, p, undefined, "the job's pool has inter-node communication anyway: MPI needs it", drafts),
      per_job_auto_scratch: (v, p) => {
        facts.perJobAutoScratch = v === true;
        ctx.mapped(
          role,
          p,
          undefined,
          v === true ? NOT_NEEDED("a job's shared scratch (its auto_scratch, the spec's scratch) needs no pool setting") : 'no per-job scratch',
          drafts,
        );
      },
      block_until_all_global_resources_loaded: (v, p) =>
        v === false
          ? ctx.approximated(
              role,
              p,
              undefined,
              'every node holds every image before the MPI task starts (staggered pulls); there is no way to start earlier',
              drafts,
            )
          : ctx.mapped(role, p, undefined, 'every node holds every image before the MPI task starts (staggered pulls)', drafts),
      input_data: (v, p) => inputData(ctx, role, v, p, drafts, 'pool'),
      resource_files: (v, p) => mapStartFiles(ctx, v, p, drafts, facts),
      additional_node_prep: (v, p) => nodePrep(ctx, v, p, drafts, facts),
      gpu: (v, p) => gpuSettings(ctx, v, p, drafts),
      container_runtimes: (v, p) => containerRuntimes(ctx, v, p, drafts),
    },
    NOT_CARRIED,
    drafts,
  );
}

/** vm_count: the dedicated nodes (the MPI task spans them); low-priority ones Batch refuses with inter-node communication. */
function vmCount(ctx: MappingContext, v: unknown, p: string, drafts: SpecDraft[], facts: PoolFacts): void {
  const role = 'pool' as const;
  const set = (path: string[], value: unknown) => drafts.forEach((d) => setIn(d.spec, path, value));
  ctx.visit(
    role,
    p,
    v,
    {
      dedicated: (n, q) => {
        if (typeof n === 'number' && Number.isInteger(n) && n >= 0) {
          facts.dedicated = n;
          if (n > 0) set(['pool', 'nodes'], n);
          ctx.mapped(
            role,
            q,
            n > 0 ? 'pool.nodes' : undefined,
            n > 0 ? `${n} dedicated node(s); the MPI task spans all of them` : 'no dedicated nodes',
            drafts,
          );
        } else ctx.unsupported(role, q, 'must be a whole number ≥ 0', drafts);
      },
      low_priority: (n, q) => {
        if (n === 0 || n === null)
          ctx.mapped(role, q, 'pool.lowPriorityNodes', 'no low-priority nodes (Batch refuses them with inter-node communication)', drafts, {
            noComment: true,
          });
        else if (typeof n === 'number' && Number.isInteger(n) && n > 0) {
          facts.lowPriority = n;
          ctx.unsupported(role, q, 'low-priority (Spot) nodes: Batch refuses them in pools with inter-node communication, which MPI needs', drafts);
        } else ctx.unsupported(role, q, 'must be a whole number ≥ 0', drafts);
      },
    },
    {},
    drafts,
  );
}

/** additional_node_prep: commands and environment of the start task. */
function nodePrep(ctx: MappingContext, v: unknown, p: string, drafts: SpecDraft[], facts: PoolFacts): void {
  const role = 'pool' as const;
  ctx.visit(
    role,
    p,
    v,
    {
      commands: (c, q) =>
        ctx.visit(
          role,
          q,
          c,
          {
            pre: (list, r) => startCommands(ctx, list, r, drafts, facts, 'before'),
            post: (list, r) => startCommands(ctx, list, r, drafts, facts, 'after'),
          },
          {},
          drafts,
        ),
      environment_variables: (env, q) => startEnv(ctx, env, q, drafts, facts),
      environment_variables_keyvault_secret_id: (_s, q) =>
        ctx.secret(
          role,
          q,
          'unsupported',
          "a Key Vault secret of environment variables: the start task has no secret environment in the job spec (and specs never carry secrets); set them on the image or fetch them in the start task with the pool's identity",
          drafts,
        ),
    },
    {},
    drafts,
  );
}

/** gpu: driver settings; none is carried. */
function gpuSettings(ctx: MappingContext, v: unknown, p: string, drafts: SpecDraft[]): void {
  const role = 'pool' as const;
  ctx.visit(
    role,
    p,
    v,
    {
      nvidia_driver: (_d, q) =>
        ctx.unsupported(
          role,
          q,
          'no NVIDIA driver is installed by the control plane: the default HPC image ships one; a custom driver must be in your image or start task',
          drafts,
        ),
      ignore_warnings: (_d, q) => ctx.mapped(role, q, undefined, 'not needed: no GPU driver warnings are raised', drafts),
    },
    {},
    drafts,
  );
}

/** container_runtimes: the runtimes to install and the default one. */
function containerRuntimes(ctx: MappingContext, v: unknown, p: string, drafts: SpecDraft[]): void {
  const role = 'pool' as const;
  ctx.visit(
    role,
    p,
    v,
    {
      install: (list, q) => {
        const items = Array.isArray(list) ? list : [];
        items.forEach((item, i) => {
          const r = joinIndex(q, i);
          if (item === 'singularity')
            ctx.approximated(
              role,
              r,
              undefined,
              'Singularity is not installed by the control plane: the pool image must have it (install it in pool.startTask otherwise)',
              drafts,
            );
          else ctx.unsupported(role, r, `container runtime ${JSON.stringify(item)} is not supported (docker and singularity are)`, drafts);
        });
        if (!Array.isArray(list)) ctx.unsupported(role, q, 'must be a list', drafts);
      },
      default: (d, q) =>
        d === 'runc' || d === null
          ? ctx.mapped(role, q, undefined, 'docker runs containers with runc', drafts)
          : ctx.unsupported(role, q, `default container runtime ${JSON.stringify(d)} is not supported (runc only)`, drafts),
    },
    {},
    drafts,
  );
}

function mapVmSize(ctx: MappingContext, v: unknown, path: string, drafts: SpecDraft[], facts: PoolFacts): void {
  if (typeof v !== 'string' || !P.VM_SIZE_RE.test(v)) {
    ctx.unsupported('pool', path, v === undefined ? 'missing: Shipyard requires vm_size; set pool.vmSize' : 'not a VM size: set pool.vmSize', drafts);
    return;
  }
  const successor = successorVmSize(v);
  const size = successor ?? v;
  facts.vmSize = size;
  facts.originalVmSize = v;
  facts.rdma = isRdmaCapable(size);
  facts.gpu = isGpuSize(size);
  drafts.forEach((d) => setIn(d.spec, ['pool', 'vmSize'], size));
  if (successor) {
    const r = retiredVmSize(v);
    const gpuChange =
      isGpuSize(v) && isGpuSize(successor)
        ? `; GPU generation change: ${r?.series} → ${gpuGeneration(successor)?.gpu ?? successor}, a container built with a CUDA older than ${gpuGeneration(successor) ? gpuGeneration(successor)!.minCuda.join('.') : 'the GPU needs'} has no kernels for it (declare container.cuda to have it checked)`
        : '';
    ctx.approximated(
      'pool',
      path,
      'pool.vmSize',
      `${v} is retired (${r?.series}; ${r?.retired}): Batch can no longer allocate it. Its successor ${successor}${isRdmaCapable(successor) ? ' (InfiniBand)' : ''}${isGpuSize(successor) ? ' (GPUs)' : ''} is used; its core and GPU counts differ, check ranks per node${gpuChange}`,
      drafts,
    );
    // Shipyard's NetworkDirect node preparation bound the host's Intel MPI runtime into containers; the successor is
    // SR-IOV and its image holds oneAPI 2021 under /opt/intel, not the runtime those images were built against.
    if (isRdmaCapable(v) && !/_v[2-9]$|^standard_h[bc]/i.test(v)) {
      ctx.unsupported(
        'pool',
        path,
        `Shipyard's NetworkDirect host mounts on ${v} (-v /opt/intel:/opt/intel:ro, the DAPL dat.conf) are dropped: ${successor} is SR-IOV and its image's /opt/intel holds Intel MPI 2021 (oneAPI), not the DAPL-era runtime`,
        drafts,
      );
      drafts.forEach((d) =>
        d.header.push(
          `NOT CARRIED OVER: Shipyard's NetworkDirect binds on ${v} (-v /opt/intel:/opt/intel:ro, the DAPL dat.conf): ${successor} is SR-IOV and its image's /opt/intel holds Intel MPI 2021 (oneAPI), not the DAPL-era runtime`,
        ),
      );
    }
    if (gpuChange)
      drafts.forEach((d) => d.header.push(`CHECK: GPU generation change ${v} → ${successor}${gpuChange.replace(/^; GPU generation change: [^,]*/, '')}`));
  } else ctx.mapped('pool', path, 'pool.vmSize', v, drafts);
}

/** Returns whether the image was replaced by the spec's default one. */
function mapVmConfiguration(ctx: MappingContext, v: unknown, path: string, drafts: SpecDraft[]): boolean {
  const role = 'pool' as const;
  let replaced = false;
  ctx.visit(
    role,
    path,
    v,
    {
      platform_image: (img, p) => {
        const i = isObj(img) ? img : {};
        const text = (k: string) => ctx.sources.pool?.scalarText(joinKey(p, k)) ?? (i[k] === undefined || i[k] === null ? undefined : String(i[k]));
        const [publisher, offer, sku] = ['publisher', 'offer', 'sku'].map(text);
        const version = text('version') ?? 'latest';
        if (!publisher || !offer || !sku)
          ctx.unsupported(role, p, "incomplete image (publisher, offer and sku are required): the spec's default HPC image is used", drafts);
        else {
          const verdict = imageVerdict(publisher, offer, sku, version);
          if (verdict.keep) {
            const { nodeAgentSku, ...image } = verdict.keep;
            drafts.forEach((d) => {
              setIn(d.spec, ['pool', 'image'], image);
              setIn(d.spec, ['pool', 'nodeAgentSku'], nodeAgentSku);
            });
            ctx.mapped(role, p, 'pool.image', `node agent ${nodeAgentSku}`, drafts);
          } else {
            replaced = true;
            ctx.approximated(
              role,
              p,
              undefined,
              `${verdict.replace}. The job uses the spec's default Azure HPC image (microsoft-dsvm ubuntu-hpc 2204, InfiniBand drivers, MPI modules and container tools); set pool.image and pool.nodeAgentSku to choose another`,
              drafts,
            );
          }
        }
        ctx.visit(
          role,
          p,
          img,
          {
            publisher: () => undefined,
            offer: () => undefined,
            sku: () => undefined,
            version: () => undefined,
            native: (n, q) => nativeEntry(ctx, n, q, drafts),
            license_type: (_l, q) => ctx.unsupported(role, q, 'Windows licensing: Windows pools are not supported', drafts),
          },
          {},
          drafts,
        );
      },
      custom_image: (img, p) => {
        const i = isObj(img) ? img : {};
        const id = typeof i.arm_image_id === 'string' ? i.arm_image_id : undefined;
        const agent = typeof i.node_agent === 'string' ? i.node_agent : undefined;
        ctx.visit(
          role,
          p,
          img,
          {
            arm_image_id: (_x, q) => {
              if (id && P.CUSTOM_IMAGE_ID_RE.test(id)) {
                drafts.forEach((d) => setIn(d.spec, ['pool', 'customImageId'], id));
                ctx.mapped(role, q, 'pool.customImageId', 'Shared Image Gallery or managed image', drafts);
              } else ctx.unsupported(role, q, 'not an ARM image id "/subscriptions/…/providers/Microsoft.Compute/…": set pool.customImageId', drafts);
            },
            node_agent: (_x, q) => {
              if (agent && P.NODE_AGENT_SKU_RE.test(agent)) {
                drafts.forEach((d) => setIn(d.spec, ['pool', 'nodeAgentSku'], agent));
                if (retiredNodeAgent(agent))
                  ctx.approximated(
                    role,
                    q,
                    'pool.nodeAgentSku',
                    `kept, but Batch has retired the ${agent} node agent: rebuild the image on a supported OS (Ubuntu 22.04, AlmaLinux 8) and change it`,
                    drafts,
                  );
                else ctx.mapped(role, q, 'pool.nodeAgentSku', agent, drafts);
              } else ctx.unsupported(role, q, 'not a Batch node agent SKU such as "batch.node.ubuntu 22.04": set pool.nodeAgentSku', drafts);
            },
            native: (n, q) => nativeEntry(ctx, n, q, drafts),
            license_type: (_l, q) => ctx.unsupported(role, q, 'Windows licensing: Windows pools are not supported', drafts),
          },
          {},
          drafts,
        );
      },
    },
    {},
    drafts,
  );
  return replaced;
}

function nativeEntry(ctx: MappingContext, v: unknown, path: string, drafts: SpecDraft[]): void {
  if (v === true)
    ctx.approximated(
      'pool',
      path,
      undefined,
      "Batch native container pools are not used: the control plane starts the job's container on every node itself (like Shipyard's non-native mode: long-running container, sshd on port 23, launcher inside through docker exec)",
      drafts,
    );
  else ctx.mapped('pool', path, undefined, "the control plane starts the containers itself, as Shipyard's non-native mode did", drafts);
}

function startCommands(ctx: MappingContext, list: unknown, path: string, drafts: SpecDraft[], facts: PoolFacts, when: 'before' | 'after'): void {
  if (!Array.isArray(list)) return ctx.unsupported('pool', path, 'must be a list of commands', drafts);
  list.forEach((c, i) => {
    const p = joinIndex(path, i);
    if (typeof c !== 'string' || !c.trim()) return ctx.unsupported('pool', p, 'not a command string', drafts);
    if (ctx.secrets.within('pool', p))
      return ctx.secret('pool', p, 'unsupported', 'holds a credential: not carried into the spec (specs are stored and shown in job views)', drafts);
    const lines = c
      .split('\n')
      .map((l) => l.trim())
      .filter(Boolean);
    if (!lines.every((l) => P.SINGLE_LINE_TEXT_RE.test(l))) return ctx.unsupported('pool', p, 'contains control characters', drafts);
    facts.start.commands.push(lines.join('; '));
    // The pool's image was replaced by an Ubuntu one when it was CentOS: its package commands no longer apply.
    const rpm = facts.imageReplaced && /\b(?:yum|dnf|rpm)\b/.test(c);
    const note = `${lines.length > 1 ? 'its lines joined with "; ", ' : ''}run ${when === 'before' ? 'first' : 'after the pre commands'}, in order, stopping at the first failure as Shipyard's start task did${rpm ? "; it uses yum/rpm, but the job's image is Ubuntu: port it to apt-get" : ''}`;
    if (rpm) drafts.forEach((d) => d.header.push(`TODO: pool.startTask.command uses yum/rpm (${p}), but the job's image is Ubuntu: port it to apt-get`));
    ctx.entry('pool', { path: p, status: lines.length > 1 || rpm ? 'approximated' : 'mapped', target: 'pool.startTask.command', note }, drafts);
  });
}

function startEnv(ctx: MappingContext, env: unknown, path: string, drafts: SpecDraft[], facts: PoolFacts): void {
  if (!isObj(env)) return ctx.unsupported('pool', path, 'must be a mapping NAME: value', drafts);
  for (const [k, v] of Object.entries(env)) {
    const p = joinKey(path, k);
    if (ctx.secrets.has('pool', p)) {
      ctx.secret(
        'pool',
        p,
        'unsupported',
        'a credential: not carried (job specs are stored and shown in job views); provide it on the image or fetch it in the start task',
        drafts,
      );
      continue;
    }
    const value = ctx.sources.pool?.scalarText(p) ?? (v === null ? '' : String(v));
    if (!P.ENV_KEY_RE.test(k) || !P.SINGLE_LINE_TEXT_RE.test(value) || isObj(v) || Array.isArray(v)) {
      ctx.unsupported('pool', p, 'not a NAME: value the start task can export', drafts);
      continue;
    }
    facts.start.exports.push(`export ${k}=${shellQuote(value)}`);
    ctx.approximated(
      'pool',
      p,
      'pool.startTask.command',
      "exported at the start of the start task command (the spec's start task has no environment settings)",
      drafts,
    );
  }
}

function mapStartFiles(ctx: MappingContext, v: unknown, path: string, drafts: SpecDraft[], facts: PoolFacts): void {
  if (!Array.isArray(v)) return ctx.unsupported('pool', path, 'must be a list of { blob_source, file_path }', drafts);
  v.forEach((item, i) => {
    const p = joinIndex(path, i);
    ctx.visit(
      'pool',
      p,
      item,
      {
        blob_source: (src, q) => {
          const file = isObj(item) && typeof item.file_path === 'string' ? item.file_path : undefined;
          const blob = typeof src === 'string' ? blobUrlParts(src) : undefined;
          const sas = ctx.secrets.has('pool', q);
          if (blob && file && P.BLOB_PREFIX_RE.test(file) && file && !file.startsWith('/') && P.BLOB_PREFIX_RE.test(blob.blob)) {
            facts.start.resourceFiles.push({ ...blob, path: file });
            if (sas)
              ctx.secret(
                'pool',
                q,
                'approximated',
                "the SAS in the URL is dropped (reported, never written): the pipeline reads the blob through a short-lived SAS it mints, so the account must be one of the deployment's DATA_ACCOUNTS",
                drafts,
                'pool.startTask.resourceFiles',
              );
            else
              ctx.mapped(
                'pool',
                q,
                'pool.startTask.resourceFiles',
                `blob ${blob.account}/${blob.container}/${blob.blob} (the account must be one of the deployment's DATA_ACCOUNTS)`,
                drafts,
              );
          } else if (sas)
            ctx.secret(
              'pool',
              q,
              'unsupported',
              'a URL with a SAS: not carried (reported, never written); start task files come from blob storage of a data account',
              drafts,
            );
          else
            ctx.unsupported(
              'pool',
              q,
              "start task files come from blob storage of a data account (https://<account>.blob.core.windows.net/<container>/<blob>): put the file there (files of the spec reach the MPI task's working directory, after the start task)",
              drafts,
            );
        },
        file_path: (_f, q) => ctx.mapped('pool', q, undefined, "the file's name in the start task's directory", drafts, { noComment: true }),
        file_mode: (mode, q) => {
          const file = isObj(item) && typeof item.file_path === 'string' ? item.file_path : undefined;
          if (typeof mode === 'string' && /^0?[0-7]{3}$/.test(mode) && file && P.BLOB_PREFIX_RE.test(file)) {
            facts.start.chmods.push(`chmod ${mode} ${shellQuote(file)}`);
            ctx.approximated('pool', q, 'pool.startTask.command', `chmod ${mode} at the start of the start task (resource files have no mode field)`, drafts);
          } else ctx.unsupported('pool', q, 'not an octal file mode such as "0755"', drafts);
        },
      },
      {},
      drafts,
    );
  });
}

/** The start task: exported variables, file modes, pre and post commands in Shipyard's order, stopping at the first failure. */
function applyStartTask(drafts: SpecDraft[], facts: PoolFacts): void {
  const s = facts.start;
  if (!s.exports.length && !s.chmods.length && !s.commands.length && !s.resourceFiles.length) return;
  for (const d of drafts) {
    const start: Obj = { command: startCommandLine(s, []) };
    if (s.resourceFiles.length) start.resourceFiles = s.resourceFiles.map((f) => ({ ...f }));
    setIn(d.spec, ['pool', 'startTask'], start);
  }
}

export function startCommandLine(s: StartTaskParts, extra: readonly string[]): string {
  const parts = [...s.exports, ...s.chmods, ...s.commands, ...extra];
  return parts.length ? `set -e; set -o pipefail; ${parts.join('; ')}` : ':';
}
