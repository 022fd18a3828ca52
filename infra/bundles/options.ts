import { fileURLToPath } from 'node:url';
import { OutputFormat, type BundlingOptions } from 'aws-cdk-lib/aws-lambda-nodejs';
import type { BuildOptions } from 'esbuild';

/**
 * THE esbuild settings of every function bundle. `ApiFunction` hands them to CDK (`cdkBundling`),
 * which runs the esbuild CLI; the bundle report and test/infra/bundles.test.ts hand the same
 * settings to esbuild's API (`esbuildOptions`). test/infra/bundles.test.ts checks that both give
 * byte-identical bundles.
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
  /** Packages replaced by a smaller module of ours in every bundle (docs/function-bundles.md). */
  alias: {
    '@aws-sdk/credential-provider-node': shim('credentials-from-env.ts'),
    '@smithy/core/event-streams': shim('no-event-streams.ts'),
    semver: shim('semver.cjs'),
  } as Record<string, string>,
} as const;

/** The original budget for a function's bundle (`index.mjs`): not reached yet (docs/function-bundles.md). */
export const BUNDLE_BUDGET_BYTES = 300 * 1024;
/** What test/infra/bundles.test.ts enforces meanwhile: just above the largest bundle today, so none grows unnoticed. */
export const BUNDLE_LIMIT_BYTES = 568 * 1024;

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
  esbuildArgs: { '--alias': Object.entries(BUNDLE.alias).map(([from, to]) => `${from}=${to}`) },
});

/**
 * The same settings for esbuild's API, as CDK's command line spells them (`--bundle
 * --platform=node`; it runs esbuild in the project root). The caller adds entry points and outputs
 * (CDK: one entry, `--outfile=<asset>/index.mjs`).
 */
export const esbuildOptions = (projectRoot: string): BuildOptions => ({
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
  alias: BUNDLE.alias,
});
