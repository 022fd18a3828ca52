import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { register } from 'node:module';
import { tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { brotliCompressSync, constants as zlib } from 'node:zlib';
import { buildSync, version as esbuildVersion, type BuildOptions, type Metafile } from 'esbuild';
import { openApiDocument } from '#lib/api/openapi';
import { NOT_FOUND_HANDLER, routeList } from '#lib/api/routes';
import { WORKER_FUNCTIONS as W } from '#lib/shared/invocation';
import {
  CANCEL_CHECK_HANDLER,
  OUTBOX_RELAY_HANDLER,
  OUTBOX_SWEEPER_HANDLER,
  PENDING_MOVES_APPLIER_HANDLER,
  PROJECT_ROOT,
  RECOUNT_WORKER_HANDLER,
  WEBHOOK_DELIVER_HANDLER,
  WEBHOOK_FAN_OUT_HANDLER,
} from '../paths.ts';
import { esbuildOptions, LAYER, layerEsbuildOptions } from './options.ts';

/** One Lambda function's handler module, named as in the route table (or after its construct). */
export type FunctionEntry = { name: string; handlerPath: string };

/**
 * Every function the stack deploys: one per route, the 404 catch-all and the functions of the
 * event constructs. A function construct whose handler is not here fails the synth
 * (infra/constructs/bundled-code.ts), so the bundle tests check every deployed function.
 */
export const functionEntries = (): FunctionEntry[] => [
  ...routeList.map((route) => ({ name: route.name, handlerPath: route.handler })),
  { name: W.notFound, handlerPath: NOT_FOUND_HANDLER },
  { name: W.outboxRelay, handlerPath: OUTBOX_RELAY_HANDLER },
  { name: W.outboxSweeper, handlerPath: OUTBOX_SWEEPER_HANDLER },
  { name: W.pendingMovesApplier, handlerPath: PENDING_MOVES_APPLIER_HANDLER },
  { name: W.recountWorker, handlerPath: RECOUNT_WORKER_HANDLER },
  { name: W.webhookFanOut, handlerPath: WEBHOOK_FAN_OUT_HANDLER },
  { name: W.webhookDeliver, handlerPath: WEBHOOK_DELIVER_HANDLER },
  { name: W.cancelCheck, handlerPath: CANCEL_CHECK_HANDLER },
];

/** A bundle's module in its folder (`index.mjs`), whose `handler` export Lambda calls. */
const BUNDLE_MODULE = 'index';
/** The functions' `Handler` property. */
export const FUNCTION_HANDLER = `${BUNDLE_MODULE}.handler`;
/** The layer's folder beside the functions' (`<outdir>/layer/nodejs/observability.mjs`). */
const LAYER_DIR = 'layer';

/** One built file (a function bundle or the layer's file) and esbuild's account of where its bytes come from. */
export type BuiltFile = {
  /** Absolute path; its source map is beside it. */
  file: string;
  /** The folder deployed as the function's code or the layer's content (its zip's root): the file, its map, nothing else. */
  root: string;
  /** Size of the file: what the budget counts and what Node loads. */
  bytes: number;
  metafile: Metafile;
};

/** A function's bundle, `<outdir>/<name>/index.mjs`, and the layer it imports Powertools from. */
export type FunctionBundle = FunctionEntry & BuiltFile & { layer: BuiltFile };

/** What the build in an outdir read and wrote (path from the project root → sha256), beside what esbuild reported. */
type BuildRecord = { key: string; files: Record<string, string>; functions: Metafile; layer: Metafile };
const RECORD_FILE = 'bundles.json';
/**
 * Files that decide how imports resolve without being in esbuild's list of inputs: the project's
 * `imports` and compiler settings, and npm's record of what is installed (a package's own
 * package.json, with its `exports`, changes with its version).
 */
const RESOLUTION_FILES = ['package.json', 'tsconfig.json', 'node_modules/.package-lock.json'];

/**
 * THE build of the function bundles and of the observability layer, for `cdk synth` (each
 * function's and the layer's code: infra/constructs/bundled-code.ts) and for the tests, the bundle
 * report and the bench alike, with the settings of infra/bundles/options.ts. One esbuild run with
 * every entry point parses each shared module once; without code splitting each entry point still
 * gets its own self-contained bundle, the same bytes as building it alone. Then the layer. Into
 * `outdir`: `<outdir>/<name>/index.mjs` and `<outdir>/layer/nodejs/observability.mjs`, each beside
 * its source map. Synchronous: a construct asks for its code while it is being constructed.
 *
 * Reuses what the previous build left in `outdir` when nothing it came from has changed: the same
 * esbuild version, settings and entry points, and the same bytes in every file esbuild read (our
 * sources, the packages'), in `RESOLUTION_FILES` and in every file it wrote, as recorded in
 * `<outdir>/bundles.json`.
 */
export const buildBundles = (entries: FunctionEntry[], options: { outdir: string; projectRoot?: string }): FunctionBundle[] => {
  const projectRoot = options.projectRoot ?? PROJECT_ROOT;
  const outdir = resolve(options.outdir);
  const base = esbuildOptions(projectRoot);
  const functionsBuild: BuildOptions = {
    ...base,
    alias: { ...base.alias, [OPENAPI_MODULE]: writeOpenApiModule(outdir) },
    entryPoints: Object.fromEntries(entries.map((entry) => [`${entry.name}/${BUNDLE_MODULE}`, join(projectRoot, entry.handlerPath)])),
    outdir,
    outExtension: { '.js': '.mjs' },
    metafile: true,
  };
  const layerBuild: BuildOptions = { ...layerEsbuildOptions(projectRoot, join(outdir, LAYER_DIR)), metafile: true };
  const key = sha256(JSON.stringify({ esbuild: esbuildVersion, functionsBuild, layerBuild }));
  const record =
    reusable(outdir, projectRoot, key) ??
    build({ outdir, projectRoot, key, folders: [...entries.map((e) => e.name), LAYER_DIR], functionsBuild, layerBuild });
  const layer = builtFile(join(outdir, LAYER_DIR), LAYER.file, record.layer, projectRoot);
  return entries.map((entry) => ({
    ...entry,
    ...builtFile(join(outdir, entry.name), `${BUNDLE_MODULE}.mjs`, record.functions, projectRoot),
    layer,
  }));
};

/** What the OpenAPI function imports its document from. */
const OPENAPI_MODULE = '#lib/api/openapi';
const OPENAPI_FILE = 'openapi-document.mjs';

/**
 * The OpenAPI document, generated here from the route table, compressed into a module that the
 * `openapi` function bundles in place of `#lib/api/openapi`: the function then carries neither
 * zod-openapi nor every route's schemas, and a new route adds its compressed bytes only
 * (docs/function-bundles.md). Written only when its bytes change, so a build can still be reused.
 */
const writeOpenApiModule = (outdir: string): string => {
  const packed = brotliCompressSync(JSON.stringify(openApiDocument()), {
    params: { [zlib.BROTLI_PARAM_QUALITY]: zlib.BROTLI_MAX_QUALITY },
  }).toString('base64');
  const code = `import { brotliDecompressSync } from 'node:zlib';
/** Generated by infra/bundles/build.ts from the route table: the document, brotli-compressed. */
const PACKED = ${JSON.stringify(packed)};
export const openApiDocument = () => JSON.parse(brotliDecompressSync(Buffer.from(PACKED, 'base64')).toString('utf8'));
`;
  const file = join(outdir, OPENAPI_FILE);
  mkdirSync(outdir, { recursive: true });
  if (!existsSync(file) || readFileSync(file, 'utf8') !== code) writeFileSync(file, code);
  return file;
};

const sha256 = (data: string | Buffer) => createHash('sha256').update(data).digest('hex');
const fileHash = (file: string) => (existsSync(file) ? sha256(readFileSync(file)) : 'absent');

/** The previous build's record, when every file it names still has the bytes it had. */
const reusable = (outdir: string, projectRoot: string, key: string): BuildRecord | undefined => {
  let record: BuildRecord;
  try {
    record = JSON.parse(readFileSync(join(outdir, RECORD_FILE), 'utf8'));
  } catch {
    return undefined;
  }
  if (record.key !== key) return undefined;
  return Object.entries(record.files).every(([path, hash]) => fileHash(resolve(projectRoot, path)) === hash) ? record : undefined;
};

const build = (b: {
  outdir: string;
  projectRoot: string;
  key: string;
  /** The folders the build writes, relative to `outdir`. */
  folders: string[];
  functionsBuild: BuildOptions;
  layerBuild: BuildOptions;
}): BuildRecord => {
  const recordFile = join(b.outdir, RECORD_FILE);
  rmSync(recordFile, { force: true });
  // A folder is deployed whole: nothing of an earlier build may stay in it.
  for (const folder of b.folders) rmSync(join(b.outdir, folder), { recursive: true, force: true });
  const started = Date.now();
  const functions = buildSync(b.functionsBuild).metafile!;
  const layer = buildSync(b.layerBuild).metafile!;
  const at = (path: string) => ({ path, file: resolve(b.projectRoot, path) });
  const inputs = [...new Set([...RESOLUTION_FILES, ...[functions, layer].flatMap((m) => Object.keys(m.inputs))])].map(at);
  const outputs = [functions, layer].flatMap((m) => Object.keys(m.outputs)).map(at);
  const record = {
    key: b.key,
    files: Object.fromEntries([...inputs, ...outputs].map((f) => [f.path, fileHash(f.file)])),
    functions,
    layer,
  };
  // A file saved while esbuild ran may be in the bundles as it was before: then no record, and the next build starts afresh.
  if (!inputs.some((f) => existsSync(f.file) && statSync(f.file).mtimeMs >= started)) writeFileSync(recordFile, JSON.stringify(record));
  return record;
};

const builtFile = (root: string, name: string, metafile: Metafile, projectRoot: string): BuiltFile => {
  const file = join(root, name);
  const key = relative(projectRoot, file);
  const output = metafile.outputs[key];
  if (!output) throw new Error(`esbuild wrote no ${key}`);
  return { file, root, bytes: statSync(file).size, metafile: { inputs: metafile.inputs, outputs: { [key]: output } } };
};

/**
 * Bundles functions as `cdk synth` does (`buildBundles`: every function unless `only` names some,
 * and the layer), into `outdir` (a fresh temporary folder unless told).
 */
export const bundleFunctions = (options: { outdir?: string; only?: string[]; projectRoot?: string } = {}): FunctionBundle[] =>
  buildBundles(
    functionEntries().filter((entry) => !options.only || options.only.includes(entry.name)),
    { outdir: options.outdir ?? mkdtempSync(join(tmpdir(), 'function-bundles-')), projectRoot: options.projectRoot },
  );

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
