import { COUNTER_SHARDS } from '#lib/db/writes-constants';

/**
 * Which counter shard a transaction writes. A shard that just committed is kept (sticky) for the
 * next transaction of this process; one that lost a race is dropped and a random free one drawn.
 * On Lambda a container serves one request at a time, so concurrent containers settle on distinct
 * shards after at most a few conflicts; the local server's concurrent requests never share one.
 * Leases expire, so a WriteSet that is built but never committed cannot pin a shard.
 */
const LEASE_MS = 15_000;
const inUse = new Map<number, number>();
const sticky: number[] = [];

const free = (shard: number, at: number) => (inUse.get(shard) ?? 0) <= at;

/** Tests measure the worst case too: every transaction draws at random, as a fresh container would. */
let policy: 'lease' | 'random' = 'lease';
export const setShardPolicy = (p: 'lease' | 'random'): void => {
  policy = p;
};

export const leaseShard = (): number => {
  if (policy === 'random') return Math.floor(Math.random() * COUNTER_SHARDS);
  const at = Date.now();
  let shard = sticky.pop();
  while (shard !== undefined && !free(shard, at)) shard = sticky.pop();
  for (let tries = 0; shard === undefined && tries < 8; tries++) {
    const candidate = Math.floor(Math.random() * COUNTER_SHARDS);
    if (free(candidate, at)) shard = candidate;
  }
  shard ??= Math.floor(Math.random() * COUNTER_SHARDS);
  inUse.set(shard, at + LEASE_MS);
  return shard;
};

/** Ends a lease: a shard whose transaction committed is kept for the next one. */
export const releaseShard = (shard: number, committed: boolean): void => {
  inUse.delete(shard);
  if (committed && !sticky.includes(shard)) sticky.push(shard);
};
