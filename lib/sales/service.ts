import { now } from '#lib/clock';
import type { AuthContext } from '#lib/auth/tokens';
import {
  customersOrders,
  customersWithMetadata,
  figuresRead,
  generationSettings,
  inSegment,
  lastCustomerId,
  merchantSales,
  metadataFilters,
  type Money,
  readSalesFigures,
  resolveCohortRange,
  resolveRange,
  SALES_DIMENSIONS,
  type SalesFigures,
  type SalesRanges,
  type SalesSegment,
} from '#lib/metrics';
import { localDayOf } from '#lib/shared/zone';
import { paymentMethodTable, purchaseCohortTable, salesItemsOf, salesSeries, type Range } from '#lib/sales/rules';
import { bucketStarts } from '#lib/shared/buckets';
import { plusDays } from '#lib/shared/time';
import type { PaymentMethodsQuery, PurchaseCohortsQuery, SalesQuery } from '#lib/sales/schemas';

/**
 * GET /metrics/sales, /metrics/payment-methods and /metrics/purchase-cohorts (docs/sales.md). Every
 * order write keeps the merchant's sales figures stored (lib/metrics/bookings.ts), in the zone and at
 * the rates of the generation that counts: the whole, and one slice per payment method, source,
 * billing cycle and currency. A read takes its slice's items of its range, in one state, and folds
 * them into its answer. A read that no stored slice answers (metadata filters, or two filters at
 * once) computes the figures from the bookings of the customers it selects.
 */
type Figures = Pick<AuthContext, 'reportingCurrency' | 'timezone' | 'generation' | 'recount'>;

const today = (zone: string) => localDayOf(now().getTime(), zone);

/** The customers every metadata filter of the query matches (null: no such filter). */
const metadataCustomers = async (merchantId: string, q: SalesQuery): Promise<number[] | null> => {
  const filters = metadataFilters(q);
  if (!filters.length) return null;
  const sets = await Promise.all(filters.map(([k, v]) => customersWithMetadata(merchantId, k, v)));
  const [firstSet, ...rest] = sets;
  return [...firstSet].filter((id) => rest.every((s) => s.has(id))).sort((a, b) => a - b);
};

/** The figures of customers' bookings (`ids`, null: every customer), as the stored slices would hold them for `select`. */
const computedFigures = async (merchantId: string, figures: Figures, ids: number[] | null, q: SalesQuery): Promise<SalesFigures> => {
  const customers = ids ?? Array.from({ length: await lastCustomerId(merchantId) }, (_, i) => i + 1);
  const orders = await customersOrders(merchantId, customers);
  const others = new Set(orders.map((o) => o.currency).filter((c) => c !== figures.reportingCurrency));
  const { rates } =
    q.currency === undefined && others.size
      ? await generationSettings(merchantId, figures.generation, others, undefined, figures.timezone)
      : { rates: new Map() };
  const money: Money = { zone: figures.timezone, reporting: figures.reportingCurrency, rates, ...(q.currency ? { only: q.currency } : {}) };
  const filtered = SALES_DIMENSIONS.some((d) => q[d] !== undefined);
  return merchantSales(orders, money, filtered ? inSegment(q, null) : undefined);
};

/** The sort-key ranges of the day and month items of a range's buckets: months as one range, days as runs of consecutive days. */
const bookingRanges = (range: Range): SalesRanges => {
  const starts = [...bucketStarts(range.start, range.end, range.interval)];
  const items = starts.flatMap((start, i) => salesItemsOf(start, i + 1 < starts.length ? plusDays(starts[i + 1], -1) : range.end));
  const months = items.filter((i) => i.startsWith('M#')).sort();
  const days = items.filter((i) => i.startsWith('D#')).sort();
  const out: SalesRanges = months.length ? [[months[0], months[months.length - 1]]] : [];
  for (const day of days) {
    const run = out[out.length - 1];
    if (run?.[1].startsWith('D#') && plusDays(run[1].slice(2), 1) === day.slice(2)) run[1] = day;
    else out.push([day, day]);
  }
  return out;
};

export const salesFigures = async (merchantId: string, figures: Figures, q: SalesQuery) =>
  figuresRead(figures, async (scope) => {
    const range = resolveRange(
      { start_date: q.start_date, end_date: q.end_date, interval: q.interval },
      today(scope.timezone),
      scope.timezone,
    );
    const named = SALES_DIMENSIONS.filter((d) => q[d] !== undefined);
    const ids = await metadataCustomers(merchantId, q);
    // One filter (or none) is a stored slice; metadata or two filters at once are computed from the customers' bookings.
    if (ids !== null || named.length > 1) return salesSeries(await computedFigures(merchantId, scope, ids, q), range);
    const segment: SalesSegment | null = named.length ? { dimension: named[0], value: q[named[0]]! } : null;
    return salesSeries(await readSalesFigures(merchantId, scope.generation, segment, bookingRanges(range)), range);
  });

export const paymentMethods = async (merchantId: string, figures: Figures, q: PaymentMethodsQuery) =>
  figuresRead(figures, async (scope) => {
    // The range checks of a monthly read: a table has no points, so no 731-day bound.
    const { start, end } = resolveRange(
      { start_date: q.start_date, end_date: q.end_date, interval: 'month' },
      today(scope.timezone),
      scope.timezone,
    );
    return paymentMethodTable(await readSalesFigures(merchantId, scope.generation, null, [[`Y#${start}`, `Y#${end}`]]), start, end);
  });

export const purchaseCohorts = async (merchantId: string, figures: Figures, q: PurchaseCohortsQuery) =>
  figuresRead(figures, async (scope) => {
    const range = resolveCohortRange(q, today(scope.timezone).slice(0, 7));
    return purchaseCohortTable(
      await readSalesFigures(merchantId, scope.generation, null, [[`C#${range.start}#`, `C#${range.end}#~`]]),
      range,
    );
  });
