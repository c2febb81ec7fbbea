/**
 * Child-process entry for tests/batch/emulator.persist.test.ts: a persisted Batch emulator on `<dataDir>` that runs
 * until killed, so a test can SIGKILL it (no stop() runs: its task processes live on) and start another on the
 * same folder. Prints "READY <url>" once serving.
 *   node --import tsx tests/batch/emulatorProcess.ts <dataDir>
 */
import { startBatchEmulator } from '../../local/batch';

startBatchEmulator({ dataDir: process.argv[2], persist: true, timing: { allocateMs: 20, bootMs: 20, leaveMs: 20 } }).then(
  (emu) => process.stdout.write(`READY ${emu.url}\n`),
  (err: Error) => {
    process.stderr.write(`${err.stack ?? err.message}\n`);
    process.exit(1);
  },
);
