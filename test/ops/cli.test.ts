import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { getMerchant } from '#lib/merchants/store';
import { describe, expect, it } from 'vitest';
import { useApi } from '../support/api.ts';
import { isolatedClock } from '../pipeline/support.ts';
import { ok, ops, runCli } from '../support/cli.ts';

/** `npm run ops -- …`, run as operators run it: a child process against the run's DynamoDB Local. */
process.env.UNAUTHENTICATED_RATE_LIMIT_PER_MINUTE = '100000';
isolatedClock();
const api = useApi();

const merchant = async (name = 'CLI shop') => (await ok('merchant', 'create', '--name', name)).merchant_id as string;

// Each test runs several CLI processes one after another (~1–2 s each, more on a loaded machine).
describe('ops CLI', { timeout: 90_000 }, () => {
  it('creates a merchant and a token the API accepts, with the abilities asked for', async () => {
    const created = await ok('merchant', 'create', '--name', 'Corner Shop', '--currency', 'usd');
    expect(created).toMatchObject({ merchant_id: expect.stringMatching(/^mer_/), name: 'Corner Shop', reporting_currency: 'USD' });
    const { token, abilities } = await ok(
      'token',
      'create',
      '--merchant',
      created.merchant_id,
      '--abilities',
      'customers:read, orders:read,customers:read',
    );
    expect(token).toMatch(/^ras_[0-9A-Za-z]{40,}$/);
    expect(abilities).toEqual(['customers:read', 'orders:read']);
    expect((await api.get('/customers/1', token)).status).toBe(404);
    expect((await api.get('/customers', token)).status).toBe(200);
    expect((await api.post('/customers', token, { email: 'a@example.com' })).status).toBe(403);
  });

  it('refuses a second token while one is valid (409), then regenerates and revokes', async () => {
    const id = await merchant();
    const first = (await ok('token', 'create', '--merchant', id)).token as string;

    const again = await ops('token', 'create', '--merchant', id);
    expect(again.code).toBe(1);
    expect(again.stdout).toBe('');
    expect(JSON.parse(again.stderr)).toEqual({ error: 'A valid token already exists. Revoke it before creating a new one.', status: 409 });
    expect((await api.get('/customers/1', first)).status).toBe(404);

    const regenerated = await ok('token', 'regenerate', '--merchant', id);
    expect(regenerated.token).not.toBe(first);
    expect(regenerated.abilities).toContain('customers:write'); // new tokens carry every ability
    expect((await api.get('/customers/1', first)).status).toBe(401);
    expect((await api.get('/customers/1', regenerated.token)).status).toBe(404);

    expect(await ok('token', 'revoke', '--merchant', id)).toMatchObject({ merchant_id: id, revoked_at: expect.any(String) });
    expect((await api.get('/customers/1', regenerated.token)).status).toBe(401);

    const regenerateRevoked = await ops('token', 'regenerate', '--merchant', id);
    expect(regenerateRevoked.code).toBe(1);
    expect(JSON.parse(regenerateRevoked.stderr)).toEqual({ error: `Merchant ${id} has no valid token.`, status: 404 });
  });

  it('explains mistakes: usage errors exit 2, unknown merchants exit 1', async () => {
    const [unknownCmd, noMerchant, badAbility, badCurrency, missing] = await Promise.all([
      ops('merchant', 'rename'),
      ops('token', 'create'),
      ops('token', 'create', '--merchant', 'mer_x', '--abilities', 'customers:read,everything'),
      ops('merchant', 'create', '--name', 'x', '--currency', 'ABC'),
      ops('token', 'create', '--merchant', 'mer_does_not_exist'),
    ]);
    for (const r of [unknownCmd, noMerchant, badAbility, badCurrency]) {
      expect(r.code, r.stderr).toBe(2);
      expect(r.stdout).toBe('');
      expect(r.stderr).toContain('usage:');
    }
    expect(unknownCmd.stderr).toContain('unknown command: merchant rename');
    expect(noMerchant.stderr).toContain('--merchant is required');
    expect(badAbility.stderr).toContain('unknown abilities: everything');
    expect(badCurrency.stderr).toContain('--currency must be an ISO 4217 code');
    expect(missing.code).toBe(1);
    expect(JSON.parse(missing.stderr)).toEqual({ error: 'Merchant mer_does_not_exist does not exist.', status: 404 });
  });
});

describe('ops activity list', { timeout: 90_000 }, () => {
  it('prints the activity log as GET /activity lists it, by run, type and page; usage errors name the types', async () => {
    const id = await merchant('Import shop');
    const { token } = await ok('token', 'create', '--merchant', id);
    const run = { 'x-import-run': 'run_cli_0001' };
    const customers = await api.post(
      '/customers/batch',
      token,
      { customers: [{ email: 'a@example.com' }, { email: 'not-an-email' }] },
      run,
    );
    const orders = await api.post(
      '/orders/batch',
      token,
      { orders: [{ order_no: 'CLI-1', customer_email: 'a@example.com', amount: '10.00', status: 'paid' }] },
      run,
    );
    const alone = await api.post('/orders/batch', token, {
      orders: [{ order_no: 'CLI-2', customer_email: 'a@example.com', amount: '12.00', status: 'paid' }],
    });
    for (const r of [customers, orders, alone]) expect(r.status, JSON.stringify(r.body)).toBe(200);

    const byRun = await ok('activity', 'list', '--merchant', id, '--import-run', 'run_cli_0001');
    expect(byRun).toEqual((await api.get('/activity?import_run=run_cli_0001', token)).body);
    expect(byRun.data.map((e: { type: string; import_run: string }) => [e.type, e.import_run])).toEqual([
      ['orders.batch', 'run_cli_0001'],
      ['customers.batch', 'run_cli_0001'],
    ]);
    expect(byRun.data[1]).toMatchObject({
      total: 2,
      created: 1,
      failed: 1,
      results: { failed: [{ index: 1, identifier: 'not-an-email', reason: 'validation_error' }] },
    });

    const firstOrder = await ok('activity', 'list', '--merchant', id, '--type', 'orders.batch', '--per-page', '1');
    expect(firstOrder).toEqual((await api.get('/activity?type=orders.batch&per_page=1', token)).body);
    expect(firstOrder.data[0]).toMatchObject({ import_run: null, created: 1 });
    expect(firstOrder.meta).toMatchObject({ total: 2, per_page: 1, next_cursor: expect.any(String) });
    const next = await ok(
      'activity',
      'list',
      '--merchant',
      id,
      '--type',
      'orders.batch',
      '--per-page',
      '1',
      '--cursor',
      firstOrder.meta.next_cursor,
    );
    expect(next.data.map((e: { id: number }) => e.id)).toEqual([byRun.data[0].id]);

    const [badType, badPage, unknown] = await Promise.all([
      ops('activity', 'list', '--merchant', id, '--type', 'orders'),
      ops('activity', 'list', '--merchant', id, '--per-page', '500'),
      ops('activity', 'list', '--merchant', 'mer_does_not_exist'),
    ]);
    for (const r of [badType, badPage]) {
      expect(r.code, r.stderr).toBe(2);
      expect(r.stderr).toContain('usage:');
    }
    expect(badType.stderr).toContain(
      '--type must be one of customers.batch, orders.batch, subscriptions.batch, subscription_events.batch, got orders',
    );
    expect(badPage.stderr).toContain('--per-page: The per page field must be between 1 and 100.');
    expect(unknown.code).toBe(1);
    expect(JSON.parse(unknown.stderr)).toEqual({ error: 'Merchant mer_does_not_exist does not exist.', status: 404 });
  });
});

describe('ops CLI finding the local stack', () => {
  const run = (env: NodeJS.ProcessEnv) => runCli(['merchant', 'create', '--name', 'Found'], env);

  it('uses the running local stack when no endpoint and no AWS credentials are configured', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ops-'));
    const stackFile = join(dir, 'stack.json');
    // The test process stands in for a running `npm start` (the file names a live pid).
    writeFileSync(
      stackFile,
      JSON.stringify({
        pid: process.pid,
        dynamodbEndpoint: process.env.DYNAMODB_ENDPOINT,
        tableName: process.env.TABLE_NAME,
        apiUrl: api.base,
      }),
    );
    const { DYNAMODB_ENDPOINT: _e, TABLE_NAME: _t, AWS_PROFILE: _p, AWS_ACCESS_KEY_ID: _k, ...rest } = process.env;
    const env = { ...rest, HOME: dir, LOCAL_STACK_FILE: stackFile };
    const found = await run(env);
    expect(found.code, found.stderr).toBe(0);
    expect(found.stderr).toContain(`using the local stack: ${process.env.DYNAMODB_ENDPOINT}`);
    expect(await getMerchant(found.json.merchant_id)).toMatchObject({ name: 'Found' });

    // With AWS credentials configured the CLI never falls back to the local stack.
    const withAws = await run({
      ...env,
      AWS_ACCESS_KEY_ID: 'x',
      AWS_SECRET_ACCESS_KEY: 'y',
      AWS_EC2_METADATA_DISABLED: 'true',
      AWS_MAX_ATTEMPTS: '1',
      AWS_ENDPOINT_URL_DYNAMODB: 'http://127.0.0.1:9',
    });
    expect(withAws.code).not.toBe(0);
    expect(withAws.stderr).not.toContain('using the local stack');
  });

  it('refuses a stack file left by a killed npm start, instead of failing on AWS credentials', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ops-'));
    const stackFile = join(dir, 'stack.json');
    const deadPid = spawnSync(process.execPath, ['-e', '']).pid;
    writeFileSync(
      stackFile,
      JSON.stringify({
        pid: deadPid,
        dynamodbPid: deadPid,
        dynamodbEndpoint: process.env.DYNAMODB_ENDPOINT,
        tableName: process.env.TABLE_NAME,
        apiUrl: api.base,
      }),
    );
    const { DYNAMODB_ENDPOINT: _e, TABLE_NAME: _t, AWS_PROFILE: _p, AWS_ACCESS_KEY_ID: _k, ...rest } = process.env;
    const stale = await run({ ...rest, HOME: dir, LOCAL_STACK_FILE: stackFile });
    expect(stale.code).toBe(1);
    expect(stale.stdout).toBe('');
    expect(stale.stderr.trim()).toBe(
      `the local stack recorded in ${stackFile} is not running (npm start was killed?); start it again or set DYNAMODB_ENDPOINT`,
    );
    expect(stale.stderr).not.toMatch(/credential/i);

    // An endpoint named explicitly is used as before.
    const explicit = await run({
      ...rest,
      HOME: dir,
      LOCAL_STACK_FILE: stackFile,
      DYNAMODB_ENDPOINT: process.env.DYNAMODB_ENDPOINT,
      TABLE_NAME: process.env.TABLE_NAME,
    });
    expect(explicit.code, explicit.stderr).toBe(0);
    expect(await getMerchant(explicit.json.merchant_id)).toMatchObject({ name: 'Found' });
  });
});
