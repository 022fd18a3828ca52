import { setTimeout as sleep } from 'node:timers/promises';
import { NumberValue, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { batchGet } from '#lib/db/batch-get';
import { BATCH_WRITE_LIMIT, type BatchWrite, batchWrite, keyOf } from '#lib/db/batch-write';
import { db, tableName } from '#lib/db/client';
import { churnReasonsPartition, cohortPartition, GENERATION_SHARDS, keys, metricsPartition, shardPartitions, type Key } from '#lib/db/keys';
import { queryAll } from '#lib/db/query';
import { addRestateJob } from '#lib/metrics/restate-jobs';
import { DEADLINE_MARGIN_MS, deadline } from '#lib/db/retry';
import { applyPending, PENDING_MOVES_ENTITY, WriteConflict, WriteSet } from '#lib/db/writes';
import { ContentionError, RecountingError } from '#lib/errors';
import { generationOf, type Merchant, type MerchantChanges } from '#lib/merchants/rules';
import { addMerchantChanges, getPointer } from '#lib/merchants/store';
import { config } from '#lib/config';
import { addRatesUnchanged, type RatesRead } from '#lib/exchange-rates/store';
import { BUILD_WCU_PER_KEY, memoryShares, passPacer } from '#lib/metrics/pace';
import { STORED_ATTR } from '#lib/metrics/rules';
import { aggregateKey, customerIdRounds, lastCustomerId, timelinesFrom } from '#lib/metrics/store';
import { addToSlices, newSlices, type RateBook, type Slice, withConversions } from '#lib/metrics/timeline';
import { inTurn } from '#lib/shared/in-turn';

/**
 * A new generation of a merchant's MRR aggregates (docs/metrics.md, "Generations"). The lines of a
 * customer's timeline are in UTC and their own currencies; only what is derived from them (the
 * days and months of the reporting time zone, amounts converted at a month's rate) depends on the
 * settings. So a settings change counts every aggregate afresh, as `ops metrics rebuild` would,
 * under new partition keys (`M#<m>#MRR#G<n>`…, fresh keys with their own capacity), and switches
 * to them in one transaction with the change itself:
 *
 * 1. the build takes the next number from the merchant's count of builds (never reused, so items a
 *    build left half-written are never read);
 * 2. it pauses the merchant's MRR writes: the 16 generation copies every such write checks say
 *    `paused_until` (the invocation's end: a build cannot outlive its pause), so a write meanwhile
 *    is refused at its commit and nothing it would move is missed; it then waits for the switch
 *    (lib/metrics/store.ts `currentFigures`), or answers 409 with Retry-After past its deadline;
 * 3. it reads every customer's timeline head by key (100 a BatchGetItem, 8 at once) and adds up
 *    what each contributes in the new zone at the new rates, in memory;
 * 4. it puts the items with BatchWriteItem, at most BUILD_WCU_PER_KEY write units a second on any
 *    one key;
 * 5. one transaction switches: the merchant, its token and pointer (which every request reads the
 *    generation from), the change itself (a rate table) and the 16 copies, on condition that its
 *    pause still holds.
 *
 * A customer last written in an older generation is counted by its next write as the build
 * counted it (lib/metrics/store.ts `addTimelineChange`). A build that runs out of time or fails
 * lifts its pause and changes nothing; the caller falls back to passes.
 */

/**
 * A settings change for a merchant within the bound (`config.generationBuildMaxCustomers`): the
 * build, with the change's other writes (`alsoWrite`, first) and the check that every rate table
 * read is unchanged. Null: the merchant has more customers, or the build ran out of time: nothing
 * changed, the caller moves customers by passes instead.
 */
export const recount = async (
  merchant: Merchant,
  change: { timezone: string; rates: RatesRead },
  changes: MerchantChanges,
  alsoWrite: (ws: WriteSet) => void,
  until: number,
): Promise<BuildReport | null> => {
  const merchantId = merchant.merchant_id;
  if ((await lastCustomerId(merchantId)) > config.generationBuildMaxCustomers()) return null;
  const pointer = await getPointer(merchantId);
  return buildGeneration(
    merchant,
    pointer?.status === 'active' ? pointer.token_hash : null,
    { timezone: change.timezone, rates: change.rates.book },
    changes,
    (ws) => {
      alsoWrite(ws);
      for (const [currency, version] of change.rates.versions) addRatesUnchanged(ws, merchantId, currency, version);
    },
    until,
  );
};

/** Timeline heads a BatchGetItem reads. */
const HEADS_PER_READ = 100;
const READS_IN_FLIGHT = 8;
const WRITES_IN_FLIGHT = 8;
/** A switch needs its pause to hold at least this much longer (writers' clocks may differ a little). */
const PAUSE_MARGIN_MS = 1_000;

/** The settings a build counts in: the reporting time zone and every currency's rates. */
export type BuildSettings = { timezone: string; rates: RateBook };
export type BuildReport = { generation: number; customers: number; items: number };

/**
 * Builds the generation the merchant's figures have under `settings` and switches to it with
 * `changes` (the merchant's) and `alsoWrite` (the rest of the change, such as a rate table), within
 * `until`. Null: out of time (nothing changed, the pause lifted).
 */
const buildGeneration = async (
  merchant: Merchant,
  activeToken: string | null,
  settings: BuildSettings,
  changes: MerchantChanges,
  alsoWrite: (ws: WriteSet) => void,
  until: number,
): Promise<BuildReport | null> => {
  const merchantId = merchant.merchant_id;
  const from = generationOf(merchant);
  const to = await nextGenerationNumber(merchantId);
  const pausedUntil = deadline() + DEADLINE_MARGIN_MS + PAUSE_MARGIN_MS;
  await pause(merchantId, from, to, pausedUntil);
  // Once items of `to` may have been written, a build that does not switch leaves their retirement (nobody reads them).
  let written: Slice[] | null = null;
  const abandon = async () => {
    await lift(merchantId, to).catch(() => undefined);
    if (written) await retireLater(merchantId, to, written, 0).catch(() => undefined);
  };
  try {
    const counted = await countAll(merchant, settings, until);
    if (!counted) {
      await abandon();
      return null;
    }
    written = counted.slices;
    // The aggregates, and what they were built in (a customer's next write starts from it).
    const items = [
      ...itemsOf(merchantId, counted.slices, to),
      { ...keys.generationZone(merchantId, to), zone: settings.timezone },
      ...[...settings.rates].map(([currency, months]) => ({
        ...keys.generationRates(merchantId, to, currency),
        rates: Object.fromEntries(months),
      })),
    ];
    if (
      !(await writePaced(
        items.map((put) => ({ put })),
        BUILD_WCU_PER_KEY,
        until,
      ))
    ) {
      await abandon();
      return null;
    }
    const ws = new WriteSet();
    addMerchantChanges(ws, merchantId, changes, activeToken, { from, to });
    alsoWrite(ws);
    // The older generation is deleted in the background once no request can still be reading it.
    addRetireJob(ws, merchantId, from, counted.slices, RETIRE_GRACE_MS);
    for (let shard = 0; shard < GENERATION_SHARDS; shard++)
      ws.put(
        'generation',
        // The zone too: a write that waited out this build learns from its copy where to count.
        { ...keys.generation(merchantId, shard), generation: to, timezone: settings.timezone },
        {
          expression: '#b = :to AND #p > :now',
          names: { '#b': 'building', '#p': 'paused_until' },
          values: { ':to': to, ':now': Date.now() + PAUSE_MARGIN_MS },
        },
      );
    await ws.commit();
    return { generation: to, customers: counted.customers, items: items.length };
  } catch (err) {
    await abandon();
    if (err instanceof WriteConflict && err.tags.includes('merchant'))
      throw new ContentionError("The merchant's settings changed while its figures were being recounted. Try again.");
    throw err;
  }
};

/** Adds the job that deletes generation `generation`'s items (its partitions from `slices`), not before `graceMs` from now. */
const addRetireJob = (ws: WriteSet, merchantId: string, generation: number, slices: Slice[], graceMs: number) =>
  addRestateJob(ws, {
    merchant_id: merchantId,
    from_id: 0,
    round: 1,
    retire: { generation, partitions: partitionsOf(merchantId, slices, generation), after: Date.now() + graceMs },
  });

const retireLater = async (merchantId: string, generation: number, slices: Slice[], graceMs: number) => {
  const ws = new WriteSet();
  addRetireJob(ws, merchantId, generation, slices, graceMs);
  await ws.commit();
};

/** The merchant's count of builds, plus one: the new generation's number (greater than any before). */
const nextGenerationNumber = async (merchantId: string): Promise<number> => {
  const { Attributes } = await db().send(
    new UpdateCommand({
      TableName: tableName(),
      Key: keys.merchant(merchantId),
      UpdateExpression: 'ADD #builds :one',
      ConditionExpression: 'attribute_exists(pk)',
      ExpressionAttributeNames: { '#builds': 'metrics_builds' },
      ExpressionAttributeValues: { ':one': 1 },
      ReturnValues: 'UPDATED_NEW',
    }),
  );
  return Number(Attributes?.metrics_builds);
};

/** One transaction updating the 16 copies alike (`edit` gives each its changes and condition). */
const onEveryCopy = (merchantId: string, edit: (u: ReturnType<WriteSet['update']>) => void) => {
  const ws = new WriteSet();
  for (let shard = 0; shard < GENERATION_SHARDS; shard++) edit(ws.update('generation', keys.generation(merchantId, shard)));
  return ws;
};

/** Pauses the MRR writes of generation `from` until `until` for the build of `to`; another build under way: 409. */
const pause = async (merchantId: string, from: number, to: number, until: number) => {
  const ws = onEveryCopy(merchantId, (u) =>
    u
      .set('generation', from)
      .set('paused_until', until)
      .set('building', to)
      .when({
        expression: `${from ? '#g = :from' : '(attribute_not_exists(#g) OR #g = :from)'} AND (attribute_not_exists(#p) OR #p < :now)`,
        names: { '#g': 'generation', '#p': 'paused_until' },
        values: { ':from': from, ':now': Date.now() },
      }),
  );
  try {
    await ws.commit();
  } catch (err) {
    if (err instanceof WriteConflict)
      throw new RecountingError(
        "The merchant's figures are already being recounted for another settings change. Try again in a few seconds.",
      );
    throw err;
  }
};

/** Lifts the pause of the build of `to` (if it still holds it). */
const lift = async (merchantId: string, to: number) => {
  const ws = onEveryCopy(merchantId, (u) =>
    u
      .remove('paused_until')
      .remove('building')
      .when({ expression: '#b = :to', names: { '#b': 'building' }, values: { ':to': to } }),
  );
  await ws.commit();
};

/**
 * The partitions of generation `generation`'s items: the whole's and each slice's aggregates (the
 * prefixes of their shards: the job stays one small item however many plans), and what it was built in. Its segments are those of the timelines, which the new generation's slices are.
 */
const partitionsOf = (merchantId: string, slices: Slice[], generation: number): string[] => [
  metricsPartition(merchantId, null, generation),
  cohortPartition(merchantId, null, generation),
  churnReasonsPartition(merchantId, generation),
  ...slices.flatMap(({ segment }) =>
    segment ? [metricsPartition(merchantId, segment, generation), cohortPartition(merchantId, segment, generation)] : [],
  ),
  ...(generation ? [keys.generationZone(merchantId, generation).pk] : []),
];

/** A movements or cohort prefix (`M#<m>#MRR…`, `M#<m>#COHORT…`) stands for its shards' partitions. */
const SHARDED_PREFIX = /^M#[^#]+#(MRR|COHORT)(#|$)/;
/** The partitions a retire job deletes, in a fixed order (its `next` counts in it). */
export const retirePartitions = (partitions: string[]): string[] =>
  partitions.flatMap((p) => (SHARDED_PREFIX.test(p) ? shardPartitions(p) : [p]));

/** How long after a switch the older generation's items stay: longer than any request that read the generation then. */
export const RETIRE_GRACE_MS = 30_000;
/** Partitions retired at once. */
const RETIRING_AT_ONCE = 8;

/**
 * Deletes an older generation's items (a retire job's, lib/metrics/restate-jobs.ts): from
 * partition `from` on, 8 partitions at a time, each key at most BUILD_WCU_PER_KEY write units a
 * second, not before `after`. `next`: the partition to go on from when `until` came first.
 */
export const retireGeneration = async (
  retire: { partitions: string[]; after: number },
  from: number,
  until: number,
): Promise<{ done: boolean; next: number }> => {
  // Waited out within this invocation's time: a round is never shorter than the time it was given.
  if (Date.now() < retire.after) await sleep(Math.max(0, Math.min(retire.after, until) - Date.now()));
  if (Date.now() < retire.after) return { done: false, next: from };
  const partitions = retirePartitions(retire.partitions);
  for (let i = from; i < partitions.length; i += RETIRING_AT_ONCE) {
    const group = partitions.slice(i, i + RETIRING_AT_ONCE);
    const readGroup = async () =>
      (
        await Promise.all(
          group.map((partition) => queryAll<Key & { entity?: string }>({ partition, descending: false }, ['pk', 'sk', 'entity'])),
        )
      ).flat();
    let items = await readGroup();
    // A pending-moves item still waiting is applied, not deleted: its apply takes it off its shard's
    // backlog count, which a plain delete would leave too high. Its moves may create items: read again.
    const pending = items.filter((k) => k.entity === PENDING_MOVES_ENTITY);
    for (const k of pending) await applyPending({ pk: k.pk, sk: k.sk });
    if (pending.length) items = await readGroup();
    const deletes: BatchWrite[] = items.filter((k) => k.entity !== PENDING_MOVES_ENTITY).map((k) => ({ delete: { pk: k.pk, sk: k.sk } }));
    if (!(await writePaced(deletes, BUILD_WCU_PER_KEY, until))) return { done: false, next: i };
  }
  return { done: true, next: partitions.length };
};

/** Every customer's contributions in the new settings, summed per slice (the whole and each segment); null past `until`. */
const countAll = async (merchant: Merchant, settings: BuildSettings, until: number) => {
  const merchantId = merchant.merchant_id;
  const reportingCurrency = merchant.reporting_currency;
  const slices = newSlices();
  const rounds: number[][] = [];
  // The id sequence read again now that writes are paused: a customer whose first write came since the bound was checked is counted too.
  for await (const ids of customerIdRounds(merchantId, HEADS_PER_READ)) rounds.push(ids);
  let customers = 0;
  const all = await inTurn(rounds, READS_IN_FLIGHT, async (ids) => {
    if (Date.now() > until) return false;
    const states = await timelinesFrom(
      merchantId,
      await batchGet<Record<string, unknown>>(ids.map((id) => keys.customerTimeline(merchantId, id))),
      ids,
    );
    for (const state of states.values()) {
      if (state.version === null) continue;
      customers += 1;
      const tl = withConversions(state.timeline, reportingCurrency, settings.rates, settings.timezone);
      addToSlices(slices, tl, reportingCurrency, settings.timezone);
    }
  });
  return all ? { slices: [...slices.values()], customers } : null;
};

/** The items of the new generation (shard 0 of each aggregate), without those that sum to nothing. */
const itemsOf = (merchantId: string, slices: Slice[], generation: number): (Key & Record<string, unknown>)[] => {
  const out: (Key & Record<string, unknown>)[] = [];
  for (const { segment, target } of slices) {
    for (const [id, attrs] of target) {
      const values = [...attrs].filter(([, v]) => !v.isZero());
      if (!values.length) continue;
      out.push({
        ...aggregateKey(merchantId, id, 0, segment, generation),
        // Exact: a JS number could round a sum.
        ...Object.fromEntries(values.map(([attr, v]) => [STORED_ATTR[attr] ?? attr, NumberValue.from(v.toFixed())])),
      });
    }
  }
  return out;
};

/** Write units of one write: a put 1 per KB started, a delete 1 (the items written here are small). */
const wcuOf = (w: BatchWrite) => ('put' in w ? Math.max(1, Math.ceil(Buffer.byteLength(JSON.stringify(w.put)) / 1024)) : 1);

/**
 * Writes `writes` 25 a request, 8 requests at once, each partition key at most `wcuPerKey` write
 * units a second (a pacer per key, in memory: these keys are written by nobody else meanwhile, a
 * generation being built or retired). False: a request's turn came past `until` (the rest unwritten).
 */
export const writePaced = async (writes: BatchWrite[], wcuPerKey: number, until: number): Promise<boolean> => {
  const byKey = new Map<string, BatchWrite[]>();
  for (const w of writes) {
    const list = byKey.get(keyOf(w).pk) ?? [];
    list.push(w);
    byKey.set(keyOf(w).pk, list);
  }
  // Requests of one key each, taken in turn across keys, so the workers spread over them.
  const perKey = [...byKey.values()].map((list) =>
    Array.from({ length: Math.ceil(list.length / BATCH_WRITE_LIMIT) }, (_, i) =>
      list.slice(i * BATCH_WRITE_LIMIT, (i + 1) * BATCH_WRITE_LIMIT),
    ),
  );
  const requests: BatchWrite[][] = [];
  for (let i = 0; perKey.some((list) => i < list.length); i++) for (const list of perKey) if (i < list.length) requests.push(list[i]);
  const pacers = new Map([...byKey.keys()].map((pk) => [pk, passPacer(wcuPerKey, memoryShares())]));
  return inTurn(requests, WRITES_IN_FLIGHT, async (request) => {
    const at = await pacers.get(keyOf(request[0]).pk)!.book(
      request.reduce((n, w) => n + wcuOf(w), 0),
      until,
    );
    if (at > until) return false;
    if (at > Date.now()) await sleep(at - Date.now());
    await batchWrite(request);
  });
};
