/** Resolving what bindings name indirectly: `%Setting%` expressions (connections: ../storageConnection.ts). */

/** Replaces `%NAME%` with the app setting NAME (as the host's binding-expression resolver does). */
export function resolveAppSettingExpressions(value: string, what: string, env: NodeJS.ProcessEnv = process.env): string {
  return value.replace(/%([^%]+)%/g, (_m, name: string) => {
    const v = env[name];
    if (v === undefined) throw new Error(`${what}: app setting "${name}" (from %${name}%) is not set`);
    return v;
  });
}
