/** Tests run against real Kafka, a schema registry, Redis and ClickHouse (chdb) that
 *  test/infra/global-setup.ts brings up once per run (or takes from the environment). */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  // ESM-only packages used by tests (the GitHub signer, the independent AEADs) are compiled to CommonJS like our own code
  transformIgnorePatterns: ['/node_modules/(?!(@octokit|@noble)/)'],
  transform: { '^.+\\.(t|j)sx?$': ['@swc/jest', { jsc: { target: 'es2022' }, module: { type: 'commonjs' } }] },
  globalSetup: '<rootDir>/test/infra/global-setup.ts',
  globalTeardown: '<rootDir>/test/infra/global-teardown.ts',
  testTimeout: 60000,
  maxWorkers: 2,
  verbose: true,
};
