/** Resolving what bindings name indirectly: `%Setting%` expressions and `connection` app settings. */

/** Replaces `%NAME%` with the app setting NAME (as the host's binding-expression resolver does). */
export function resolveAppSettingExpressions(value: string, what: string, env: NodeJS.ProcessEnv = process.env): string {
  return value.replace(/%([^%]+)%/g, (_m, name: string) => {
    const v = env[name];
    if (v === undefined) throw new Error(`${what}: app setting "${name}" (from %${name}%) is not set`);
    return v;
  });
}

/**
 * The storage connection string a binding uses: its `connection` names an app setting (also tried with
 * the `AzureWebJobs` prefix, like the host); no `connection` means AzureWebJobsStorage.
 */
export function resolveStorageConnection(connection: unknown, what: string, env: NodeJS.ProcessEnv = process.env): string {
  const name = typeof connection === 'string' && connection !== '' ? connection : 'AzureWebJobsStorage';
  const value = env[name] ?? env[`AzureWebJobs${name}`];
  if (!value) throw new Error(`${what}: the storage connection setting "${name}" is not set in the environment`);
  return value;
}
