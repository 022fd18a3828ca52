import * as z from 'zod';
import { config } from '#lib/config';
import { EVENT_TYPES, type EventType } from '#lib/outbox/store';
import { documentedAs, pageQuery, pathId } from '#lib/shared/fields';
import { selectedInvalid } from '#lib/shared/validation';
import { LOGGED_PAYLOAD_MAX_BYTES } from '#lib/webhooks/deliveries';
import { checkUrlShape } from '#lib/webhooks/url-safety';

export const WEBHOOK_STATUSES = ['enabled', 'disabled'] as const;
export type WebhookStatus = (typeof WEBHOOK_STATUSES)[number];
export const ALL_EVENTS = '*';
export type EventFilter = EventType[] | [typeof ALL_EVENTS];

export const URL_MAX = 2048;
export const DESCRIPTION_MAX = 255;
/** More items than there are types (plus "*") is never needed; the cap bounds the 422 body. */
const EVENTS_MAX_ITEMS = 100;

const KNOWN = new Set<string>([...EVENT_TYPES, ALL_EVENTS]);

/**
 * The webhook URL: a string ≤ 2048 that parses, is https on port 443 (http to localhost in the
 * local stack only) and has no user info; stored in its normalised form. Where its host resolves is checked by
 * the service (`checkWebhookUrl`), after the body is valid.
 */
const webhookUrl = () =>
  z
    .string()
    .min(1)
    .max(URL_MAX)
    .transform((v, ctx) => {
      const shape = checkUrlShape(v, { allowLocal: config.isLocal() });
      if (shape.ok) return shape.url.href;
      ctx.addIssue({ code: 'custom', message: shape.message });
      return z.NEVER;
    })
    .meta({ format: 'uri', maxLength: URL_MAX, example: 'https://example.com/webhooks' });

/**
 * `events`: event types (docs/webhook-endpoints.md), or exactly `["*"]` for all of them; duplicates collapse
 * (first occurrence kept). An unknown type is a 422 on its item (`events.1`).
 */
const eventFilter = () =>
  z
    .array(z.unknown())
    .min(1)
    .max(EVENTS_MAX_ITEMS)
    .transform((items, ctx) => {
      let bad = false;
      items.forEach((item, i) => {
        if (typeof item === 'string' && KNOWN.has(item)) return;
        bad = true;
        ctx.addIssue({ code: 'custom', path: [i], message: selectedInvalid(`events.${i}`, [...EVENT_TYPES, ALL_EVENTS]) });
      });
      if (bad) return z.NEVER;
      const unique = [...new Set(items as string[])];
      if (unique.includes(ALL_EVENTS) && unique.length > 1) {
        ctx.addIssue({ code: 'custom', message: 'The events field must be ["*"] alone or a list of event types.' });
        return z.NEVER;
      }
      return unique as EventFilter;
    })
    .meta({
      description: 'Event types to receive (a repeated type counts once), or ["*"] alone for every type',
      example: ['order.paid', 'subscription.cancelled'],
      // "*" never mixes with types: one list or the other.
      override: documentedAs({
        oneOf: [
          { type: 'array', items: { const: ALL_EVENTS }, minItems: 1, maxItems: EVENTS_MAX_ITEMS },
          { type: 'array', items: { type: 'string', enum: [...EVENT_TYPES] }, minItems: 1, maxItems: EVENTS_MAX_ITEMS },
        ],
      }),
    });

/** `description`: free text ≤ 255, null to clear; "" means none as well. */
const description = () =>
  z
    .string()
    .max(DESCRIPTION_MAX)
    .nullish()
    .transform((v) => (v === '' ? null : v));

/** POST /webhook-endpoints (docs/webhook-endpoints.md). */
export const webhookEndpointCreateBody = z.object({
  url: webhookUrl(),
  events: eventFilter(),
  description: description(),
});
export type WebhookEndpointCreate = z.output<typeof webhookEndpointCreateBody>;

/** PATCH /webhook-endpoints/{id}: the given fields change; `description: null` clears it. */
export const webhookEndpointUpdateBody = z.object({
  url: webhookUrl().optional(),
  events: eventFilter().optional(),
  description: description(),
  status: z.enum(WEBHOOK_STATUSES).optional(),
});
export type WebhookEndpointUpdate = z.output<typeof webhookEndpointUpdateBody>;

export const webhookEndpointPathParams = z.object({ id: pathId('Webhook endpoint id') });

export const webhookEndpointListQuery = z.object({ ...pageQuery });
export type WebhookEndpointListQuery = z.output<typeof webhookEndpointListQuery>;

const endpointFields = {
  id: z.int(),
  url: z.string().meta({ example: 'https://example.com/webhooks' }),
  events: z.array(z.string()).meta({ example: ['order.paid'] }),
  status: z.enum(WEBHOOK_STATUSES),
  description: z.string().nullable(),
  created_at: z.string(),
  updated_at: z.string(),
};

export const webhookEndpointSchema = z.object(endpointFields).meta({ id: 'WebhookEndpoint' });

export const webhookEndpointWithSecretSchema = z
  .object({
    ...endpointFields,
    secret: z.string().meta({
      description: 'Signing secret (Standard Webhooks): returned only by creation and rotation',
      example: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
    }),
  })
  .meta({ id: 'WebhookEndpointWithSecret' });

export const webhookDeliveriesPathParams = z.object({ id: pathId('Webhook endpoint id') });
export const webhookDeliveryRetryPathParams = z.object({
  id: pathId('Webhook endpoint id'),
  event_id: z.string().min(1).meta({ description: 'Event id (`evt_…`, the `webhook-id` header of its deliveries)' }),
});
export const webhookDeliveriesListQuery = z.object({ ...pageQuery });
export type WebhookDeliveriesListQuery = z.output<typeof webhookDeliveriesListQuery>;

/** One delivery attempt, as the delivery log lists it and as test / retry answer it. */
export const webhookDeliverySchema = z
  .object({
    event_id: z.string().meta({ example: 'evt_5f0c6d1e9a2b4c7d8e9f0a1b' }),
    event_type: z.string().meta({ example: 'order.paid' }),
    attempt: z.int().meta({ description: '1 for the first attempt, one more per retry (automatic or manual)' }),
    status: z.int().nullable().meta({ description: 'HTTP status of the answer; null when none arrived' }),
    error: z.string().nullable().meta({
      description:
        '`could not connect` when no HTTP answer came within 10 s (refused, reset, unresolvable, TLS failure and timeout alike), or `refused url: …`; null when an answer arrived',
    }),
    duration_ms: z.int(),
    at: z.string().meta({ description: 'When the attempt started' }),
    next_attempt_at: z.string().nullable().meta({
      description:
        'When the queue tries this delivery again (UTC, to the second: the end of a failed attempt plus the pause of the retry schedule). Null when no try is due: delivered, the last attempt failed (dead-lettered), a test event, or a manual retry with no queued retry pending. If the endpoint is disabled or deleted by then, nothing is sent',
      example: '2026-03-01T10:00:21Z',
    }),
    payload: z
      .string()
      .nullable()
      .meta({
        description: `The body sent, as the exact JSON text that was signed; only its first ${LOGGED_PAYLOAD_MAX_BYTES} bytes (UTF-8) when longer (\`payload_truncated\`). Null when withheld from this caller (\`payload_withheld\`) and for attempts logged before payloads were kept`,
        example: '{"id":"evt_5f0c6d1e9a2b4c7d8e9f0a1b","type":"order.paid","created_at":"2026-03-01T10:00:00Z","data":{"object":{"id":1}}}',
      }),
    payload_truncated: z
      .boolean()
      .meta({ description: `True when \`payload\` holds only the body's first ${LOGGED_PAYLOAD_MAX_BYTES} bytes` }),
    resource_id: z.int().nullable().meta({
      description: 'The `id` of the order or subscription the event carries (its `data.object.id`); null for a test event',
      example: 42,
    }),
    payload_withheld: z.boolean().meta({
      description:
        'True when the body is not shown (`payload` null) because the caller may not read the resource it carries: an order event needs `orders:read`, a subscription event `subscriptions:read`',
    }),
  })
  .meta({ id: 'WebhookDelivery' });
