import type { InitializeMiddleware, MetadataBearer } from '@smithy/types';
import { afterEach, describe, expect, it } from 'vitest';
import { fixedClock, resetClock } from '#lib/clock';
import { db } from '#lib/db/client';
import { applyPending } from '#lib/db/writes';
import { asFunction, WORKER_FUNCTIONS } from '#lib/shared/invocation';
import { newMerchant, useApi } from '../support/api.ts';
import { pendingItemsOf } from '../support/pending-items.ts';
import { createOrder } from '../orders/helpers.ts';

/**
 * A metrics answer sees every write whole (docs/metrics.md, "What a read sees while writes land"):
 * a commit that lands between a read's Queries (after the month roll-ups, before the days) is in
 * all of the answer or in none of it. Without the figures' versions around the Queries, the first
 * case below counts the applied moves twice (once as pending in the months' Query, once in the
 * days they moved to), the second churns a back-dated order in the range's days without counting
 * it in the month before.
 */
const api = useApi();
let uninstall: (() => void) | undefined;
afterEach(() => {
  uninstall?.();
  uninstall = undefined;
  resetClock();
});

type QueryInput = { KeyConditionExpression?: string; ExpressionAttributeValues?: Record<string, unknown> };
const rangeOf = (input: QueryInput, merchantId: string): 'months' | 'days' | null => {
  const values = Object.values(input.ExpressionAttributeValues ?? {}).map(String);
  if (
    !values.some(
      (v) => v.startsWith(`M#${merchantId}#MRR`) || v.startsWith(`M#${merchantId}#COHORT`) || v.startsWith(`M#${merchantId}#CHURN`),
    )
  )
    return null;
  if (!input.KeyConditionExpression?.includes('BETWEEN')) return null;
  if (values.includes('M#')) return 'months';
  return values.some((v) => v.startsWith('D#')) ? 'days' : null;
};

/**
 * Lets the read's first Queries of `first` ranges go, holds every other range Query of the
 * merchant's aggregates until they have all answered and `between` (a commit) has run, then lets
 * everything through (a read repeated afterwards goes freely). Counts the figures-version reads.
 */
const commitBetweenQueries = (merchantId: string, first: 'months', firstCount: number, between: () => Promise<void>) => {
  const seen = { first: 0, versionReads: 0, injected: false };
  let release!: () => void;
  const released = new Promise<void>((r) => {
    release = r;
  });
  let firstDone = 0;
  const name = `between-${Math.random().toString(36).slice(2, 8)}`;
  const middleware: InitializeMiddleware<any, MetadataBearer> = (next, context) => async (args) => {
    const op = String(context.commandName ?? '').replace(/Command$/, '');
    if (op === 'BatchGetItem') {
      const keys = Object.values((args.input as { RequestItems: Record<string, { Keys: { pk: string }[] }> }).RequestItems).flatMap(
        (r) => r.Keys,
      );
      if (keys.some((k) => k.pk.startsWith(`M#${merchantId}#FIGURES#`))) seen.versionReads++;
      return next(args);
    }
    if (op !== 'Query' || seen.injected) return next(args);
    const range = rangeOf(args.input as QueryInput, merchantId);
    if (range === null) return next(args);
    if (range === first && seen.first < firstCount) {
      seen.first++;
      const out = await next(args);
      if (++firstDone === firstCount) {
        await between();
        seen.injected = true;
        release();
      }
      return out;
    }
    await released;
    return next(args);
  };
  db().middlewareStack.add(middleware as never, { step: 'initialize', priority: 'low', name });
  uninstall = () => db().middlewareStack.remove(name);
  return seen;
};

/** Every pending item of the whole applied, as the applier applies one (its function's grants checked). */
const applyAll = async (merchantId: string) => {
  const items = await pendingItemsOf(merchantId);
  await asFunction(WORKER_FUNCTIONS.pendingMovesApplier, async () => {
    for (const { pk, sk } of items) expect(await applyPending({ pk, sk })).toBe(true);
  })();
};

const DAILY = '/metrics/mrr?start_date=2026-09-15&end_date=2026-11-20&interval=day';

describe('a metrics read sees every write whole', () => {
  it('pending moves applied between the months Query and the days Queries are counted once', { timeout: 120_000 }, async () => {
    fixedClock('2026-11-20T12:00:00Z');
    const { merchantId, token } = await newMerchant();
    // A batch leaves its moves pending; each subscription starts inside the daily range.
    const subscriptions = Array.from({ length: 6 }, (_, i) => ({
      external_id: `one-${i}`,
      customer_email: `one-${i}@state.test`,
      plan_name: 'Pro',
      mrr: `${10 + i}.00`,
      billing_cycle: 'monthly',
      started_at: `2026-${i % 2 ? '10' : '09'}-${String(16 + i).padStart(2, '0')}T10:00:00Z`,
    }));
    const batch = await api.post('/subscriptions/batch', token, { subscriptions }, { 'idempotency-key': 'one-state' });
    expect(batch.status, JSON.stringify(batch.body)).toBe(200);
    expect((await pendingItemsOf(merchantId)).length).toBeGreaterThan(0);
    const before = (await api.get(DAILY, token)).body;
    expect(before.summary ?? before.data).toBeTruthy();

    // Every shard's months Query answers (pending items read in), then the applier commits them all.
    const seen = commitBetweenQueries(merchantId, 'months', 8, () => applyAll(merchantId));
    const during = await api.get(DAILY, token);
    uninstall?.();
    expect(during.status, JSON.stringify(during.body)).toBe(200);
    expect(seen.injected).toBe(true);
    // The shards that moved were read again: a third versions read at least.
    expect(seen.versionReads).toBeGreaterThanOrEqual(3);
    expect(during.body).toEqual(before);
    expect((await pendingItemsOf(merchantId)).length).toBe(0);
    expect((await api.get(DAILY, token)).body).toEqual(before);
  });

  it('a back-dated recurring order committed between the Queries is in the whole answer or none of it', { timeout: 120_000 }, async () => {
    fixedClock('2026-11-20T12:00:00Z');
    const { token, merchantId } = await newMerchant();
    await createOrder(api, token, {
      customer_email: 'a@state.test',
      status: 'paid',
      billing_cycle: 'monthly',
      paid_at: '2026-10-03T10:00:00Z',
    });
    const before = (await api.get(DAILY, token)).body;

    // Paid in August (its month roll-up, read before the commit), its period ending in September
    // (a day of the range, read after it): seen in part, the range would open without it and churn it.
    const seen = commitBetweenQueries(merchantId, 'months', 8, async () => {
      await createOrder(api, token, {
        customer_email: 'b@state.test',
        status: 'paid',
        billing_cycle: 'monthly',
        amount: '300.00',
        paid_at: '2026-08-20T10:00:00Z',
      });
    });
    const during = await api.get(DAILY, token);
    uninstall?.();
    expect(during.status, JSON.stringify(during.body)).toBe(200);
    expect(seen.injected).toBe(true);
    expect(seen.versionReads).toBeGreaterThanOrEqual(3);
    const after = (await api.get(DAILY, token)).body;
    expect(after).not.toEqual(before);
    expect([before, after]).toContainEqual(during.body);
  });
});
