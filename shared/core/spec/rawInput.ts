/**
 * Reading an unvalidated spec defensively: cross-field rules run next to the schema (so every problem is listed in one
 * answer), when any field may be missing or of the wrong type.
 */
export type Obj = Record<string, unknown>;
export const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
export const has = (o: Obj, k: string) => Object.prototype.hasOwnProperty.call(o, k) && o[k] !== undefined;
/** The object at `k`, or an empty one when it is missing or not an object. */
export const obj = (o: Obj, k: string): Obj => (isObj(o[k]) ? (o[k] as Obj) : {});
