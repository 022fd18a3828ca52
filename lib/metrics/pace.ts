import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { db, tableName } from '#lib/db/client';
import { type Key, keys } from '#lib/db/keys';
import { TTL_ATTRIBUTE } from '#lib/db/table';

/**
 * A merchant's passes after a time zone or rate change (the one a `PUT` runs, and the restate
 * jobs in the background, however many run at once) share one pace: together they take at most
 * `wcuPerSecond` write units a second from the key they write most (docs/scale.md, "Passes").
 * Each second is a ledger item; a pass takes a share of it before its transactions, and when the
 * second is spent it moves on to the next. A share is a quarter of a second's allowance (or what
 * one transaction needs, up to a whole second's), so the ledger costs one small write per few
 * customers, far from any limit.
 */

/** Takes up to `wcu` from `second`'s ledger under `limit`: what it got (0: the second is spent). */
export type TakeShare = (second: number, wcu: number, limit: number) => Promise<number>;

/** How many shares a second's allowance is split into. */
const SHARES_PER_SECOND = 4;
/** How long a second's ledger item stays (DynamoDB's TTL deletes it within days after). */
const LEDGER_TTL_SECONDS = 3_600;

export const passPacer = (wcuPerSecond: number, take: TakeShare, clock: () => number = Date.now) => {
  let second = 0;
  let held = 0;
  // A pass's lanes book one at a time, in turn: a share is never counted for two of them.
  let queue: Promise<unknown> = Promise.resolve();
  const inTurn = <T>(run: () => Promise<T>): Promise<T> => {
    const turn = queue.then(run);
    queue = turn.catch(() => undefined);
    return turn;
  };
  return {
    /**
     * The time a transaction costing `wcu` on its busiest key may be sent: now when the current
     * second still has room (or unpaced), else the start of the second whose share completes it.
     * Booking stops at the first second past `notAfter` (that second's start is returned: the
     * caller leaves the transaction for later), so a long wait costs no more ledger writes.
     */
    book(wcu: number, notAfter = Number.POSITIVE_INFINITY): Promise<number> {
      if (wcuPerSecond <= 0) return Promise.resolve(clock());
      return inTurn(() => booking(wcu, notAfter));
    },
  };

  async function booking(wcu: number, notAfter: number): Promise<number> {
    let need = wcu;
    for (;;) {
      if (second * 1_000 > notAfter) return second * 1_000;
      const current = Math.floor(clock() / 1_000);
      // What is left of a share of a second gone by is not spent later: no burst of saved-up seconds.
      if (second < current) {
        second = current;
        held = 0;
      }
      const use = Math.min(held, need);
      held -= use;
      need -= use;
      if (need <= 0) return Math.max(clock(), second * 1_000);
      const got = await take(second, Math.min(wcuPerSecond, Math.max(need, wcuPerSecond / SHARES_PER_SECOND)), wcuPerSecond);
      if (got <= 0) {
        second += 1;
        continue;
      }
      // Counted for this transaction as soon as taken; only the rest is held for the next.
      const taken = Math.min(got, need);
      need -= taken;
      held = got - taken;
    }
  }
};

/**
 * The ledger in the table: `ADD used` under `used + wcu <= limit`; a spent second gives what it has
 * left. Its items are the merchant's passes' (`ledger` default) or another's, such as the applier's.
 */
export const tableShares =
  (merchantId: string, ledger: (second: number) => Key = (second) => keys.restatePace(merchantId, second)): TakeShare =>
  async (second, wcu, limit) => {
    const attempt = async (amount: number): Promise<{ got: number; used?: number }> => {
      try {
        await db().send(
          new UpdateCommand({
            TableName: tableName(),
            Key: ledger(second),
            UpdateExpression: 'ADD #used :wcu SET #ttl = if_not_exists(#ttl, :ttl)',
            ConditionExpression: 'attribute_not_exists(#used) OR #used <= :room',
            ExpressionAttributeNames: { '#used': 'used', '#ttl': TTL_ATTRIBUTE },
            ExpressionAttributeValues: { ':wcu': amount, ':room': limit - amount, ':ttl': second + LEDGER_TTL_SECONDS },
            ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
          }),
        );
        return { got: amount };
      } catch (err) {
        if (!(err instanceof ConditionalCheckFailedException)) throw err;
        // The item as it was, in the low-level form (the document client does not unmarshall errors).
        const used = err.Item?.used as { N?: string } | number | undefined;
        return { got: 0, used: typeof used === 'number' ? used : Number(used?.N ?? limit) };
      }
    };
    const first = await attempt(wcu);
    if (first.got || first.used === undefined) return first.got;
    // What the second has left, if anything: taken rather than wasted.
    const left = Math.floor(limit - first.used);
    return left >= 1 ? (await attempt(left)).got : 0;
  };

/**
 * Write units a second a generation build puts on any one of its new keys: under half of a
 * partition's 1,000, with room for a request sent a little after its second began.
 */
export const BUILD_WCU_PER_KEY = 400;

/** A ledger in memory, for keys only one pass writes (a generation build's new keys): nothing to share, nothing to store. */
export const memoryShares = (): TakeShare => {
  const used = new Map<number, number>();
  return async (second, wcu, limit) => {
    const got = Math.max(0, Math.min(wcu, limit - (used.get(second) ?? 0)));
    used.set(second, (used.get(second) ?? 0) + got);
    return got;
  };
};
