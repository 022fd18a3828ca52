import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { App, Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { build } from 'esbuild';
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, Context } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCustomer } from '#lib/customers/service';
import { createMerchant, createToken } from '#lib/merchants/service';
import { routes } from '#lib/api/routes';
import { handler as sourceHandler } from '../../functions/customers/get.ts';
import { registerLayerHooks } from '../../infra/bundles/build.ts';
import { LAYER } from '../../infra/bundles/options.ts';
import { ApiFunction } from '../../infra/constructs/api-function.ts';
import { PROJECT_ROOT } from '../../infra/paths.ts';

/**
 * Synthesizes one function as `cdk synth` does, its code and the observability layer it imports
 * really built by the local esbuild (infra/bundles/build.ts), then runs the asset CDK would deploy
 * against DynamoDB Local next to the source handler, its `/opt/nodejs/observability.mjs` import
 * sent to the layer's asset.
 */
type Handler = (event: APIGatewayProxyEventV2, context: Context) => Promise<APIGatewayProxyStructuredResultV2>;

let outdir: string;
let bundleDir: string;
let bundled: Handler;

beforeAll(async () => {
  outdir = mkdtempSync(join(tmpdir(), 'infra-bundle-'));
  const cdkJsonContext = JSON.parse(readFileSync(join(PROJECT_ROOT, 'cdk.json'), 'utf8')).context;
  // Template validation is covered by stack.test.ts; here it would only cost time.
  const app = new App({ outdir, context: cdkJsonContext, builtinCloudFormationValidation: false });
  const stack = new Stack(app, 'BundleProbe');
  new ApiFunction(stack, 'CustomersGet', { projectRoot: PROJECT_ROOT, handlerPath: routes.customersGet.handler });
  const template = Template.fromJSON(app.synth().getStackByName(stack.stackName).template);
  const fn = Object.values(template.findResources('AWS::Lambda::Function'))[0];
  bundleDir = join(outdir, `asset.${String(fn.Properties.Code.S3Key).replace(/\.zip$/, '')}`);
  const layer = Object.values(template.findResources('AWS::Lambda::LayerVersion'))[0];
  registerLayerHooks(join(outdir, `asset.${String(layer.Properties.Content.S3Key).replace(/\.zip$/, '')}`, LAYER.file));
  // Through a data: URL, which vitest leaves to Node: its module runner would resolve the bundle's
  // imports with Vite, past the hook, where Node loads the bundle as on Lambda.
  const reexport = `export { handler } from ${JSON.stringify(pathToFileURL(join(bundleDir, 'index.mjs')).href)};`;
  bundled = (await import(/* @vite-ignore */ `data:text/javascript,${encodeURIComponent(reexport)}`)).handler;
}, 120_000);
afterAll(() => rmSync(outdir, { recursive: true, force: true }));

const builtins = new Set([...builtinModules, ...builtinModules.map((m) => `node:${m}`)]);

const event = (path: string, params: Record<string, string>, token?: string): APIGatewayProxyEventV2 => ({
  version: '2.0',
  routeKey: `GET /v1${routes.customersGet.path}`,
  rawPath: `/v1${path}`,
  rawQueryString: '',
  headers: token ? { authorization: `Bearer ${token}` } : {},
  pathParameters: params,
  requestContext: {
    accountId: 'test',
    apiId: 'test',
    domainName: 'test',
    domainPrefix: 'test',
    http: {
      method: 'GET',
      path: `/v1${path}`,
      protocol: 'HTTP/1.1',
      sourceIp: `10.9.${Math.floor(Math.random() * 250)}.${Math.floor(Math.random() * 250)}`,
      userAgent: 'vitest',
    },
    requestId: `req-${Math.random().toString(36).slice(2)}`,
    routeKey: `GET /v1${routes.customersGet.path}`,
    stage: '$default',
    time: new Date().toISOString(),
    timeEpoch: Date.now(),
  },
  isBase64Encoded: false,
});
const context = { awsRequestId: 'test', functionName: 'CustomersGet', getRemainingTimeInMillis: () => 10_000 } as Context;
const json = (res: APIGatewayProxyStructuredResultV2) => ({ status: res.statusCode, body: JSON.parse(String(res.body)) });

describe('esbuild bundle of functions/customers/get.ts', () => {
  it('is one self-contained ESM file with a source map: #lib/ aliases resolved, only Node built-ins and the layer imported', async () => {
    const file = join(bundleDir, 'index.mjs');
    expect(existsSync(`${file}.map`)).toBe(true);
    // esbuild re-reads the bundle and lists what it imports (string contents do not count).
    const { metafile } = await build({
      entryPoints: [file],
      bundle: true,
      write: false,
      metafile: true,
      platform: 'node',
      format: 'esm',
      external: ['*'],
      logLevel: 'silent',
    });
    const imports = Object.values(metafile.inputs).flatMap((input) => input.imports.map((i) => i.path));
    expect(imports).toContain('node:module'); // the createRequire banner
    expect([...new Set(imports.filter((path) => !builtins.has(path)))]).toEqual([LAYER.import]);
    expect(readFileSync(file, 'utf8')).not.toMatch(/["'`]#lib\//);
  });

  it('answers like the source handler against the same table: 401, 404 and the customer', async () => {
    const merchant = await createMerchant('bundle probe');
    const { token } = await createToken(merchant.merchant_id);
    const customer = await createCustomer(merchant.merchant_id, { email: `probe-${Date.now()}@example.com`, external_id: 'probe-ext' });

    const anonymous = json(await bundled(event('/customers/1', { idOrExternalId: '1' }), context));
    expect(anonymous).toEqual({ status: 401, body: { message: 'Unauthenticated.' } });

    const missing = json(await bundled(event('/customers/999999', { idOrExternalId: '999999' }, token), context));
    expect(missing).toEqual({ status: 404, body: { message: 'Resource not found' } });

    // The limits reach the bundle through the environment the stack sets.
    const configured = process.env.RATE_LIMIT_PER_HOUR;
    process.env.RATE_LIMIT_PER_HOUR = '77';
    try {
      const limited = await bundled(event('/customers/999999', { idOrExternalId: '999999' }, token), context);
      expect(limited.headers?.['X-RateLimit-Limit']).toBe('77');
    } finally {
      if (configured === undefined) delete process.env.RATE_LIMIT_PER_HOUR;
      else process.env.RATE_LIMIT_PER_HOUR = configured;
    }

    for (const key of [String(customer.id), 'probe-ext']) {
      const fromBundle = json(await bundled(event(`/customers/${key}`, { idOrExternalId: key }, token), context));
      const fromSource = json(await sourceHandler(event(`/customers/${key}`, { idOrExternalId: key }, token), context));
      expect(fromBundle.status).toBe(200);
      expect(fromBundle.body.data).toMatchObject({ id: customer.id, external_id: 'probe-ext', email: customer.email });
      expect(fromBundle).toEqual(fromSource);
    }
  });
});
