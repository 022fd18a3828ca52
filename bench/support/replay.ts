import {
  BatchGetCommand,
  BatchWriteCommand,
  DeleteCommand,
  GetCommand,
  PutCommand,
  QueryCommand,
  TransactWriteCommand,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import { db } from '#lib/db/client';
import type { Sent } from './capture.ts';

/** The document-client command of each recorded operation (lib/ sends only these). */
const COMMANDS: Record<string, new (input: any) => any> = {
  GetItem: GetCommand,
  PutItem: PutCommand,
  UpdateItem: UpdateCommand,
  DeleteItem: DeleteCommand,
  Query: QueryCommand,
  BatchGetItem: BatchGetCommand,
  BatchWriteItem: BatchWriteCommand,
  TransactWriteItems: TransactWriteCommand,
};

/** Recorded commands in waves: those that overlapped in time were sent concurrently, and are again. */
export const waves = (sent: Sent[]): Sent[][] => {
  const out: Sent[][] = [];
  let end = -Infinity;
  for (const s of [...sent].sort((a, b) => a.start - b.start)) {
    if (s.start < end) out[out.length - 1].push(s);
    else out.push([s]);
    end = Math.max(end, s.end);
  }
  return out;
};

/**
 * Sends recorded commands again through the same client, bare (no handler around them), wave by
 * wave. A condition that fails (the at-most-once-a-minute token stamp) still costs its round trip.
 */
export const replay = async (plan: Sent[][]): Promise<void> => {
  for (const wave of plan) {
    await Promise.all(
      wave.map((s) =>
        db()
          .send(new COMMANDS[s.command](s.input))
          .catch((err: Error) => {
            if (err.name !== 'ConditionalCheckFailedException') throw err;
          }),
      ),
    );
  }
};
