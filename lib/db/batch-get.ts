import { BatchGetCommand } from '@aws-sdk/lib-dynamodb';
import { db, tableName } from '#lib/db/client';
import type { Key } from '#lib/db/keys';
import { pauseOrGiveUp } from '#lib/db/retry';

/** The map key `batchGet` files an item under. */
export const keyId = (k: Key): string => `${k.pk}|${k.sk}`;

/**
 * Strongly consistent BatchGetItem over any number of keys (100 a request). Unprocessed keys
 * (DynamoDB's partial answer under throttling) are asked again with the retry policy's pause,
 * within the invocation's deadline. `attributes`: only those (and the key) are read.
 */
export const batchGet = async <T extends Record<string, unknown>>(list: Key[], attributes?: string[]): Promise<Map<string, T>> => {
  const projection = attributes
    ? {
        ProjectionExpression: ['pk', 'sk', ...attributes].map((_, i) => `#p${i}`).join(', '),
        ExpressionAttributeNames: Object.fromEntries(['pk', 'sk', ...attributes].map((a, i) => [`#p${i}`, a])),
      }
    : {};
  const out = new Map<string, T>();
  const seen = new Set<string>();
  const uniq = list.filter((k) => !seen.has(keyId(k)) && seen.add(keyId(k)));
  const chunks = Array.from({ length: Math.ceil(uniq.length / 100) }, (_, i) => uniq.slice(i * 100, i * 100 + 100));
  // The chunks go out together: a read of 101 to 200 keys takes the time of one request.
  await Promise.all(
    chunks.map(async (chunk) => {
      let pending: Key[] = chunk;
      for (let attempt = 1; pending.length; attempt++) {
        const res = await db().send(
          new BatchGetCommand({ RequestItems: { [tableName()]: { Keys: pending, ConsistentRead: true, ...projection } } }),
        );
        for (const item of res.Responses?.[tableName()] ?? []) out.set(keyId(item as Key), item as T);
        pending = (res.UnprocessedKeys?.[tableName()]?.Keys ?? []) as Key[];
        if (pending.length) await pauseOrGiveUp(attempt, 'throttle');
      }
    }),
  );
  return out;
};
