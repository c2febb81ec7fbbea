/**
 * Loads the app's entry points so that they register their functions and hooks with the core module,
 * and unloads them again so a later host in the same process sees a fresh registration.
 *
 * Plain node: entry points are required normally; on unload, every module the load added to
 * `require.cache` (outside node_modules) is evicted. Under jest `require.cache` cannot be edited, so the
 * load runs inside `jest.isolateModules`: each load gets fresh copies of the app and its libraries,
 * which is what a fresh worker process would see.
 */
import * as path from 'node:path';
import { expandEntryPoints, readPackageMain } from './entryPoints';

export interface LoadedApp {
  entryPoints: string[];
  unload(): void;
}

export function loadApp(appDir: string): LoadedApp {
  const main = readPackageMain(appDir);
  const entryPoints = expandEntryPoints(appDir, main);
  if (entryPoints.length === 0) {
    throw new Error(`No entry point matches package.json "main" ("${main}") under ${appDir}. Was the app built?`);
  }
  const requireOne = (file: string): void => {
    try {
      require(file);
    } catch (err) {
      const e = err as Error;
      throw new Error(`Worker was unable to load entry point "${path.relative(appDir, file)}": ${e.message}`, { cause: e });
    }
  };

  if (typeof jest !== 'undefined' && typeof jest.isolateModules === 'function') {
    jest.isolateModules(() => entryPoints.forEach(requireOne));
    return { entryPoints, unload: () => undefined };
  }

  for (const file of entryPoints) delete require.cache[file];
  const before = new Set(Object.keys(require.cache));
  const addedByLoad = (): string[] => Object.keys(require.cache).filter((k) => !before.has(k) && !k.includes(`${path.sep}node_modules${path.sep}`));
  const evict = (keys: string[]): void => keys.forEach((k) => delete require.cache[k]);
  try {
    entryPoints.forEach(requireOne);
  } catch (err) {
    // A retry must re-run the files that did load.
    evict(addedByLoad());
    throw err;
  }
  const added = addedByLoad();
  return { entryPoints, unload: () => evict(added) };
}
