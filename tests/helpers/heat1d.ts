/** examples/mpi/heat1d.c's scheme computed here, to check what the solver wrote (examples/workloads/heat1d-case). */

/** Fixed ends, u += a*(u[i-1] - 2u[i] + u[i+1]) on the whole rod, `steps` times. */
export function heat1dReference(initial: number[], steps: number, alpha: number): number[] {
  let u = [...initial];
  for (let s = 0; s < steps; s++) {
    u = u.map((x, i) => (i === 0 || i === u.length - 1 ? x : x + alpha * (u[i - 1] - 2.0 * x + u[i + 1])));
  }
  return u;
}

/** The values of a field file (a count line, then one value per line). */
export const fieldValues = (text: string): number[] => text.trim().split('\n').slice(1).map(Number);
