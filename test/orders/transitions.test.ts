import { afterEach, describe, expect, it } from 'vitest';
import { fixedClock, resetClock } from '#lib/clock';
import { newMerchant, useApi } from '../support/api.ts';
import { NOT_FOUND, createOrder, expect422, outboxEvents, outboxFor } from './helpers.ts';

const api = useApi();
afterEach(() => resetClock());

const STATUSES = ['pending', 'paid', 'failed', 'refunded', 'cancelled'] as const;
type Status = (typeof STATUSES)[number];
const ALLOWED: [Status, Status][] = [
  ['pending', 'paid'],
  ['pending', 'failed'],
  ['pending', 'cancelled'],
  ['failed', 'paid'],
  ['failed', 'cancelled'],
  ['paid', 'refunded'],
];
const STAMP: Partial<Record<Status, string>> = { paid: 'paid_at', failed: 'failed_at', refunded: 'refunded_at' };
const T0 = '2026-07-01T08:00:00Z';
const T1 = '2026-07-02T09:30:00Z';

describe('PATCH /orders/{orderNo}', () => {
  it('every allowed move fills its timestamp, keeps the others and emits order.<status>', async () => {
    const clock = fixedClock(T0);
    const { merchantId, token } = await newMerchant();
    const created = await Promise.all(ALLOWED.map(([from]) => createOrder(api, token, { status: from })));
    clock.set(T1);
    for (const [i, [from, to]] of ALLOWED.entries()) {
      const before = created[i];
      const r = await api.patch(`/orders/${before.order_no}`, token, { status: to });
      expect(r.status, `${from}→${to} ${JSON.stringify(r.body)}`).toBe(200);
      const after = r.body.data;
      const field = STAMP[to];
      const stamps: Record<string, string | null> = {
        paid_at: before.paid_at,
        failed_at: before.failed_at,
        refunded_at: before.refunded_at,
      };
      if (field) stamps[field] = T1;
      expect(after, `${from}→${to}`).toEqual({ ...before, status: to, ...stamps, updated_at: T1 });
      expect((await api.get(`/orders/${before.order_no}`, token)).body.data).toEqual(after);

      const events = await outboxFor(merchantId, before.order_no);
      const patchEvents = events.filter((e) => e.created_at === T1);
      expect(
        patchEvents.map((e) => e.type),
        `${from}→${to}`,
      ).toEqual([`order.${to}`]);
      expect(patchEvents[0].data.object).toEqual(after);
    }
  });

  it('keeps supplied timestamps: converted from offsets, and an earlier stored one is not replaced', async () => {
    const clock = fixedClock(T0);
    const { merchantId, token } = await newMerchant();
    const a = await createOrder(api, token, { status: 'pending' });
    const b = await createOrder(api, token, { status: 'pending', paid_at: '2026-06-01T00:00:00Z' });
    const c = await createOrder(api, token, { status: 'paid' });
    clock.set(T1);
    const pa = await api.patch(`/orders/${a.order_no}`, token, {
      status: 'paid',
      paid_at: '2026-06-30T20:00:00-04:00',
      metadata: { via: 'patch' },
    });
    expect(pa.body.data).toMatchObject({ status: 'paid', paid_at: '2026-07-01T00:00:00Z', metadata: { via: 'patch' }, updated_at: T1 });
    const pb = await api.patch(`/orders/${b.order_no}`, token, { status: 'paid' });
    expect(pb.body.data.paid_at).toBe('2026-06-01T00:00:00Z');
    const pc = await api.patch(`/orders/${c.order_no}`, token, { status: 'refunded', refunded_at: '2026-07-01T12:00:00+02:00' });
    expect(pc.body.data).toMatchObject({ status: 'refunded', paid_at: T0, refunded_at: '2026-07-01T10:00:00Z' });
    const paid = (await outboxFor(merchantId, a.order_no)).find((e) => e.type === 'order.paid');
    expect(paid?.data.object).toEqual(pa.body.data);
  });

  it('every forbidden move (same status included) is a 422 on status and changes nothing', async () => {
    const clock = fixedClock(T0);
    const { merchantId, token } = await newMerchant();
    const forbidden = STATUSES.flatMap((from) =>
      STATUSES.filter((to) => !ALLOWED.some(([f, t]) => f === from && t === to)).map((to) => [from, to] as const),
    );
    expect(forbidden).toHaveLength(19);
    expect(forbidden).toContainEqual(['paid', 'pending']);
    const orders = new Map<Status, any>();
    for (const s of STATUSES) orders.set(s, await createOrder(api, token, { status: s, amount: '10', customer_email: 'same@example.com' }));
    const customerBefore = (await api.get(`/customers/${orders.get('paid').customer_id}`, token)).body.data;
    const statsBefore = (await api.get('/orders/stats', token)).body.data;
    const outboxBefore = (await outboxEvents(merchantId)).length;
    clock.set(T1);
    for (const [from, to] of forbidden) {
      const r = await api.patch(`/orders/${orders.get(from).order_no}`, token, { status: to, paid_at: '2026-07-02T00:00:00Z' });
      expect422(r, 'status');
    }
    for (const s of STATUSES) expect((await api.get(`/orders/${orders.get(s).order_no}`, token)).body.data).toEqual(orders.get(s));
    expect((await api.get(`/customers/${customerBefore.id}`, token)).body.data).toEqual(customerBefore);
    clock.set(T0);
    expect((await api.get('/orders/stats', token)).body.data).toEqual(statsBefore);
    expect((await outboxEvents(merchantId)).length).toBe(outboxBefore);
  });

  it('a chain pending → failed → paid → refunded, then nothing more', async () => {
    const clock = fixedClock(T0);
    const { token } = await newMerchant();
    const o = await createOrder(api, token);
    const steps: [string, Status][] = [
      ['2026-07-01T09:00:00Z', 'failed'],
      ['2026-07-01T10:00:00Z', 'paid'],
      ['2026-07-01T11:00:00Z', 'refunded'],
    ];
    for (const [at, status] of steps) {
      clock.set(at);
      expect((await api.patch(`/orders/${o.order_no}`, token, { status })).status).toBe(200);
    }
    const final = (await api.get(`/orders/${o.order_no}`, token)).body.data;
    expect(final).toMatchObject({
      status: 'refunded',
      failed_at: '2026-07-01T09:00:00Z',
      paid_at: '2026-07-01T10:00:00Z',
      refunded_at: '2026-07-01T11:00:00Z',
    });
    for (const s of STATUSES) expect422(await api.patch(`/orders/${o.order_no}`, token, { status: s }), 'status');
  });

  it('concurrent PATCHes of one order: one move wins, the rest see the new status', async () => {
    fixedClock(T0);
    const { merchantId, token } = await newMerchant();
    const o = await createOrder(api, token, { amount: '15.50' });
    const results = await Promise.all(Array.from({ length: 10 }, () => api.patch(`/orders/${o.order_no}`, token, { status: 'paid' })));
    expect(results.filter((r) => r.status === 200)).toHaveLength(1);
    for (const r of results.filter((x) => x.status !== 200)) expect422(r, 'status');
    expect((await outboxFor(merchantId, o.order_no)).map((e) => e.type).sort()).toEqual(['order.created', 'order.paid']);
    expect((await api.get(`/customers/${o.customer_id}`, token)).body.data).toMatchObject({ ltv: '15.50', order_count: 1 });
    expect((await api.get('/orders/stats', token)).body.data).toEqual({
      today_revenue: '15.50',
      monthly_revenue: '15.50',
      today_count: 1,
      today_success_rate: 100,
    });

    // Racing moves to different targets: every success is an allowed step of one chain.
    const p = await createOrder(api, token, { amount: '1' });
    const targets: Status[] = ['paid', 'failed', 'cancelled', 'paid', 'failed', 'cancelled'];
    const raced = await Promise.all(targets.map((status) => api.patch(`/orders/${p.order_no}`, token, { status })));
    for (const r of raced) expect([200, 422]).toContain(r.status);
    const moves = (await outboxFor(merchantId, p.order_no)).filter((e) => e.type !== 'order.created');
    expect(moves).toHaveLength(raced.filter((r) => r.status === 200).length);
    // The only chains these targets allow from pending; a failed step can only come first.
    const reached = moves.map((e) => e.type.slice('order.'.length)).sort((a, b) => Number(b === 'failed') - Number(a === 'failed'));
    expect([['paid'], ['failed'], ['cancelled'], ['failed', 'paid'], ['failed', 'cancelled']]).toContainEqual(reached);
    expect((await api.get(`/orders/${p.order_no}`, token)).body.data.status).toBe(reached.at(-1));
  });

  it('unknown order is a 404; invalid bodies are a 422 on the field', async () => {
    const { token } = await newMerchant();
    const other = await newMerchant();
    const o = await createOrder(api, token);
    const unknown = await api.patch('/orders/NOPE-1', token, { status: 'paid' });
    expect(unknown.status).toBe(404);
    expect(unknown.body).toEqual(NOT_FOUND);
    const foreign = await api.patch(`/orders/${o.order_no}`, other.token, { status: 'paid' });
    expect(foreign.status).toBe(404);
    expect422(await api.patch(`/orders/${o.order_no}`, token, {}), 'status');
    expect422(await api.patch(`/orders/${o.order_no}`, token, { status: 'shipped' }), 'status');
    expect422(await api.patch(`/orders/${o.order_no}`, token, { status: 'paid', paid_at: 'yesterday' }), 'paid_at');
    expect422(await api.patch(`/orders/${o.order_no}`, token, { status: 'paid', metadata: [1] }), 'metadata');
    expect((await api.get(`/orders/${o.order_no}`, token)).body.data).toEqual(o);
  });
});
