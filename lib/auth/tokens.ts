import { createHash, randomBytes } from 'node:crypto';
import { GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { now } from '#lib/clock';
import { db, tableName } from '#lib/db/client';
import { keys } from '#lib/db/keys';
import type { Ability } from '#lib/auth/abilities';
import { logger } from '#lib/logger';
import { formatTimestamp } from '#lib/shared/time';
import { DEFAULT_TIMEZONE } from '#lib/shared/zone';

/** The authenticated caller: a merchant and what its token may do. */
export type AuthContext = {
  merchantId: string;
  abilities: Ability[];
  reportingCurrency: string;
  /** The merchant's reporting time zone (IANA name). */
  timezone: string;
  /** Which generation of the MRR aggregates counts (lib/metrics/generation.ts; 0 until the first settings change). */
  generation: number;
  /** The generation a recount is filling, while one runs (lib/metrics/recount.ts): answers say `Recount-Pending: true`. */
  recount?: number;
  /** Days a renewal may stay past due before the subscription is cancelled as delinquent (absent: 30). */
  delinquencyDays?: number;
};

export const TOKEN_PREFIX = 'ras_';
const TOKEN_SHAPE = /^ras_[0-9A-Za-z]{40,}$/;
const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** `ras_` + 48 base62 characters from a CSPRNG (rejection sampling keeps it unbiased). */
export const generateToken = (): string => {
  let out = '';
  while (out.length < 48) {
    for (const byte of randomBytes(64)) {
      if (byte < 248 && out.length < 48) out += BASE62[byte % 62];
    }
  }
  return TOKEN_PREFIX + out;
};

export const hashToken = (token: string): string => createHash('sha256').update(token).digest('hex');

/** The bearer token of an Authorization header, or null when missing or malformed. */
export const bearerToken = (header: string | undefined): string | null => {
  const m = /^Bearer\s+(\S+)\s*$/i.exec(header ?? '');
  return m && TOKEN_SHAPE.test(m[1]) ? m[1] : null;
};

export type TokenItem = {
  merchant_id: string;
  abilities: Ability[];
  status: 'active' | 'revoked';
  reporting_currency?: string;
  timezone?: string;
  metrics_generation?: number;
  metrics_recount?: number;
  delinquency_days?: number;
  prefix: string;
  last_four: string;
  created_at: string;
  /** When the token last authenticated a request, to the minute (`stampTokenUse`); absent until then. */
  last_used_at?: string;
};

/** Which token authenticated the request, and when it was last stamped as used. */
export type TokenUse = { tokenHash: string; lastUsedAt: string | null };

/** Looks the token up afresh (strongly consistent): revocation takes effect on the next request. */
export const authenticate = async (token: string): Promise<(AuthContext & TokenUse) | null> => {
  const { Item } = await db().send(new GetCommand({ TableName: tableName(), Key: keys.token(hashToken(token)), ConsistentRead: true }));
  const item = Item as TokenItem | undefined;
  if (item?.status !== 'active') return null;
  return {
    merchantId: item.merchant_id,
    abilities: item.abilities,
    reportingCurrency: item.reporting_currency ?? 'TWD',
    timezone: item.timezone ?? DEFAULT_TIMEZONE,
    generation: Number(item.metrics_generation ?? 0),
    ...(item.metrics_recount === undefined ? {} : { recount: Number(item.metrics_recount) }),
    ...(item.delinquency_days === undefined ? {} : { delinquencyDays: Number(item.delinquency_days) }),
    tokenHash: hashToken(token),
    lastUsedAt: item.last_used_at ?? null,
  };
};

/** The one attribute of a token item a request may write (`stampTokenUse`). */
export const TOKEN_USE_ATTRIBUTE = 'last_used_at';

/** `last_used_at` moves at most once per this many milliseconds (no write per request). */
export const LAST_USED_RESOLUTION_MS = 60_000;

/** The stamp a use at `at` needs, or null when the stored one is recent enough. */
const dueStamp = (lastUsedAt: string | null, at: Date): { now: string; cutoff: string } | null => {
  const cutoff = formatTimestamp(new Date(at.getTime() - LAST_USED_RESOLUTION_MS));
  return lastUsedAt !== null && lastUsedAt > cutoff ? null : { now: formatTimestamp(at), cutoff };
};

/**
 * Records that the token was used: `last_used_at` on the token's own item (never in the rate
 * windows, which expire), written only when the value read with the token is a minute old or more,
 * and then under the same condition, so concurrent requests stamp it once. Best effort: a lost race
 * or a failure is not the request's problem (logged without the token).
 */
export const stampTokenUse = async ({ tokenHash, lastUsedAt }: TokenUse): Promise<void> => {
  const due = dueStamp(lastUsedAt, now());
  if (!due) return;
  try {
    await db().send(
      new UpdateCommand({
        TableName: tableName(),
        Key: keys.token(tokenHash),
        UpdateExpression: 'SET #used = :now',
        // A deleted (regenerated) token is not brought back. The condition names no other attribute:
        // IAM lets read functions touch only the key and last_used_at of a token item (a condition's
        // attributes count too), so they can never change its status. A token revoked since it was
        // read is stamped all the same: it did authenticate this request.
        ConditionExpression: 'attribute_exists(pk) AND (attribute_not_exists(#used) OR #used <= :cutoff)',
        ExpressionAttributeNames: { '#used': TOKEN_USE_ATTRIBUTE },
        ExpressionAttributeValues: { ':now': due.now, ':cutoff': due.cutoff },
      }),
    );
  } catch (err) {
    if ((err as Error).name !== 'ConditionalCheckFailedException') logger.warn('last_used_at not recorded', { error: (err as Error).name });
  }
};
