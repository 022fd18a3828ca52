import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { bundleFunctions, bytesByPackage } from './build.ts';
import { measureColdStart, type ColdStart, type ColdStartOptions } from './cold-start.ts';
import { BUNDLE_BUDGET_BYTES, LAYER } from './options.ts';

export type BundleReportRow = {
  name: string;
  handlerPath: string;
  /** Size of the bundle (`index.mjs`). */
  bytes: number;
  /** Over the original 300 KiB budget. */
  overBudget: boolean;
  /** The largest contributors (package or project folder → bytes). */
  largest: [string, number][];
  /** Absent when `coldStart: false`. */
  coldStart?: ColdStart;
};

/** The observability layer's one file: what every function loads from /opt besides its bundle. */
export type LayerReport = { file: string; bytes: number; largest: [string, number][] };

/**
 * The layer's size and, per function: the bundle size and the cold-start proxy (infra/bundles/cold-start.ts). Bundles
 * all functions at once as `cdk synth` would, then measures one function at a time (never two
 * probes at once, so they do not slow each other). `npm run bundles:report` prints it; the bench
 * calls it.
 */
export const bundleReport = async (
  options: { only?: string[]; coldStart?: boolean | ColdStartOptions; top?: number } = {},
): Promise<{ layer: LayerReport; functions: BundleReportRow[] }> => {
  const outdir = mkdtempSync(join(tmpdir(), 'bundle-report-'));
  const rows: BundleReportRow[] = [];
  let layer: LayerReport | undefined;
  try {
    const bundles = bundleFunctions({ outdir, only: options.only });
    const built = bundles[0]?.layer;
    if (built) layer = { file: LAYER.file, bytes: built.bytes, largest: bytesByPackage(built).slice(0, options.top ?? 5) };
    for (const bundle of bundles.sort((a, b) => b.bytes - a.bytes)) {
      const coldStart =
        options.coldStart === false
          ? undefined
          : await measureColdStart(bundle.file, { ...(options.coldStart === true ? {} : options.coldStart), layerFile: bundle.layer.file });
      rows.push({
        name: bundle.name,
        handlerPath: bundle.handlerPath,
        bytes: bundle.bytes,
        overBudget: bundle.bytes > BUNDLE_BUDGET_BYTES,
        largest: bytesByPackage(bundle).slice(0, options.top ?? 5),
        ...(coldStart ? { coldStart } : {}),
      });
    }
  } finally {
    rmSync(outdir, { recursive: true, force: true });
  }
  if (!layer) throw new Error(`no function matches ${options.only?.join(', ')}`);
  return { layer, functions: rows };
};

const kib = (bytes: number) => (bytes / 1024).toFixed(1);

/** The bundle table of docs/function-bundles.md (cold-start columns `–` when not measured). */
export const markdownTable = (rows: BundleReportRow[]): string => {
  const lines = ['| function | bundle (KiB) | CPU ms to handler: bundle / empty | CPU ratio | wall ratio |', '|---|--:|--:|--:|--:|'];
  for (const { name, bytes, coldStart: c } of rows) {
    const measured = c
      ? `${c.bundleCpuMs.toFixed(0)} / ${c.emptyCpuMs.toFixed(0)} | ${c.cpuRatio.toFixed(1)} | ${c.wallRatio.toFixed(1)}`
      : '– | – | –';
    lines.push(`| ${name} | ${kib(bytes)} | ${measured} |`);
  }
  return lines.join('\n');
};

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const { values } = parseArgs({
    options: {
      runs: { type: 'string', default: '10' },
      only: { type: 'string' },
      json: { type: 'boolean', default: false },
      'no-cold-start': { type: 'boolean', default: false },
    },
  });
  const { layer, functions: rows } = await bundleReport({
    only: values.only?.split(','),
    coldStart: values['no-cold-start'] ? false : { runs: Number(values.runs) },
  });
  if (values.json) {
    process.stdout.write(`${JSON.stringify({ layer, functions: rows }, null, 2)}\n`);
  } else {
    const over = rows.filter((r) => r.overBudget).length;
    process.stdout.write(`${markdownTable(rows)}\n\n${over} of ${rows.length} bundles over the ${kib(BUNDLE_BUDGET_BYTES)} KiB budget.\n`);
    process.stdout.write(
      `Layer ${layer.file}: ${kib(layer.bytes)} KiB (${layer.largest.map(([k, b]) => `${k} ${kib(b)}`).join(', ')} KiB)\n`,
    );
    const largest = rows[0];
    if (largest)
      process.stdout.write(`Largest bundle, ${largest.name}: ${largest.largest.map(([k, b]) => `${k} ${kib(b)}`).join(', ')} KiB\n`);
  }
}
