import { marshall } from '@aws-sdk/util-dynamodb';
import type { DynamoDBRecord } from 'aws-lambda';
import { addOutboxEvent, type EventType } from '#lib/outbox/store';
import type { WriteSet } from '#lib/db/writes';

/** Stream records as Lambda delivers them for the table (NEW_IMAGE), built from real outbox items. */

let seq = 0;
const nextSequenceNumber = () => String(++seq).padStart(21, '0');

/** The event item `addOutboxEvent` writes (captured from its WriteSet call; its mark is the other put). */
export const outboxItem = (merchantId: string, type: EventType, object: unknown, at = '2026-03-01T10:00:00Z'): Record<string, any> => {
  let item: Record<string, any> | undefined;
  const ws = {
    put: (tag: string, value: Record<string, any>) => (tag === 'outbox' ? (item = value) : undefined),
    tags: () => [],
  } as unknown as WriteSet;
  addOutboxEvent(ws, merchantId, type, object, at);
  return item!;
};

export const streamRecord = (eventName: 'INSERT' | 'MODIFY' | 'REMOVE', item: Record<string, any>): DynamoDBRecord => {
  const image = marshall(item, { removeUndefinedValues: true }) as any;
  return {
    eventID: `ev-${seq + 1}`,
    eventName,
    eventVersion: '1.1',
    eventSource: 'aws:dynamodb',
    awsRegion: 'us-east-1',
    eventSourceARN: 'arn:aws:dynamodb:us-east-1:000000000000:table/t/stream/2026-01-01T00:00:00.000',
    dynamodb: {
      ApproximateCreationDateTime: Math.floor(Date.now() / 1000),
      Keys: { pk: image.pk, sk: image.sk },
      ...(eventName === 'REMOVE' ? {} : { NewImage: image }),
      SequenceNumber: nextSequenceNumber(),
      SizeBytes: 100,
      StreamViewType: 'NEW_IMAGE',
    },
  };
};

/** An INSERT of an outbox event for an order-like object. */
export const outboxInsert = (merchantId: string, type: EventType = 'order.created', object: unknown = { order_no: `ORD-${seq + 1}` }) =>
  streamRecord('INSERT', outboxItem(merchantId, type, object));

export const detailOf = (entry: { Detail?: string }) => JSON.parse(entry.Detail!);
