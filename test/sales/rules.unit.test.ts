import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { saleOrder } from './arbitraries.ts';
import { customerSales, inSegment, merchantSales, type Money, type SaleOrder } from '#lib/metrics/bookings';
import { paymentMethodTable, purchaseCohortTable, salesSeries } from '#lib/sales/rules';
import type { RefInterval } from '../metrics/reference.ts';
import { type RefOrder, type RefRateBook, refPaymentMethods, refPurchaseCohorts, refSales } from '../metrics/sales-reference.ts';

/**
 * The sales rules against the from-scratch reference (test/metrics/sales-reference.ts), on random
 * histories: several customers and currencies, every status, bookings across month ends in zones
 * with whole- and half-hour offsets, rate books with months missing, every interval and filter.
 */
const MONTHS = ['2025-11', '2025-12', '2026-01', '2026-02', '2026-03'];
const time = fc
  .record({ month: fc.constantFrom(...MONTHS), day: fc.integer({ min: 1, max: 28 }), minutes: fc.integer({ min: 0, max: 24 * 60 - 1 }) })
  .map(({ month, day, minutes }) => {
    // Some bookings land at a month's last or first hours, where zones disagree on the month.
    const d = new Date(Date.parse(`${month}-${String(day).padStart(2, '0')}T00:00:00Z`) + minutes * 60_000);
    return d.toISOString().replace('.000Z', 'Z');
  });
const edgeTime = fc.constantFrom('2025-12-31T20:00:00Z', '2026-01-31T16:30:00Z', '2026-02-28T23:59:59Z', '2026-01-01T00:00:00Z');
const anyTime = fc.oneof(time, time, edgeTime);

const order = saleOrder(anyTime, { customers: 5, currencies: ['TWD', 'TWD', 'USD', 'JPY'], methods: ['credit_card', 'atm', 'cvs', null] });
const history = fc.array(order, { maxLength: 40 }).map((os) => os.map((o, i) => ({ ...o, order_no: `N-${String(i).padStart(3, '0')}` })));

/** Per currency, a rate for some of the months (others have none). */
const ratesOf = (values: string[]) =>
  fc.array(fc.option(fc.constantFrom(...values), { nil: undefined }), { minLength: MONTHS.length, maxLength: MONTHS.length });
const rateBook = fc
  .record({ USD: ratesOf(['30.5', '31.25', '32']), JPY: ratesOf(['0.2', '0.215']) })
  .map(
    (r): RefRateBook =>
      new Map(
        Object.entries(r).map(([ccy, rs]) => [
          ccy,
          new Map(MONTHS.flatMap((m, i) => (rs[i] === undefined ? [] : [[m, rs[i]!] as [string, string]]))),
        ]),
      ),
  );
const zone = fc.constantFrom('UTC', 'Asia/Taipei', 'America/New_York', 'Asia/Kolkata');

const asSale = (o: RefOrder) => o as unknown as SaleOrder;
const moneyOf = (z: string, rates: RefRateBook, only?: string): Money => ({ zone: z, reporting: 'TWD', rates, ...(only ? { only } : {}) });

describe('GET /metrics/sales rules', () => {
  it('equal the reference on random histories, every interval and filter', () => {
    fc.assert(
      fc.property(
        history,
        rateBook,
        zone,
        fc.constantFrom<RefInterval>('day', 'week', 'month', 'quarter', 'year'),
        fc.record(
          {
            currency: fc.constantFrom('TWD', 'USD'),
            payment_method: fc.constantFrom('credit_card', 'none'),
            source: fc.constantFrom('api', 'import'),
            billing_cycle: fc.constantFrom('one-time', 'monthly'),
            customers: fc.subarray([1, 2, 3, 4, 5], { minLength: 1 }),
          },
          { requiredKeys: [] },
        ),
        fc.constantFrom(['2025-11-01', '2026-03-31'], ['2025-12-15', '2026-02-03'], ['2026-01-01', '2026-01-31']),
        (orders, rates, z, interval, filters, [start, end]) => {
          const customers = filters.customers ? new Set(filters.customers) : undefined;
          const q = { start, end, interval, zone: z, reporting: 'TWD', rates, ...filters, customers };
          const expected = refSales(orders as RefOrder[], q);
          const { customers: _, ...segment } = filters;
          const select = Object.keys(segment).length ? inSegment(segment, null) : undefined;
          const got = salesSeries(merchantSales(orders.map(asSale), moneyOf(z, rates, filters.currency), select, customers), {
            start,
            end,
            interval,
          });
          expect(got).toEqual(expected);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('a hand-worked month: first and returning revenue, a refund on its own day, a left-out USD booking', () => {
    const o = (p: Partial<SaleOrder> & Pick<SaleOrder, 'order_no' | 'customer_id' | 'amount' | 'created_at'>): SaleOrder => ({
      currency: 'TWD',
      status: 'paid',
      payment_method: 'credit_card',
      source: 'api',
      billing_cycle: 'one-time',
      paid_at: p.created_at,
      refunded_at: null,
      failed_at: null,
      ...p,
    });
    const orders = [
      o({ order_no: 'A', customer_id: 1, amount: '100.00', created_at: '2026-01-05T00:00:00Z' }),
      o({
        order_no: 'B',
        customer_id: 1,
        amount: '50.00',
        created_at: '2026-01-20T00:00:00Z',
        status: 'refunded',
        refunded_at: '2026-02-02T00:00:00Z',
      }),
      o({ order_no: 'C', customer_id: 2, amount: '10.00', currency: 'USD', created_at: '2026-01-21T00:00:00Z' }),
    ];
    const got = salesSeries(merchantSales(orders, moneyOf('UTC', new Map())), {
      start: '2026-01-01',
      end: '2026-02-28',
      interval: 'month',
    });
    expect(got.data[0]).toMatchObject({
      gross_revenue: '150.00',
      refunds: '0.00',
      orders: 2,
      paid_orders: 2,
      aov: '75.00',
      first_order_revenue: '100.00',
      returning_revenue: '50.00',
      new_buyers: 1,
    });
    expect(got.data[1]).toMatchObject({
      date: '2026-02-01',
      gross_revenue: '0.00',
      refunds: '50.00',
      net_revenue: '-50.00',
      refunded_orders: 1,
      aov: null,
    });
    expect(got.unconverted).toEqual({ USD: { gross_revenue: '10.00', refunds: '0.00', orders: 1 } });
  });
});

describe('money in the sales figures', () => {
  it('keeps every digit of a converted amount (23 significant digits: more than Decimal rounds to by default)', () => {
    const order: SaleOrder = {
      order_no: 'BIG',
      customer_id: 1,
      amount: '1234567890123.45',
      currency: 'USD',
      status: 'paid',
      payment_method: null,
      source: 'api',
      billing_cycle: 'one-time',
      created_at: '2026-01-05T00:00:00Z',
      paid_at: '2026-01-05T00:00:00Z',
      refunded_at: null,
      failed_at: null,
    };
    const figures = customerSales(
      [order, { ...order, order_no: 'BIG2' }],
      moneyOf('UTC', new Map([['USD', new Map([['2026-01', '1.0000000001']])]])),
    );
    // 1,234,567,890,123.45 × 1.0000000001 = 1,234,567,890,246.906789012345, kept to 10 decimals, twice.
    expect(figures.get('D#2026-01-05')?.get('gross_revenue')?.toFixed()).toBe('2469135780493.8135780246');
  });
});

describe('GET /metrics/payment-methods rules', () => {
  it('equal the reference on random histories', () => {
    fc.assert(
      fc.property(history, rateBook, zone, (orders, rates, z) => {
        const q = { start: '2025-12-01', end: '2026-02-28', zone: z, reporting: 'TWD', rates };
        expect(paymentMethodTable(merchantSales(orders.map(asSale), moneyOf(z, rates)), q.start, q.end)).toEqual(
          refPaymentMethods(orders as RefOrder[], q),
        );
      }),
      { numRuns: 300 },
    );
  });
});

describe('GET /metrics/purchase-cohorts rules', () => {
  it('equal the reference on random histories', () => {
    fc.assert(
      fc.property(
        history,
        rateBook,
        zone,
        fc.constantFrom(['2025-11', '2026-03', '2026-02'], ['2025-12', '2026-01', '2026-03']),
        (orders, rates, z, [start, end, current]) => {
          const got = purchaseCohortTable(merchantSales(orders.map(asSale), moneyOf(z, rates)), { start, end, currentMonth: current });
          expect(got).toEqual(refPurchaseCohorts(orders as RefOrder[], { start, end, current, zone: z, reporting: 'TWD', rates }));
        },
      ),
      { numRuns: 300 },
    );
  });
});
