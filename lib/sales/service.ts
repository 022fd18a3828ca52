import { now } from '#lib/clock';
import type { AuthContext } from '#lib/auth/tokens';
import { customersWithMetadata, generationSettings, metadataFilters, resolveCohortRange, resolveRange } from '#lib/metrics';
import { localDayOf } from '#lib/shared/zone';
import { inSegment, type Money, merchantSales, paymentMethodTable, purchaseCohortTable, salesSeries } from '#lib/sales/rules';
import type { PaymentMethodsQuery, PurchaseCohortsQuery, SalesQuery } from '#lib/sales/schemas';
import { readSaleOrders } from '#lib/sales/store';

/**
 * GET /metrics/sales, /metrics/payment-methods and /metrics/purchase-cohorts (docs/sales.md): the
 * merchant's orders read, each customer's figures computed from its orders (rules.ts) in the zone
 * and at the rates of the generation that counts, as every other figure, summed item by item, and
 * the range's items folded into the answer.
 */
type Figures = Pick<AuthContext, 'reportingCurrency' | 'timezone' | 'generation'>;

const today = (zone: string) => localDayOf(now().getTime(), zone);

/** The orders and the money they are read in: the generation's rates for every other currency they are in. */
const ordersAndMoney = async (merchantId: string, figures: Figures, only?: string) => {
  const orders = await readSaleOrders(merchantId);
  const others = new Set(orders.map((o) => o.currency).filter((c) => c !== figures.reportingCurrency));
  const { rates } =
    only === undefined && others.size
      ? await generationSettings(merchantId, figures.generation, others, undefined, figures.timezone)
      : { rates: new Map() };
  const money: Money = { zone: figures.timezone, reporting: figures.reportingCurrency, rates, ...(only ? { only } : {}) };
  return { orders, money };
};

/** The customers every metadata filter of the query matches (null: no such filter). */
const metadataCustomers = async (merchantId: string, q: SalesQuery): Promise<Set<number> | null> => {
  const filters = metadataFilters(q);
  if (!filters.length) return null;
  const sets = await Promise.all(filters.map(([k, v]) => customersWithMetadata(merchantId, k, v)));
  const [firstSet, ...rest] = sets;
  return new Set([...firstSet].filter((id) => rest.every((s) => s.has(id))));
};

export const salesFigures = async (merchantId: string, figures: Figures, q: SalesQuery) => {
  const range = resolveRange(
    { start_date: q.start_date, end_date: q.end_date, interval: q.interval },
    today(figures.timezone),
    figures.timezone,
  );
  const [{ orders, money }, customers] = await Promise.all([
    ordersAndMoney(merchantId, figures, q.currency),
    metadataCustomers(merchantId, q),
  ]);
  const filtered = q.currency !== undefined || q.payment_method !== undefined || q.source !== undefined || q.billing_cycle !== undefined;
  return salesSeries(merchantSales(orders, money, filtered ? inSegment(q, null) : undefined, customers), range);
};

export const paymentMethods = async (merchantId: string, figures: Figures, q: PaymentMethodsQuery) => {
  // The range checks of a monthly read: a table has no points, so no 731-day bound.
  const { start, end } = resolveRange(
    { start_date: q.start_date, end_date: q.end_date, interval: 'month' },
    today(figures.timezone),
    figures.timezone,
  );
  const { orders, money } = await ordersAndMoney(merchantId, figures);
  return paymentMethodTable(merchantSales(orders, money), start, end);
};

export const purchaseCohorts = async (merchantId: string, figures: Figures, q: PurchaseCohortsQuery) => {
  const range = resolveCohortRange(q, today(figures.timezone).slice(0, 7));
  const { orders, money } = await ordersAndMoney(merchantId, figures);
  return purchaseCohortTable(merchantSales(orders, money), range);
};
