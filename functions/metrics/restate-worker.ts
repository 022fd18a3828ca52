import { handleRestateJobs } from '#lib/metrics/restate-jobs';

/**
 * The restate worker: the table's stream (INSERTs of restate jobs, filtered by the event source
 * mapping) → the pass after a time zone or rate change goes on where a request left it
 * (lib/metrics/restate-jobs.ts).
 */
export const handler = handleRestateJobs;
