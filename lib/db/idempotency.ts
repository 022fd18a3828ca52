import { createHash } from 'node:crypto';
import canonicalize from 'canonicalize';
import { now } from '#lib/clock';
import { epochSeconds, isUnexpired } from '#lib/db/ttl';
import { keys } from '#lib/db/keys';
import { GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { db, tableName } from '#lib/db/client';
import type { WriteSet } from '#lib/db/writes';
import { InvalidError } from '#lib/errors';
import { retrying } from '#lib/db/retry';
import { logger } from '#lib/logger';
import { formatTimestamp } from '#lib/shared/time';

/**
 * Idempotency records (`X-Idempotency-Key`): valid 24 hours, scoped to the merchant. POST /orders
 * writes its record in the order's own transaction; a batch writes its record once it has
 * answered (`runIdempotent`). TTL deletion lags, so an expired record is treated as absent on read
 * and may be overwritten.
 */
export const IDEMPOTENCY_TTL_SECONDS = 24 * 3600;

export type IdempotencyRecord = {
  request_hash: string;
  status: number;
  body: string;
  created_at: string;
  expires_at: number;
};

/**
 * Hash of the validated request (defaults applied by the caller) in RFC 8785 canonical JSON, so
 * key order — nested `metadata` included, which is held as JSON text — never makes a retry differ.
 */
export const requestHash = (request: Record<string, unknown>): string => {
  const metadata = typeof request.metadata === 'string' ? JSON.parse(request.metadata) : request.metadata;
  const value = { ...request, metadata };
  let text: string;
  try {
    text = canonicalize(value) ?? '';
  } catch {
    // What RFC 8785 cannot write (nested deeper than the call stack allows, or a number JSON
    // parsed to Infinity): a canonical form built without recursion. Such a body still gets its
    // 200 with failed items, and a repeat its replay.
    text = canonicalWithoutRecursion(value);
  }
  return createHash('sha256').update(text).digest('hex');
};

/** Canonical JSON (keys sorted) of any depth, written with an explicit stack instead of recursion. */
class Token {
  constructor(readonly text: string) {}
}
const canonicalWithoutRecursion = (root: unknown): string => {
  let out = '';
  const stack: unknown[] = [root];
  while (stack.length) {
    const v = stack.pop();
    if (v instanceof Token) out += v.text;
    else if (Array.isArray(v)) {
      stack.push(new Token(']'));
      for (let i = v.length - 1; i >= 0; i--) {
        stack.push(v[i] === undefined ? null : v[i]);
        if (i > 0) stack.push(new Token(','));
      }
      stack.push(new Token('['));
    } else if (v !== null && typeof v === 'object') {
      const keys = Object.keys(v)
        .filter((k) => (v as Record<string, unknown>)[k] !== undefined)
        .sort();
      stack.push(new Token('}'));
      for (let i = keys.length - 1; i >= 0; i--) {
        stack.push((v as Record<string, unknown>)[keys[i]]);
        stack.push(new Token(`${JSON.stringify(keys[i])}:`));
        if (i > 0) stack.push(new Token(','));
      }
      stack.push(new Token('{'));
    } else out += JSON.stringify(v) ?? 'null';
  }
  return out;
};

export const isLive = (record: IdempotencyRecord | null | undefined): record is IdempotencyRecord => !!record && isUnexpired(record);

export const addIdempotencyRecord = (ws: WriteSet, merchantId: string, key: string, record: Omit<IdempotencyRecord, 'expires_at'>) => {
  ws.put(
    'idempotency',
    { ...keys.idempotency(merchantId, key), ...record, expires_at: epochSeconds() + IDEMPOTENCY_TTL_SECONDS },
    { expression: 'attribute_not_exists(pk) OR expires_at <= :now', values: { ':now': epochSeconds() } },
  );
};

export const IDEMPOTENCY_MISMATCH = 'The idempotency key has already been used with a different request.';

export type Replayable<B> = { status: number; body: B; replayed: boolean };

/** The first response again, for a request with the same key and body (else a 422 on the key). */
export const replay = <B>(record: IdempotencyRecord, hash: string): Replayable<B> => {
  if (record.request_hash !== hash) throw InvalidError.field('idempotency_key', IDEMPOTENCY_MISMATCH);
  return { status: Number(record.status), body: JSON.parse(record.body) as B, replayed: true };
};

/** The largest answer recorded under a key, leaving room in the item for its other attributes. */
export const RECORD_BODY_LIMIT = 60_000;

/**
 * Runs a batch once per key: a live record with the same request replays its response; otherwise
 * the batch runs and its response is recorded (a lost race to record it keeps the first). A batch
 * that stopped before answering left no record: run again, its items are found by their own keys
 * (order_no, email, external_id, recorded events' per-item markers), so nothing is applied twice.
 */
export const runIdempotent = async <B>(
  merchantId: string,
  key: string | undefined,
  request: Record<string, unknown>,
  run: () => Promise<B>,
  status = 200,
): Promise<Replayable<B>> => {
  if (!key) return { status, body: await run(), replayed: false };
  const hash = requestHash(request);
  const { Item } = await db().send(
    new GetCommand({ TableName: tableName(), Key: keys.idempotency(merchantId, key), ConsistentRead: true }),
  );
  if (isLive(Item as IdempotencyRecord | undefined)) return replay<B>(Item as IdempotencyRecord, hash);
  const body = await run();
  const text = JSON.stringify(body);
  // An answer echoing a huge invalid identifier cannot be an item (DynamoDB's 400 KB; our 64 KB
  // ceiling): it is not recorded, and a retry runs again, its items found by their own keys.
  if (Buffer.byteLength(text) > RECORD_BODY_LIMIT) return { status, body, replayed: false };
  // The record only replays the answer: its write failing never turns a batch that committed into a
  // 503 (a retry would find each unit stored and answer it `updated`, and log the batch again).
  await retrying(() =>
    db().send(
      new PutCommand({
        TableName: tableName(),
        Item: {
          ...keys.idempotency(merchantId, key),
          request_hash: hash,
          status,
          body: text,
          created_at: formatTimestamp(now()),
          expires_at: epochSeconds() + IDEMPOTENCY_TTL_SECONDS,
        },
        ConditionExpression: 'attribute_not_exists(pk) OR expires_at <= :now',
        ExpressionAttributeValues: { ':now': epochSeconds() },
      }),
    ),
  ).catch((err: Error) => {
    if (err.name !== 'ConditionalCheckFailedException') logger.warn('idempotency record not written', { error: err.message });
  });
  return { status, body, replayed: false };
};

/** A batch endpoint's answer under an optional `X-Idempotency-Key` (replays say so in a header). */
export const idempotentBatch = async <B>(
  merchantId: string,
  key: string | undefined,
  request: Record<string, unknown>,
  run: () => Promise<B>,
) => {
  const r = await runIdempotent(merchantId, key, request, run);
  return { status: r.status, body: { data: r.body }, headers: r.replayed ? { 'Idempotent-Replayed': 'true' } : undefined };
};
