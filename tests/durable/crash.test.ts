/**
 * Crash safety: the host + engine run in a child process that is SIGKILLed at several points of a
 * multi-stage orchestration (mid fan-out, right after a durable timer was scheduled, right after a
 * sub-orchestration was started) and restarted against the same Azurite; every instance must still
 * complete with the right output.
 */
import { startAzurite, type AzuriteHandle } from '../../local/azurite';
import { ChildHost } from '../helpers/childHost';
import { DURABLE_APP, durableUrl, http, waitForStatus } from './helpers/harness';

let azurite: AzuriteHandle;
let host: ChildHost | undefined;

beforeAll(async () => {
  azurite = await startAzurite();
});

afterAll(async () => {
  await host?.kill();
  await azurite?.stop();
});

const startHost = (storage: string) => ChildHost.start({ appDir: DURABLE_APP, storage, followLog: true });

const INPUT = { n: 6, ms: 150, timerMs: 1500 };
// squares 0..5 = 55; chain: n=1 -> 1, n=(1%7)+2=3 -> 9 (acc 10), n=(10%7)+3=6 -> 36 (acc 46); FanOut(6) = 2*15.
const EXPECTED = { sum: 55, acc: 46, sub: 30 };

async function start(baseUrl: string, id: string): Promise<void> {
  const res = await http('POST', durableUrl(baseUrl, `orchestrators/MultiStage/${id}`), INPUT);
  expect(res.status).toBe(202);
}

test('SIGKILL mid fan-out, after a timer was scheduled and after a sub-orchestration started: all instances complete', async () => {
  const conn = azurite.connectionString();
  host = await startHost(conn);
  const ids = ['crash-a', 'crash-b', 'crash-c'];
  for (const id of ids) await start(host.baseUrl, id);

  // Kill point 1: while the first fan-out activities are running.
  await host.waitForLog('first Slow activity', (l) => l.msg === 'durable activity' && l.activity === 'Slow');
  await host.kill();

  // Kill point 2: right after a durable timer was scheduled (it must fire after the restart).
  host = await startHost(conn);
  expect(host.lines.some((l) => l.msg.startsWith('durable recovery'))).toBe(true);
  await host.waitForLog('a CreateTimer action', (l) => l.msg === 'durable action' && l.action === 'CreateTimer');
  await host.kill();

  // Kill point 3: right after a sub-orchestration was started.
  host = await startHost(conn);
  await host.waitForLog('a sub-orchestration', (l) => l.msg === 'durable action' && l.action === 'CallSubOrchestrator');
  await host.kill();

  host = await startHost(conn);
  for (const id of ids) {
    const s = await waitForStatus(host.baseUrl, id, undefined, 60_000);
    expect({ id, status: s.runtimeStatus, output: s.output }).toEqual({ id, status: 'Completed', output: EXPECTED });
  }
  await host.kill();
  host = undefined;
});
