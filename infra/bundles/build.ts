import { mkdtempSync, statSync } from 'node:fs';
import { register } from 'node:module';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { pathToFileURL } from 'node:url';
import { build, type Metafile } from 'esbuild';
import { NOT_FOUND_HANDLER, routeList } from '#lib/http/routes';
import {
  CANCEL_CHECK_HANDLER,
  OUTBOX_RELAY_HANDLER,
  OUTBOX_SWEEPER_HANDLER,
  PROJECT_ROOT,
  WEBHOOK_DELIVER_HANDLER,
  WEBHOOK_FAN_OUT_HANDLER,
} from '../paths.ts';
import { esbuildOptions, LAYER, layerEsbuildOptions } from './options.ts';

/** One Lambda function's handler module, named as in the route table (or after its construct). */
export type FunctionEntry = { name: string; handlerPath: string };

/** Every function the stack deploys: one per route, the 404 catch-all and the functions of the event constructs. */
export const functionEntries = (): FunctionEntry[] => [
  ...routeList.map((route) => ({ name: route.name, handlerPath: route.handler })),
  { name: 'notFound', handlerPath: NOT_FOUND_HANDLER },
  { name: 'outboxRelay', handlerPath: OUTBOX_RELAY_HANDLER },
  { name: 'outboxSweeper', handlerPath: OUTBOX_SWEEPER_HANDLER },
  { name: 'webhookFanOut', handlerPath: WEBHOOK_FAN_OUT_HANDLER },
  { name: 'webhookDeliver', handlerPath: WEBHOOK_DELIVER_HANDLER },
  { name: 'cancelCheck', handlerPath: CANCEL_CHECK_HANDLER },
];

/** One built file (a function bundle or the layer's file) and esbuild's account of where its bytes come from. */
export type BuiltFile = {
  /** Absolute path; its source map is beside it. */
  file: string;
  /** Size of the file: what the budget counts and what Node loads. */
  bytes: number;
  metafile: Metafile;
};

/** A function's bundle, `<outdir>/<name>/index.mjs`, and the layer it imports Powertools from. */
export type FunctionBundle = FunctionEntry & BuiltFile & { layer: BuiltFile };

/**
 * Bundles functions exactly as `cdk synth` does (infra/bundles/options.ts), all at once in
 * esbuild's service, into `outdir` (a fresh temporary folder unless told), and the observability
 * layer beside them (`<outdir>/layer/nodejs/observability.mjs`).
 */
export const bundleFunctions = async (
  options: { outdir?: string; only?: string[]; projectRoot?: string } = {},
): Promise<FunctionBundle[]> => {
  const outdir = options.outdir ?? mkdtempSync(join(tmpdir(), 'function-bundles-'));
  const projectRoot = options.projectRoot ?? PROJECT_ROOT;
  const entries = functionEntries().filter((entry) => !options.only || options.only.includes(entry.name));
  const layer = buildLayer(join(outdir, 'layer'), projectRoot);
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
  const layerFile = await layer;
  return entries.map((entry) => ({
    ...entry,
    ...builtFile(join(outdir, entry.name, 'index.mjs'), metafile, projectRoot),
    layer: layerFile,
  }));
};

/** Builds the observability layer as `cdk synth` does, into `<outdir>/nodejs/observability.mjs`. */
export const buildLayer = async (outdir: string, projectRoot = PROJECT_ROOT): Promise<BuiltFile> => {
  const { metafile } = await build({ ...layerEsbuildOptions(projectRoot, outdir), metafile: true, logLevel: 'silent' });
  return builtFile(join(outdir, LAYER.file), metafile, projectRoot);
};

const builtFile = (file: string, metafile: Metafile, projectRoot: string): BuiltFile => {
  const key = relative(projectRoot, file);
  const output = metafile.outputs[key];
  if (!output) throw new Error(`esbuild wrote no ${key}`);
  return { file, bytes: statSync(file).size, metafile: { inputs: metafile.inputs, outputs: { [key]: output } } };
};

const LAYER_HOOKS = new URL('./layer-hooks.mjs', import.meta.url).href;
const hookData = (layerFile: string) => ({ import: LAYER.import, url: pathToFileURL(layerFile).href });

/**
 * Node flags that run a function bundle off Lambda with `layerFile` standing in for the layer's
 * `/opt/nodejs/observability.mjs` (a resolve hook, infra/bundles/layer-hooks.mjs), for the tests.
 */
export const layerNodeArgs = (layerFile: string): string[] => {
  const code = `import { register } from 'node:module'; register(${JSON.stringify(LAYER_HOOKS)}, { data: ${JSON.stringify(hookData(layerFile))} });`;
  return [`--import=data:text/javascript,${encodeURIComponent(code)}`];
};

/** The same hook in this process, for a test that imports a bundle itself. */
export const registerLayerHooks = (layerFile: string): void => register(LAYER_HOOKS, { data: hookData(layerFile) });

/** Bytes of a bundle by npm package (`@smithy/core`) or project folder (`lib/http`), largest first. */
export const bytesByPackage = (bundle: Pick<BuiltFile, 'metafile'>): [string, number][] => {
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
