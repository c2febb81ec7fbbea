/**
 * jobs.yaml: which tasks become job specs, and every job and task setting into them.
 *
 * - A multi-instance task becomes an MPI job on a pool of its nodes (one spec per such task).
 * - A job whose only task is a plain container task becomes a one-node job whose custom launch script is the task's
 *   command (it runs once, in the container, on that node, as Shipyard ran it).
 * - Other task kinds (task factories, several plain tasks, plain tasks beside an MPI task, merge tasks) are reported
 *   unsupported: a job spec is one MPI task.
 */
import { isImageReference } from '../../../shared/core/spec/sections/container';
import { isGpuSize } from '../../../shared/core/planning/vmSizes';
import * as P from '../../../shared/core/spec/patterns';
import { LIMITS } from '../../../shared/core/spec/schema';
import { addComment, getIn, isObj, newDraft, setIn, type MappingContext, type Obj, type SpecDraft } from './context';
import { parseDockerRunOptions, parseSingularityOptions, type ParsedOptions, type RunOptionsDraft } from './containerOptions';
import type { ConfigFacts } from './globalResources';
import { mapLaunch } from './launch';
import { NOT_NEEDED } from './notes';
import { SCHEDULING_LIMITS } from '../../../shared/core/spec/sections/scheduling';
import { intelMpiMapping } from './intelMpiMapping';
import { inputData, outputData, resourceFile, sharedVolumeMount } from './data';
import { startCommandLine, type PoolFacts } from './pool';
import { joinIndex, joinKey, type MappingStatus } from './report';
import { shipyardTimespanToIso, toJobId, toName, toShmSize, toTagValue } from './values';

export interface TaskPlan {
  kind: 'mpi' | 'single';
  job: Obj;
  jobPath: string;
  task: Obj;
  taskPath: string;
  runtime: 'docker' | 'singularity';
  image: string;
  draft: SpecDraft;
}

const role = 'jobs' as const;

/** Decides which tasks become specs; reports the others as unsupported task kinds. Drafts know runtime and image. */
export function planTasks(ctx: MappingContext): { plans: TaskPlan[]; jobsWithoutSpecs: { job: Obj; path: string }[] } {
  const plans: TaskPlan[] = [];
  const jobsWithoutSpecs: { job: Obj; path: string }[] = [];
  const root = ctx.sources.jobs?.value;
  const jobs = isObj(root) && Array.isArray(root.job_specifications) ? root.job_specifications : [];
  const names = new Set<string>();
  jobs.forEach((job, j) => {
    const jobPath = joinIndex('job_specifications', j);
    if (!isObj(job)) {
      ctx.unsupported(role, jobPath, 'not a job mapping: nothing read');
      return;
    }
    const tasks = Array.isArray(job.tasks) ? job.tasks : [];
    const mi = tasks.filter((t) => isObj(t) && isObj(t.multi_instance) && !t.task_factory);
    const single = mi.length === 0 && tasks.length === 1 && isObj(tasks[0]) && !tasks[0].task_factory && job.merge_task === undefined;
    const before = plans.length;
    tasks.forEach((task, t) => {
      const taskPath = joinIndex(joinKey(jobPath, 'tasks'), t);
      if (!isObj(task)) return ctx.unsupported(role, taskPath, 'not a task mapping: nothing read');
      if (task.task_factory !== undefined)
        return ctx.unsupported(
          role,
          taskPath,
          'unsupported task kind: a task factory generates many tasks; a job spec is one MPI task (submit one spec per generated task, e.g. from a script)',
        );
      const isMi = isObj(task.multi_instance);
      if (!isMi && !single) {
        return ctx.unsupported(
          role,
          taskPath,
          mi.length
            ? "unsupported task kind: a plain (single-node) task beside the job's MPI task; a job spec is one MPI task, so submit it as a job of its own"
            : 'unsupported task kind: one of several plain (single-node) tasks; a job spec is one MPI task (a one-task job imports as a one-node job)',
        );
      }
      const docker = typeof task.docker_image === 'string' ? task.docker_image : undefined;
      const sing = typeof task.singularity_image === 'string' ? task.singularity_image : undefined;
      if ((docker && sing) || (!docker && !sing)) {
        return ctx.unsupported(
          role,
          taskPath,
          docker ? 'both docker_image and singularity_image: Shipyard refuses this task' : 'no docker_image or singularity_image: Shipyard refuses this task',
        );
      }
      const jobId = typeof job.id === 'string' ? job.id : `job-${j}`;
      const suffix = mi.length > 1 ? `-${typeof task.id === 'string' ? task.id : `task-${t}`}` : '';
      let base = toJobId(`${jobId}${suffix}`);
      for (let n = 2; names.has(base); n++) base = toJobId(`${jobId}${suffix}-${n}`);
      names.add(base);
      const draft = newDraft(`${base}.yaml`, jobPath, taskPath);
      const runtime = docker ? 'docker' : 'singularity';
      const image = (docker ?? sing) as string;
      setIn(draft.spec, ['name'], toName(`${jobId}${suffix}`));
      setIn(draft.spec, ['container', 'runtime'], runtime);
      setIn(draft.spec, ['container', 'images'], [image]);
      plans.push({ kind: isMi ? 'mpi' : 'single', job, jobPath, task, taskPath, runtime, image, draft });
    });
    if (job.merge_task !== undefined)
      ctx.unsupported(role, joinKey(jobPath, 'merge_task'), 'unsupported task kind: a merge task runs after all others; a job spec is one MPI task');
    if (plans.length === before) jobsWithoutSpecs.push({ job, path: jobPath });
  });
  return { plans, jobsWithoutSpecs };
}

/** Settings of a job and its task into the task's draft. */
export function mapJobsFile(
  ctx: MappingContext,
  plans: TaskPlan[],
  jobsWithoutSpecs: { job: Obj; path: string }[],
  pool: PoolFacts,
  config: ConfigFacts,
): void {
  const root = ctx.sources.jobs?.value;
  ctx.visit(role, '', root, {
    job_specifications: (list, p) => {
      if (!Array.isArray(list)) ctx.unsupported(role, p, 'must be a list of jobs');
    },
  });
  const byJob = new Map<string, TaskPlan[]>();
  for (const plan of plans) byJob.set(plan.jobPath, [...(byJob.get(plan.jobPath) ?? []), plan]);
  for (const [jobPath, jobPlans] of byJob) mapJob(ctx, jobPath, jobPlans, pool, config);
  for (const { job, path } of jobsWithoutSpecs) mapJobKeys(ctx, job, path, [], pool, config);
}

function mapJob(ctx: MappingContext, jobPath: string, plans: TaskPlan[], pool: PoolFacts, config: ConfigFacts): void {
  const job = plans[0].job;
  mapJobKeys(ctx, job, jobPath, plans, pool, config);
  for (const plan of plans) mapTask(ctx, plan, pool, config);
  mapDependencies(ctx, job, plans);
}

/**
 * A task's id as Batch knew it: its own, or the one Shipyard generated (`autogenerated_task_id`: prefix "task-" and
 * the task's index padded to 5 digits, unless the job or config.yaml says otherwise).
 */
function taskIdOf(ctx: MappingContext, job: Obj, task: Obj, index: number): string {
  if (typeof task.id === 'string' && task.id) return task.id;
  const cfg =
    isObj(ctx.sources.config?.value) && isObj((ctx.sources.config?.value as Obj).batch_shipyard)
      ? ((ctx.sources.config?.value as Obj).batch_shipyard as Obj)
      : {};
  const gen = isObj(job.autogenerated_task_id) ? job.autogenerated_task_id : isObj(cfg.autogenerated_task_id) ? cfg.autogenerated_task_id : {};
  const prefix = typeof gen.prefix === 'string' ? gen.prefix : 'task-';
  const width = typeof gen.zfill_width === 'number' ? gen.zfill_width : 5;
  return `${prefix}${String(index).padStart(width, '0')}`;
}

/**
 * Task dependencies inside a Shipyard job (`depends_on`, `depends_on_range`) between tasks that became specs: the
 * dependent's dependsOn names the parent's job id, which the parent's spec then sets (a spec without id gets a fresh
 * one at every submission, which nothing could name). The condition follows the parent's dependency_action: "block"
 * (Batch's default) is "succeeded", "satisfy" is "finished". A dependency on a task that did not become a spec
 * cannot be carried.
 */
function mapDependencies(ctx: MappingContext, job: Obj, plans: TaskPlan[]): void {
  const tasks = Array.isArray(job.tasks) ? job.tasks : [];
  const planOf = new Map<string, TaskPlan>();
  tasks.forEach((t, i) => {
    const plan = plans.find((p) => p.task === t);
    if (isObj(t) && plan) planOf.set(taskIdOf(ctx, job, t, i), plan);
  });
  for (const plan of plans) {
    const wanted: { id: string; path: string }[] = [];
    if (Array.isArray(plan.task.depends_on))
      plan.task.depends_on.forEach((id, i) => wanted.push({ id: String(id), path: joinIndex(joinKey(plan.taskPath, 'depends_on'), i) }));
    const range = plan.task.depends_on_range;
    if (range !== undefined) {
      const rangePath = joinKey(plan.taskPath, 'depends_on_range');
      if (Array.isArray(range) && range.length === 2 && range.every((n) => Number.isInteger(n)) && (range[1] as number) - (range[0] as number) < 1000) {
        for (let n = range[0] as number; n <= (range[1] as number); n++) wanted.push({ id: String(n), path: rangePath });
      } else ctx.unsupported(role, rangePath, 'must be [first, last] task ids (whole numbers)', [plan.draft]);
    }
    if (plan.task.depends_on !== undefined && !Array.isArray(plan.task.depends_on))
      ctx.unsupported(role, joinKey(plan.taskPath, 'depends_on'), 'must be a list of task ids', [plan.draft]);
    const byPath = new Map<string, { parents: TaskPlan[]; missing: string[] }>();
    for (const w of wanted) {
      const entry = byPath.get(w.path) ?? { parents: [], missing: [] };
      const parent = planOf.get(w.id);
      if (parent && parent !== plan) entry.parents.push(parent);
      else entry.missing.push(w.id);
      byPath.set(w.path, entry);
    }
    for (const [path, { parents, missing }] of byPath) {
      for (const parent of parents) {
        const parentId = (getIn(parent.draft.spec, ['id']) as string | undefined) ?? toJobId(String(parent.draft.spec.name));
        if (getIn(parent.draft.spec, ['id']) === undefined) {
          setIn(parent.draft.spec, ['id'], parentId);
          addComment(
            parent.draft,
            'id',
            `set so that the jobs depending on it can name it (${plans
              .filter((p) => p !== parent)
              .map((p) => p.draft.file)
              .join(', ')}): a repeat submission of this spec returns the existing job; change the id to run it again`,
          );
        }
        const action = dependencyAction(parent);
        const deps = (getIn(plan.draft.spec, ['dependsOn']) as Obj[] | undefined) ?? [];
        if (!deps.some((x) => x.job === parentId))
          setIn(plan.draft.spec, ['dependsOn'], [...deps, { job: parentId, condition: action === 'satisfy' ? 'finished' : 'succeeded' }]);
        plan.draft.header.push(`TODO: submit ${parent.draft.file} first: dependsOn names its job, which must exist`);
      }
      if (parents.length) {
        ctx.entry(
          role,
          {
            path,
            status: missing.length ? 'approximated' : 'mapped',
            target: 'dependsOn',
            note: `waits (Queued) for ${parents.map((p) => p.draft.file).join(', ')} to ${parents.every((p) => dependencyAction(p) === 'satisfy') ? 'finish' : 'succeed'}${missing.length ? `; task(s) ${missing.join(', ')} did not become specs and are not waited for` : ''}`,
          },
          [plan.draft],
        );
      } else {
        ctx.unsupported(role, path, `task(s) ${missing.join(', ')} of this job did not become job specs: nothing to wait for`, [plan.draft]);
      }
    }
  }
}

/** The parent's dependency_action for dependents (task exit options first, then the job's); Batch's default "block". */
function dependencyAction(plan: TaskPlan): 'block' | 'satisfy' {
  for (const scope of [plan.task, plan.job]) {
    const eo =
      isObj(scope.exit_conditions) && isObj(scope.exit_conditions.default) && isObj(scope.exit_conditions.default.exit_options)
        ? scope.exit_conditions.default.exit_options
        : undefined;
    if (eo && (eo.dependency_action === 'satisfy' || eo.dependency_action === 'block')) return eo.dependency_action;
  }
  return 'block';
}

/** exit_conditions.default.exit_options: the dependency action is what dependsOn's condition carries; the job action is fixed. */
function exitConditions(ctx: MappingContext, v: unknown, path: string, drafts: SpecDraft[]): void {
  ctx.visit(
    role,
    path,
    v,
    {
      default: (def, p) =>
        ctx.visit(
          role,
          p,
          def,
          {
            exit_options: (eo, q) =>
              ctx.visit(
                role,
                q,
                eo,
                {
                  job_action: (_a, r) =>
                    ctx.unsupported(
                      role,
                      r,
                      "the job's reaction to its task's exit is fixed: a failed MPI task fails the job, and cleanup always runs",
                      drafts,
                    ),
                  dependency_action: (a, r) =>
                    a === 'block' || a === 'satisfy'
                      ? ctx.mapped(
                          role,
                          r,
                          'dependsOn[].condition',
                          `what the jobs depending on this one wait for: ${a === 'block' ? 'succeeded' : 'finished'} (no job depends on it unless its spec has an id)`,
                          drafts,
                          { noComment: true },
                        )
                      : ctx.unsupported(role, r, 'must be "block" or "satisfy"', drafts),
                },
                {},
                drafts,
              ),
          },
          {},
          drafts,
        ),
    },
    {},
    drafts,
  );
}

/** Effective value of a setting a task may override: the task's when set, else the job's. */
function pick(plan: TaskPlan, key: string): { value: unknown; from: 'task' | 'job' } | undefined {
  if (plan.task[key] !== undefined && plan.task[key] !== null) return { value: plan.task[key], from: 'task' };
  if (plan.job[key] !== undefined && plan.job[key] !== null) return { value: plan.job[key], from: 'job' };
  return undefined;
}

function mapJobKeys(ctx: MappingContext, job: Obj, jobPath: string, plans: TaskPlan[], pool: PoolFacts, config: ConfigFacts): void {
  const drafts = plans.map((p) => p.draft);
  const overridden = (key: string) => plans.length > 0 && plans.every((p) => p.task[key] !== undefined && p.task[key] !== null);
  const byTask = (key: string, path: string): boolean => {
    if (!overridden(key)) return false;
    ctx.mapped(role, path, undefined, "overridden by the task's own value", drafts, { noComment: true });
    return true;
  };
  ctx.visit(
    role,
    jobPath,
    job,
    {
      id: (v, p) => jobIdKey(ctx, v, p, drafts),
      auto_complete: (v, p) => autoComplete(ctx, v, p, drafts),
      environment_variables: (v, p) => envEntries(ctx, v, p, plans, 'job'),
      environment_variables_keyvault_secret_id: (_v, p) =>
        ctx.secret(
          role,
          p,
          'unsupported',
          'a Key Vault secret of environment variables: job specs carry no secrets (they are stored and shown in job views); have the pre-execution command fetch them on the node',
          drafts,
        ),
      max_task_retries: (v, p) => {
        if (byTask('max_task_retries', p)) return;
        retries(ctx, v, p, drafts, "the job's default for its tasks");
      },
      max_wall_time: (v, p) => {
        if (byTask('max_wall_time', p)) return;
        wallTime(
          ctx,
          v,
          p,
          drafts,
          'approximated',
          "Shipyard limited the whole Batch job; the spec limits its MPI task (the pool's allocation and image pulls are not counted)",
        );
      },
      retention_time: (_v, p) =>
        ctx.unsupported(
          role,
          p,
          "task files are not kept on the nodes after the job: the pool is deleted; the job result keeps the master's output and log locations",
          drafts,
        ),
      priority: (v, p) => jobPriority(ctx, v, p, drafts),
      user_identity: (_v, p) => ctx.unsupported(role, p, "the container user cannot be chosen: the job's container runs as the image's user", drafts),
      auto_pool: (v, p) => autoPool(ctx, v, p, drafts),
      recurrence: (_v, p) =>
        ctx.unsupported(role, p, 'job schedules are not supported: submit the spec on your own schedule (e.g. a timer calling hpcjob submit)', drafts),
      allow_run_on_missing_image: (_v, p) =>
        ctx.mapped(role, p, undefined, NOT_NEEDED('every image of the job is pulled on every node before its MPI task starts'), drafts),
      remove_container_after_exit: (_v, p) => {
        if (byTask('remove_container_after_exit', p)) return;
        removeContainer(ctx, _v, p, plans);
      },
      shm_size: (v, p) => {
        if (byTask('shm_size', p)) return;
        shmSize(ctx, v, p, plans);
      },
      infiniband: (v, p) => {
        if (byTask('infiniband', p)) return;
        infiniband(ctx, v, p, drafts);
      },
      gpus: (v, p) => {
        if (byTask('gpus', p)) return;
        gpus(ctx, v, p, plans, pool);
      },
      exit_conditions: (v, p) => exitConditions(ctx, v, p, drafts),
      data_volumes: (v, p) => dataVolumes(ctx, v, p, plans, config),
      shared_data_volumes: (v, p) => sharedVolumes(ctx, v, p, plans, config),
      auto_scratch: (v, p) => autoScratch(ctx, v, p, drafts),
      job_preparation: (v, p) => jobPreparation(ctx, v, p, drafts, pool),
      job_release: (_v, p) =>
        ctx.unsupported(role, p, "no user command runs at job release: the release task only removes the job's container (or SIF files)", drafts),
      input_data: (v, p) => inputData(ctx, role, v, p, drafts, 'job'),
      default_working_dir: (v, p) => {
        if (byTask('default_working_dir', p)) return;
        workingDir(ctx, v, p, drafts);
      },
      restrict_default_bind_mounts: (v, p) => bindMounts(ctx, v, p, drafts),
      force_enable_task_dependencies: (_v, p) => ctx.mapped(role, p, undefined, NOT_NEEDED('a job spec has one task'), drafts),
      autogenerated_task_id: (_v, p) => ctx.mapped(role, p, undefined, NOT_NEEDED("the MPI task's id is chosen by the control plane"), drafts),
      federation_constraints: (_v, p) => ctx.unsupported(role, p, "federations are not supported: a job runs in the deployment's Batch account", drafts),
      tasks: (v, p) => {
        if (!Array.isArray(v)) ctx.unsupported(role, p, 'must be a list of tasks', drafts);
      },
      merge_task: () => undefined,
    },
    {},
    drafts,
  );
}

/** restrict_default_bind_mounts: the node's Batch root is always bound into the container. */
function bindMounts(ctx: MappingContext, v: unknown, p: string, drafts: SpecDraft[]): void {
  if (v === true)
    ctx.unsupported(
      role,
      p,
      "the node's whole Batch root is bound into the container (as Shipyard's default); binding only the task directory is not supported",
      drafts,
    );
  else ctx.mapped(role, p, undefined, "the node's Batch root is bound into the container", drafts);
}

/** id: the spec's name, kept as a tag. */
function jobIdKey(ctx: MappingContext, v: unknown, p: string, drafts: SpecDraft[]): void {
  if (typeof v !== 'string') return ctx.unsupported(role, p, 'not a job id', drafts);
  for (const d of drafts) setIn(d.spec, ['tags', 'shipyard-job'], toTagValue(v) || 'job');
  const exact = drafts.every((d) => d.spec.name === v || (d.spec.name === toName(v) && toName(v) === v));
  ctx.entry(
    role,
    {
      path: p,
      status: exact ? 'mapped' : 'approximated',
      target: 'name',
      note: `${exact ? '' : `made a valid spec name (${drafts.map((d) => d.spec.name).join(', ')}); `}kept as tag shipyard-job; the spec has no id (every submission is a new job) unless another spec depends on it`,
    },
    drafts,
  );
}

/** auto_complete: whether the Batch job ends with its task. */
function autoComplete(ctx: MappingContext, v: unknown, p: string, drafts: SpecDraft[]): void {
  if (typeof v !== 'boolean') return ctx.unsupported(role, p, 'must be true or false', drafts);
  drafts.forEach((d) => setIn(d.spec, ['cleanup', 'autoComplete'], v));
  ctx.mapped(
    role,
    p,
    'cleanup.autoComplete',
    v ? 'the Batch job ends when its task completes' : 'the Batch job stays active after its task (the pipeline still cleans up the pool)',
    drafts,
  );
}

/** priority: the job's place in its admission queue. */
function jobPriority(ctx: MappingContext, v: unknown, p: string, drafts: SpecDraft[]): void {
  if (typeof v !== 'number' || !Number.isInteger(v) || v < SCHEDULING_LIMITS.minPriority || v > SCHEDULING_LIMITS.maxPriority) {
    return ctx.unsupported(role, p, `must be a whole number ${SCHEDULING_LIMITS.minPriority}…${SCHEDULING_LIMITS.maxPriority}`, drafts);
  }
  drafts.forEach((d) => setIn(d.spec, ['priority'], v));
  ctx.mapped(
    role,
    p,
    'priority',
    'higher first: Batch ordered the tasks of jobs sharing a pool by it; here jobs wait in their admission queue (Queued) in its order',
    drafts,
  );
}

/** auto_pool: every job creates its own pool; keep_alive keeps it. */
function autoPool(ctx: MappingContext, v: unknown, p: string, drafts: SpecDraft[]): void {
  ctx.visit(
    role,
    p,
    v,
    {
      pool_lifetime: (l, q) =>
        l === 'job'
          ? ctx.mapped(role, q, undefined, 'every job creates its own pool and deletes it when it ends', drafts)
          : ctx.unsupported(role, q, `pool lifetime ${JSON.stringify(l)}: job schedules are not supported; every job creates its own pool`, drafts),
      keep_alive: (k, q) => {
        if (k === true) {
          drafts.forEach((d) => setIn(d.spec, ['cleanup', 'deletePool'], 'never'));
          ctx.mapped(role, q, 'cleanup.deletePool', 'the pool is kept after the job (delete it yourself)', drafts);
        } else ctx.mapped(role, q, undefined, 'the pool is deleted when the job ends', drafts);
      },
    },
    {},
    drafts,
  );
}

/** job_preparation: its command ends the pool's start task. */
function jobPreparation(ctx: MappingContext, v: unknown, p: string, drafts: SpecDraft[], pool: PoolFacts): void {
  ctx.visit(
    role,
    p,
    v,
    {
      command: (c, q) => {
        const line = oneLine(c);
        if (!line) return ctx.unsupported(role, q, 'not a single command line', drafts);
        for (const d of drafts) {
          const start = (getIn(d.spec, ['pool', 'startTask']) as Obj | undefined) ?? {};
          setIn(d.spec, ['pool', 'startTask'], { ...start, command: startCommandLine(pool.start, [line.text]) });
        }
        ctx.approximated(
          role,
          q,
          'pool.startTask.command',
          `run at the end of the pool's start task${line.joined ? ' (its lines joined with "; ")' : ''}: the job creates its pool, so the start task runs once per node before the job, as the job preparation task did`,
          drafts,
        );
      },
    },
    {},
    drafts,
  );
}

/** infiniband: the MPI fabric Shipyard meant. */
function infiniband(ctx: MappingContext, v: unknown, p: string, drafts: SpecDraft[]): void {
  if (typeof v !== 'boolean') return ctx.unsupported(role, p, 'must be true or false', drafts);
  drafts.forEach((d) => setIn(d.spec, ['mpi', 'fabric'], v ? 'rdma' : 'tcp'));
  ctx.approximated(
    role,
    p,
    'mpi.fabric',
    `${v ? 'rdma' : 'tcp'}, as meant: Shipyard 3.9 read the job-level infiniband without using it (convoy/settings.py task_settings), so its tasks fell back to InfiniBand on RDMA sizes`,
    drafts,
  );
}

function mapTask(ctx: MappingContext, plan: TaskPlan, pool: PoolFacts, config: ConfigFacts): void {
  const d = plan.draft;
  const drafts = [d];
  const task = plan.task;
  const docker = plan.runtime === 'docker';

  const fabric = taskShape(ctx, plan, pool);

  const containerOptions: ParsedOptions = { runOptions: {}, env: {}, verdicts: [] };
  ctx.visit(
    role,
    plan.taskPath,
    task,
    {
      id: (_v, p) => ctx.mapped(role, p, undefined, NOT_NEEDED("the MPI task's id is chosen by the control plane"), drafts),
      docker_image: (v, p) => image(ctx, v, p, plan),
      singularity_image: (v, p) => image(ctx, v, p, plan),
      singularity_execution: (v, p) => singularityExecution(ctx, v, p, drafts),
      additional_singularity_options: (v, p) => options(ctx, v, p, plan, containerOptions, parseSingularityOptions, 'singularity'),
      additional_docker_run_options: (v, p) => options(ctx, v, p, plan, containerOptions, parseDockerRunOptions, 'docker'),
      name: (_v, p) => ctx.approximated(role, p, undefined, "the control plane names the job's container (mpijob-<job id>)", drafts),
      labels: (_v, p) => ctx.unsupported(role, p, 'container labels are not set', drafts),
      ports: (_v, p) => ctx.unsupported(role, p, 'the container uses host networking: no ports are published', drafts),
      entrypoint: (_v, p) => ctx.unsupported(role, p, 'the entrypoint cannot be replaced: the container runs sshd (or mpi.coordinationCommand)', drafts),
      environment_variables: (v, p) => envEntries(ctx, v, p, [plan], 'task'),
      environment_variables_keyvault_secret_id: (_v, p) =>
        ctx.secret(
          role,
          p,
          'unsupported',
          'a Key Vault secret of environment variables: job specs carry no secrets; have the pre-execution command fetch them on the node',
          drafts,
        ),
      data_volumes: (v, p) => dataVolumes(ctx, v, p, [plan], config),
      shared_data_volumes: (v, p) => sharedVolumes(ctx, v, p, [plan], config),
      resource_files: (v, p) =>
        Array.isArray(v)
          ? v.forEach((item, i) => resourceFile(ctx, role, item, joinIndex(p, i), drafts, 'master'))
          : ctx.unsupported(role, p, 'must be a list of { blob_source, file_path }', drafts),
      input_data: (v, p) => inputData(ctx, role, v, p, drafts, 'task'),
      output_data: (v, p) => outputData(ctx, v, p, drafts),
      default_working_dir: (v, p) => workingDir(ctx, v, p, drafts),
      remove_container_after_exit: (v, p) => removeContainer(ctx, v, p, [plan]),
      shm_size: (v, p) => shmSize(ctx, v, p, [plan]),
      infiniband: (v, p) => {
        if (typeof v !== 'boolean') return ctx.unsupported(role, p, 'must be true or false', drafts);
        setIn(d.spec, ['mpi', 'fabric'], v ? 'rdma' : 'tcp');
        ctx.mapped(role, p, 'mpi.fabric', v ? 'InfiniBand preset' : 'TCP preset', drafts);
      },
      gpus: (v, p) => gpus(ctx, v, p, [plan], pool),
      // Dependencies are between the job's tasks: mapped once every task of the job has its spec (mapDependencies).
      depends_on: () => undefined,
      depends_on_range: () => undefined,
      max_task_retries: (v, p) => retries(ctx, v, p, drafts, 'retries of the MPI task'),
      max_wall_time: (v, p) => wallTime(ctx, v, p, drafts, 'mapped', "the MPI task's run time limit"),
      retention_time: (_v, p) =>
        ctx.unsupported(
          role,
          p,
          "task files are not kept on the nodes after the job: the pool is deleted; the job result keeps the master's output and log locations",
          drafts,
        ),
      exit_conditions: (v, p) => exitConditions(ctx, v, p, drafts),
      multi_instance: () => undefined,
      command: () => undefined,
    },
    {},
    drafts,
  );

  applyContainerOptions(d, containerOptions, docker);
  mapLaunchSettings(ctx, plan, pool, fabric);
}

/**
 * The settings other decisions depend on: the fabric (Shipyard ignored the job-level infiniband, but the spec follows
 * what was meant), the nodes, and the GPUs (Shipyard gave containers every GPU on GPU sizes unless gpus: disable).
 */
function taskShape(ctx: MappingContext, plan: TaskPlan, pool: PoolFacts): 'auto' | 'rdma' | 'tcp' {
  const d = plan.draft;
  // Settings other decisions depend on.
  const ib = pick(plan, 'infiniband');
  // Shipyard ignored the job-level value (see mapJobKeys), but the spec follows what was meant.
  const fabric = typeof ib?.value === 'boolean' ? (ib.value ? 'rdma' : 'tcp') : 'auto';
  const nodes = nodesFor(ctx, plan, pool);
  if (nodes !== undefined) setIn(d.spec, ['pool', 'nodes'], nodes);
  if (plan.kind === 'single') {
    setIn(d.spec, ['pool', 'nodes'], 1);
    addComment(d, 'pool.nodes', `one node: ${plan.taskPath} is a single-node task (no multi_instance)`);
  }
  // GPUs: Shipyard gave containers every GPU on GPU sizes unless gpus: disable.
  if (pool.gpu && pick(plan, 'gpus') === undefined) {
    setIn(d.spec, ['container', 'gpus'], true);
    addComment(d, 'container.gpus', 'GPU VM size: Shipyard gave the container every GPU by default (gpus: all)');
  }

  return fabric;
}

/** singularity_execution: ranks run singularity exec as the task user. */
function singularityExecution(ctx: MappingContext, v: unknown, p: string, drafts: SpecDraft[]): void {
  ctx.visit(
    role,
    p,
    v,
    {
      cmd: (c, q) =>
        c === 'exec' || c === null
          ? ctx.mapped(role, q, undefined, 'ranks run singularity exec', drafts)
          : ctx.approximated(
              role,
              q,
              undefined,
              `"${String(c)}": ranks run singularity exec with the command, so the image's runscript does not run (put what it does in the command)`,
              drafts,
            ),
      elevated: (e, q) =>
        e === true
          ? ctx.unsupported(role, q, 'elevation is not configurable: singularity runs as the task user', drafts)
          : ctx.mapped(role, q, undefined, 'singularity runs as the task user', drafts),
    },
    {},
    drafts,
  );
}

function nodesFor(ctx: MappingContext, plan: TaskPlan, pool: PoolFacts): number | undefined {
  if (plan.kind !== 'mpi') return undefined;
  const mi = plan.task.multi_instance as Obj;
  const n = mi.num_instances;
  const path = joinKey(joinKey(plan.taskPath, 'multi_instance'), 'num_instances');
  const drafts = [plan.draft];
  if (typeof n === 'number' && Number.isInteger(n) && n >= 1) {
    if (pool.dedicated !== undefined && n !== pool.dedicated)
      ctx.approximated(role, path, 'pool.nodes', `the job's pool has exactly the task's ${n} node(s) (Shipyard's pool had ${pool.dedicated})`, drafts);
    else ctx.mapped(role, path, 'pool.nodes', `${n} node(s)`, drafts);
    return n;
  }
  if (n === 'pool_current_dedicated' || n === 'pool_specification_vm_count_dedicated' || n === 'pool_specification_vm_count') {
    if (pool.dedicated) {
      ctx.mapped(role, path, 'pool.nodes', `every dedicated node of the pool (${pool.dedicated}): the job's pool is created with exactly that many`, drafts);
      return pool.dedicated;
    }
    if (pool.lowPriority) {
      ctx.approximated(
        role,
        path,
        'pool.nodes',
        `${pool.lowPriority} dedicated node(s) in place of the pool's low-priority ones (refused with inter-node communication)`,
        drafts,
      );
      return pool.lowPriority;
    }
    ctx.unsupported(role, path, 'the pool has no dedicated nodes: set pool.nodes', drafts);
    return undefined;
  }
  if (n === 'pool_current_low_priority' || n === 'pool_specification_vm_count_low_priority') {
    if (pool.lowPriority) {
      ctx.approximated(role, path, 'pool.nodes', `${pool.lowPriority} dedicated node(s): low-priority nodes are refused with inter-node communication`, drafts);
      return pool.lowPriority;
    }
    ctx.unsupported(role, path, 'the pool has no low-priority nodes: set pool.nodes', drafts);
    return undefined;
  }
  ctx.unsupported(
    role,
    path,
    `${JSON.stringify(n ?? null)} is not a node count or one of Shipyard's pool_current_dedicated, pool_specification_vm_count_dedicated, …: set pool.nodes`,
    drafts,
  );
  return undefined;
}

function mapLaunchSettings(ctx: MappingContext, plan: TaskPlan, pool: PoolFacts, fabric: 'auto' | 'rdma' | 'tcp'): void {
  const drafts = [plan.draft];
  const commandPath = joinKey(plan.taskPath, 'command');
  const command = oneLine(plan.task.command);
  if (!command)
    ctx.unsupported(
      role,
      commandPath,
      plan.task.command === undefined
        ? 'missing: Shipyard requires the command of a multi-instance task; set mpi.command'
        : 'not a command line: set mpi.command',
      drafts,
    );
  if (plan.kind === 'single') return singleNodeLaunch(ctx, plan, pool, fabric, command, commandPath);
  mpiLaunch(ctx, plan, pool, fabric, command, commandPath);
  multiInstanceKeys(ctx, plan);
}

type CommandLine = ReturnType<typeof oneLine>;
type Launch = ReturnType<typeof mapLaunch>;

/** A single-node task: its command as a custom launch script in the container on the job's one node. */
function singleNodeLaunch(
  ctx: MappingContext,
  plan: TaskPlan,
  pool: PoolFacts,
  fabric: 'auto' | 'rdma' | 'tcp',
  command: CommandLine,
  commandPath: string,
): void {
  const d = plan.draft;
  const drafts = [d];
  const { draft } = mapLaunch({
    mpi: undefined,
    command: command?.text ?? ':',
    containerRuntime: plan.runtime,
    vmSize: pool.vmSize ?? 'Standard_D2s_v5',
    fabric,
  });
  setMpi(d, draft);
  setIn(d.spec, ['mpi', 'fabric'], 'tcp');
  if (plan.runtime === 'docker') {
    setIn(d.spec, ['mpi', 'coordinationCommand'], 'while :; do sleep 3600; done');
    addComment(d, 'mpi.coordinationCommand', 'keeps the container up for the command (docker exec) without sshd, which a single-node image need not have');
  }
  if (command) {
    ctx.approximated(
      role,
      commandPath,
      'mpi.command',
      `a single-node task: it runs once, in the container on the job's one node, as a custom launch script${command.joined ? ' (its lines joined with "; ")' : ''}; mpi.runtime and fabric tcp only fill in what a launch script is given`,
      drafts,
    );
  }
}

/** multi_instance.mpi: the launch (runtime, options, ranks per node) and how each of its settings was carried. */
function mpiLaunch(ctx: MappingContext, plan: TaskPlan, pool: PoolFacts, fabric: 'auto' | 'rdma' | 'tcp', command: CommandLine, commandPath: string): void {
  const d = plan.draft;
  const drafts = [d];
  const mi = plan.task.multi_instance as Obj;
  const miPath = joinKey(plan.taskPath, 'multi_instance');
  const mpi = isObj(mi.mpi) ? mi.mpi : undefined;
  const { draft, verdicts } = mapLaunch({
    mpi,
    command: command?.text ?? ':',
    containerRuntime: plan.runtime,
    vmSize: pool.vmSize ?? 'Standard_D2s_v5',
    fabric,
  });
  setMpi(d, draft);
  if (
    draft.mode === 'managed' &&
    draft.runtime === 'openmpi' &&
    !(Array.isArray(mpi?.options) && mpi.options.some((o) => typeof o === 'string' && o.includes('--oversubscribe')))
  ) {
    addComment(d, 'mpi.options', 'Shipyard always passed --oversubscribe to Open MPI with processes_per_node (convoy/batch.py _construct_mpi_command)');
  }
  if (command)
    ctx.mapped(
      role,
      commandPath,
      'mpi.command',
      `${draft.mode === 'managed' ? 'the program every rank runs' : 'in the launch script'}${command.joined ? ' (its lines joined with "; ")' : ''}`,
      drafts,
    );
  if (mi.mpi !== undefined && !mpi)
    ctx.unsupported(role, joinKey(miPath, 'mpi'), 'must be a mapping { runtime, options, processes_per_node, executable_path }', drafts);
  applyIntelMpi(d, draft, verdicts, pool, mpi);
  reportLaunchVerdicts(ctx, plan, draft, verdicts, mpi);
}

/** Intel MPI: what Shipyard set on the recipe's size against what the spec sets on its own (intelMpiMapping.ts). */
function applyIntelMpi(d: SpecDraft, draft: Launch['draft'], verdicts: Launch['verdicts'], pool: PoolFacts, mpi: Obj | undefined): void {
  const intel =
    draft.runtime === 'intelmpi' && pool.vmSize
      ? intelMpiMapping({
          ofa: /ofa$/i.test(String(mpi?.runtime)),
          originalSize: pool.originalVmSize ?? pool.vmSize,
          targetSize: pool.vmSize,
          ...(draft.version ? { version: draft.version } : {}),
        })
      : undefined;
  if (intel) {
    const i = verdicts.findIndex((v) => v.path === 'runtime');
    if (i >= 0)
      verdicts[i] = {
        ...verdicts[i],
        status: intel.verdict === 'reproduced' ? verdicts[i].status : intel.verdict === 'changed' ? 'approximated' : 'unsupported',
        note: intel.note,
      };
    if (intel.verdict === 'cannot') d.header.unshift(`CANNOT RUN AS IS: ${intel.note}`);
  }
}

/** Each launch verdict at its Shipyard path, a comment for the options, and the mpi mapping's keys. */
function reportLaunchVerdicts(ctx: MappingContext, plan: TaskPlan, draft: Launch['draft'], verdicts: Launch['verdicts'], mpi: Obj | undefined): void {
  const d = plan.draft;
  const drafts = [d];
  const miPath = joinKey(plan.taskPath, 'multi_instance');
  const mpiPath = joinKey(miPath, 'mpi');
  const seen = new Set<string>();
  for (const v of verdicts) {
    const option = v.path.startsWith('options[');
    const p = v.path === '' ? (mpi ? mpiPath : miPath) : option ? `${joinKey(mpiPath, 'options')}${v.path.slice('options'.length)}` : joinKey(mpiPath, v.path);
    seen.add(v.path.replace(/\[.*$/, ''));
    // Options get one comment for the list (below), not one each.
    const where = option
      ? { noComment: true }
      : v.path === ''
        ? { commentAt: draft.mode === 'custom' ? 'mpi.command' : 'mpi' }
        : v.target?.includes(',')
          ? { commentAt: v.target.split(',')[0].trim() }
          : {};
    ctx.entry(role, { path: p, status: v.status, ...(v.target ? { target: v.target } : {}), note: v.note }, drafts, where);
  }
  if (mpi && Array.isArray(mpi.options) && mpi.options.length) {
    addComment(
      d,
      draft.mode === 'managed' ? 'mpi.options' : 'mpi.command',
      `from ${ctx.fileName(role)}: ${joinKey(mpiPath, 'options')} (${draft.mode === 'managed' ? 'one launcher word per item, before the automatic ones as in Shipyard' : 'in the launch script as written'})`,
    );
  }
  if (mpi) {
    ctx.visit(
      role,
      mpiPath,
      mpi,
      Object.fromEntries(['runtime', 'options', 'processes_per_node', 'executable_path'].map((k) => [k, () => undefined])),
      {},
      drafts,
    );
    if (!seen.has('options') && Array.isArray(mpi.options) && mpi.options.length === 0)
      ctx.mapped(role, joinKey(mpiPath, 'options'), undefined, 'no options', drafts);
  }
}

/** The other multi_instance keys: the coordination and pre-execution commands, the common files. */
function multiInstanceKeys(ctx: MappingContext, plan: TaskPlan): void {
  const d = plan.draft;
  const drafts = [d];
  const mi = plan.task.multi_instance as Obj;
  const miPath = joinKey(plan.taskPath, 'multi_instance');
  ctx.visit(
    role,
    miPath,
    mi,
    {
      num_instances: () => undefined,
      mpi: () => undefined,
      coordination_command: (c, p) => {
        const line = oneLine(c);
        if (!line) return ctx.unsupported(role, p, 'not a command line', drafts);
        setIn(d.spec, ['mpi', 'coordinationCommand'], line.text);
        if (plan.runtime === 'docker')
          ctx.approximated(
            role,
            p,
            'mpi.coordinationCommand',
            "the container's command, run under /bin/sh -c inside it (Shipyard appended it to docker run as the container's arguments)",
            drafts,
          );
        else ctx.mapped(role, p, 'mpi.coordinationCommand', 'run on every node before the application command', drafts);
      },
      resource_files: (v, p) =>
        Array.isArray(v)
          ? v.forEach((item, i) => resourceFile(ctx, role, item, joinIndex(p, i), drafts, 'common'))
          : ctx.unsupported(role, p, 'must be a list of { blob_source, file_path }', drafts),
      pre_execution_command: (c, p) => {
        const line = oneLine(c);
        if (!line) return ctx.unsupported(role, p, 'not a command line', drafts);
        setIn(d.spec, ['mpi', 'preExecutionCommand'], line.text);
        ctx.mapped(
          role,
          p,
          'mpi.preExecutionCommand',
          `run on the master before the launcher, in its shell${plan.runtime === 'docker' ? ' inside the container' : ''}, as in Shipyard${line.joined ? ' (its lines joined with "; ")' : ''}`,
          drafts,
        );
      },
    },
    {},
    drafts,
  );
  if (plan.runtime === 'docker' && mi.coordination_command === undefined) {
    addComment(
      d,
      'container.runtime',
      "every node runs the container with host networking and /usr/sbin/sshd -D -p 23, what the CMD of Shipyard's MPI recipe images started",
    );
  }
}

function setMpi(d: SpecDraft, launch: ReturnType<typeof mapLaunch>['draft']): void {
  const mpi = (getIn(d.spec, ['mpi']) as Obj | undefined) ?? {};
  const out: Obj = { runtime: launch.runtime };
  if (launch.version) out.version = launch.version;
  out.processesPerNode = launch.processesPerNode;
  if (launch.mode === 'custom') out.launcher = { mode: 'custom' };
  else if (launch.executable) out.launcher = { executable: launch.executable };
  if (launch.options.length) out.options = launch.options;
  Object.assign(out, mpi);
  out.command = launch.command;
  setIn(d.spec, ['mpi'], out);
}

function image(ctx: MappingContext, v: unknown, path: string, plan: TaskPlan): void {
  const drafts = [plan.draft];
  const ok = typeof v === 'string' && isImageReference(v) && !(plan.runtime === 'docker' && /^[a-z]+:\/\//.test(v));
  if (!ok)
    return ctx.unsupported(
      role,
      path,
      'not an image reference the spec accepts (a lowercase OCI reference; singularity also docker://, oras://, library:// URIs): fix container.images[0]',
      drafts,
    );
  ctx.mapped(role, path, 'container.runtime, container.images[0]', `${plan.runtime}; the image that runs the MPI program`, drafts, {
    commentAt: 'container.images',
  });
}

function options(
  ctx: MappingContext,
  v: unknown,
  path: string,
  plan: TaskPlan,
  into: ParsedOptions,
  parse: (items: readonly unknown[]) => ParsedOptions,
  kind: 'docker' | 'singularity',
): void {
  const drafts = [plan.draft];
  if (!Array.isArray(v)) return ctx.unsupported(role, path, `must be a list of ${kind} options`, drafts);
  const parsed = parse(v);
  parsed.verdicts.forEach((verdict, i) =>
    ctx.entry(
      role,
      { path: joinIndex(path, i), status: verdict.status, ...(verdict.target ? { target: verdict.target } : {}), note: verdict.note },
      drafts,
      verdict.target
        ? {
            commentAt: verdict.target
              .split(',')[0]
              .trim()
              .replace(/\.(ulimits)\..*$/, '.$1'),
          }
        : {},
    ),
  );
  mergeOptions(into, parsed);
}

function mergeOptions(into: ParsedOptions, from: ParsedOptions): void {
  const a = into.runOptions;
  const b = from.runOptions;
  if (b.shmSize) a.shmSize = b.shmSize;
  if (b.privileged) a.privileged = true;
  if (b.capAdd) a.capAdd = [...new Set([...(a.capAdd ?? []), ...b.capAdd])];
  if (b.ulimits) a.ulimits = { ...(a.ulimits ?? {}), ...b.ulimits };
  if (b.binds) a.binds = [...(a.binds ?? []), ...b.binds];
  if (from.gpus !== undefined) into.gpus = from.gpus;
  Object.assign(into.env, from.env);
}

function applyContainerOptions(d: SpecDraft, o: ParsedOptions, docker: boolean): void {
  const current = (getIn(d.spec, ['container', 'runOptions']) as RunOptionsDraft | undefined) ?? {};
  const merged: RunOptionsDraft = { ...current };
  const r = o.runOptions;
  if (r.shmSize && docker && !merged.shmSize) merged.shmSize = r.shmSize;
  if (docker && r.privileged) merged.privileged = true;
  if (docker && r.capAdd?.length) merged.capAdd = [...new Set([...(merged.capAdd ?? []), ...r.capAdd])];
  if (docker && r.ulimits) merged.ulimits = { ...(merged.ulimits ?? {}), ...r.ulimits };
  if (r.binds?.length) merged.binds = [...(merged.binds ?? []), ...r.binds];
  if (Object.keys(merged).length) setIn(d.spec, ['container', 'runOptions'], merged);
  if (o.gpus !== undefined) setIn(d.spec, ['container', 'gpus'], o.gpus);
  for (const [k, v] of Object.entries(o.env)) setIn(d.spec, ['mpi', 'env', k], v);
}

function envEntries(ctx: MappingContext, v: unknown, path: string, plans: TaskPlan[], level: 'job' | 'task'): void {
  const drafts = plans.map((p) => p.draft);
  if (!isObj(v)) return ctx.unsupported(role, path, 'must be a mapping NAME: value', drafts);
  for (const [name, value] of Object.entries(v)) {
    const p = joinKey(path, name);
    if (ctx.secrets.has(role, p)) {
      ctx.secret(
        role,
        p,
        'unsupported',
        'by its name a credential: not carried (job specs are stored and shown in job views; its value is never written); have the pre-execution command fetch it on the node',
        drafts,
      );
      continue;
    }
    const text = ctx.sources.jobs?.scalarText(p) ?? (value === null || value === undefined ? '' : String(value));
    if (!P.ENV_KEY_RE.test(name) || name.startsWith('MPIJOB_')) {
      ctx.unsupported(
        role,
        p,
        name.startsWith('AZ_BATCH_') || name.startsWith('MPIJOB_')
          ? 'a reserved name (AZ_BATCH_* belongs to Batch, MPIJOB_* to the launcher)'
          : 'not an environment variable name',
        drafts,
      );
      continue;
    }
    if (isObj(value) || Array.isArray(value) || !P.SINGLE_LINE_TEXT_RE.test(text) || text.length > LIMITS.maxEnvValueLength) {
      ctx.unsupported(role, p, `the value must be one line of at most ${LIMITS.maxEnvValueLength} characters`, drafts);
      continue;
    }
    const targets = level === 'job' ? plans.filter((pl) => !(isObj(pl.task.environment_variables) && name in pl.task.environment_variables)) : plans;
    for (const pl of targets) setIn(pl.draft.spec, ['mpi', 'env', name], text);
    if (targets.length < plans.length)
      ctx.mapped(
        role,
        p,
        undefined,
        "overridden by the task's own value",
        plans.filter((pl) => !targets.includes(pl)).map((pl) => pl.draft),
        { noComment: true },
      );
    if (targets.length)
      ctx.mapped(
        role,
        p,
        `mpi.env.${name}`,
        "in every rank's environment",
        targets.map((pl) => pl.draft),
        { commentAt: 'mpi.env' },
      );
  }
}

function retries(ctx: MappingContext, v: unknown, path: string, drafts: SpecDraft[], what: string): void {
  if (typeof v !== 'number' || !Number.isInteger(v) || v < -1) return ctx.unsupported(role, path, 'must be a whole number', drafts);
  const n = v === -1 ? LIMITS.maxRetries : Math.min(v, LIMITS.maxRetries);
  drafts.forEach((d) => setIn(d.spec, ['limits', 'maxRetries'], n));
  if (v === -1 || v > LIMITS.maxRetries)
    ctx.approximated(role, path, 'limits.maxRetries', `${v === -1 ? 'unlimited' : v} capped at ${LIMITS.maxRetries} retries`, drafts);
  else ctx.mapped(role, path, 'limits.maxRetries', what, drafts);
}

function wallTime(ctx: MappingContext, v: unknown, path: string, drafts: SpecDraft[], status: MappingStatus, note: string): void {
  const iso = shipyardTimespanToIso(v);
  if (!iso) return ctx.unsupported(role, path, 'not a Shipyard time span ("HH:MM:SS" or "D.HH:MM:SS")', drafts);
  drafts.forEach((d) => setIn(d.spec, ['limits', 'maxWallClock'], iso));
  ctx.entry(role, { path, status, target: 'limits.maxWallClock', note: `${iso}: ${note}` }, drafts);
}

function removeContainer(ctx: MappingContext, v: unknown, path: string, plans: TaskPlan[]): void {
  const drafts = plans.map((p) => p.draft);
  if (plans.every((p) => p.runtime === 'singularity'))
    return ctx.mapped(role, path, undefined, NOT_NEEDED('a docker setting; singularity leaves no container behind'), drafts);
  if (v === false) ctx.approximated(role, path, undefined, "the job release task removes the job's container on every node when the job ends", drafts);
  else ctx.mapped(role, path, undefined, "the job release task removes the job's container on every node, as Shipyard's did for multi-instance tasks", drafts);
}

function shmSize(ctx: MappingContext, v: unknown, path: string, plans: TaskPlan[]): void {
  const dockerPlans = plans.filter((p) => p.runtime === 'docker');
  const others = plans.filter((p) => p.runtime !== 'docker');
  if (others.length)
    ctx.mapped(
      role,
      path,
      undefined,
      NOT_NEEDED("singularity shares the host's /dev/shm (Shipyard ignored it too)"),
      others.map((p) => p.draft),
    );
  if (!dockerPlans.length) return;
  const size = toShmSize(v);
  const drafts = dockerPlans.map((p) => p.draft);
  if (!size) return ctx.unsupported(role, path, `"${String(v)}" is not a size the spec can write (like "512m", "8g"); the default 1g applies`, drafts);
  drafts.forEach((d) => setIn(d.spec, ['container', 'runOptions', 'shmSize'], size));
  ctx.mapped(role, path, 'container.runOptions.shmSize', `--shm-size ${size}`, drafts);
}

function gpus(ctx: MappingContext, v: unknown, path: string, plans: TaskPlan[], pool: PoolFacts): void {
  const drafts = plans.map((p) => p.draft);
  const text = typeof v === 'string' ? v : typeof v === 'boolean' ? String(v) : undefined;
  if (text === 'disable' || text === 'false') {
    drafts.forEach((d) => setIn(d.spec, ['container', 'gpus'], false));
    return ctx.mapped(role, path, 'container.gpus', 'no GPUs in the container', drafts);
  }
  if (!pool.gpu || !(pool.vmSize && isGpuSize(pool.vmSize)))
    return ctx.unsupported(role, path, 'GPUs on a VM size without GPUs: Shipyard refuses this task', drafts);
  drafts.forEach((d) => setIn(d.spec, ['container', 'gpus'], true));
  if (text === 'all' || text === 'true') ctx.mapped(role, path, 'container.gpus', 'every GPU of the node (docker --gpus all, singularity --nv)', drafts);
  else ctx.approximated(role, path, 'container.gpus', `"${text ?? String(v)}": the spec gives the container every GPU of the node or none`, drafts);
}

function workingDir(ctx: MappingContext, v: unknown, path: string, drafts: SpecDraft[]): void {
  if (v === 'batch' || v === null) ctx.mapped(role, path, undefined, "ranks start in the task's working directory", drafts);
  else ctx.unsupported(role, path, `"${String(v)}": ranks always start in the task's working directory (cd in the command)`, drafts);
}

function dataVolumes(ctx: MappingContext, v: unknown, path: string, plans: TaskPlan[], config: ConfigFacts): void {
  const drafts = plans.map((p) => p.draft);
  if (!Array.isArray(v)) return ctx.unsupported(role, path, 'must be a list of data volume names', drafts);
  v.forEach((name, i) => {
    const p = joinIndex(path, i);
    const vol = typeof name === 'string' ? config.dataVolumes[name] : undefined;
    if (vol) vol.used = true;
    if (!vol) return ctx.unsupported(role, p, `no data volume ${JSON.stringify(name)} in config.yaml global_resources.volumes.data_volumes`, drafts);
    const hostPath = vol.value.host_path;
    const target = vol.value.container_path;
    const opts = typeof vol.value.bind_options === 'string' ? vol.value.bind_options : '';
    if (typeof hostPath !== 'string' || typeof target !== 'string' || !P.ABSOLUTE_PATH_RE.test(hostPath) || !P.ABSOLUTE_PATH_RE.test(target)) {
      ctx.unsupported(
        role,
        p,
        'only host-path volumes with plain absolute paths can be bound (container.runOptions.binds); docker named volumes are not supported',
        drafts,
      );
      ctx.unsupported('config', vol.path, 'only host-path volumes with plain absolute paths can be bound', drafts);
      return;
    }
    const readOnly = opts.split(',').includes('ro');
    const parsed = parseDockerRunOptions([`-v ${hostPath}:${target}${readOnly ? ':ro' : ''}`]);
    const verdict = parsed.verdicts[0];
    for (const pl of plans) mergeIntoDraft(pl.draft, parsed);
    ctx.entry(role, { path: p, status: verdict.status, ...(verdict.target ? { target: verdict.target } : {}), note: verdict.note }, drafts);
    ctx.entry('config', { path: vol.path, status: verdict.status, ...(verdict.target ? { target: verdict.target } : {}), note: verdict.note }, drafts);
  });
}

function mergeIntoDraft(d: SpecDraft, parsed: ParsedOptions): void {
  const binds = parsed.runOptions.binds ?? [];
  if (!binds.length) return;
  const current = (getIn(d.spec, ['container', 'runOptions', 'binds']) as unknown[] | undefined) ?? [];
  setIn(d.spec, ['container', 'runOptions', 'binds'], [...current, ...binds]);
}

function sharedVolumes(ctx: MappingContext, v: unknown, path: string, plans: TaskPlan[], config: ConfigFacts): void {
  const drafts = plans.map((p) => p.draft);
  if (!Array.isArray(v)) return ctx.unsupported(role, path, 'must be a list of shared data volume names', drafts);
  v.forEach((name, i) => {
    const p = joinIndex(path, i);
    const vol = typeof name === 'string' ? config.sharedDataVolumes[name] : undefined;
    if (!vol)
      return ctx.unsupported(role, p, `no shared data volume ${JSON.stringify(name)} in config.yaml global_resources.volumes.shared_data_volumes`, drafts);
    vol.used = true;
    sharedVolumeMount(ctx, name as string, vol, p, drafts);
  });
}

/**
 * Shipyard's per-job scratch (BeeOND over every node of the job, at $AZ_BATCH_TASK_DIR/auto_scratch) → the spec's shared
 * scratch: an NFS export of the master's local disk, at $MPIJOB_SCRATCH on every node.
 */
function autoScratch(ctx: MappingContext, v: unknown, path: string, drafts: SpecDraft[]): void {
  if (v === false || v === null) return ctx.mapped(role, path, undefined, 'no scratch', drafts);
  // The commands are pointed at it after every task field is mapped (scratchWiring.ts, called by importShipyard).
  drafts.forEach((d) => setIn(d.spec, ['scratch'], {}));
  const note =
    "a shared scratch at $MPIJOB_SCRATCH on every node: an NFS export of the master's local disk instead of BeeOND striped over every node (fine for decomposed cases and setup files, slower for heavy parallel I/O); the commands use $MPIJOB_SCRATCH, and $AZ_BATCH_TASK_DIR/auto_scratch is a link to it on the master for setup scripts that use Shipyard's path";
  if (!isObj(v)) return ctx.approximated(role, path, 'scratch', note, drafts);
  ctx.approximated(role, path, 'scratch', note, drafts);
  ctx.visit(
    role,
    path,
    v,
    {
      setup: (_s, p) => ctx.mapped(role, p, undefined, NOT_NEEDED('the scratch is ready on every node before any rank starts'), drafts),
      task_id: (_s, p) => ctx.mapped(role, p, undefined, NOT_NEEDED('no separate setup task'), drafts),
      num_instances: (_s, p) => ctx.approximated(role, p, undefined, "every node of the job's pool mounts the scratch", drafts),
    },
    {},
    drafts,
  );
}

/** A command as one line: YAML block scalars are joined with "; " (reported). */
function oneLine(v: unknown): { text: string; joined: boolean } | undefined {
  if (typeof v !== 'string') return undefined;
  const lines = v
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean);
  if (!lines.length) return undefined;
  const text = lines.join('; ');
  if (!P.SINGLE_LINE_TEXT_RE.test(text) || text.length > LIMITS.maxCommandLength) return undefined;
  return { text, joined: lines.length > 1 };
}
