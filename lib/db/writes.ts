import { TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import { NumberValue, TransactWriteCommand, type TransactWriteCommandInput } from '@aws-sdk/lib-dynamodb';
import type Decimal from 'decimal.js';
import { db, tableName } from '#lib/db/client';
import type { Key } from '#lib/db/keys';

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
    };

export class UpdateBuilder {
  constructor(private readonly op: Extract<Op, { kind: 'update' }>) {}
  /** Adds an exact decimal (or integer) delta; deltas to one attribute are summed. */
  add(attr: string, delta: Decimal): this {
    const prev = this.op.add.get(attr);
    this.op.add.set(attr, prev ? prev.plus(delta) : delta);
    return this;
  }
  set(attr: string, value: unknown): this {
    if (value === undefined) return this;
    this.op.remove.delete(attr);
    this.op.set.set(attr, value);
    return this;
  }
  setAll(values: Record<string, unknown>): this {
    for (const [k, v] of Object.entries(values)) this.set(k, v);
    return this;
  }
  setIfAbsent(attr: string, value: unknown): this {
    this.op.setIfAbsent.set(attr, value);
    return this;
  }
  remove(attr: string): this {
    this.op.set.delete(attr);
    this.op.remove.add(attr);
    return this;
  }
  when(condition: Condition): this {
    this.op.conditions.push(condition);
    return this;
  }
}

const id = (key: Key): string => `${key.pk}\u0000${key.sk}`;

/** A transaction refused: `tags` name the actions whose condition failed (empty: contention only). */
export class WriteConflict extends Error {
  constructor(public readonly tags: string[]) {
    super(tags.length ? `conditional write failed: ${tags.join(', ')}` : 'transaction kept conflicting with concurrent writers');
  }
}

/** Condition for a put that creates: the item must not exist yet (uniqueness by key). */
export const itemAbsent: Condition = { expression: 'attribute_not_exists(pk)' };
/** Condition for an update guarded by the version it was computed from (optimistic concurrency). */
export const versionIs = (version: number): Condition => ({ expression: 'version = :v', values: { ':v': version } });

/** Jittered exponential pause before re-reading after a lost race (capped at 1 s). */
export const backoff = (attempt: number): Promise<void> =>
  new Promise((r) => setTimeout(r, Math.random() * Math.min(1000, 10 * 2 ** attempt)));

export class WriteSet {
  private readonly ops = new Map<string, Op>();

  get size(): number {
    return this.ops.size;
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

  check(tag: string, key: Key, condition: Condition): this {
    this.assertNew(key, tag);
    this.ops.set(id(key), { kind: 'check', tag, key, conditions: [condition] });
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
    return [...this.ops.values()].flatMap((op): NonNullable<TransactWriteCommandInput['TransactItems']> => {
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
          if (!update) return op.conditions.length ? [{ ConditionCheck: { TableName: table, Key: op.key, ...cond, ConditionExpression: cond.ConditionExpression! } }] : [];
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

  tags(): string[] {
    return [...this.ops.values()].map((op) => op.tag);
  }

  /** Commits atomically. Throws WriteConflict naming the tags whose condition failed. */
  async commit(): Promise<void> {
    const items = this.toTransactItems();
    if (items.length === 0) return;
    if (items.length > 100) throw new Error(`transaction of ${items.length} actions exceeds 100`);
    const tags = [...this.ops.values()].filter((op) => op.kind !== 'update' || renderUpdate(op) || op.conditions.length).map((op) => op.tag);
    for (let attempt = 0; ; attempt++) {
      try {
        await db().send(new TransactWriteCommand({ TransactItems: items }));
        return;
      } catch (err) {
        if (!(err instanceof TransactionCanceledException)) throw err;
        const reasons = err.CancellationReasons ?? [];
        const failed = reasons.flatMap((r, i) => (r.Code === 'ConditionalCheckFailed' ? [tags[i]] : []));
        if (failed.length) throw new WriteConflict(failed);
        if (reasons.some((r) => r.Code && r.Code !== 'None' && r.Code !== 'TransactionConflict')) throw err;
        // TransactionConflict: another transaction holds one of the items; retry with jitter,
        // then report it as a conflict without a failed condition (callers re-read and retry).
        if (attempt >= 6) throw new WriteConflict([]);
        await new Promise((r) => setTimeout(r, 10 * 2 ** attempt + Math.random() * 20));
      }
    }
  }
}

const emptyToUndefined = <T extends Record<string, unknown>>(o: T): T | undefined =>
  Object.keys(o).length ? o : undefined;

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

const mergeConditions = (conditions: Condition[]) => {
  if (!conditions.length) return {} as { ConditionExpression?: string; ExpressionAttributeNames?: Record<string, string>; ExpressionAttributeValues?: Record<string, unknown> };
  const names = Object.assign({}, ...conditions.map((c) => c.names ?? {}));
  const values = Object.assign({}, ...conditions.map((c) => c.values ?? {}));
  return {
    ConditionExpression: conditions.map((c) => `(${c.expression})`).join(' AND '),
    ...(Object.keys(names).length ? { ExpressionAttributeNames: names } : {}),
    ...(Object.keys(values).length ? { ExpressionAttributeValues: values } : {}),
  };
};
