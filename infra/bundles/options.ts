import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { LogLevel, OutputFormat, type BundlingOptions } from 'aws-cdk-lib/aws-lambda-nodejs';
import type { BuildOptions } from 'esbuild';

/**
 * THE esbuild settings of every function bundle and of the observability layer. `ApiFunction`
 * hands them to CDK (`cdkBundling`), which runs the esbuild CLI; the bundle report and
 * test/infra/bundles.test.ts hand the same settings to esbuild's API (`esbuildOptions`,
 * `layerEsbuildOptions`, which CDK's layer uses too). test/infra/bundles.test.ts checks that both
 * give byte-identical bundles and layers.
 */
export const BUNDLE = {
  target: 'node22',
  // ESM entry points of the SDK and middy tree-shake better.
  mainFields: ['module', 'main'],
  // CommonJS dependencies bundled into ESM still call require() for Node built-ins.
  banner: "import { createRequire } from 'node:module'; const require = createRequire(import.meta.url);",
  minify: true,
  sourceMap: true,
  sourcesContent: false,
  /** Packages replaced by a smaller module of ours in every bundle and in the layer (docs/function-bundles.md). */
  alias: {
    '@aws-sdk/credential-provider-node': shim('credentials-from-env.ts'),
    '@smithy/core/event-streams': shim('no-event-streams.ts'),
    semver: shim('semver.cjs'),
  } as Record<string, string>,
} as const;

/**
 * The observability layer: Powertools (Logger, Metrics, Tracer, their middlewares) and the X-Ray
 * SDK, built from `entry` with the settings above as one minified file. A function bundle does
 * not carry them: it imports `module` from `import`, the file Lambda extracts the layer to.
 */
export const LAYER = {
  module: '#lib/powertools',
  entry: 'lib/powertools.ts',
  /** In the layer's zip; Lambda extracts layers into /opt. */
  file: 'nodejs/observability.mjs',
  /** Absolute: Node's ESM loader does not search /opt/nodejs/node_modules. */
  import: '/opt/nodejs/observability.mjs',
} as const;

/** The aliases of a function bundle: the shims, and our Powertools module → the layer's file (left external). */
const FUNCTION_ALIAS: Record<string, string> = { ...BUNDLE.alias, [LAYER.module]: LAYER.import };

/** The original budget for a function's bundle (`index.mjs`): not reached yet (docs/function-bundles.md). */
export const BUNDLE_BUDGET_BYTES = 300 * 1024;
/** What test/infra/bundles.test.ts enforces meanwhile, with Powertools and the X-Ray SDK in the layer. */
export const BUNDLE_LIMIT_BYTES = 450 * 1024;

function shim(file: string): string {
  return fileURLToPath(new URL(`./shims/${file}`, import.meta.url));
}

/** The settings as CDK's `NodejsFunction` takes them: the SDK is bundled, never Docker. */
export const cdkBundling = (): BundlingOptions => ({
  forceDockerBundling: false,
  target: BUNDLE.target,
  format: OutputFormat.ESM,
  mainFields: [...BUNDLE.mainFields],
  banner: BUNDLE.banner,
  minify: BUNDLE.minify,
  sourceMap: BUNDLE.sourceMap,
  sourcesContent: BUNDLE.sourcesContent,
  // Ship the SDK version the tests ran against instead of the runtime's.
  bundleAwsSDK: true,
  externalModules: [LAYER.import],
  esbuildArgs: { '--alias': Object.entries(FUNCTION_ALIAS).map(([from, to]) => `${from}=${to}`) },
  // Keeps `cdk synth -q` quiet: unset, CDK passes no --log-level and the esbuild CLI prints every
  // bundle's sizes (CDK's documented WARNING default is not what it runs).
  logLevel: LogLevel.WARNING,
});

/** What every esbuild build of ours shares: a function bundle (`esbuildOptions`) or the layer. */
const sharedOptions = (projectRoot: string): BuildOptions => ({
  absWorkingDir: projectRoot,
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: BUNDLE.target,
  mainFields: [...BUNDLE.mainFields],
  banner: { js: BUNDLE.banner },
  minify: BUNDLE.minify,
  sourcemap: BUNDLE.sourceMap,
  sourcesContent: BUNDLE.sourcesContent,
});

/**
 * The same settings for esbuild's API, as CDK's command line spells them (`--bundle
 * --platform=node`; it runs esbuild in the project root). The caller adds entry points and outputs
 * (CDK: one entry, `--outfile=<asset>/index.mjs`).
 */
export const esbuildOptions = (projectRoot: string): BuildOptions => ({
  ...sharedOptions(projectRoot),
  alias: FUNCTION_ALIAS,
  external: [LAYER.import],
});

/** The layer's one file (`<outdir>/nodejs/observability.mjs` and its map), from the same settings. */
export const layerEsbuildOptions = (projectRoot: string, outdir: string): BuildOptions => ({
  ...sharedOptions(projectRoot),
  alias: BUNDLE.alias,
  entryPoints: { [LAYER.file.replace(/\.mjs$/, '')]: join(projectRoot, LAYER.entry) },
  outdir,
  outExtension: { '.js': '.mjs' },
});
