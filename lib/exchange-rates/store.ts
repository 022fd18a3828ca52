import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { batchGet, keyId } from '#lib/db/batch-get';
import { db, tableName } from '#lib/db/client';
import { exchangeRatesPartition, keys } from '#lib/db/keys';
import { queryAll } from '#lib/db/query';
import { itemAbsent, versionIs, type WriteSet } from '#lib/db/writes';
import type { RateTable } from '#lib/exchange-rates/rules';
import type { RateBook } from '#lib/metrics';

/**
 * The merchant's exchange rates as set: one item per currency in the merchant's rates partition
 * (`rates`: month → rate, at most one entry per month from 1970 to 2099, so bounded), guarded by
 * `version`. The figures never convert at these: each generation of the figures has its own copy
 * of the rates it counts at (lib/metrics/generation.ts), made when a change starts its recount.
 */

type RateItem = { sk: string; rates?: Record<string, string>; version?: number };
const tableOf = (currency: string, item: RateItem | undefined): RateTable => ({
  currency,
  rates: item?.rates ?? {},
  version: item?.version === undefined ? null : Number(item.version),
});

export const readRateTable = async (merchantId: string, currency: string): Promise<RateTable> => {
  const { Item } = await db().send(
    new GetCommand({ TableName: tableName(), Key: keys.exchangeRates(merchantId, currency), ConsistentRead: true }),
  );
  return tableOf(currency, Item as RateItem | undefined);
};

/** Every currency's table: one Query of the rates partition. */
export const listRateTables = async (merchantId: string): Promise<RateTable[]> => {
  const items = await queryAll<RateItem>({ partition: exchangeRatesPartition(merchantId), descending: false }, ['sk', 'rates', 'version']);
  return items.map((i) => tableOf(i.sk, i));
};

/** The table as a put under the version read. */
export const addRateTablePut = (ws: WriteSet, merchantId: string, table: RateTable) => {
  const version = (table.version ?? 0) + 1;
  ws.put(
    'exchange-rates',
    { ...keys.exchangeRates(merchantId, table.currency), currency: table.currency, rates: table.rates, version },
    table.version === null ? itemAbsent : versionIs(table.version),
  );
};

/** Rates as a write read them: the book it converts with, and each table's version to check at commit. */
export type RatesRead = { book: RateBook; versions: ReadonlyMap<string, number | null> };
export const NOTHING_READ: RatesRead = { book: new Map(), versions: new Map() };

/** The tables of `currencies` by key (one BatchGetItem, strongly consistent; none when there are none). */
export const readRates = async (merchantId: string, currencies: Iterable<string>): Promise<RatesRead> => {
  const wanted = [...new Set(currencies)];
  if (!wanted.length) return NOTHING_READ;
  const found = await batchGet<RateItem>(wanted.map((c) => keys.exchangeRates(merchantId, c)));
  return ratesOf(wanted.map((c) => tableOf(c, found.get(keyId(keys.exchangeRates(merchantId, c))))));
};

/** The merchant's whole book (a rebuild's), with the versions read. */
export const readAllRates = async (merchantId: string): Promise<RatesRead> => ratesOf(await listRateTables(merchantId));

const ratesOf = (tables: RateTable[]): RatesRead => ({
  book: new Map(tables.map((t) => [t.currency, new Map(Object.entries(t.rates))])),
  versions: new Map(tables.map((t) => [t.currency, t.version])),
});
