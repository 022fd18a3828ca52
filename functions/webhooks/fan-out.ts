import { fanOutRecords, sqsHandler } from '#lib/webhooks/consumers';
import { sqsDeliveryQueue } from '#lib/webhooks/queue';

/** Events queue (the bus rule's target) → one delivery task per subscribed endpoint. */
const queue = sqsDeliveryQueue({ queueUrl: process.env.WEBHOOK_DELIVERY_QUEUE_URL! });
export const handler = sqsHandler((records) => fanOutRecords(records, queue));
