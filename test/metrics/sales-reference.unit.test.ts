import { describe, expect, it } from 'vitest';
import { type RefOrder, refFirstOrders, refSales } from './sales-reference.ts';

/** The sales reference against figures worked out by hand. */
const order = (o: Partial<RefOrder> & Pick<RefOrder, 'order_no' | 'customer_id' | 'amount' | 'created_at'>): RefOrder => ({
  currency: 'TWD',
  status: 'paid',
  payment_method: 'credit_card',
  source: 'api',
  billing_cycle: 'one-time',
  paid_at: null,
  refunded_at: null,
  failed_at: null,
  ...o,
});

const ORDERS: RefOrder[] = [
  order({ order_no: 'A', customer_id: 1, amount: '100.00', created_at: '2026-01-10T02:00:00Z', paid_at: '2026-01-10T03:00:00Z' }),
  // Taipei's 1 February: the February rate (32); refunded in March, which has no rate.
  order({
    order_no: 'B',
    customer_id: 1,
    amount: '10.00',
    currency: 'USD',
    status: 'refunded',
    created_at: '2026-01-31T17:00:00Z',
    paid_at: '2026-01-31T17:30:00Z',
    refunded_at: '2026-03-05T00:00:00Z',
  }),
  order({
    order_no: 'C',
    customer_id: 2,
    amount: '50.00',
    status: 'failed',
    payment_method: 'cvs',
    created_at: '2026-02-03T00:00:00Z',
    failed_at: '2026-02-03T00:05:00Z',
  }),
  order({ order_no: 'D', customer_id: 2, amount: '33.33', created_at: '2026-02-10T00:00:00Z', paid_at: '2026-02-10T00:00:00Z' }),
  // March has no USD rate: left out, created and paid.
  order({
    order_no: 'E',
    customer_id: 3,
    amount: '5.00',
    currency: 'USD',
    created_at: '2026-03-02T00:00:00Z',
    paid_at: '2026-03-02T00:00:00Z',
  }),
];
const RATES = new Map([
  [
    'USD',
    new Map([
      ['2026-01', '30'],
      ['2026-02', '32'],
    ]),
  ],
]);
const Q = { start: '2026-01-01', end: '2026-03-31', interval: 'month' as const, zone: 'Asia/Taipei', reporting: 'TWD', rates: RATES };
const none = {
  gross_revenue: '0.00',
  refunds: '0.00',
  net_revenue: '0.00',
  orders: 0,
  paid_orders: 0,
  refunded_orders: 0,
  failed_orders: 0,
};

describe('the sales reference', () => {
  it('the first paid order: earliest paid_at, ties by order_no, over paid and refunded orders only', () => {
    const tie = [
      order({ order_no: 'Z', customer_id: 9, amount: '1.00', created_at: '2026-01-01T00:00:00Z', paid_at: '2026-01-02T00:00:00Z' }),
      order({ order_no: 'Y', customer_id: 9, amount: '1.00', created_at: '2026-01-01T00:00:00Z', paid_at: '2026-01-02T00:00:00Z' }),
      order({
        order_no: 'X',
        customer_id: 9,
        amount: '1.00',
        status: 'failed',
        created_at: '2026-01-01T00:00:00Z',
        paid_at: '2026-01-01T00:00:00Z',
      }),
    ];
    expect(refFirstOrders(tie).get(9)?.order_no).toBe('Y');
  });

  it('books each part on its own day of the zone, at its own month’s rate; what has no rate is left out, counts included', () => {
    const r = refSales(ORDERS, Q);
    expect(r.data).toEqual([
      {
        date: '2026-01-01',
        ...none,
        gross_revenue: '100.00',
        net_revenue: '100.00',
        orders: 1,
        paid_orders: 1,
        aov: '100.00',
        first_order_revenue: '100.00',
        returning_revenue: '0.00',
        new_buyers: 1,
      },
      {
        date: '2026-02-01',
        ...none,
        gross_revenue: '353.33',
        net_revenue: '353.33',
        orders: 3,
        paid_orders: 2,
        failed_orders: 1,
        aov: '176.67',
        first_order_revenue: '33.33',
        returning_revenue: '320.00',
        new_buyers: 1,
      },
      { date: '2026-03-01', ...none, aov: null, first_order_revenue: '0.00', returning_revenue: '0.00', new_buyers: 0 },
    ]);
    expect(r.summary).toEqual({
      ...none,
      gross_revenue: '453.33',
      net_revenue: '453.33',
      orders: 4,
      paid_orders: 3,
      failed_orders: 1,
      aov: '151.11',
      first_order_revenue: '133.33',
      returning_revenue: '320.00',
      new_buyers: 2,
    });
    expect(r.unconverted).toEqual({ USD: { gross_revenue: '5.00', refunds: '10.00', orders: 1 } });
  });

  it('currency=USD: that currency’s own money alone, unconverted; a refund on its own day; the first order judged over all', () => {
    const r = refSales(ORDERS, { ...Q, currency: 'USD', interval: 'year' });
    expect(r.data).toHaveLength(1);
    expect(r.summary).toEqual({
      gross_revenue: '15.00',
      refunds: '10.00',
      net_revenue: '5.00',
      orders: 2,
      paid_orders: 2,
      refunded_orders: 1,
      failed_orders: 0,
      aov: '7.50',
      first_order_revenue: '5.00',
      returning_revenue: '10.00',
      new_buyers: 1,
    });
    expect(r.unconverted).toEqual({});
  });

  it('a segment counts only its orders; a failed order’s method is its own', () => {
    const r = refSales(ORDERS, { ...Q, payment_method: 'cvs' });
    expect(r.summary).toMatchObject({ orders: 1, failed_orders: 1, paid_orders: 0, gross_revenue: '0.00', aov: null });
    const weeks = refSales(ORDERS, { ...Q, interval: 'week', start: '2026-02-04', end: '2026-02-10' });
    // Weeks start on Monday; the first point starts at the range's first day.
    expect(weeks.data.map((p) => p.date)).toEqual(['2026-02-04', '2026-02-09']);
    expect(weeks.data[1]).toMatchObject({ gross_revenue: '33.33', new_buyers: 1 });
  });
});
