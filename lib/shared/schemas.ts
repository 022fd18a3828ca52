import * as z from 'zod';

/** Response schemas shared by several resources (OpenAPI only; responses are built by presenters). */
export const messageBody = z.object({ message: z.string() }).meta({ id: 'Message' });
export const validationBody = z
  .object({ message: z.string(), errors: z.record(z.string(), z.array(z.string())) })
  .meta({ id: 'ValidationError' });

export const pageMetaSchema = z
  .object({
    current_page: z.int(),
    from: z.int().nullable(),
    last_page: z.int(),
    per_page: z.int(),
    to: z.int().nullable(),
    total: z.int(),
  })
  .meta({ id: 'PageMeta' });

/** A list read by page number or cursor: its meta also carries `next_cursor` (null on the last page). */
export const listOf = <T extends z.ZodType>(item: T) =>
  z.object({
    data: z.array(item),
    meta: pageMetaSchema.extend({
      next_cursor: z.string().nullable().meta({ description: 'Pass as `cursor` for the next page; null on the last page' }),
    }),
  });
export const dataOf = <T extends z.ZodType>(item: T) => z.object({ data: item });

/**
 * The items of a batch body: 1 to 100 of anything here, because the batch validates each item on
 * its own and answers per item. The document types them as `component` (a schema of that name in
 * the document's components: `lib/api/openapi.ts` registers it).
 */
export const batchItems = (component: string) =>
  z
    .array(z.unknown())
    .min(1)
    .max(100)
    .meta({ override: { type: 'array', minItems: 1, maxItems: 100, items: { $ref: `#/components/schemas/${component}` } } });

const batchRef = z.object({ index: z.int(), id: z.int(), identifier: z.string() });
export const batchResultSchema = z
  .object({
    total: z.int(),
    created: z.int(),
    updated: z.int(),
    skipped: z.int(),
    failed: z.int(),
    results: z.object({
      created: z.array(batchRef),
      updated: z.array(batchRef),
      skipped: z.array(z.object({ index: z.int(), reason: z.string(), identifier: z.string() })),
      failed: z.array(z.object({ index: z.int(), reason: z.string(), message: z.string(), identifier: z.string() })),
    }),
  })
  .meta({ id: 'BatchResult' });

export type BatchResult = z.infer<typeof batchResultSchema>;

/** Collects per-item outcomes in the batch result shape of docs/importing-history.md. */
export const batchCollector = (total: number) => {
  const results: BatchResult['results'] = { created: [], updated: [], skipped: [], failed: [] };
  return {
    created: (index: number, id: number, identifier: string) => results.created.push({ index, id, identifier }),
    updated: (index: number, id: number, identifier: string) => results.updated.push({ index, id, identifier }),
    skipped: (index: number, reason: string, identifier: string) => results.skipped.push({ index, reason, identifier }),
    failed: (index: number, reason: string, message: string, identifier: string) =>
      results.failed.push({ index, reason, message, identifier }),
    result: (): BatchResult => {
      for (const list of Object.values(results)) list.sort((a, b) => a.index - b.index);
      return {
        total,
        created: results.created.length,
        updated: results.updated.length,
        skipped: results.skipped.length,
        failed: results.failed.length,
        results,
      };
    },
  };
};

/** A batch item's identifier: its business key when it is a string, else "". */
export const identifierOf = (item: unknown, field: string): string => {
  const v = item && typeof item === 'object' ? (item as Record<string, unknown>)[field] : undefined;
  // An object or array is no identifier (and String() of a deeply nested array overflows the stack: a 500).
  return typeof v === 'string' ? v : v === undefined || v === null || typeof v === 'object' ? '' : String(v);
};

/** `X-Idempotency-Key` (1..255 characters, 24 hours, per merchant): a repeat replays the first answer. */
export const idempotencyHeaders = z.object({
  'x-idempotency-key': z.string().min(1).max(255).optional().meta({ description: 'Replays the first response for 24 hours' }),
});

/** An import run's id: what `ops import` sends as `X-Import-Run` on every batch of one run. */
export const importRun = () =>
  z.string().regex(/^[A-Za-z0-9._:-]{1,100}$/, {
    message: 'The :field field must be 1 to 100 letters, digits, dots, underscores, colons or hyphens.',
  });

/** `X-Import-Run` on the batch endpoints: the entry of the batch names this run. */
export const importRunHeaders = {
  'x-import-run': importRun().optional().meta({
    description:
      'An import run id (1 to 100 of `A-Za-z0-9._:-`): the activity entry records it, and `GET /activity?import_run=` lists the run',
  }),
};

/** The 200 of a batch endpoint (idempotent with X-Idempotency-Key). */
export const batchAnswer = (description = 'Batch result') => ({
  description: `${description} (or, with a repeated X-Idempotency-Key, the first one replayed)`,
  schema: z.object({ data: batchResultSchema }),
  headers: { 'Idempotent-Replayed': '"true" when this is the replay of an earlier response' },
});
