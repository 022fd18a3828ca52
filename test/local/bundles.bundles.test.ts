import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { routeList } from '#lib/api/routes';
import { authKindOf } from '#lib/http/route';
import { WORKER_FUNCTIONS } from '#lib/shared/invocation';
import { functionEntries } from '../../infra/bundles/build.ts';
import { node22Path } from '../../infra/local/bundle-runtime.ts';
import { issueLocalBackofficeToken } from '../../infra/local/backoffice-jwt.ts';
import { freePort } from '../../infra/local/dynamodb.ts';
import { motoInstalled } from '../../infra/local/moto.ts';
import { startWebhookReceiver } from '../../infra/local/webhook-receiver.ts';
import { newMerchant, useApi } from '../support/api.ts';
import { eventually } from '../support/eventually.ts';

/**
 * The deployed code, served: `npm start -- --bundles` (every function's esbuild bundle under the
 * project's Node 22, infra/local/bundles-mode.ts) called on every route of the route table, each
 * answer's status held equal to the source's (the in-process server of the other tiers, same
 * requests, a merchant in the same state); then every function outside the route table
 * (`functionEntries()`) made to run by what triggers it on AWS, and its effect read back.
 */
const hasMoto = motoInstalled();
if (!hasMoto) console.warn('SKIPPED test/local/bundles.bundles.test.ts: moto_server is not installed (.ci/run installs it)');

const source = useApi();
let child: ChildProcess;
let output = '';
let base = '';
let token = '';
const dir = mkdtempSync(join(tmpdir(), 'bundles-mode-'));
// One development key for the tokens this file signs, the source side's verifier and the started stack's (its authorizer and JWKS).
process.env.LOCAL_BACKOFFICE_KEY_FILE = join(dir, 'backoffice-jwt-key.json');

const bundleCall = async (method: string, path: string, opts: { token?: string; body?: unknown } = {}) => {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: {
      ...(opts.token ? { authorization: `Bearer ${opts.token}` } : {}),
      ...(opts.body !== undefined ? { 'content-type': 'application/json' } : {}),
    },
    body: opts.body !== undefined ? JSON.stringify(opts.body) : undefined,
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
};
/** An invocation under Node 22 that answered without an error or failed records. */
const ranOk = /\(node v22\.[\d.]+\): (ok|\d{3}) in /;
/** The lines `bundle <name> (node <v>): <answer> …` the bundles mode printed for a function. */
const invocations = (name: string) => output.split('\n').filter((l) => l.startsWith(`bundle ${name} (`));

beforeAll(async () => {
  if (!hasMoto) return;
  const port = await freePort();
  // Node 20 runs `npm start` (the system's node on PATH); only the function processes run Node 22.
  child = spawn(process.execPath, ['--import', 'tsx', 'infra/local/start.ts', '--bundles'], {
    env: {
      ...process.env,
      PORT: String(port),
      HOST: '127.0.0.1',
      // The run's DynamoDB Local, a table of its own (with its stream).
      TABLE_NAME: 'revenue-analytics-bundles',
      LOCAL_STACK_FILE: join(dir, 'stack.json'),
      LOG_LEVEL: 'SILENT',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout!.on('data', (d) => (output += d));
  child.stderr!.on('data', (d) => (output += d));
  await eventually(
    () => /Demo token +\S+/.test(output) || child.exitCode !== null,
    240_000,
    () => `npm start -- --bundles to be ready:\n${output}`,
  );
  expect(output).toMatch(/Demo token +\S+/);
  token = /Demo token +(\S+)/.exec(output)![1]!;
  base = `http://127.0.0.1:${port}/v1`;
}, 300_000);

afterAll(async () => {
  if (child && child.exitCode === null) {
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGTERM');
    await exited;
  }
  rmSync(dir, { recursive: true, force: true });
}, 30_000);

describe.skipIf(!hasMoto)('npm start -- --bundles: the deployed bundles under Node 22', () => {
  it('runs npm start on the system Node and the functions on the project Node 22', async () => {
    expect(process.execPath).not.toBe(node22Path());
    expect(process.versions.node.split('.')[0]).not.toBe('22');
    // The sweeper's schedule fires once at start, on its own time.
    const sweep = await eventually(
      () => invocations(WORKER_FUNCTIONS.outboxSweeper)[0],
      60_000,
      () => `the sweeper's first run:\n${output}`,
    );
    expect(sweep).toMatch(/\(node v22\.\d+\.\d+\): ok/);
  }, 90_000);

  it('answers every route of the route table as the source does', async () => {
    const sourceMerchant = await newMerchant();
    const merchants = {
      source: { token: sourceMerchant.token, merchantId: sourceMerchant.merchantId },
      bundles: { token, merchantId: 'mer_demo' },
    };
    // The same state on both sides: one customer (id 1), so reads by id find something.
    const customer = { email: 'smoke@bundles.test', name: 'Smoke' };
    expect((await source.post('/customers', merchants.source.token, customer)).status).toBe(201);
    expect((await bundleCall('POST', '/customers', { token, body: customer })).status).toBe(201);
    const differences: string[] = [];
    const dashboardCalls: number[] = [];
    for (const route of routeList) {
      const path = route.path.replace(/\{[^}]+\}/g, '1');
      const body = ['POST', 'PUT', 'PATCH'].includes(route.method) ? {} : undefined;
      const credential = async (side: 'source' | 'bundles') =>
        authKindOf(route) === 'backoffice'
          ? (await issueLocalBackofficeToken({ merchantId: merchants[side].merchantId, role: 'admin' })).token
          : merchants[side].token;
      // The two sides hold different merchants: called at once.
      const [expected, got] = await Promise.all([
        source.request(route.method, path, { token: await credential('source'), body }),
        bundleCall(route.method, path, { token: await credential('bundles'), body }),
      ]);
      if (got.status !== expected.status)
        differences.push(`${route.method} ${path} (${route.name}): ${got.status}, source ${expected.status}`);
      expect(invocations(route.name).length, `${route.name} ran from its bundle`).toBeGreaterThan(0);
      // A dashboard caller's JWT is verified by the function itself, against the keys the local server serves.
      if (route.dashboard) {
        const jwt = async (side: 'source' | 'bundles') =>
          (await issueLocalBackofficeToken({ merchantId: merchants[side].merchantId, role: 'admin' })).token;
        const [fromSource, fromBundle] = await Promise.all([
          source.request(route.method, path, { token: await jwt('source'), body }),
          bundleCall(route.method, path, { token: await jwt('bundles'), body }),
        ]);
        if (fromBundle.status !== fromSource.status)
          differences.push(
            `${route.method} ${path} (${route.name}) with a dashboard JWT: ${fromBundle.status}, source ${fromSource.status}`,
          );
        dashboardCalls.push(fromBundle.status);
      }
    }
    // Some dashboard call got past the JWT check (a 401 or 5xx everywhere would also be "equal" to a broken source).
    expect(dashboardCalls.some((status) => status < 300)).toBe(true);
    expect(differences).toEqual([]);
    const unrouted = await bundleCall('GET', '/no-such-route', { token });
    expect(unrouted.status).toBe((await source.get('/no-such-route', merchants.source.token)).status);
    expect(invocations(WORKER_FUNCTIONS.notFound).length).toBeGreaterThan(0);
  }, 240_000);

  it('runs every stream consumer, queue consumer and scheduled function from its bundle, with its effect in the table', async () => {
    // The route table's token routes revoked and regenerated the demo token: a new one, through the bundles.
    const admin = (await issueLocalBackofficeToken({ merchantId: 'mer_demo', role: 'admin' })).token;
    await bundleCall('DELETE', '/backoffice/api-token', { token: admin });
    const issued = await bundleCall('POST', '/backoffice/api-token', { token: admin });
    expect(issued.status).toBe(201);
    token = issued.body.data.token;
    // Accepts every delivery (the endpoint's secret is known only once it exists); the body is checked below.
    const receiver = await startWebhookReceiver({ respond: () => 204 });
    try {
      // Relay (stream → moto's bus) → rule → events queue → fan-out → deliveries queue → delivery → the receiver.
      const endpoint = await bundleCall('POST', '/webhook-endpoints', { token, body: { url: `${receiver.url}/hook`, events: ['*'] } });
      expect(endpoint.status).toBe(201);
      const id = endpoint.body.data.id;
      // An order's creation is an event (a customer's is not): the write puts it in the outbox in its transaction.
      const order = await bundleCall('POST', '/orders', {
        token,
        body: { order_no: 'H-1', amount: '10', customer_email: 'hook@bundles.test', status: 'paid', billing_cycle: 'monthly' },
      });
      expect(order.status).toBe(201);
      const delivered = await eventually(
        () => receiver.received.find((d) => d.body.includes('"order.created"')),
        60_000,
        () => `the order's event delivered through the bundles:\n${output}`,
      );
      expect(JSON.parse(delivered.body).data.object).toMatchObject({ id: order.body.data.id, order_no: 'H-1' });
      // The delivery worker recorded it on the endpoint.
      await eventually(
        async () => (await bundleCall('GET', `/webhook-endpoints/${id}/deliveries`, { token })).body?.data?.length > 0,
        30_000,
        'the delivery recorded',
      );

      // A batch leaves its aggregate moves pending: the applier applies them.
      const batch = await bundleCall('POST', '/orders/batch', {
        token,
        body: {
          orders: [{ order_no: 'B-1', amount: '120', customer_email: 'batch@bundles.test', status: 'paid', billing_cycle: 'monthly' }],
        },
      });
      expect(batch.status).toBe(200);
      // A change of zone starts a recount: the recount worker counts the next generation, switches, and retires the old one.
      expect((await bundleCall('PUT', '/settings', { token: admin, body: { timezone: 'Asia/Taipei' } })).status).toBe(200);
      // A cancellation scheduled 8 seconds ahead (a loaded machine's request takes seconds): the rule's stand-in arms it, the check applies it.
      const sub = await bundleCall('POST', '/subscriptions', {
        token,
        body: { customer_id: order.body.data.customer_id, plan_name: 'P', mrr: '100.00', billing_cycle: 'monthly' },
      });
      expect(sub.status).toBe(201);
      const cancelAt = new Date(Math.ceil((Date.now() + 8_000) / 1000) * 1000).toISOString().replace(/\.\d+Z$/, 'Z');
      const scheduled = await bundleCall('PUT', `/subscriptions/${sub.body.data.id}/cancel`, { token, body: { cancelled_at: cancelAt } });
      expect(scheduled.status).toBe(200);
      // Scheduled, not applied by the request: what books the cancel event from here is the check.
      expect(scheduled.body.data).toMatchObject({ status: 'active', cancel_at: cancelAt });
      await eventually(
        async () => {
          const events = await bundleCall('GET', '/subscriptions/events', { token });
          return (events.body?.data ?? []).some(
            (e: { subscription_id: number; event_type: string; occurred_at: string }) =>
              e.subscription_id === sub.body.data.id && e.event_type === 'cancel' && e.occurred_at === cancelAt,
          );
        },
        60_000,
        () =>
          `the scheduled cancellation applied:\n${output
            .split('\n')
            .filter((l) => !l.startsWith('{'))
            .join('\n')}`,
      );
      const workers = functionEntries().filter((e) => !routeList.some((r) => r.name === e.name));
      await eventually(
        () => workers.every((w) => invocations(w.name).some((l) => ranOk.test(l))),
        60_000,
        () =>
          `every worker to run from its bundle:\n${output
            .split('\n')
            .filter((l) => l.startsWith('bundle '))
            .join('\n')}`,
      );
      for (const w of workers)
        expect(
          invocations(w.name).some((l) => ranOk.test(l)),
          w.name,
        ).toBe(true);
    } finally {
      await receiver.close();
    }
  }, 240_000);
});
