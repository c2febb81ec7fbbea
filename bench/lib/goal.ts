/**
 * The one line every benchmark prints per goal, so tools (and people skimming a log) can read them:
 *   goal <name>: measured <value> target <comparison><value> met|unmet
 * Names are kebab-case and stable across runs; values carry their unit.
 */
export interface Goal {
  name: string;
  measured: number;
  target: number;
  /** How the measured value must compare with the target to be met. */
  compare: '<=' | '>=' | '==';
  unit?: string;
  /** Decimal places for both values (default 2). */
  digits?: number;
}

export function goalMet(g: Pick<Goal, 'measured' | 'target' | 'compare'>): boolean {
  if (g.compare === '<=') return g.measured <= g.target;
  if (g.compare === '>=') return g.measured >= g.target;
  return g.measured === g.target;
}

export function goalLine(g: Goal): string {
  if (!/^[a-z0-9]+(?:[-.][a-z0-9]+)*$/.test(g.name)) throw new Error(`goal name "${g.name}" is not kebab-case`);
  const fmt = (v: number) => `${Number.isInteger(v) && g.digits === undefined ? String(v) : v.toFixed(g.digits ?? 2)}${g.unit ?? ''}`;
  return `goal ${g.name}: measured ${fmt(g.measured)} target ${g.compare}${fmt(g.target)} ${goalMet(g) ? 'met' : 'unmet'}`;
}

export function printGoal(g: Goal): void {
  console.log(goalLine(g));
}
