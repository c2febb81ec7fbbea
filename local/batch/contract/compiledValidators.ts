/**
 * Compiled validators kept across processes. ajv turns a schema into JavaScript source and evaluates it; producing
 * that source is most of the cost (a pool or task body with its referenced models takes tens of milliseconds), and
 * each test file that starts an emulator or a contract recorder compiled the same schemas again. ajv's standalone
 * export writes the source of a compiled validator as a module; it is kept in the file cache (fileCache.ts) under a
 * key of everything that shapes it, and later processes evaluate it instead of compiling: the same code, so the same
 * answers and the same error objects.
 *
 * The key: the ajv version and options, the registered formats' names and kinds (their functions are not in the
 * source: it reads them from `formats`, handed the live ones at load), the schema documents added to ajv (the
 * converted definitions), and the schema itself.
 */
import { join } from 'node:path';
import { _, type ValidateFunction } from 'ajv';
import type AjvCore from 'ajv/dist/core';
import type { Options } from 'ajv/dist/core';
import standaloneCode from 'ajv/dist/standalone';
import { contractCacheDir, readCacheEntry, sha256, writeCacheEntry } from './fileCache';
import type { JsonSchema } from './swaggerToJsonSchema';

/** Bumped when the cached modules' layout or loading changes. */
const CACHE_FORMAT = 1;

/** Options every contract ajv instance needs for its validators to be cached: the source kept, formats by name. */
export const CACHEABLE_CODE: Options['code'] = { source: true, formats: _`formats` };

export interface CompilerOptions {
  /** The ajv instance (made with {@link CACHEABLE_CODE}), its formats registered. */
  ajv: AjvCore;
  /** The schema documents the validators refer into, added to ajv only when a schema is first compiled. */
  documents: JsonSchema[];
  /** Where entries live; the default is node_modules/.cache/batch-contract/validators. */
  dir?: string;
}

/** `compile(schema)`: the validator from the cache when it holds one for this schema, else compiled and cached. */
export function cachingCompiler(options: CompilerOptions): (schema: JsonSchema) => ValidateFunction {
  const { ajv, documents } = options;
  let dir = options.dir;
  let base: string | undefined;
  let added = false;
  const ajvVersion = (require('ajv/package.json') as { version: string }).version;

  const baseKey = () =>
    (base ??= sha256(
      JSON.stringify({
        format: CACHE_FORMAT,
        ajv: ajvVersion,
        flavour: flavour(ajv),
        formats: formatKinds(ajv.formats),
        documents: sha256(JSON.stringify(documents)),
      }),
    ));

  return (schema) => {
    let file: string | undefined;
    let key: string | undefined;
    try {
      key = sha256(`${baseKey()}\n${JSON.stringify(schema)}`);
      file = join((dir ??= join(contractCacheDir(), 'validators')), `${key.slice(0, 32)}.js`);
      const body = readCacheEntry(file, key);
      if (body !== undefined) return load(body, ajv.formats);
    } catch {
      // not in the cache, or not loadable: compile
    }
    if (!added) {
      for (const doc of documents) ajv.addSchema(doc);
      added = true;
    }
    const fn = ajv.compile(schema);
    if (file && key) {
      let source: string | undefined;
      try {
        source = standaloneCode(ajv, fn);
      } catch {
        // a schema ajv cannot export stays uncached; it was compiled all the same
      }
      if (source !== undefined) writeCacheEntry(file, key, source);
    }
    return fn;
  };
}

/** The ajv class (draft-07, 2019-09) and the options that shape generated code (the plain-valued ones). */
function flavour(ajv: AjvCore): string {
  const plain = (o: object) => Object.fromEntries(Object.entries(o).filter(([, v]) => v === null || (typeof v !== 'object' && typeof v !== 'function')));
  return JSON.stringify({ class: ajv.constructor.name, ...plain(ajv.opts), code: { ...plain(ajv.opts.code), formats: String(ajv.opts.code.formats) } });
}

/** What the generated source depends on in each format: it calls a function, tests a RegExp, or reads `validate`. */
function formatKinds(formats: AjvCore['formats']): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, f] of Object.entries(formats)) {
    if (f instanceof RegExp) out[name] = 'regexp';
    else if (typeof f === 'function' || typeof f === 'string' || typeof f === 'boolean') out[name] = typeof f;
    else if (f) out[name] = `${f.validate instanceof RegExp ? 'regexp' : typeof f.validate}:${f.type ?? ''}:${f.async === true}:${typeof f.compare}`;
  }
  return out;
}

/** Evaluates a standalone validator module; its `require`s are ajv's run-time helpers, its `formats` the live ones. */
function load(body: string, formats: AjvCore['formats']): ValidateFunction {
  const module = { exports: {} as unknown };
  new Function('require', 'module', 'exports', 'formats', body)(require, module, module.exports, formats);
  const fn = module.exports;
  if (typeof fn !== 'function') throw new Error('not a validator module');
  return fn as ValidateFunction;
}
