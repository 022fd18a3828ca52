import { UTCDateMini } from '@date-fns/utc';
import { addDays } from 'date-fns/addDays';
import { addMonths } from 'date-fns/addMonths';
import { startOfDay } from 'date-fns/startOfDay';
import { startOfMonth } from 'date-fns/startOfMonth';
import Decimal from 'decimal.js';
import { InvalidError } from '#lib/errors';
import type { EventType } from '#lib/outbox/store';
import type { OrderItem } from '#lib/orders/model';
import type { OrderBatchItem, OrderInput, OrderPatch, OrderStatus } from '#lib/orders/schemas';
import { amountCurrencyError } from '#lib/shared/currency';
import { money } from '#lib/shared/money';
import { isoDay } from '#lib/shared/time';
import { QUARTER_MS, QUARTERS_PER_DAY } from '#lib/shared/zone';

/**
 * The order's rules (docs/orders.md), pure: the status machine, the defaults of a new order, what a
 * status change or an import item does to an order, and what the stats read. No database, no
 * HTTP: the service reads, decides and persists.
 */

/** An order's webhook types (`order.created`, `order.paid`…). */
export type OrderWebhook = Extract<EventType, `order.${string}`>;

/** Status changes allowed through the API; imports may move freely. */
const ALLOWED: Record<OrderStatus, OrderStatus[]> = {
  pending: ['paid', 'failed', 'cancelled'],
  failed: ['paid', 'cancelled'],
  paid: ['refunded'],
  refunded: [],
  cancelled: [],
};

export const canTransition = (from: OrderStatus, to: OrderStatus): boolean => ALLOWED[from].includes(to);

/** The timestamp a status fills when it is reached without one (docs/orders.md: status times). */
export const STATUS_TIMESTAMP: Partial<Record<OrderStatus, 'paid_at' | 'refunded_at' | 'failed_at'>> = {
  paid: 'paid_at',
  refunded: 'refunded_at',
  failed: 'failed_at',
};

/** Fills the reached status's timestamp with `at` unless one is already set: supplied times are never overwritten. */
export const fillStatusTimestamp = <
  T extends { status: OrderStatus; paid_at: string | null; refunded_at: string | null; failed_at: string | null },
>(
  order: T,
  at: string,
): T => {
  const field = STATUS_TIMESTAMP[order.status];
  return field && !order[field] ? { ...order, [field]: at } : order;
};

export const ORDER_NO_TAKEN = 'The order no has already been taken.';

/** A creation request with the defaults of docs/orders.md applied (null means the default). */
export const withOrderDefaults = (input: OrderInput) => ({
  ...input,
  status: input.status ?? 'pending',
  currency: input.currency ?? 'TWD',
  billing_cycle: input.billing_cycle ?? 'one-time',
  customer_name: input.customer_name ?? null,
  payment_method: input.payment_method ?? null,
  paid_at: input.paid_at ?? null,
  refunded_at: input.refunded_at ?? null,
  failed_at: input.failed_at ?? null,
  metadata: input.metadata ?? null,
});

/** The fields of a new order (no keys: the store adds them), with the defaults of docs/orders.md. */
export const newOrder = (
  id: number,
  customerId: number,
  input: OrderInput,
  source: OrderItem['source'],
  at: string,
  /** Imported history's own date (batch); else the time of the write. */
  createdAt: string = at,
) => {
  const base = {
    id,
    order_no: input.order_no,
    amount: input.amount,
    currency: input.currency ?? 'TWD',
    status: input.status ?? 'pending',
    payment_method: input.payment_method ?? null,
    source,
    billing_cycle: input.billing_cycle ?? 'one-time',
    paid_at: input.paid_at ?? null,
    refunded_at: input.refunded_at ?? null,
    failed_at: input.failed_at ?? null,
    metadata: input.metadata ?? null,
    customer_id: customerId,
    created_at: createdAt,
    updated_at: at,
    version: 1,
  };
  // Imported history: a status time it does not give is the order's own date, not the import's.
  return fillStatusTimestamp(base, createdAt);
};

/** The webhooks of a new order: `order.created`, and `order.paid` when it is created paid. */
export const createdWebhooks = (order: Pick<OrderItem, 'status'>): OrderWebhook[] =>
  order.status === 'paid' ? ['order.created', 'order.paid'] : ['order.created'];

/** The order after a change of fields: the reached status's time filled, the version moved on. */
export const changed = (order: OrderItem, changes: Partial<OrderItem>, at: string): OrderItem =>
  fillStatusTimestamp({ ...order, ...changes, updated_at: at, version: order.version + 1 }, at);

/** A planned status change: the order's changed fields and its webhook. */
export type Plan = { changes: Partial<OrderItem>; webhook: OrderWebhook };

/**
 * PATCH /orders/{orderNo}: an allowed status move (the given status times and metadata ride
 * along), or the 422 that refuses it.
 */
export const decide = (order: Pick<OrderItem, 'status'>, patch: OrderPatch): Plan => {
  if (!canTransition(order.status, patch.status)) {
    throw InvalidError.field('status', `The order cannot move from ${order.status} to ${patch.status}.`);
  }
  const changes: Partial<OrderItem> = { status: patch.status };
  for (const field of ['paid_at', 'failed_at', 'refunded_at'] as const) if (patch[field]) changes[field] = patch[field];
  if (patch.metadata !== undefined) changes.metadata = patch.metadata;
  return { changes, webhook: `order.${patch.status}` as OrderWebhook };
};

/** The fields an import item may set on an order, and that tell whether it changed. */
export const IMPORT_FIELDS = [
  'amount',
  'currency',
  'status',
  'payment_method',
  'billing_cycle',
  'paid_at',
  'refunded_at',
  'failed_at',
  'metadata',
  'created_at',
] as const;

/** Absent, null, empty-string and empty-object fields leave the stored value alone (docs/orders.md: accumulate). */
const isEmpty = (v: unknown) =>
  v === null || v === undefined || v === '' || (typeof v === 'object' && !Array.isArray(v) && Object.keys(v as object).length === 0);
export const dropEmpty = (raw: Record<string, unknown>) => Object.fromEntries(Object.entries(raw).filter(([, v]) => !isEmpty(v)));

/** Why an import item cannot create its order_no (it needs an amount and an email), or null. */
export const missingForNew = (input: OrderBatchItem): string | null => {
  const missing = !input.amount ? 'amount' : !input.customer_email ? 'customer_email' : null;
  return missing ? `The ${missing.replace('_', ' ')} field is required.` : null;
};

/**
 * An import item folded into the order as the items before it left it: its fields set, the
 * reached status's time filled (the item's own date, else `at`). Refused (a 422 naming the
 * message) when the amount and the currency no longer agree.
 */
export const foldImportItem = (order: OrderItem, input: OrderBatchItem, at: string): OrderItem => {
  const changes: Partial<OrderItem> = {};
  for (const f of IMPORT_FIELDS) if (input[f] !== undefined) (changes as Record<string, unknown>)[f] = input[f];
  const next = fillStatusTimestamp({ ...order, ...changes } as OrderItem, input.created_at ?? at);
  // The stored amount and a new currency (or the reverse) must still agree.
  const mismatch = amountCurrencyError(next.amount, next.currency, 'amount');
  if (mismatch) {
    throw InvalidError.field(
      input.amount ? 'amount' : 'currency',
      input.amount
        ? mismatch
        : `The currency field cannot be ${next.currency}: the order's amount ${next.amount} has a fraction and ${next.currency} has no minor unit.`,
    );
  }
  return next;
};

/** Whether the folded order leaves the stored one as it is (then it writes nothing, updated_at stays). */
export const importUnchanged = (stored: OrderItem, folded: OrderItem, customerId: number) =>
  stored.customer_id === customerId && IMPORT_FIELDS.every((f) => JSON.stringify(folded[f]) === JSON.stringify(stored[f]));

/** The counters a day and a month of stats hold, by attribute. */
type Counters = Record<string, Decimal | undefined>;

/** The stats counter of revenue paid in `currency`. */
export const revenueAttr = (currency: string) => `rev_${currency}`;
const REVENUE_ATTR = /^rev_([A-Z]{3})$/;

/**
 * Stats of a UTC day are kept at three grains, so that a day of any time zone can be summed from
 * the UTC days it overlaps while every item an order write touches stays small: the day item holds
 * each counter for the whole day (`created`) and for each hour (`h09_created`); the hour's own item
 * holds its four quarter-hours (`q37_created`: 09:15–09:30 UTC). Items written before hours existed
 * keep their quarter-hours on the day item (`withLegacyQuarters`).
 */
export const quarterAttr = (quarter: number, attr: string) => `q${String(quarter).padStart(2, '0')}_${attr}`;
const QUARTER_ATTR = /^q(\d\d)_(.+)$/;
export const hourAttr = (hour: number, attr: string) => `h${String(hour).padStart(2, '0')}_${attr}`;
const HOUR_ATTR = /^h(\d\d)_(.+)$/;
export const QUARTERS_PER_HOUR = 4;

/** A day item's counters as summed over shards, with quarter-hours an earlier version kept on it also summed into their hours. */
export const withLegacyQuarters = (day: Record<string, Decimal>): Record<string, Decimal> => {
  const out = { ...day };
  for (const [attr, v] of Object.entries(day)) {
    const q = QUARTER_ATTR.exec(attr);
    if (!q) continue;
    const h = hourAttr(Math.floor(Number(q[1]) / QUARTERS_PER_HOUR), q[2]);
    out[h] = (out[h] ?? new Decimal(0)).plus(v);
  }
  return out;
};

/**
 * What a stats figure over the UTC instants [from, to) adds up: a UTC month's items, a UTC day's
 * whole-day counters, or the quarter-hours [first, end) of a UTC day; each added (+1) or taken away (−1).
 */
export type StatsTerm =
  | { kind: 'month'; month: string; sign: 1 | -1 }
  | { kind: 'day'; day: string; sign: 1 | -1; quarters: [number, number] | null };

const dayTerms = (from: number, to: number, sign: 1 | -1): StatsTerm[] => {
  const out: StatsTerm[] = [];
  for (let day = startOfDay(new UTCDateMini(from)); day.getTime() < to; day = addDays(day, 1)) {
    const d = day.getTime();
    const first = Math.floor((Math.max(from, d) - d) / QUARTER_MS);
    const end = Math.floor((Math.min(to, addDays(day, 1).getTime()) - d) / QUARTER_MS);
    if (first === 0 && end === QUARTERS_PER_DAY) out.push({ kind: 'day', day: isoDay(d), sign, quarters: null });
    else if (first < end) out.push({ kind: 'day', day: isoDay(d), sign, quarters: [first, end] });
  }
  return out;
};

/**
 * The terms of [from, to): a UTC month wholly inside is its month items; a month mostly inside is
 * its month items less the days (or quarter-hours) outside; a month barely inside is its days
 * inside. A local day or month in any zone (offsets up to ±14 h) so reads at most two months and
 * four days; in UTC, one day or one month.
 */
export const statsTerms = (from: number, to: number): StatsTerm[] => {
  const out: StatsTerm[] = [];
  for (let m = startOfMonth(new UTCDateMini(from)); m.getTime() < to; m = addMonths(m, 1)) {
    const u0 = m.getTime();
    const u1 = addMonths(m, 1).getTime();
    const a = Math.max(from, u0);
    const b = Math.min(to, u1);
    const month = isoDay(u0).slice(0, 7);
    if (a === u0 && b === u1) out.push({ kind: 'month', month, sign: 1 });
    else if (b - a > (u1 - u0) / 2) out.push({ kind: 'month', month, sign: 1 }, ...dayTerms(u0, a, -1), ...dayTerms(b, u1, -1));
    else out.push(...dayTerms(a, b, 1));
  }
  return out;
};

/** Where a term's counters are filed (a month, or a day) once read. */
export const termId = (t: StatsTerm) => (t.kind === 'month' ? `M#${t.month}` : `D#${t.day}`);

/** The hours of a day term that [first, end) covers only in part: their items hold the quarter-hours it needs. */
export const partialHours = (t: StatsTerm): number[] => {
  if (t.kind !== 'day' || !t.quarters) return [];
  const [first, end] = t.quarters;
  const out = new Set<number>();
  if (first % QUARTERS_PER_HOUR) out.add(Math.floor(first / QUARTERS_PER_HOUR));
  if (end % QUARTERS_PER_HOUR) out.add(Math.floor(end / QUARTERS_PER_HOUR));
  return [...out];
};

/**
 * The counters of [from, to), from its terms and each term's counters (summed over shards; a day's
 * are its day item's and its hour items'). A part of a day counts each hour it covers whole by the
 * day item's hour sums, and the quarter-hours of an hour it covers in part.
 */
export const foldTerms = (terms: StatsTerm[], counters: Map<string, Record<string, Decimal>>): Record<string, Decimal> => {
  const out: Record<string, Decimal> = {};
  for (const t of terms) {
    const range = t.kind === 'day' ? t.quarters : null;
    const wholeHour = (h: number) => !!range && h * QUARTERS_PER_HOUR >= range[0] && (h + 1) * QUARTERS_PER_HOUR <= range[1];
    for (const [attr, v] of Object.entries(counters.get(termId(t)) ?? {})) {
      const quarter = QUARTER_ATTR.exec(attr);
      const hour = HOUR_ATTR.exec(attr);
      let target: string;
      if (range) {
        if (hour && wholeHour(Number(hour[1]))) target = hour[2];
        else if (quarter) {
          const q = Number(quarter[1]);
          if (q < range[0] || q >= range[1] || wholeHour(Math.floor(q / QUARTERS_PER_HOUR))) continue;
          target = quarter[2];
        } else continue;
      } else {
        if (quarter || hour) continue;
        target = attr;
      }
      out[target] = (out[target] ?? new Decimal(0)).plus(t.sign === 1 ? v : v.negated());
    }
  }
  return out;
};

/** The other currencies than `reportingCurrency` with revenue in any of `counters`, in code order. */
export const revenueCurrencies = (counters: Counters[], reportingCurrency: string): string[] => {
  const out = new Set<string>();
  for (const c of counters)
    for (const [attr, v] of Object.entries(c)) {
      const ccy = REVENUE_ATTR.exec(attr)?.[1];
      if (ccy && ccy !== reportingCurrency && v && !v.isZero()) out.add(ccy);
    }
  return [...out].sort();
};

/**
 * GET /orders/stats from today's and this month's counters (in the merchant's time zone): revenue by
 * paid_at, counts by created_at. Revenue in the reporting currency also counts every other currency's
 * at this month's rate (`rates`: currency → rate, the currencies with one); a currency without one is
 * left out and named in `unconverted` with what it left out, in it. Revenue in another currency is
 * that currency's alone.
 */
export const stats = (
  day: Counters,
  month: Counters,
  currency: string | undefined,
  reportingCurrency: string,
  rates: ReadonlyMap<string, string> = new Map(),
) => {
  const created = day.created?.toNumber() ?? 0;
  const createdPaid = day.created_paid?.toNumber() ?? 0;
  // No currency named: the reporting currency with the others converted, or named as left out.
  // A currency named (the reporting one too): its own money alone.
  const others = currency === undefined ? revenueCurrencies([day, month], reportingCurrency) : [];
  currency ??= reportingCurrency;
  const revenue = (counters: Counters) =>
    others.reduce(
      (sum, ccy) => (rates.has(ccy) ? sum.plus((counters[revenueAttr(ccy)] ?? new Decimal(0)).times(rates.get(ccy)!)) : sum),
      counters[revenueAttr(currency)] ?? new Decimal(0),
    );
  const unconverted = Object.fromEntries(
    others
      .filter((ccy) => !rates.has(ccy))
      .map((ccy) => [ccy, { today_revenue: money(day[revenueAttr(ccy)]), monthly_revenue: money(month[revenueAttr(ccy)]) }]),
  );
  return {
    data: {
      today_revenue: money(revenue(day)),
      monthly_revenue: money(revenue(month)),
      today_count: created,
      today_success_rate: created
        ? new Decimal(createdPaid).times(100).div(created).toDecimalPlaces(1, Decimal.ROUND_HALF_UP).toNumber()
        : 0,
    },
    unconverted,
  };
};
