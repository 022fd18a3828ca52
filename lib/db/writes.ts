import { randomUUID } from 'node:crypto';
import { TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import { GetCommand, NumberValue, PutCommand, TransactWriteCommand, type TransactWriteCommandInput } from '@aws-sdk/lib-dynamodb';
import Decimal from 'decimal.js';
import { db, tableName } from '#lib/db/client';
import { type Key, keys, METRIC_SHARDS, merchantOfKey, metricShardOfKey } from '#lib/db/keys';
import { RetryableError } from '#lib/db/retry';
import { ThrottledError } from '#lib/errors';
import { config } from '#lib/config';
import { leaseShard, releaseShard } from '#lib/db/shards';
import { COUNTER_SHARDS } from '#lib/db/writes-constants';

/**
 * One atomic write group (a TransactWriteItems call). Changes to the same item are merged into
 * one action, because a transaction may not name an item twice; numeric changes use ADD so
 * concurrent writers never lose each other's increments.
 */
export type Condition = { expression: string; names?: Record<string, string>; values?: Record<string, unknown> };

type Op =
  | { kind: 'put'; tag: string; key: Key; item: Record<string, unknown>; conditions: Condition[] }
  | { kind: 'delete'; tag: string; key: Key; conditions: Condition[] }
  | { kind: 'check'; tag: string; key: Key; conditions: Condition[] }
  | {
      kind: 'update';
      tag: string;
      key: Key;
      add: Map<string, Decimal>;
      set: Map<string, unknown>;
      setIfAbsent: Map<string, unknown>;
      remove: Set<string>;
      conditions: Condition[];
      /** Where this update's ADDs wait when the transaction has no room for them (see `spillable`). */
      spill?: Key;
    };

/** Which kind of change an attribute already has in one update (one kind per attribute). */
const kindOf = (op: Extract<Op, { kind: 'update' }>, attr: string): string | null =>
  op.add.has(attr)
    ? 'ADD'
    : op.set.has(attr)
      ? 'SET'
      : op.setIfAbsent.has(attr)
        ? 'SET if_not_exists'
        : op.remove.has(attr)
          ? 'REMOVE'
          : null;

export class UpdateBuilder {
  constructor(private readonly op: Extract<Op, { kind: 'update' }>) {}
  /** Two contributors changing one attribute in different ways would silently override each other. */
  private claim(attr: string, kind: string): void {
    const existing = kindOf(this.op, attr);
    if (existing && existing !== kind) throw new Error(`${this.op.tag}: attribute ${attr} is both ${existing} and ${kind} in one update`);
  }
  /** Adds an exact decimal (or integer) delta; deltas to one attribute are summed. */
  add(attr: string, delta: Decimal): this {
    this.claim(attr, 'ADD');
    const prev = this.op.add.get(attr);
    this.op.add.set(attr, prev ? prev.plus(delta) : delta);
    return this;
  }
  set(attr: string, value: unknown): this {
    if (value === undefined) return this;
    this.claim(attr, 'SET');
    if (this.op.set.has(attr) && JSON.stringify(this.op.set.get(attr)) !== JSON.stringify(value)) {
      throw new Error(`${this.op.tag}: attribute ${attr} is set to two different values in one update`);
    }
    this.op.set.set(attr, value);
    return this;
  }
  setAll(values: Record<string, unknown>): this {
    for (const [k, v] of Object.entries(values)) this.set(k, v);
    return this;
  }
  setIfAbsent(attr: string, value: unknown): this {
    this.claim(attr, 'SET if_not_exists');
    this.op.setIfAbsent.set(attr, value);
    return this;
  }
  remove(attr: string): this {
    this.claim(attr, 'REMOVE');
    this.op.remove.add(attr);
    return this;
  }
  when(condition: Condition): this {
    this.op.conditions.push(condition);
    return this;
  }
  /**
   * Marks an ADD-only update that may be moved out of an over-full transaction: it is then written
   * as part of a pending-moves item under `home` (in the same transaction), which readers of the
   * item add in and a follow-up transaction applies and deletes, exactly once.
   */
  spillable(home: Key): this {
    this.op.spill = home;
    return this;
  }
}

/** Most ADD updates one pending-moves item carries (one follow-up transaction applies them with its delete). */
export const MOVES_PER_PENDING = 90;
/** Sort-key marker of a pending-moves item: `<home sk>#<PENDING_MARK>#<id>`. */
export const PENDING_MARK = 'P';
/** `entity` of a pending-moves item: what the table stream's filter picks out for the pending-moves applier. */
export const PENDING_MOVES_ENTITY = 'pending-moves';
/**
 * Most pending-moves items one metric shard of a merchant may hold waiting, every partition of the
 * shard together (`config.pendingBacklogBound()`, 500 on AWS): a transaction that would pass it is
 * refused as throttled, so an applier falling behind slows the batches down (they answer
 * `throttled`, and are sent again) instead of leaving reads ever more items to add in. At most
 * ~4 KB an item, a read meets at most ~2 MB of them in a shard's partitions however far behind
 * the applier is.
 */
const backlogBound = () => config.pendingBacklogBound();
const BACKLOG_TAG = 'pending-backlog';
/** A full backlog, once the retries are spent: a batch's units answer `throttled` (never redone one by one, which would write their moves past the applier's pace). */
export class PendingBacklogFull extends ThrottledError {}
const backlogFull = () =>
  new RetryableError('throttle', 'the pending-moves backlog of a metric shard is full', () => new PendingBacklogFull());

/** The moves of a pending item: target sort key (same partition) → attribute → delta. */
export type PendingMoves = [sk: string, adds: Record<string, string>][];
export const pendingMovesOf = (item: Record<string, unknown>): PendingMoves => JSON.parse(String(item.moves)) as PendingMoves;

const id = (key: Key): string => `${key.pk}\u0000${key.sk}`;

/**
 * A transaction refused because a condition failed: `tags` name the actions whose condition
 * failed. Retryable as contention (a read went stale) unless the caller turns it into a domain
 * answer first (a uniqueness marker taken → 422).
 */
export class WriteConflict extends RetryableError {
  constructor(public readonly tags: string[]) {
    super('contention', `conditional write failed: ${tags.join(', ')}`);
  }
}

/** Condition for a put that creates: the item must not exist yet (uniqueness by key). */
export const itemAbsent: Condition = { expression: 'attribute_not_exists(pk)' };
/** Condition for an update guarded by the version it was computed from (optimistic concurrency). */
/** Puts `item` unless its key is already there (what is there stays): whether it was put. For repairs that fill what is missing. */
export const putIfAbsent = (item: Record<string, unknown> & Key): Promise<boolean> =>
  db()
    .send(new PutCommand({ TableName: tableName(), Item: item, ConditionExpression: itemAbsent.expression }))
    .then(
      () => true,
      (err: Error) => {
        if (err.name !== 'ConditionalCheckFailedException') throw err;
        return false;
      },
    );

export const versionIs = (version: number): Condition => ({ expression: 'version = :v', values: { ':v': version } });

export { COUNTER_SHARDS };

type UpdateOp = Extract<Op, { kind: 'update' }>;

/** An ADD-only update marked spillable: it may be written as a pending move instead. */
const movable = (op: Op): op is UpdateOp =>
  op.kind === 'update' &&
  !!op.spill &&
  !op.conditions.length &&
  !op.set.size &&
  !op.setIfAbsent.size &&
  !op.remove.size &&
  renderUpdate(op) !== null;

/**
 * The pending-moves items carrying `moved` (grouped by home, at most MOVES_PER_PENDING each), keyed
 * `<home sk>#P#<group>#<nnn>`: puts on condition that the key is new.
 */
const pendingPuts = (moved: UpdateOp[], group: string, shard: number): Extract<Op, { kind: 'put' }>[] => {
  const byHome = new Map<string, { home: Key; ops: UpdateOp[] }>();
  for (const op of moved) {
    if (op.key.pk !== op.spill!.pk)
      throw new Error(`${op.tag}: a pending move must stay in its partition (${op.key.pk} ≠ ${op.spill!.pk})`);
    const homeId = id(op.spill!);
    const g = byHome.get(homeId) ?? { home: op.spill!, ops: [] };
    g.ops.push(op);
    byHome.set(homeId, g);
  }
  const puts: Extract<Op, { kind: 'put' }>[] = [];
  let n = 0;
  for (const { home, ops } of byHome.values()) {
    for (let i = 0; i < ops.length; i += MOVES_PER_PENDING) {
      const key = { pk: home.pk, sk: `${home.sk}#${PENDING_MARK}#${group}#${String(n++).padStart(3, '0')}` };
      const moves: PendingMoves = ops
        .slice(i, i + MOVES_PER_PENDING)
        .map((op) => [op.key.sk, Object.fromEntries([...op.add].filter(([, d]) => !d.isZero()).map(([a, d]) => [a, d.toFixed()]))]);
      puts.push({
        kind: 'put',
        tag: 'pending-moves',
        key,
        item: { ...key, entity: PENDING_MOVES_ENTITY, moves: JSON.stringify(moves), pending_shard: shard % METRIC_SHARDS },
        conditions: [itemAbsent],
      });
    }
  }
  return puts;
};

/** Room for `n` more items under the bound (none, whatever the count, for more than the bound holds). */
const backlogRoom = (n: number): Condition => {
  const room = backlogBound() - n;
  return room < 0
    ? { expression: 'attribute_exists(#pbn) AND attribute_not_exists(#pbn)', names: { '#pbn': 'n' } }
    : { expression: 'attribute_not_exists(#pbn) OR #pbn <= :pbroom', names: { '#pbn': 'n' }, values: { ':pbroom': room } };
};

/** The backlog counts `puts` add to (one per merchant, in the transaction's metric shard), each under the bound. */
const backlogUpdates = (puts: Extract<Op, { kind: 'put' }>[], shard: number): UpdateOp[] => {
  const byMerchant = new Map<string, number>();
  for (const put of puts) {
    const merchant = merchantOfKey(put.key.pk);
    if (merchant) byMerchant.set(merchant, (byMerchant.get(merchant) ?? 0) + 1);
  }
  return [...byMerchant].map(([merchant, n]) => ({
    kind: 'update',
    tag: BACKLOG_TAG,
    key: keys.pendingBacklog(merchant, shard),
    add: new Map([['n', new Decimal(n)]]),
    set: new Map(),
    setIfAbsent: new Map(),
    remove: new Set(),
    conditions: [backlogRoom(n)],
  }));
};

const VERSION_TAG = 'figures-version';
/**
 * What makes a read of the aggregates see each write whole: every transaction that writes their
 * items adds 1 to the figures' version of each metric shard it writes, in its lane (its counter
 * shard when that is the shard's, else one of the shard's), and a read re-reads a shard whose
 * versions moved while it read (lib/metrics/store.ts `oneState`). Checks change nothing and count
 * no move.
 */
const versionUpdates = (ops: Op[], shard: number, spread: number): UpdateOp[] => {
  const written = new Map<string, Set<number>>();
  for (const op of ops) {
    if (op.kind === 'check' || (op.kind === 'update' && !renderUpdate(op))) continue;
    const own = metricShardOfKey(op.key);
    const merchant = merchantOfKey(op.key.pk);
    if (own === null || !merchant) continue;
    written.set(merchant, (written.get(merchant) ?? new Set()).add(own));
  }
  const lanes = new Map<string, Key>();
  for (const [merchant, shards] of written) {
    // A pending-moves item of churn by reason names no shard: its moves are the transaction's (or,
    // applied, those of the items it moves, which name theirs).
    const named = [...shards].filter((s) => s >= 0);
    for (const metric of named.length ? named : [shard % METRIC_SHARDS]) {
      // Another shard's: one of its lanes, chosen by the transaction, so such writers spread over them too.
      const lane = shard % METRIC_SHARDS === metric ? shard : metric + METRIC_SHARDS * (spread % (COUNTER_SHARDS / METRIC_SHARDS));
      const key = keys.figuresVersion(merchant, lane);
      lanes.set(id(key), key);
    }
  }
  return [...lanes.values()].map((key) => ({
    kind: 'update',
    tag: VERSION_TAG,
    key,
    add: new Map([['v', new Decimal(1)]]),
    set: new Map(),
    setIfAbsent: new Map(),
    remove: new Set(),
    conditions: [],
  }));
};

export type WriteSetOptions = {
  /**
   * Every spillable update is written as a pending move (a few pending-moves items instead of one
   * action per aggregate item), and left to the pending-moves applier: what batches do, so a batch
   * of 100 stays within its request budget however many aggregate items its units move.
   */
  deferMoves?: boolean;
};

export class WriteSet {
  private readonly ops = new Map<string, Op>();
  /** The counter shard this transaction writes (one per transaction, so its counter updates merge). */
  readonly shard: number;
  private readonly leased: boolean;
  private readonly deferMoves: boolean;
  /** Names this transaction's pending-moves items (unique, so their puts never meet another's). */
  private readonly group = randomUUID();
  /** Picks the figures-version lane of a shard not its counter shard's (fixed for the transaction). */
  private readonly spread = Number.parseInt(this.group.slice(0, 8), 16);
  /** The transaction's ClientRequestToken: DynamoDB applies a transaction sent again under it once (within 10 minutes). */
  readonly requestToken = randomUUID();
  /** Checks whose failure is answered with an error of their own instead of a WriteConflict. */
  private readonly refusals = new Map<string, () => Error>();

  /** `shard` given: a trial or a copy that never commits on its own lease. */
  constructor(shard?: number, opts: WriteSetOptions = {}) {
    this.leased = shard === undefined;
    this.shard = shard ?? leaseShard();
    this.deferMoves = opts.deferMoves ?? false;
    this.refusals.set(BACKLOG_TAG, backlogFull);
  }

  /**
   * The actions as they will be sent: with `deferMoves`, the spillable updates as pending-moves
   * puts; and one to the figures' version of each metric shard whose aggregates they write.
   */
  private effective(): Op[] {
    const all = [...this.ops.values()];
    if (!this.deferMoves) return [...all, ...versionUpdates(all, this.shard, this.spread)];
    const puts = pendingPuts(all.filter(movable), this.group, this.shard);
    const sent = [...all.filter((op) => !movable(op)), ...puts, ...backlogUpdates(puts, this.shard)];
    return [...sent, ...versionUpdates(sent, this.shard, this.spread)];
  }

  /** The longest condition or update expression of one action (DynamoDB refuses one over 4 KB). */
  get longestExpression(): number {
    return Math.max(
      0,
      ...this.toTransactItems('').map((item) => {
        const a = Object.values(item)[0] as { ConditionExpression?: string; UpdateExpression?: string };
        return Math.max(Buffer.byteLength(a.ConditionExpression ?? ''), Buffer.byteLength(a.UpdateExpression ?? ''));
      }),
    );
  }

  get size(): number {
    return this.ops.size;
  }

  /** Actions the transaction will send (updates that change nothing and check nothing send none). */
  get actions(): number {
    return this.toTransactItems('').length;
  }

  /**
   * The write units the transaction takes from its busiest partition key, as priced in
   * docs/scale.md: two per action (a transaction writes each item twice), a put by its size in KB;
   * an update's or check's item taken as under 1 KB (aggregate and version items are).
   */
  get hottestKeyWcu(): number {
    const byKey = new Map<string, number>();
    for (const item of this.toTransactItems('')) {
      const [kind, a] = Object.entries(item)[0] as [string, { Key?: Key; Item?: Key }];
      const key = (a.Key ?? a.Item)!;
      const kb = kind === 'Put' ? Math.max(1, Math.ceil(Buffer.byteLength(JSON.stringify(a.Item)) / 1024)) : 1;
      byKey.set(key.pk, (byKey.get(key.pk) ?? 0) + 2 * kb);
    }
    return Math.max(0, ...byKey.values());
  }

  /** About the bytes the transaction will send: its actions as JSON (without the attribute type tags the request adds). */
  get bytes(): number {
    return Buffer.byteLength(JSON.stringify(this.toTransactItems('')));
  }

  put(tag: string, item: Key & Record<string, unknown>, condition?: Condition): this {
    const key = { pk: item.pk, sk: item.sk };
    this.assertNew(key, tag);
    this.ops.set(id(key), { kind: 'put', tag, key, item, conditions: condition ? [condition] : [] });
    return this;
  }

  delete(tag: string, key: Key, condition?: Condition): this {
    this.assertNew(key, tag);
    this.ops.set(id(key), { kind: 'delete', tag, key, conditions: condition ? [condition] : [] });
    return this;
  }

  /** Whether the transaction already names `key`. */
  has(key: Key): boolean {
    return this.ops.has(id(key));
  }

  /**
   * A condition on an item the transaction does not write. With `refusal`, its failure throws the
   * error `refusal` gives instead of a WriteConflict (the caller decides what a retry must do first).
   */
  check(tag: string, key: Key, condition: Condition, refusal?: () => Error): this {
    this.assertNew(key, tag);
    this.ops.set(id(key), { kind: 'check', tag, key, conditions: [condition] });
    if (refusal) this.refusals.set(tag, refusal);
    return this;
  }

  /** The update of `key`, created on first use and shared by later callers. */
  update(tag: string, key: Key): UpdateBuilder {
    const existing = this.ops.get(id(key));
    if (existing && existing.kind !== 'update') throw new Error(`item ${id(key)} is already written as ${existing.kind}`);
    const op =
      existing ??
      ({
        kind: 'update',
        tag,
        key,
        add: new Map(),
        set: new Map(),
        setIfAbsent: new Map(),
        remove: new Set(),
        conditions: [],
      } satisfies Op);
    this.ops.set(id(key), op);
    return new UpdateBuilder(op as Extract<Op, { kind: 'update' }>);
  }

  private assertNew(key: Key, tag: string): void {
    if (this.ops.has(id(key))) throw new Error(`${tag}: item ${id(key)} written twice in one transaction`);
  }

  toTransactItems(table = tableName()): NonNullable<TransactWriteCommandInput['TransactItems']> {
    return this.effective().flatMap((op): NonNullable<TransactWriteCommandInput['TransactItems']> => {
      const cond = mergeConditions(op.conditions);
      switch (op.kind) {
        case 'put':
          return [{ Put: { TableName: table, Item: { ...op.item }, ...cond } }];
        case 'delete':
          return [{ Delete: { TableName: table, Key: op.key, ...cond } }];
        case 'check':
          return [{ ConditionCheck: { TableName: table, Key: op.key, ...cond, ConditionExpression: cond.ConditionExpression! } }];
        case 'update': {
          const update = renderUpdate(op);
          if (!update)
            return op.conditions.length
              ? [{ ConditionCheck: { TableName: table, Key: op.key, ...cond, ConditionExpression: cond.ConditionExpression! } }]
              : [];
          return [
            {
              Update: {
                TableName: table,
                Key: op.key,
                UpdateExpression: update.expression,
                ExpressionAttributeNames: { ...update.names, ...cond.ExpressionAttributeNames },
                ExpressionAttributeValues: emptyToUndefined({ ...update.values, ...cond.ExpressionAttributeValues }),
                ...(cond.ConditionExpression ? { ConditionExpression: cond.ConditionExpression } : {}),
              },
            },
          ];
        }
      }
    });
  }

  /** Every item this transaction names (two transactions naming one item conflict on AWS). */
  itemIds(): Set<string> {
    return new Set(this.effective().map((op) => id(op.key)));
  }

  tags(): string[] {
    return this.effective().map((op) => op.tag);
  }

  /**
   * Commits atomically, once. Throws WriteConflict naming the tags whose condition failed, or a
   * RetryableError for a transaction conflict or throttling; `retrying` decides about another try.
   */
  async commit(): Promise<void> {
    const pending = this.spillOverflow();
    const items = this.toTransactItems();
    if (items.length === 0) {
      if (this.leased) releaseShard(this.shard, false);
      return;
    }
    if (items.length > MAX_ACTIONS) throw new TooManyActions(items.length);
    const tags = this.effective()
      .filter((op) => op.kind !== 'update' || renderUpdate(op) || op.conditions.length)
      .map((op) => op.tag);
    let committed = false;
    try {
      // One token per write set: sent again (batch.ts), a transaction that landed is not applied twice.
      await db().send(new TransactWriteCommand({ TransactItems: items, ClientRequestToken: this.requestToken }));
      committed = true;
    } catch (err) {
      if (!(err instanceof TransactionCanceledException)) throw err;
      const reasons = err.CancellationReasons ?? [];
      const codes = new Set(reasons.map((r) => r.Code ?? 'None'));
      const failed = reasons.flatMap((r, i) => (r.Code === 'ConditionalCheckFailed' ? [tags[i]] : []));
      const refusal = failed.map((tag) => this.refusals.get(tag)).find((r) => r !== undefined);
      if (refusal) throw refusal();
      if (failed.length) throw new WriteConflict(failed);
      if (codes.has('ThrottlingError') || codes.has('ProvisionedThroughputExceeded') || codes.has('RequestLimitExceeded')) {
        throw new RetryableError('throttle', 'transaction throttled');
      }
      if (codes.has('TransactionConflict')) throw new RetryableError('contention', 'transaction conflict');
      throw err;
    } finally {
      if (this.leased) releaseShard(this.shard, committed);
    }
    // The moved-out updates, applied now (each pending item once); one left behind is still read in.
    for (const key of pending) await applyPending(key).catch(() => undefined);
  }

  /**
   * When the transaction has more actions than DynamoDB takes and enough of them are spillable,
   * moves the excess into pending-moves items (puts in this same transaction, grouped by home, at
   * most MOVES_PER_PENDING each). Returns their keys, to apply after the commit.
   */
  private spillOverflow(): Key[] {
    // Deferred moves are already pending items; they wait for the applier (the table stream).
    if (this.deferMoves) return [];
    const total = this.actions;
    if (total <= MAX_ACTIONS) return [];
    const spillable = [...this.ops.values()].filter(movable);
    // Room for P pending items: the least P such that the moves left over fit in P items.
    const others = total - spillable.length;
    // Room for P pending items and the backlog count they add to (one action).
    for (let p = 1; ; p++) {
      const room = MAX_ACTIONS - others - p - 1;
      if (room < 0) return []; // cannot fit: commit refuses it as before
      const puts = pendingPuts(spillable.slice(room), this.group, this.shard);
      if (puts.length > p) continue;
      for (const op of spillable.slice(room)) this.ops.delete(id(op.key));
      for (const put of puts) this.ops.set(id(put.key), put);
      for (const count of backlogUpdates(puts, this.shard)) this.ops.set(id(count.key), count);
      return puts.map((put) => put.key);
    }
  }
}

/**
 * Applies one pending-moves item: its ADDs, its deletion and one off its shard's backlog count in
 * one transaction, on condition that it still exists, so it is applied exactly once whoever gets
 * there first (a later caller finds it gone and does nothing). `pace`, given the write units the
 * transaction takes from its busiest key and the item's metric shard, resolves when it may be sent
 * (the applier's pace; it throws to leave the item for later).
 */
export const applyPending = async (key: Key, pace?: (wcu: number, shard: number) => Promise<void>): Promise<boolean> => {
  const { Item } = await db().send(new GetCommand({ TableName: tableName(), Key: key, ConsistentRead: true }));
  if (!Item) return false;
  const ws = new WriteSet(0);
  for (const [sk, adds] of pendingMovesOf(Item)) {
    const u = ws.update('moves', { pk: key.pk, sk });
    for (const [attr, delta] of Object.entries(adds)) u.add(attr, new Decimal(delta));
  }
  ws.delete('pending-moves', key, { expression: 'attribute_exists(pk)' });
  const merchant = merchantOfKey(key.pk);
  // Items put before the backlog was counted carry no shard: they were never added to a count.
  const shard = Item.pending_shard === undefined ? null : Number(Item.pending_shard);
  if (merchant && shard !== null) ws.update(BACKLOG_TAG, keys.pendingBacklog(merchant, shard)).add('n', new Decimal(-1));
  if (pace) await pace(ws.hottestKeyWcu, shard ?? 0);
  try {
    await ws.commit();
    return true;
  } catch (err) {
    if (err instanceof WriteConflict) return false; // applied by someone else meanwhile
    throw err;
  }
};

/** A transaction with more actions than DynamoDB takes, even with its moves spilled: a caller's bug, or a sign to split. */
export class TooManyActions extends Error {
  constructor(readonly actions: number) {
    super(`transaction of ${actions} actions exceeds ${MAX_ACTIONS}`);
  }
}

/** DynamoDB's limits of one TransactWriteItems: actions, and bytes. */
export const MAX_ACTIONS = 100;
export const MAX_TRANSACTION_BYTES = 4 * 1024 * 1024;
/** DynamoDB's limit of one condition or update expression. */
export const MAX_EXPRESSION_BYTES = 4 * 1024;

const emptyToUndefined = <T extends Record<string, unknown>>(o: T): T | undefined => (Object.keys(o).length ? o : undefined);

const renderUpdate = (op: Extract<Op, { kind: 'update' }>) => {
  const names: Record<string, string> = {};
  const values: Record<string, unknown> = {};
  const sets: string[] = [];
  const adds: string[] = [];
  const removes: string[] = [];
  let n = 0;
  const name = (attr: string) => {
    const k = `#u${n}`;
    names[k] = attr;
    return k;
  };
  const value = (v: unknown) => {
    const k = `:u${n++}`;
    values[k] = v;
    return k;
  };
  for (const [attr, v] of op.set) sets.push(`${name(attr)} = ${value(v)}`);
  for (const [attr, v] of op.setIfAbsent) {
    const nm = name(attr);
    sets.push(`${nm} = if_not_exists(${nm}, ${value(v)})`);
  }
  for (const [attr, delta] of op.add) {
    if (delta.isZero()) continue;
    adds.push(`${name(attr)} ${value(NumberValue.from(delta.toFixed()))}`);
  }
  for (const attr of op.remove) {
    removes.push(name(attr));
    n++;
  }
  const parts = [
    sets.length ? `SET ${sets.join(', ')}` : '',
    adds.length ? `ADD ${adds.join(', ')}` : '',
    removes.length ? `REMOVE ${removes.join(', ')}` : '',
  ].filter(Boolean);
  return parts.length ? { expression: parts.join(' '), names, values } : null;
};

/**
 * ANDs the conditions of one action. Each condition's placeholders are renamed into its own
 * namespace (`:c0_v`, `#c1_n`), so two contributors using the same placeholder never overwrite
 * each other's values.
 */
export const mergeConditions = (conditions: Condition[]) => {
  if (!conditions.length)
    return {} as {
      ConditionExpression?: string;
      ExpressionAttributeNames?: Record<string, string>;
      ExpressionAttributeValues?: Record<string, unknown>;
    };
  const names: Record<string, string> = {};
  const values: Record<string, unknown> = {};
  // The same condition asked by several contributors (each event of one customer in a batch) is sent once.
  const unique = [...new Map(conditions.map((c) => [JSON.stringify([c.expression, c.names, c.values]), c])).values()];
  const parts = unique.map((c, i) => {
    const rename = (p: string) => `${p[0]}c${i}_${p.slice(1)}`;
    for (const [k, v] of Object.entries(c.names ?? {})) names[rename(k)] = v;
    for (const [k, v] of Object.entries(c.values ?? {})) values[rename(k)] = v;
    const own = new Set([...Object.keys(c.names ?? {}), ...Object.keys(c.values ?? {})]);
    const expression = c.expression.replace(/[:#][A-Za-z0-9_]+/g, (p) => (own.has(p) ? rename(p) : p));
    return `(${expression})`;
  });
  return {
    ConditionExpression: parts.join(' AND '),
    ...(Object.keys(names).length ? { ExpressionAttributeNames: names } : {}),
    ...(Object.keys(values).length ? { ExpressionAttributeValues: values } : {}),
  };
};
