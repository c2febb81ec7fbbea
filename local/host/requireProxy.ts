/**
 * Serves `@azure/functions-core` to plain-node code the way the real worker does: by proxying
 * `Module.prototype.require`. Under jest this is unnecessary (moduleNameMapper) and harmless.
 */
import Module from 'node:module';
import * as coreModule from './coreModule';

const INSTALLED = Symbol.for('hpc-mpi.local-host.functions-core.require-proxy');

export function installCoreModuleRequireProxy(): void {
  const holder = globalThis as unknown as Record<symbol, boolean | undefined>;
  if (holder[INSTALLED]) return;
  const proto = (Module as unknown as { prototype: { require: (id: string) => unknown } }).prototype;
  proto.require = new Proxy(proto.require, {
    apply(target, thisArg, args: unknown[]) {
      return args[0] === '@azure/functions-core' ? coreModule : Reflect.apply(target, thisArg, args);
    },
  });
  holder[INSTALLED] = true;
}
