import { batchGet, keyId } from '#lib/db/batch-get';
import { keys } from '#lib/db/keys';
import { retrying } from '#lib/db/retry';
import { WriteSet } from '#lib/db/writes';
import { addTimelineChange, customerIdRounds, readTimeline } from '#lib/metrics/store';
import { DEFAULT_TIMEZONE } from '#lib/shared/zone';

/**
 * After a merchant's reporting time zone changes (docs/settings.md): every customer whose timeline
 * still counts it in another zone's days is rewritten with the same lines and the new zone, under
 * its version, in one transaction with the moves of all it contributes from the old zone's days,
 * months and cohort to the new one's (those past one transaction wait as pending moves, read in at
 * once). Writes meanwhile need no pause: a write moves its own customer to the zone its request
 * knows, and a write between this pass's read and its commit sends that customer round again from
 * fresh reads. Customers are found by id, 1 to the merchant's last allocated one, heads read by key
 * (strongly consistent), a thousand at a time.
 */

const IDS_PER_ROUND = 1_000;
const LANES = 4;

export type RezoneReport = { customers_read: number; moved: number; done: boolean };

export const rezoneCustomers = async (
  merchantId: string,
  reportingCurrency: string,
  zone: string,
  opts: { until?: number } = {},
): Promise<RezoneReport> => {
  let moved = 0;
  let read = 0;
  for await (const ids of customerIdRounds(merchantId, IDS_PER_ROUND)) {
    if (opts.until !== undefined && Date.now() > opts.until) return { customers_read: read, moved, done: false };
    const heads = await batchGet<{ zone?: string }>(
      ids.map((id) => keys.customerTimeline(merchantId, id)),
      ['zone'],
    );
    read += ids.length;
    const stale = ids.filter((id) => {
      const head = heads.get(keyId(keys.customerTimeline(merchantId, id)));
      return head !== undefined && (head.zone ?? DEFAULT_TIMEZONE) !== zone;
    });
    // A few lanes at once, each on its own counter shard, so their transactions do not meet on the aggregate items.
    await Promise.all(
      Array.from({ length: LANES }, async (_, lane) => {
        for (let i = lane; i < stale.length; i += LANES) {
          const id = stale[i];
          const wrote = await retrying(async () => {
            const fresh = await readTimeline(merchantId, id);
            if (fresh.version === null || fresh.zone === zone) return false;
            const ws = new WriteSet(lane);
            addTimelineChange(ws, merchantId, reportingCurrency, id, fresh, fresh.timeline, zone);
            await ws.commit();
            return true;
          });
          if (wrote) moved += 1;
        }
      }),
    );
  }
  return { customers_read: read, moved, done: true };
};
