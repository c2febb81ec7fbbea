/**
 * Reading a job row: a spec or result text already checked is not checked again (shared/core/state/entityCodec.ts),
 * which must not change what a reader gets, nor let one reader's changes reach the next.
 */
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { parseJobSpec } from '../../shared/core/spec';
import { entityToJob, jobToEntity } from '../../shared/core/state/entityCodec';
import type { JobRecord } from '../../shared/adapters/state';

const parsed = parseJobSpec(readFileSync(path.join(__dirname, '..', '..', 'examples', 'demo', 'native-openmpi.yaml'), 'utf8'), 'application/yaml');
if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors));
const row: JobRecord = {
  id: 'codec-1',
  name: 'codec',
  owner: 'tid-1/alice',
  tags: {},
  specHash: 'h',
  spec: parsed.spec,
  state: 'Succeeded',
  stage: 'Succeeded',
  progress: null,
  createdAt: 't',
  updatedAt: 't',
  eventSeq: 3,
  result: { exitCode: 0, timings: { Running: { startedAt: 'a', endedAt: 'b' } }, nodeMinutes: 2 },
};
const read = (entity: object) => entityToJob(entity as never);

describe('entityToJob', () => {
  it('reads the same spec and result on every read, each reader its own copy', () => {
    const entity = jobToEntity(row);
    const first = read(entity);
    expect(first.spec).toEqual(parsed.spec);
    expect(first.result).toEqual(row.result);
    (first.spec as { pool: { nodes: number } }).pool.nodes = 99;
    (first.result as { nodeMinutes: number }).nodeMinutes = 99;
    const second = read(entity);
    expect(second.spec).toEqual(parsed.spec);
    expect(second.result).toEqual(row.result);
    expect(second.spec).not.toBe(read(entity).spec);
  });

  it('keeps refusing a stored spec or result that is not valid, however often it is read', () => {
    const entity = { ...jobToEntity(row), spec: JSON.stringify({ id: 'codec-1' }), result: JSON.stringify({ exitCode: 'zero' }) };
    for (let i = 0; i < 3; i++) {
      const job = read(entity);
      expect(job.spec).toBeUndefined();
      expect(job.submitted).toEqual({ id: 'codec-1' });
      expect(job.result).toBeUndefined();
    }
  });
});
