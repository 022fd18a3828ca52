import type { Ability } from '#lib/auth/abilities';
import type { EventType } from '#lib/outbox/store';
import { formatTimestamp } from '#lib/shared/time';
import type { WebhookEndpointItem } from '#lib/webhooks/model';
import type { WebhookEndpointCreate, WebhookEndpointUpdate } from '#lib/webhooks/schemas';

/**
 * The webhook endpoints' rules (docs/webhook-endpoints.md), pure: the cap, what an update or a
 * rotation does to an endpoint, which endpoints receive a webhook, and the test webhook. No
 * database, no HTTP: the service reads, decides and persists.
 */

/** Endpoints per merchant: keeps the delivery fan-out's read (every endpoint of a merchant) one Query page. */
export const MAX_WEBHOOK_ENDPOINTS = 20;
export const LIMIT_REACHED = `A merchant can have at most ${MAX_WEBHOOK_ENDPOINTS} webhook endpoints. Delete one first.`;
/** How long a replaced secret keeps signing deliveries after a rotation. */
export const PREVIOUS_SECRET_TTL_MS = 24 * 3600 * 1000;

/** The fields of a stored endpoint other than its key. */
export type Endpoint = Omit<WebhookEndpointItem, 'pk' | 'sk'>;

/** Whether an endpoint receives webhooks of this type (delivery fan-out). */
export const receives = (e: Pick<WebhookEndpointItem, 'status' | 'events'>, type: EventType): boolean =>
  e.status === 'enabled' && (e.events[0] === '*' || (e.events as string[]).includes(type));

/** A new endpoint: enabled, with its (encrypted) secret issued now. */
export const newEndpoint = (id: number, input: WebhookEndpointCreate, secretEncrypted: string, at: string): Endpoint => ({
  id,
  url: input.url,
  events: input.events,
  status: 'enabled',
  description: input.description ?? null,
  secret_encrypted: secretEncrypted,
  secret_created_at: at,
  created_at: at,
  updated_at: at,
  version: 1,
});

/** A replaced secret past its 24 hours is dropped at the endpoint's next write. */
const withoutExpiredPrevious = <T extends Endpoint>(e: T, at: string): T => {
  if (!e.previous_secret_expires_at || e.previous_secret_expires_at > at) return e;
  const { previous_secret_encrypted: _1, previous_secret_expires_at: _2, ...rest } = e;
  return rest as T;
};

const sameEvents = (a: readonly string[], b: readonly string[]) => a.length === b.length && a.every((t, i) => t === b[i]);

/** A planned change: the endpoint after it, or nothing to write. */
export type Plan<T extends Endpoint> = { next: T; unchanged?: boolean; healthReset?: boolean };

export type Command = { kind: 'update'; input: WebhookEndpointUpdate } | { kind: 'rotate'; secretEncrypted: string };

/**
 * Plans `command` on the endpoint at `at`:
 * - update: `url`, `events`, `description` (null clears), `status`; a request that changes nothing
 *   writes nothing; enabled again, its 5 days of failures (auto-disable) count from scratch;
 * - rotate: the new secret; the replaced one is kept for 24 hours so deliveries carry both
 *   signatures meanwhile (a second rotation within them replaces the kept one).
 */
export const decide = <T extends Endpoint>(e: T, command: Command, at: string): Plan<T> => {
  if (command.kind === 'rotate') {
    return {
      next: {
        ...e,
        secret_encrypted: command.secretEncrypted,
        secret_created_at: at,
        previous_secret_encrypted: e.secret_encrypted,
        previous_secret_expires_at: formatTimestamp(new Date(Date.parse(at) + PREVIOUS_SECRET_TTL_MS)),
        updated_at: at,
        version: e.version + 1,
      },
    };
  }
  const { input } = command;
  const planned: T = {
    ...e,
    url: input.url ?? e.url,
    events: input.events ?? e.events,
    description: input.description === undefined ? (e.description ?? null) : input.description,
    status: input.status ?? e.status,
  };
  const unchanged =
    planned.url === e.url &&
    sameEvents(planned.events, e.events) &&
    planned.description === (e.description ?? null) &&
    planned.status === e.status;
  if (unchanged) return { next: e, unchanged: true };
  const next: T = { ...withoutExpiredPrevious(planned, at), updated_at: at, version: e.version + 1 };
  return { next, healthReset: e.status === 'disabled' && next.status === 'enabled' };
};

/** The type of the webhook `POST /webhook-endpoints/{id}/test` sends (not one a merchant subscribes to). */
export const TEST_WEBHOOK_TYPE = 'webhook.test';

/** The test webhook for an endpoint, sent now whether it is enabled or not. */
export const testWebhook = (endpointId: number, id: string, at: string) => ({
  id,
  type: TEST_WEBHOOK_TYPE,
  created_at: at,
  data: { object: { webhook_endpoint_id: endpointId, message: 'A test event from the revenue analytics API.' } },
});

/**
 * Which ability reading an event's body takes: the read ability of the resource it carries (a body
 * holds the whole order or subscription, customer fields included). The test event carries nothing
 * of the merchant's: null, anyone may see it. A type not known here is withheld from everyone.
 */
export const payloadAbility = (eventType: string): Ability | null | undefined => {
  if (eventType === TEST_WEBHOOK_TYPE) return null;
  if (eventType.startsWith('order.')) return 'orders:read';
  if (eventType.startsWith('subscription.')) return 'subscriptions:read';
  return undefined;
};

/**
 * The carried resource's `id`, from the start of a body as `webhookBody` writes it (its first keys
 * in this order, the object's `id` first), so a body the log keeps truncated still names it. Null
 * when there is none (the test event) or the text is not such a body.
 */
const RESOURCE_ID = /^\{"id":"[^"\\]*","type":"[^"\\]*","created_at":"[^"\\]*","data":\{"object":\{"id":(\d{1,15})[,}]/;
export const resourceIdOf = (payload: string | null): number | null => {
  const m = payload === null ? null : RESOURCE_ID.exec(payload);
  return m ? Number(m[1]) : null;
};

type LoggedAttempt = { event_type: string; payload: string | null; payload_truncated: boolean };

/**
 * A delivery-log entry as a caller holding `abilities` may see it: always the event's id, type and
 * carried resource id; the body only when the caller may read that resource through its own route
 * (else `payload` null and `payload_withheld` true), so the log never shows more than `GET /orders`
 * or `GET /subscriptions` would.
 */
export const deliveryFor = <E extends LoggedAttempt>(
  entry: E,
  abilities: readonly Ability[],
): E & { resource_id: number | null; payload_withheld: boolean } => {
  const needs = payloadAbility(entry.event_type);
  const visible = needs === null || (needs !== undefined && abilities.includes(needs));
  const resource_id = resourceIdOf(entry.payload);
  if (visible || entry.payload === null) return { ...entry, resource_id, payload_withheld: false };
  return { ...entry, payload: null, payload_truncated: false, resource_id, payload_withheld: true };
};
