/** @type {import('jest').Config} */
module.exports = {
  // Node's environment; with TEST_CPU_LOG it also logs what each file left running in its worker (see the file).
  testEnvironment: '<rootDir>/tests/helpers/leftRunningEnvironment.cjs',
  roots: ['<rootDir>/tests'],
  testMatch: ['**/*.test.ts'],
  transform: { '^.+\\.(t|j)s$': ['@swc/jest', { jsc: { target: 'es2022' }, module: { type: 'commonjs' } }] },
  // jose 6 ships ES modules only: Node >= 20.19 require()s them natively, Jest's own loader does not, so it is compiled.
  transformIgnorePatterns: ['/node_modules/(?!jose/)'],
  // Under jest the real worker's require proxy does not apply; serve our embedded core module the same way.
  moduleNameMapper: { '^@azure/functions-core$': '<rootDir>/local/host/coreModule.ts' },
  // Opt-in CPU seconds per file (TEST_CPU_LOG): the suite's cost on a CPU-bound machine; see the file.
  setupFilesAfterEnv: ['<rootDir>/tests/helpers/cpuPerFile.ts'],
  testTimeout: 120000,
  // Three times the 2 cores: a stack file waits on timers, redeliveries and its jobs' nodes much of the time, so fewer
  // workers leave the cores idle. Measured on this 2-core machine, fresh clones: 4 workers kept the cores ~86 % busy,
  // 5 workers ~95 %, 6 workers ~100 % (idle only during `npm ci`); `npm test` 664-690 s, 605 s, 593 s
  // (docs/testing.md#what-the-whole-suite-costs). Memory is not the limit (~1 GB per worker and its stack, 24 GB here).
  maxWorkers: 6,
  // Longest files first, also without jest's cache (a fresh clone): see tests/helpers/slowFirstSequencer.cjs.
  testSequencer: '<rootDir>/tests/helpers/slowFirstSequencer.cjs',
};
