import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { measureColdStart } from '../../infra/bundles/cold-start.ts';
import { functionBundles } from '../support/function-bundles.ts';
import type { BenchItem } from '../support/report.ts';
import { round } from '../support/stats.ts';

/**
 * Item 6, a cold-start proxy: for each function bundle, a fresh `node` importing it (which builds
 * its handler) against a fresh `node` importing an empty module, alternately (the project's
 * `measureColdStart`, infra/bundles/cold-start.ts); CPU and wall ratios of the medians, and the size.
 */
const ROUNDS = Number(process.env.BENCH_COLD_ROUNDS ?? 3);

export const item: BenchItem = {
  name: 'cold-start',
  title: '6. Cold-start proxy: fresh node importing each function bundle vs an empty module',
  run: async () => {
    const dir = mkdtempSync(join(tmpdir(), 'bench-bundles-'));
    try {
      const bundles = await functionBundles(join(dir, 'bundles'));
      const rows = [];
      for (const b of bundles)
        rows.push({
          handler: b.handler,
          kb: round(b.bytes / 1024, 0),
          ...(await measureColdStart(b.file, { runs: ROUNDS, layerFile: b.layerFile })),
        });
      const worst = rows.reduce((a, b) => (b.cpuRatio > a.cpuRatio ? b : a));
      const largest = rows.reduce((a, b) => (b.kb > a.kb ? b : a));
      return {
        tables: [
          {
            columns: ['function (handler)', 'bundle KB', 'CPU ms: bundle / empty', 'CPU ratio', 'wall ms: bundle / empty', 'wall ratio'],
            rows: rows.map((r) => [
              r.handler.replace(/^functions\//, ''),
              r.kb,
              `${r.bundleCpuMs} / ${r.emptyCpuMs}`,
              r.cpuRatio,
              `${r.bundleWallMs} / ${r.emptyWallMs}`,
              r.wallRatio,
            ]),
          },
        ],
        targets: [],
        notes: [
          `${rows.length} bundles (infra/bundles/build.ts, the options cdk synth uses); ${ROUNDS} alternating pairs each (infra/bundles/cold-start.ts: the child's own CPU time and its clock until the handler is built). Highest CPU ratio ${worst.cpuRatio} (${worst.handler}); largest bundle ${largest.kb} KB (${largest.handler}).`,
        ],
        data: { rounds: ROUNDS, bundles: rows },
      };
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  },
};
