import { AssetHashType, DockerImage, Stack } from 'aws-cdk-lib';
import { Architecture, Code, LayerVersion, Runtime } from 'aws-cdk-lib/aws-lambda';
import type { Construct } from 'constructs';
import { buildSync } from 'esbuild';
import { LAYER, layerEsbuildOptions } from '../bundles/options.ts';

const ID = 'ObservabilityLayer';

/**
 * Powertools Logger, Metrics, Tracer and the X-Ray SDK as one minified ESM file,
 * `/opt/nodejs/observability.mjs`, which every function bundle imports instead of carrying them
 * (docs/function-bundles.md). Built at synth by esbuild's API from the lockfile's packages with
 * the functions' own settings (infra/bundles/options.ts); never Docker.
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
      description: `Powertools Logger, Metrics, Tracer and the X-Ray SDK, one minified file (/opt/${LAYER.file})`,
      compatibleRuntimes: [Runtime.NODEJS_22_X],
      // Plain JavaScript: whichever architecture a function picks.
      compatibleArchitectures: [Architecture.ARM_64, Architecture.X86_64],
      code: Code.fromAsset(projectRoot, {
        // Named by the built file, as the functions' assets are.
        assetHashType: AssetHashType.OUTPUT,
        bundling: {
          // Required by the type, never pulled: local bundling always succeeds or throws.
          image: DockerImage.fromRegistry('dummy'),
          local: {
            tryBundle: (outputDir) => {
              buildSync({ ...layerEsbuildOptions(projectRoot, outputDir), logLevel: 'warning' });
              return true;
            },
          },
        },
      }),
    });
  }
}
