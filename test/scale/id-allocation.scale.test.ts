import { afterEach, describe, expect, it } from 'vitest';
import { newMerchant, useApi } from '../support/api.ts';
import { transactionConflictModel, type TransactionConflictModel } from '../support/faults.ts';
import { allPages } from '../support/pages.ts';

/**
 * Id allocation never meets another write of the merchant: order batches allocate their ids while
 * subscription changes run, under AWS's transaction isolation (the conflict model holds every item
 * a transaction names while it is in flight, and fails a single write on a held item). No
 * transaction names a sequence item, so no allocation fails and no batch item answers `conflict`.
 */
const api = useApi();
let model: TransactionConflictModel | undefined;
afterEach(() => model?.uninstall());

const BATCHES = 12;
const ORDERS_PER_BATCH = 20;
const SUBSCRIPTIONS = 12;
const CHANGES_PER_SUBSCRIPTION = 10;

describe('id allocation under concurrent subscription changes', () => {
  it(`${BATCHES} concurrent order batches while ${SUBSCRIPTIONS} subscriptions change ${CHANGES_PER_SUBSCRIPTION} times each: nothing refused`, async () => {
    const { token } = await newMerchant();
    const subscriptions: number[] = [];
    for (let i = 0; i < SUBSCRIPTIONS; i++) {
      const customer = (await api.post('/customers', token, { email: `s${i}@ids.test` })).body.data.id;
      const created = await api.post('/subscriptions', token, {
        customer_id: customer,
        plan_name: 'Pro',
        mrr: '10.00',
        billing_cycle: 'monthly',
      });
      expect(created.status).toBe(201);
      subscriptions.push(created.body.data.id);
    }
    // Transactions stay in flight 20 ms, so the writes below overlap as they would at AWS's latency.
    model = transactionConflictModel({ holdMs: 20 });
    const batches = Array.from({ length: BATCHES }, (_, b) =>
      api.post('/orders/batch', token, {
        orders: Array.from({ length: ORDERS_PER_BATCH }, (_, i) => ({
          order_no: `B${b}-${i}`,
          amount: '5.00',
          status: 'paid',
          customer_email: `b${b}-${i % 4}@ids.test`,
        })),
      }),
    );
    const changes = subscriptions.map(async (id) => {
      const statuses: number[] = [];
      // More changes than a subscription's held block of event ids: the block is taken again midway.
      for (let n = 0; n < CHANGES_PER_SUBSCRIPTION; n++)
        statuses.push((await api.put(`/subscriptions/${id}`, token, { mrr: `${11 + n}.00` })).status);
      return statuses;
    });
    const [batchAnswers, changeAnswers] = await Promise.all([Promise.all(batches), Promise.all(changes)]);

    const items = batchAnswers.flatMap((r) => {
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      return r.body.data.results ?? r.body.data;
    });
    const failed = items.filter(
      (i: { status?: string; error?: unknown }) => i.error || (i.status && !['created', 'duplicate'].includes(i.status)),
    );
    expect(failed, JSON.stringify(failed.slice(0, 3))).toEqual([]);
    expect(changeAnswers.flat().filter((s) => s !== 200)).toEqual([]);
    // The model did see contention (so the assertions above are not vacuous), none of it on a sequence.
    expect(model.stats.transactions).toBeGreaterThan(BATCHES + SUBSCRIPTIONS * CHANGES_PER_SUBSCRIPTION);
    expect(Object.keys(model.stats.conflictsByItem).filter((k) => /\bSEQ\b/.test(k))).toEqual([]);
    expect(model.stats.singleWriteConflicts).toBe(0);

    // Every id is distinct: orders and subscription events alike.
    const orderIds = items.map((i: { id?: number; data?: { id: number } }) => i.id ?? i.data?.id).filter((x: unknown) => x !== undefined);
    expect(new Set(orderIds).size).toBe(orderIds.length);
    const { items: events } = await allPages(api, token, '/subscriptions/events');
    expect(events.length).toBe(SUBSCRIPTIONS * (1 + CHANGES_PER_SUBSCRIPTION));
    expect(new Set(events.map((e: { id: number }) => e.id)).size).toBe(events.length);
  }, 300_000);
});
