import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { batchGet, keyId } from '#lib/db/batch-get';
import { db, tableName } from '#lib/db/client';
import { queryAll } from '#lib/db/query';
import { GENERATION_SHARDS, keys, type Key } from '#lib/db/keys';
import { RetryableError } from '#lib/db/retry';
import type { WriteSet } from '#lib/db/writes';
import { ContentionError } from '#lib/errors';
import { DEFAULT_TIMEZONE } from '#lib/shared/zone';
import type { RateBook } from '#lib/metrics/timeline';

/**
 * Generations of the figures (docs/metrics-design.md): the aggregates are kept under a generation
 * number, and each generation counts in settings fixed when it was created, its **settings items**
 * (`M#<m>#G<n>#SETTINGS`: the zone, and each currency's monthly rates). A settings change never
 * edits them: it creates the next generation, which a recount fills (lib/metrics/recount.ts) while
 * the current one keeps answering.
 *
 * Which generation counts, and which one a recount fills, is on the merchant item, its token and
 * pointer (each request knows it from its token lookup), and on 16 **generation copies** that every
 * write moving the figures checks in its own transaction (one by its counter shard): a write that
 * read an older state is refused at its commit and goes again from the copy.
 */

/** What a request counts the figures in: the generation that counts and the one a recount fills (if any). */
export type FiguresScope = {
  reportingCurrency: string;
  /** The time zone of the generation that counts (whose days and months the figures are in). */
  timezone: string;
  generation: number;
  /** The generation a recount is filling, while one runs. */
  recount?: number;
  /** The merchant's delinquency days: an order renewal's grace (absent: the default, 30). */
  delinquencyDays?: number;
};

/** A generation's settings: its time zone and the rates of the currencies asked for. */
export type GenerationSettings = { zone: string; rates: RateBook };

/**
 * The rates of generations already read by a request or a batch (`<generation>#<currency>` →
 * months): written once before the generation is used and never changed, so read once.
 */
export type SettingsMemo = Map<string, ReadonlyMap<string, string>>;

const memoKey = (generation: number, currency: string) => `${generation}#${currency}`;
const ZONE_MEMO = (generation: number) => `${generation}#zone`;
/**
 * Generations' zones this process has read (`<merchant>#<generation>`): written once before the
 * generation is named anywhere and never changed, so a write during a recount reads the next
 * generation's zone once per process, not once per write.
 */
const zones = new Map<string, string>();
const ZONES_KEPT = 10_000;

/**
 * The settings of `generation` for `currencies`: its zone (from `zone` when the caller knows it, as
 * a request does for the generation that counts) and each currency's rates; one BatchGetItem for
 * what `memo` lacks. A generation without settings items (0, before any change) counts in UTC with
 * no rates.
 */
export const generationSettings = async (
  merchantId: string,
  generation: number,
  currencies: Iterable<string>,
  memo: SettingsMemo = new Map(),
  zone?: string,
): Promise<GenerationSettings> => {
  const wanted = [...new Set(currencies)];
  const missing = wanted.filter((c) => !memo.has(memoKey(generation, c)));
  const known = zones.get(`${merchantId}#${generation}`);
  if (zone === undefined && known !== undefined) memo.set(ZONE_MEMO(generation), new Map([['zone', known]]));
  const needZone = zone === undefined && !memo.has(ZONE_MEMO(generation));
  if (missing.length || needZone) {
    const found = await batchGet<{ zone?: string; rates?: Record<string, string> }>([
      ...(needZone ? [keys.generationZone(merchantId, generation)] : []),
      ...missing.map((c) => keys.generationRates(merchantId, generation, c)),
    ]);
    if (needZone)
      memo.set(
        ZONE_MEMO(generation),
        new Map([['zone', found.get(keyId(keys.generationZone(merchantId, generation)))?.zone ?? DEFAULT_TIMEZONE]]),
      );
    for (const c of missing)
      memo.set(
        memoKey(generation, c),
        new Map(Object.entries(found.get(keyId(keys.generationRates(merchantId, generation, c)))?.rates ?? {})),
      );
  }
  return {
    zone: zone ?? memo.get(ZONE_MEMO(generation))!.get('zone')!,
    rates: new Map(wanted.map((c) => [c, memo.get(memoKey(generation, c))!])),
  };
};

/**
 * The rates item of one currency in `generation`, for a caller that reads it with its own first
 * items (an order write knows its currency before it reads anything); `rememberRates` files what was
 * found in the memo `generationSettings` then takes it from.
 */
export const ratesKey = (merchantId: string, generation: number, currency: string): Key =>
  keys.generationRates(merchantId, generation, currency);
export const rememberRates = (
  memo: SettingsMemo,
  merchantId: string,
  generation: number,
  currency: string,
  found: Map<string, Record<string, unknown>>,
) => {
  const item = found.get(keyId(keys.generationRates(merchantId, generation, currency))) as { rates?: Record<string, string> } | undefined;
  memo.set(memoKey(generation, currency), new Map(Object.entries(item?.rates ?? {})));
};

/** Every setting of `generation` (its settings partition, one Query): what a recount counts it in, what a rebuild corrects it in. */
export const readGenerationSettings = async (merchantId: string, generation: number): Promise<GenerationSettings> => {
  const items = await queryAll<{ sk: string; zone?: string; rates?: Record<string, string> }>(
    { partition: keys.generationZone(merchantId, generation).pk, descending: false },
    ['sk', 'zone', 'rates'],
  );
  return {
    zone: items.find((i) => i.sk === 'ZONE')?.zone ?? DEFAULT_TIMEZONE,
    rates: new Map(
      items.filter((i) => i.sk.startsWith('RATES#')).map((i) => [i.sk.slice('RATES#'.length), new Map(Object.entries(i.rates ?? {}))]),
    ),
  };
};

/** The items of a generation's settings (put before the generation is named anywhere; one per currency, so bounded). */
export const settingsItems = (merchantId: string, generation: number, zone: string, rates: RateBook): (Key & Record<string, unknown>)[] => [
  { ...keys.generationZone(merchantId, generation), zone },
  ...[...rates].map(([currency, months]) => ({
    ...keys.generationRates(merchantId, generation, currency),
    rates: Object.fromEntries(months),
  })),
];

/** A generation copy as read: which generation counts, its zone, and the one a recount fills. */
export type GenerationCopy = { generation: number; timezone: string; recount?: number };

export const readCopy = async (merchantId: string, shard: number): Promise<GenerationCopy> => {
  const { Item } = await db().send(
    new GetCommand({ TableName: tableName(), Key: keys.generation(merchantId, shard), ConsistentRead: true }),
  );
  return copyOf(Item);
};

export const copyOf = (item: Record<string, unknown> | undefined): GenerationCopy => ({
  generation: Number(item?.generation ?? 0),
  timezone: typeof item?.timezone === 'string' ? item.timezone : DEFAULT_TIMEZONE,
  ...(item?.recount === undefined ? {} : { recount: Number(item.recount) }),
});

/** The condition that a copy says what `scope` says (no copies yet: generation 0, no recount). */
export const copySays = (scope: Pick<FiguresScope, 'generation' | 'recount'>) => ({
  expression: `${scope.generation ? '#g = :g' : '(attribute_not_exists(#g) OR #g = :g)'} AND ${
    scope.recount === undefined ? 'attribute_not_exists(#r)' : '#r = :r'
  }`,
  names: { '#g': 'generation', '#r': 'recount' },
  values: { ':g': scope.generation, ...(scope.recount === undefined ? {} : { ':r': scope.recount }) },
});

/** The tag of the generation check (a write refused by it goes again from the copy). */
export const GENERATION_TAG = 'figures-generation';

/** Merchants one of whose writes a generation copy refused: the copy's shard, read before the next attempt. */
const refusedOn = new Map<string, number>();
/** What this process has learnt of merchants' generations since their requests read them (they only go forward). */
const learnt = new Map<string, GenerationCopy>();
const ahead = (a: GenerationCopy, b: Pick<FiguresScope, 'generation' | 'recount'>) =>
  a.generation > b.generation || (a.generation === b.generation && (a.recount ?? 0) > (b.recount ?? 0));

/**
 * Adds to `ws` the check that the copy of its shard still says `scope`'s generation and recount. A
 * refusal is a lost race, retried at once: the next attempt reads the copy (`currentScope`) and
 * counts in what it says. Never a wait: a recount holds no write.
 */
export const addGenerationCurrent = (ws: WriteSet, merchantId: string, scope: Pick<FiguresScope, 'generation' | 'recount'>) => {
  const key = keys.generation(merchantId, ws.shard);
  if (ws.has(key)) return;
  ws.check(GENERATION_TAG, key, copySays(scope), () => {
    refusedOn.set(merchantId, ws.shard);
    return new RetryableError(
      'contention',
      'the figures generation moved',
      () => new ContentionError("The merchant's settings changed while this was being written; nothing was stored. Try again."),
    );
  });
};

/** The scope a write counts in: the request's, or what a copy said since (after a refusal, read again first). */
export const currentScope = async <S extends FiguresScope>(merchantId: string, scope: S): Promise<S> => {
  const shard = refusedOn.get(merchantId);
  if (shard !== undefined) {
    refusedOn.delete(merchantId);
    const copy = await readCopy(merchantId, shard);
    const known = learnt.get(merchantId);
    if (!known || ahead(copy, known)) learnt.set(merchantId, copy);
  }
  const known = learnt.get(merchantId);
  if (!known || !ahead(known, scope)) return scope;
  const { recount: _old, ...rest } = scope;
  return {
    ...rest,
    generation: known.generation,
    timezone: known.timezone,
    ...(known.recount === undefined ? {} : { recount: known.recount }),
  } as S;
};

/** One update of every copy, alike, in `ws` (`edit` gives each its changes and condition). */
export const onEveryCopy = (ws: WriteSet, merchantId: string, edit: (u: ReturnType<WriteSet['update']>) => void) => {
  for (let shard = 0; shard < GENERATION_SHARDS; shard++) edit(ws.update('generation', keys.generation(merchantId, shard)));
};
