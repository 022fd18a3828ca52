import { createHash } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { AssetHashType, Stack, Stage } from 'aws-cdk-lib';
import { Code } from 'aws-cdk-lib/aws-lambda';
import type { Construct } from 'constructs';
import { buildBundles, functionEntries, type FunctionBundle } from '../bundles/build.ts';
import { LAYER } from '../bundles/options.ts';

/** Under the app's output folder (`cdk.out/bundles`): what `buildBundles` writes and reuses. */
const BUNDLES_DIR = 'bundles';

/** Each app's bundles (by output folder and project), built when its first function asks for its code. */
const built = new Map<string, FunctionBundle[]>();

const bundlesFor = (scope: Construct, projectRoot: string): FunctionBundle[] => {
  const outdir = join(Stage.of(scope)!.assetOutdir, BUNDLES_DIR);
  const key = JSON.stringify([outdir, projectRoot]);
  let bundles = built.get(key);
  if (!bundles) built.set(key, (bundles = buildBundles(functionEntries(), { outdir, projectRoot })));
  return bundles;
};

/**
 * A function's code: its folder of the one build of every function and the layer
 * (infra/bundles/build.ts, run once per synth), handed to CDK as a plain asset. CDK bundles
 * nothing itself, so it prints no `Bundling asset` line; the asset is named by its bytes, as
 * before.
 */
export const functionCode = (scope: Construct, projectRoot: string, handlerPath: string): Code => {
  if (!Stack.of(scope).bundlingRequired) return notBundled(scope, handlerPath);
  const bundle = bundlesFor(scope, projectRoot).find((b) => b.handlerPath === handlerPath);
  if (!bundle) throw new Error(`${handlerPath} is not a function of functionEntries() (infra/bundles/build.ts): add it there`);
  return Code.fromAsset(bundle.root);
};

/** The observability layer's content (`nodejs/observability.mjs`), from the same build. */
export const layerCode = (scope: Construct, projectRoot: string): Code => {
  if (!Stack.of(scope).bundlingRequired) return notBundled(scope, LAYER.entry);
  return Code.fromAsset(bundlesFor(scope, projectRoot)[0]!.layer.root);
};

/**
 * In a stack CDK is told not to bundle (`aws:cdk:bundling-stacks`: `cdk deploy` of another stack,
 * the template tests), nothing is built, as CDK does with the assets it bundles itself: an empty
 * folder stands in, named after the module it stands for.
 */
const notBundled = (scope: Construct, module: string): Code => {
  const dir = join(Stage.of(scope)!.assetOutdir, BUNDLES_DIR, 'not-bundled');
  mkdirSync(dir, { recursive: true });
  return Code.fromAsset(dir, { assetHashType: AssetHashType.CUSTOM, assetHash: createHash('sha256').update(module).digest('hex') });
};
