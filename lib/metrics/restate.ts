import { batchGet, keyId } from '#lib/db/batch-get';
import { keys } from '#lib/db/keys';
import { retrying } from '#lib/db/retry';
import { WriteSet } from '#lib/db/writes';
import { addTimelineChange, customerIdRounds, readTimeline } from '#lib/metrics/store';
import { DEFAULT_TIMEZONE } from '#lib/shared/zone';
import { setTimeout as sleep } from 'node:timers/promises';
import { config } from '#lib/config';
import { passPacer, tableShares } from '#lib/metrics/pace';
import { generationOf } from '#lib/merchants/rules';
import { getMerchant } from '#lib/merchants/store';

/**
 * After a merchant's reporting time zone or one currency's exchange rates change (docs/settings.md,
 * docs/exchange-rates.md): every customer still counted in another zone's days, or with points in
 * that currency, is rewritten with the same lines in the merchant's zone at the rates as they now
 * are, under its version, in one transaction with the moves of all it contributes (those past one
 * transaction wait as pending moves, read in at once). Writes meanwhile need no pause: a write
 * counts its own customer in the zone its request knows and at the rates it reads (checked at its
 * commit), and a write between this pass's read and its commit sends that customer round again
 * from fresh reads. Customers are found by id, 1 to the merchant's last allocated one, heads read
 * by key (strongly consistent), a thousand at a time; a head says which other currencies its
 * timeline has, so only those customers are read whole.
 */

const IDS_PER_ROUND = 1_000;
const LANES = 4;

/** What a pass did; `next`: the customer id a pass cut short goes on from (null when done). */
export type RestateReport = { customers_read: number; moved: number; done: boolean; next: number | null };

type Head = { zone?: string; currencies?: string[]; generation?: number };

export const restateCustomers = async (
  merchantId: string,
  reportingCurrency: string,
  zone: string,
  opts: { currency?: string; until?: number; fromId?: number; generation?: number } = {},
): Promise<RestateReport> => {
  let moved = 0;
  let read = 0;
  // The generation the pass moves customers in: the merchant's unless told.
  const generation = opts.generation ?? generationOf((await getMerchant(merchantId)) ?? { metrics_generation: 0 });
  // Checked before each customer too: a round of a thousand may take longer than the time left.
  const late = () => opts.until !== undefined && Date.now() > opts.until;
  let cut = false;
  const pacer = passPacer(config.restateWcuPerSecond(), tableShares(merchantId));
  // A head last counted in another generation is read whole: that generation's build may have counted it in another zone or at other rates.
  const concerned = (head: Head) =>
    Number(head.generation ?? 0) !== generation ||
    (head.zone ?? DEFAULT_TIMEZONE) !== zone ||
    // A head written before heads named their currencies is read whole.
    (opts.currency !== undefined && (head.currencies === undefined || head.currencies.includes(opts.currency)));
  for await (const ids of customerIdRounds(merchantId, IDS_PER_ROUND, opts.fromId)) {
    // Cut short: the next pass reads this round's heads again (those moved meanwhile are no longer concerned).
    const cutAt = () => ({ customers_read: read, moved, done: false, next: ids[0] });
    if (late()) return cutAt();
    const heads = await batchGet<Head>(
      ids.map((id) => keys.customerTimeline(merchantId, id)),
      ['zone', 'currencies', 'generation'],
    );
    read += ids.length;
    const stale = ids.filter((id) => {
      const head = heads.get(keyId(keys.customerTimeline(merchantId, id)));
      return head !== undefined && concerned(head);
    });
    // A few lanes at once, each on its own counter shard, so their transactions do not meet on the aggregate items.
    await Promise.all(
      Array.from({ length: LANES }, async (_, lane) => {
        for (let i = lane; i < stale.length; i += LANES) {
          if (late()) {
            cut = true;
            return;
          }
          const id = stale[i];
          const wrote = await retrying(async () => {
            const fresh = await readTimeline(merchantId, id);
            if (fresh.version === null) return false;
            const ws = new WriteSet(lane);
            // The same lines, in the merchant's zone, converted at the rates read now: unchanged, nothing is written.
            const after = await addTimelineChange(
              ws,
              merchantId,
              { reportingCurrency, timezone: zone, generation },
              id,
              fresh,
              fresh.timeline,
            );
            if (after === fresh) return false;
            // Its turn under the pass's pace; one past the time left is not taken (the customer is left for later).
            const at = await pacer.book(ws.hottestKeyWcu, opts.until);
            if (opts.until !== undefined && at > opts.until) return null;
            if (at > Date.now()) await sleep(at - Date.now());
            await ws.commit();
            return true;
          });
          if (wrote === null) {
            cut = true;
            return;
          }
          if (wrote) moved += 1;
        }
      }),
    );
    if (cut) return cutAt();
  }
  return { customers_read: read, moved, done: true, next: null };
};
