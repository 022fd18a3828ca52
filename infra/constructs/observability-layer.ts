import { Stack } from 'aws-cdk-lib';
import { Architecture, LayerVersion, Runtime } from 'aws-cdk-lib/aws-lambda';
import type { Construct } from 'constructs';
import { LAYER } from '../bundles/options.ts';
import { layerCode } from './bundled-code.ts';

const ID = 'ObservabilityLayer';

/**
 * Powertools Logger, Metrics, Tracer, batch processing and the X-Ray SDK as one minified ESM file,
 * `/opt/nodejs/observability.mjs`, which every function bundle imports instead of carrying them
 * (docs/function-bundles.md). Built at synth by esbuild's API from the lockfile's packages with
 * the functions' own settings, in the same build as the functions (infra/bundles/build.ts); never
 * Docker.
 */
export class ObservabilityLayer extends LayerVersion {
  /** The one layer of the app's top-level stack, created on first use; nested stacks get its ARN as a parameter. */
  static of(scope: Construct, projectRoot: string): ObservabilityLayer {
    let stack = Stack.of(scope);
    while (stack.nestedStackParent) stack = stack.nestedStackParent;
    return (stack.node.tryFindChild(ID) as ObservabilityLayer | undefined) ?? new ObservabilityLayer(stack, ID, projectRoot);
  }

  private constructor(scope: Construct, id: string, projectRoot: string) {
    super(scope, id, {
      description: `Powertools Logger, Metrics, Tracer, Batch and the X-Ray SDK, one minified file (/opt/${LAYER.file})`,
      compatibleRuntimes: [Runtime.NODEJS_22_X],
      // Plain JavaScript: whichever architecture a function picks.
      compatibleArchitectures: [Architecture.ARM_64, Architecture.X86_64],
      code: layerCode(scope, projectRoot),
    });
  }
}
