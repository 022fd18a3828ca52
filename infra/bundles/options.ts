import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { BuildOptions } from 'esbuild';

/**
 * THE esbuild settings of every function bundle and of the observability layer, as esbuild's API
 * takes them (`esbuildOptions`, `layerEsbuildOptions`). One builder uses them
 * (infra/bundles/build.ts `buildBundles`): `cdk synth` hands its folders to CDK as each function's
 * and the layer's code, and the tests, the bundle report and the bench check and measure the same
 * bundles.
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
 * The observability layer: Powertools (Logger, Metrics, Tracer, their middlewares, Batch) and the X-Ray
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
export const BUNDLE_LIMIT_BYTES = 470 * 1024;

function shim(file: string): string {
  return fileURLToPath(new URL(`./shims/${file}`, import.meta.url));
}

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
  // Warnings and errors only: no size line per bundle, so `cdk synth -q` stays quiet.
  logLevel: 'warning',
});

/**
 * A function bundle's settings: the layer's module left to the layer, nothing else external (the
 * SDK is bundled: the version the tests ran against, not the runtime's). The caller adds entry
 * points and outputs (`buildBundles`: every function at once, `<outdir>/<name>/index.mjs`).
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
