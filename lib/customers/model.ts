import Decimal from 'decimal.js';
import { NO_STANDING, type Standing } from '#lib/metrics/timeline';
import { decodeMetadata } from '#lib/shared/metadata';
import { money } from '#lib/shared/money';

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

/** The API shape of a customer; `ltv` and `mrr` are in the merchant's reporting currency. */
export const presentCustomer = (item: CustomerItem, reportingCurrency: string, standing: Standing = NO_STANDING) => ({
  id: item.id,
  email: item.email,
  name: item.name ?? null,
  phone: item.phone ?? null,
  external_id: item.external_id ?? null,
  metadata: decodeMetadata(item.metadata),
  mrr: money(standing.mrr),
  subscription_status: standing.subscription_status,
  ltv: money(item[ltvAttr(reportingCurrency) as `ltv_${string}`]),
  ltv_by_currency: ltvByCurrency(item),
  order_count: Number(item.order_count ?? 0),
  first_payment_at: item.first_payment_at ?? null,
  last_payment_at: item.last_payment_at ?? null,
  created_at: item.created_at,
  updated_at: item.updated_at,
});
export type Customer = ReturnType<typeof presentCustomer>;
