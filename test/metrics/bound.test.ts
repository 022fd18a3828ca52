import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { afterEach, describe, expect, it } from 'vitest';
import { fixedClock, resetClock } from '#lib/clock';
import { db, tableName } from '#lib/db/client';
import { metricsPartition, shardPartitions } from '#lib/db/keys';
import { queryAll } from '#lib/db/query';
import { applyPending } from '#lib/db/writes';
import { pendingHome } from '#lib/metrics/store';
import { repairCustomer } from '#lib/customers/repair';
import { rebuildMerchantAggregates } from '#lib/metrics/rebuild';
import { newMerchant, useApi } from '../support/api.ts';
import { expectedCohorts, expectedSeries, refSetAt, refSetFrom, type RefCustomer } from './reference.ts';

/**
 * No change is too far back. A change that reclassifies more of a customer's history than one
 * transaction can move (here: 100 movements on 100 distinct days turned from reactivation/churn
 * into nothing, and the customer's cohort moved) is accepted: the moves that do not fit wait as
 * pending-moves items written in the same transaction, which every read adds in and a follow-up
 * transaction applies and deletes exactly once. The figures equal the recomputation right after.
 */
const api = useApi();
afterEach(() => resetClock());

const pendingItems = async (merchantId: string) =>
  (
    await Promise.all(
      shardPartitions(metricsPartition(merchantId)).map((partition) =>
        queryAll<{ pk: string; sk: string }>({ partition, from: 'M#0000-00#P', to: 'M#0000-00#P~' }, ['pk', 'sk']),
      ),
    )
  ).flat();

describe('a back-dated change reclassifying more than one transaction can hold', () => {
  it('is accepted, and every figure equals the recomputation on the next read', { timeout: 120_000 }, async () => {
    fixedClock('2024-06-01T00:00:00Z');
    const { token, merchantId } = await newMerchant();
    const customer = (await api.post('/customers', token, { email: 'far@bound.test', name: 'F' })).body.data.id;
    const ref: RefCustomer = { lines: new Map() };
    const day = (i: number) => `${new Date(Date.parse('2024-01-01T00:00:00Z') + i * 86_400_000).toISOString().slice(0, 19)}Z`;
    const events = Array.from({ length: 100 }, (_, i) => ({
      customer_id: customer,
      event_type: i % 2 ? 'cancel' : 'reactivated',
      old_amount: i % 2 ? '10' : '0',
      new_amount: i % 2 ? '0' : '10',
      occurred_at: day(i),
    }));
    for (const e of events) {
      expect((await api.post('/subscriptions/events', token, e)).status).toBe(201);
      refSetAt(ref, 'I', e.occurred_at, e.new_amount, e.new_amount === '0' ? 'c' : 'a');
    }
    const series = async () => (await api.get('/metrics/mrr?start_date=2023-12-01&end_date=2024-05-31&interval=day', token)).body.data;
    expect((await series()).filter((e: { churn: string }) => e.churn === '-10.00')).toHaveLength(50);

    // A subscription from before all of it: the imported line ends there, so its 100 movements go, and the cohort moves.
    const counted = await api.counted('POST', '/subscriptions', {
      token,
      body: { customer_id: customer, plan_name: 'P', mrr: '5', billing_cycle: 'monthly', started_at: '2023-12-01T00:00:00Z' },
    });
    const sub = counted.res;
    expect(sub.status, JSON.stringify(sub.body)).toBe(201);
    // More moves than one transaction holds: the change, then the follow-up that applies the rest.
    expect(counted.byCommand.TransactWriteItemsCommand ?? counted.byCommand.TransactWriteCommand).toBeGreaterThanOrEqual(2);
    refSetFrom(ref, `S${sub.body.data.id}`, '2023-12-01T00:00:00Z', 5, 'a');
    // A yearly order paid then, through POST /orders and the batch: accepted too.
    const order = await api.post('/orders', token, {
      order_no: 'FAR-1',
      amount: '120',
      customer_email: 'far@bound.test',
      status: 'paid',
      billing_cycle: 'yearly',
      paid_at: '2023-12-15T00:00:00Z',
    });
    expect(order.status, JSON.stringify(order.body)).toBe(201);
    refSetFrom(ref, 'OFAR-1', '2023-12-15T00:00:00Z', 10, 'o');
    refSetAt(ref, 'OFAR-1', '2024-12-15T00:00:00Z', 0, 'o');
    const batch = await api.post('/orders/batch', token, {
      orders: [
        {
          order_no: 'FAR-2',
          amount: '120',
          customer_email: 'far@bound.test',
          status: 'paid',
          billing_cycle: 'yearly',
          paid_at: '2023-12-20T00:00:00Z',
        },
      ],
    });
    expect(batch.body.data.created).toBe(1);
    refSetFrom(ref, 'OFAR-2', '2023-12-20T00:00:00Z', 10, 'o');
    refSetAt(ref, 'OFAR-2', '2024-12-20T00:00:00Z', 0, 'o');

    const got = await series();
    const want = expectedSeries([ref], '2023-12-01', '2024-05-31', 'day').data;
    expect(got.map((p: Record<string, string>) => [p.date, p.mrr, p.new, p.reactivation, p.churn, p.expansion, p.contraction])).toEqual(
      want.map((p) => [p.date, p.mrr, p.new, p.reactivation, p.churn, p.expansion, p.contraction]),
    );
    const cohorts = (await api.get('/metrics/cohorts?start_month=2023-12&end_month=2024-05', token)).body.data;
    expect(cohorts.map((c: { cohort: string; customers: number; mrr: string }) => [c.cohort, c.customers, c.mrr])).toEqual(
      expectedCohorts([ref], '2023-12', '2024-05', '2024-06').map((c) => [c.cohort, c.customers, c.mrr]),
    );
    // The single writes applied theirs after the commit; the batch left its moves as pending items
    // for the applier (the table stream). Applying them, as it does, changes no figure and leaves none.
    const left = await pendingItems(merchantId);
    expect(left.length).toBeGreaterThan(0);
    for (const { pk, sk } of left) expect(await applyPending({ pk, sk })).toBe(true);
    expect(await pendingItems(merchantId)).toEqual([]);
    expect(await series()).toEqual(got);
  });

  it('a pending move not applied yet (its follow-up failed) is read in, and applied exactly once', async () => {
    fixedClock('2024-06-01T00:00:00Z');
    const { token, merchantId } = await newMerchant();
    const customer = (await api.post('/customers', token, { email: 'p@bound.test', name: 'P' })).body.data.id;
    await api.post('/subscriptions', token, {
      customer_id: customer,
      plan_name: 'P',
      mrr: '100',
      billing_cycle: 'monthly',
      started_at: '2024-02-10T00:00:00Z',
    });
    const before = (await api.get('/metrics/mrr?start_date=2024-01-01&end_date=2024-05-31', token)).body;
    // What a follow-up would have applied: the same month and day moved by +7 new, -7 (a net zero
    // across buckets would hide a misread, so it shifts one day into another month).
    const home = pendingHome(merchantId, 'D#2024-03-05', 0);
    const moves = [
      ['D#2024-03-05#00', { n: '7', ac: '1' }],
      ['M#2024-03#00', { n: '7', ac: '1' }],
    ];
    const key = { pk: home.pk, sk: `${home.sk}#P#test#000` };
    await db().send(new PutCommand({ TableName: tableName(), Item: { ...key, moves: JSON.stringify(moves) } }));
    const read = (await api.get('/metrics/mrr?start_date=2024-01-01&end_date=2024-05-31', token)).body;
    const march = (b: typeof read) => b.data.find((p: { date: string }) => p.date.startsWith('2024-03'));
    expect(march(read).new).toBe('7.00');
    expect(march(read).mrr).toBe('107.00');
    expect(read.data.at(-1).mrr).toBe('107.00');
    const daily = (await api.get('/metrics/mrr?start_date=2024-03-01&end_date=2024-03-31&interval=day', token)).body.data;
    expect(daily.find((p: { date: string }) => p.date === '2024-03-05').new).toBe('7.00');

    // Applied (moves and deletion in one transaction) by whoever comes first, once: the figures are what they were read as.
    expect(await applyPending(key)).toBe(true);
    expect(await applyPending(key)).toBe(false);
    expect(await pendingItems(merchantId)).toEqual([]);
    expect((await api.get('/metrics/mrr?start_date=2024-01-01&end_date=2024-05-31', token)).body.data).toEqual(read.data);

    // These moves had no timeline behind them (written by hand): the rebuild takes them out again.
    await db().send(new PutCommand({ TableName: tableName(), Item: { ...key, moves: JSON.stringify(moves) } }));
    const report = await rebuildMerchantAggregates(merchantId, repairCustomer);
    expect(report.pending_moves_applied).toBe(1);
    expect(await pendingItems(merchantId)).toEqual([]);
    expect((await api.get('/metrics/mrr?start_date=2024-01-01&end_date=2024-05-31', token)).body.data).toEqual(before.data);
  });
});
