import { createHash, randomBytes } from 'node:crypto';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { db, tableName } from '#lib/db/client';
import { keys } from '#lib/db/keys';
import type { Ability } from '#lib/auth/abilities';

/** The authenticated caller: a merchant and what its token may do. */
export type AuthContext = {
  merchantId: string;
  abilities: Ability[];
  reportingCurrency: string;
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
  prefix: string;
  last_four: string;
  created_at: string;
};

/** Looks the token up afresh (strongly consistent): revocation takes effect on the next request. */
export const authenticate = async (token: string): Promise<AuthContext | null> => {
  const { Item } = await db().send(
    new GetCommand({ TableName: tableName(), Key: keys.token(hashToken(token)), ConsistentRead: true }),
  );
  const item = Item as TokenItem | undefined;
  if (!item || item.status !== 'active') return null;
  return {
    merchantId: item.merchant_id,
    abilities: item.abilities,
    reportingCurrency: item.reporting_currency ?? 'TWD',
  };
};
