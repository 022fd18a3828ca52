import { execFile } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { LAYER } from './options.ts';

const run = promisify(execFile);

/** Medians over the runs, in milliseconds, for the bundle and for an empty module. */
export type ColdStart = {
  runs: number;
  /** From process start to the handler built (`performance.now()` in the child), median. */
  bundleWallMs: number;
  emptyWallMs: number;
  /** CPU time (user + system) the child used by then, median: steadier than wall time on a busy machine. */
  bundleCpuMs: number;
  emptyCpuMs: number;
  /** bundle ÷ empty. */
  wallRatio: number;
  cpuRatio: number;
};

export type ColdStartOptions = {
  /** Pairs of runs (empty module, then bundle, alternating); 10 unless told. */
  runs?: number;
  /** Node flags; the functions' NODE_OPTIONS (`--enable-source-maps`) unless told. */
  nodeArgs?: string[];
  /** Extra environment; by default the child looks like a Lambda execution environment (so the Tracer loads). */
  env?: Record<string, string>;
  /** The observability layer's file (`FunctionBundle.layer.file`), which the bundle imports from /opt on Lambda. */
  layerFile?: string;
};

/**
 * The bundle as the probe loads it: with `layerFile`, a copy (source map beside it) whose
 * layer import names that file. A plain file import as on Lambda: a resolve hook
 * (`layerNodeArgs`) would start a hooks thread costing more CPU than the whole layer.
 */
const probeCopy = (bundleFile: string, layerFile: string | undefined, dir: string): string => {
  if (!layerFile) return bundleFile;
  const copy = join(dir, 'function', 'index.mjs');
  mkdirSync(dirname(copy));
  const code = readFileSync(bundleFile, 'utf8');
  writeFileSync(copy, code.replaceAll(JSON.stringify(LAYER.import), JSON.stringify(layerFile)));
  if (existsSync(`${bundleFile}.map`)) copyFileSync(`${bundleFile}.map`, `${copy}.map`);
  return copy;
};

/** The child: import a module, check its `handler` when it should have one, report its clock and CPU. */
const probe = (url: string, expectHandler: boolean) => `
const module = await import(${JSON.stringify(url)});
if (${expectHandler} && typeof module.handler !== 'function') throw new Error('no handler export');
const cpu = process.cpuUsage();
process.stdout.write(JSON.stringify({ wallMs: performance.now(), cpuMs: (cpu.user + cpu.system) / 1000 }));
`;

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};
const round = (n: number, digits = 1) => Number(n.toFixed(digits));

/**
 * Cold-start proxy of one function bundle: a fresh `node` importing the bundle, which
 * builds its handler, against a fresh `node` importing an empty module; runs alternate so load on
 * the machine falls on both alike.
 */
export const measureColdStart = async (bundleFile: string, options: ColdStartOptions = {}): Promise<ColdStart> => {
  const runs = options.runs ?? 10;
  const dir = mkdtempSync(join(tmpdir(), 'cold-start-'));
  const empty = join(dir, 'empty.mjs');
  writeFileSync(empty, 'export {};\n');
  const probed = probeCopy(bundleFile, options.layerFile, dir);
  const env = {
    PATH: process.env.PATH ?? '',
    AWS_REGION: 'us-east-1',
    AWS_EXECUTION_ENV: 'AWS_Lambda_nodejs22.x',
    LAMBDA_TASK_ROOT: dirname(probed),
    AWS_LAMBDA_FUNCTION_NAME: 'cold-start-probe',
    TABLE_NAME: 'cold-start-probe',
    LOG_LEVEL: 'INFO',
    ...options.env,
  };
  const once = async (file: string, expectHandler: boolean) => {
    const args = [
      ...(options.nodeArgs ?? ['--enable-source-maps']),
      '--input-type=module',
      '-e',
      probe(pathToFileURL(file).href, expectHandler),
    ];
    const { stdout } = await run(process.execPath, args, { env, cwd: dir });
    return JSON.parse(stdout) as { wallMs: number; cpuMs: number };
  };
  try {
    const bundle: { wallMs: number; cpuMs: number }[] = [];
    const base: { wallMs: number; cpuMs: number }[] = [];
    for (let i = 0; i < runs; i++) {
      base.push(await once(empty, false));
      bundle.push(await once(probed, true));
    }
    const [bundleWallMs, emptyWallMs] = [median(bundle.map((r) => r.wallMs)), median(base.map((r) => r.wallMs))];
    const [bundleCpuMs, emptyCpuMs] = [median(bundle.map((r) => r.cpuMs)), median(base.map((r) => r.cpuMs))];
    return {
      runs,
      bundleWallMs: round(bundleWallMs),
      emptyWallMs: round(emptyWallMs),
      bundleCpuMs: round(bundleCpuMs),
      emptyCpuMs: round(emptyCpuMs),
      wallRatio: round(bundleWallMs / emptyWallMs, 2),
      cpuRatio: round(bundleCpuMs / emptyCpuMs, 2),
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
};
