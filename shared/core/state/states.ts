/**
 * Job states and the legal transitions between them.
 *
 *   Submitted → Queued → Provisioning → PullingImages → StagingData → Running → CleaningUp → Succeeded | Failed | Cancelled
 *
 * Legal moves:
 * - Submitted → Queued: the job waits for its dependencies and for admission (shared/adapters/scheduling); nothing exists yet;
 * - Queued → Provisioning (or a later active stage): admitted; Queued → Cancelled | Failed: cancelled while waiting,
 *   a dependency that can no longer be met, or a job that can never fit the deployment's limits. Never Queued →
 *   CleaningUp: nothing was created while the job waited;
 * - forward along the active stages, skipping stages that have nothing to do (no images → no
 *   PullingImages, no inputs → no StagingData): any active stage → any LATER active stage;
 * - any active stage (Provisioning … Running) → CleaningUp, on success, failure or cancel: cleanup always runs;
 * - CleaningUp → Succeeded | Failed | Cancelled: the only way to finish once resources may exist;
 * - Submitted → Failed | Cancelled: rejected or cancelled before anything was created (e.g. a queue message
 *   whose spec is invalid, a cancel before provisioning), so there is nothing to clean up;
 * - Submitted → CleaningUp: a cancel/failure that arrives after the orchestration started but before it
 *   recorded Provisioning (an activity may already have created a pool); Submitted → Provisioning stays legal for
 *   runs started before the Queued state existed.
 * Never: backwards, self-transitions, anything out of a terminal state (terminal states are absorbing).
 */
export const JOB_STATES = [
  'Submitted',
  'Queued',
  'Provisioning',
  'PullingImages',
  'StagingData',
  'Running',
  'CleaningUp',
  'Succeeded',
  'Failed',
  'Cancelled',
] as const;
export type JobState = (typeof JOB_STATES)[number];

export const TERMINAL_STATES = ['Succeeded', 'Failed', 'Cancelled'] as const satisfies readonly JobState[];
export type TerminalState = (typeof TERMINAL_STATES)[number];
/** The pipeline stages in order; CleaningUp follows them. Queued is not one: nothing runs or exists while a job waits. */
export const ACTIVE_STAGES: readonly JobState[] = ['Submitted', 'Provisioning', 'PullingImages', 'StagingData', 'Running'];
/** Where a job waits for its dependencies and for admission, before anything is created for it. */
export const WAITING_STATE = 'Queued' satisfies JobState;

/** Takes any string, so readers of API answers (the CLI, the dashboard) can ask about what they were sent. */
export function isTerminal(state: string): state is TerminalState {
  return (TERMINAL_STATES as readonly string[]).includes(state);
}

/**
 * Whether a job in `current` has already gone past `target` in the pipeline: it is finished, or at a later stage.
 * A pipeline step that runs again after its effect (Durable runs activities at least once) meets such a row.
 */
export function isPast(current: JobState, target: JobState): boolean {
  if (isTerminal(current)) return true;
  if (isTerminal(target)) return false;
  return JOB_STATES.indexOf(current) > JOB_STATES.indexOf(target);
}

export function isJobState(value: unknown): value is JobState {
  return typeof value === 'string' && (JOB_STATES as readonly string[]).includes(value);
}

function computeLegal(): ReadonlyMap<JobState, ReadonlySet<JobState>> {
  const legal = new Map<JobState, Set<JobState>>(JOB_STATES.map((s) => [s, new Set<JobState>()]));
  ACTIVE_STAGES.forEach((from, i) => {
    for (const to of ACTIVE_STAGES.slice(i + 1)) legal.get(from)!.add(to);
    legal.get(from)!.add('CleaningUp');
  });
  legal.get('Submitted')!.add('Failed').add('Cancelled').add(WAITING_STATE);
  for (const to of ACTIVE_STAGES.slice(1)) legal.get(WAITING_STATE)!.add(to);
  legal.get(WAITING_STATE)!.add('Failed').add('Cancelled');
  for (const end of TERMINAL_STATES) legal.get('CleaningUp')!.add(end);
  return legal;
}

const LEGAL = computeLegal();

export function canTransition(from: JobState, to: JobState): boolean {
  return LEGAL.get(from)?.has(to) ?? false;
}

/** The states reachable in one step from `from` (empty for terminal states). */
export function nextStates(from: JobState): JobState[] {
  return JOB_STATES.filter((to) => canTransition(from, to));
}
