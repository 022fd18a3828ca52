import Decimal from 'decimal.js';
import { describe, expect, it } from 'vitest';
import { refusal } from '../support/refusal.ts';
import type { OrderItem } from '#lib/orders/model';
import { ORDER_STATUSES } from '#lib/orders/schemas';
import {
  canTransition,
  changed,
  createdWebhooks,
  decide,
  dropEmpty,
  fillStatusTimestamp,
  foldImportItem,
  importUnchanged,
  missingForNew,
  newOrder,
  stats,
  revenueCurrencies,
  withOrderDefaults,
} from '#lib/orders/rules';

/** The order's rules (docs/orders.md), decided in memory: no database, no HTTP. */
const NOW = '2026-05-01T12:00:00Z';
const order = (over: Partial<OrderItem> = {}): OrderItem => ({
  pk: 'p',
  sk: 's',
  ...newOrder(4, 9, { order_no: 'A-1', amount: '100.00', customer_email: 'a@example.com' }, 'api', '2026-04-01T00:00:00Z'),
  ...over,
});

describe('order status transitions', () => {
  it('allows exactly the documented moves', () => {
    const allowed = ORDER_STATUSES.flatMap((from) => ORDER_STATUSES.filter((to) => canTransition(from, to)).map((to) => `${from}→${to}`));
    expect(allowed.sort()).toEqual(
      ['failed→cancelled', 'failed→paid', 'paid→refunded', 'pending→cancelled', 'pending→failed', 'pending→paid'].sort(),
    );
    // No status moves to itself, and refunded and cancelled are final.
    for (const s of ORDER_STATUSES) expect(canTransition(s, s)).toBe(false);
  });

  it("fills the reached status's time when none is given, and never overwrites a given one", () => {
    const order = { status: 'paid' as const, paid_at: null, refunded_at: null, failed_at: null };
    expect(fillStatusTimestamp(order, '2026-05-01T00:00:00Z').paid_at).toBe('2026-05-01T00:00:00Z');
    expect(fillStatusTimestamp({ ...order, paid_at: '2026-04-01T00:00:00Z' }, '2026-05-01T00:00:00Z').paid_at).toBe('2026-04-01T00:00:00Z');
    expect(fillStatusTimestamp({ ...order, status: 'pending' as const }, '2026-05-01T00:00:00Z')).toEqual({ ...order, status: 'pending' });
  });
});

describe('decide: a status change', () => {
  it('plans the move with its webhook; given times and metadata ride along', () => {
    const plan = decide(order(), { status: 'paid', paid_at: '2026-04-30T00:00:00Z', metadata: '{"a":1}' } as never);
    expect(plan).toEqual({ changes: { status: 'paid', paid_at: '2026-04-30T00:00:00Z', metadata: '{"a":1}' }, webhook: 'order.paid' });
    expect(decide(order({ status: 'paid' }), { status: 'refunded' } as never)).toEqual({
      changes: { status: 'refunded' },
      webhook: 'order.refunded',
    });
  });

  it('refuses a move the machine does not allow, naming both statuses', () => {
    expect(refusal(() => decide(order({ status: 'refunded' }), { status: 'paid' } as never))).toEqual({
      status: ['The order cannot move from refunded to paid.'],
    });
  });

  it('a change fills the reached status time with now and moves the version on', () => {
    const next = changed(order(), { status: 'paid' }, NOW);
    expect(next).toMatchObject({ status: 'paid', paid_at: NOW, updated_at: NOW, version: 2 });
  });
});

describe('a new order', () => {
  it('takes the documented defaults; its status time is its own date', () => {
    const fresh = newOrder(1, 2, { order_no: 'N', amount: '5.00', customer_email: 'x@example.com' }, 'api', NOW);
    expect(fresh).toMatchObject({
      currency: 'TWD',
      status: 'pending',
      billing_cycle: 'one-time',
      payment_method: null,
      metadata: null,
      version: 1,
    });
    expect([fresh.paid_at, fresh.refunded_at, fresh.failed_at, fresh.created_at, fresh.updated_at]).toEqual([null, null, null, NOW, NOW]);
    const imported = newOrder(
      1,
      2,
      { order_no: 'N', amount: '5.00', customer_email: 'x@example.com', status: 'paid' },
      'import',
      NOW,
      '2025-01-01T00:00:00Z',
    );
    expect(imported).toMatchObject({ created_at: '2025-01-01T00:00:00Z', paid_at: '2025-01-01T00:00:00Z', updated_at: NOW });
  });

  it('a paid one has order.created and order.paid; equal requests hash equally with their defaults', () => {
    expect(createdWebhooks({ status: 'paid' })).toEqual(['order.created', 'order.paid']);
    expect(createdWebhooks({ status: 'pending' })).toEqual(['order.created']);
    expect(withOrderDefaults({ order_no: 'N', amount: '5.00', customer_email: 'x@example.com', currency: null })).toMatchObject({
      currency: 'TWD',
      status: 'pending',
      metadata: null,
    });
  });
});

describe('an import item', () => {
  it('empty fields leave the stored value alone; a new order_no needs an amount and an email', () => {
    expect(dropEmpty({ order_no: 'A', amount: '', metadata: {}, status: null, currency: 'JPY' })).toEqual({
      order_no: 'A',
      currency: 'JPY',
    });
    expect(missingForNew({ order_no: 'A' })).toBe('The amount field is required.');
    expect(missingForNew({ order_no: 'A', amount: '1.00' })).toBe('The customer email field is required.');
    expect(missingForNew({ order_no: 'A', amount: '1.00', customer_email: 'a@example.com' })).toBeNull();
  });

  it('folds its fields into the order, its status time at its own date', () => {
    const next = foldImportItem(order(), { order_no: 'A-1', status: 'paid', created_at: '2026-03-01T00:00:00Z' }, NOW);
    expect(next).toMatchObject({ status: 'paid', paid_at: '2026-03-01T00:00:00Z', created_at: '2026-03-01T00:00:00Z', version: 1 });
  });

  it('refuses an amount and a currency that no longer agree, blaming the one the item gives', () => {
    expect(refusal(() => foldImportItem(order({ amount: '10.50' }), { order_no: 'A-1', currency: 'JPY' }, NOW))).toEqual({
      currency: ["The currency field cannot be JPY: the order's amount 10.50 has a fraction and JPY has no minor unit."],
    });
    expect(refusal(() => foldImportItem(order({ currency: 'JPY', amount: '10' }), { order_no: 'A-1', amount: '10.50' }, NOW))).toEqual({
      amount: ['The amount field must be a whole number in JPY, which has no minor unit.'],
    });
  });

  it('is unchanged when no field and not the customer moves', () => {
    const stored = order();
    expect(importUnchanged(stored, foldImportItem(stored, { order_no: 'A-1', amount: '100.00' }, NOW), 9)).toBe(true);
    expect(importUnchanged(stored, stored, 10)).toBe(false);
    expect(importUnchanged(stored, foldImportItem(stored, { order_no: 'A-1', status: 'failed' }, NOW), 9)).toBe(false);
  });
});

describe('figures and stats', () => {
  it("reads today's revenue, the month's and the success rate to one decimal, half up", () => {
    const day = { created: new Decimal(3), created_paid: new Decimal(2), rev_TWD: new Decimal('150.5') };
    expect(stats(day, { rev_TWD: new Decimal('900') }, 'TWD', 'TWD')).toEqual({
      data: { today_revenue: '150.50', monthly_revenue: '900.00', today_count: 3, today_success_rate: 66.7 },
      unconverted: {},
    });
    expect(stats({}, {}, 'USD', 'TWD')).toEqual({
      data: { today_revenue: '0.00', monthly_revenue: '0.00', today_count: 0, today_success_rate: 0 },
      unconverted: {},
    });
  });

  it('without a currency, the reporting currency counts the others at the rate given, exactly, and names those without one', () => {
    const day = { rev_TWD: new Decimal('100'), rev_USD: new Decimal('10.05'), rev_JPY: new Decimal('0') };
    const month = { rev_TWD: new Decimal('1000'), rev_USD: new Decimal('20.05'), rev_EUR: new Decimal('3') };
    // 10.05 × 31.555 = 317.12775 → 417.13 (half up at the end, not per currency); EUR has no rate.
    const r = stats(day, month, undefined, 'TWD', new Map([['USD', '31.555']]));
    expect(r.data).toMatchObject({ today_revenue: '417.13', monthly_revenue: '1632.68' });
    expect(r.unconverted).toEqual({ EUR: { today_revenue: '0.00', monthly_revenue: '3.00' } });
    expect(revenueCurrencies([day, month], 'TWD')).toEqual(['EUR', 'USD']);
    // A currency named is its own money alone, unconverted, leaving nothing out: the reporting one too.
    expect(stats(day, month, 'USD', 'TWD', new Map([['USD', '31.555']]))).toMatchObject({
      data: { today_revenue: '10.05', monthly_revenue: '20.05' },
      unconverted: {},
    });
    expect(stats(day, month, 'TWD', 'TWD', new Map([['USD', '31.555']]))).toMatchObject({
      data: { today_revenue: '100.00', monthly_revenue: '1000.00' },
      unconverted: {},
    });
  });
});
