/**
 * Consecutive groups of at most `maxCount` items and `maxBytes` in all (by `size`), as AWS batch
 * calls take them (PutEvents, SendMessageBatch). An item too large on its own goes alone (and the
 * call refuses it).
 */
export const chunkBy = <T>(items: T[], maxCount: number, maxBytes: number, size: (item: T) => number): T[][] => {
  const chunks: T[][] = [];
  let current: T[] = [];
  let bytes = 0;
  for (const item of items) {
    const n = size(item);
    if (current.length && (current.length === maxCount || bytes + n > maxBytes)) {
      chunks.push(current);
      current = [];
      bytes = 0;
    }
    current.push(item);
    bytes += n;
  }
  if (current.length) chunks.push(current);
  return chunks;
};
