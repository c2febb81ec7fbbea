/**
 * Preloaded into Azurite's process first (`node --require preload.cjs azurite.js`). When the IPC channel closes (our
 * stop(), or our death), Azurite stops exactly as on SIGTERM: its servers close and each Loki store saves. Writes to a
 * closed stdout/stderr (the parent is gone) must not crash it halfway through that save.
 *
 * A file and `--require`, not `--import data:...`: any `--import` makes Node load the main module through its ES module
 * loader, which first scans the whole CommonJS file for its exports (cjs-module-lexer), ~0.2 CPU-s per start of
 * Azurite's 7 MB bundle, and a test run starts Azurite ~90 times. Plain JavaScript: it runs inside Azurite.
 */
'use strict';
process.stdout.on('error', () => {});
process.stderr.on('error', () => {});
process.once('disconnect', () => process.kill(process.pid, 'SIGTERM'));
