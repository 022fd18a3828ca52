import { randomUUID } from 'node:crypto';
import Decimal from 'decimal.js';
import { now } from '#lib/clock';
import { config } from '#lib/config';
import { batchGet, keyId } from '#lib/db/batch-get';
import { keys } from '#lib/db/keys';
import { deadline, retrying } from '#lib/db/retry';
import { WriteConflict, WriteSet } from '#lib/db/writes';
import { logger } from '#lib/logger';
import { formatTimestamp } from '#lib/shared/time';
import { attemptDelivery, DELIVERY_TIMEOUT_MS, webhookBody, type DeliveryResult, type WebhookEvent } from '#lib/webhooks/deliver';
import { addDeliveryLog, DELIVERY_LOG_TTL_SECONDS, loggedPayload, type DeliveryLogEntry } from '#lib/webhooks/deliveries';
import type { WebhookEndpointItem } from '#lib/webhooks/model';
import { receives } from '#lib/webhooks/rules';
import { AUTO_DISABLE_AFTER_MS, nextRetryDelaySeconds } from '#lib/webhooks/schedule';
import { decryptSecret } from '#lib/webhooks/secrets';
import { putListEntry } from '#lib/webhooks/store';
import type { Resolver } from '#lib/webhooks/url-safety';
import type { EventType } from '#lib/outbox/store';

/**
 * Delivering one event to one endpoint, for the queue consumer (`deliverTask`), the test event and
 * the manual retry (`attemptAndRecord`). Every attempt is recorded in one transaction, exactly once:
 * its delivery-log entry and its day's count, the delivery's state (body, attempt count,
 * delivered_at; conditional on the count the attempt was numbered from) and the endpoint's health
 * (since when every attempt has failed).
 */

/** One event for one endpoint: what the fan-out queues and the delivery consumer receives. */
export type DeliveryTask = { merchant_id: string; endpoint_id: number; event: WebhookEvent };

/** The delivery of one event to one endpoint, kept 30 days: dedupes redeliveries, feeds manual retries. */
export type DeliveryStateItem = {
  pk: string;
  sk: string;
  event_id: string;
  event_type: string;
  /** `webhookBody(event)`: the bytes every attempt signs and sends. */
  body: string;
  /** Every attempt (numbering the log), and those the queue made (the retry schedule's count). */
  attempts: number;
  scheduled_attempts?: number;
  delivered_at?: string;
  /** When the queue tries again (set by its attempts, null once delivered or out of attempts). */
  next_attempt_at?: string | null;
  last_attempt_at: string;
  last_status: number | null;
  last_error: string | null;
  /** The token of the attempt recorded last (how a re-sent record recognises that it landed). */
  attempt_token?: string;
  expires_at: number;
};
type HealthItem = { pk: string; sk: string; failing_since: string };

export type AttemptOptions = {
  /** DNS for the URL check and the connection (tests inject one). */
  resolver?: Resolver;
  /** Per-attempt timeout (default 10 s, and never past the invocation's deadline). */
  timeoutMs?: number;
};

/** How long a decrypted secret is kept in memory (a KMS Decrypt per attempt otherwise). */
const SECRET_CACHE_MS = 5 * 60 * 1000;
const SECRET_CACHE_MAX = 500;
const secretCache = new Map<string, { plain: Promise<string>; until: number }>();

/**
 * Decrypts (or recalls) a stored secret; the cache is keyed by merchant and ciphertext, so a
 * rotation misses it. It holds the decryption itself, so a batch's tasks for one endpoint, attempted
 * at once, share one KMS call; a failed decryption is not kept.
 */
const plainSecret = (merchantId: string, stored: string): Promise<string> => {
  const id = `${merchantId}\u0000${stored}`;
  const hit = secretCache.get(id);
  if (hit && hit.until > Date.now()) return hit.plain;
  const plain = decryptSecret(merchantId, stored);
  if (secretCache.size >= SECRET_CACHE_MAX) secretCache.delete(secretCache.keys().next().value!);
  secretCache.set(id, { plain, until: Date.now() + SECRET_CACHE_MS });
  plain.catch(() => secretCache.get(id)?.plain === plain && secretCache.delete(id));
  return plain;
};

/** The secrets an attempt signs with: the current one, then the replaced one during its 24 hours. */
export const signingSecrets = async (merchantId: string, e: WebhookEndpointItem, at: string): Promise<string[]> => {
  const secrets = [await plainSecret(merchantId, e.secret_encrypted)];
  if (e.previous_secret_encrypted && e.previous_secret_expires_at && e.previous_secret_expires_at > at) {
    secrets.push(await plainSecret(merchantId, e.previous_secret_encrypted));
  }
  return secrets;
};

const ONE = new Decimal(1);
/** Room kept after an attempt for recording it before the invocation's deadline. */
const RECORD_MARGIN_MS = 2_000;

/**
 * One attempt now, then its record: the attempt numbered after every earlier one of the delivery
 * (`state`), automatic or manual. `scheduled` attempts (the queue's) also count towards the retry
 * schedule; a test or a manual retry does not use one up. `health` as read (null: known absent)
 * spares the write when it would change nothing; undefined (not read) writes it either way.
 *
 * The entry carries the body sent (`loggedPayload`) and `next_attempt_at`, when the queue tries the
 * delivery again. A failed scheduled attempt picks its pause here (`nextRetryDelaySeconds`, the
 * queue's schedule: `delaySeconds`, which the consumer then postpones the message by), counted from
 * the attempt's end; its last one has none. A test or manual retry changes nothing in the queue: a
 * failure shows the retry still pending from the queue's last attempt (the state's), a success none
 * (the queued retry will find the delivery delivered and send nothing).
 */
export const attemptAndRecord = async (
  merchantId: string,
  endpoint: WebhookEndpointItem,
  event: WebhookEvent,
  state: Pick<DeliveryStateItem, 'attempts' | 'scheduled_attempts' | 'next_attempt_at'> | undefined,
  opts: AttemptOptions & { scheduled?: boolean; health?: HealthItem | null; random?: () => number } = {},
): Promise<{ entry: DeliveryLogEntry; result: DeliveryResult; delaySeconds: number | null }> => {
  const started = now();
  const at = formatTimestamp(started);
  const body = webhookBody(event);
  const timeoutMs = Math.max(1_000, Math.min(opts.timeoutMs ?? DELIVERY_TIMEOUT_MS, deadline() - Date.now() - RECORD_MARGIN_MS));
  const result = await attemptDelivery({
    url: endpoint.url,
    eventId: event.id,
    body,
    secrets: await signingSecrets(merchantId, endpoint, at),
    resolver: opts.resolver,
    allowLocal: config.isLocal(),
    timeoutMs,
    now: started,
  });
  // The attempt is recorded on condition that the count is still the one it was numbered from, with
  // a token of this attempt: a re-send of a write that landed (its answer lost) finds its own token
  // and stops; a duplicate of the task that recorded first makes this one the next number.
  const token = randomUUID();
  let counted = Number(state?.attempts ?? 0);
  let attempt = counted + 1;
  const scheduledAttempts = Number(state?.scheduled_attempts ?? 0) + (opts.scheduled ? 1 : 0);
  const delaySeconds = opts.scheduled && !result.ok ? nextRetryDelaySeconds(scheduledAttempts, opts.random) : null;
  const endedAt = started.getTime() + result.durationMs;
  const scheduledNext = delaySeconds === null ? null : formatTimestamp(new Date(endedAt + delaySeconds * 1000));
  // A manual attempt's failure leaves the queue's pending retry (as the state says; re-read on a conflict).
  let pendingNext = state?.next_attempt_at ?? null;
  const nextAttemptAt = () => (result.ok ? null : opts.scheduled ? scheduledNext : pendingNext);
  const payload = loggedPayload(body);
  const entry = (): DeliveryLogEntry => ({
    event_id: event.id,
    event_type: event.type,
    attempt,
    status: result.status ?? null,
    error: result.error ?? null,
    duration_ms: result.durationMs,
    at,
    next_attempt_at: nextAttemptAt(),
    ...payload,
  });
  const stateKey = keys.webhookDeliveryState(merchantId, endpoint.id, event.id);
  await retrying(
    async () => {
      attempt = counted + 1;
      const ws = new WriteSet();
      addDeliveryLog(ws, merchantId, endpoint.id, entry(), started.toISOString());
      const record = ws
        .update('delivery', stateKey)
        .setAll({
          event_id: event.id,
          event_type: event.type,
          body,
          last_attempt_at: at,
          last_status: result.status ?? null,
          last_error: result.error ?? null,
        })
        .set('expires_at', Math.floor(started.getTime() / 1000) + DELIVERY_LOG_TTL_SECONDS)
        .set('attempt_token', token)
        .add('attempts', ONE)
        .when(counted ? { expression: 'attempts = :n', values: { ':n': counted } } : { expression: 'attribute_not_exists(attempts)' });
      if (opts.scheduled) record.add('scheduled_attempts', ONE);
      // The queue's next try: what its attempts schedule, none once delivered (a manual failure leaves it).
      if (opts.scheduled || result.ok) record.set('next_attempt_at', nextAttemptAt());
      if (result.ok) record.set('delivered_at', at);
      // Health: gone after a success, `failing_since` from the first failure after one. Skipped when
      // the read shows it already so (many deliveries to one endpoint would all write one item).
      const health = keys.webhookEndpointHealth(merchantId, endpoint.id);
      if (result.ok && opts.health !== null) ws.delete('health', health);
      if (!result.ok && !opts.health) ws.update('health', health).setIfAbsent('failing_since', at);
      try {
        await ws.commit();
      } catch (err) {
        if (!(err instanceof WriteConflict) || !err.tags.some((t) => t === 'delivery' || t === 'webhook-delivery')) throw err;
        const now = (await batchGet([stateKey])).get(keyId(stateKey)) as DeliveryStateItem | undefined;
        if (now?.attempt_token === token) return;
        counted = Number(now?.attempts ?? 0);
        pendingNext = now?.next_attempt_at ?? null;
        throw err;
      }
    },
    { resendUnanswered: true },
  );
  return { entry: entry(), result, delaySeconds };
};

/** Sets an endpoint that failed every attempt for 5 days to `disabled` (unless something else changed it first). */
const disableEndpoint = async (merchantId: string, endpoint: WebhookEndpointItem, failingSince: string): Promise<void> => {
  const at = formatTimestamp(now());
  const ws = new WriteSet();
  ws.update('endpoint', keys.webhookEndpoint(merchantId, endpoint.id))
    .setAll({ status: 'disabled', updated_at: at })
    .add('version', ONE)
    .when({
      expression: 'version = :v AND #status = :enabled',
      names: { '#status': 'status' },
      values: { ':v': endpoint.version, ':enabled': 'enabled' },
    });
  putListEntry(ws, merchantId, { ...endpoint, status: 'disabled' });
  try {
    await ws.commit();
    logger.warn('webhook endpoint disabled after 5 days of failed deliveries', {
      merchant_id: merchantId,
      endpoint_id: endpoint.id,
      failing_since: failingSince,
    });
  } catch (err) {
    // Changed meanwhile (PATCHed, rotated, deleted): the next failed attempt decides again.
    if (!(err instanceof WriteConflict)) throw err;
  }
};

export type TaskOutcome =
  /** Nothing more to do: delivered now or before, or the endpoint is gone, disabled or unsubscribed. */
  | {
      action: 'done';
      reason: 'delivered' | 'already delivered' | 'endpoint deleted' | 'endpoint disabled' | 'not subscribed';
      entry?: DeliveryLogEntry;
    }
  /** Failed: try again after `delaySeconds`. */
  | { action: 'retry'; delaySeconds: number; entry: DeliveryLogEntry }
  /** Failed its last attempt: park the task in the dead-letter queue. */
  | { action: 'dead-letter'; entry: DeliveryLogEntry };

/**
 * One queued task: reads the endpoint, the delivery's state and the endpoint's health by key in
 * one strongly consistent BatchGetItem, attempts unless there is nothing to do, records the
 * attempt, and says what the queue should do next. A task repeated by the queue after a success is
 * not sent again (at-least-once remains for a repeat racing the first attempt).
 */
export const deliverTask = async (task: DeliveryTask, opts: AttemptOptions & { random?: () => number } = {}): Promise<TaskOutcome> => {
  const { merchant_id: merchantId, endpoint_id: endpointId, event } = task;
  const endpointKey = keys.webhookEndpoint(merchantId, endpointId);
  const stateKey = keys.webhookDeliveryState(merchantId, endpointId, event.id);
  const healthKey = keys.webhookEndpointHealth(merchantId, endpointId);
  const found = await batchGet([endpointKey, stateKey, healthKey]);
  const endpoint = found.get(keyId(endpointKey)) as WebhookEndpointItem | undefined;
  const state = found.get(keyId(stateKey)) as DeliveryStateItem | undefined;
  const health = found.get(keyId(healthKey)) as HealthItem | undefined;
  if (!endpoint) return { action: 'done', reason: 'endpoint deleted' };
  if (endpoint.status !== 'enabled') return { action: 'done', reason: 'endpoint disabled' };
  if (state?.delivered_at) return { action: 'done', reason: 'already delivered' };
  if (!receives(endpoint, event.type as EventType)) return { action: 'done', reason: 'not subscribed' };

  const { entry, result, delaySeconds } = await attemptAndRecord(merchantId, endpoint, event, state, {
    ...opts,
    scheduled: true,
    health: health ?? null,
  });
  if (result.ok) return { action: 'done', reason: 'delivered', entry };
  if (health?.failing_since && Date.parse(entry.at) - Date.parse(health.failing_since) >= AUTO_DISABLE_AFTER_MS) {
    await retrying(() => disableEndpoint(merchantId, endpoint, health.failing_since));
  }
  return delaySeconds === null ? { action: 'dead-letter', entry } : { action: 'retry', delaySeconds, entry };
};
