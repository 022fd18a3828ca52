import { keyText } from '#lib/shared/key-text';
import { COUNTER_SHARDS } from '#lib/db/writes-constants';

/**
 * The table design, in one place. One table, every key prefixed by the merchant (`M#<id>`),
 * except the token-hash lookup (the merchant is not known until it is read) and the per-IP
 * rate window of unauthenticated requests, the outbox (led by `OUTBOX#` / `OUTBOX_EVENT#` then the
 * merchant: prefixes no data key can take, so IAM can limit the relay to them), and the merchant
 * directory's index partition (one entry per merchant, written when it is created).
 *
 * | item                      | pk                                  | sk              | indexes (sparse)                                        |
 * |---------------------------|-------------------------------------|-----------------|---------------------------------------------------------|
 * | token (by hash)           | TOKEN#<sha256>                      | TOKEN           |  (last_used_at: stamped at most once a minute, no TTL)  |
 * | merchant                  | M#<m>                               | MERCHANT        | gsi1 the merchant directory (MERCHANTS: the outbox sweeper's list) |
 * | merchant's token pointer  | M#<m>                               | TOKEN           |                                                         |
 * | id sequences              | M#<m>                               | SEQ             |                                                         |
 * | list totals (sharded)     | M#<m>#TOTALS#<nnn>                  | <RESOURCE>#<nnn>|  (one BatchGetItem reads a resource's shards)          |
 * | rate window (merchant)    | RATE#M#<m>[#<shard>]                | <window start>  |  (one item per shard; shards only for limits over 250/s) |
 * | rate window (back office) | RATE#M#<m>                          | BACKOFFICE#<window start> | (per minute; TTL like every rate window)      |
 * | rate window (IP)          | RATE#IP#<ip>                        | <window start>  |                                                         |
 * | customer                  | M#<m>#CUSTOMER#<id>                 | CUSTOMER        | gsi4 search (id, email, name; M#<m>#CUSTOMERS#<s>, 4 shards by id); gsi2 by external_id |
 * | email marker (unique)     | M#<m>#CUSTOMER_EMAIL#<email>        | MARKER          | gsi1 customer list, newest first (the customer's list entry) |
 * | external_id marker        | M#<m>#CUSTOMER_EXT#<external_id>    | MARKER          |                                                         |
 * | order                     | M#<m>#ORDER#<order_no>              | ORDER           | gsi3 by customer                                        |
 * | order list entry (all)    | M#<m>#ORDER#<order_no>              | LIST#ALL        | gsi1 all (names its item)                               |
 * | order list entry (status) | M#<m>#ORDER#<order_no>              | LIST#STATUS     | gsi2 by status (names its item)                         |
 * | subscription              | M#<m>#SUB#<id>                      | SUB             | gsi1 list; gsi2 by status; gsi3 by customer (live items) |
 * | subscription external_id  | M#<m>#SUB_EXT#<external_id>         | MARKER          |  (unique per merchant: subscription_id, customer_id)   |
 * | live-subscription marker  | M#<m>#CUSTOMER#<id>                 | LIVE_SUB        |  (one per customer: active or paused)                   |
 * | customer MRR timeline     | M#<m>#CUSTOMER#<id>                 | MRR_TIMELINE    |  (head, put under `version`: the points inline while they fit 32 KB, else `chunked`) |
 * | customer timeline chunk   | M#<m>#CUSTOMER#<id>                 | MRR_TIMELINE#<start> | (a long timeline's points from its start to the next chunk's; ≤ 32 KB, split when full) |
 * | pending moves             | M#<m>#MRR[#SEG…]#<ss> / M#<m>#COHORT[#SEG…]#<ss> / M#<m>#CHURN_REASONS | M#0000-00#P#<id> / <cohort>#0000-00#P#<id> | (aggregate ADDs a transaction could not hold, and every batch's; entity pending-moves; read in, applied once) |
 * | MRR movements of a day    | M#<m>#MRR#<ss>                      | D#<yyyy-mm-dd>#<ss> | (ADD deltas, 8 shards, each its own partition key: movements, active customers/subscriptions, churned) |
 * | MRR movements of a month  | M#<m>#MRR#<ss>                      | M#<yyyy-mm>#<ss> |  (the same sums per month, the roll-up: monthly series and levels read months, not days) |
 * | cohort month              | M#<m>#COHORT#<ss>                   | <cohort yyyy-mm>#<yyyy-mm>#<ss> | (joined; Δ customers with MRR > 0, Δ their MRR) |
 * | one segment's aggregates  | M#<m>#MRR#SEG#<dim>#<value>#<ss> / M#<m>#COHORT#SEG#<dim>#<value>#<ss> | as the two above | (plan, billing_cycle or currency: the same items over only that segment's lines) |
 * | churn by reason           | M#<m>#CHURN_REASONS                 | D#<day>#<reason>#<ss> / M#<month>#<reason>#<ss> | (churned MRR and customers per cancellation reason, URI-encoded) |
 * | plan name                 | M#<m>#PLANS                         | <plan name>#<ss> |  (one per plan the figures have seen; GET /metrics/plans) |
 * | customer metadata index   | M#<m>#CUSTOMER_META#<s>#<key>=<value> | <customer id, 15 digits> | (one per scalar metadata pair, both URI-encoded; 4 shards by id; written with the metadata; metadata segments) |
 * | plan customers index      | M#<m>#PLAN_CUSTOMERS#<s>#<plan>     | <customer id, 15 digits> | (a customer whose timeline ever had a point of the plan, URI-encoded; 4 shards by id; never removed) |
 * | subscription event        | M#<m>#SUBEVT#<id>                   | EVENT           | gsi1 all; gsi2 by type; gsi3 by customer (occurred_at)  |
 * | idempotency record        | M#<m>#IDEMPOTENCY#<key>             | IDEMPOTENCY     |  (TTL 24 h)                                             |
 * | idempotent batch item     | M#<m>#IDEMPOTENCY#<key>             | ITEM#<index>    |  (TTL 24 h: a recorded event applied under that key)    |
 * | batch chunk receipt       | M#<m>#BATCH_RECEIPT#<request token> | RECEIPT         |  (state committed, put by the chunk's transaction, or fenced, put by its settling; TTL 24 h) |
 * | stats (day / hour / month)| M#<m>#STATS#<yyyy-mm>#<nnn>         | D#<dd>#<nnn> / H#<dd>#<hh>#<nnn> / M#<nnn>  (sharded; day: whole + per-hour sums; hour: its quarter-hours; read by TransactGetItems) |
 * | customer payment time     | M#<m>#CUSTOMER#<id>                 | PAY#<paid_at>#<order_no>  (first/last_payment_at recomputation)   |
 * | customer LTV part         | M#<m>#CUSTOMER#<id>                 | LTV#<CCY>#<yyyy> |  (paid orders in another currency by UTC month, or quarter-hour near a month's ends: ltv converted at read time) |
 * | exchange-rate table       | M#<m>#RATES                         | <CCY>           |  (a currency's monthly rates and version) |
 * | figures generation copy   | M#<m>#GENERATION#<nnn>              | GENERATION      |  (48 copies, one a counter shard: the generation that counts, its zone, the one a recount fills; every figures write checks its shard's) |
 * | a generation's settings   | M#<m>#G<n>#SETTINGS                 | ZONE / RATES#<CCY> |  (the zone and rates generation n counts in, written before anything names it) |
 * | a generation's segments   | M#<m>#G<n>#SEGMENTS#<cs>            | <dim>#<value> / sales.<dim>#<value> |  (its segment registry, 48 shards by the writer's counter shard: a generation's retirement finds its segments' items by it) |
 * | sales figures             | M#<m>#SALES[#G<n>][#SEG…]#<B|Y|C>#<ss> | D#<day>#<l> / M#<month>#<l> / Y#<day>#<l> / C#<cohort>#<month>#<l> |  (booking days and months, payment-method days, cohort months; `<l>` the writer's lane in its shard, 0–5: reads sum the lanes) |
 * | a later generation's aggregates | M#<m>#MRR#G<n>[#SEG…]#<ss> / M#<m>#COHORT#G<n>[#SEG…]#<ss> / M#<m>#CHURN_REASONS#G<n> | as generation 0's | (filled by a recount, lib/metrics/recount.ts) |
 * | recount job               | M#<m>#RECOUNT                       | <round>#<uuid>  |  (a recount to go on with; entity recount-job, only put and deleted: the worker's stream filter; TTL 7 d) |
 * | applier pace              | M#<m>#PACE                          | A#<ss>#<epoch second> | (write units the pending-moves applier took on metric shard ss in that second; TTL 1 h) |
 * | pending-moves backlog     | M#<m>#PENDING#<ss>                  | BACKLOG         |  (n: pending-moves items waiting in metric shard ss; bounded by the puts' condition) |
 * | figures version           | M#<m>#FIGURES#<nnn>                 | VERSION         |  (v: transactions that wrote the aggregates in lane nnn, a counter shard; read around every metrics read) |
 * | outbox event (payload)    | OUTBOX_EVENT#M#<m>#<evt>            | EVENT           |  (entity "outbox": the stream filter; TTL 3 days; unique key per event) |
 * | outbox mark               | OUTBOX#M#<m>#<ss>                   | <created>#<nn>#<evt> | gsi4 pending (OUTBOX_PENDING#M#<m>#<ss>) until published; TTL 3 days |
 * | webhook endpoint          | M#<m>#WEBHOOK#<id>                  | ENDPOINT        | gsi1 list (M#<m>#WEBHOOKS)                              |
 * | webhook endpoint count    | M#<m>#TOTALS#000                    | WEBHOOK_ENDPOINTS#000 | (one item, not sharded: it enforces the cap)      |
 * | webhook endpoint list entry | M#<m>#WEBHOOK_LIST                | ENDPOINT#<id15> |  (id, status, events: the fan-out's strongly consistent Query; ≤ 20) |
 * | webhook delivery day count | M#<m>#WEBHOOK#<id>#DELIVERY_DAYS   | D#<yyyy-mm-dd>#<nnn> | (attempts logged that UTC day, 8 shards; TTL 31 d) |
 * | webhook delivery count head | M#<m>#WEBHOOK#<id>#DELIVERY_DAYS  | ~ENDPOINT       |  (while the endpoint exists: its day counts are complete, from `complete_from` when backfilled) |
 * | webhook delivery attempt  | M#<m>#WEBHOOK#<id>#DELIVERIES       | <at>#<evt>#<nnn> | (attempt nnn; newest first = Query desc; TTL expires_at, 30 d) |
 * | webhook delivery log head | M#<m>#WEBHOOK#<id>#DELIVERIES       | ~ENDPOINT       |  (while the endpoint exists: the log's page 1 proves it; no TTL) |
 * | webhook delivery (state)  | M#<m>#WEBHOOK#<id>                  | DELIVERY#<evt>  |  (body, attempts, delivered_at: dedupe + manual retry; TTL 30 d) |
 * | webhook endpoint health   | M#<m>#WEBHOOK#<id>                  | HEALTH          |  (failing_since: auto-disable after 5 days of failures) |
 * | activity-log entry        | M#<m>#ACTIVITY#<id>                 | ACTIVITY        | gsi1 all; gsi2 by type; gsi3 by import run (TTL: 13 whole months after its month) |
 * | activity id sequence      | M#<m>                               | SEQ#ACTIVITY    |  (its own item: batches never meet the other sequences) |
 * | activity-log totals       | M#<m>#ACTIVITY_TOTALS               | <yyyy-mm>#<nnn> |  (entries, entries_<type> per month, sharded; TTL with the month's entries) |
 * | import-run totals         | M#<m>#ACTIVITY_RUN#<run>            | <yyyy-mm>#<nnn> |  (the same counts for one import run)                   |
 *
 * Hot counters (totals, stats) are written to one of COUNTER_SHARDS shards (`<nnn>`, chosen per
 * transaction), each under its own partition key, and summed on read from one BatchGetItem of
 * their exact keys: concurrent writers rarely meet on an item, and no counter partition takes more
 * than one writer's share of the merchant's writes.
 * Customer payment-time items live under the customer's own partition: first/last_payment_at are
 * recomputed from them with a strongly consistent Query, never from an index.
 *
 * Index sort keys are `<created_at>#<id, 15 digits>` so lists come out newest first, then id desc.
 *
 * The merchant-wide lists of orders and customers are indexed through list entries, not through
 * the items: gsi1 and gsi2 project every attribute (other item types need that), so an order
 * carrying its list keys would copy all of itself (up to 17 KB of metadata) into the merchant's
 * list partitions on every write, and a customer would be copied again by every order that moves
 * its figures. An entry is a small item written in the entity's transaction, holding only its
 * index keys and `entry_of` (the key of the item it lists); it is rewritten only when its index key
 * moves (an order's status entry on a status change). An order's two entries are in its own
 * partition; a customer's is its email marker, which lives exactly as long as the customer does
 * (so a customer create writes no more items than before, and a batch of them packs as densely). A list
 * reads the entries from the index, then the items by key (lib/db/query.ts). Items written before
 * entries existed carry the keys themselves until `ops upgrade` moves them to entries; a list
 * takes such an index row as the item. A customer's per-customer order list (gsi3) stays on the
 * order: its partition is the customer's own.
 */
export type Key = { pk: string; sk: string };

const m = (merchantId: string): string => `M#${merchantId}`;
/** Leading prefix of the rate-window items only (the IAM `LeadingKeys` pattern of read functions). */
export const RATE_PREFIX = 'RATE#';
const pad = (id: number): string => String(id).padStart(15, '0');
const padShard = (shard: number): string => String(shard).padStart(3, '0');
/**
 * Metrics aggregate items are spread over this many shards (the transaction's counter shard
 * modulo this): every MRR-moving write of a merchant's day meets the same day, month and cohort
 * items, so fewer concurrent writers collide; reads sum the shards. Eight keep a 731-day read in
 * one Query page.
 */
export const METRIC_SHARDS = 8;
const padMetricShard = (shard: number): string => String(shard % METRIC_SHARDS).padStart(2, '0');

/**
 * The metric shard an item of the aggregates belongs to: the shard of its partition (movements,
 * cohorts, whole or segment, any generation) or, in the unsharded churn-by-reason partition, of its
 * sort key (`…#<ss>`); -1 for an item of that partition whose sort key names none (a pending-moves
 * item: its `pending_shard`); null for any other key.
 */
export const metricShardOfKey = (key: Key): number | null => {
  const sharded = /^M#[^#]+#(?:MRR|COHORT|SALES)(?:#.*)?#(\d{2})$/.exec(key.pk);
  if (sharded) return Number(sharded[1]);
  if (!/^M#[^#]+#CHURN_REASONS(?:#G\d+)?$/.test(key.pk)) return null;
  const own = /#(\d{2})$/.exec(key.sk);
  return own ? Number(own[1]) : -1;
};
/**
 * The figures' version of one lane (a counter shard, 0 to COUNTER_SHARDS − 1): every transaction
 * that writes items of the aggregates adds 1 to its lane's, in the same transaction (lib/db/writes.ts),
 * and a read of the aggregates reads the versions before and after its Queries (lib/metrics/store.ts
 * `oneState`). Lane c moves metric shard c mod METRIC_SHARDS only. Each lane its own partition key,
 * as the counters: concurrent writers hold different lanes.
 */
export const figuresVersionPartition = (merchantId: string, lane: number): string => `${m(merchantId)}#FIGURES#${padShard(lane)}`;

/**
 * A merchant's outbox marks (and their pending index entries) are spread over this many partitions
 * by event id, so that at the hottest merchant's event rate no outbox partition nears 500 WCU
 * (docs/events-and-outbox.md has the arithmetic).
 */
export const OUTBOX_SHARDS = 16;
/** The shard of an event: a hash of its id, so the relay and the sweeper find its mark from the event alone. */
export const outboxShardOf = (eventId: string): number => {
  let h = 0;
  for (let i = 0; i < eventId.length; i++) h = (h * 31 + eventId.charCodeAt(i)) >>> 0;
  return h % OUTBOX_SHARDS;
};
const padOutboxShard = (shard: number): string => String(shard).padStart(2, '0');
/** Leading prefixes of outbox marks and outbox event items (the IAM `LeadingKeys` patterns of the relay and the sweeper). */
export const OUTBOX_PREFIX = 'OUTBOX#';
export const OUTBOX_EVENT_PREFIX = 'OUTBOX_EVENT#';
/** Partition of one shard of a merchant's outbox marks (time-ordered: the replay reads them). */
export const outboxPartition = (merchantId: string, shard: number): string => `${OUTBOX_PREFIX}${m(merchantId)}#${padOutboxShard(shard)}`;
/** Partition (gsi4) of one shard of a merchant's marks not yet published: the sweeper's candidates. */
export const outboxPendingPartition = (merchantId: string, shard: number): string =>
  `OUTBOX_PENDING#${m(merchantId)}#${padOutboxShard(shard)}`;
/** The merchant directory (gsi1 of merchant items): written once per merchant, read by the outbox sweeper. */
export const MERCHANT_DIRECTORY = 'MERCHANTS';
export const merchantDirectoryIndex = (merchantId: string) => ({ gsi1pk: MERCHANT_DIRECTORY, gsi1sk: m(merchantId) });

/** Sort keys of an order's list entries, in the order's own partition. */
const LIST_ENTRY_ALL = 'LIST#ALL';
const LIST_ENTRY_STATUS = 'LIST#STATUS';
/**
 * The attribute of a list entry naming the key (`{ pk, sk }`) of the item it lists: an index row
 * carrying it is an entry, any other row is the item itself.
 */
export const ENTRY_OF = 'entry_of';

export type TotalsResource = 'ORDERS' | 'CUSTOMERS' | 'SUBSCRIPTIONS' | 'SUBSCRIPTION_EVENTS' | 'WEBHOOK_ENDPOINTS';
export const PAYMENT_PREFIX = 'PAY#';
export const LTV_PART_PREFIX = 'LTV#';
/** Sort-key prefix of a customer's timeline chunks (read with one strongly consistent Query). */
export const TIMELINE_CHUNK_PREFIX = 'MRR_TIMELINE#';
/**
 * Each counter shard is its own partition key: a shard is written by one writer at a time (a
 * second one conflicts and draws another), so no counter key takes more than one writer's pace.
 */
/** The merchant a data key belongs to (`M#<m>#…`), or null for a key led otherwise. */
export const merchantOfKey = (pk: string): string | null => /^M#([^#]+)(?:#|$)/.exec(pk)?.[1] ?? null;
/** Partition of one shard of a merchant's list totals. */
export const totalsPartition = (merchantId: string, shard: number): string => `${m(merchantId)}#TOTALS#${padShard(shard)}`;
/** Partition of one shard of a merchant's stats of one month (its day items `D#<dd>#<nnn>` and month item `M#<nnn>`). */
export const statsPartition = (merchantId: string, month: string, shard: number): string =>
  `${m(merchantId)}#STATS#${month}#${padShard(shard)}`;
/** The partitions counters had before each shard had its own (read only by `ops upgrade`). */
export const legacyCounterPartitions = {
  totals: (merchantId: string): string => `${m(merchantId)}#TOTALS`,
  stats: (merchantId: string, month: string): string => `${m(merchantId)}#STATS#${month}`,
};
type Segmentish = { dimension: string; value: string } | null;
/** The partition suffix of one segment's aggregates (one plan, billing cycle or currency): each its own partition key. */
const segmentSuffix = (segment?: { dimension: string; value: string } | null) =>
  segment ? `#SEG#${segment.dimension}#${segment.value}` : '';
/**
 * The partition suffix of a generation of the aggregates (lib/metrics/generation.ts): generation 0
 * (every merchant until its first settings change) has none, so its keys are those items always had.
 */
const generationSuffix = (generation: number) => (generation ? `#G${generation}` : '');
/**
 * The prefix of a merchant's MRR movement partitions (days `D#<yyyy-mm-dd>`, month roll-ups
 * `M#<yyyy-mm>`), whole or of one segment: each of the METRIC_SHARDS shards is its own partition
 * key, `<prefix>#<ss>` (`metricsShardPartition`), so the merchant's MRR-moving writes spread their
 * capacity over 8 keys, not only their conflicts; a read Queries the 8 at once.
 */
export const metricsPartition = (merchantId: string, segment?: { dimension: string; value: string } | null, generation = 0): string =>
  `${m(merchantId)}#MRR${generationSuffix(generation)}${segmentSuffix(segment)}`;
/** The prefix of a merchant's cohort partitions (`<cohort month>#<month>`), whole or of one segment, sharded like the movements. */
export const cohortPartition = (merchantId: string, segment?: { dimension: string; value: string } | null, generation = 0): string =>
  `${m(merchantId)}#COHORT${generationSuffix(generation)}${segmentSuffix(segment)}`;
/**
 * The prefix of a merchant's sales partitions (lib/metrics/bookings.ts: booking days `D#<day>`,
 * months `M#<month>`, payment-method days `Y#<day>`, cohort months `C#<cohort>#<month>`), whole or of
 * one segment, sharded like the movements.
 */
export const salesPartition = (merchantId: string, segment?: { dimension: string; value: string } | null, generation = 0): string =>
  `${m(merchantId)}#SALES${generationSuffix(generation)}${segmentSuffix(segment)}`;
/**
 * The kinds of sales items, each its own partitions, so every order write's items spread over three
 * keys a shard: `B` the booking days and months, `Y` the payment-method days, `C` the cohort months.
 */
export const SALES_KINDS = ['B', 'Y', 'C'] as const;
export type SalesKind = (typeof SALES_KINDS)[number];
/** One shard's partition of one kind of the sales figures (`shard` taken modulo METRIC_SHARDS). */
export const salesShardPartition = (
  merchantId: string,
  segment: Segmentish | undefined,
  generation: number,
  kind: SalesKind,
  shard: number,
): string => `${salesPartition(merchantId, segment, generation)}#${kind}#${padMetricShard(shard)}`;
/**
 * A sales item's sort key as one writer keeps it: `<item>#<lane>`, the lane its counter shard's
 * place among those sharing its metric shard (0 to COUNTER_SHARDS / METRIC_SHARDS − 1). Every order
 * write moves the sales items, so concurrent writers meet on them only where they meet on the
 * counters; a read sums an item's lanes (`salesItemOfSk`).
 */
export const salesItemSk = (item: string, shard: number): string => `${item}#${Math.floor((shard % COUNTER_SHARDS) / METRIC_SHARDS)}`;
/** The item a stored sales sort key is a lane of (`salesItemSk`'s inverse; an item's own sort key never ends `#<digit>`). */
export const salesItemOfSk = (sk: string): string => sk.replace(/#\d$/, '');
/** The sort key past every lane of an item (a range's upper end). */
export const salesLanesEnd = (item: string): string => `${item}#~`;
/** Every partition of a sales prefix: each kind's shards (what a rebuild or retire walks). */
export const salesPartitions = (prefix: string): string[] => SALES_KINDS.flatMap((kind) => shardPartitions(`${prefix}#${kind}`));
/** One shard's partition of the movements (`shard` taken modulo METRIC_SHARDS). */
export const metricsShardPartition = (merchantId: string, segment: Segmentish | undefined, generation: number, shard: number): string =>
  `${metricsPartition(merchantId, segment, generation)}#${padMetricShard(shard)}`;
/** One shard's partition of the cohorts (`shard` taken modulo METRIC_SHARDS). */
export const cohortShardPartition = (merchantId: string, segment: Segmentish | undefined, generation: number, shard: number): string =>
  `${cohortPartition(merchantId, segment, generation)}#${padMetricShard(shard)}`;
/** Every shard's partition of a movements or cohort prefix (what a read Queries, a rebuild or retire walks). */
export const shardPartitions = (prefix: string): string[] =>
  Array.from({ length: METRIC_SHARDS }, (_, s) => `${prefix}#${padMetricShard(s)}`);
/** Partition of a merchant's churn by cancellation reason (`D#<day>#<reason>` and `M#<month>#<reason>`, sharded). */
export const churnReasonsPartition = (merchantId: string, generation = 0): string =>
  `${m(merchantId)}#CHURN_REASONS${generationSuffix(generation)}`;
/**
 * Copies of the merchant's figures generation (which aggregates count, in which zone, and which
 * one a recount fills), each its own partition key: every write of the figures (each order's
 * sales, each MRR move) checks its counter shard's copy in its transaction, so concurrent writers
 * meet on a copy only where they meet on the counters (docs/scale.md).
 */
export const GENERATION_SHARDS = COUNTER_SHARDS;
export const generationPartition = (merchantId: string, shard: number): string =>
  `${m(merchantId)}#GENERATION#${padShard(shard % GENERATION_SHARDS)}`;
/** Partition of a merchant's exchange rates (one item per currency, its months in one map). */
export const exchangeRatesPartition = (merchantId: string): string => `${m(merchantId)}#RATES`;
/**
 * One shard of generation `generation`'s segment registry: a write putting a segment new to its
 * customer writes its own counter shard's, so new customers' writes meet there only where they
 * meet on the counters (a retirement reads all COUNTER_SHARDS).
 */
export const generationSegmentsPartition = (merchantId: string, generation: number, shard: number): string =>
  `${m(merchantId)}#G${generation}#SEGMENTS#${String(shard % COUNTER_SHARDS).padStart(2, '0')}`;
/** Partition of a merchant's plan names (one item per plan ever seen in its figures). */
export const plansPartition = (merchantId: string): string => `${m(merchantId)}#PLANS`;
/**
 * The customer metadata and plan-customers indexes (metadata segments, docs/metrics.md) are spread
 * over this many partitions by customer id (`id % 4`): a merchant's customers sharing one value do
 * not all land in one partition, and a read Queries the four at once.
 */
export const CUSTOMER_INDEX_SHARDS = 4;
const customerIndexShard = (customerId: number) => customerId % CUSTOMER_INDEX_SHARDS;
/** Partition of one shard of the customers whose metadata has `key` = `value` (String of a scalar). */
export const customerMetadataPartition = (merchantId: string, shard: number, key: string, value: string): string =>
  `${m(merchantId)}#CUSTOMER_META#${shard}#${keyText(key)}=${keyText(value)}`;
/** Partition of one shard of the customers whose timeline has had a point of `plan`. */
export const planCustomersPartition = (merchantId: string, shard: number, plan: string): string =>
  `${m(merchantId)}#PLAN_CUSTOMERS#${shard}#${keyText(plan)}`;
/** Shards of the customer search index (gsi4): on one key it took 656 WCU/s in the capacity model's import beside the full load. */
export const CUSTOMER_SEARCH_SHARDS = 4;
/**
 * Partition (gsi4) of one shard of the customer search index (`shard` taken modulo
 * CUSTOMER_SEARCH_SHARDS, one digit; a customer's is its id's): a search Queries the four at once.
 */
export const customerSearchPartition = (merchantId: string, shard: number): string =>
  `${m(merchantId)}#CUSTOMERS#${shard % CUSTOMER_SEARCH_SHARDS}`;
/** Every shard's partition of the customer search index, shard 0 first. */
export const customerSearchPartitions = (merchantId: string): string[] =>
  Array.from({ length: CUSTOMER_SEARCH_SHARDS }, (_, shard) => customerSearchPartition(merchantId, shard));
/** The search index's one partition before it had shards (read only by `ops upgrade`, which moves its rows). */
export const legacyCustomerSearchPartition = (merchantId: string): string => `${m(merchantId)}#CUSTOMERS`;
/**
 * Day counts of a delivery log are spread over this many shards: a busy endpoint's attempts rarely
 * meet on one item, and the 30 days' counts (240 small items) stay one Query page.
 */
export const DELIVERY_DAY_SHARDS = 8;
/** Partition of a merchant's webhook endpoint list entries (the delivery fan-out reads it whole). */
export const webhookEndpointListPartition = (merchantId: string): string => `${m(merchantId)}#WEBHOOK_LIST`;
/** Partition of an endpoint's delivery counts per day (the log's total) and their head. */
export const webhookDeliveryDaysPartition = (merchantId: string, endpointId: number): string =>
  `${m(merchantId)}#WEBHOOK#${endpointId}#DELIVERY_DAYS`;
/** Partition of an endpoint's delivery log (newest first: Query descending). */
export const webhookDeliveriesPartition = (merchantId: string, endpointId: number): string =>
  `${m(merchantId)}#WEBHOOK#${endpointId}#DELIVERIES`;

export const keys = {
  token: (hash: string): Key => ({ pk: `TOKEN#${hash}`, sk: 'TOKEN' }),
  merchant: (merchantId: string): Key => ({ pk: m(merchantId), sk: 'MERCHANT' }),
  merchantToken: (merchantId: string): Key => ({ pk: m(merchantId), sk: 'TOKEN' }),
  sequences: (merchantId: string): Key => ({ pk: m(merchantId), sk: 'SEQ' }),
  totals: (merchantId: string, resource: TotalsResource, shard: number): Key => ({
    pk: totalsPartition(merchantId, shard),
    sk: `${resource}#${padShard(shard)}`,
  }),
  // Rate windows lead with `RATE#`, a prefix no data key can take (IAM lets read functions update only these).
  /** Shard 0 is the window's first (and, for limits up to RATE_SHARD_CAPACITY a second, only) item. */
  merchantRateWindow: (merchantId: string, windowStart: number, shard = 0): Key => ({
    pk: shard === 0 ? `${RATE_PREFIX}${m(merchantId)}` : `${RATE_PREFIX}${m(merchantId)}#${shard}`,
    sk: String(windowStart),
  }),
  /** Back-office requests of a merchant (their own window, under the merchant's rate partition). */
  backofficeRateWindow: (merchantId: string, windowStart: number): Key => ({
    pk: `${RATE_PREFIX}${m(merchantId)}`,
    sk: `BACKOFFICE#${windowStart}`,
  }),
  ipRateWindow: (ip: string, windowStart: number): Key => ({ pk: `${RATE_PREFIX}IP#${ip}`, sk: String(windowStart) }),
  customer: (merchantId: string, id: number): Key => ({ pk: `${m(merchantId)}#CUSTOMER#${id}`, sk: 'CUSTOMER' }),
  customerEmail: (merchantId: string, email: string): Key => ({
    pk: `${m(merchantId)}#CUSTOMER_EMAIL#${email.toLowerCase()}`,
    sk: 'MARKER',
  }),
  customerExternalId: (merchantId: string, externalId: string): Key => ({
    pk: `${m(merchantId)}#CUSTOMER_EXT#${externalId}`,
    sk: 'MARKER',
  }),
  order: (merchantId: string, orderNo: string): Key => ({ pk: `${m(merchantId)}#ORDER#${orderNo}`, sk: 'ORDER' }),
  /** An order's entry in the merchant's list of all orders (`all`, gsi1) or of its status (`status`, gsi2). */
  orderListEntry: (merchantId: string, orderNo: string, list: 'all' | 'status'): Key => ({
    pk: `${m(merchantId)}#ORDER#${orderNo}`,
    sk: list === 'all' ? LIST_ENTRY_ALL : LIST_ENTRY_STATUS,
  }),
  subscription: (merchantId: string, id: number): Key => ({ pk: `${m(merchantId)}#SUB#${id}`, sk: 'SUB' }),
  /** A subscription's external id (imports): unique per merchant, names the subscription and its customer. */
  subscriptionExternalId: (merchantId: string, externalId: string): Key => ({ pk: `${m(merchantId)}#SUB_EXT#${externalId}`, sk: 'MARKER' }),
  /** The customer's one live (active or paused) subscription: a unique item under the customer. */
  liveSubscription: (merchantId: string, customerId: number): Key => ({ pk: `${m(merchantId)}#CUSTOMER#${customerId}`, sk: 'LIVE_SUB' }),
  /** The customer's MRR timeline (every line's change points), the base of its metrics classification. */
  customerTimeline: (merchantId: string, customerId: number): Key => ({
    pk: `${m(merchantId)}#CUSTOMER#${customerId}`,
    sk: 'MRR_TIMELINE',
  }),
  /** One part of a long timeline: its points from `period` (a month, or finer) to the next part's start. */
  customerTimelineChunk: (merchantId: string, customerId: number, period: string): Key => ({
    pk: `${m(merchantId)}#CUSTOMER#${customerId}`,
    sk: `${TIMELINE_CHUNK_PREFIX}${period}`,
  }),
  /** MRR movements of one UTC day (`D#`) or month (`M#`, the roll-up) in one of METRIC_SHARDS shards: ADD deltas, read as ranges. */
  metricsDay: (merchantId: string, day: string, shard: number, segment?: Segmentish, generation = 0): Key => ({
    pk: metricsShardPartition(merchantId, segment, generation, shard),
    sk: `D#${day}#${padMetricShard(shard)}`,
  }),
  metricsMonth: (merchantId: string, month: string, shard: number, segment?: Segmentish, generation = 0): Key => ({
    pk: metricsShardPartition(merchantId, segment, generation, shard),
    sk: `M#${month}#${padMetricShard(shard)}`,
  }),
  /** The forecast's scheduled moves of one month (`F#<month>`: trial conversions, scheduled and delinquent cancellations), in one shard. */
  metricsForecast: (merchantId: string, month: string, shard: number, generation = 0): Key => ({
    pk: metricsShardPartition(merchantId, undefined, generation, shard),
    sk: `F#${month}#${padMetricShard(shard)}`,
  }),
  /** One cohort's figures moved in one month (the cohort month's item also counts who joined), in one shard. */
  metricsCohort: (merchantId: string, cohort: string, month: string, shard: number, segment?: Segmentish, generation = 0): Key => ({
    pk: cohortShardPartition(merchantId, segment, generation, shard),
    sk: `${cohort}#${month}#${padMetricShard(shard)}`,
  }),
  /** Churn of one reason (URI-encoded, empty: none) in a day (`D`) or month (`M`), in one shard. */
  churnReason: (merchantId: string, kind: 'D' | 'M', period: string, reason: string, shard: number, generation = 0): Key => ({
    pk: churnReasonsPartition(merchantId, generation),
    sk: `${kind}#${period}#${reason}#${padMetricShard(shard)}`,
  }),
  /** One currency's exchange rates into the reporting currency, month by month. */
  exchangeRates: (merchantId: string, currency: string): Key => ({ pk: exchangeRatesPartition(merchantId), sk: currency }),
  /** A recount to go on with (lib/metrics/recount.ts): one item per round, never rewritten. */
  recountJob: (merchantId: string, id: string): Key => ({ pk: `${m(merchantId)}#RECOUNT`, sk: id }),
  /** A segment generation `generation` has items of (registered before them, so its retirement finds them). */
  generationSegment: (merchantId: string, generation: number, dimension: string, value: string, shard: number): Key => ({
    pk: generationSegmentsPartition(merchantId, generation, shard),
    sk: `${dimension}#${value}`,
  }),
  /**
   * What a generation counts in (written before anything names it, never changed): its time zone
   * (`ZONE`) and each currency's rates (`RATES#<CCY>`), read by every write that converts
   * (lib/metrics/generation.ts `generationSettings`).
   */
  generationZone: (merchantId: string, generation: number): Key => ({ pk: `${m(merchantId)}#G${generation}#SETTINGS`, sk: 'ZONE' }),
  generationRates: (merchantId: string, generation: number, currency: string): Key => ({
    pk: `${m(merchantId)}#G${generation}#SETTINGS`,
    sk: `RATES#${currency}`,
  }),
  /** One copy of the merchant's figures generation (`shard` taken modulo GENERATION_SHARDS). */
  generation: (merchantId: string, shard: number): Key => ({ pk: generationPartition(merchantId, shard), sk: 'GENERATION' }),
  /** The figures' version of one lane (`figuresVersionPartition`): `v`, added to by every transaction writing the aggregates. */
  figuresVersion: (merchantId: string, lane: number): Key => ({ pk: figuresVersionPartition(merchantId, lane), sk: 'VERSION' }),
  /** The write units the pending-moves applier has booked in one second on one metric shard's keys (lib/metrics/pending-applier.ts). */
  applierPace: (merchantId: string, shard: number, second: number): Key => ({
    pk: `${m(merchantId)}#PACE`,
    sk: `A#${padMetricShard(shard)}#${second}`,
  }),
  /**
   * How many pending-moves items of the merchant wait in one metric shard, all partitions alike
   * (lib/db/writes.ts): a transaction putting some adds them under a bound, an apply takes one off.
   */
  pendingBacklog: (merchantId: string, shard: number): Key => ({ pk: `${m(merchantId)}#PENDING#${padMetricShard(shard)}`, sk: 'BACKLOG' }),
  /** A plan name the merchant's figures have seen (GET /metrics/plans lists them). */
  plan: (merchantId: string, plan: string, shard: number): Key => ({
    pk: plansPartition(merchantId),
    sk: `${plan}#${padMetricShard(shard)}`,
  }),
  /** The customer's entry in the index of one metadata pair (`value`: String of a string, number or boolean). */
  customerMetadata: (merchantId: string, key: string, value: string, customerId: number): Key => ({
    pk: customerMetadataPartition(merchantId, customerIndexShard(customerId), key, value),
    sk: pad(customerId),
  }),
  /** The customer's entry in the index of the customers that have had a line of `plan`. */
  planCustomer: (merchantId: string, plan: string, customerId: number): Key => ({
    pk: planCustomersPartition(merchantId, customerIndexShard(customerId), plan),
    sk: pad(customerId),
  }),
  subscriptionEvent: (merchantId: string, id: number): Key => ({ pk: `${m(merchantId)}#SUBEVT#${id}`, sk: 'EVENT' }),
  idempotency: (merchantId: string, key: string): Key => ({
    pk: `${m(merchantId)}#IDEMPOTENCY#${key}`,
    sk: 'IDEMPOTENCY',
  }),
  /** A batch chunk's receipt: put by its transaction, or fenced by its settling (lib/db/batch.ts). */
  batchReceipt: (merchantId: string, requestToken: string): Key => ({
    pk: `${m(merchantId)}#BATCH_RECEIPT#${requestToken}`,
    sk: 'RECEIPT',
  }),
  /** One item of a batch sent with an idempotency key, applied (recorded events: a retry skips it). */
  idempotentItem: (merchantId: string, key: string, index: number): Key => ({
    pk: `${m(merchantId)}#IDEMPOTENCY#${key}`,
    sk: `ITEM#${String(index).padStart(3, '0')}`,
  }),
  // Today's day shards and the month's shards come back in one TransactGetItems of their keys.
  statsDay: (merchantId: string, day: string, shard: number): Key => ({
    pk: statsPartition(merchantId, day.slice(0, 7), shard),
    sk: `D#${day.slice(8, 10)}#${padShard(shard)}`,
  }),
  /** One hour of a UTC day's stats in one shard: its four quarter-hours (a zone's day may start inside it). */
  statsHour: (merchantId: string, day: string, hour: number, shard: number): Key => ({
    pk: statsPartition(merchantId, day.slice(0, 7), shard),
    sk: `H#${day.slice(8, 10)}#${String(hour).padStart(2, '0')}#${padShard(shard)}`,
  }),
  statsMonth: (merchantId: string, month: string, shard: number): Key => ({
    pk: statsPartition(merchantId, month, shard),
    sk: `M#${padShard(shard)}`,
  }),
  /** One paid order's payment time, under its customer's partition (first/last_payment_at). */
  customerPayment: (merchantId: string, customerId: number, paidAt: string, orderNo: string): Key => ({
    pk: `${m(merchantId)}#CUSTOMER#${customerId}`,
    sk: `${PAYMENT_PREFIX}${paidAt}#${orderNo}`,
  }),
  /** A customer's paid orders in another currency in one UTC year, by month or quarter-hour (its converted `ltv`). */
  customerLtvPart: (merchantId: string, customerId: number, currency: string, year: string): Key => ({
    pk: `${m(merchantId)}#CUSTOMER#${customerId}`,
    sk: `${LTV_PART_PREFIX}${currency}#${year}`,
  }),
  /**
   * An event's mark: small, time-ordered within its shard (`ordinal` keeps the events of one
   * transaction in the order they were added); the relay stamps it published.
   */
  outbox: (merchantId: string, createdAt: string, eventId: string, ordinal = 0): Key => ({
    pk: outboxPartition(merchantId, outboxShardOf(eventId)),
    sk: `${createdAt}#${String(ordinal).padStart(2, '0')}#${eventId}`,
  }),
  /** An event's payload (the object as the API returns it, up to the largest metadata): its own partition. */
  outboxEvent: (merchantId: string, eventId: string): Key => ({ pk: `${OUTBOX_EVENT_PREFIX}${m(merchantId)}#${eventId}`, sk: 'EVENT' }),
  /** A webhook endpoint (hard-deleted: DELETE removes the item and its encrypted secrets). */
  webhookEndpoint: (merchantId: string, id: number): Key => ({ pk: `${m(merchantId)}#WEBHOOK#${id}`, sk: 'ENDPOINT' }),
  /** The delivery of one event to one endpoint: its body, attempt count and success (30 days by TTL). */
  webhookDeliveryState: (merchantId: string, endpointId: number, eventId: string): Key => ({
    pk: `${m(merchantId)}#WEBHOOK#${endpointId}`,
    sk: `DELIVERY#${eventId}`,
  }),
  /** Since when every attempt to the endpoint has failed (absent: the last attempt succeeded). */
  webhookEndpointHealth: (merchantId: string, endpointId: number): Key => ({ pk: `${m(merchantId)}#WEBHOOK#${endpointId}`, sk: 'HEALTH' }),
  /** One delivery attempt of an event to an endpoint (the delivery log, kept 30 days by TTL). */
  webhookDelivery: (merchantId: string, endpointId: number, at: string, eventId: string, attempt: number): Key => ({
    pk: webhookDeliveriesPartition(merchantId, endpointId),
    sk: `${at}#${eventId}#${String(attempt).padStart(3, '0')}`,
  }),
  // '~' sorts after every attempt's ISO-time sort key, so a newest-first query of the partition returns it first.
  webhookDeliveryLogHead: (merchantId: string, endpointId: number): Key => ({
    pk: webhookDeliveriesPartition(merchantId, endpointId),
    sk: '~ENDPOINT',
  }),
  /** An endpoint's entry in the merchant's endpoint list (written with every change of its status or events). */
  webhookEndpointListEntry: (merchantId: string, id: number): Key => ({
    pk: webhookEndpointListPartition(merchantId),
    sk: `ENDPOINT#${pad(id)}`,
  }),
  /** The attempts logged on one UTC day, in one of DELIVERY_DAY_SHARDS shards (the transaction's shard modulo). */
  webhookDeliveryDay: (merchantId: string, endpointId: number, day: string, shard: number): Key => ({
    pk: webhookDeliveryDaysPartition(merchantId, endpointId),
    sk: `D#${day}#${padShard(shard % DELIVERY_DAY_SHARDS)}`,
  }),
  // '~' sorts after every day: one Query from a day to the head reads the counts and the head.
  webhookDeliveryDaysHead: (merchantId: string, endpointId: number): Key => ({
    pk: webhookDeliveryDaysPartition(merchantId, endpointId),
    sk: '~ENDPOINT',
  }),
  /** One activity-log entry (a batch request's record), read by id. */
  activity: (merchantId: string, id: number): Key => ({ pk: `${m(merchantId)}#ACTIVITY#${id}`, sk: 'ACTIVITY' }),
  /** The activity ids' own sequence item, so batches never contend with the other sequences. */
  activitySequence: (merchantId: string): Key => ({ pk: m(merchantId), sk: 'SEQ#ACTIVITY' }),
  /** A month's activity-log counts (all entries, or one import run's), in the transaction's shard. */
  activityTotals: (merchantId: string, run: string | null, month: string, shard: number): Key => ({
    pk: activityTotalsPartition(merchantId, run),
    sk: `${month}#${padShard(shard)}`,
  }),
};

/** Partition of a merchant's activity-log counts per month (`run`: of one import run only). */
export const activityTotalsPartition = (merchantId: string, run: string | null): string =>
  run === null ? `${m(merchantId)}#ACTIVITY_TOTALS` : `${m(merchantId)}#ACTIVITY_RUN#${run}`;

/** The activity log's lists, newest first: all entries (gsi1), by type (gsi2), by import run (gsi3). */
export const activityIndexes = {
  of: (merchantId: string, type: string, run: string | null, createdAt: string, id: number) => ({
    gsi1pk: `${m(merchantId)}#ACTIVITY`,
    gsi1sk: `${createdAt}#${pad(id)}`,
    gsi2pk: `${m(merchantId)}#ACTIVITY#TYPE#${type}`,
    gsi2sk: `${createdAt}#${pad(id)}`,
    ...(run === null ? {} : { gsi3pk: `${m(merchantId)}#ACTIVITY#RUN#${run}`, gsi3sk: `${createdAt}#${pad(id)}` }),
  }),
  partitions: {
    all: (merchantId: string) => `${m(merchantId)}#ACTIVITY`,
    byType: (merchantId: string, type: string) => `${m(merchantId)}#ACTIVITY#TYPE#${type}`,
    byRun: (merchantId: string, run: string) => `${m(merchantId)}#ACTIVITY#RUN#${run}`,
  },
};

/** Index attributes written on items or their list entries (sparse: removed when an item leaves a list). */
export const indexes = {
  /** The live list (gsi1), newest first: on the customer's list entry. */
  customersByCreated: (merchantId: string, createdAt: string, id: number) => ({
    gsi1pk: `${m(merchantId)}#CUSTOMERS`,
    gsi1sk: `${createdAt}#${pad(id)}`,
  }),
  /** The search projection (gsi4: id, email, name) of the live list, in the customer's shard, same sort key: on the customer item. */
  customerSearch: (merchantId: string, createdAt: string, id: number) => ({
    gsi4pk: customerSearchPartition(merchantId, id),
    gsi4sk: `${createdAt}#${pad(id)}`,
  }),
  customerByExternalId: (merchantId: string, externalId: string) => ({
    gsi2pk: `${m(merchantId)}#CUSTOMER_EXT#${externalId}`,
    gsi2sk: 'CUSTOMER',
  }),
  ordersByCreated: (merchantId: string, createdAt: string, id: number) => ({
    gsi1pk: `${m(merchantId)}#ORDERS`,
    gsi1sk: `${createdAt}#${pad(id)}`,
  }),
  ordersByStatus: (merchantId: string, status: string, createdAt: string, id: number) => ({
    gsi2pk: `${m(merchantId)}#ORDERS#STATUS#${status}`,
    gsi2sk: `${createdAt}#${pad(id)}`,
  }),
  ordersByCustomer: (merchantId: string, customerId: number, createdAt: string, id: number) => ({
    gsi3pk: `${m(merchantId)}#ORDERS#CUSTOMER#${customerId}`,
    gsi3sk: `${createdAt}#${pad(id)}`,
  }),
};

/** Index attributes of subscriptions (created_at order) and subscription events (occurred_at order). */
export const subscriptionIndexes = {
  all: (merchantId: string, createdAt: string, id: number) => ({ gsi1pk: `${m(merchantId)}#SUBS`, gsi1sk: `${createdAt}#${pad(id)}` }),
  byStatus: (merchantId: string, status: string, createdAt: string, id: number) => ({
    gsi2pk: `${m(merchantId)}#SUBS#STATUS#${status}`,
    gsi2sk: `${createdAt}#${pad(id)}`,
  }),
  byCustomer: (merchantId: string, customerId: number, createdAt: string, id: number) => ({
    gsi3pk: `${m(merchantId)}#SUBS#CUSTOMER#${customerId}`,
    gsi3sk: `${createdAt}#${pad(id)}`,
  }),
  partitions: {
    all: (merchantId: string) => `${m(merchantId)}#SUBS`,
    byStatus: (merchantId: string, status: string) => `${m(merchantId)}#SUBS#STATUS#${status}`,
    byCustomer: (merchantId: string, customerId: number) => `${m(merchantId)}#SUBS#CUSTOMER#${customerId}`,
  },
};
export const subscriptionEventIndexes = {
  all: (merchantId: string, occurredAt: string, id: number) => ({
    gsi1pk: `${m(merchantId)}#SUBEVENTS`,
    gsi1sk: `${occurredAt}#${pad(id)}`,
  }),
  byType: (merchantId: string, type: string, occurredAt: string, id: number) => ({
    gsi2pk: `${m(merchantId)}#SUBEVENTS#TYPE#${type}`,
    gsi2sk: `${occurredAt}#${pad(id)}`,
  }),
  byCustomer: (merchantId: string, customerId: number, occurredAt: string, id: number) => ({
    gsi3pk: `${m(merchantId)}#SUBEVENTS#CUSTOMER#${customerId}`,
    gsi3sk: `${occurredAt}#${pad(id)}`,
  }),
  partitions: {
    all: (merchantId: string) => `${m(merchantId)}#SUBEVENTS`,
    byType: (merchantId: string, type: string) => `${m(merchantId)}#SUBEVENTS#TYPE#${type}`,
    byCustomer: (merchantId: string, customerId: number) => `${m(merchantId)}#SUBEVENTS#CUSTOMER#${customerId}`,
  },
};

/** The list of a merchant's webhook endpoints (created_at order), for the API's list. */
export const webhookEndpointIndexes = {
  all: (merchantId: string, createdAt: string, id: number) => ({ gsi1pk: `${m(merchantId)}#WEBHOOKS`, gsi1sk: `${createdAt}#${pad(id)}` }),
  partitions: {
    all: (merchantId: string) => `${m(merchantId)}#WEBHOOKS`,
  },
};

/** Partition values of the list indexes, for queries. */
export const indexPartitions = {
  customers: (merchantId: string) => `${m(merchantId)}#CUSTOMERS`,
  customerByExternalId: (merchantId: string, externalId: string) => `${m(merchantId)}#CUSTOMER_EXT#${externalId}`,
  orders: (merchantId: string) => `${m(merchantId)}#ORDERS`,
  ordersByStatus: (merchantId: string, status: string) => `${m(merchantId)}#ORDERS#STATUS#${status}`,
  ordersByCustomer: (merchantId: string, customerId: number) => `${m(merchantId)}#ORDERS#CUSTOMER#${customerId}`,
};

/** Sort-key bounds for a created_at range on the list indexes (inclusive). */
export const createdRange = (from?: string, to?: string) => ({
  from: from ? `${from}#` : undefined,
  to: to ? `${to}#~` : undefined,
});
