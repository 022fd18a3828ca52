import { defineConfig } from 'vitest/config';

/**
 * The unit tier (`npm run test:unit`): the pure rules, in memory, with no DynamoDB Local, server or
 * browser: state machines, validation, money, time, timelines, classification (docs/testing.md).
 * `npm test` runs it first, then the behaviour suites (vitest.config.ts).
 */
export default defineConfig({
  test: {
    include: ['test/**/*.unit.test.ts'],
    exclude: ['**/node_modules/**'],
    pool: 'threads',
    maxWorkers: 2,
    testTimeout: 10_000,
    env: {
      LOG_LEVEL: 'SILENT',
      AWS_REGION: 'us-east-1',
      STAGE: 'local',
      AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
      POWERTOOLS_METRICS_DISABLED: 'true',
    },
  },
});
