import { now } from '#lib/clock';
import { countQuery, listPage } from '#lib/db/query';
import { NotFoundError } from '#lib/errors';
import { formatTimestamp } from '#lib/shared/time';
import { isListed, oldestListedMonth, presentEntry } from '#lib/activity/rules';
import type { ActivityListQuery } from '#lib/activity/schemas';
import { activityListQuery, countActivity, getActivityItem } from '#lib/activity/store';

/**
 * GET /activity: the merchant's entries newest first, by page number or cursor. The list starts at
 * the oldest month still kept (expired entries may outlive their TTL for days, never in a list).
 * Unfiltered, by type, by import run or both, the total comes from the monthly counts, so page 1
 * costs the same however many entries there are; a date range counts its entries.
 */
export const listActivity = async (merchantId: string, q: ActivityListQuery) => {
  const oldest = `${oldestListedMonth(formatTimestamp(now()))}-01T00:00:00Z`;
  const from = q.start_date && q.start_date > oldest ? q.start_date : oldest;
  const query = {
    ...activityListQuery(merchantId, { type: q.type, importRun: q.import_run }),
    from: `${from}#`,
    ...(q.end_date ? { to: `${q.end_date}#~` } : {}),
  };
  const byTotals = !q.start_date && !q.end_date;
  const count = () => (byTotals ? countActivity(merchantId, q.import_run ?? null, q.type, oldest.slice(0, 7)) : countQuery(query));
  // Cursors name the list by its filters, not by the retention bound that moves each month.
  const identity = { ...query, from: q.start_date ? `${q.start_date}#` : undefined };
  const { items, meta } = await listPage(merchantId, query, count, q, identity);
  return { data: items.map(presentEntry), meta };
};

/** GET /activity/{id}: one entry, while it is kept. */
export const getActivity = async (merchantId: string, id: number) => {
  const item = id > 0 ? await getActivityItem(merchantId, id) : undefined;
  if (!item || !isListed(item, formatTimestamp(now()))) throw new NotFoundError();
  return presentEntry(item);
};
