import { randomBytes } from 'node:crypto';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { now } from '#lib/clock';
import { config } from '#lib/config';
import { db, tableName } from '#lib/db/client';
import { keys, MERCHANT_DIRECTORY, merchantDirectoryIndex } from '#lib/db/keys';
import { pagesOf } from '#lib/db/query';
import { itemAbsent, WriteConflict, WriteSet } from '#lib/db/writes';
import { generateToken, hashToken, type TokenItem } from '#lib/auth/tokens';
import { ABILITIES, type Ability } from '#lib/auth/abilities';
import { ConflictError, ContentionError, NotFoundError } from '#lib/errors';
import { formatTimestamp } from '#lib/shared/time';

/** Merchants and their single API token (docs/authentication-and-limits.md). */
export type Merchant = { merchant_id: string; name: string; reporting_currency: string; created_at: string };

export const createMerchant = async (name: string, reportingCurrency = config.defaultReportingCurrency()): Promise<Merchant> => {
  const merchant: Merchant = {
    merchant_id: `mer_${randomBytes(10).toString('hex')}`,
    name,
    reporting_currency: reportingCurrency.toUpperCase(),
    created_at: formatTimestamp(now()),
  };
  await new WriteSet()
    .put('merchant', { ...keys.merchant(merchant.merchant_id), ...merchant, ...merchantDirectoryIndex(merchant.merchant_id) }, itemAbsent)
    .commit();
  return merchant;
};

/** A merchant item as stored: `deleted_at` once deleted (its data is kept). */
export type MerchantRecord = Merchant & { deleted_at?: string };

/** What an operator sees of a merchant: its fields, and whether and when it was deleted. */
export const presentMerchantRecord = ({ merchant_id, name, reporting_currency, created_at, deleted_at }: MerchantRecord) => ({
  merchant_id,
  name,
  reporting_currency,
  created_at,
  deleted: Boolean(deleted_at),
  deleted_at: deleted_at ?? null,
});

/**
 * Every merchant of the merchant directory (deleted ones too: their recorded events are still
 * published), in merchant id order, a page at a time.
 */
export async function* merchantPages(pageSize = 100): AsyncGenerator<MerchantRecord[]> {
  yield* pagesOf<MerchantRecord>({ index: 'gsi1', partition: MERCHANT_DIRECTORY, descending: false }, pageSize);
}

/** Every merchant's id (deleted ones too), a page at a time. */
export async function* merchantIdPages(pageSize = 100): AsyncGenerator<string[]> {
  for await (const page of merchantPages(pageSize)) yield page.map((m) => m.merchant_id);
}

/** The merchant item, deleted or not; null when it never existed. */
export const getMerchantRecord = async (merchantId: string): Promise<MerchantRecord | null> => {
  const { Item } = await db().send(new GetCommand({ TableName: tableName(), Key: keys.merchant(merchantId), ConsistentRead: true }));
  return (Item as MerchantRecord | undefined) ?? null;
};

/** The merchant, or null when it does not exist or was deleted. */
export const getMerchant = async (merchantId: string): Promise<Merchant | null> => {
  const record = await getMerchantRecord(merchantId);
  return record && !record.deleted_at ? record : null;
};

/** Token writes commit only while the merchant exists and is not deleted (a deletion may race them). */
const merchantLive = { expression: 'attribute_exists(pk) AND attribute_not_exists(deleted_at)' };

type TokenPointer = { token_hash: string; status: 'active' | 'revoked'; revoked_at?: string } & Omit<TokenItem, 'merchant_id' | 'status'>;

const getPointer = async (merchantId: string): Promise<TokenPointer | null> => {
  const { Item } = await db().send(new GetCommand({ TableName: tableName(), Key: keys.merchantToken(merchantId), ConsistentRead: true }));
  return (Item as TokenPointer | undefined) ?? null;
};

/** The merchant itself, or read by id (404 when unknown); callers that already read it pass it. */
const requireMerchant = async (merchantOrId: Merchant | string): Promise<Merchant> => {
  if (typeof merchantOrId !== 'string') return merchantOrId;
  const merchant = await getMerchant(merchantOrId);
  if (!merchant) throw new NotFoundError();
  return merchant;
};

/** What the back office shows of a token (docs/authentication-and-limits.md): never the token itself. */
export type TokenDetails = { prefix: string; last_four: string; abilities: Ability[]; created_at: string; last_used_at: string | null };

/** The token's details from its pointer; last_used_at lives on the token's own item, where the request pipeline stamps it. */
const tokenDetails = async (pointer: TokenPointer): Promise<TokenDetails> => {
  const { Item } = await db().send(new GetCommand({ TableName: tableName(), Key: keys.token(pointer.token_hash), ConsistentRead: true }));
  const token = Item as TokenItem | undefined;
  return {
    prefix: pointer.prefix,
    last_four: pointer.last_four,
    abilities: pointer.abilities,
    created_at: pointer.created_at,
    last_used_at: token?.last_used_at ?? null,
  };
};

/** The merchant's valid token, described; 404 when it has none (never created, or revoked). */
export const viewToken = async (merchantId: string): Promise<TokenDetails> => {
  const pointer = await getPointer(merchantId);
  if (pointer?.status !== 'active') throw new NotFoundError();
  return tokenDetails(pointer);
};

/** What an operator sees of a merchant's token, valid or not: `none` when it never had one. Never the token or its hash. */
export type TokenStatus =
  | ({ status: 'active' } & TokenDetails)
  | ({ status: 'revoked'; revoked_at: string | null } & TokenDetails)
  | { status: 'none' };

export const tokenStatus = async (merchantId: string): Promise<TokenStatus> => {
  const pointer = await getPointer(merchantId);
  if (!pointer) return { status: 'none' };
  const details = await tokenDetails(pointer);
  return pointer.status === 'active'
    ? { status: 'active', ...details }
    : { status: 'revoked', ...details, revoked_at: pointer.revoked_at ?? null };
};

const tokenItems = (merchant: Merchant, token: string, abilities: Ability[]) => {
  const hash = hashToken(token);
  const details = {
    abilities,
    prefix: token.slice(0, 8),
    last_four: token.slice(-4),
    created_at: formatTimestamp(now()),
    reporting_currency: merchant.reporting_currency,
  };
  return {
    hash,
    token: { ...keys.token(hash), merchant_id: merchant.merchant_id, status: 'active' as const, ...details },
    pointer: { ...keys.merchantToken(merchant.merchant_id), token_hash: hash, status: 'active' as const, ...details },
  };
};

/** A token just issued: the plain value (shown this once) and its details. */
const issued = (
  merchantId: string,
  token: string,
  item: { abilities: Ability[]; prefix: string; last_four: string; created_at: string },
) => ({
  token,
  merchant_id: merchantId,
  abilities: item.abilities,
  prefix: item.prefix,
  last_four: item.last_four,
  created_at: item.created_at,
  last_used_at: null,
});

/** The back office's answer for an issued token: the token and its details, without the merchant id. */
export const presentIssued = ({ merchant_id: _merchant, ...rest }: ReturnType<typeof issued>) => rest;

/** Creates the merchant's token; refused (409) while a valid one exists. The plain token is returned once. */
export const createToken = async (merchantOrId: Merchant | string, abilities: Ability[] = [...ABILITIES]) => {
  const merchant = await requireMerchant(merchantOrId);
  const merchantId = merchant.merchant_id;
  const token = generateToken();
  const items = tokenItems(merchant, token, abilities);
  try {
    await new WriteSet()
      .put('pointer', items.pointer, {
        expression: 'attribute_not_exists(pk) OR #st = :revoked',
        names: { '#st': 'status' },
        values: { ':revoked': 'revoked' },
      })
      .put('token', items.token, itemAbsent)
      .check('merchant', keys.merchant(merchantId), merchantLive)
      .commit();
  } catch (err) {
    if (err instanceof WriteConflict && err.tags.includes('merchant')) throw new NotFoundError();
    if (err instanceof WriteConflict && err.tags.includes('pointer')) {
      throw new ConflictError('A valid token already exists. Revoke it before creating a new one.');
    }
    throw err;
  }
  return issued(merchantId, token, items.token);
};

/** Replaces the valid token atomically: the old one is refused from the next request on. */
export const regenerateToken = async (merchantOrId: Merchant | string) => {
  const merchant = await requireMerchant(merchantOrId);
  const merchantId = merchant.merchant_id;
  const current = await getPointer(merchantId);
  if (current?.status !== 'active') throw new NotFoundError();
  const token = generateToken();
  const items = tokenItems(merchant, token, current.abilities);
  try {
    // The old token must still be the valid one: a concurrent revoke or regenerate wins.
    await new WriteSet()
      .put('pointer', items.pointer, {
        expression: 'token_hash = :old AND #st = :active',
        names: { '#st': 'status' },
        values: { ':old': current.token_hash, ':active': 'active' },
      })
      .delete('old-token', keys.token(current.token_hash))
      .put('token', items.token, itemAbsent)
      .check('merchant', keys.merchant(merchantId), merchantLive)
      .commit();
  } catch (err) {
    if (err instanceof WriteConflict && err.tags.includes('merchant')) throw new NotFoundError();
    if (err instanceof WriteConflict) throw new ContentionError('The token changed while it was being regenerated. Try again.');
    throw err;
  }
  return issued(merchantId, token, items.token);
};

/** The writes that revoke the merchant's valid token `tokenHash` (the pointer only if it still names it). */
const revokeActiveToken = (ws: WriteSet, merchantId: string, tokenHash: string, revokedAt: string) => {
  ws.update('pointer', keys.merchantToken(merchantId))
    .set('status', 'revoked')
    .set('revoked_at', revokedAt)
    .when({
      expression: 'token_hash = :h AND #st = :active',
      names: { '#st': 'status' },
      values: { ':h': tokenHash, ':active': 'active' },
    });
  ws.update('token', keys.token(tokenHash)).set('status', 'revoked').set('revoked_at', revokedAt);
};

/** Revokes the valid token, irreversibly. */
export const revokeToken = async (merchantId: string) => {
  const current = await getPointer(merchantId);
  if (current?.status !== 'active') throw new NotFoundError();
  const revokedAt = formatTimestamp(now());
  const ws = new WriteSet();
  revokeActiveToken(ws, merchantId, current.token_hash, revokedAt);
  try {
    await ws.commit();
  } catch (err) {
    if (err instanceof WriteConflict) throw new ContentionError('The token changed while it was being revoked. Try again.');
    throw err;
  }
  return { merchant_id: merchantId, revoked_at: revokedAt };
};

/**
 * Deletes a merchant (operator CLI only): in one transaction the merchant item is marked deleted and
 * its valid token revoked, so the token is refused from the next request (401) and the back office
 * no longer resolves the merchant (401). Its data stays, as for soft-deleted customers; a deleted
 * merchant gets no new token (404). Unknown or already deleted: 404.
 */
export const deleteMerchant = async (merchantId: string) => {
  await requireMerchant(merchantId);
  const pointer = await getPointer(merchantId);
  const deletedAt = formatTimestamp(now());
  const ws = new WriteSet();
  ws.update('merchant', keys.merchant(merchantId)).set('deleted_at', deletedAt).when(merchantLive);
  if (pointer?.status === 'active') revokeActiveToken(ws, merchantId, pointer.token_hash, deletedAt);
  try {
    await ws.commit();
  } catch (err) {
    if (err instanceof WriteConflict && err.tags.includes('merchant')) throw new NotFoundError();
    if (err instanceof WriteConflict) throw new ConflictError('The token changed while the merchant was being deleted. Try again.');
    throw err;
  }
  return { merchant_id: merchantId, deleted_at: deletedAt };
};

/** What an operator may change of a merchant. The reporting currency is not: metrics are recorded in it as data is written. */
export type MerchantChanges = { name?: string };

/** Changes a live merchant (operator CLI only); unknown or deleted: 404. Returns the merchant as changed. */
export const updateMerchant = async (merchantId: string, changes: MerchantChanges): Promise<Merchant> => {
  const merchant = await requireMerchant(merchantId);
  const ws = new WriteSet();
  const update = ws.update('merchant', keys.merchant(merchantId)).when(merchantLive);
  if (changes.name !== undefined) update.set('name', changes.name);
  try {
    await ws.commit();
  } catch (err) {
    if (err instanceof WriteConflict) throw new NotFoundError();
    throw err;
  }
  const { merchant_id, name, reporting_currency, created_at } = { ...merchant, ...changes };
  return { merchant_id, name, reporting_currency, created_at };
};
