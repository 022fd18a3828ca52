import Decimal from 'decimal.js';
import { DeleteCommand, GetCommand } from '@aws-sdk/lib-dynamodb';
import { batchGet, keyId } from '#lib/db/batch-get';
import { db, tableName } from '#lib/db/client';
import {
  churnReasonsPartition,
  cohortPartition,
  indexPartitions,
  keys,
  metricsPartition,
  salesPartition,
  salesItemOfSk,
  salesPartitions,
  shardPartitions,
} from '#lib/db/keys';
import { pagesOf, queryAll } from '#lib/db/query';
import { ExactDecimal } from '#lib/shared/money';
import { type BookingLines, bookingsOf, isSalesAttr, ordersOfBookings, saleOf, salesSlices, sameBookings } from '#lib/metrics/bookings';
import { STORED_ATTR } from '#lib/metrics/rules';
import { addTimelineChange, aggregateKey, plansOf, SALES_ID, salesIds, storedAttr, timelinesFrom } from '#lib/metrics/store';
import {
  addContribution,
  addToSlice,
  addToSlices,
  difference,
  firstDifference,
  lineOf,
  newSlices,
  orderLine,
  withRenewals,
  replaceLine,
  type Contributions,
  type OrderFacts,
  type Point,
  type Segment,
  type Tag,
  type Timeline,
  UNCONVERTED_ATTR,
  withConversions,
} from '#lib/metrics/timeline';
import { readGenerationSettings } from '#lib/metrics/generation';
import { subscriptionTag, type SubscriptionFacts } from '#lib/metrics/lines';
import { retrying } from '#lib/db/retry';
import { applyPending, putIfAbsent, WriteSet } from '#lib/db/writes';
import { getMerchant } from '#lib/merchants/store';
import { delinquencyDaysOf, figuresZoneOf, generationOf, recountingOf } from '#lib/merchants/rules';
import { DEFAULT_TIMEZONE } from '#lib/shared/zone';
import { formatTimestamp } from '#lib/shared/time';
import { now } from '#lib/clock';

/**
 * `ops metrics rebuild`: makes a merchant's stored aggregates equal the sum of its customers'
 * timelines (what every write keeps them equal to), for data written by an earlier version of the
 * item shapes (year items before the month roll-ups) or repaired by hand. It gives customers with a
 * timeline written before the plan-customers index their entries, and has each customer's own items
 * repaired by the customers module (`repairCustomer`: LTV parts, metadata entries, search keys).
 * Everything is read by key or from the
 * table (strongly consistent); corrections are `ADD`s of the difference on shard 0, so running it
 * twice changes nothing the second time. Run it while the merchant's writes are paused: a write
 * between the timeline reads and the aggregate reads would be counted twice.
 */

const ATTR_OF_STORED = /* @__PURE__ */ Object.fromEntries(Object.entries(STORED_ATTR).map(([logical, stored]) => [stored, logical]));
const CUSTOMERS_PER_READ = 50; // customer + timeline: 100 keys, one BatchGetItem

/**
 * The aggregate id (`D#<day>`, `M#<month>`, `C#<cohort>#<month>`, churn by reason `RD#…`/`RM#…`) of a
 * stored item, or `Y#…` for a retired year item.
 */
const aggregateIdOf = (partition: 'metrics' | 'cohort' | 'reasons', sk: string) => {
  const withoutShard = sk.slice(0, sk.lastIndexOf('#'));
  return partition === 'metrics' ? withoutShard : partition === 'reasons' ? `R${withoutShard}` : `C#${withoutShard}`;
};

export type RebuildReport = {
  customers_read: number;
  timelines: number;
  aggregates_corrected: number;
  year_items_removed: number;
  search_keys_added: number;
  pending_moves_applied: number;
  timelines_rederived: number;
  index_entries_added: number;
  /** LTV part items put or deleted so a customer's parts are what its paid orders in other currencies make. */
  ltv_parts_written: number;
};

/**
 * A customer's timeline with its order and subscription lines derived again from those records as
 * they now are (the rules of `orderLine` and `subscriptionTimeline`): an order that does not count
 * (or is now another customer's) has no line, nor has a deleted subscription; a subscription's
 * points written before points carried their plan, cycle and currency take the subscription's. Lines
 * of records that still count are kept as they are.
 */
const rederiveLines = async (merchantId: string, reportingCurrency: string, customerId: number, tl: Timeline): Promise<Timeline> => {
  const orderNos = Object.keys(tl)
    .filter((l) => l.startsWith('O'))
    .map((l) => l.slice(1));
  const subIds = Object.keys(tl)
    .filter((l) => l.startsWith('S'))
    .map((l) => Number(l.slice(1)));
  const found = await batchGet<Record<string, unknown>>([
    ...orderNos.map((n) => keys.order(merchantId, n)),
    ...subIds.map((s) => keys.subscription(merchantId, s)),
  ]);
  let next = tl;
  for (const no of orderNos) {
    const order = found.get(keyId(keys.order(merchantId, no))) as (OrderFacts & { customer_id: number }) | undefined;
    const points = order && Number(order.customer_id) === customerId ? orderLine(order) : [];
    if (JSON.stringify(points) !== JSON.stringify(tl[lineOf.order(no)])) next = replaceLine(next, lineOf.order(no), points);
  }
  for (const id of subIds) {
    const sub = found.get(keyId(keys.subscription(merchantId, id)));
    const line = lineOf.subscription(id);
    if (!sub || sub.deleted_at) {
      next = replaceLine(next, line, []);
      continue;
    }
    // Points written before points had tags take the subscription's plan, cycle and currency as it now is.
    if (tl[line].some((p) => !p[3])) {
      const tag = subscriptionTag(sub as unknown as SubscriptionFacts, reportingCurrency);
      const untagged = (p: Point): Point => [p[0], p[1], p[2], p[2] === 'c' ? tag : (tag.slice(0, 3) as Tag)];
      next = replaceLine(
        next,
        line,
        tl[line].map((p) => (p[3] ? p : untagged(p))),
      );
    }
  }
  return next;
};

/** Orders whose bookings one rebuild write sets at most (about 260 KB of entries, 8 chunks). */
const BOOKINGS_PER_WRITE = 2_000;

/** `current` with up to `n` of the lines that differ from `target` made as there (the same object when none differ). */
const towards = (current: BookingLines, target: BookingLines, n: number): BookingLines => {
  const differing = [
    ...Object.keys(target).filter((line) => !sameBookings({ [line]: target[line] }, current[line] ? { [line]: current[line] } : {})),
    ...Object.keys(current).filter((line) => target[line] === undefined),
  ];
  if (!differing.length) return current;
  if (differing.length <= n && Object.keys(current).length === 0) return target;
  const next = { ...current };
  for (const line of differing.slice(0, n)) {
    if (target[line]) next[line] = target[line];
    else delete next[line];
  }
  return next;
};

/**
 * The customer's bookings from its orders as they now are: the order numbers its index lists, each
 * order then read by key (strongly consistent; an order moved to another customer meanwhile is not
 * its own). Run while writes are paused, as the whole rebuild is.
 */
const customerBookings = async (merchantId: string, customerId: number): Promise<BookingLines> => {
  const nos: string[] = [];
  for await (const rows of pagesOf<{ order_no: string }>(
    { index: 'gsi3', partition: indexPartitions.ordersByCustomer(merchantId, customerId) },
    1000,
  ))
    nos.push(...rows.map((r) => String(r.order_no)));
  if (!nos.length) return {};
  const found = await batchGet<Record<string, unknown>>(nos.map((n) => keys.order(merchantId, n)));
  return bookingsOf([...found.values()].filter((o) => Number(o.customer_id) === customerId).map((o) => saleOf(o)));
};

/**
 * Brings one customer's own items (its item, its partition, its index entries) up to the present
 * shapes: the customers module's, given by the caller, as metrics does not write customers.
 */
export type RepairCustomer = (
  merchantId: string,
  reportingCurrency: string,
  customer: Record<string, unknown>,
) => Promise<{ ltv_parts_written: number; search_keys_added: number; index_entries_added: number }>;

export const rebuildMerchantAggregates = async (
  merchantId: string,
  repairCustomer: RepairCustomer,
  { bookingsPerWrite = BOOKINGS_PER_WRITE }: { bookingsPerWrite?: number } = {},
): Promise<RebuildReport> => {
  const { Item: seq } = await db().send(new GetCommand({ TableName: tableName(), Key: keys.sequences(merchantId), ConsistentRead: true }));
  const lastCustomerId = Number(seq?.customer ?? 0);

  const merchant = await getMerchant(merchantId);
  const reportingCurrency = merchant?.reporting_currency ?? 'TWD';
  // The generation of the aggregates that counts (its items are the ones corrected), in its zone and at its rates.
  const generation = merchant ? generationOf(merchant) : 0;
  const recount = merchant ? recountingOf(merchant) : undefined;
  const zone = merchant ? figuresZoneOf(merchant) : DEFAULT_TIMEZONE;
  const delinquencyDays = delinquencyDaysOf(merchant ?? {});
  const rates = { book: (await readGenerationSettings(merchantId, generation)).rates };
  // Per slice of the figures ('' the whole, else a segment): what the customers' timelines add up to.
  const targets = newSlices();
  let linesRederived = 0;
  let timelines = 0;
  let searchKeysAdded = 0;
  let indexEntriesAdded = 0;
  let ltvPartsWritten = 0;
  /** Puts an index entry (metadata or plan customers) that is missing; one already there is left as it is. */
  const addEntry = async (key: { pk: string; sk: string }, customerId: number) => {
    if (await putIfAbsent({ ...key, customer_id: customerId })) indexEntriesAdded += 1;
  };
  for (let first = 1; first <= lastCustomerId; first += CUSTOMERS_PER_READ) {
    const ids = Array.from({ length: Math.min(CUSTOMERS_PER_READ, lastCustomerId - first + 1) }, (_, i) => first + i);
    const found = await batchGet<Record<string, unknown>>(
      ids.flatMap((id) => [keys.customer(merchantId, id), keys.customerTimeline(merchantId, id)]),
    );
    const read = await timelinesFrom(merchantId, found, ids);
    for (const id of ids) {
      const hasHead = found.has(keyId(keys.customerTimeline(merchantId, id)));
      // Every customer's bookings, from its orders as they now are (customers written before bookings were stored get theirs).
      const booked = found.has(keyId(keys.customer(merchantId, id))) ? await customerBookings(merchantId, id) : {};
      if (hasHead || Object.keys(booked).length) {
        if (hasHead) timelines += 1;
        const state = read.get(id)!;
        // Lines written by earlier rules are derived again from their orders and subscriptions as they now are.
        // …and converted at the rates as they now are.
        const current = withConversions(
          withRenewals(await rederiveLines(merchantId, reportingCurrency, id, state.timeline), delinquencyDays, formatTimestamp(now())),
          reportingCurrency,
          rates.book,
          zone,
        );
        if (firstDifference(state.timeline, current) !== null || state.zone !== zone || !sameBookings(state.bookings, booked)) {
          // The bookings go BOOKINGS_PER_WRITE at a time (a customer of 100,000 orders too: each write holds its chunks).
          await retrying(async () => {
            for (;;) {
              const fresh = (await timelinesFrom(merchantId, await batchGet([keys.customerTimeline(merchantId, id)]), [id])).get(id)!;
              const next = towards(fresh.bookings, booked, bookingsPerWrite);
              const ws = new WriteSet();
              await addTimelineChange(
                ws,
                merchantId,
                { reportingCurrency, timezone: zone, generation, ...(recount === undefined ? {} : { recount }), delinquencyDays },
                id,
                fresh,
                await rederiveLines(merchantId, reportingCurrency, id, fresh.timeline),
                undefined,
                next,
              );
              await ws.commit();
              if (next === booked || sameBookings(next, booked)) return;
            }
          });
          linesRederived += 1;
        }
        // Customers with a timeline written before the plan-customers index get their entries.
        await Promise.all([...plansOf(current)].map((plan) => addEntry(keys.planCustomer(merchantId, plan, id), id)));
        addToSlices(targets, current, reportingCurrency, zone);
        const money = { zone, reporting: reportingCurrency, rates: rates.book };
        for (const { segment, figures } of salesSlices([...ordersOfBookings(booked, id).values()], money))
          addToSlice(targets, segment, salesIds(figures));
      }
      const customer = found.get(keyId(keys.customer(merchantId, id)));
      if (customer) {
        const repaired = await repairCustomer(merchantId, reportingCurrency, customer);
        ltvPartsWritten += repaired.ltv_parts_written;
        searchKeysAdded += repaired.search_keys_added;
        indexEntriesAdded += repaired.index_entries_added;
      }
    }
  }

  // Pending moves are applied first (each exactly once), so the stored items below are whole.
  let pendingApplied = 0;
  const partitionsOf = (segment: Segment | null) =>
    [
      ...shardPartitions(metricsPartition(merchantId, segment, generation)).map((p) => ['metrics', p]),
      ...shardPartitions(cohortPartition(merchantId, segment, generation)).map((p) => ['cohort', p]),
      ...salesPartitions(salesPartition(merchantId, segment, generation)).map((p) => ['sales', p]),
      ...(segment ? [] : [['reasons', churnReasonsPartition(merchantId, generation)]]),
    ] as ['metrics' | 'cohort' | 'reasons' | 'sales', string][];
  for (const { segment } of targets.values()) {
    for (const [, partition] of partitionsOf(segment)) {
      for (const item of await queryAll<{ pk: string; sk: string; moves?: string }>({ partition }, ['pk', 'sk', 'moves'])) {
        if (item.moves !== undefined && (await applyPending({ pk: item.pk, sk: item.sk }))) pendingApplied += 1;
      }
    }
  }

  const yearItems: { pk: string; sk: string }[] = [];
  // Every attribute: the unconverted levels' names (`uUSD`) are not known in advance.
  const attrs: string[] = [];
  let corrected = 0;
  for (const { segment, target } of targets.values()) {
    const stored: Contributions = new Map();
    for (const [kind, partition] of partitionsOf(segment)) {
      for (const item of await queryAll<Record<string, unknown>>({ partition }, attrs)) {
        if (kind === 'sales') {
          // The sales figures' items keep their attributes' own names.
          for (const [attr, v] of Object.entries(item))
            if (isSalesAttr(attr))
              addContribution(stored, `${SALES_ID}${salesItemOfSk(String(item.sk))}`, attr, new ExactDecimal(String(v)));
          continue;
        }
        const id = aggregateIdOf(kind, String(item.sk));
        if (id.startsWith('Y#')) {
          yearItems.push({ pk: String(item.pk), sk: String(item.sk) });
          continue;
        }
        for (const [storedAttr, logical] of Object.entries(ATTR_OF_STORED)) {
          if (item[storedAttr] !== undefined) addContribution(stored, id, logical, new Decimal(String(item[storedAttr])));
        }
        for (const attr of Object.keys(item))
          if (UNCONVERTED_ATTR.test(attr)) addContribution(stored, id, attr, new Decimal(String(item[attr])));
      }
    }
    const corrections = difference(stored, target);
    corrected += corrections.size;
    for (const [id, moves] of corrections) {
      // A WriteSet, so the correction adds to the figures' version as every write does (a read sees it whole).
      const ws = new WriteSet(0);
      const u = ws.update('metrics', aggregateKey(merchantId, id, 0, segment, generation));
      for (const [attr, delta] of moves) u.add(storedAttr(id, attr), delta);
      await ws.commit();
    }
  }
  for (const key of yearItems) await db().send(new DeleteCommand({ TableName: tableName(), Key: key }));

  return {
    customers_read: lastCustomerId,
    timelines,
    aggregates_corrected: corrected,
    year_items_removed: yearItems.length,
    search_keys_added: searchKeysAdded,
    pending_moves_applied: pendingApplied,
    timelines_rederived: linesRederived,
    index_entries_added: indexEntriesAdded,
    ltv_parts_written: ltvPartsWritten,
  };
};
