import { handleRecountJobs } from '#lib/metrics';

/**
 * The recount worker: the table's stream (INSERTs of recount jobs, filtered by the event source
 * mapping) → the next generation of a merchant's figures counted after a settings change, then
 * switched to, and the one it replaces deleted (lib/metrics/recount.ts).
 */
export const handler = handleRecountJobs;
