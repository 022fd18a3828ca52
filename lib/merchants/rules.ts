import type { Ability } from '#lib/auth/abilities';
import type { TokenItem } from '#lib/auth/tokens';
import { ConflictError, NotFoundError } from '#lib/errors';
import { DEFAULT_TIMEZONE } from '#lib/shared/zone';

/**
 * Merchants and their single API token (docs/authentication-and-limits.md), in memory: what a
 * merchant and a token are made of, and what creating, regenerating and revoking a token may do.
 */

/**
 * `timezone`: the reporting time zone as set (an IANA name; absent means UTC).
 * `metrics_generation`: which generation of the figures counts (absent: 0); `figures_timezone`, the
 * zone it counts in (absent: `timezone`, as before any recount). They differ while a recount of a
 * zone change runs (lib/metrics/recount.ts): the figures follow the new zone from its switch.
 * `recount`: the merchant's last recount; `recount_starts`: when its recounts of the last hour started.
 */
export type Merchant = {
  merchant_id: string;
  name: string;
  reporting_currency: string;
  created_at: string;
  timezone?: string;
  metrics_generation?: number;
  figures_timezone?: string;
  recount?: { generation: number; status: 'pending' | 'done'; requested_at: string; switched_at?: string };
  recount_starts?: string[];
  /** Days a renewal may stay past due before the subscription is cancelled as delinquent (absent: 30). */
  delinquency_days?: number;
};
/** A merchant item as stored: `deleted_at` once deleted (its data is kept). */
export type MerchantRecord = Merchant & { deleted_at?: string };
/** What an operator may change of a merchant. The reporting currency is not: metrics are recorded in it as data is written. */
export type MerchantChanges = { name?: string; timezone?: string; delinquency_days?: number };

/** `delinquency_days` when the merchant has set none. */
export const DEFAULT_DELINQUENCY_DAYS = 30;
/** The merchant's `delinquency_days`. */
export const delinquencyDaysOf = (merchant: Pick<Merchant, 'delinquency_days'>): number =>
  Number(merchant.delinquency_days ?? DEFAULT_DELINQUENCY_DAYS);
/** The merchant's reporting time zone. */
export const zoneOf = (merchant: Merchant): string => merchant.timezone ?? DEFAULT_TIMEZONE;
export const generationOf = (merchant: Pick<Merchant, 'metrics_generation'>): number => Number(merchant.metrics_generation ?? 0);
/** The time zone the merchant's figures count in now (the new one only once its recount switched). */
export const figuresZoneOf = (merchant: Merchant): string => merchant.figures_timezone ?? zoneOf(merchant);
/** The generation a recount is filling, while one runs. */
export const recountingOf = (merchant: Pick<Merchant, 'recount'>): number | undefined =>
  merchant.recount?.status === 'pending' ? merchant.recount.generation : undefined;

/** The settings a merchant's back office reads and changes. */
export const presentSettings = (merchant: Merchant) => ({
  timezone: zoneOf(merchant),
  reporting_currency: merchant.reporting_currency,
  delinquency_days: delinquencyDaysOf(merchant),
});

/** The merchant's pointer to its token: which one is valid (or was, until revoked), and what it may do. */
export type TokenPointer = { token_hash: string; status: 'active' | 'revoked'; revoked_at?: string } & Omit<
  TokenItem,
  'merchant_id' | 'status'
>;

export const TOKEN_EXISTS = 'A valid token already exists. Revoke it before creating a new one.';

export const newMerchant = (merchantId: string, name: string, reportingCurrency: string, at: string): Merchant => ({
  merchant_id: merchantId,
  name,
  reporting_currency: reportingCurrency.toUpperCase(),
  timezone: DEFAULT_TIMEZONE,
  created_at: at,
});

/** A merchant as changed (only what may change). */
export const changedMerchant = (merchant: Merchant, changes: MerchantChanges): Merchant => ({
  merchant_id: merchant.merchant_id,
  name: changes.name ?? merchant.name,
  reporting_currency: merchant.reporting_currency,
  created_at: merchant.created_at,
  timezone: changes.timezone ?? zoneOf(merchant),
  ...((changes.delinquency_days ?? merchant.delinquency_days) === undefined
    ? {}
    : { delinquency_days: changes.delinquency_days ?? merchant.delinquency_days }),
  ...(merchant.metrics_generation ? { metrics_generation: merchant.metrics_generation } : {}),
  ...(merchant.figures_timezone ? { figures_timezone: merchant.figures_timezone } : {}),
  ...(merchant.recount ? { recount: merchant.recount } : {}),
  ...(merchant.recount_starts ? { recount_starts: merchant.recount_starts } : {}),
});

/** What an operator sees of a merchant: its fields, and whether and when it was deleted. */
export const presentMerchantRecord = (merchant: MerchantRecord) => ({
  merchant_id: merchant.merchant_id,
  name: merchant.name,
  reporting_currency: merchant.reporting_currency,
  timezone: merchant.timezone ?? DEFAULT_TIMEZONE,
  delinquency_days: delinquencyDaysOf(merchant),
  created_at: merchant.created_at,
  deleted: Boolean(merchant.deleted_at),
  deleted_at: merchant.deleted_at ?? null,
});

/** What the token item and the pointer share for a token just issued: never the token, only how to recognise it. */
export const issuedDetails = (merchant: Merchant, token: string, abilities: Ability[], at: string) => ({
  abilities,
  prefix: token.slice(0, 8),
  last_four: token.slice(-4),
  created_at: at,
  reporting_currency: merchant.reporting_currency,
  // Copied so that each request knows the figures' zone and generation (and a recount running) from its token lookup; a change rewrites them.
  timezone: figuresZoneOf(merchant),
  ...(generationOf(merchant) ? { metrics_generation: generationOf(merchant) } : {}),
  ...(recountingOf(merchant) !== undefined ? { metrics_recount: recountingOf(merchant) } : {}),
  ...(merchant.delinquency_days === undefined ? {} : { delinquency_days: merchant.delinquency_days }),
});
export type IssuedDetails = ReturnType<typeof issuedDetails>;

/**
 * What a token command does given the pointer read: a new token (with the abilities it keeps, and
 * the hash it replaces), or the valid one revoked. A create does not read first — its write's
 * condition (no valid token) decides, and a refused one is `TOKEN_EXISTS` — so it is not here.
 */
export type TokenCommand = { kind: 'regenerate' } | { kind: 'revoke' };
type IssuePlan = { kind: 'issue'; abilities: Ability[]; replaces: string };
type RevokePlan = { kind: 'revoke'; tokenHash: string; revokedAt: string };
export type TokenPlan<C extends TokenCommand = TokenCommand> = C extends { kind: 'regenerate' } ? IssuePlan : RevokePlan;

export const decideToken = <C extends TokenCommand>(current: TokenPointer | null, command: C, at: string): TokenPlan<C> => {
  // No token, or a revoked one: nothing to regenerate or revoke.
  if (current?.status !== 'active') throw new NotFoundError();
  const plan: IssuePlan | RevokePlan =
    command.kind === 'regenerate'
      ? { kind: 'issue', abilities: current.abilities, replaces: current.token_hash }
      : { kind: 'revoke', tokenHash: current.token_hash, revokedAt: at };
  return plan as TokenPlan<C>;
};

/** A create refused by its condition: the merchant has a valid token. */
export const tokenExists = () => new ConflictError(TOKEN_EXISTS);

/** What the back office shows of a token: never the token itself. */
export type TokenDetails = { prefix: string; last_four: string; abilities: Ability[]; created_at: string; last_used_at: string | null };

export const tokenDetails = (pointer: TokenPointer, lastUsedAt: string | null): TokenDetails => ({
  prefix: pointer.prefix,
  last_four: pointer.last_four,
  abilities: pointer.abilities,
  created_at: pointer.created_at,
  last_used_at: lastUsedAt,
});

/** What an operator sees of a merchant's token, valid or not: `none` when it never had one. Never the token or its hash. */
export type TokenStatus =
  | ({ status: 'active' } & TokenDetails)
  | ({ status: 'revoked'; revoked_at: string | null } & TokenDetails)
  | { status: 'none' };

export const tokenStatusOf = (pointer: TokenPointer | null, lastUsedAt: string | null): TokenStatus => {
  if (!pointer) return { status: 'none' };
  const details = tokenDetails(pointer, lastUsedAt);
  return pointer.status === 'active'
    ? { status: 'active', ...details }
    : { status: 'revoked', ...details, revoked_at: pointer.revoked_at ?? null };
};

/** A token just issued: the plain value (shown this once) and its details. */
export const issued = (merchantId: string, token: string, details: IssuedDetails) => ({
  token,
  merchant_id: merchantId,
  abilities: details.abilities,
  prefix: details.prefix,
  last_four: details.last_four,
  created_at: details.created_at,
  last_used_at: null,
});

/** The back office's answer for an issued token: the token and its details, without the merchant id. */
export const presentIssued = ({ merchant_id: _merchant, ...rest }: ReturnType<typeof issued>) => rest;
