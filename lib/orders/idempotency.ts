import { createHash } from 'node:crypto';
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

const canonical = (v: unknown): string => {
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  if (v && typeof v === 'object') {
    return `{${Object.keys(v)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical((v as Record<string, unknown>)[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(v) ?? 'null';
};

/** Hash of the validated request, independent of key order. */
export const requestHash = (body: unknown): string => createHash('sha256').update(canonical(body)).digest('hex');

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
