import { activityEntrySchema, activityListQuery, activityPathParams } from '#lib/activity/schemas';
import { defineRoute } from '#lib/http/route';
import { dataOf, listOf } from '#lib/shared/schemas';
import { errors, dashboardRead, notFound, invalid } from '#lib/http/route-parts';

/** The activity routes (their handlers import only these; lib/api/routes.ts is the union). */
export const routes = {
  activityList: defineRoute({
    method: 'GET',
    path: '/activity',
    handler: 'functions/activity/list.ts',
    ability: 'activity:read',
    dashboard: dashboardRead,
    writes: false,
    csv: true,
    summary: 'The activity log: one entry per batch request, newest first, kept for the 13 whole months after the month it ran in',
    description:
      'The activity log: one entry per batch request (what was sent, how many items were created, updated, skipped or refused), newest first, optionally by type, import run or date range. Entries are kept for the 13 whole months after their month (docs/activity-log.md).',
    tags: ['activity'],
    request: { query: activityListQuery },
    responses: {
      200: { description: 'A page of activity entries (`meta.next_cursor` reads the next one)', schema: listOf(activityEntrySchema) },
      ...errors,
      ...invalid,
    },
  }),
  activityGet: defineRoute({
    method: 'GET',
    path: '/activity/{id}',
    handler: 'functions/activity/get.ts',
    ability: 'activity:read',
    dashboard: dashboardRead,
    writes: false,
    summary: 'One activity entry (404 once it is no longer kept)',
    description: 'One activity-log entry, while it is kept (docs/activity-log.md).',
    tags: ['activity'],
    request: { params: activityPathParams },
    responses: { 200: { description: 'The entry', schema: dataOf(activityEntrySchema) }, ...errors, ...notFound },
  }),
};
