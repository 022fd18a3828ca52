import Decimal from 'decimal.js';
import { now } from '#lib/clock';
import { config } from '#lib/config';
import { readTotals } from '#lib/db/counters';
import { keys, webhookEndpointIndexes } from '#lib/db/keys';
import { listPage, type IndexQuery } from '#lib/db/query';
import { retrying } from '#lib/db/retry';
import { allocateIds } from '#lib/db/sequences';
import { itemAbsent, versionIs, WriteConflict, WriteSet } from '#lib/db/writes';
import { ConflictError, InvalidError, NotFoundError } from '#lib/errors';
import { formatTimestamp } from '#lib/shared/time';
import { presentWebhookEndpoint, type WebhookEndpointItem } from '#lib/webhooks/model';
import type { WebhookDeliveriesListQuery, WebhookEndpointCreate, WebhookEndpointListQuery, WebhookEndpointUpdate } from '#lib/webhooks/schemas';
import { batchGet, keyId } from '#lib/db/batch-get';
import { newEventId } from '#lib/outbox';
import type { WebhookEvent } from '#lib/webhooks/deliver';
import { deleteDeliveryDaysHead, listDeliveries, putDeliveryDaysHead } from '#lib/webhooks/deliveries';
import { attemptAndRecord, type DeliveryStateItem } from '#lib/webhooks/delivery';
import { encryptSecret, newWebhookSecret } from '#lib/webhooks/secrets';
import { deleteListEntry, ENDPOINT_COUNT_ATTR, endpointCountKey, getWebhookEndpointItem, putListEntry } from '#lib/webhooks/store';
import { checkWebhookUrl } from '#lib/webhooks/url-safety';

/**
 * Webhook endpoints. Each change is one transaction: the endpoint (created with
 * `attribute_not_exists`, changed or deleted under `version = :read`), its entry in the merchant's
 * endpoint list (the delivery fan-out's read, `lib/webhooks/store.ts`) and, on create and delete,
 * the merchant's endpoint count and the delivery log's heads (`lib/webhooks/deliveries.ts`). Each
 * attempt reads by key under the one retry policy. The plain secret exists only in memory, between
 * its generation and the 201/200 that returns it.
 */

/** Endpoints per merchant: keeps the delivery fan-out's read (every endpoint of a merchant) one Query page. */
export const MAX_WEBHOOK_ENDPOINTS = 20;
export const LIMIT_REACHED = `A merchant can have at most ${MAX_WEBHOOK_ENDPOINTS} webhook endpoints. Delete one first.`;
/** How long a replaced secret keeps signing deliveries after a rotation. */
export const PREVIOUS_SECRET_TTL_MS = 24 * 3600 * 1000;

const ONE = new Decimal(1);


/** The URL's host must resolve to public addresses only: a 422 on `url` otherwise. */
const assertUrlSafe = async (url: string): Promise<void> => {
  const check = await checkWebhookUrl(url, { allowLocal: config.isLocal() });
  if (!check.ok) throw InvalidError.field('url', check.message);
};

const withIndex = (merchantId: string, e: WebhookEndpointItem) => ({ ...e, ...webhookEndpointIndexes.all(merchantId, e.created_at, e.id) });

/** A replaced secret past its 24 hours is dropped at the endpoint's next write. */
const withoutExpiredPrevious = (e: WebhookEndpointItem, at: string): WebhookEndpointItem => {
  if (!e.previous_secret_expires_at || e.previous_secret_expires_at > at) return e;
  const { previous_secret_encrypted: _1, previous_secret_expires_at: _2, ...rest } = e;
  return rest;
};

/** POST /webhook-endpoints: 201 with the secret, the only time besides rotation it is shown. */
export const createWebhookEndpoint = async (merchantId: string, input: WebhookEndpointCreate) => {
  await assertUrlSafe(input.url);
  const secret = newWebhookSecret();
  const secretEncrypted = await encryptSecret(merchantId, secret);
  const { webhook_endpoint: id } = await retrying(() => allocateIds(merchantId, { webhook_endpoint: 1 }));
  return retrying(async () => {
    const at = formatTimestamp(now());
    const item: WebhookEndpointItem = {
      ...keys.webhookEndpoint(merchantId, id!),
      id: id!,
      url: input.url,
      events: input.events,
      status: 'enabled',
      description: input.description ?? null,
      secret_encrypted: secretEncrypted,
      secret_created_at: at,
      created_at: at,
      updated_at: at,
      version: 1,
    };
    const ws = new WriteSet();
    ws.put('endpoint', withIndex(merchantId, item), itemAbsent);
    ws.put('log-head', keys.webhookDeliveryLogHead(merchantId, id!), itemAbsent);
    putDeliveryDaysHead(ws, merchantId, id!);
    putListEntry(ws, merchantId, item);
    ws.update('endpoint-count', endpointCountKey(merchantId))
      .add(ENDPOINT_COUNT_ATTR, ONE)
      .when({ expression: 'attribute_not_exists(#n) OR #n < :max', names: { '#n': ENDPOINT_COUNT_ATTR }, values: { ':max': MAX_WEBHOOK_ENDPOINTS } });
    try {
      await ws.commit();
    } catch (err) {
      if (err instanceof WriteConflict && err.tags.includes('endpoint-count')) throw new ConflictError(LIMIT_REACHED);
      throw err;
    }
    return { ...presentWebhookEndpoint(item), secret };
  });
};

/** GET /webhook-endpoints/{id}. */
export const getWebhookEndpoint = async (merchantId: string, id: number) => {
  const item = await getWebhookEndpointItem(merchantId, id);
  if (!item) throw new NotFoundError();
  return presentWebhookEndpoint(item);
};

const sameEvents = (a: readonly string[], b: readonly string[]) => a.length === b.length && a.every((t, i) => t === b[i]);

/**
 * PATCH /webhook-endpoints/{id}: `url` (checked again), `events`, `description` (null clears),
 * `status`. A request that changes nothing writes nothing.
 */
export const updateWebhookEndpoint = async (merchantId: string, id: number, input: WebhookEndpointUpdate) => {
  let urlChecked = false;
  return retrying(async () => {
    const item = await getWebhookEndpointItem(merchantId, id);
    if (!item) throw new NotFoundError();
    if (input.url !== undefined && !urlChecked) {
      await assertUrlSafe(input.url);
      urlChecked = true;
    }
    const at = formatTimestamp(now());
    const planned: WebhookEndpointItem = {
      ...item,
      url: input.url ?? item.url,
      events: input.events ?? item.events,
      description: input.description === undefined ? (item.description ?? null) : input.description,
      status: input.status ?? item.status,
    };
    const unchanged =
      planned.url === item.url &&
      sameEvents(planned.events, item.events) &&
      planned.description === (item.description ?? null) &&
      planned.status === item.status;
    if (unchanged) return presentWebhookEndpoint(item);
    const next: WebhookEndpointItem = { ...withoutExpiredPrevious(planned, at), updated_at: at, version: item.version + 1 };
    const ws = new WriteSet();
    ws.put('endpoint', withIndex(merchantId, next), versionIs(item.version));
    putListEntry(ws, merchantId, next);
    // Enabled again: its 5 days of failures (auto-disable) count from scratch.
    if (item.status === 'disabled' && next.status === 'enabled') ws.delete('health', keys.webhookEndpointHealth(merchantId, id));
    await ws.commit();
    return presentWebhookEndpoint(next);
  });
};

/**
 * POST /webhook-endpoints/{id}/rotate-secret: a new secret (returned once); the replaced one is
 * kept, encrypted, for 24 hours so deliveries carry both signatures meanwhile. A second rotation
 * within those hours replaces the kept one: only the secret just replaced stays valid beside the new.
 */
export const rotateWebhookSecret = async (merchantId: string, id: number) => {
  let fresh: { secret: string; encrypted: string } | undefined;
  return retrying(async () => {
    const item = await getWebhookEndpointItem(merchantId, id);
    if (!item) throw new NotFoundError();
    if (!fresh) {
      const secret = newWebhookSecret();
      fresh = { secret, encrypted: await encryptSecret(merchantId, secret) };
    }
    const at = formatTimestamp(now());
    const next: WebhookEndpointItem = {
      ...item,
      secret_encrypted: fresh.encrypted,
      secret_created_at: at,
      previous_secret_encrypted: item.secret_encrypted,
      previous_secret_expires_at: formatTimestamp(new Date(Date.parse(at) + PREVIOUS_SECRET_TTL_MS)),
      updated_at: at,
      version: item.version + 1,
    };
    const ws = new WriteSet();
    ws.put('endpoint', withIndex(merchantId, next), versionIs(item.version));
    // Not changed, but written: an endpoint from before list entries gets its entry.
    putListEntry(ws, merchantId, next);
    await ws.commit();
    return { ...presentWebhookEndpoint(next), secret: fresh.secret };
  });
};

/** DELETE /webhook-endpoints/{id}: hard delete (the encrypted secrets go with the item). */
export const deleteWebhookEndpoint = async (merchantId: string, id: number): Promise<void> => {
  await retrying(async () => {
    const item = await getWebhookEndpointItem(merchantId, id);
    if (!item) throw new NotFoundError();
    const ws = new WriteSet();
    ws.delete('endpoint', keys.webhookEndpoint(merchantId, id), versionIs(item.version));
    ws.delete('log-head', keys.webhookDeliveryLogHead(merchantId, id));
    deleteDeliveryDaysHead(ws, merchantId, id);
    deleteListEntry(ws, merchantId, id);
    ws.update('endpoint-count', endpointCountKey(merchantId)).add(ENDPOINT_COUNT_ATTR, ONE.negated());
    await ws.commit();
  });
};

/** GET /webhook-endpoints, newest first; the total comes from the endpoint count (strongly consistent). */
export const listWebhookEndpoints = async (merchantId: string, q: WebhookEndpointListQuery) => {
  const query: IndexQuery = { index: 'gsi1', partition: webhookEndpointIndexes.partitions.all(merchantId) };
  const count = async () => (await readTotals(merchantId, 'WEBHOOK_ENDPOINTS'))[ENDPOINT_COUNT_ATTR]?.toNumber() ?? 0;
  const { items, meta } = await listPage<WebhookEndpointItem>(query, count, q);
  return { data: items.map(presentWebhookEndpoint), meta };
};

/** The type of the event `POST /webhook-endpoints/{id}/test` sends (not one a merchant subscribes to). */
export const TEST_EVENT_TYPE = 'webhook.test';
/** Longer event ids than this are unknown (and would not fit a key). */
const EVENT_ID_MAX = 200;

/** POST /webhook-endpoints/{id}/test: one signed `webhook.test` now, enabled or not; answers the attempt. */
export const sendTestEvent = async (merchantId: string, id: number) => {
  const endpoint = await getWebhookEndpointItem(merchantId, id);
  if (!endpoint) throw new NotFoundError();
  const event = {
    id: newEventId(),
    type: TEST_EVENT_TYPE,
    created_at: formatTimestamp(now()),
    data: { object: { webhook_endpoint_id: endpoint.id, message: 'A test event from the revenue analytics API.' } },
  };
  return (await attemptAndRecord(merchantId, endpoint, event, undefined)).entry;
};

/**
 * POST /webhook-endpoints/{id}/deliveries/{event_id}/retry: the event sent again now, as the next
 * attempt of its delivery (the body is the one first sent; the signature is new). Any event this
 * endpoint was sent in the last 30 days, delivered or not; 404 otherwise.
 */
export const retryDelivery = async (merchantId: string, id: number, eventId: string) => {
  if (eventId.length > EVENT_ID_MAX || !Number.isSafeInteger(id) || id < 1) throw new NotFoundError();
  const endpointKey = keys.webhookEndpoint(merchantId, id);
  const stateKey = keys.webhookDeliveryState(merchantId, id, eventId);
  const found = await batchGet([endpointKey, stateKey]);
  const endpoint = found.get(keyId(endpointKey)) as WebhookEndpointItem | undefined;
  const state = found.get(keyId(stateKey)) as DeliveryStateItem | undefined;
  if (!endpoint || !state || Number(state.expires_at) <= Math.floor(now().getTime() / 1000)) throw new NotFoundError();
  const event = JSON.parse(state.body) as WebhookEvent;
  return (await attemptAndRecord(merchantId, endpoint, event, state)).entry;
};

/** GET /webhook-endpoints/{id}/deliveries: the endpoint's attempts of the last 30 days, newest first. */
export const listEndpointDeliveries = async (merchantId: string, id: number, q: WebhookDeliveriesListQuery) =>
  listDeliveries(merchantId, id, q, Math.floor(now().getTime() / 1000));
