import * as z from 'zod';
import { SUBSCRIPTION_STANDINGS } from '#lib/metrics';
import { batchItems } from '#lib/shared/schemas';
import { email, isWellFormed, metadata, pageQuery, pastTimestamp, plainText, WELL_FORMED_MESSAGE } from '#lib/shared/fields';

const optionalText = (max: number) => plainText(max).nullish();

/**
 * docs/customers.md: external_id has no set format. Refused are only values no path can address: a
 * lone surrogate (no URL form) and "." / ".." (collapsed by URL handling). In the path of
 * GET/PUT/DELETE /customers/{idOrExternalId} an all-digit segment always means the id, so an
 * all-digit external_id is reached through the list, search or batch, not the path.
 */
/** The longest external_id; a longer path segment names no customer. */
export const EXTERNAL_ID_MAX = 255;
const externalId = () =>
  z
    .string()
    .min(1)
    .max(EXTERNAL_ID_MAX)
    .refine(isWellFormed, { message: WELL_FORMED_MESSAGE })
    .refine((v) => v !== '.' && v !== '..', { message: 'The :field field must not be "." or "..".' })
    .meta({ pattern: '^(?!\\.{1,2}$)[^\\p{Cs}]+$' });

/** Writable customer fields (docs/customers.md). */
export const customerCreateBody = z.object({
  email: email(),
  name: optionalText(255),
  phone: optionalText(50),
  external_id: externalId().nullish(),
  metadata: metadata().nullish(),
});
export type CustomerCreate = z.output<typeof customerCreateBody>;

/** A batch item: a customer as POST /customers takes it, and, for imported history, when it became one. */
export const customerBatchItem = customerCreateBody.extend({
  created_at: pastTimestamp().nullish().meta({
    description:
      'When the customer became one (imports: "customer since"; not in the future; default: the time of the import). An existing customer keeps its own.',
  }),
});
export type CustomerBatchItem = z.output<typeof customerBatchItem>;

/** PUT updates the given fields; null clears an optional one. */
export const customerUpdateBody = customerCreateBody.partial();
export type CustomerUpdate = z.output<typeof customerUpdateBody>;

export const customerListQuery = z.object({
  ...pageQuery,
  search: z
    .string()
    .max(255)
    .optional()
    .meta({ description: 'Keeps customers whose email or name contains this text, ignoring case; empty means no filter' }),
});

export const customerPathParams = z.object({
  idOrExternalId: z.string().min(1).meta({ description: 'Customer id (all digits) or external_id' }),
});

export const onConflict = z.enum(['skip', 'update']);
export const customerBatchBody = z.object({
  customers: batchItems('CustomerBatchItem'),
  on_conflict: onConflict.nullish(),
});
export const customerBatchQuery = z.object({
  on_conflict: onConflict.optional().meta({
    description: "What an item whose email or external_id exists does: skip it (default) or update it; the body's on_conflict wins",
  }),
});

export const customerSchema = z
  .object({
    id: z.int(),
    email: z.string(),
    name: z.string().nullable(),
    phone: z.string().nullable(),
    external_id: z.string().nullable(),
    metadata: z.record(z.string(), z.unknown()).nullable(),
    mrr: z.string().meta({
      example: '99.00',
      description: "The customer's MRR now, in the reporting currency: its subscriptions and recurring orders' monthly shares",
    }),
    subscription_status: z.enum(SUBSCRIPTION_STANDINGS).nullable().meta({
      description: "Its latest subscription's status now (the one started last); null when it never had one",
    }),
    ltv: z.string().meta({ example: '1200.00' }),
    ltv_by_currency: z.record(z.string(), z.string()),
    order_count: z.int(),
    first_payment_at: z.string().nullable(),
    last_payment_at: z.string().nullable(),
    created_at: z.string(),
    updated_at: z.string(),
  })
  .meta({ id: 'Customer' });

/** GET /customers/{idOrExternalId}/activities: pages of the customer's MRR movements, newest first. */
export const customerActivitiesQuery = z.object({ ...pageQuery });

/** A movement of the list (in lib/shared: GET /metrics/movements answers with it too). */
export { customerActivitySchema } from '#lib/shared/mrr-movement';
