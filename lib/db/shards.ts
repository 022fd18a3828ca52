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

/** `avoid`: shards the caller must not get (a batch keeps its concurrent transactions apart). */
export const leaseShard = (avoid: (shard: number) => boolean = () => false): number => {
  const usable = (shard: number, at: number) => free(shard, at) && !avoid(shard);
  const draw = (): number => {
    for (let tries = 0; tries < 64; tries++) {
      const candidate = Math.floor(Math.random() * COUNTER_SHARDS);
      if (!avoid(candidate)) return candidate;
    }
    return Math.floor(Math.random() * COUNTER_SHARDS);
  };
  if (policy === 'random') return draw();
  const at = Date.now();
  // The most recently committed usable shard; avoided ones stay kept for later transactions.
  let shard: number | undefined;
  for (let i = sticky.length - 1; i >= 0 && shard === undefined; i--) {
    if (!free(sticky[i], at)) sticky.splice(i, 1);
    else if (!avoid(sticky[i])) shard = sticky.splice(i, 1)[0];
  }
  for (let tries = 0; shard === undefined && tries < 8; tries++) {
    const candidate = draw();
    if (usable(candidate, at)) shard = candidate;
  }
  shard ??= draw();
  inUse.set(shard, at + LEASE_MS);
  return shard;
};

/** Ends a lease: a shard whose transaction committed is kept for the next one. */
export const releaseShard = (shard: number, committed: boolean): void => {
  inUse.delete(shard);
  if (committed && !sticky.includes(shard)) sticky.push(shard);
};
