/** Reasons the report gives in several places, worded once. */

/** Shipyard's scheduling settings (priority, dependencies), until the job spec's scheduling section exists. */
export const SCHEDULING_PENDING =
  'the job spec has no field for this yet: queueing, priorities and dependencies between jobs are being added (docs/migrating-from-shipyard.md)';

export const NOT_NEEDED = (what: string) => `not needed: ${what}`;
