import { now } from '#lib/clock';
import { config } from '#lib/config';
import { retrying } from '#lib/db/retry';
import { allocateIds } from '#lib/db/sequences';
import { WriteSet } from '#lib/db/writes';
import { ConflictError, InvalidError, NotFoundError } from '#lib/errors';
import { formatTimestamp } from '#lib/shared/time';
import { presentWebhookEndpoint } from '#lib/webhooks/model';
import type {
  WebhookDeliveriesListQuery,
  WebhookEndpointCreate,
  WebhookEndpointListQuery,
  WebhookEndpointUpdate,
} from '#lib/webhooks/schemas';
import { newEventId } from '#lib/outbox/store';
import type { WebhookEvent } from '#lib/webhooks/deliver';
import { listDeliveries } from '#lib/webhooks/deliveries';
import { attemptAndRecord } from '#lib/webhooks/delivery';
import { decide, deliveryFor, LIMIT_REACHED, newEndpoint, testWebhook, type Command } from '#lib/webhooks/rules';
import type { Ability } from '#lib/auth/abilities';
import { encryptSecret, newWebhookSecret } from '#lib/webhooks/secrets';
import {
  addEndpointChange,
  addEndpointCreate,
  addEndpointDelete,
  endpointItem,
  endpointsPage,
  getDelivery,
  getWebhookEndpointItem,
  limitReachedBy,
} from '#lib/webhooks/store';
import { checkWebhookUrl } from '#lib/webhooks/url-safety';

/**
 * Webhook endpoints (docs/webhook-endpoints.md). Each change reads by key, decides
 * (lib/webhooks/rules.ts) and persists in one transaction (lib/webhooks/store.ts): the endpoint
 * (created with `attribute_not_exists`, changed or deleted under `version = :read`), its entry in
 * the merchant's endpoint list (the delivery fan-out's read) and, on create and delete, the
 * merchant's endpoint count and the delivery log's heads. Each attempt runs under the one retry
 * policy. The plain secret exists only in memory, between its generation and the 201/200 that
 * returns it.
 */

/** The URL's host must resolve to public addresses only: a 422 on `url` otherwise. */
const assertUrlSafe = async (url: string): Promise<void> => {
  const check = await checkWebhookUrl(url, { allowLocal: config.isLocal() });
  if (!check.ok) throw InvalidError.field('url', check.message);
};

/** POST /webhook-endpoints: 201 with the secret, the only time besides rotation it is shown. */
export const createWebhookEndpoint = async (merchantId: string, input: WebhookEndpointCreate) => {
  await assertUrlSafe(input.url);
  const secret = newWebhookSecret();
  const secretEncrypted = await encryptSecret(merchantId, secret);
  const { webhook_endpoint: id } = await retrying(() => allocateIds(merchantId, { webhook_endpoint: 1 }));
  return retrying(async () => {
    const item = endpointItem(merchantId, newEndpoint(id!, input, secretEncrypted, formatTimestamp(now())));
    const ws = new WriteSet();
    addEndpointCreate(ws, merchantId, item);
    try {
      await ws.commit();
    } catch (err) {
      if (limitReachedBy(err)) throw new ConflictError(LIMIT_REACHED);
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

/** Reads the endpoint by key, decides (rules: `decide`), and writes the plan under the version read. */
const change = async (merchantId: string, id: number, command: () => Promise<Command>) =>
  retrying(async () => {
    const item = await getWebhookEndpointItem(merchantId, id);
    if (!item) throw new NotFoundError();
    const plan = decide(item, await command(), formatTimestamp(now()));
    if (plan.unchanged) return plan.next;
    const ws = new WriteSet();
    addEndpointChange(ws, merchantId, item, plan);
    await ws.commit();
    return plan.next;
  });

/**
 * PATCH /webhook-endpoints/{id}: `url` (checked again), `events`, `description` (null clears),
 * `status`. A request that changes nothing writes nothing.
 */
export const updateWebhookEndpoint = async (merchantId: string, id: number, input: WebhookEndpointUpdate) => {
  let urlChecked = false;
  const next = await change(merchantId, id, async () => {
    if (input.url !== undefined && !urlChecked) {
      await assertUrlSafe(input.url);
      urlChecked = true;
    }
    return { kind: 'update', input };
  });
  return presentWebhookEndpoint(next);
};

/**
 * POST /webhook-endpoints/{id}/rotate-secret: a new secret (returned once); the replaced one is
 * kept, encrypted, for 24 hours (rules: `decide`).
 */
export const rotateWebhookSecret = async (merchantId: string, id: number) => {
  let fresh: { secret: string; encrypted: string } | undefined;
  const next = await change(merchantId, id, async () => {
    if (!fresh) {
      const secret = newWebhookSecret();
      fresh = { secret, encrypted: await encryptSecret(merchantId, secret) };
    }
    return { kind: 'rotate', secretEncrypted: fresh.encrypted };
  });
  return { ...presentWebhookEndpoint(next), secret: fresh!.secret };
};

/** DELETE /webhook-endpoints/{id}: hard delete (the encrypted secrets go with the item). */
export const deleteWebhookEndpoint = async (merchantId: string, id: number): Promise<void> => {
  await retrying(async () => {
    const item = await getWebhookEndpointItem(merchantId, id);
    if (!item) throw new NotFoundError();
    const ws = new WriteSet();
    addEndpointDelete(ws, merchantId, item);
    await ws.commit();
  });
};

/** GET /webhook-endpoints, newest first; the total comes from the endpoint count (strongly consistent). */
export const listWebhookEndpoints = async (merchantId: string, q: WebhookEndpointListQuery) => {
  const { items, meta } = await endpointsPage(merchantId, q);
  return { data: items.map(presentWebhookEndpoint), meta };
};

/** Longer event ids than this are unknown (and would not fit a key). */
const EVENT_ID_MAX = 200;

/** POST /webhook-endpoints/{id}/test: one signed test webhook now, enabled or not; answers the attempt. */
export const sendTestWebhook = async (merchantId: string, id: number, abilities: readonly Ability[]) => {
  const endpoint = await getWebhookEndpointItem(merchantId, id);
  if (!endpoint) throw new NotFoundError();
  const sent = await attemptAndRecord(merchantId, endpoint, testWebhook(endpoint.id, newEventId(), formatTimestamp(now())), undefined);
  return deliveryFor(sent.entry, abilities);
};

/**
 * POST /webhook-endpoints/{id}/deliveries/{event_id}/retry: the event sent again now, as the next
 * attempt of its delivery (the body is the one first sent; the signature is new). Any event this
 * endpoint was sent in the last 30 days, delivered or not; 404 otherwise.
 */
export const retryDelivery = async (merchantId: string, id: number, eventId: string, abilities: readonly Ability[]) => {
  if (eventId.length > EVENT_ID_MAX || !Number.isSafeInteger(id) || id < 1) throw new NotFoundError();
  const { endpoint, state } = await getDelivery(merchantId, id, eventId);
  if (!endpoint || !state || Number(state.expires_at) <= Math.floor(now().getTime() / 1000)) throw new NotFoundError();
  const event = JSON.parse(state.body) as WebhookEvent;
  return deliveryFor((await attemptAndRecord(merchantId, endpoint, event, state)).entry, abilities);
};

/**
 * GET /webhook-endpoints/{id}/deliveries: the endpoint's attempts of the last 30 days, newest first;
 * each body only to a caller that may read the resource it carries (rules: `deliveryFor`).
 */
export const listEndpointDeliveries = async (
  merchantId: string,
  id: number,
  q: WebhookDeliveriesListQuery,
  abilities: readonly Ability[],
) => {
  const { data, meta } = await listDeliveries(merchantId, id, q, Math.floor(now().getTime() / 1000));
  return { data: data.map((entry) => deliveryFor(entry, abilities)), meta };
};
