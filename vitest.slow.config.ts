import { defineConfig } from 'vitest/config';
import base from './vitest.config.ts';

/**
 * The suites `npm test` leaves out, one file at a time so they do not measure each other
 * (test/support/slow-suites.mjs sets SUITE_KIND): `slow` — `npm run test:slow`, the load suites (hot
 * merchant, 1,000 webhook deliveries, delivery latency); `reliability` — `npm run test:reliability`
 * (load without loss, faults, fuzzing, isolation, rate limits); `scale` — `npm run test:scale` (AWS
 * behaviour at one merchant's full speed: the capacity model, id allocation, the outbox outage,
 * webhook isolation); `e2e` — `npm run test:e2e` (the dashboard in headless Chromium). `.ci/run` runs
 * them after `npm test`.
 */
const kind = process.env.SUITE_KIND ?? 'slow';
export default defineConfig({
  ...base,
  test: {
    ...base.test,
    include: [`test/**/*.${kind}.test.ts`],
    exclude: ['**/node_modules/**'],
    maxWorkers: 1,
    testTimeout: 600_000,
    // One file at a time, so the load suites measure the production deadline (10 s), not the behaviour
    // tests' margin; the dashboard's end-to-end suite keeps that margin (a browser shares the two cores).
    env: Object.fromEntries(Object.entries(base.test?.env ?? {}).filter(([k]) => kind === 'e2e' || k !== 'LOCAL_FUNCTION_TIMEOUT_MS')),
  },
});
