import { createHash } from 'node:crypto';
import canonicalize from 'canonicalize';
import { now } from '#lib/clock';
import { keys } from '#lib/db/keys';
import type { WriteSet } from '#lib/db/writes';

/**
 * Idempotency records (decisions §6): written in the order's own transaction, valid 24 hours.
 * TTL deletion lags, so an expired record is treated as absent on read and may be overwritten.
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
  return createHash('sha256').update(canonicalize({ ...request, metadata }) ?? '').digest('hex');
};

const nowSeconds = () => Math.floor(now().getTime() / 1000);

export const isLive = (record: IdempotencyRecord | null | undefined): record is IdempotencyRecord =>
  !!record && Number(record.expires_at) > nowSeconds();

export const addIdempotencyRecord = (
  ws: WriteSet,
  merchantId: string,
  key: string,
  record: Omit<IdempotencyRecord, 'expires_at'>,
) => {
  ws.put(
    'idempotency',
    { ...keys.idempotency(merchantId, key), ...record, expires_at: nowSeconds() + IDEMPOTENCY_TTL_SECONDS },
    { expression: 'attribute_not_exists(pk) OR expires_at <= :now', values: { ':now': nowSeconds() } },
  );
};
