import { goalLine } from '../../bench/lib/goal';

describe('bench goal lines', () => {
  it('print one parseable line per goal: goal <name>: measured <v> target <v> met|unmet', () => {
    expect(goalLine({ name: 'intake-http-p99', measured: 337.2, target: 150, compare: '<=', unit: 'ms', digits: 0 })).toBe(
      'goal intake-http-p99: measured 337ms target <=150ms unmet',
    );
    expect(goalLine({ name: 'stagger-registry-pulls.nodes-100', measured: 10, target: 10, compare: '<=' })).toBe(
      'goal stagger-registry-pulls.nodes-100: measured 10 target <=10 met',
    );
    expect(goalLine({ name: 'staging-copy-vs-raw-sdk', measured: 0.93, target: 0.9, compare: '>=' })).toBe(
      'goal staging-copy-vs-raw-sdk: measured 0.93 target >=0.90 met',
    );
    expect(goalLine({ name: 'stagger-failed-pulls.nodes-40', measured: 1, target: 0, compare: '==' })).toMatch(/ unmet$/);
    const re = /^goal [a-z0-9.-]+: measured \S+ target (<=|>=|==)\S+ (met|unmet)$/;
    expect(goalLine({ name: 'overlap-billed-idle-ratio.allocate-20s', measured: 0.6912, target: 0.5, compare: '<=' })).toMatch(re);
  });

  it('refuses a name tools could not key on', () => {
    expect(() => goalLine({ name: 'HTTP door p99', measured: 1, target: 1, compare: '<=' })).toThrow(/kebab-case/);
  });
});
