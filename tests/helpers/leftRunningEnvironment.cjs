/**
 * Jest's Node environment, plus, when TEST_CPU_LOG is set (tests/helpers/cpuPerFile.ts), one line for each test file
 * that left something running in its jest worker: the servers, sockets and child processes still open after the
 * file's last afterAll and a short grace that were not open when it started, each named (a server's port, a socket's
 * peer, a process's command line) and marked when it does not keep the worker alive (unref'd).
 *
 * Why: a jest worker ends by letting its event loop drain; one that does not within jest's grace is killed ("A worker
 * process has failed to exit gracefully"), without saying which file left what. The environment's teardown is the one
 * place that runs after all of a file's own hooks, also for the last file of a worker. Timers are not listed: Node
 * lists open handles (process._getActiveHandles(), undocumented but stable since Node 0.x) without them, and jest's
 * own timers come and go, so a count of them names nobody.
 */
const { appendFileSync } = require('node:fs');
const { setTimeout: sleep } = require('node:timers/promises');
const path = require('node:path');
const { TestEnvironment } = require('jest-environment-node');

const LOG = process.env.TEST_CPU_LOG;
const TESTS_ROOT = path.resolve(__dirname, '..');
/** Time for handles already closing (a socket's end, a child's exit) to go before they count as left running. */
const GRACE_MS = 250;

const openHandles = () => process._getActiveHandles();

/** A handle as a person looks for it: what it is and where it leads. */
function describe(handle) {
  const kind = handle.constructor?.name ?? typeof handle;
  const refed = typeof handle.hasRef === 'function' ? handle.hasRef() : (handle._handle?.hasRef?.() ?? true);
  let what = kind;
  if (Array.isArray(handle.spawnargs)) what += ` ${handle.spawnargs.slice(0, 4).join(' ')}${handle.pid ? ` (pid ${handle.pid})` : ''}`;
  else if (typeof handle.listening === 'boolean' && typeof handle.address === 'function') what += ` listening on ${JSON.stringify(handle.address())}`;
  else if (handle.remotePort) what += `${handle.server ? ' accepted' : ''} from :${handle.localPort} to ${handle.remoteAddress}:${handle.remotePort}`;
  else if (handle._type === 'pipe' || handle._handle?.constructor?.name === 'Pipe') what += ' (pipe)';
  return refed ? what : `${what} (unref'd)`;
}

class LeftRunningEnvironment extends TestEnvironment {
  constructor(config, context) {
    super(config, context);
    this.file = path.relative(TESTS_ROOT, context.testPath).split(path.sep).join('/');
  }

  async setup() {
    await super.setup();
    if (LOG) this.before = new Set(openHandles());
  }

  async teardown() {
    await super.teardown();
    if (!LOG || !this.before) return;
    await sleep(GRACE_MS, undefined, { ref: false });
    const left = openHandles().filter((h) => !this.before.has(h));
    if (left.length > 0) appendFileSync(LOG, JSON.stringify({ file: this.file, leftRunning: left.map(describe) }) + '\n');
  }
}

module.exports = LeftRunningEnvironment;
