/** Hot counters (totals, stats) are spread over this many items, summed on read (one Query). */
export const COUNTER_SHARDS = 256;
