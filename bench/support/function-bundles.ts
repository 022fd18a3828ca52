import { bundleFunctions } from '../../infra/bundles/build.ts';

/**
 * The interface item 6 (cold-start proxy) is written against: every Lambda function's bundle as one
 * ESM file, with its size, built by the project's bundler (infra/bundles/build.ts, the options
 * `cdk synth` uses).
 */
export type FunctionBundle = {
  /** The handler's source file (relative to the project root): one Lambda function. */
  handler: string;
  /** The bundle (absolute path, ESM, exports `handler`). */
  file: string;
  /** Bytes of the bundle (source map excluded). */
  bytes: number;
  /** The observability layer's file, which the bundle imports from /opt on Lambda (infra/bundles/options.ts `LAYER`). */
  layerFile: string;
};

export const functionBundles = async (outdir: string): Promise<FunctionBundle[]> =>
  bundleFunctions({ outdir }).map((b) => ({ handler: b.handlerPath, file: b.file, bytes: b.bytes, layerFile: b.layer.file }));
