/**
 * REGISTRY_ALIASES = alias=registry[,alias=registry…] (each a lowercase `host[:port]`): registry names users write and
 * the registry each stands for on this deployment (shared/core/intake/registryAliases.ts rewrites specs with them).
 */
const HOST_PORT = /^[a-z0-9](?:[a-z0-9.-]{0,252}[a-z0-9])?(?::\d{1,5})?$/;

export function parseRegistryAliases(text: string | undefined, problems: string[]): Readonly<Record<string, string>> {
  const out: Record<string, string> = {};
  (text ?? '').split(',').forEach((raw, i) => {
    const entry = raw.trim();
    if (!entry) return;
    const [alias, target, ...extra] = entry.split('=').map((s) => s.trim());
    if (extra.length || !alias || !target) return problems.push(`REGISTRY_ALIASES: entry ${i + 1} ("${entry}") must be alias=registry (each host[:port])`);
    if (!HOST_PORT.test(alias) || !HOST_PORT.test(target))
      return problems.push(`REGISTRY_ALIASES: entry ${i + 1} ("${entry}"): alias and registry must each be a lowercase host[:port]`);
    if (alias in out) return problems.push(`REGISTRY_ALIASES: entry ${i + 1} names the alias "${alias}" again`);
    out[alias] = target;
  });
  return out;
}
