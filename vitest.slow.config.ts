import { defineConfig } from 'vitest/config';
import base from './vitest.config.ts';

/**
 * `npm run test:slow`: the load suites (hot merchant, 1,000 webhook deliveries, delivery latency),
 * one file at a time so they do not measure each other; `.ci/run` runs them after `npm test`.
 */
export default defineConfig({
  ...base,
  test: { ...base.test, include: ['test/**/*.slow.test.ts'], exclude: ['**/node_modules/**'], maxWorkers: 1, testTimeout: 600_000 },
});
