import { describe, expect, it } from 'vitest';
import { newMerchant, useApi } from './support/api.ts';

/** Inputs a black-box pass found answering 5xx or breaking the wire format; each must be a 2xx or a 422. */
const api = useApi();

const deep = (levels: number): Record<string, unknown> => {
  let o: Record<string, unknown> = { leaf: true };
  for (let i = 0; i < levels; i++) o = { a: o };
  return o;
};

const awkwardMetadata: [string, Record<string, unknown>][] = [
  // biome-ignore lint/correctness/noPrecisionLoss: the point: a number JSON carries that a double cannot hold exactly
  ['numbers beyond the safe-integer range', { big: 1e300, neg: -1e20, exact: 12345678901234567890 }],
  ['an empty key, top level and nested', { '': 1, k: { '': 2 } }],
  ['constructor keys', { constructor: 1, x: { constructor: {} } }],
  ['60 levels of nesting', deep(60)],
];

describe('metadata round-trips whatever JSON the client sends', () => {
  it.each(awkwardMetadata)('%s: customers, orders, PATCH and both batches', async (_name, metadata) => {
    const { token } = await newMerchant();
    const expected = JSON.parse(JSON.stringify(metadata));
    const c = await api.post('/customers', token, { email: 'm@example.com', metadata });
    expect(c.status, JSON.stringify(c.body).slice(0, 200)).toBe(201);
    expect(c.body.data.metadata).toEqual(expected);
    expect((await api.put(`/customers/${c.body.data.id}`, token, { metadata })).status).toBe(200);
    const o = await api.post('/orders', token, { order_no: 'M-1', amount: '1', customer_email: 'm@example.com', metadata });
    expect(o.status).toBe(201);
    expect((await api.get('/orders/M-1', token)).body.data.metadata).toEqual(expected);
    expect((await api.patch('/orders/M-1', token, { status: 'paid', metadata })).status).toBe(200);
    const batch = await api.post('/orders/batch', token, {
      orders: [
        { order_no: 'M-2', amount: '1', customer_email: 'm@example.com', metadata },
        { order_no: 'M-3', amount: '2', customer_email: 'n@example.com' },
      ],
    });
    expect(batch.body.data).toMatchObject({ created: 2, failed: 0 });
    const customers = await api.post('/customers/batch', token, {
      customers: [{ email: 'b@example.com', metadata }, { email: 'c@example.com' }],
    });
    expect(customers.body.data).toMatchObject({ created: 2, failed: 0 });
  });
});

describe('pathological metadata is a 422, never a crash', () => {
  it('refuses nesting past 64 levels, even 200,000 levels in a 400 KB body', async () => {
    const { token } = await newMerchant();
    const tooDeep = await api.post('/customers', token, { email: 'd@example.com', metadata: deep(65) });
    expect(tooDeep.status).toBe(422);
    expect(tooDeep.body.errors.metadata).toEqual(['The metadata field must not be nested more than 64 levels deep.']);
    const n = 200_000;
    const rawBody = `{"order_no":"D-1","amount":"1","customer_email":"d@example.com","metadata":{"a":${'['.repeat(n)}${']'.repeat(n)}}}`;
    const res = await api.request('POST', '/orders', { token, rawBody, headers: { 'content-type': 'application/json' } });
    expect(res.status).toBe(422);
    expect(res.body.errors.metadata).toHaveLength(1);
    expect((await api.get('/orders', token)).body.meta.total).toBe(0);
  });
});

describe('timestamps stay in the four-digit-year wire format', () => {
  it('accepts year 0001 and refuses an instant an offset carries past 9999', async () => {
    const { token } = await newMerchant();
    const early = await api.post('/orders', token, {
      order_no: 'T-1',
      amount: '1',
      customer_email: 't@example.com',
      status: 'paid',
      paid_at: '0001-01-01T00:00:00Z',
    });
    expect(early.status).toBe(201);
    expect(early.body.data.paid_at).toBe('0001-01-01T00:00:00Z');
    const late = await api.post('/orders', token, {
      order_no: 'T-2',
      amount: '1',
      customer_email: 't@example.com',
      status: 'paid',
      paid_at: '9999-12-31T23:59:59-01:00',
    });
    expect(late.status).toBe(422);
    expect(late.body.errors.paid_at).toHaveLength(1);
    expect((await api.get('/orders?start_date=9999-12-31T23:59:59-01:00', token)).status).toBe(422);
    expect((await api.get('/orders?start_date=0001-01-01', token)).body.meta.total).toBe(1);
  });
});

describe('messages and reserved values', () => {
  it('a missing amount or status is "required"; unreachable order numbers are refused', async () => {
    const { token } = await newMerchant();
    const noAmount = await api.post('/orders', token, { order_no: 'R-1', customer_email: 'r@example.com' });
    expect(noAmount.body.errors.amount).toEqual(['The amount field is required.']);
    await api.post('/orders', token, { order_no: 'R-1', amount: '1', customer_email: 'r@example.com' });
    expect((await api.patch('/orders/R-1', token, {})).body.errors.status).toEqual(['The status field is required.']);
    for (const orderNo of ['.', '..', 'stats']) {
      const r = await api.post('/orders', token, { order_no: orderNo, amount: '1', customer_email: 'r@example.com' });
      expect(r.status, orderNo).toBe(422);
      expect(r.body.errors.order_no).toHaveLength(1);
    }
    const batch = await api.post('/orders/batch', token, { orders: ['nope'] });
    expect(batch.body.data.results.failed[0]).toMatchObject({
      reason: 'validation_error',
      message: 'The orders.0 field must be an object.',
    });
  });

  it('on_conflict null means the default (skip)', async () => {
    const { token } = await newMerchant();
    await api.post('/customers', token, { email: 'dup@example.com' });
    const r = await api.post('/customers/batch', token, { customers: [{ email: 'dup@example.com' }], on_conflict: null });
    expect(r.status).toBe(200);
    expect(r.body.data.results.skipped).toEqual([{ index: 0, reason: 'duplicate_email', identifier: 'dup@example.com' }]);
  });
});

describe('second black-box pass', () => {
  it('an order_no path segment longer than any order_no is a 404, not a 500', async () => {
    const { token } = await newMerchant();
    const long = 'x'.repeat(2100);
    const get = await api.get(`/orders/${long}`, token);
    expect(get.status).toBe(404);
    expect(get.body).toEqual({ message: 'Resource not found' });
    expect((await api.patch(`/orders/${long}`, token, { status: 'paid' })).status).toBe(404);
  });

  it('year 0000 is outside the wire format, even through an offset', async () => {
    const { token } = await newMerchant();
    for (const paid_at of ['0000-12-31T23:59:59Z', '0001-01-01T00:00:00+01:00']) {
      const r = await api.post('/orders', token, {
        order_no: `Y-${paid_at.length}${paid_at.slice(-3)}`,
        amount: '1',
        customer_email: 'y@example.com',
        status: 'paid',
        paid_at,
      });
      expect(r.status, paid_at).toBe(422);
      expect(r.body.errors.paid_at).toHaveLength(1);
    }
  });

  it('a batch names a new customer from the first item naming its email; {} metadata leaves the stored one', async () => {
    const { token } = await newMerchant();
    const r = await api.post('/orders/batch', token, {
      orders: [
        { order_no: 'N-1', amount: '1', customer_email: 'n1@example.com' },
        { order_no: 'N-2', amount: '2', customer_email: 'n1@example.com', customer_name: 'Later' },
        { order_no: 'N-3', amount: '3', customer_email: 'n2@example.com', customer_name: 'First', metadata: { k: 2 } },
        { order_no: 'N-3', customer_email: 'n3@example.com', metadata: {} },
      ],
    });
    expect(r.body.data).toMatchObject({ created: 3, updated: 1, failed: 0 });
    const n3 = await api.get('/orders/N-3', token);
    expect(n3.body.data).toMatchObject({ customer_email: 'n3@example.com', customer_name: null, metadata: { k: 2 } });
    const n1 = await api.get('/orders/N-1', token);
    expect(n1.body.data.customer_name).toBeNull();
  });
});

describe('third black-box pass', () => {
  const rawPost = (path: string, token: string, rawBody: string) =>
    api.request('POST', path, { token, rawBody, headers: { 'content-type': 'application/json' } });
  const rawPut = (path: string, token: string, rawBody: string) =>
    api.request('PUT', path, { token, rawBody, headers: { 'content-type': 'application/json' } });
  const UNICODE = (field: string) => [`The ${field} field must be valid Unicode text.`];

  it('an order_no with a lone surrogate is refused: no URL reaches it and DynamoDB keys do not keep such numbers apart', async () => {
    const { token } = await newMerchant();
    for (const orderNo of ['\\ud800', 'A-\\udc00', 'B-\\ud83d', '\\ude00x']) {
      const r = await rawPost('/orders', token, `{"order_no":"${orderNo}","amount":"1","customer_email":"u@example.com"}`);
      expect(r.status, orderNo).toBe(422);
      expect(r.body.errors, orderNo).toEqual({ order_no: UNICODE('order no') });
    }
    const batch = await rawPost(
      '/orders/batch',
      token,
      '{"orders":[{"order_no":"C-\\ud800","amount":"1","customer_email":"u@example.com"},{"order_no":"C-\\ud801","amount":"1","customer_email":"u@example.com"}]}',
    );
    expect(batch.status).toBe(200);
    expect(batch.body.data).toMatchObject({ created: 0, failed: 2 });
    expect(batch.body.data.results.failed[0]).toMatchObject({
      reason: 'validation_error',
      message: 'The order no field must be valid Unicode text.',
      identifier: 'C-\ud800',
    });
    // A surrogate pair (an emoji) is valid text, accepted and reachable.
    const emoji = await rawPost('/orders', token, '{"order_no":"E-\\ud83d\\ude00","amount":"1","customer_email":"u@example.com"}');
    expect(emoji.status).toBe(201);
    expect((await api.get(`/orders/${encodeURIComponent('E-😀')}`, token)).body.data.order_no).toBe('E-😀');
    expect((await api.get('/orders', token)).body.meta.total).toBe(1);
  });

  it('an external_id that no path can reach is refused: a lone surrogate, "." or ".."', async () => {
    const { token } = await newMerchant();
    const dots = ['The external id field must not be "." or "..".'];
    for (const [externalId, errors] of [
      ['.', dots],
      ['..', dots],
      ['\\ud800', UNICODE('external id')],
      ['x\\udfff', UNICODE('external id')],
    ] as const) {
      const r = await rawPost('/customers', token, `{"email":"e@example.com","external_id":"${externalId}"}`);
      expect(r.status, externalId).toBe(422);
      expect(r.body.errors, externalId).toEqual({ external_id: errors });
    }
    const c = await api.post('/customers', token, { email: 'e@example.com', external_id: '...' });
    expect(c.status).toBe(201);
    expect((await api.get('/customers/...', token)).body.data.id).toBe(c.body.data.id);
    const put = await rawPut(`/customers/${c.body.data.id}`, token, '{"external_id":".."}');
    expect(put.status).toBe(422);
    expect(put.body.errors).toEqual({ external_id: dots });
    const putSurrogate = await rawPut(`/customers/${c.body.data.id}`, token, '{"external_id":"\\udc00"}');
    expect(putSurrogate.body.errors).toEqual({ external_id: UNICODE('external id') });
    const batch = await rawPost(
      '/customers/batch',
      token,
      '{"customers":[{"email":"b1@example.com","external_id":"."},{"email":"b2@example.com","external_id":"\\ud800"}]}',
    );
    expect(batch.body.data).toMatchObject({ created: 0, failed: 2 });
    expect(batch.body.data.results.failed.map((f: { message: string }) => f.message)).toEqual([dots[0], UNICODE('external id')[0]]);
    expect((await api.get('/customers', token)).body.meta.total).toBe(1);
  });

  it('a name, phone or customer_name with a lone surrogate or a control character is refused with 422 on that field, nothing stored', async () => {
    const { token } = await newMerchant();
    const CONTROL = 'must not contain control characters (such as NUL or a line break).';
    for (const [body, field, message] of [
      ['{"email":"t1@example.com","name":"x\\ud800y"}', 'name', 'The name field must be valid Unicode text.'],
      ['{"email":"t1@example.com","phone":"\\udc00"}', 'phone', 'The phone field must be valid Unicode text.'],
      ['{"email":"t1@example.com","name":"a\\u0000b"}', 'name', `The name field ${CONTROL}`],
    ] as const) {
      const c = await rawPost('/customers', token, body);
      expect(c.status, body).toBe(422);
      expect(c.body.errors, body).toEqual({ [field]: [message] });
    }
    const o = await rawPost(
      '/orders',
      token,
      '{"order_no":"T-1","amount":"1","customer_email":"t3@example.com","customer_name":"n\\udfff"}',
    );
    expect(o.status).toBe(422);
    expect(o.body.errors).toEqual({ customer_name: ['The customer name field must be valid Unicode text.'] });
    expect((await api.get('/customers', token)).body.meta.total).toBe(0);
    expect((await api.get('/orders/T-1', token)).status).toBe(404);
    // Text that is well formed, astral characters included, is stored and returned as sent.
    const fine = await rawPost('/customers', token, '{"email":"t2@example.com","name":"x\\ud83d\\ude00y"}');
    expect(fine.status).toBe(201);
    expect((await api.get(`/customers/${fine.body.data.id}`, token)).body.data.name).toBe('x😀y');
  });

  it('a plan name or cancellation reason with a lone surrogate is refused: both are parts of table keys (plan and reason figures)', async () => {
    const { token } = await newMerchant();
    const customer = (await api.post('/customers', token, { email: 'plan@example.com' })).body.data.id;
    const bad = await rawPost(
      '/subscriptions',
      token,
      `{"customer_id":${customer},"plan_name":"P\\udfff\\ud800","mrr":"10","billing_cycle":"monthly"}`,
    );
    expect(bad.status, JSON.stringify(bad.body)).toBe(422);
    expect(bad.body.errors).toEqual({ plan_name: UNICODE('plan name') });
    const sub = await api.post('/subscriptions', token, { customer_id: customer, plan_name: 'P', mrr: '10', billing_cycle: 'monthly' });
    expect(sub.status).toBe(201);
    const renamed = await rawPut(`/subscriptions/${sub.body.data.id}`, token, '{"mrr":"20.00","plan_name":"\\udfff\\ud800"}');
    expect(renamed.status, JSON.stringify(renamed.body)).toBe(422);
    expect(renamed.body.errors).toEqual({ plan_name: UNICODE('plan name') });
    const cancel = await rawPut(`/subscriptions/${sub.body.data.id}/cancel`, token, '{"reason":"\\ud800"}');
    expect(cancel.status, JSON.stringify(cancel.body)).toBe(422);
    expect(cancel.body.errors).toEqual({ reason: UNICODE('reason') });
    // Nothing stored for the refused requests.
    expect((await api.get(`/subscriptions/${sub.body.data.id}`, token)).body.data).toMatchObject({
      plan_name: 'P',
      mrr: '10.00',
      status: 'active',
    });
  });

  it('query date bounds refuse year 0000 like body timestamps do', async () => {
    const { token } = await newMerchant();
    for (const [param, value] of [
      ['start_date', '0000-01-01'],
      ['end_date', '0000-12-31'],
      ['start_date', '0000-02-29'],
      ['end_date', '0000-12-31T23:59:59Z'],
    ]) {
      const r = await api.get(`/orders?${param}=${value}`, token);
      expect(r.status, `${param}=${value}`).toBe(422);
      expect(Object.keys(r.body.errors), `${param}=${value}`).toEqual([param]);
    }
    expect((await api.get('/orders?start_date=0001-01-01&end_date=9999-12-31', token)).status).toBe(200);
  });
});
