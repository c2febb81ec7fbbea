/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/tests'],
  testMatch: ['**/*.test.ts'],
  transform: { '^.+\\.(t|j)s$': ['@swc/jest', { jsc: { target: 'es2022' }, module: { type: 'commonjs' } }] },
  // Under jest the real worker's require proxy does not apply; serve our embedded core module the same way.
  moduleNameMapper: { '^@azure/functions-core$': '<rootDir>/local/host/coreModule.ts' },
  testTimeout: 120000,
  maxWorkers: 2,
};
