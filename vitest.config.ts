import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // The unit tier runs first, on its own (vitest.unit.config.ts); the load, reliability, scale, bundles and dashboard end-to-end suites run on their own: `npm run test:slow` / `test:reliability` / `test:scale` / `test:bundles` / `test:e2e` (vitest.slow.config.ts).
    exclude: [
      '**/node_modules/**',
      'test/**/*.unit.test.ts',
      'test/**/*.slow.test.ts',
      'test/**/*.reliability.test.ts',
      'test/**/*.scale.test.ts',
      'test/**/*.bundles.test.ts',
      'test/**/*.e2e.test.ts',
    ],
    globalSetup: ['test/support/global-setup.ts'],
    // Every test file: writes past AWS's limits (a 64 KB item, a 100-action or 4 MB transaction) and
    // requests a function's IAM policy would deny on AWS fail the test.
    setupFiles: ['test/support/write-limits.ts', 'test/support/iam-check.ts', 'test/support/fresh-instance.ts'],
    pool: 'forks',
    maxWorkers: 2,
    testTimeout: 30_000,
    // Template tests synthesize the whole stack in a hook: over a minute on a loaded 2-core machine.
    hookTimeout: 150_000,
    // Files share 127.0.0.1: the per-IP limit is tested where it is set small on purpose.
    env: {
      LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'SILENT',
      AWS_REGION: 'us-east-1',
      STAGE: 'local',
      UNAUTHENTICATED_RATE_LIMIT_PER_MINUTE: '100000',
      AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
      POWERTOOLS_METRICS_DISABLED: 'true',
      // Stacks started by tests never replace the file of a developer's running `npm start`.
      LOCAL_STACK_FILE: join(tmpdir(), `ras-local-stack-${process.pid}.json`),
      // Behaviour tests share two cores with each other (a synth, a browser): a request starved of CPU
      // must not meet the 10 s production deadline by chance. Tests of the deadline set their own.
      LOCAL_FUNCTION_TIMEOUT_MS: '25000',
      // As `npm start` runs (infra/local/start.ts); the tests of the pace and the bound set their own.
      APPLIER_WCU_PER_SECOND: '0',
      PENDING_BACKLOG_BOUND: '20000',
    },
  },
});
