/**
 * Hot counters (totals, stats) are spread over this many items, summed on read. A stats read takes
 * today's and the month's shards, 96 keys: one BatchGetItem (100 at most).
 */
export const COUNTER_SHARDS = 48;
