import { COUNTER_SHARDS } from '#lib/db/writes-constants';
import { setTimeout as sleep } from 'node:timers/promises';
import { randomUUID } from 'node:crypto';
import { GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { Context, DynamoDBBatchResponse, DynamoDBRecord, DynamoDBStreamEvent } from 'aws-lambda';
import { now } from '#lib/clock';
import { BATCH_WRITE_LIMIT, type BatchWrite, batchWrite } from '#lib/db/batch-write';
import { db, tableName } from '#lib/db/client';
import {
  churnReasonsPartition,
  cohortPartition,
  generationSegmentsPartition,
  keys,
  METRIC_SHARDS,
  metricsPartition,
  salesPartition,
  salesPartitions,
  shardPartitions,
  type Key,
} from '#lib/db/keys';
import { queryAll } from '#lib/db/query';
import { DEADLINE_MARGIN_MS, deadline, withDeadline } from '#lib/db/retry';
import { applyPending, PENDING_MOVES_ENTITY, TooManyActions, WriteConflict, WriteSet } from '#lib/db/writes';
import { ContentionError, TooManyRecountsError } from '#lib/errors';
import { logger } from '#lib/logger';
import { delinquencyDaysOf, figuresZoneOf, generationOf, type Merchant } from '#lib/merchants/rules';
import { addFiguresCopies, getMerchant, getPointer } from '#lib/merchants/store';
import { copySays, onEveryCopy, readGenerationSettings, settingsItems } from '#lib/metrics/generation';
import {
  aggregateKey,
  lastCustomerId,
  pendingHome,
  readTimelines,
  recountedAsRead,
  SALES_ID,
  SALES_REGISTRY,
  salesIds,
  segmentRegistryPuts,
  storedAttr,
  type TimelineState,
  asCounted,
} from '#lib/metrics/store';
import { addToSlice, addToSlices, newSlices, type RateBook, type Segment, withConversions } from '#lib/metrics/timeline';
import { ordersOfBookings, salesSlices } from '#lib/metrics/bookings';
import { formatTimestamp } from '#lib/shared/time';
import { asFunction, type WorkerFunction } from '#lib/shared/invocation';
import { expiresIn } from '#lib/db/ttl';

/**
 * A settings change (time zone, exchange rates) is a **recount** (docs/metrics-design.md): the
 * change is stored at once and names the next generation of the figures; a worker fills that
 * generation from every customer's timeline in the new settings while the current one keeps
 * answering (reads say `Recount-Pending: true`); one transaction then switches to it. No write is
 * held: a write during the recount counts in the current generation and, once the worker has
 * counted its customer (the timeline head says `recounted`), in the next one too, in the same
 * transaction. The worker's count of a customer and its mark commit together, on condition that the
 * head is still the one read, so a customer is counted in the next generation exactly once.
 */

/** `entity` of a recount job item: the worker's stream filter lets through their INSERTs. */
export const RECOUNT_JOB_ENTITY = 'recount-job';
/** Recounts a merchant may start in an hour (a recount costs in proportion to its history). */
export const RECOUNTS_PER_HOUR = 10;
const HOUR_MS = 3_600_000;
/** Timeline heads read at once (one BatchGetItem). */
const HEADS_PER_READ = 100;
/** Customers counted in one transaction at most (with their aggregate moves, spilled as pending moves past 100 actions). */
const HEADS_PER_COMMIT = 25;
/** A job item stays at most this long (the worker deletes it when it runs; one given up on is not kept for ever). */
const JOB_TTL_SECONDS = 7 * 86_400;
/** Time a job keeps for its own transaction and the stream's answer. */
const JOB_MARGIN_MS = 3_000;
/** Write units a second the retirement of a generation takes from any one key (half a partition's 1,000). */
const RETIRE_WCU_PER_KEY = 500;
/**
 * Write units a second the count takes from any one key of the next generation: with the writes
 * meanwhile (which also move the next generation once their customer is counted: about 110 WCU/s
 * a shard's key at a large merchant's full speed) well under a partition's 1,000.
 */
export const COUNT_WCU_PER_KEY = 400;

/**
 * The count's pace on each metric shard's keys, in this invocation (a merchant's recount runs in one
 * job at a time, and nobody else counts into its next generation): a transaction waits until its
 * busiest key's write units fit in COUNT_WCU_PER_KEY a second.
 */
const countPace = () => {
  const free = new Map<number, number>();
  return async (shard: number, wcu: number) => {
    const at = Math.max(Date.now(), free.get(shard) ?? 0);
    free.set(shard, at + (wcu * 1000) / COUNT_WCU_PER_KEY);
    if (at > Date.now()) await sleep(at - Date.now());
  };
};
type Pace = ReturnType<typeof countPace>;

/** A merchant's last recount as `GET /settings` shows it. */
export type RecountState = { generation: number; status: 'pending' | 'done'; requested_at: string; switched_at?: string };
/** A recount job: go on counting generation `generation` from customer `from_id`; first retire `retire` (from partition `retire_from`). */
export type RecountJob = {
  merchant_id: string;
  generation: number;
  from_id: number;
  round: number;
  retire?: number[];
  retire_from?: number;
  /** The generation that replaced those retired (its segments are theirs too). */
  successor?: number;
};

/** The settings a recount counts the next generation in. */
/** A recount's settings: its zone and rates (stored as its generation's), and the order renewals' grace (the merchant's). */
export type NewSettings = { timezone: string; rates: RateBook; delinquencyDays?: number };

/** The recount a merchant item records (absent: none ever). */
export const recountOf = (merchant: Pick<Merchant, 'recount'>): RecountState | null =>
  (merchant.recount as RecountState | undefined) ?? null;
/** The generation a recount is filling, if one runs. */
export const pendingRecount = (merchant: Pick<Merchant, 'recount'>): number | undefined => {
  const r = recountOf(merchant);
  return r?.status === 'pending' ? r.generation : undefined;
};

/**
 * Starts a recount for `settings` (the whole settings of the next generation), storing the change
 * itself (`alsoWrite`, and `record` on the merchant item) in the same transaction. A recount still
 * running is superseded: the new job retires its generation. Past 10 starts in the last hour: 429.
 */
export const startRecount = async (
  merchant: Merchant,
  settings: NewSettings,
  record: Record<string, unknown>,
  alsoWrite: (ws: WriteSet) => void,
): Promise<RecountState> => {
  const merchantId = merchant.merchant_id;
  const at = now();
  const recent = (merchant.recount_starts ?? []).filter((t) => at.getTime() - Date.parse(t) < HOUR_MS).sort();
  if (recent.length >= RECOUNTS_PER_HOUR)
    throw new TooManyRecountsError(
      Math.max(1, Math.ceil((Date.parse(recent[recent.length - RECOUNTS_PER_HOUR]) + HOUR_MS - at.getTime()) / 1000)),
    );
  const from = generationOf(merchant);
  const previous = recountOf(merchant);
  const superseded = previous?.status === 'pending' ? previous.generation : undefined;
  const to = await nextGenerationNumber(merchantId);
  // The next generation's settings first: nothing names it until the transaction below.
  const items = settingsItems(merchantId, to, settings.timezone, settings.rates);
  await writeAll(items.map((put) => ({ put })));
  const state: RecountState = { generation: to, status: 'pending', requested_at: formatTimestamp(at) };
  const ws = new WriteSet();
  alsoWrite(ws);
  ws.update('merchant', keys.merchant(merchantId))
    .setAll({ ...record, figures_timezone: figuresZoneOf(merchant), recount: state, recount_starts: [...recent, state.requested_at] })
    .when({
      expression: `attribute_exists(pk) AND attribute_not_exists(deleted_at) AND ${from ? '#gen = :gen' : '(attribute_not_exists(#gen) OR #gen = :gen)'} AND ${
        previous ? '#rc.#rg = :rg' : 'attribute_not_exists(#rc)'
      }`,
      names: { '#gen': 'metrics_generation', '#rc': 'recount', ...(previous ? { '#rg': 'generation' } : {}) },
      values: { ':gen': from, ...(previous ? { ':rg': previous.generation } : {}) },
    });
  const pointer = await getPointer(merchantId);
  // A setting the token copies, changed with the zone (`delinquency_days`), goes to it in the same write.
  const copied = record.delinquency_days === undefined ? {} : { delinquency_days: record.delinquency_days };
  addFiguresCopies(ws, merchantId, pointer?.status === 'active' ? pointer.token_hash : null, { metrics_recount: to, ...copied });
  onEveryCopy(ws, merchantId, (u) =>
    u
      .set('generation', from)
      .set('timezone', figuresZoneOf(merchant))
      .set('recount', to)
      .when(copySays({ generation: from, recount: superseded })),
  );
  addRecountJob(ws, { merchant_id: merchantId, generation: to, from_id: 1, round: 1, ...(superseded ? { retire: [superseded] } : {}) });
  try {
    await ws.commit();
  } catch (err) {
    // Nothing names the settings items: they go (best effort; a few small items under a number never used).
    await writeAll(items.map((i) => ({ delete: { pk: i.pk, sk: i.sk } }))).catch(() => undefined);
    if (err instanceof WriteConflict)
      throw new ContentionError("The merchant's settings changed while this change was being stored; nothing was changed. Try again.");
    throw err;
  }
  logger.info('recount started', { merchant_id: merchantId, generation: to, from, superseded });
  return state;
};

/** Puts and deletes of small items no other writer names, 25 to a BatchWriteItem, 4 requests at once. */
const writeAll = async (writes: BatchWrite[]) => {
  const requests = Array.from({ length: Math.ceil(writes.length / BATCH_WRITE_LIMIT) }, (_, i) =>
    writes.slice(i * BATCH_WRITE_LIMIT, (i + 1) * BATCH_WRITE_LIMIT),
  );
  for (let i = 0; i < requests.length; i += 4) await Promise.all(requests.slice(i, i + 4).map(batchWrite));
};

/** The merchant's count of generations, plus one: the new generation's number (never reused). */
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

/** Adds a job to `ws`: a new item every time (never rewritten, so the stream always sees an INSERT). */
const addRecountJob = (ws: WriteSet, job: RecountJob) =>
  ws.put('recount-job', {
    ...keys.recountJob(job.merchant_id, `${String(job.round).padStart(6, '0')}#${randomUUID()}`),
    entity: RECOUNT_JOB_ENTITY,
    // Its own fields only (a job read back carries its item's keys too).
    merchant_id: job.merchant_id,
    generation: job.generation,
    from_id: job.from_id,
    round: job.round,
    ...(job.retire?.length ? { retire: job.retire } : {}),
    ...(job.retire_from ? { retire_from: job.retire_from } : {}),
    ...(job.successor === undefined ? {} : { successor: job.successor }),
    created_at: formatTimestamp(now()),
    ...expiresIn(JOB_TTL_SECONDS),
  });

/** A recount superseded by a newer change while it ran (the copies name another). */
class Superseded extends Error {}

/**
 * Counts customers `ids` in generation `to` (`settings`): each head not yet counted, with its
 * contribution, in transactions of up to HEADS_PER_COMMIT customers, each on condition that the
 * head is as read and that the copies still name this recount. A head changed meanwhile is read again.
 */
const countIds = async (
  merchantId: string,
  reportingCurrency: string,
  to: number,
  settings: NewSettings,
  ids: number[],
  seen: Set<string>,
  pace: Pace,
) => {
  let todo = ids;
  for (let attempt = 0; todo.length; attempt++) {
    if (attempt > 10) throw new ContentionError('customers kept changing while they were being recounted');
    const states = [...(await readTimelines(merchantId, todo))].filter(([, s]) => s.version !== null && s.recounted !== to);
    const groups: [number, TimelineState][][] = [];
    for (let i = 0; i < states.length; i += HEADS_PER_COMMIT) groups.push(states.slice(i, i + HEADS_PER_COMMIT));
    const again: number[] = [];
    await Promise.all(groups.map((group) => commitCount(merchantId, reportingCurrency, to, settings, group, seen, again, pace)));
    todo = again;
  }
};

const commitCount = async (
  merchantId: string,
  reportingCurrency: string,
  to: number,
  settings: NewSettings,
  group: [number, TimelineState][],
  seen: Set<string>,
  again: number[],
  pace: Pace,
): Promise<void> => {
  if (!group.length) return;
  const ws = new WriteSet();
  const slices = newSlices();
  for (const [id, state] of group) {
    ws.update('timeline', keys.customerTimeline(merchantId, id)).set('recounted', to).when(recountedAsRead(state));
    addToSlices(
      slices,
      withConversions(
        asCounted(state, delinquencyDaysOf({ delinquency_days: settings.delinquencyDays })),
        reportingCurrency,
        settings.rates,
        settings.timezone,
      ),
      reportingCurrency,
      settings.timezone,
    );
    // …and its sales figures, from its bookings, in the same settings.
    const money = { zone: settings.timezone, reporting: reportingCurrency, rates: settings.rates };
    for (const { segment, figures } of salesSlices([...ordersOfBookings(state.bookings, id).values()], money))
      addToSlice(slices, segment, salesIds(figures));
  }
  // Each segment the next generation has is registered before any of its items (its retirement finds them so).
  // A slice holding sales items is registered as a sales segment, one holding MRR items as an MRR one (or both).
  for (const sales of [false, true]) {
    const segments = [...slices.values()].flatMap((s) =>
      s.segment && [...s.target.keys()].some((id) => id.startsWith(SALES_ID) === sales) ? [s.segment] : [],
    );
    const named = (s: Segment) => `${sales ? SALES_REGISTRY : ''}${s.dimension}#${s.value}`;
    const fresh = segments.filter((s) => !seen.has(named(s)));
    if (!fresh.length) continue;
    await writeAll(segmentRegistryPuts(merchantId, to, fresh, ws.shard, sales).map((put) => ({ put })));
    for (const s of fresh) seen.add(named(s));
  }
  for (const { segment, target } of slices.values())
    for (const [id, attrs] of target) {
      const values = [...attrs].filter(([, v]) => !v.isZero());
      if (!values.length) continue;
      const u = ws
        .update('metrics', aggregateKey(merchantId, id, ws.shard, segment, to))
        .spillable(pendingHome(merchantId, id, ws.shard, segment, to));
      for (const [attr, v] of values) u.add(storedAttr(id, attr), v);
    }
  ws.check('recount', keys.generation(merchantId, ws.shard), { expression: '#r = :r', names: { '#r': 'recount' }, values: { ':r': to } });
  try {
    // Its moves spilled or not, they land on its shard's keys now: paced by what the busiest takes.
    await pace(ws.shard % METRIC_SHARDS, ws.hottestKeyWcu);
    await ws.commit();
  } catch (err) {
    if (err instanceof TooManyActions && group.length > 1) {
      const half = Math.ceil(group.length / 2);
      await commitCount(merchantId, reportingCurrency, to, settings, group.slice(0, half), seen, again, pace);
      await commitCount(merchantId, reportingCurrency, to, settings, group.slice(half), seen, again, pace);
      return;
    }
    if (err instanceof WriteConflict && err.tags.includes('recount')) throw new Superseded();
    if (err instanceof WriteConflict) {
      again.push(...group.map(([id]) => id));
      return;
    }
    throw err;
  }
};

/** Counts every customer from `fromId` on, up to the sequence's last (read again at the end: customers created meanwhile). */
const countFrom = async (
  merchantId: string,
  reportingCurrency: string,
  to: number,
  settings: NewSettings,
  fromId: number,
  until: number,
) => {
  const seen = new Set<string>();
  const pace = countPace();
  let first = fromId;
  for (;;) {
    const last = await lastCustomerId(merchantId);
    if (first > last) return { done: true, next: first };
    for (; first <= last; first += HEADS_PER_READ) {
      if (Date.now() > until) return { done: false, next: first };
      const ids = Array.from({ length: Math.min(HEADS_PER_READ, last - first + 1) }, (_, i) => first + i);
      await countIds(merchantId, reportingCurrency, to, settings, ids, seen, pace);
    }
  }
};

/**
 * The switch, in one transaction: generation `to` counts from now on in its zone; the copies name
 * it (a write that read the older state is refused at its commit and goes again in this one), the
 * merchant, its token and pointer say so. On condition that this recount is still the pending one.
 */
const switchTo = async (merchant: Merchant, to: number, zone: string): Promise<boolean> => {
  const merchantId = merchant.merchant_id;
  const from = generationOf(merchant);
  const recount = recountOf(merchant)!;
  const ws = new WriteSet();
  ws.update('merchant', keys.merchant(merchantId))
    .setAll({
      metrics_generation: to,
      figures_timezone: zone,
      recount: { ...recount, status: 'done', switched_at: formatTimestamp(now()) },
    })
    .when({
      expression: '#rc.#rg = :to AND #rc.#st = :pending',
      names: { '#rc': 'recount', '#rg': 'generation', '#st': 'status' },
      values: { ':to': to, ':pending': 'pending' },
    });
  const pointer = await getPointer(merchantId);
  addFiguresCopies(ws, merchantId, pointer?.status === 'active' ? pointer.token_hash : null, {
    metrics_generation: to,
    timezone: zone,
    metrics_recount: null,
  });
  onEveryCopy(ws, merchantId, (u) =>
    u
      .set('generation', to)
      .set('timezone', zone)
      .remove('recount')
      .when(copySays({ generation: from, recount: to })),
  );
  try {
    await ws.commit();
    return true;
  } catch (err) {
    if (err instanceof WriteConflict) return false; // superseded meanwhile: the newer recount's job retires `to`
    throw err;
  }
};

/**
 * The partitions of generation `generation`'s items, in a fixed order: the whole's movements and
 * cohorts (each shard), churn by reason, each segment's movements and cohorts, then its segment
 * registry (48 shards) and last its settings partition. Its segments are those it registered and
 * those `successor` (the generation that replaced it, whose recount registered every segment it
 * counted) did: a generation counted before segments were registered is covered so.
 */
const partitionsOf = async (merchantId: string, generation: number, successor?: number): Promise<string[]> => {
  const registry = async (g: number) =>
    (
      await Promise.all(
        Array.from({ length: COUNTER_SHARDS }, (_, shard) =>
          queryAll<{ sk: string }>({ partition: generationSegmentsPartition(merchantId, g, shard), descending: false }, ['sk']),
        ),
      )
    ).flat();
  const registered = [...(await registry(generation)), ...(successor === undefined ? [] : await registry(successor))];
  const named = [...new Set(registered.map((r) => r.sk))].sort().map((sk) => {
    const [dimension, ...value] = sk.split('#');
    const sales = dimension.startsWith(SALES_REGISTRY);
    return { sales, segment: { dimension: dimension.slice(sales ? SALES_REGISTRY.length : 0), value: value.join('#') } as Segment };
  });
  return [
    ...shardPartitions(metricsPartition(merchantId, null, generation)),
    ...shardPartitions(cohortPartition(merchantId, null, generation)),
    ...salesPartitions(salesPartition(merchantId, null, generation)),
    churnReasonsPartition(merchantId, generation),
    ...named.flatMap(({ sales, segment: s }) =>
      sales
        ? salesPartitions(salesPartition(merchantId, s, generation))
        : [...shardPartitions(metricsPartition(merchantId, s, generation)), ...shardPartitions(cohortPartition(merchantId, s, generation))],
    ),
    ...Array.from({ length: COUNTER_SHARDS }, (_, shard) => generationSegmentsPartition(merchantId, generation, shard)),
    keys.generationZone(merchantId, generation).pk,
  ];
};

/** Partitions retired at once (each its own key, each paced on its own). */
const RETIRING_AT_ONCE = 8;

/** Deletes one partition's items, at most RETIRE_WCU_PER_KEY write units a second; a pending-moves item is applied first (its apply takes it off its shard's backlog count). */
const retirePartition = async (partition: string) => {
  const read = () => queryAll<Key & { entity?: string }>({ partition, descending: false }, ['pk', 'sk', 'entity']);
  let items = await read();
  const pending = items.filter((k) => k.entity === PENDING_MOVES_ENTITY);
  for (const k of pending) await applyPending({ pk: k.pk, sk: k.sk });
  if (pending.length) items = await read();
  for (let j = 0; j < items.length; j += BATCH_WRITE_LIMIT) {
    const group = items.slice(j, j + BATCH_WRITE_LIMIT);
    const started = Date.now();
    await batchWrite(group.map((k) => ({ delete: { pk: k.pk, sk: k.sk } })));
    const wait = (group.length * 1000) / RETIRE_WCU_PER_KEY - (Date.now() - started);
    if (wait > 0) await sleep(wait);
  }
};

/**
 * Deletes generation `generation`'s items (one no longer counted, or abandoned) from partition
 * `from` on, RETIRING_AT_ONCE partitions at a time; `next`: where to go on when `until` came first.
 */
export const retireGeneration = async (merchantId: string, generation: number, from: number, until: number, successor?: number) => {
  const partitions = await partitionsOf(merchantId, generation, successor);
  for (let i = from; i < partitions.length; i += RETIRING_AT_ONCE) {
    if (Date.now() > until) return { done: false, next: i };
    await Promise.all(partitions.slice(i, i + RETIRING_AT_ONCE).map(retirePartition));
  }
  return { done: true, next: partitions.length };
};

export type JobOutcome = 'gone' | 'done' | 'continued';

/**
 * Runs one job (by its key) until `until`: gone (another delivery ran it), done (deleted, the
 * recount switched or superseded), or continued (deleted, and the next round put, in one
 * transaction). Run twice, a job counts nothing twice: a customer counted is marked in the same
 * transaction, and is skipped.
 */
export const runRecountJob = async (key: Key, until: number): Promise<JobOutcome> => {
  const { Item } = await db().send(new GetCommand({ TableName: tableName(), Key: key, ConsistentRead: true }));
  if (!Item) return 'gone';
  const job = Item as unknown as RecountJob;
  const merchantId = job.merchant_id;
  const end = new WriteSet();
  end.delete('recount-job', key, { expression: 'attribute_exists(pk)' });
  const commitEnd = async (outcome: JobOutcome): Promise<JobOutcome> => {
    try {
      await end.commit();
      return outcome;
    } catch (err) {
      if (err instanceof WriteConflict && err.tags.includes('recount-job')) return 'gone';
      throw err;
    }
  };
  const retire = [...(job.retire ?? [])];
  let retireFrom = job.retire_from ?? 0;
  while (retire.length) {
    const done = await retireGeneration(merchantId, retire[0], retireFrom, until, job.successor);
    if (!done.done) {
      addRecountJob(end, { ...job, retire, retire_from: done.next, round: job.round + 1 });
      return commitEnd('continued');
    }
    logger.info('generation retired', { merchant_id: merchantId, generation: retire[0] });
    retire.shift();
    retireFrom = 0;
  }
  const merchant = await getMerchant(merchantId);
  const recount = merchant ? recountOf(merchant) : null;
  // Superseded, already switched, or the merchant gone: nothing left to count.
  if (!merchant || recount?.generation !== job.generation || recount.status !== 'pending') return commitEnd('done');
  const read = await readGenerationSettings(merchantId, job.generation);
  const settings = { timezone: read.zone, rates: read.rates, delinquencyDays: delinquencyDaysOf(merchant) };
  try {
    const counted = await countFrom(merchantId, merchant.reporting_currency, job.generation, settings, job.from_id, until);
    if (!counted.done) {
      addRecountJob(end, { merchant_id: merchantId, generation: job.generation, from_id: counted.next, round: job.round + 1 });
      return commitEnd('continued');
    }
  } catch (err) {
    if (err instanceof Superseded) return commitEnd('done');
    throw err;
  }
  if (!(await switchTo(merchant, job.generation, settings.timezone))) return commitEnd('done');
  logger.info('recount switched', { merchant_id: merchantId, generation: job.generation });
  // The generation that counted until now: nothing reads it any more (a read that began before the switch sees it moved and reads again).
  addRecountJob(end, {
    merchant_id: merchantId,
    generation: job.generation,
    from_id: 1,
    round: job.round + 1,
    retire: [generationOf(merchant)],
    successor: job.generation,
  });
  return commitEnd('continued');
};

/** What the worker's stream mapping lets through, tested again here and by the local poller: INSERTs of recount jobs. */
export const isRecountJobInsert = (record: DynamoDBRecord): boolean =>
  record.eventName === 'INSERT' && record.dynamodb?.NewImage?.entity?.S === RECOUNT_JOB_ENTITY;

/**
 * The recount worker as a Lambda handler (DynamoDB stream event → partial batch response): each
 * job in turn within the invocation's time; a job that fails is reported, so the mapping retries it
 * (from where it stopped: what it counted is marked).
 */
export const handleRecountJobs = /* @__PURE__ */ asFunction(
  'recountWorker' satisfies WorkerFunction, // a literal: a property read would keep the call in every bundle
  async (event: DynamoDBStreamEvent, context: Context): Promise<DynamoDBBatchResponse> => {
    logger.addContext(context);
    const until = Date.now() + context.getRemainingTimeInMillis() - DEADLINE_MARGIN_MS;
    const failed: string[] = [];
    await withDeadline(until, async () => {
      for (const record of (event.Records ?? []).filter(isRecountJobInsert)) {
        const pk = record.dynamodb?.Keys?.pk?.S;
        const sk = record.dynamodb?.Keys?.sk?.S;
        try {
          if (!pk || !sk) throw new Error('stream record without its pk and sk');
          const outcome = await runRecountJob({ pk, sk }, deadline() - JOB_MARGIN_MS);
          logger.info('recount job run', { pk, sk, outcome });
        } catch (err) {
          failed.push(record.dynamodb?.SequenceNumber ?? '');
          logger.warn('recount job failed', { pk, sk, error: (err as Error).name, error_message: (err as Error).message });
        }
      }
    });
    return { batchItemFailures: failed.map((itemIdentifier) => ({ itemIdentifier })) };
  },
);

/**
 * Puts the job of the merchant's pending recount again (`ops metrics resume-recount`: after its job
 * was given up on): from the first customer, those already counted being skipped. Nothing pending: nothing put.
 */
export const resumeRecount = async (merchantId: string): Promise<{ resumed: boolean; generation?: number }> => {
  const merchant = await getMerchant(merchantId);
  const recount = merchant ? recountOf(merchant) : null;
  if (recount?.status !== 'pending') return { resumed: false };
  const ws = new WriteSet();
  addRecountJob(ws, { merchant_id: merchantId, generation: recount.generation, from_id: 1, round: 1 });
  await ws.commit();
  return { resumed: true, generation: recount.generation };
};

/** Runs every job of the merchant's now (oldest first) until none is left: what the worker does, in this process (tests, `ops`). */
export const settleRecounts = async (merchantId: string, until = Date.now() + 600_000): Promise<number> => {
  let runs = 0;
  for (;;) {
    const jobs = await queryAll<Key>({ partition: keys.recountJob(merchantId, '').pk, descending: false }, ['pk', 'sk']);
    if (!jobs.length) return runs;
    for (const job of jobs) {
      await runRecountJob({ pk: job.pk, sk: job.sk }, until);
      runs += 1;
    }
  }
};
