import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { functionBundles } from '../support/function-bundles.ts';
import type { BenchItem } from '../support/report.ts';
import { alternate, median, ratio, round } from '../support/stats.ts';

/**
 * Item 6, a cold-start proxy: for each function bundle, a fresh `node` process that imports it (which
 * builds its handler) against a fresh `node` that imports an empty module, alternately; the ratio of
 * the medians, and the bundle's size. Nothing is invoked: DynamoDB is not reached.
 */
const ROUNDS = Number(process.env.BENCH_COLD_ROUNDS ?? 3);

type Run = { wall: number; cpu: number };

/**
 * `node` importing `file`, with a function's environment: wall time (spawn to exit) and the child's
 * own CPU time (user + system; much less disturbed by the other work on a shared machine).
 */
const importInFreshNode = (file: string): Promise<Run> =>
  new Promise((done, fail) => {
    const start = performance.now();
    const script = `await import(${JSON.stringify(pathToFileURL(file).href)}); const u = process.cpuUsage(); process.stdout.write(String((u.user + u.system) / 1000));`;
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { PATH: process.env.PATH, AWS_REGION: 'us-east-1', TABLE_NAME: 'revenue-analytics', LOG_LEVEL: 'SILENT', STAGE: 'bench', NODE_OPTIONS: '' },
    });
    let err = '';
    let out = '';
    child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
    child.on('error', fail);
    child.on('close', (code) =>
      code === 0 ? done({ wall: performance.now() - start, cpu: Number(out) }) : fail(new Error(`node importing ${file} exited ${code}: ${err.slice(0, 500)}`)),
    );
  });

export const item: BenchItem = {
  name: 'cold-start',
  title: '6. Cold-start proxy: fresh node importing each function bundle vs an empty module',
  run: async () => {
    const dir = mkdtempSync(join(tmpdir(), 'bench-bundles-'));
    try {
      const bundles = await functionBundles(join(dir, 'bundles'));
      const empty = join(dir, 'empty.mjs');
      writeFileSync(empty, '');
      type Row = { handler: string; kb: number; cpu_ms: number; empty_cpu_ms: number; cpu_ratio: number; wall_ms: number; empty_wall_ms: number; wall_ratio: number };
      const rows: Row[] = [];
      for (const b of bundles) {
        const runs: Record<'bundle' | 'empty', Run[]> = { bundle: [], empty: [] };
        await alternate({ bundle: async () => runs.bundle.push(await importInFreshNode(b.file)), empty: async () => runs.empty.push(await importInFreshNode(empty)) }, ROUNDS, 0);
        const med = (side: 'bundle' | 'empty', k: keyof Run) => median(runs[side].map((r) => r[k]));
        rows.push({
          handler: b.handler,
          kb: round(b.bytes / 1024, 0),
          cpu_ms: round(med('bundle', 'cpu'), 0),
          empty_cpu_ms: round(med('empty', 'cpu'), 0),
          cpu_ratio: ratio(med('bundle', 'cpu'), med('empty', 'cpu')),
          wall_ms: round(med('bundle', 'wall'), 0),
          empty_wall_ms: round(med('empty', 'wall'), 0),
          wall_ratio: ratio(med('bundle', 'wall'), med('empty', 'wall')),
        });
      }
      const worst = rows.reduce((a, b) => (b.cpu_ratio > a.cpu_ratio ? b : a));
      const largest = rows.reduce((a, b) => (b.kb > a.kb ? b : a));
      return {
        tables: [
          {
            columns: ['function (handler)', 'bundle KB', 'CPU ms: bundle / empty', 'CPU ratio', 'wall ms: bundle / empty', 'wall ratio'],
            rows: rows.map((r) => [r.handler.replace(/^functions\//, ''), r.kb, `${r.cpu_ms} / ${r.empty_cpu_ms}`, r.cpu_ratio, `${r.wall_ms} / ${r.empty_wall_ms}`, r.wall_ratio]),
          },
        ],
        targets: [],
        notes: [
          `${rows.length} bundles (esbuild, ESM, minified, as ApiFunction builds them); ${ROUNDS} alternating rounds each. Medians of each process's own CPU time (user + system) and of its wall time (spawn to exit). Highest CPU ratio ${worst.cpu_ratio} (${worst.handler}); largest bundle ${largest.kb} KB (${largest.handler}); the 300 KB budget is wt-bundle's (#10).`,
        ],
        data: { rounds: ROUNDS, bundles: rows },
      };
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  },
};
