/**
 * Jest's test order, longest files first, also on a fresh clone.
 *
 * Jest's own sequencer orders by the durations it cached on this machine, but runs files it has no time for FIRST,
 * largest source first: on a fresh clone (CI, `.ci/run`) that is every file, and the 4–8 minute end-to-end files
 * (the admission burst, the 40-node image tree) started wherever their size put them, so one of them ran alone at
 * the end while the other worker sat idle. Here a file's expected duration is jest's cached one when there is one,
 * else the one recorded in durations.json (seconds, per file under tests/, from a whole run on 2 workers), else a
 * guess from its source: a file that starts a stack or a host is a slow one. Failed files still go first, as in
 * jest's own order.
 */
const { readFileSync } = require('node:fs');
const path = require('node:path');
const Sequencer = require('@jest/test-sequencer').default;

const RECORDED = JSON.parse(readFileSync(path.join(__dirname, 'durations.json'), 'utf8'));
const TESTS_ROOT = path.resolve(__dirname, '..');
/** What a file with no recorded time is expected to take (ms): a whole stack, or only what runs in process. */
const GUESS_STACK_MS = 30_000;
const GUESS_PLAIN_MS = 1_000;
const STARTS_A_STACK = /\b(startStack|startServices|ChildHost|StackFixture)\b/;

function expectedMs(sequencer, test) {
  const cached = sequencer.time(test);
  if (cached != null) return cached;
  const rel = path.relative(TESTS_ROOT, test.path).split(path.sep).join('/');
  if (RECORDED[rel] !== undefined) return RECORDED[rel] * 1000;
  try {
    return STARTS_A_STACK.test(readFileSync(test.path, 'utf8')) ? GUESS_STACK_MS : GUESS_PLAIN_MS;
  } catch {
    return GUESS_PLAIN_MS;
  }
}

class SlowFirstSequencer extends Sequencer {
  sort(tests) {
    for (const test of tests) test.duration = expectedMs(this, test);
    return [...tests].sort((a, b) => {
      const failedA = this.hasFailed(a);
      if (failedA !== this.hasFailed(b)) return failedA ? -1 : 1;
      return b.duration - a.duration || (a.path < b.path ? -1 : 1);
    });
  }
}

module.exports = SlowFirstSequencer;
