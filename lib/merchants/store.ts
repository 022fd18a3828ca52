import { GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { hashToken, type TokenItem } from '#lib/auth/tokens';
import { db, tableName } from '#lib/db/client';
import { keys, MERCHANT_DIRECTORY, merchantDirectoryIndex } from '#lib/db/keys';
import { pagesOf } from '#lib/db/query';
import { itemAbsent, WriteConflict, WriteSet } from '#lib/db/writes';
import { ConflictError, ContentionError, NotFoundError } from '#lib/errors';
import {
  generationOf,
  tokenExists,
  type IssuedDetails,
  type Merchant,
  type MerchantChanges,
  type MerchantRecord,
  type TokenPointer,
} from '#lib/merchants/rules';

/** The table adapter of merchants and their token: keys, reads, the writes of a plan, and what a refused write means. */

export const putMerchant = async (merchant: Merchant) => {
  await new WriteSet()
    .put('merchant', { ...keys.merchant(merchant.merchant_id), ...merchant, ...merchantDirectoryIndex(merchant.merchant_id) }, itemAbsent)
    .commit();
};

/** Lists an existing merchant in the merchant directory (idempotent; for merchants written before it, or by hand). */
export const listInDirectory = async (merchantId: string) => {
  const index = merchantDirectoryIndex(merchantId);
  await db().send(
    new UpdateCommand({
      TableName: tableName(),
      Key: keys.merchant(merchantId),
      UpdateExpression: 'SET gsi1pk = :p, gsi1sk = :s',
      ConditionExpression: 'attribute_exists(pk)',
      ExpressionAttributeValues: { ':p': index.gsi1pk, ':s': index.gsi1sk },
    }),
  );
};

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

export const getPointer = async (merchantId: string): Promise<TokenPointer | null> => {
  const { Item } = await db().send(new GetCommand({ TableName: tableName(), Key: keys.merchantToken(merchantId), ConsistentRead: true }));
  return (Item as TokenPointer | undefined) ?? null;
};

/** When the token last authenticated a request: on the token's own item, where the request pipeline stamps it. */
export const tokenLastUsedAt = async (tokenHash: string): Promise<string | null> => {
  const { Item } = await db().send(new GetCommand({ TableName: tableName(), Key: keys.token(tokenHash), ConsistentRead: true }));
  return (Item as TokenItem | undefined)?.last_used_at ?? null;
};

/** Token writes commit only while the merchant exists and is not deleted (a deletion may race them). */
const merchantLive = { expression: 'attribute_exists(pk) AND attribute_not_exists(deleted_at)' };

/**
 * Issues `token`: its item and the merchant's pointer to it. A first token (`replaces` null) needs
 * no valid one to exist; a regenerated one needs the one it replaces to be still the valid one (a
 * concurrent revoke or regenerate wins), and deletes it.
 */
export const issueToken = async (merchant: Merchant, token: string, details: IssuedDetails, replaces: string | null) => {
  const merchantId = merchant.merchant_id;
  const hash = hashToken(token);
  const ws = new WriteSet();
  ws.put(
    'pointer',
    { ...keys.merchantToken(merchantId), token_hash: hash, status: 'active', ...details },
    replaces === null
      ? { expression: 'attribute_not_exists(pk) OR #st = :revoked', names: { '#st': 'status' }, values: { ':revoked': 'revoked' } }
      : {
          expression: 'token_hash = :old AND #st = :active',
          names: { '#st': 'status' },
          values: { ':old': replaces, ':active': 'active' },
        },
  );
  if (replaces !== null) ws.delete('old-token', keys.token(replaces));
  ws.put('token', { ...keys.token(hash), merchant_id: merchantId, status: 'active', ...details }, itemAbsent);
  // The token copies the figures' generation and recount (the zone goes with them): a change committed since the merchant was read refuses this issue.
  const generation = generationOf(merchant);
  const recount = merchant.recount?.generation;
  ws.check('merchant', keys.merchant(merchantId), {
    expression: [
      merchantLive.expression,
      generation ? '#gen = :gen' : '(attribute_not_exists(#gen) OR #gen = :gen)',
      recount === undefined ? 'attribute_not_exists(#rc)' : '#rc.#rg = :rg AND #rc.#st = :st',
      merchant.timezone === undefined ? 'attribute_not_exists(#tz)' : '#tz = :tz',
      merchant.delinquency_days === undefined ? 'attribute_not_exists(#dd)' : '#dd = :dd',
    ].join(' AND '),
    names: {
      '#gen': 'metrics_generation',
      '#tz': 'timezone',
      '#dd': 'delinquency_days',
      '#rc': 'recount',
      ...(recount === undefined ? {} : { '#rg': 'generation', '#st': 'status' }),
    },
    values: {
      ':gen': generation,
      ...(merchant.timezone === undefined ? {} : { ':tz': merchant.timezone }),
      ...(merchant.delinquency_days === undefined ? {} : { ':dd': merchant.delinquency_days }),
      ...(recount === undefined ? {} : { ':rg': recount, ':st': merchant.recount!.status }),
    },
  });
  try {
    await ws.commit();
  } catch (err) {
    if (err instanceof WriteConflict && err.tags.includes('merchant')) {
      if (await getMerchant(merchantId))
        throw new ContentionError("The merchant's settings changed while the token was being issued. Try again.");
      throw new NotFoundError();
    }
    if (err instanceof WriteConflict && replaces === null && err.tags.includes('pointer')) throw tokenExists();
    if (err instanceof WriteConflict && replaces !== null)
      throw new ContentionError('The token changed while it was being regenerated. Try again.');
    throw err;
  }
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

export const writeTokenRevoked = async (merchantId: string, tokenHash: string, revokedAt: string) => {
  const ws = new WriteSet();
  revokeActiveToken(ws, merchantId, tokenHash, revokedAt);
  try {
    await ws.commit();
  } catch (err) {
    if (err instanceof WriteConflict) throw new ContentionError('The token changed while it was being revoked. Try again.');
    throw err;
  }
};

/** Marks the merchant deleted and revokes its valid token (`tokenHash`, when it has one), in one transaction. */
export const markMerchantDeleted = async (merchantId: string, tokenHash: string | null, deletedAt: string) => {
  const ws = new WriteSet();
  ws.update('merchant', keys.merchant(merchantId)).set('deleted_at', deletedAt).when(merchantLive);
  if (tokenHash) revokeActiveToken(ws, merchantId, tokenHash, deletedAt);
  try {
    await ws.commit();
  } catch (err) {
    if (err instanceof WriteConflict && err.tags.includes('merchant')) throw new NotFoundError();
    if (err instanceof WriteConflict) throw new ConflictError('The token changed while the merchant was being deleted. Try again.');
    throw err;
  }
};

/**
 * What a request reads of the figures from its token (their generation, their zone, the recount
 * running: null removes it), written to the valid token (`activeToken`) and its pointer on
 * condition that it is still the valid one; without one, on condition that none is.
 */
export const addFiguresCopies = (ws: WriteSet, merchantId: string, activeToken: string | null, copied: Record<string, unknown>) => {
  const set = Object.entries(copied).filter(([, v]) => v !== null);
  const removed = Object.entries(copied)
    .filter(([, v]) => v === null)
    .map(([k]) => k);
  if (activeToken) {
    const pointer = ws.update('pointer', keys.merchantToken(merchantId)).setAll(Object.fromEntries(set));
    for (const k of removed) pointer.remove(k);
    pointer.when({
      expression: 'token_hash = :h AND #st = :active',
      names: { '#st': 'status' },
      values: { ':h': activeToken, ':active': 'active' },
    });
    const token = ws.update('token', keys.token(activeToken)).setAll(Object.fromEntries(set));
    for (const k of removed) token.remove(k);
    token.when({ expression: 'attribute_exists(pk)' });
  } else {
    ws.check('pointer', keys.merchantToken(merchantId), {
      expression: 'attribute_not_exists(pk) OR #st = :revoked',
      names: { '#st': 'status' },
      values: { ':revoked': 'revoked' },
    });
  }
};

/**
 * Adds a live merchant's changes to `ws`. What a request reads from its token (the time zone, the
 * figures generation) is also written to the valid token (`activeToken`, its hash) and its
 * pointer, on condition that it is still the valid one; without one, on condition that none is.
 * `generation`: the change switches the figures generation, on condition that the one read still counts.
 */
export const addMerchantChanges = (
  ws: WriteSet,
  merchantId: string,
  changes: MerchantChanges,
  activeToken: string | null,
  generation?: { from: number; to: number },
) => {
  const update = ws.update('merchant', keys.merchant(merchantId));
  const copied: Record<string, unknown> = {};
  if (changes.name !== undefined) update.set('name', changes.name);
  if (changes.timezone !== undefined) copied.timezone = changes.timezone;
  if (changes.delinquency_days !== undefined) copied.delinquency_days = changes.delinquency_days;
  if (generation) copied.metrics_generation = generation.to;
  update.setAll(copied);
  update.when(
    generation
      ? {
          expression: `${merchantLive.expression} AND ${generation.from ? '#gen = :gen' : '(attribute_not_exists(#gen) OR #gen = :gen)'}`,
          names: { '#gen': 'metrics_generation' },
          values: { ':gen': generation.from },
        }
      : merchantLive,
  );
  if (!Object.keys(copied).length) return;
  if (activeToken) {
    ws.update('pointer', keys.merchantToken(merchantId))
      .setAll(copied)
      .when({
        expression: 'token_hash = :h AND #st = :active',
        names: { '#st': 'status' },
        values: { ':h': activeToken, ':active': 'active' },
      });
    ws.update('token', keys.token(activeToken)).setAll(copied).when({ expression: 'attribute_exists(pk)' });
  } else {
    ws.check('pointer', keys.merchantToken(merchantId), {
      expression: 'attribute_not_exists(pk) OR #st = :revoked',
      names: { '#st': 'status' },
      values: { ':revoked': 'revoked' },
    });
  }
};

/** Writes a live merchant's changes (`addMerchantChanges`); unknown or deleted: 404. */
export const updateMerchantItem = async (merchantId: string, changes: MerchantChanges, activeToken: string | null) => {
  const ws = new WriteSet();
  addMerchantChanges(ws, merchantId, changes, activeToken);
  try {
    await ws.commit();
  } catch (err) {
    if (err instanceof WriteConflict && err.tags.includes('merchant')) throw new NotFoundError();
    if (err instanceof WriteConflict) throw new ContentionError('The token changed while the settings were being saved. Try again.');
    throw err;
  }
};
