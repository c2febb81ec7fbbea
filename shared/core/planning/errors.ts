/** An input that a planner cannot turn into a valid plan. `details` names what was wrong so callers can report it. */
export class PlanningError extends Error {
  override readonly name = 'PlanningError';
  constructor(
    message: string,
    readonly details: Record<string, unknown> = {},
  ) {
    super(message);
  }
}
