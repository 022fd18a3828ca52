import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { db, tableName } from '#lib/db/client';
import type { Key } from '#lib/db/keys';
import { TTL_ATTRIBUTE } from '#lib/db/table';

/**
 * The pending-moves applier's pace on one metric shard of a merchant (lib/metrics/pending-applier.ts):
 * every invocation applying that shard's items shares it, taking at most `wcuPerSecond` write
 * units a second from the key they write most. Each second is a ledger item; an invocation takes a
 * share of it before its transactions, and when the second is spent it moves on to the next. A
 * share is a quarter of a second's allowance (or what one transaction needs, up to a whole
 * second's), so the ledger costs one small write per few transactions, far from any limit.
 */

/** Takes up to `wcu` from `second`'s ledger under `limit`: what it got (0: the second is spent). */
export type TakeShare = (second: number, wcu: number, limit: number) => Promise<number>;

/** How many shares a second's allowance is split into. */
const SHARES_PER_SECOND = 4;
/** How long a second's ledger item stays (DynamoDB's TTL deletes it within days after). */
const LEDGER_TTL_SECONDS = 3_600;

export const pacer = (wcuPerSecond: number, take: TakeShare, clock: () => number = Date.now) => {
  let second = 0;
  let held = 0;
  // An invocation's lanes book one at a time, in turn: a share is never counted for two of them.
  let queue: Promise<unknown> = Promise.resolve();
  const oneAtATime = <T>(run: () => Promise<T>): Promise<T> => {
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
      return oneAtATime(() => booking(wcu, notAfter));
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

/** The ledger in the table (`ledger`: a second's item): `ADD used` under `used + wcu <= limit`; a spent second gives what it has left. */
export const tableShares =
  (ledger: (second: number) => Key): TakeShare =>
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
