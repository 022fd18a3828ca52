import { UTCDateMini } from '@date-fns/utc';
import { addMonths } from 'date-fns/addMonths';
import { startOfMonth } from 'date-fns/startOfMonth';
import Decimal from 'decimal.js';
import { NO_STANDING, type Standing } from '#lib/metrics';
import { decodeMetadata } from '#lib/shared/metadata';
import { money } from '#lib/shared/money';
import { localDateOfIso, QUARTER_MS } from '#lib/shared/zone';

/**
 * A stored customer. Derived figures live on the same item and are changed only by ADD deltas
 * (`ltv_<CCY>` per currency, `order_count`) and version-guarded SETs (`first/last_payment_at`),
 * so order writes never lose each other's updates.
 */
export type CustomerItem = {
  pk: string;
  sk: string;
  id: number;
  email: string;
  name: string | null;
  phone: string | null;
  external_id: string | null;
  /** JSON text of the metadata object. */
  metadata: string | null;
  order_count?: number;
  first_payment_at?: string | null;
  last_payment_at?: string | null;
  /** Bumped by every write that changes the payment times, guarding their recomputation. */
  payment_version?: number;
  created_at: string;
  updated_at: string;
  deleted_at?: string;
  [ltvAttr: `ltv_${string}`]: unknown;
};

export const LTV_PREFIX = 'ltv_';
export const ltvAttr = (currency: string): string => `${LTV_PREFIX}${currency}`;

export const ltvByCurrency = (item: Record<string, unknown>): Record<string, string> => {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(item)) {
    if (k.startsWith(LTV_PREFIX) && /^[A-Z]{3}$/.test(k.slice(LTV_PREFIX.length)) && !new Decimal(String(v)).isZero()) {
      out[k.slice(LTV_PREFIX.length)] = money(v);
    }
  }
  return Object.fromEntries(Object.entries(out).sort(([a], [b]) => a.localeCompare(b)));
};

/**
 * Where a paid order in another currency is counted for the customer's converted `ltv`
 * (docs/customers.md, "Lifetime value"): in its UTC year's item of that currency, under its UTC
 * month (`m03`) when it lies more than 15 hours from either end of that month, so that it is in that
 * month in every time zone (offsets run from -12 to +14 hours); near a month's ends, under its
 * quarter-hour (`q03312345`: 31 March 23:45 UTC), which any zone's months are made of. So the
 * month whose rate converts it is found at read time in the merchant's zone as it is then.
 */
export const ltvPartOf = (paidAt: string): { year: string; attr: string } => {
  const t = Date.parse(paidAt);
  const d = new Date(t);
  const [y, m] = [d.getUTCFullYear(), d.getUTCMonth()];
  const pad = (n: number) => String(n).padStart(2, '0');
  const month = startOfMonth(new UTCDateMini(t));
  const inMonth = t - month.getTime() >= LTV_EDGE_MS && addMonths(month, 1).getTime() - t > LTV_EDGE_MS;
  if (inMonth) return { year: String(y), attr: `m${pad(m + 1)}` };
  const q = new Date(Math.floor(t / QUARTER_MS) * QUARTER_MS);
  return { year: String(y), attr: `q${pad(m + 1)}${pad(q.getUTCDate())}${pad(q.getUTCHours())}${pad(q.getUTCMinutes())}` };
};
/** How near a UTC month's ends a payment is kept by quarter-hour: past every zone's offset (−12 h to +14 h) by an hour. */
const LTV_EDGE_MS = 15 * 3_600_000;
const LTV_ATTR = /^(?:m(\d{2})|q(\d{2})(\d{2})(\d{2})(\d{2}))$/;

/** A stored LTV part item: one customer's paid orders in one currency and UTC year (`ltvPartOf`). */
export type LtvPart = { currency: string; year: string } & Record<string, unknown>;

/**
 * The LTV parts a set of payments in other currencies than `reportingCurrency` makes (a negative
 * amount takes one back): each payment in its `ltvPartOf` attribute, summed exactly. What an order
 * write ADDs and what a rebuild puts are this one sum.
 */
export const ltvPartsOf = (
  payments: { currency: string; paid_at: string; amount: Decimal.Value }[],
  reportingCurrency: string,
): LtvPart[] => {
  const parts = new Map<string, LtvPart>();
  for (const p of payments) {
    if (p.currency === reportingCurrency) continue;
    const { year, attr } = ltvPartOf(p.paid_at);
    const part = parts.get(`${p.currency}#${year}`) ?? { currency: p.currency, year };
    part[attr] = new Decimal(String(part[attr] ?? 0)).plus(p.amount).toFixed();
    parts.set(`${p.currency}#${year}`, part);
  }
  return [...parts.values()];
};

/**
 * The customer's `ltv` in the reporting currency: its paid orders in it, plus each other currency's
 * paid orders at the rate of their month in `zone` (`rates`: currency → `yyyy-mm` → rate). A month
 * without a rate leaves its orders out (`ltv_by_currency` still shows them). Exact; rounded once.
 */
export const convertedLtv = (
  item: Record<string, unknown>,
  reportingCurrency: string,
  parts: LtvPart[],
  rates: ReadonlyMap<string, ReadonlyMap<string, string>>,
  zone: string,
): Decimal => {
  let sum = new Decimal(String(item[ltvAttr(reportingCurrency)] ?? 0));
  for (const part of parts) {
    const book = rates.get(part.currency);
    if (!book) continue;
    for (const [attr, v] of Object.entries(part)) {
      const at = LTV_ATTR.exec(attr);
      if (!at || v === 0) continue;
      const month = at[1]
        ? `${part.year}-${at[1]}`
        : localDateOfIso(`${part.year}-${at[2]}-${at[3]}T${at[4]}:${at[5]}:00Z`, zone).slice(0, 7);
      const rate = book.get(month);
      if (rate !== undefined) sum = sum.plus(new Decimal(String(v)).times(rate));
    }
  }
  return sum;
};

/** A part's amounts (attribute → exact decimal text), zeros left out, in attribute order: two parts are the same when these are. */
export const ltvPartAmounts = (part: LtvPart): [attr: string, amount: string][] =>
  Object.entries(part)
    .filter(([attr, v]) => LTV_ATTR.test(attr) && !new Decimal(String(v)).isZero())
    .map(([attr, v]): [string, string] => [attr, new Decimal(String(v)).toFixed()])
    .sort(([a], [b]) => (a < b ? -1 : 1));

/** The currencies other than the reporting one a customer has paid orders in (its parts to read). */
export const otherLtvCurrencies = (item: Record<string, unknown>, reportingCurrency: string): string[] =>
  Object.keys(ltvByCurrency(item)).filter((c) => c !== reportingCurrency);

/**
 * The API shape of a customer; `ltv` and `mrr` are in the merchant's reporting currency (`ltv`
 * given when converted, else the reporting currency's paid orders alone).
 */
export const presentCustomer = (
  item: CustomerItem,
  reportingCurrency: string,
  { standing = NO_STANDING, ltv }: { standing?: Standing; ltv?: Decimal } = {},
) => ({
  id: item.id,
  email: item.email,
  name: item.name ?? null,
  phone: item.phone ?? null,
  external_id: item.external_id ?? null,
  metadata: decodeMetadata(item.metadata),
  mrr: money(standing.mrr),
  subscription_status: standing.subscription_status,
  ltv: money(ltv ?? item[ltvAttr(reportingCurrency) as `ltv_${string}`]),
  ltv_by_currency: ltvByCurrency(item),
  order_count: Number(item.order_count ?? 0),
  first_payment_at: item.first_payment_at ?? null,
  last_payment_at: item.last_payment_at ?? null,
  created_at: item.created_at,
  updated_at: item.updated_at,
});
export type Customer = ReturnType<typeof presentCustomer>;
