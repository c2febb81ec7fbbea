/** Issue 28 item 5: after a cancel, the final status says how each node and the MPI task ended (shared/core/contract/endedProgress.ts). */
import { endedProgress } from '../../shared/core/contract/endedProgress';

test('a job cancelled while its MPI task ran: every running node is deleted with the pool, the task terminated', () => {
  const ended = endedProgress({ nodes: { n1: 'running', n2: 'running', n3: 'failed' }, mpi: { state: 'running', startedAt: 't0' } }, true);
  expect(ended.nodes).toEqual({ n1: 'deleted', n2: 'deleted', n3: 'failed' });
  expect(ended.mpi).toEqual({ state: 'terminated', startedAt: 't0' });
});

test('a kept pool: nodes that never finished their part are ended, not deleted', () => {
  expect(endedProgress({ nodes: { n1: 'pulling', n2: 'ready' } }, false)).toEqual({ nodes: { n1: 'ended', n2: 'ended' } });
});

test('a job that finished normally changes nothing', () => {
  expect(endedProgress({ nodes: { n1: 'done', n2: 'failed' }, mpi: { state: 'completed' } }, true)).toEqual({});
  expect(endedProgress({ nodes: {} }, true)).toEqual({});
});
