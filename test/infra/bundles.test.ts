import { execFile } from 'node:child_process';
import { appendFileSync, type Dirent, mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join, relative } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { App, Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  buildBundles,
  bundleFunctions,
  functionEntries,
  layerNodeArgs,
  type BuiltFile,
  type FunctionBundle,
} from '../../infra/bundles/build.ts';
import { measureColdStart } from '../../infra/bundles/cold-start.ts';
import { BUNDLE_BUDGET_BYTES, BUNDLE_LIMIT_BYTES, LAYER } from '../../infra/bundles/options.ts';
import { ApiFunction } from '../../infra/constructs/api-function.ts';
import { PROJECT_ROOT } from '../../infra/paths.ts';
import { openApiDocument } from '#lib/api/openapi';
import { routeList } from '#lib/api/routes';

/**
 * Every function bundled once, all together (infra/bundles/build.ts), and the observability layer:
 * the build `cdk synth` hands to CDK. One function and the layer also synthesized by CDK, to prove
 * that what it deploys is what is checked here.
 */
const CDK_PROBE = 'webhookEndpointsRetryDelivery';

let bundles: FunctionBundle[];
let layer: BuiltFile;
let cdkOut: string;
let cdkCode: { fn: string; layer: string };
const dirs: string[] = [];
/** A fresh folder, `<tmp>/<prefix>…/bundles`: at the depth of `cdk.out/bundles`, so the source maps' relative paths match too. */
const bundlesDir = (prefix: string) => {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  dirs.push(dir);
  return join(dir, 'bundles');
};

beforeAll(() => {
  bundles = bundleFunctions({ outdir: bundlesDir('bundles-') });
  layer = bundles[0]!.layer;
  cdkOut = mkdtempSync(join(tmpdir(), 'bundles-cdk-'));
  dirs.push(cdkOut);
  const app = new App({
    outdir: cdkOut,
    context: JSON.parse(readFileSync(join(PROJECT_ROOT, 'cdk.json'), 'utf8')).context,
    builtinCloudFormationValidation: false,
  });
  const probe = functionEntries().find((f) => f.name === CDK_PROBE)!;
  const stack = new Stack(app, 'BundlesProbe');
  new ApiFunction(stack, 'Probe', { projectRoot: PROJECT_ROOT, handlerPath: probe.handlerPath });
  const template = Template.fromJSON(app.synth().getStackByName(stack.stackName).template);
  const assetDir = (code: { S3Key: string }) => join(cdkOut, `asset.${code.S3Key.replace(/\.zip$/, '')}`);
  cdkCode = {
    fn: assetDir(Object.values(template.findResources('AWS::Lambda::Function'))[0]!.Properties.Code),
    layer: assetDir(Object.values(template.findResources('AWS::Lambda::LayerVersion'))[0]!.Properties.Content),
  };
}, 120_000);
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

/** Invokes a bundle's handler in a fresh `node` with exactly `env`; resolves to the answer's status. */
/** A GET of `path` handed to the bundle's handler in a fresh node with the layer: its status and body. */
const invokeInFreshNode = async (
  file: string,
  env: Record<string, string>,
  request: { path: string; pathParameters?: Record<string, string> } = {
    path: '/v1/customers/1',
    pathParameters: { idOrExternalId: '1' },
  },
): Promise<{ status: number; body: string }> => {
  const event = {
    version: '2.0',
    rawPath: request.path,
    headers: {},
    pathParameters: request.pathParameters ?? {},
    requestContext: { requestId: `bundle-${Date.now()}`, http: { method: 'GET', path: request.path, sourceIp: '10.77.0.1' } },
  };
  const script = `
    const { handler } = await import(${JSON.stringify(pathToFileURL(file).href)});
    const res = await handler(${JSON.stringify(event)}, { awsRequestId: 'probe', functionName: 'probe', getRemainingTimeInMillis: () => 10000 });
    process.stdout.write(JSON.stringify({ status: res.statusCode, body: res.body }));`;
  const { stdout } = await promisify(execFile)(process.execPath, [...layerNodeArgs(layer.file), '--input-type=module', '-e', script], {
    env: { PATH: process.env.PATH ?? '', ...env },
    maxBuffer: 16 * 1024 * 1024,
  });
  return JSON.parse(stdout);
};

/** What Lambda puts in a function's environment, pointed at DynamoDB Local; no credentials. */
const lambdaEnv = () => ({
  AWS_REGION: 'us-east-1',
  TABLE_NAME: process.env.TABLE_NAME!,
  // No DYNAMODB_ENDPOINT: the client is built as on AWS; the SDK's own endpoint variable points it at DynamoDB Local.
  AWS_ENDPOINT_URL_DYNAMODB: process.env.DYNAMODB_ENDPOINT!,
  LOG_LEVEL: 'SILENT',
  POWERTOOLS_METRICS_DISABLED: 'true',
  HOME: tmpdir(),
});
const LOCAL_CREDENTIALS = { AWS_ACCESS_KEY_ID: 'AKIDLOCAL', AWS_SECRET_ACCESS_KEY: 'local', AWS_SESSION_TOKEN: 'local' };

const kib = (bytes: number) => `${(bytes / 1024).toFixed(1)} KiB`;
/** A folder's files, paths relative to it, sorted. */
const files = (dir: string) =>
  (readdirSync(dir, { recursive: true, withFileTypes: true }) as Dirent[])
    .filter((d) => d.isFile())
    .map((d) => relative(dir, join(d.parentPath, d.name)))
    .sort();
const inputsOf = (bundle: BuiltFile) => Object.keys(Object.values(bundle.metafile.outputs)[0]!.inputs);
/** Powertools and the X-Ray SDK with what it pulls: the layer's packages, in no function bundle. */
const LAYER_PACKAGES =
  /node_modules\/(@aws-lambda-powertools\/|aws-xray-sdk-core\/|cls-hooked\/|shimmer\/|emitter-listener\/|atomic-batcher\/|semver\/)/;

describe('function bundles', () => {
  it('CDK deploys these very bundles: the code of a function and of the layer is their folder, byte for byte', () => {
    const ours = bundles.find((b) => b.name === CDK_PROBE)!;
    for (const [deployed, built] of [
      [cdkCode.fn, ours.root],
      [cdkCode.layer, layer.root],
    ] as const) {
      expect(files(deployed)).toEqual(files(built));
      for (const file of files(built)) expect(readFileSync(join(deployed, file)).equals(readFileSync(join(built, file))), file).toBe(true);
    }
    expect(files(ours.root)).toEqual(['index.mjs', 'index.mjs.map']);
    expect(files(layer.root)).toEqual([LAYER.file, `${LAYER.file}.map`]);
  });

  it('builds a function alone byte for byte as in the build of all; reuses an unchanged build and rebuilds a changed one', () => {
    const outdir = bundlesDir('bundles-one-');
    const entry = functionEntries().filter((f) => f.name === CDK_PROBE);
    const [alone] = buildBundles(entry, { outdir });
    const all = bundles.find((b) => b.name === CDK_PROBE)!;
    for (const file of files(all.root))
      expect(readFileSync(join(alone!.root, file)).equals(readFileSync(join(all.root, file))), file).toBe(true);
    // The record names what the build read (the handler, our modules, the packages, what installed them) and wrote.
    const recorded = Object.keys(JSON.parse(readFileSync(join(outdir, 'bundles.json'), 'utf8')).files);
    const paths = [
      entry[0]!.handlerPath,
      LAYER.entry,
      'package.json',
      'node_modules/.package-lock.json',
      relative(PROJECT_ROOT, alone!.file),
      relative(PROJECT_ROOT, alone!.layer.file),
    ];
    for (const path of paths) expect(recorded, path).toContain(path);
    expect(recorded.filter((path) => path.includes('node_modules/@smithy/')).length).toBeGreaterThan(10);
    const built = statSync(alone!.file).mtimeMs;
    buildBundles(entry, { outdir });
    expect(statSync(alone!.file).mtimeMs).toBe(built);
    appendFileSync(alone!.file, '\n');
    buildBundles(entry, { outdir });
    expect(readFileSync(alone!.file).equals(readFileSync(all.file))).toBe(true);
  }, 60_000);

  it('takes Powertools and the X-Ray SDK from the layer, one minified file: none of their code in any bundle', () => {
    for (const bundle of bundles) {
      const inputs = inputsOf(bundle);
      expect(
        inputs.filter((input) => LAYER_PACKAGES.test(input) || input === LAYER.entry),
        bundle.name,
      ).toEqual([]);
      expect(readFileSync(bundle.file, 'utf8'), bundle.name).toContain(`from${JSON.stringify(LAYER.import)}`);
    }
    const inLayer = inputsOf(layer);
    for (const pkg of [
      '@aws-lambda-powertools/logger/',
      '@aws-lambda-powertools/metrics/',
      '@aws-lambda-powertools/tracer/',
      '@aws-lambda-powertools/batch/',
      'aws-xray-sdk-core/',
    ])
      expect(
        inLayer.some((input) => input.includes(`node_modules/${pkg}`)),
        pkg,
      ).toBe(true);
    // The layer carries no SDK client of its own (the functions bundle theirs).
    expect(inLayer.filter((input) => /@aws-sdk\/|@smithy\/(core|smithy-client)\//.test(input))).toEqual([]);
    // One file beside its source map, minified: under half the bytes of the sources it is built from (≈ 30 %).
    expect(readdirSync(dirname(layer.file)).sort()).toEqual([basename(LAYER.file), `${basename(LAYER.file)}.map`]);
    const sourceBytes = inLayer.reduce((sum, input) => sum + layer.metafile.inputs[input]!.bytes, 0);
    expect(layer.bytes).toBeLessThan(sourceBytes / 2);
  });

  it("the layer evaluates the X-Ray SDK only when the Tracer is asked for (cls-hooked's async hooks stay off elsewhere)", async () => {
    const script = `
      const mod = await import(${JSON.stringify(pathToFileURL(layer.file).href)});
      const before = typeof process.namespaces;
      await mod.loadTracer();
      process.stdout.write(before + ' ' + typeof process.namespaces);`;
    const { stdout } = await promisify(execFile)(process.execPath, ['--input-type=module', '-e', script], {
      env: { PATH: process.env.PATH ?? '' },
    });
    expect(stdout).toBe('undefined object');
  }, 30_000);

  it('a bundle does not start without the layer', async () => {
    const file = bundles.find((b) => b.name === 'customersGet')!.file;
    const run = promisify(execFile)(
      process.execPath,
      ['--input-type=module', '-e', `await import(${JSON.stringify(pathToFileURL(file).href)});`],
      {
        env: { PATH: process.env.PATH ?? '', AWS_REGION: 'us-east-1' },
      },
    );
    await expect(run).rejects.toThrow(`Cannot find module '${LAYER.import}'`);
  }, 30_000);

  it(`every function's bundle stays within ${kib(BUNDLE_LIMIT_BYTES)}`, () => {
    expect(bundles).toHaveLength(functionEntries().length);
    const over = bundles.filter((b) => b.bytes > BUNDLE_LIMIT_BYTES).map((b) => `${b.name}: ${kib(b.bytes)}`);
    expect(over).toEqual([]);
  });

  it("a route function carries its own resource's route entries only, never the whole route table", () => {
    const routeFiles = (b: FunctionBundle) =>
      inputsOf(b).filter((input) => /^lib\/(?:[a-z-]+\/routes|api\/system-routes)\.ts$/.test(input));
    const whole = ['openapi', 'notFound'];
    const checked = bundles.filter((b) => routeList.some((r) => r.name === b.name) && !whole.includes(b.name));
    expect(checked.length).toBeGreaterThan(40);
    for (const b of checked) {
      expect(routeFiles(b), b.name).toHaveLength(1);
      expect(routeFiles(b)[0], b.name).not.toBe('lib/api/routes.ts');
    }
  });

  // The 300 KiB budget: not reachable with the SDK and zod 4 bundled (docs/function-bundles.md).
  it.todo(`every function's bundle stays within ${kib(BUNDLE_BUDGET_BYTES)} (the original 300 KiB target)`);

  it('carries none of what was cut: the default credential chain, event streams, whole or duplicate semver, nested copies', () => {
    const cut = [
      /@aws-sdk\/credential-provider-(node|ini|sso|process|web-identity|http|login)\//,
      /@aws-sdk\/nested-clients\//,
      /@aws-sdk\/token-providers\//,
      /@smithy\/core\/dist-es\/submodules\/event-streams\//,
      /semver\/(classes\/range|ranges\/|index\.js)/,
    ];
    for (const bundle of bundles) {
      const inputs = inputsOf(bundle);
      expect(
        inputs.filter((input) => cut.some((pattern) => pattern.test(input))),
        bundle.name,
      ).toEqual([]);
      // A package nested under another's node_modules is a second copy of something.
      expect(
        inputs.filter((input) => /node_modules\/.*\/node_modules\//.test(input)),
        bundle.name,
      ).toEqual([]);
      expect(
        inputs.some((input) => input.includes('@aws-sdk/credential-provider-env/')),
        bundle.name,
      ).toBe(true);
    }
    // The layer: semver's `gte` alone, no nested copy (cls-hooked's semver 5).
    expect(
      inputsOf(layer).filter((input) => cut.some((pattern) => pattern.test(input)) || /node_modules\/.*\/node_modules\//.test(input)),
    ).toEqual([]);
  });

  it('signs DynamoDB requests with the credentials Lambda puts in the environment (the credential cut), and fails without them', async () => {
    const file = bundles.find((b) => b.name === 'customersGet')!.file;
    const lambda = lambdaEnv();
    // 401: the anonymous request's per-IP counter was written, so the request was signed.
    expect((await invokeInFreshNode(file, { ...lambda, ...LOCAL_CREDENTIALS })).status).toBe(401);
    expect((await invokeInFreshNode(file, lambda)).status).toBe(500);
  }, 60_000);

  it('the openapi function serves the document built into it, without zod-openapi or any route schema of its own', async () => {
    const bundle = bundles.find((b) => b.name === 'openapi')!;
    const inputs = inputsOf(bundle);
    expect(inputs.filter((input) => /zod-openapi|lib\/http\/openapi\.ts$|lib\/[a-z]+\/schemas\.ts$/.test(input))).toEqual([]);
    expect(inputs.some((input) => input.endsWith('openapi-document.mjs'))).toBe(true);
    const served = await invokeInFreshNode(bundle.file, { ...lambdaEnv(), ...LOCAL_CREDENTIALS }, { path: '/v1/openapi.json' });
    expect(served.status).toBe(200);
    expect(JSON.parse(served.body)).toEqual(JSON.parse(JSON.stringify(openApiDocument())));
  }, 60_000);

  it('loads and builds its handler in a fresh node with the layer, as on Lambda with the Tracer (X-Ray SDK) and without', async () => {
    const file = bundles.find((b) => b.name === 'customersGet')!.file;
    const onLambda = await measureColdStart(file, { runs: 1, layerFile: layer.file });
    const untraced = await measureColdStart(file, { runs: 1, layerFile: layer.file, env: { AWS_EXECUTION_ENV: '' } });
    for (const probe of [onLambda, untraced]) expect(probe.bundleCpuMs).toBeGreaterThan(probe.emptyCpuMs);
  }, 60_000);
});
