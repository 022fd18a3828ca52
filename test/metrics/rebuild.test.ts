import { DeleteCommand, NumberValue, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { afterEach, describe, expect, it } from 'vitest';
import { fixedClock, resetClock } from '#lib/clock';
import { db, tableName } from '#lib/db/client';
import { cohortPartition, keys, metricsPartition, shardPartitions } from '#lib/db/keys';
import { queryAll } from '#lib/db/query';
import { repairCustomer } from '#lib/customers/repair';
import { rebuildMerchantAggregates } from '#lib/metrics/rebuild';
import { STORED_ATTR } from '#lib/metrics/rules';
import { addTimelineChange, readTimeline } from '#lib/metrics/store';
import type { Timeline } from '#lib/metrics/timeline';
import { WriteSet } from '#lib/db/writes';
import { newMerchant, ok, useApi } from '../support/api.ts';
import { ops } from '../support/cli.ts';

/**
 * `ops metrics rebuild`: a merchant whose aggregates were written in the earlier shape (year
 * items, no month roll-ups) and whose customers lack the search index keys reads back wrong; the
 * rebuild makes every figure what the writes had made it, and a second run changes nothing.
 */
const api = useApi();
afterEach(() => resetClock());

const MRR_ATTRS = ['pk', 'sk', ...Object.values(STORED_ATTR)];

/** Rewrites the merchant's month roll-ups as the earlier version stored them: year items. */
const toLegacyShape = async (merchantId: string) => {
  const months = (
    await Promise.all(
      shardPartitions(metricsPartition(merchantId)).map((partition) =>
        queryAll<Record<string, unknown>>({ partition, from: 'M#', to: 'M#~' }, MRR_ATTRS),
      ),
    )
  ).flat();
  for (const item of months) {
    const [, month, shard] = String(item.sk).split('#');
    const values = Object.values(STORED_ATTR).filter((a) => item[a] !== undefined);
    await db().send(
      new UpdateCommand({
        TableName: tableName(),
        Key: { pk: item.pk, sk: `Y#${month.slice(0, 4)}#${shard}` },
        UpdateExpression: `ADD ${values.map((_a, i) => `#a${i} :v${i}`).join(', ')}`,
        ExpressionAttributeNames: Object.fromEntries(values.map((a, i) => [`#a${i}`, a])),
        ExpressionAttributeValues: Object.fromEntries(values.map((a, i) => [`:v${i}`, NumberValue.from(String(item[a]))])),
      }),
    );
    await db().send(new DeleteCommand({ TableName: tableName(), Key: { pk: item.pk, sk: item.sk } }));
  }
  return months.length;
};

describe('ops metrics rebuild', () => {
  it('restores every figure of a merchant written in the earlier item shapes, and search; a second run changes nothing', {
    timeout: 120_000,
  }, async () => {
    const clock = fixedClock('2025-01-10T09:00:00Z');
    const { token, merchantId } = await newMerchant();
    const customer = async (email: string) => (await ok(api.post('/customers', token, { email, name: email }), 201)).data.id as number;
    const [a, b, c] = [await customer('a@rebuild.test'), await customer('b@rebuild.test'), await customer('c@rebuild.test')];
    const subA = (
      await ok(api.post('/subscriptions', token, { customer_id: a, plan_name: 'P', mrr: '100.00', billing_cycle: 'monthly' }), 201)
    ).data.id;
    clock.set('2025-02-17T09:00:00Z');
    await ok(api.post('/subscriptions', token, { customer_id: b, plan_name: 'P', mrr: '33.33', billing_cycle: 'yearly' }), 201);
    clock.set('2025-04-03T09:00:00Z');
    await ok(api.put(`/subscriptions/${subA}`, token, { mrr: '150.50' }));
    clock.set('2025-05-20T09:00:00Z');
    await ok(
      api.post('/orders', token, {
        order_no: 'R-1',
        amount: '1000.00',
        status: 'paid',
        billing_cycle: 'yearly',
        customer_email: 'c@rebuild.test',
      }),
      201,
    );
    clock.set('2025-07-09T09:00:00Z');
    await ok(api.put(`/subscriptions/${subA}/cancel`, token, {}));
    clock.set('2025-09-30T12:00:00Z');

    const reads = async () => ({
      monthly: (await ok(api.get('/metrics/mrr?start_date=2025-01-01&end_date=2025-09-30&interval=month', token))).data,
      midMonth: (await ok(api.get('/metrics/mrr?start_date=2025-02-10&end_date=2025-08-20&interval=month', token))).data,
      daily: (await ok(api.get('/metrics/mrr?start_date=2025-03-01&end_date=2025-06-30&interval=day', token))).data,
      summary: (await ok(api.get('/metrics/summary', token))).data,
      cohorts: (await ok(api.get('/metrics/cohorts?start_month=2025-01&end_month=2025-09', token))).data,
      search: (await ok(api.get('/customers?search=rebuild', token))).data.map((x: { id: number }) => x.id),
    });
    const before = await reads();
    expect(before.search).toEqual([c, b, a]);
    expect(before.monthly.at(-1).mrr).not.toBe('0.00');

    // The earlier shapes: year items instead of month roll-ups; one customer without search keys.
    expect(await toLegacyShape(merchantId)).toBeGreaterThan(0);
    await db().send(
      new UpdateCommand({ TableName: tableName(), Key: keys.customer(merchantId, b), UpdateExpression: 'REMOVE gsi4pk, gsi4sk' }),
    );
    const broken = await reads();
    expect(broken.monthly).not.toEqual(before.monthly);
    expect(broken.search).toEqual([c, a]);

    const report = await rebuildMerchantAggregates(merchantId, repairCustomer);
    expect(report).toMatchObject({
      customers_read: 3,
      timelines: 3,
      search_keys_added: 1,
      pending_moves_applied: 0,
      timelines_rederived: 0,
    });
    expect(report.year_items_removed).toBeGreaterThan(0);
    expect(report.aggregates_corrected).toBeGreaterThan(0);
    expect(await reads()).toEqual(before);
    for (const partition of shardPartitions(metricsPartition(merchantId)))
      expect(await queryAll({ partition, from: 'Y#', to: 'Y#~' }, ['sk'])).toEqual([]);

    // Nothing left to correct; the cohort and day items were right all along.
    expect(await rebuildMerchantAggregates(merchantId, repairCustomer)).toEqual({
      customers_read: 3,
      timelines: 3,
      aggregates_corrected: 0,
      year_items_removed: 0,
      search_keys_added: 0,
      pending_moves_applied: 0,
      timelines_rederived: 0,
      index_entries_added: 0,
      ltv_parts_written: 0,
    });
    expect(
      (await Promise.all(shardPartitions(cohortPartition(merchantId)).map((partition) => queryAll({ partition }, ['sk'])))).flat().length,
    ).toBeGreaterThan(0);
  });

  it('is an operator command: `ops metrics rebuild --merchant ID` prints the report; an unknown merchant is a 404 message', {
    timeout: 60_000,
  }, async () => {
    const { merchantId } = await newMerchant();
    const r = await ops('metrics', 'rebuild', '--merchant', merchantId);
    expect(r.code, r.stderr).toBe(0);
    expect(r.json).toEqual({
      customers_read: 0,
      timelines: 0,
      aggregates_corrected: 0,
      year_items_removed: 0,
      search_keys_added: 0,
      pending_moves_applied: 0,
      timelines_rederived: 0,
      index_entries_added: 0,
      ltv_parts_written: 0,
    });
    const missing = await ops('metrics', 'rebuild', '--merchant', 'mer_nobody');
    expect(missing.code).not.toBe(0);
    expect(missing.stderr).toContain('does not exist');
  });

  it('derives again the lines earlier rules left: a refunded recurring order whose past still counted, a deleted subscription still booked', async () => {
    fixedClock('2025-06-01T00:00:00Z');
    const { token, merchantId } = await newMerchant();
    const customer = (await ok(api.post('/customers', token, { email: 'old@rules.test', name: 'O' }), 201)).data.id as number;
    const sub = (
      await ok(
        api.post('/subscriptions', token, {
          customer_id: customer,
          plan_name: 'P',
          mrr: '50',
          billing_cycle: 'monthly',
          started_at: '2025-01-01T00:00:00Z',
        }),
        201,
      )
    ).data;
    await ok(
      api.post('/orders', token, {
        order_no: 'OLD-1',
        amount: '300',
        customer_email: 'old@rules.test',
        status: 'paid',
        billing_cycle: 'quarterly',
        paid_at: '2025-02-01T00:00:00Z',
      }),
      201,
    );
    await ok(api.patch('/orders/OLD-1', token, { status: 'refunded' }));
    await ok(api.del(`/subscriptions/${sub.id}`, token), 204);
    const now = await ok(api.get('/metrics/mrr?start_date=2025-01-01&end_date=2025-05-31', token));
    expect(now.data.every((p: { mrr: string }) => p.mrr === '0.00')).toBe(true);

    // What the earlier rules stored: the order counting until its refund, the deleted subscription still there; the aggregates to match.
    const state = await readTimeline(merchantId, customer);
    const old = {
      ...state.timeline,
      'OOLD-1': [
        ['2025-02-01T00:00:00Z', '100', 'o'],
        ['2025-03-10T00:00:00Z', '0', 'o'],
      ],
      [`S${sub.id}`]: [
        ['2025-01-01T00:00:00Z', '50', 'a'],
        ['2025-04-01T00:00:00Z', '0', 'c'],
      ],
    } as Timeline;
    const ws = new WriteSet();
    await addTimelineChange(ws, merchantId, { reportingCurrency: 'TWD', timezone: state.zone, generation: 0 }, customer, state, old);
    await ws.commit();
    expect((await ok(api.get('/metrics/mrr?start_date=2025-01-01&end_date=2025-05-31', token))).data[1].mrr).toBe('150.00');

    const report = await rebuildMerchantAggregates(merchantId, repairCustomer);
    expect(report).toMatchObject({ timelines_rederived: 1 });
    expect((await ok(api.get('/metrics/mrr?start_date=2025-01-01&end_date=2025-05-31', token))).data).toEqual(now.data);
    expect(await rebuildMerchantAggregates(merchantId, repairCustomer)).toMatchObject({ timelines_rederived: 0, aggregates_corrected: 0 });
  });
});
