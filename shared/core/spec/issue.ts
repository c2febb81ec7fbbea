/**
 * One problem found in a job spec. Declared apart from the checks that produce it so the spec's sections can report
 * issues without importing the cross-field checker that imports them.
 */
export interface SpecIssue {
  /** Path segments from the spec root, e.g. ['container', 'images', 0]. */
  path: (string | number)[];
  message: string;
}
