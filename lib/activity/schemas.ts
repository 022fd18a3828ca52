import * as z from 'zod';
import { cursorParam, dateBound, INSTANT_RANGE, pageQuery, pathId } from '#lib/shared/fields';
import { importRun } from '#lib/shared/schemas';

/** What wrote an activity entry: one type per batch endpoint. */
export const ACTIVITY_TYPES = ['customers.batch', 'orders.batch', 'subscriptions.batch', 'subscription_events.batch'] as const;
export type ActivityType = (typeof ACTIVITY_TYPES)[number];

export const activityListQuery = z
  .object({
    ...pageQuery,
    cursor: cursorParam("`meta.next_cursor` of the previous page (same filters): reads from there at one page's cost"),
    type: z.enum(ACTIVITY_TYPES).optional().meta({ description: 'Only entries of this kind of batch' }),
    import_run: importRun()
      .optional()
      .meta({ description: 'Only entries of this import run (the X-Import-Run header the batches carried)' }),
    start_date: dateBound(false)
      .optional()
      .meta({ description: `On created_at, inclusive: YYYY-MM-DD or an ISO 8601 date-time. ${INSTANT_RANGE}` }),
    end_date: dateBound(true)
      .optional()
      .meta({ description: `On created_at, inclusive: YYYY-MM-DD or an ISO 8601 date-time, not before start_date. ${INSTANT_RANGE}` }),
  })
  .refine((q) => !q.start_date || !q.end_date || q.start_date <= q.end_date, {
    path: ['end_date'],
    message: 'The :field field must be a date after or equal to the start date.',
  });
export type ActivityListQuery = z.output<typeof activityListQuery>;

export const activityPathParams = z.object({ id: pathId('Activity entry id') });

const itemReport = z.object({ index: z.int(), identifier: z.string(), reason: z.string(), message: z.string() });
export const activityEntrySchema = z
  .object({
    id: z.int(),
    type: z.enum(ACTIVITY_TYPES),
    created_at: z.string().meta({ description: 'When the batch request ran (UTC)' }),
    total: z.int(),
    created: z.int(),
    updated: z.int(),
    skipped: z.int(),
    failed: z.int(),
    results: z
      .object({ skipped: z.array(itemReport), failed: z.array(itemReport) })
      .meta({ description: 'The skipped and failed items, as the batch answered them (identifier and message cut to 200 bytes)' }),
    request_id: z.string().meta({ description: "The batch request's X-Request-Id" }),
    import_run: z.string().nullable().meta({ description: 'The X-Import-Run the batch was sent with, null when none' }),
  })
  .meta({ id: 'ActivityEntry', description: 'One batch request, kept for the 13 whole months after the month it ran in' });
