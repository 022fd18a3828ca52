/**
 * Test-only SDK middlewares that make DynamoDB Local behave like AWS DynamoDB where it does not:
 *
 * - `transactionConflictModel()`: TransactWriteItems hold their items while in flight; a second
 *   transaction naming a held item is cancelled with `TransactionConflict`, a single-item write on
 *   it fails with `TransactionConflictException` (DynamoDB Local serialises everything instead).
 * - `staleIndexReads()`: index Queries answered from an earlier moment (DynamoDB Local's GSIs are
 *   never stale; AWS's are eventually consistent).
 * - `throttle()` / `failOnce()`: throttling and one-off faults before a call reaches DynamoDB Local.
 *
 * Each installer adds one middleware to the shared client's stack (`db().middlewareStack`: the
 * document client shares the base DynamoDBClient's stack) and returns `{ uninstall(), stats }`.
 * Always uninstall in `finally`/`afterEach`; middleware names are unique per install, so installing
 * again (or several at once) is fine.
 *
 * WHERE THEY SIT: step `initialize`, priority `low`.
 * - `initialize` is above the SDK's retry middleware (`finalizeRequest`), so each middleware runs
 *   exactly once per application-level `db().send(...)`, whatever `maxAttempts` is: an injected
 *   fault is never retried by the SDK (as if the SDK's retries were exhausted, or `maxAttempts: 1`)
 *   and reaches the application's own retry layer. A hold lasts across all SDK attempts.
 * - `low` priority puts it inside `requestCounter` (same step, normal priority), so a request that
 *   is faulted or answered here is still counted: on AWS it is a request DynamoDB answered.
 * - Input form: at `initialize` the input of a lib-dynamodb command (PutCommand, QueryCommand…) is
 *   still native JS (`{ pk: 'M#…' }`); lib-dynamodb marshals it in `DocumentMarshall`, added
 *   relative to (just before) `serializerMiddleware` in the `serialize` step. A client-dynamodb
 *   command (PutItemCommand…) sent through `db()` arrives here already marshalled
 *   (`{ pk: { S: 'M#…' } }`). Key extraction accepts both (see `keyPart`); the tests send both.
 *   Likewise the output seen here is the unmarshalled document form for lib-dynamodb commands.
 */
import {
  ProvisionedThroughputExceededException,
  RequestLimitExceeded,
  ThrottlingException,
  TransactionCanceledException,
  TransactionConflictException,
  type CancellationReason,
} from '@aws-sdk/client-dynamodb';
import type {
  HandlerExecutionContext,
  InitializeHandler,
  InitializeHandlerArguments,
  InitializeHandlerOutput,
  InitializeMiddleware,
  MetadataBearer,
} from '@smithy/types';
import { db } from '#lib/db/client';

/* ------------------------------------------------------------------------------------------ */
/* Shared plumbing                                                                              */
/* ------------------------------------------------------------------------------------------ */

type Input = Record<string, any>;
type Output = InitializeHandlerOutput<MetadataBearer>;
type Handler = (
  args: InitializeHandlerArguments<Input>,
  context: HandlerExecutionContext,
  next: InitializeHandler<Input, MetadataBearer>,
) => Promise<Output>;

export type Installed<S> = {
  /** Removes the middleware (idempotent). Afterwards calls behave normally again. */
  uninstall(): void;
  /** Live counters (the same object is updated in place). */
  readonly stats: S;
};

let installs = 0;

/**
 * Adds `handler` at `step` (`initialize` by default: once per call, above the SDK's retries;
 * `deserialize`: once per attempt, inside them), priority `low`, under a unique name; returns its remover.
 */
const install = (label: string, handler: Handler, step: 'initialize' | 'deserialize' = 'initialize'): (() => void) => {
  const name = `faults:${label}#${++installs}:${Math.random().toString(36).slice(2, 8)}`;
  const middleware: InitializeMiddleware<Input, MetadataBearer> = (next, context) => (args) => handler(args, context, next);
  const stack = db().middlewareStack;
  stack.add(middleware as never, { step: step as 'initialize', priority: 'low', name });
  let removed = false;
  return () => {
    if (removed) return;
    removed = true;
    stack.remove(name);
  };
};

/** `PutItemCommand` / `PutItem` / `PutCommand`-style names → the API operation (`PutItem`). */
const operation = (commandName: string | undefined): string => String(commandName ?? '').replace(/Command$/, '');
const normalizeOps = (names: string[] | undefined): Set<string> | undefined => names && new Set(names.map((n) => operation(n)));

/**
 * One key attribute value as a string, from either input form: native (`'M#1'`, `5`, Uint8Array)
 * or marshalled (`{ S: 'M#1' }`, `{ N: '5' }`, `{ B: Uint8Array }`). Key attributes are S, N or B,
 * so a plain object here can only be a marshalled AttributeValue.
 */
const keyPart = (v: unknown): string => {
  if (v === undefined || v === null) return '';
  if (v instanceof Uint8Array) return `B:${Buffer.from(v).toString('base64')}`;
  if (typeof v === 'object') {
    const av = v as { S?: string; N?: string; B?: Uint8Array };
    if (av.S !== undefined) return `S:${av.S}`;
    if (av.N !== undefined) return `N:${String(av.N)}`;
    if (av.B !== undefined) return keyPart(av.B);
    // lib-dynamodb NumberValue and similar wrappers
    return `N:${String(v)}`;
  }
  return typeof v === 'string' ? `S:${v}` : `N:${String(v)}`;
};

/** Identity of an item: table + key attributes (pk + sk by default). */
const itemId = (table: string | undefined, keyOrItem: Record<string, unknown> | undefined, keyAttributes: string[]): string =>
  JSON.stringify([table ?? '', ...keyAttributes.map((a) => keyPart(keyOrItem?.[a]))]);

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/* ------------------------------------------------------------------------------------------ */
/* AWS-shaped errors                                                                            */
/* ------------------------------------------------------------------------------------------ */

const THROTTLE_REASON_MESSAGE =
  'Throughput exceeds the current capacity of your table or index. DynamoDB is automatically scaling your table or index so please try again shortly. If exceptions persist, check if you have a hot key: https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/bp-partition-key-design.html';

/**
 * Gives an exception built here the shape of one the SDK deserializes from an answer (checked
 * against DynamoDB Local's): enumerable `message` and `__type`, no undefined model fields, and the
 * `$metadata` of a first attempt (these are thrown above the retry middleware).
 */
const asAnswered = <E extends Error & { $metadata: object }>(err: E): E => {
  Object.defineProperty(err, 'message', { value: err.message, enumerable: true, writable: true, configurable: true });
  Object.assign(err, { __type: `com.amazonaws.dynamodb.v20120810#${err.name}` });
  err.$metadata = { httpStatusCode: 400, attempts: 1, totalRetryDelay: 0 };
  for (const k of Object.keys(err))
    if (!k.startsWith('$') && (err as Record<string, unknown>)[k] === undefined) delete (err as Record<string, unknown>)[k];
  return err;
};

/** The SDK's real exception classes, shaped as the SDK's deserializer builds them from AWS's answers. */
export const awsErrors = {
  /** Single-item write on an item held by an ongoing transaction. */
  transactionConflict: (): TransactionConflictException =>
    asAnswered(new TransactionConflictException({ message: 'Transaction is ongoing for the item', $metadata: {} })),
  /** TransactWriteItems cancelled; one reason per action, in request order. */
  transactionCanceled: (reasons: CancellationReason[]): TransactionCanceledException => {
    const message = `Transaction cancelled, please refer cancellation reasons for specific reasons [${reasons.map((r) => r.Code).join(', ')}]`;
    return asAnswered(new TransactionCanceledException({ message, $metadata: {}, CancellationReasons: reasons }));
  },
  conflictReason: (): CancellationReason => ({ Code: 'TransactionConflict', Message: 'Transaction is ongoing for the item' }),
  throttlingReason: (): CancellationReason => ({ Code: 'ThrottlingError', Message: THROTTLE_REASON_MESSAGE }),
  noneReason: (): CancellationReason => ({ Code: 'None' }),
  provisionedThroughputExceeded: (): ProvisionedThroughputExceededException =>
    asAnswered(
      new ProvisionedThroughputExceededException({
        message:
          'The level of configured provisioned throughput for the table was exceeded. Consider increasing your provisioning level with the UpdateTable API.',
        $metadata: {},
      }),
    ),
  throttling: (): ThrottlingException => asAnswered(new ThrottlingException({ message: THROTTLE_REASON_MESSAGE, $metadata: {} })),
  requestLimitExceeded: (): RequestLimitExceeded =>
    asAnswered(
      new RequestLimitExceeded({
        message:
          'Throughput exceeds the current throughput limit for your account. Please contact AWS Support at https://aws.amazon.com/support request a limit increase',
        $metadata: {},
      }),
    ),
};

/* ------------------------------------------------------------------------------------------ */
/* 1. Transaction conflicts                                                                     */
/* ------------------------------------------------------------------------------------------ */

export type TransactionConflictStats = {
  /** TransactWriteItems attempts seen (cancelled ones included). */
  transactions: number;
  /** TransactWriteItems cancelled here with TransactionConflict (never reached DynamoDB Local). */
  conflicts: number;
  /** PutItem/UpdateItem/DeleteItem refused here with TransactionConflictException. */
  singleWriteConflicts: number;
  /** Conflicts by the kind of item held (merchant, ids and numbers masked: `M#m#STATS D#N-N-N#N`). */
  conflictsByItem: Record<string, number>;
};

/** An item id with its merchant, numbers and emails masked, to see which kind of item is hot. */
const itemClass = (id: string): string => {
  const [, pk, sk] = JSON.parse(id) as string[];
  const mask = (v: string) =>
    v
      .replace(/M#[^#]+/g, 'M#m')
      .replace(/[^#]+@[^#]+/g, 'EMAIL')
      .replace(/\d+/g, 'N');
  return `${mask(pk)} ${mask(sk)}`;
};

export type TransactionConflictModel = Installed<TransactionConflictStats> & {
  /** Item ids currently held (JSON `[table, "S:<pk>", "S:<sk>"]`), for debugging. */
  held(): string[];
};

const SINGLE_WRITES = new Set(['PutItem', 'UpdateItem', 'DeleteItem']);

/**
 * Models DynamoDB's transaction isolation. A TransactWriteItems holds every item it names (Put,
 * Update, Delete, ConditionCheck; table + key) from the moment it is sent until its response
 * returns; `holdMs` delays that response (the transaction stays in flight, holding its items, that
 * much longer, whatever its outcome) to widen the window. While an item is held:
 * - another TransactWriteItems naming it is cancelled without reaching DynamoDB Local, with the
 *   SDK's `TransactionCanceledException` and one reason per action, exactly as AWS answers:
 *   `{ Code: 'TransactionConflict', Message: 'Transaction is ongoing for the item' }` for held
 *   items, `{ Code: 'None' }` for the others; the cancelled transaction holds nothing;
 * - PutItem / UpdateItem / DeleteItem on it fail with `TransactionConflictException`.
 * Reads (GetItem, Query, Scan, BatchGetItem, TransactGetItems) are never blocked, and
 * BatchWriteItem is not modelled. In-flight single-item writes hold nothing.
 *
 * @example
 * const model = transactionConflictModel({ holdMs: 50 });
 * try {
 *   const results = await Promise.allSettled([writeA(), writeB()]); // both name the same item
 *   expect(model.stats.conflicts).toBe(1);
 * } finally {
 *   model.uninstall();
 * }
 */
export const transactionConflictModel = (opts: { holdMs?: number; keyAttributes?: string[] } = {}): TransactionConflictModel => {
  const holdMs = opts.holdMs ?? 0;
  const keyAttributes = opts.keyAttributes ?? ['pk', 'sk'];
  const stats: TransactionConflictStats = { transactions: 0, conflicts: 0, singleWriteConflicts: 0, conflictsByItem: {} };
  const held = new Map<string, number>();

  const actionId = (action: Input): string => {
    if (action.Put) return itemId(action.Put.TableName, action.Put.Item, keyAttributes);
    const a = action.Update ?? action.Delete ?? action.ConditionCheck;
    if (!a) throw new Error(`transactionConflictModel: unknown TransactWriteItems action ${Object.keys(action).join(',')}`);
    return itemId(a.TableName, a.Key, keyAttributes);
  };

  const remove = install('transactionConflictModel', async (args, context, next) => {
    const op = operation(context.commandName);
    if (op === 'TransactWriteItems') {
      stats.transactions += 1;
      const ids = ((args.input.TransactItems ?? []) as Input[]).map(actionId);
      if (ids.some((id) => held.has(id))) {
        stats.conflicts += 1;
        for (const id of ids.filter((i) => held.has(i))) {
          const kind = itemClass(id);
          stats.conflictsByItem[kind] = (stats.conflictsByItem[kind] ?? 0) + 1;
        }
        throw awsErrors.transactionCanceled(ids.map((id) => (held.has(id) ? awsErrors.conflictReason() : awsErrors.noneReason())));
      }
      const mine = [...new Set(ids)];
      for (const id of mine) held.set(id, (held.get(id) ?? 0) + 1);
      try {
        return await next(args);
      } finally {
        if (holdMs > 0) await sleep(holdMs);
        for (const id of mine) {
          const n = (held.get(id) ?? 1) - 1;
          if (n > 0) held.set(id, n);
          else held.delete(id);
        }
      }
    }
    if (SINGLE_WRITES.has(op)) {
      const key = op === 'PutItem' ? args.input.Item : args.input.Key;
      if (held.has(itemId(args.input.TableName, key, keyAttributes))) {
        stats.singleWriteConflicts += 1;
        throw awsErrors.transactionConflict();
      }
    }
    return next(args);
  });

  return {
    stats,
    held: () => [...held.keys()],
    uninstall: () => {
      remove();
      held.clear();
    },
  };
};

/* ------------------------------------------------------------------------------------------ */
/* 2. Stale index reads                                                                         */
/* ------------------------------------------------------------------------------------------ */

export type StaleIndexStats = {
  /** Responses recorded inside `record()` (distinct inputs). */
  recorded: number;
  /** Frozen calls answered with a recorded (stale) response. */
  served: number;
  /** Frozen-eligible calls that had no recorded twin and went to DynamoDB Local (fresh). */
  passedThrough: number;
};

export type StaleIndexReads = Installed<StaleIndexStats> & {
  /** Runs `fn` with recording on: selected calls' responses are kept by input (first one wins). Call before `freeze()`. */
  record<T>(fn: () => Promise<T>): Promise<T>;
  /** From now on, a selected call whose input was recorded gets the recorded response (deep copy). */
  freeze(): void;
  /** Stops serving recorded responses (they are kept; `freeze()` again serves them again). */
  thaw(): void;
  /** Forgets every recorded response. */
  clear(): void;
};

/** Stable text of a command input (key order ignored; Sets, bytes and NumberValue kept apart). */
const inputKey = (commandName: string, input: unknown): string => {
  const norm = (v: unknown): unknown => {
    if (v instanceof Set)
      return {
        $set: [...v]
          .map(norm)
          .map((x) => JSON.stringify(x))
          .sort(),
      };
    if (v instanceof Uint8Array) return { $bytes: Buffer.from(v).toString('base64') };
    if (Array.isArray(v)) return v.map(norm);
    if (v && typeof v === 'object') {
      const proto = Object.getPrototypeOf(v);
      if (proto !== Object.prototype && proto !== null) return { $value: String(v), $type: proto?.constructor?.name };
      return Object.fromEntries(
        Object.keys(v as object)
          .filter((k) => (v as Record<string, unknown>)[k] !== undefined)
          .sort()
          .map((k) => [k, norm((v as Record<string, unknown>)[k])]),
      );
    }
    return v;
  };
  return JSON.stringify([operation(commandName), norm(input)]);
};

/**
 * Serves stale results for index reads, as AWS's eventually consistent GSIs may. Record the reads
 * you want frozen, write, then `freeze()`: from then on, each selected call (default: Query or Scan
 * with an `IndexName`) whose input equals a recorded one (same JSON, key order ignored) is answered
 * with the response recorded for it — the page the index showed before the writes — without
 * reaching DynamoDB Local. Calls with an input never recorded pass through (fresh; counted in
 * `stats.passedThrough`, so a test can assert its reads really were stale). GetItem and every
 * non-selected call always see the current data. `select` widens or narrows the choice, e.g.
 * `(op, input) => op === 'Query' && input.IndexName === 'gsi2'`.
 *
 * @example
 * const stale = staleIndexReads();
 * try {
 *   await stale.record(() => api.get('/customers', token)); // the list as it is now
 *   await api.post('/customers', token, { email: 'new@example.com' });
 *   stale.freeze();
 *   const list = await api.get('/customers', token);         // same index Query → the old page
 *   expect(stale.stats.served).toBeGreaterThan(0);
 * } finally {
 *   stale.uninstall();
 * }
 */
export const staleIndexReads = (opts: { select?: (operation: string, input: Input) => boolean } = {}): StaleIndexReads => {
  const select = opts.select ?? ((op: string, input: Input) => (op === 'Query' || op === 'Scan') && input.IndexName !== undefined);
  const stats: StaleIndexStats = { recorded: 0, served: 0, passedThrough: 0 };
  const recorded = new Map<string, Output>();
  let recording = 0;
  let frozen = false;

  const copy = (out: Output): Output => ({ response: out.response, output: structuredClone(out.output) });

  const remove = install('staleIndexReads', async (args, context, next) => {
    const op = operation(context.commandName);
    if (!select(op, args.input)) return next(args);
    const key = inputKey(op, args.input);
    if (frozen) {
      const hit = recorded.get(key);
      if (hit) {
        stats.served += 1;
        return copy(hit);
      }
      stats.passedThrough += 1;
      return next(args);
    }
    const out = await next(args);
    if (recording > 0 && !recorded.has(key)) {
      recorded.set(key, copy(out));
      stats.recorded += 1;
    }
    return out;
  });

  return {
    stats,
    async record(fn) {
      recording += 1;
      try {
        return await fn();
      } finally {
        recording -= 1;
      }
    },
    freeze: () => {
      frozen = true;
    },
    thaw: () => {
      frozen = false;
    },
    clear: () => recorded.clear(),
    uninstall: () => {
      remove();
      recorded.clear();
    },
  };
};

/* ------------------------------------------------------------------------------------------ */
/* 3. Throttling and one-off faults                                                             */
/* ------------------------------------------------------------------------------------------ */

/** mulberry32: a small seeded PRNG in [0, 1) (same seed, same sequence of calls → same faults). */
export const seededRandom = (seed: number): (() => number) => {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
};

export type ThrottleStats = {
  /** Calls considered (matching `commands`). */
  seen: number;
  /** Calls failed here. */
  injected: number;
  /** Injected failures by operation (`PutItem`, `TransactWriteItems`…). */
  byCommand: Record<string, number>;
  /** Of those, TransactWriteItems failed as TransactionCanceledException with a ThrottlingError reason. */
  canceledTransactions: number;
};

export type ThrottleOptions = {
  /** Fraction of matching calls to fail, 0..1. */
  rate: number;
  /** Operations to throttle (`'PutItem'` or `'PutItemCommand'`); default all. */
  commands?: string[];
  /** PRNG seed (default 1): the same seed and call sequence fail the same calls. */
  seed?: number;
  /** Exception for throttled calls (default ProvisionedThroughputExceededException). */
  error?: 'ProvisionedThroughputExceededException' | 'ThrottlingException' | 'RequestLimitExceeded';
  /**
   * Share of throttled TransactWriteItems answered as TransactionCanceledException with one
   * `ThrottlingError` reason (the other actions `None`) instead of `error` (default 0.5).
   */
  transactionCancelShare?: number;
};

/**
 * Fails a seeded-random fraction of calls before they reach DynamoDB Local, as AWS does when a
 * table or partition is over capacity. Throttled TransactWriteItems sometimes come back as
 * `TransactionCanceledException` whose reasons carry one `{ Code: 'ThrottlingError', Message }`.
 *
 * @example
 * const t = throttle({ rate: 0.3, commands: ['TransactWriteItems', 'UpdateItem'], seed: 42 });
 * try {
 *   const res = await api.post('/orders', token, order);   // must survive (retry) or fail cleanly
 *   expect(t.stats.injected).toBeGreaterThan(0);
 * } finally {
 *   t.uninstall();
 * }
 */
export const throttle = (opts: ThrottleOptions): Installed<ThrottleStats> => {
  if (!(opts.rate >= 0 && opts.rate <= 1)) throw new Error(`throttle: rate must be within 0..1, got ${opts.rate}`);
  const only = normalizeOps(opts.commands);
  const random = seededRandom(opts.seed ?? 1);
  const cancelShare = opts.transactionCancelShare ?? 0.5;
  const errorName = opts.error ?? 'ProvisionedThroughputExceededException';
  const makeError = () =>
    errorName === 'ThrottlingException'
      ? awsErrors.throttling()
      : errorName === 'RequestLimitExceeded'
        ? awsErrors.requestLimitExceeded()
        : awsErrors.provisionedThroughputExceeded();
  const stats: ThrottleStats = { seen: 0, injected: 0, byCommand: {}, canceledTransactions: 0 };

  const uninstall = install('throttle', async (args, context, next) => {
    const op = operation(context.commandName);
    if (only && !only.has(op)) return next(args);
    stats.seen += 1;
    // Always draw the same number of values per call, so one decision never shifts the next.
    const [fail, asCancel, which] = [random(), random(), random()];
    if (!(fail < opts.rate)) return next(args);
    stats.injected += 1;
    stats.byCommand[op] = (stats.byCommand[op] ?? 0) + 1;
    const actions = (args.input.TransactItems ?? []) as unknown[];
    if (op === 'TransactWriteItems' && actions.length > 0 && asCancel < cancelShare) {
      stats.canceledTransactions += 1;
      const hit = Math.floor(which * actions.length);
      throw awsErrors.transactionCanceled(actions.map((_, i) => (i === hit ? awsErrors.throttlingReason() : awsErrors.noneReason())));
    }
    throw makeError();
  });
  return { stats, uninstall };
};

export type SustainedConflictStats = { fired: number };

/**
 * Sustained contention: every TransactWriteItems is cancelled as AWS cancels a transaction that
 * lost to another (`TransactionConflict` on its first action), until uninstalled.
 */
export const sustainedConflicts = (): Installed<SustainedConflictStats> => {
  const stats: SustainedConflictStats = { fired: 0 };
  const uninstall = install('sustainedConflicts', async (args, context, next) => {
    if (operation(context.commandName) !== 'TransactWriteItems') return next(args);
    stats.fired += 1;
    const actions = (args.input.TransactItems ?? []) as unknown[];
    throw awsErrors.transactionCanceled(actions.map((_, i) => (i === 0 ? awsErrors.conflictReason() : awsErrors.noneReason())));
  });
  return { stats, uninstall };
};

export type FailOnceStats = { fired: boolean };

/**
 * Fails the next call of one operation (optionally only one whose input passes `when`) with the
 * error `errorFactory` returns, before it reaches DynamoDB Local; then removes itself. Other calls
 * pass untouched.
 *
 * @example
 * const f = failOnce('TransactWriteItems', () => awsErrors.provisionedThroughputExceeded());
 * try {
 *   await expect(db().send(new TransactWriteCommand(input))).rejects.toThrow(ProvisionedThroughputExceededException);
 *   expect(f.stats.fired).toBe(true);
 * } finally {
 *   f.uninstall();
 * }
 */
export const failOnce = (
  commandName: string,
  errorFactory: (input: Input) => Error,
  opts: { when?: (input: Input) => boolean } = {},
): Installed<FailOnceStats> =>
  onceOn('failOnce', commandName, opts.when, async (args) => {
    throw errorFactory(args.input);
  });

/** Runs `fault` instead of the next matching call (one of `commandName` whose input passes `when`), then removes itself. */
const onceOn = (
  label: string,
  commandName: string,
  when: ((input: Input) => boolean) | undefined,
  fault: Handler,
): Installed<FailOnceStats> => {
  const target = operation(commandName);
  const stats: FailOnceStats = { fired: false };
  const uninstall = install(`${label}:${target}`, async (args, context, next) => {
    if (stats.fired || operation(context.commandName) !== target || (when && !when(args.input))) return next(args);
    stats.fired = true;
    uninstall();
    return fault(args, context, next);
  });
  return { stats, uninstall };
};

/**
 * Lets the next call of one operation (optionally only one whose input passes `when`) reach
 * DynamoDB Local, so it lands, then throws the SDK's TimeoutError as if its answer was lost on the
 * way back; then removes itself. The caller cannot tell whether the write landed.
 *
 * @example
 * const lost = loseResponseOnce('TransactWriteItems');
 * try {
 *   await recordSomething();                 // must recognise its own landed write on the re-send
 *   expect(lost.stats.fired).toBe(true);
 * } finally {
 *   lost.uninstall();
 * }
 */
export const loseResponseOnce = (commandName: string, opts: { when?: (input: Input) => boolean } = {}): Installed<FailOnceStats> =>
  onceOn('loseResponseOnce', commandName, opts.when, async (args, _context, next) => {
    await next(args);
    throw sdkTimeout();
  });

/* ------------------------------------------------------------------------------------------ */
/* 4. Mixed faults at a rate: throttling, conflicts and timeouts                                */
/* ------------------------------------------------------------------------------------------ */

export type FaultKind = 'throttle' | 'conflict' | 'timeout' | 'lostResponse';

export type FaultsAtRateStats = {
  /** Calls considered. */
  seen: number;
  /** Calls failed here, by kind. */
  injected: Record<FaultKind, number>;
  /** Failed calls by operation. */
  byCommand: Record<string, number>;
};

/**
 * A network timeout as the SDK reports it once its own re-sends are exhausted
 * (`@smithy/node-http-handler`: an Error named TimeoutError).
 */
export const sdkTimeout = (): Error =>
  Object.assign(new Error('Connection timed out after 3000 ms'), { name: 'TimeoutError', $metadata: { attempts: 3 } });

const WRITES = new Set(['PutItem', 'UpdateItem', 'DeleteItem', 'TransactWriteItems', 'BatchWriteItem']);

/**
 * Fails a seeded-random `rate` of calls with one of `kinds`, drawn evenly:
 * - `throttle`: as `throttle()` (ProvisionedThroughputExceeded; a TransactWriteItems half the time
 *   cancelled with a ThrottlingError reason);
 * - `conflict`: writes only — a TransactWriteItems cancelled with a TransactionConflict reason, a
 *   single-item write failed with TransactionConflictException (reads drawn for it pass);
 * - `timeout`: the call never reaches DynamoDB Local and fails with the SDK's TimeoutError;
 * - `lostResponse`: writes only — the call reaches DynamoDB Local (it commits), then its answer is
 *   lost: TimeoutError (the worst case: the caller cannot know the write landed).
 * The same seed and call sequence fail the same calls.
 */
export const faultsAtRate = (opts: {
  rate: number;
  kinds?: FaultKind[];
  seed?: number;
  commands?: string[];
}): Installed<FaultsAtRateStats> => {
  if (!(opts.rate >= 0 && opts.rate <= 1)) throw new Error(`faultsAtRate: rate must be within 0..1, got ${opts.rate}`);
  const kinds = opts.kinds ?? ['throttle', 'conflict', 'timeout', 'lostResponse'];
  const only = normalizeOps(opts.commands);
  const random = seededRandom(opts.seed ?? 1);
  const stats: FaultsAtRateStats = { seen: 0, injected: { throttle: 0, conflict: 0, timeout: 0, lostResponse: 0 }, byCommand: {} };
  const count = (kind: FaultKind, op: string) => {
    stats.injected[kind] += 1;
    stats.byCommand[op] = (stats.byCommand[op] ?? 0) + 1;
  };

  const uninstall = install('faultsAtRate', async (args, context, next) => {
    const op = operation(context.commandName);
    if (only && !only.has(op)) return next(args);
    stats.seen += 1;
    const [fail, pick, which] = [random(), random(), random()];
    if (!(fail < opts.rate)) return next(args);
    const kind = kinds[Math.floor(pick * kinds.length)];
    const actions = (args.input.TransactItems ?? []) as unknown[];
    const hit = Math.floor(which * Math.max(1, actions.length));
    const reasons = (reason: CancellationReason) => actions.map((_, i) => (i === hit ? reason : awsErrors.noneReason()));
    switch (kind) {
      case 'throttle':
        count(kind, op);
        if (op === 'TransactWriteItems' && which < 0.5) throw awsErrors.transactionCanceled(reasons(awsErrors.throttlingReason()));
        throw awsErrors.provisionedThroughputExceeded();
      case 'conflict':
        if (!WRITES.has(op) || op === 'BatchWriteItem') return next(args);
        count(kind, op);
        throw op === 'TransactWriteItems'
          ? awsErrors.transactionCanceled(reasons(awsErrors.conflictReason()))
          : awsErrors.transactionConflict();
      case 'timeout':
        count(kind, op);
        throw sdkTimeout();
      case 'lostResponse':
        if (!WRITES.has(op)) return next(args);
        count(kind, op);
        await next(args);
        throw sdkTimeout();
    }
  });
  return { stats, uninstall };
};

/* ------------------------------------------------------------------------------------------ */
/* 5. Observing writes                                                                          */
/* ------------------------------------------------------------------------------------------ */

export type WriteObserverStats = {
  /** Partition keys written (every Put/Update/Delete, each action of a transaction or batch), in order. */
  partitions: string[];
};

/**
 * Records the partition key of every write sent (PutItem, UpdateItem, DeleteItem, each action of
 * TransactWriteItems and BatchWriteItem), failed ones included; nothing is changed. `stats.partitions`
 * can be cleared (`length = 0`) between steps.
 */
export const observeWrites = (): Installed<WriteObserverStats> => {
  const stats: WriteObserverStats = { partitions: [] };
  const uninstall = install('observeWrites', async (args, context, next) => {
    for (const w of writtenKeys(operation(context.commandName), args.input)) stats.partitions.push(w.pk);
    return next(args);
  });
  return { stats, uninstall };
};

export type WrittenKey = { pk: string; sk: string; transactional: boolean };

/**
 * The key of every item a write request writes, in order: PutItem, UpdateItem, DeleteItem, each
 * action of TransactWriteItems (condition checks write nothing) and of BatchWriteItem. Key values
 * come from either input form (native or marshalled).
 */
export const writtenKeys = (op: string, input: Input): WrittenKey[] => {
  const k = (key: Record<string, unknown> | undefined, transactional: boolean): WrittenKey => ({
    pk: keyPart(key?.pk).replace(/^S:/, ''),
    sk: keyPart(key?.sk).replace(/^S:/, ''),
    transactional,
  });
  if (op === 'PutItem') return [k(input.Item, false)];
  if (op === 'UpdateItem' || op === 'DeleteItem') return [k(input.Key, false)];
  if (op === 'TransactWriteItems') {
    return ((input.TransactItems ?? []) as Input[]).flatMap((a) =>
      a.ConditionCheck ? [] : [k(a.Put?.Item ?? a.Update?.Key ?? a.Delete?.Key, true)],
    );
  }
  if (op === 'BatchWriteItem') {
    return Object.values((input.RequestItems ?? {}) as Record<string, Input[]>).flatMap((rs) =>
      rs.map((r) => k(r.PutRequest?.Item ?? r.DeleteRequest?.Key, false)),
    );
  }
  return [];
};

/* ------------------------------------------------------------------------------------------ */
/* 6. An answer lost on the wire, under the SDK's own re-send                                   */
/* ------------------------------------------------------------------------------------------ */

export type LostAnswerStats = { lost: number; sent: number };

/**
 * The first `times` attempts of `commandName` that `when` accepts reach DynamoDB Local (and land),
 * then their answer is lost as a socket timeout (TimeoutError, a TRANSIENT error to the SDK).
 * Unlike the middlewares above, this one sits at step `deserialize`, inside the SDK's retry
 * middleware: it runs once per attempt, so the SDK's own re-send of the same request is seen
 * (`stats.sent`) and reaches DynamoDB Local again. Its input is already marshalled (`{ pk: { S } }`).
 */
export const lostAnswer = (
  commandName: string,
  opts: { times?: number; when?: (input: Input) => boolean } = {},
): Installed<LostAnswerStats> => {
  const target = operation(commandName);
  const stats: LostAnswerStats = { lost: 0, sent: 0 };
  const uninstall = install(
    'lostAnswer',
    async (args, context, next) => {
      const input = args.input ?? {};
      if (operation(context.commandName) !== target || (opts.when && !opts.when(input))) return next(args);
      stats.sent++;
      const out = await next(args);
      if (stats.lost >= (opts.times ?? 1)) return out;
      stats.lost++;
      throw Object.assign(new Error('socket hang up: answer lost after the request was sent'), { name: 'TimeoutError' });
    },
    'deserialize',
  );
  return { stats, uninstall };
};
