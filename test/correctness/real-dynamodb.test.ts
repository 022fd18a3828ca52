import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { db, tableName } from '#lib/db/client';
import { keys } from '#lib/db/keys';
import { deleteCustomer } from '#lib/customers/service';
import { newMerchant, useApi } from '../support/api.ts';
import { awsErrors, failOnce, staleIndexReads, sustainedConflicts, throttle, type Installed } from '../support/faults.ts';
import { orderBody, uniqueNo } from '../orders/helpers.ts';

/**
 * DynamoDB Local hides what AWS does: stale index reads, transaction conflicts, throttling. These
 * tests inject them and check the write paths stay correct, answer 409/503 in time, and never
 * store part of a request.
 */
const api = useApi();
const installed: Installed<unknown>[] = [];
const use = <T extends Installed<unknown>>(m: T): T => {
  installed.push(m);
  return m;
};
afterEach(() => {
  for (const m of installed.splice(0)) m.uninstall();
});

const TIMEOUT_MS = 4000;
beforeAll(() => void (process.env.LOCAL_FUNCTION_TIMEOUT_MS = String(TIMEOUT_MS)));
afterAll(() => void delete process.env.LOCAL_FUNCTION_TIMEOUT_MS);

/** Counts index Queries (the only reads that can be stale on AWS). */
const indexQueries = () => {
  const spy = { count: 0, uninstall: () => db().middlewareStack.remove('test:index-spy') };
  db().middlewareStack.add(
    (next, context) => async (args) => {
      if (context.commandName === 'QueryCommand' && (args.input as { IndexName?: string }).IndexName) spy.count++;
      return next(args);
    },
    { step: 'initialize', name: 'test:index-spy' },
  );
  return use({ stats: spy, uninstall: spy.uninstall }).stats;
};

const stored = async (key: { pk: string; sk: string }) =>
  (await db().send(new GetCommand({ TableName: tableName(), Key: key, ConsistentRead: true }))).Item;

describe('no write decided by an index read', () => {
  it('PUT and DELETE by external_id act on the marker holder even when the index still names the previous holder', async () => {
    const { token, merchantId } = await newMerchant();
    const a = (await api.post('/customers', token, { email: 'a@example.com', name: 'A', external_id: 'ext-1' })).body.data;
    const stale = use(staleIndexReads());
    await stale.record(() => api.get('/customers/ext-1', token)); // the index as it was: ext-1 → A
    expect((await api.put(`/customers/${a.id}`, token, { external_id: 'ext-2' })).status).toBe(200);
    const b = (await api.post('/customers', token, { email: 'b@example.com', name: 'B', external_id: 'ext-1' })).body.data;
    stale.freeze();
    expect((await api.get('/customers/ext-1', token)).body.data.id).toBe(a.id); // the stale read path, as on AWS
    expect(stale.stats.served).toBeGreaterThan(0);

    const spy = indexQueries();
    const put = await api.put('/customers/ext-1', token, { name: 'B renamed' });
    expect(put.status).toBe(200);
    expect(put.body.data.id).toBe(b.id);
    expect((await api.del('/customers/ext-1', token)).status).toBe(204);
    expect(spy.count).toBe(0);

    const storedA = await stored(keys.customer(merchantId, a.id));
    const storedB = await stored(keys.customer(merchantId, b.id));
    expect(storedA).toMatchObject({ name: 'A', external_id: 'ext-2' });
    expect(storedA!.deleted_at).toBeUndefined();
    expect(storedB).toMatchObject({ name: 'B renamed' });
    expect(storedB!.deleted_at).toBeDefined();
  });

  it('order writes (create, PATCH, batch with relinks and status moves) never query an index', async () => {
    const { token } = await newMerchant();
    const no1 = uniqueNo();
    const no2 = uniqueNo();
    await api.post(
      '/orders',
      token,
      orderBody({ order_no: no1, customer_email: 'p@example.com', status: 'paid', paid_at: '2026-01-01T00:00:00Z' }),
    );
    await api.post(
      '/orders',
      token,
      orderBody({ order_no: no2, customer_email: 'p@example.com', status: 'paid', paid_at: '2026-02-01T00:00:00Z' }),
    );
    const spy = indexQueries();
    expect((await api.patch(`/orders/${no1}`, token, { status: 'refunded' })).status).toBe(200);
    const batch = await api.post('/orders/batch', token, {
      orders: [
        { order_no: no2, status: 'pending' }, // removes the last payment: recomputed from the customer's payment items
        { order_no: no1, customer_email: 'q@example.com' }, // relink: moves the first payment
      ],
    });
    expect(batch.body.data.updated).toBe(2);
    expect(spy.count).toBe(0);
    const p = (await api.get('/customers?search=p@example.com', token)).body.data[0];
    const q = (await api.get('/customers?search=q@example.com', token)).body.data[0];
    expect(p).toMatchObject({ order_count: 0, first_payment_at: null, last_payment_at: null, ltv: '0.00' });
    expect(q).toMatchObject({ order_count: 0, first_payment_at: '2026-01-01T00:00:00Z', last_payment_at: '2026-01-01T00:00:00Z' });
  });
});

describe('contention and throttling answer in time, and store nothing', () => {
  it('sustained transaction conflicts: POST /orders, PATCH and POST /customers answer 409 before the deadline', async () => {
    const { token } = await newMerchant();
    const existing = uniqueNo();
    await api.post('/orders', token, orderBody({ order_no: existing }));
    const conflicts = use(sustainedConflicts()).stats;
    const no = uniqueNo();
    for (const [method, path, body] of [
      ['POST', '/orders', orderBody({ order_no: no })],
      ['PATCH', `/orders/${existing}`, { status: 'paid' }],
      ['POST', '/customers', { email: 'c@example.com' }],
    ] as const) {
      const started = Date.now();
      const r = await api.request(method, path, { token, body });
      expect(r.status, `${method} ${path}`).toBe(409);
      expect(r.body).toEqual({ message: 'The resource was changed by concurrent requests. Try again.' });
      expect(Date.now() - started).toBeLessThan(TIMEOUT_MS);
    }
    expect(conflicts.fired).toBeGreaterThan(3);
    installed.splice(0).forEach((m) => m.uninstall());
    expect((await api.get(`/orders/${no}`, token)).status).toBe(404);
    expect((await api.get(`/orders/${existing}`, token)).body.data.status).toBe('pending');
    expect((await api.get('/customers?search=c@example.com', token)).body.meta.total).toBe(0);
  });

  it('sustained throttling answers 503 with Retry-After; a throttled read or token lookup too; nothing stored', async () => {
    const { token } = await newMerchant();
    use(throttle({ rate: 1, commands: ['TransactWriteItems'] }));
    const no = uniqueNo();
    const r = await api.post('/orders', token, orderBody({ order_no: no }));
    expect(r.status).toBe(503);
    expect(r.body).toEqual({ message: 'The service is busy. Try again shortly.' });
    expect(Number(r.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(r.headers.get('x-request-id')).toBeTruthy();
    installed.splice(0).forEach((m) => m.uninstall());
    expect((await api.get(`/orders/${no}`, token)).status).toBe(404);

    use(throttle({ rate: 1, commands: ['GetItem'] }));
    const read = await api.get(`/orders/${no}`, token);
    expect(read.status).toBe(503);
    expect(read.headers.get('retry-after')).toBeTruthy();
  });

  it('a connection reset before any answer is re-sent by the SDK (same request), other failures are not', async () => {
    const { token } = await newMerchant();
    let resets = 0;
    const name = 'test:connection-reset';
    // Below the SDK's retry middleware: the request left, the connection died, no answer came.
    db().middlewareStack.add(
      (next) => async (args) => {
        if (resets++ < 1) throw Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' });
        return next(args);
      },
      { step: 'finalizeRequest', name, priority: 'low' },
    );
    use({ stats: {}, uninstall: () => db().middlewareStack.remove(name) });
    const r = await api.post('/orders', token, orderBody());
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    expect(resets).toBeGreaterThan(1);
  });

  it('a transient throttle or conflict is retried and the request succeeds once', async () => {
    const { token } = await newMerchant();
    use(failOnce('TransactWriteItems', () => awsErrors.provisionedThroughputExceeded()));
    use(failOnce('TransactWriteItems', () => awsErrors.transactionCanceled([awsErrors.conflictReason()])));
    use(failOnce('GetItem', () => awsErrors.throttling()));
    const no = uniqueNo();
    const r = await api.post('/orders', token, orderBody({ order_no: no, status: 'paid' }));
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    const list = await api.get(`/orders?per_page=100`, token);
    expect(list.body.data.filter((o: { order_no: string }) => o.order_no === no)).toHaveLength(1);
    expect((await api.get('/orders/stats', token)).body.data.today_count).toBe(1);
  });
});

describe('batches keep their reports', () => {
  it('a customers batch whose later transactions keep conflicting reports what it committed and fails the rest with conflict', async () => {
    const { token } = await newMerchant();
    // 100 new customers need ~2 transactions (customer + email marker each, plus the shared total).
    let commits = 0;
    const name = 'test:conflict-after-first';
    db().middlewareStack.add(
      (next, context) => async (args) => {
        if (context.commandName === 'TransactWriteItemsCommand' && ++commits > 1) {
          throw awsErrors.transactionCanceled([awsErrors.conflictReason()]);
        }
        return next(args);
      },
      { step: 'initialize', name, priority: 'low' },
    );
    use({ stats: {}, uninstall: () => db().middlewareStack.remove(name) });
    const customers = Array.from({ length: 100 }, (_, i) => ({ email: `bulk${i}@example.com`, name: `C${i}` }));
    const r = await api.post('/customers/batch', token, { customers });
    expect(r.status).toBe(200);
    const d = r.body.data;
    expect(d.created).toBeGreaterThan(0);
    expect(d.created + d.failed).toBe(100);
    expect(d.failed).toBeGreaterThan(0);
    expect(new Set(d.results.failed.map((f: { reason: string }) => f.reason))).toEqual(new Set(['conflict']));
    installed.splice(0).forEach((m) => m.uninstall());
    const list = await api.get('/customers?per_page=100', token);
    expect(list.body.meta.total).toBe(d.created);
    expect(new Set(list.body.data.map((c: { id: number }) => c.id))).toEqual(new Set(d.results.created.map((c: { id: number }) => c.id)));
  });

  it('a customers batch whose transaction lost one race redoes its items and reports them all', async () => {
    const { token } = await newMerchant();
    use(failOnce('TransactWriteItems', () => awsErrors.transactionCanceled([awsErrors.conflictReason()])));
    const r = await api.post('/customers/batch', token, {
      on_conflict: 'update',
      customers: [{ email: 'x@example.com' }, { email: 'y@example.com' }, { email: 'x@example.com', name: 'X' }],
    });
    expect(r.body.data, JSON.stringify(r.body.data.results.failed)).toMatchObject({ created: 2, updated: 1, failed: 0 });
    expect((await api.get('/customers?search=x@example.com', token)).body.data[0].name).toBe('X');
  });

  it('an order batch never links orders to a customer deleted between its read and its commit', async () => {
    const { token, merchantId } = await newMerchant();
    const first = (await api.post('/orders', token, orderBody({ customer_email: 'gone@example.com' }))).body.data;
    const deletedId = first.customer_id;
    let armed = true;
    const name = 'test:delete-before-commit';
    db().middlewareStack.add(
      (next, context) => async (args) => {
        if (armed && context.commandName === 'TransactWriteItemsCommand') {
          armed = false;
          await deleteCustomer(merchantId, String(deletedId)); // lands between the batch's read and its commit
        }
        return next(args);
      },
      { step: 'initialize', name, priority: 'low' },
    );
    use({ stats: {}, uninstall: () => db().middlewareStack.remove(name) });
    const no = uniqueNo();
    const r = await api.post('/orders/batch', token, {
      orders: [{ order_no: no, amount: '10.00', customer_email: 'gone@example.com', status: 'paid' }],
    });
    expect(r.body.data.created, JSON.stringify(r.body)).toBe(1);
    const order = (await api.get(`/orders/${no}`, token)).body.data;
    expect(order.customer_id).not.toBe(deletedId);
    const live = (await api.get('/customers?search=gone@example.com', token)).body.data;
    expect(live.map((c: { id: number }) => c.id)).toEqual([order.customer_id]);
    expect(live[0]).toMatchObject({ order_count: 1, ltv: '10.00' });
    expect(await stored(keys.customer(merchantId, deletedId))).toMatchObject({ order_count: 0 });
  });
});
