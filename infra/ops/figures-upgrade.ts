import { DeleteCommand, GetCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { db, tableName } from '#lib/db/client';
import { GENERATION_SHARDS, keys, metricsShardPartition } from '#lib/db/keys';
import { queryAll } from '#lib/db/query';
import { listRateTables } from '#lib/exchange-rates/store';
import { figuresZoneOf, generationOf } from '#lib/merchants/rules';
import { getMerchant } from '#lib/merchants/store';
import { settingsItems } from '#lib/metrics';
import { startRecount } from '#lib/metrics';

/** Partitions of what the settings changes before recounts left: restate jobs, the passes' pace ledger, the rate tables' version copies. */
const LEGACY_PARTITIONS = (merchantId: string) => [
  `${keys.merchant(merchantId).pk}#RESTATE`,
  ...Array.from({ length: 16 }, (_, shard) => `${keys.merchant(merchantId).pk}#RATES_VERSION#${String(shard).padStart(3, '0')}`),
];

/**
 * `ops upgrade` step for tables written before recounts (docs/metrics-design.md): the generation
 * that counts gets its settings items (the zone it counts in, every rate table as it is: what its
 * writes converted at), written only where missing; the generation copies lose a build's pause and
 * the copies a table of 16 lacks are written as copy 0 says;
 * restate jobs and markers, the passes' pace seconds and the rate-version copies go; where a pass
 * was left unfinished, a recount starts. Run twice, it changes nothing more.
 */
export const upgradeFiguresSettings = async (merchantId: string) => {
  const merchant = await getMerchant(merchantId);
  if (!merchant) return { settings: 0, copies: 0, removed: 0 };
  const generation = generationOf(merchant);
  let settings = 0;
  const tables = await listRateTables(merchantId);
  const rates = new Map(tables.map((t) => [t.currency, new Map(Object.entries(t.rates))]));
  for (const item of settingsItems(merchantId, generation, figuresZoneOf(merchant), rates)) {
    try {
      await db().send(new PutCommand({ TableName: tableName(), Item: item, ConditionExpression: 'attribute_not_exists(pk)' }));
      settings += 1;
    } catch (err) {
      if ((err as Error).name !== 'ConditionalCheckFailedException') throw err;
    }
  }
  for (let shard = 0; shard < GENERATION_SHARDS; shard++)
    await db()
      .send(
        new UpdateCommand({
          TableName: tableName(),
          Key: keys.generation(merchantId, shard),
          UpdateExpression: 'REMOVE paused_until, building',
          ConditionExpression: 'attribute_exists(pk)',
        }),
      )
      .catch((err: Error) => {
        if (err.name !== 'ConditionalCheckFailedException') throw err;
      });
  // Copies added since (one a counter shard, where there were 16) start as copy 0 says, written only where missing.
  const { Item: first } = await db().send(
    new GetCommand({ TableName: tableName(), Key: keys.generation(merchantId, 0), ConsistentRead: true }),
  );
  let copies = 0;
  if (first)
    for (let shard = 1; shard < GENERATION_SHARDS; shard++)
      copies += await db()
        .send(
          new PutCommand({
            TableName: tableName(),
            Item: { ...first, ...keys.generation(merchantId, shard) },
            ConditionExpression: 'attribute_not_exists(pk)',
          }),
        )
        .then(
          () => 1,
          (err: Error) => {
            if (err.name !== 'ConditionalCheckFailedException') throw err;
            return 0;
          },
        );
  let removed = 0;
  const stale = [
    ...(
      await Promise.all(
        LEGACY_PARTITIONS(merchantId).map((partition) =>
          queryAll<{ pk: string; sk: string }>({ partition, descending: false }, ['pk', 'sk']),
        ),
      )
    ).flat(),
    // The passes' pace seconds (the applier's, `A#…`, stay) and the restate markers among the whole's pending moves.
    ...(
      await queryAll<{ pk: string; sk: string }>({ partition: `${keys.merchant(merchantId).pk}#PACE`, descending: false }, ['pk', 'sk'])
    ).filter((k) => !k.sk.startsWith('A#')),
    ...(await queryAll<{ pk: string; sk: string }>(
      { partition: metricsShardPartition(merchantId, null, generation, 0), from: 'M#0000-00#R#', to: 'M#0000-00#R#~', descending: false },
      ['pk', 'sk'],
    )),
  ];
  for (const key of stale) {
    await db().send(new DeleteCommand({ TableName: tableName(), Key: { pk: key.pk, sk: key.sk } }));
    removed += 1;
  }
  // A pass left unfinished (a job or a marker) may have left customers counted in another zone or at
  // older rates: a recount in the settings as they are counts every customer afresh.
  const unfinished = stale.some((k) => k.pk.endsWith('#RESTATE') || k.sk.startsWith('M#0000-00#R#'));
  const recount = unfinished ? await startRecount(merchant, { timezone: figuresZoneOf(merchant), rates }, {}, () => undefined) : null;
  return { settings, copies, removed, recount_started: recount !== null };
};
