/**
 * Azurite's save interval, narrowed: loaded into Azurite's process (`node --require autosave.cjs azurite.js`) with
 * HPC_AZURITE_AUTOSAVE_MS set, it gives every LokiJS store Azurite opens with autosave (tables, queue messages,
 * blob and extent metadata) that interval instead of Azurite's hard-coded 5000 ms. LokiJS's own option, set where
 * LokiJS reads it (Loki.prototype.configureOptions): LokiJS saves only a store that changed (autosaveDirty), to a
 * temporary file renamed over the old one, so an idle store costs nothing and a SIGKILL mid-save leaves the previous
 * save. A SIGKILL still loses what changed since the last save: at most this interval instead of 5 s
 * (docs/local-stack.md, "Azurite's own limits"). Plain JavaScript: it runs inside Azurite.
 */
'use strict';
const path = require('node:path');

const ms = Number(process.env.HPC_AZURITE_AUTOSAVE_MS);
if (!Number.isInteger(ms) || ms < 100)
  throw new Error(`autosave.cjs: HPC_AZURITE_AUTOSAVE_MS must be an integer >= 100, got ${process.env.HPC_AZURITE_AUTOSAVE_MS}`);
// The lokijs Azurite itself loads (resolved from Azurite's package, not from here).
const Loki = require(require.resolve('lokijs', { paths: [path.dirname(require.resolve('azurite/package.json'))] }));
const configure = Loki.prototype.configureOptions;
Loki.prototype.configureOptions = function configureOptions(options, initialConfig) {
  return configure.call(this, options && options.autosave ? { ...options, autosaveInterval: ms } : options, initialConfig);
};
