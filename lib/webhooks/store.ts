import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { db, tableName } from '#lib/db/client';
import { keys, webhookEndpointIndexes } from '#lib/db/keys';
import { queryAll } from '#lib/db/query';
import type { EventType } from '#lib/outbox';
import { receives, type WebhookEndpointItem } from '#lib/webhooks/model';

/** A webhook endpoint by id, read by key (strongly consistent). */
export const getWebhookEndpointItem = async (merchantId: string, id: number): Promise<WebhookEndpointItem | null> => {
  if (!Number.isSafeInteger(id) || id < 1) return null;
  const { Item } = await db().send(new GetCommand({ TableName: tableName(), Key: keys.webhookEndpoint(merchantId, id), ConsistentRead: true }));
  return (Item as WebhookEndpointItem | undefined) ?? null;
};


/**
 * The delivery fan-out: the merchant's enabled endpoints subscribed to `type`, in one Query of
 * the list index (the number of endpoints is capped, so one page holds them all). The index is
 * eventually consistent: the delivery re-reads each endpoint by key before sending.
 */
export const endpointsReceiving = async (merchantId: string, type: EventType): Promise<Pick<WebhookEndpointItem, 'id' | 'status' | 'events'>[]> => {
  const all = await queryAll<Pick<WebhookEndpointItem, 'id' | 'status' | 'events'>>(
    { index: 'gsi1', partition: webhookEndpointIndexes.partitions.all(merchantId), descending: false },
    ['id', 'status', 'events'],
  );
  return all.filter((e) => receives(e, type)).map((e) => ({ ...e, id: Number(e.id) }));
};
