/** The spec's `retry` and `preflight` sections: their defaults, and every refusal with its field path. */
import { parse, stringify } from 'yaml';
import { parseJobSpec } from '../../shared/core/spec';
import { smallSpec } from '../ops/helpers';

function withSections(extra: Record<string, unknown>) {
  return parseJobSpec(stringify({ ...(parse(smallSpec('s', { command: 'x' })) as object), ...extra }), 'application/yaml');
}
const errorsOf = (extra: Record<string, unknown>) => {
  const r = withSections(extra);
  if (r.ok) throw new Error('expected the spec to be refused');
  return r.errors.map((e) => `${e.path}: ${e.message}`);
};

test('defaults: one attempt (no retry) on the infrastructure classes; preflight on, 10 s ssh, 1 GB, ping-pong, 2 rounds, 3 min', () => {
  const r = withSections({});
  if (!r.ok) throw new Error(JSON.stringify(r.errors));
  expect(r.spec.retry).toEqual({
    maxAttempts: 1,
    on: ['nodeFailure', 'allocationFailure', 'preflightFailure'],
    exitCodes: [],
    backoff: { initial: 'PT30S', max: 'PT10M' },
  });
  expect(r.spec.preflight).toEqual({
    enabled: true,
    health: { enabled: true, skip: [] },
    maxSshMs: 10_000,
    minFreeDiskGB: 1,
    pingPong: { enabled: true },
    rounds: 2,
    runPreExecutionCommand: true,
    timeout: 'PT3M',
  });
});

test('a full retry section is taken as given', () => {
  const r = withSections({ retry: { maxAttempts: 3, on: ['nodeFailure'], exitCodes: [75, -1], backoff: { initial: 'PT5S', max: 'PT1M' } } });
  if (!r.ok) throw new Error(JSON.stringify(r.errors));
  expect(r.spec.retry).toEqual({ maxAttempts: 3, on: ['nodeFailure'], exitCodes: [75, -1], backoff: { initial: 'PT5S', max: 'PT1M' } });
});

test('retry refusals name the field', () => {
  expect(errorsOf({ retry: { maxAttempts: 0 } })).toEqual(['retry.maxAttempts: must be at least 1 (1 = no retry)']);
  expect(errorsOf({ retry: { maxAttempts: 11 } })).toEqual(['retry.maxAttempts: must be at most 10']);
  expect(errorsOf({ retry: { on: ['nodeFailure', 'nodeFailure'] } })).toEqual(['retry.on: must not list a failure class twice']);
  expect(errorsOf({ retry: { on: ['applicationFailure'] } })).toEqual(['retry.on[0]: must be one of "nodeFailure", "allocationFailure", "preflightFailure"']);
  expect(errorsOf({ retry: { exitCodes: [0] } })).toEqual(['retry.exitCodes[0]: must not be 0: exit code 0 is success']);
  expect(errorsOf({ retry: { exitCodes: [3, 3] } })).toEqual(['retry.exitCodes: must not list an exit code twice']);
  expect(errorsOf({ retry: { backoff: { initial: 'PT10M', max: 'PT1M' } } })).toEqual(['retry.backoff.initial: backoff.initial must not exceed backoff.max']);
  expect(errorsOf({ retry: { backoff: { initial: '30s' } } })).toEqual([
    'retry.backoff.initial: must be an ISO 8601 duration such as "PT30S" or "PT2M": the wait before the second attempt',
  ]);
  expect(errorsOf({ retry: { backoff: { max: 'PT2H' } } })).toEqual(['retry.backoff.max: must be at most PT1H']);
  expect(errorsOf({ retry: { attempts: 2 } })).toEqual([expect.stringMatching(/^retry(\.attempts)?: .*attempts/)]);
});

test('preflight refusals name the field', () => {
  expect(errorsOf({ preflight: { maxSshMs: 50 } })).toEqual([expect.stringMatching(/^preflight\.maxSshMs: /)]);
  expect(errorsOf({ preflight: { rounds: 6 } })).toEqual([expect.stringMatching(/^preflight\.rounds: /)]);
  expect(errorsOf({ preflight: { timeout: 'PT10S' } })).toEqual(['preflight.timeout: must be between PT30S and PT30M']);
  expect(errorsOf({ preflight: { minFreeDiskGB: -1 } })).toEqual([expect.stringMatching(/^preflight\.minFreeDiskGB: /)]);
  expect(errorsOf({ preflight: { pingPong: { maxLatencyUs: 0 } } })).toEqual(['preflight.pingPong.maxLatencyUs: must be greater than 0']);
  expect(errorsOf({ preflight: { enabled: 'yes' } })).toEqual(['preflight.enabled: must be true or false, got the string "yes"']);
});
