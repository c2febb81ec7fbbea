/**
 * Property tests of the job spec (issue 5 acceptance): every generated valid spec is accepted, every
 * spec with one broken field is rejected with an error at that field, and nothing makes the parser throw.
 */
import fc from 'fast-check';
import YAML from 'yaml';
import { parseJobSpec, specHash, diffSpecs, deriveJobId } from '../../shared/core/spec';
import { JOB_ID_RE as JOB_SPEC_JOB_ID_RE } from '../../shared/core/spec/patterns';
import { pathMatches, specMutations, validSpecInput } from '../helpers/specArbitraries';

type Format = 'object' | 'json' | 'yaml';
function submit(spec: unknown, format: Format) {
  if (format === 'json') return parseJobSpec(JSON.stringify(spec, null, 2), 'application/json');
  if (format === 'yaml') return parseJobSpec(YAML.stringify(spec), 'application/yaml');
  return parseJobSpec(spec);
}
const format = fc.constantFrom<Format>('object', 'json', 'yaml');

test('every generated valid spec is accepted, as an object, JSON or YAML, with defaults applied', () => {
  fc.assert(
    fc.property(validSpecInput, format, (input, fmt) => {
      const r = submit(input, fmt);
      if (!r.ok) throw new Error(`rejected (${fmt}): ${JSON.stringify(r.errors)}\n${JSON.stringify(input)}`);
      expect(r.spec.name).toBe(input.name);
      expect(r.spec.container.pullConcurrency).toBeLessThanOrEqual(r.spec.container.allowAboveTen ? 100 : 10);
      const givenPort = (input.mpi as { sshPort?: number }).sshPort;
      expect(r.spec.mpi.sshPort).toBe(givenPort ?? (r.spec.container.runtime === 'docker' ? 23 : 22));
      expect(r.spec.cleanup.deletePool).toBeDefined();
      if (r.spec.pool.poolId === undefined) {
        expect(r.spec.pool.vmSize).toBeDefined();
        expect(r.spec.pool.nodeAgentSku).toBeDefined();
      } else {
        expect(r.spec.cleanup.deletePool).toBe('never');
      }
    }),
    { numRuns: 200 },
  );
});

test('normalizing is idempotent: a parsed spec parses to itself with the same hash and job id', () => {
  fc.assert(
    fc.property(validSpecInput, (input) => {
      const first = parseJobSpec(input);
      if (!first.ok) throw new Error(JSON.stringify(first.errors));
      const second = parseJobSpec(JSON.parse(JSON.stringify(first.spec)));
      if (!second.ok) throw new Error(JSON.stringify(second.errors));
      expect(second.spec).toEqual(first.spec);
      expect(specHash(second.spec)).toBe(specHash(first.spec));
      expect(diffSpecs(first.spec, second.spec)).toEqual([]);
      const id = deriveJobId(first.spec);
      expect(id).toMatch(JOB_SPEC_JOB_ID_RE);
      expect(deriveJobId(second.spec)).toBe(id);
    }),
    { numRuns: 100 },
  );
});

test('every one-field mutation is rejected with an error at that field (or below it)', () => {
  fc.assert(
    fc.property(validSpecInput, fc.constantFrom(...specMutations), format, (input, mutation, fmt) => {
      const broken = mutation.apply(input);
      const r = submit(broken, fmt);
      if (r.ok) throw new Error(`accepted although ${mutation.name}: ${JSON.stringify(broken)}`);
      expect(r.errors.length).toBeGreaterThan(0);
      const hit = r.errors.some((e) => pathMatches(e.path, mutation.path));
      if (!hit) throw new Error(`${mutation.name} (${fmt}): no error at ${mutation.path}; got ${JSON.stringify(r.errors)}`);
      for (const e of r.errors) expect(e.message.length).toBeGreaterThan(0);
    }),
    { numRuns: 300 },
  );
});

test('every mutation in the catalogue is exercised at least once against a fixed valid spec', () => {
  const base = { name: 'base', pool: { vmSize: 'Standard_D2s_v3', nodes: 2 }, mpi: { runtime: 'openmpi', command: './a.out' } };
  for (const m of specMutations) {
    const r = parseJobSpec(m.apply(base));
    expect({ mutation: m.name, ok: r.ok }).toEqual({ mutation: m.name, ok: false });
    if (!r.ok && !r.errors.some((e) => pathMatches(e.path, m.path))) {
      throw new Error(`${m.name}: no error at ${m.path}; got ${JSON.stringify(r.errors)}`);
    }
  }
});

test('the parser never throws, whatever it is given', () => {
  fc.assert(
    fc.property(
      fc.oneof(
        fc.anything(),
        fc.string({ maxLength: 300 }),
        fc.string({ unit: 'binary', maxLength: 200 }),
        fc.tuple(validSpecInput, fc.nat(400)).map(([s, cut]) => YAML.stringify(s).slice(0, cut)),
        fc.jsonValue().map((v) => ({ name: 'x', pool: v, mpi: v })),
      ),
      fc.constantFrom(undefined, 'application/json', 'application/yaml', 'text/plain'),
      (input, type) => {
        const r = parseJobSpec(input, type);
        expect(typeof r.ok).toBe('boolean');
        if (!r.ok) {
          expect(r.errors.length).toBeGreaterThan(0);
          for (const e of r.errors) {
            expect(typeof e.path).toBe('string');
            expect(typeof e.message).toBe('string');
          }
        }
      },
    ),
    { numRuns: 300 },
  );
});
