import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { saleOrder } from './arbitraries.ts';
import {
  addSalesFigures,
  bookingsOf,
  type Money,
  ordersOfBookings,
  type SaleOrder,
  type SalesFigures,
  salesChange,
  salesSlices,
  withBooking,
} from '#lib/metrics/bookings';

/**
 * A write's sales moves (`salesChange`) summed over any sequence of order writes equal the figures
 * of every stored slice computed from scratch over the orders at the end: back-dated first orders,
 * status and amount changes, orders moved to another customer, in any order.
 */
const MONTHS = ['2025-12', '2026-01', '2026-02'];
const time = fc
  .record({ month: fc.constantFrom(...MONTHS), day: fc.integer({ min: 1, max: 28 }), minutes: fc.integer({ min: 0, max: 1439 }) })
  .map(({ month, day, minutes }) =>
    new Date(Date.parse(`${month}-${String(day).padStart(2, '0')}T00:00:00Z`) + minutes * 60_000).toISOString().replace('.000Z', 'Z'),
  );
const version = saleOrder(time, { customers: 3, currencies: ['TWD', 'TWD', 'USD'], methods: ['credit_card', 'atm', null] });
/** Writes: each the new version of one of 8 order numbers (its customer may change: the order moves). */
const writes = fc.array(fc.tuple(fc.integer({ min: 0, max: 7 }), version), { maxLength: 30 });
const money = fc
  .record({ zone: fc.constantFrom('UTC', 'Asia/Taipei', 'America/New_York'), usd: fc.subarray(MONTHS) })
  .map(({ zone, usd }): Money => ({ zone, reporting: 'TWD', rates: new Map([['USD', new Map(usd.map((m) => [m, '31.25']))]]) }));

const sliceKey = (s: { dimension: string; value: string } | null) => (s ? `${s.dimension}=${s.value}` : '');
const shown = (slices: Map<string, SalesFigures>) =>
  Object.fromEntries(
    [...slices]
      .map(
        ([k, f]) =>
          [
            k,
            Object.fromEntries(
              [...f]
                .map(([item, attrs]) => [
                  item,
                  Object.fromEntries([...attrs].filter(([, v]) => !v.isZero()).map(([a, v]) => [a, v.toFixed()])),
                ])
                .filter(([, a]) => Object.keys(a).length),
            ),
          ] as const,
      )
      .filter(([, f]) => Object.keys(f).length),
  );

describe('sales moves of order writes', () => {
  it('summed over any sequence of writes, equal every slice counted from scratch', () => {
    fc.assert(
      fc.property(writes, money, (ws, m) => {
        // Each customer's bookings as the writes leave them, and the moves they applied.
        const books = new Map<number, ReturnType<typeof bookingsOf>>();
        const owner = new Map<string, number>();
        const applied = new Map<string, SalesFigures>();
        const apply = (customer: number, next: ReturnType<typeof bookingsOf>) => {
          const before = books.get(customer) ?? {};
          for (const { segment, moves } of salesChange(ordersOfBookings(before, customer), ordersOfBookings(next, customer), m)) {
            const into = applied.get(sliceKey(segment)) ?? new Map();
            applied.set(sliceKey(segment), into);
            addSalesFigures(into, moves);
          }
          books.set(customer, next);
        };
        for (const [n, v] of ws) {
          const orderNo = `N-${n}`;
          const order: SaleOrder = { ...v, order_no: orderNo };
          const was = owner.get(orderNo);
          if (was !== undefined && was !== order.customer_id) apply(was, withBooking(books.get(was)!, orderNo, null));
          apply(order.customer_id, withBooking(books.get(order.customer_id) ?? {}, orderNo, order));
          owner.set(orderNo, order.customer_id);
        }
        const expected = new Map<string, SalesFigures>();
        for (const [customer, lines] of books)
          for (const { segment, figures } of salesSlices([...ordersOfBookings(lines, customer).values()], m)) {
            const into = expected.get(sliceKey(segment)) ?? new Map();
            expected.set(sliceKey(segment), into);
            addSalesFigures(into, figures);
          }
        expect(shown(applied)).toEqual(shown(expected));
      }),
      { numRuns: 300 },
    );
  });

  it('an unchanged order moves nothing; a new first order moves new buyers from the old first', () => {
    const m: Money = { zone: 'UTC', reporting: 'TWD', rates: new Map() };
    const o = (order_no: string, paid_at: string): SaleOrder => ({
      order_no,
      customer_id: 1,
      amount: '100.00',
      currency: 'TWD',
      status: 'paid',
      payment_method: 'atm',
      source: 'api',
      billing_cycle: 'one-time',
      created_at: paid_at,
      paid_at,
      refunded_at: null,
      failed_at: null,
    });
    const before = bookingsOf([o('A', '2026-01-10T00:00:00Z')]);
    expect(
      salesChange(ordersOfBookings(before, 1), ordersOfBookings(withBooking(before, 'A', o('A', '2026-01-10T00:00:00Z')), 1), m),
    ).toEqual([]);
    const after = withBooking(before, 'B', o('B', '2025-12-01T00:00:00Z'));
    const whole = salesChange(ordersOfBookings(before, 1), ordersOfBookings(after, 1), m).find((s) => s.segment === null)!.moves;
    expect(whole.get('D#2026-01-10')?.get('new_buyers')?.toNumber()).toBe(-1);
    expect(whole.get('D#2025-12-01')?.get('new_buyers')?.toNumber()).toBe(1);
    // The customer's cohort moves from January to December: both of its orders go with it.
    expect(whole.get('C#2026-01#2026-01')?.get('customers')?.toNumber()).toBe(-1);
    expect(whole.get('C#2025-12#2026-01')?.get('orders')?.toNumber()).toBe(1);
  });
});
