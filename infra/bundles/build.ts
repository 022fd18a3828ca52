import { mkdtempSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { build, type Metafile } from 'esbuild';
import { NOT_FOUND_HANDLER, routeList } from '#lib/http/routes';
import { OUTBOX_RELAY_HANDLER, OUTBOX_SWEEPER_HANDLER } from '../constructs/outbox-relay.ts';
import { WEBHOOK_DELIVER_HANDLER, WEBHOOK_FAN_OUT_HANDLER } from '../constructs/webhook-delivery.ts';
import { PROJECT_ROOT } from '../stack.ts';
import { esbuildOptions } from './options.ts';

/** One Lambda function's handler module, named as in the route table (or after its construct). */
export type FunctionEntry = { name: string; handlerPath: string };

/** Every function the stack deploys: one per route, the 404 catch-all and the event consumers. */
export const functionEntries = (): FunctionEntry[] => [
  ...routeList.map((route) => ({ name: route.name, handlerPath: route.handler })),
  { name: 'notFound', handlerPath: NOT_FOUND_HANDLER },
  { name: 'outboxRelay', handlerPath: OUTBOX_RELAY_HANDLER },
  { name: 'outboxSweeper', handlerPath: OUTBOX_SWEEPER_HANDLER },
  { name: 'webhookFanOut', handlerPath: WEBHOOK_FAN_OUT_HANDLER },
  { name: 'webhookDeliver', handlerPath: WEBHOOK_DELIVER_HANDLER },
];

export type FunctionBundle = FunctionEntry & {
  /** The bundle (`<outdir>/<name>/index.mjs`, its source map beside it). */
  file: string;
  /** Size of `index.mjs`: what the budget counts and what Node loads. */
  bytes: number;
  /** esbuild's account of where the bytes come from. */
  metafile: Metafile;
};

/**
 * Bundles functions exactly as `cdk synth` does (infra/bundles/options.ts), all at once in
 * esbuild's service, into `outdir` (a fresh temporary folder unless told).
 */
export const bundleFunctions = async (
  options: { outdir?: string; only?: string[]; projectRoot?: string } = {},
): Promise<FunctionBundle[]> => {
  const outdir = options.outdir ?? mkdtempSync(join(tmpdir(), 'function-bundles-'));
  const projectRoot = options.projectRoot ?? PROJECT_ROOT;
  const entries = functionEntries().filter((entry) => !options.only || options.only.includes(entry.name));
  // One build with every entry point parses each shared module once; without code splitting each
  // entry point still gets its own self-contained bundle, the same bytes as building it alone.
  const { metafile } = await build({
    ...esbuildOptions(projectRoot),
    entryPoints: Object.fromEntries(entries.map((entry) => [`${entry.name}/index`, join(projectRoot, entry.handlerPath)])),
    outdir,
    outExtension: { '.js': '.mjs' },
    metafile: true,
    logLevel: 'silent',
  });
  return entries.map((entry) => {
    const file = join(outdir, entry.name, 'index.mjs');
    const key = relative(projectRoot, file);
    const output = metafile.outputs[key];
    if (!output) throw new Error(`esbuild wrote no ${key}`);
    return { ...entry, file, bytes: statSync(file).size, metafile: { inputs: metafile.inputs, outputs: { [key]: output } } };
  });
};

/** Bytes of a bundle by npm package (`@smithy/core`) or project folder (`lib/http`), largest first. */
export const bytesByPackage = (bundle: Pick<FunctionBundle, 'metafile'>): [string, number][] => {
  const totals = new Map<string, number>();
  for (const output of Object.values(bundle.metafile.outputs)) {
    for (const [input, { bytesInOutput }] of Object.entries(output.inputs)) {
      const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(input.slice(input.lastIndexOf('node_modules/')));
      const key = pkg ? pkg[1]! : input.split('/').slice(0, 2).join('/');
      totals.set(key, (totals.get(key) ?? 0) + bytesInOutput);
    }
  }
  return [...totals].sort((a, b) => b[1] - a[1]);
};
