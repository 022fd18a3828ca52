import { appendFileSync } from 'node:fs';
import { createRelayHandler, type Publish } from '#lib/outbox/relay';
import { startOutboxPoller } from '../../../infra/local/outbox-poller.ts';

/**
 * The local relay (poller + relay handler) as a process of its own, so a test can kill -9 it.
 * Publishes each event's detail as a JSON line to OUT_FILE. With HANG_MERCHANT set, a PutEvents
 * call carrying an event of that merchant prints `publishing <ids>` and never returns: the relay
 * has read the committed records and not yet published them.
 */
const { DYNAMODB_ENDPOINT, TABLE_NAME, CHECKPOINT_FILE, OUT_FILE, HANG_MERCHANT } = process.env;

const publish: Publish = async (entries) => {
  const details = entries.map((e) => JSON.parse(e.Detail!));
  if (HANG_MERCHANT && details.some((d) => d.merchant_id === HANG_MERCHANT)) {
    console.log(`publishing ${details.map((d) => d.id).join(',')}`);
    // Never settles; the timer keeps the process alive until it is killed.
    setInterval(() => undefined, 60_000);
    return new Promise(() => undefined);
  }
  appendFileSync(OUT_FILE!, details.map((d) => `${JSON.stringify(d)}\n`).join(''));
  return { FailedEntryCount: 0, Entries: entries.map((_, i) => ({ EventId: `local-${i}` })) };
};

await startOutboxPoller({
  endpoint: DYNAMODB_ENDPOINT!,
  tableName: TABLE_NAME!,
  handler: createRelayHandler(publish),
  checkpointFile: CHECKPOINT_FILE,
  intervalMs: 100,
});
console.log('ready');
