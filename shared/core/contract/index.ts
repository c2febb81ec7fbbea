/**
 * The contract between the orchestrator, its activities, the job API, the CLI and the dashboard: the activity
 * map, the job result, the live progress and how the orchestration is started. Types are declared here once;
 * everyone else imports them.
 */
export * from './activities';
export * from './batchTasks';
export * from './jobResult';
export * from './progress';
export * from './endedProgress';
export * from './nodeReplacements';
export * from './mpiJob';
export * from './orchestration';
export * from './outputs';
export * from './queue';
export * from './explain';
