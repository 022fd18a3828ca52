import { handlePendingMoves } from '#lib/metrics';

/**
 * The pending-moves applier: the table's stream (INSERTs of pending-moves items, filtered by the
 * event source mapping) → each item's moves applied once. Answers partial batch failures
 * (lib/metrics/pending-applier.ts).
 */
export const handler = handlePendingMoves;
