import { deliverRecords, sqsHandler } from '#lib/webhooks/consumers';
import { sqsDeliveryQueue } from '#lib/webhooks/queue';

/** Delivery queue → one signed attempt per task; failures postponed on the retry schedule, then dead-lettered. */
const queue = sqsDeliveryQueue({ queueUrl: process.env.WEBHOOK_DELIVERY_QUEUE_URL!, deadLetterUrl: process.env.WEBHOOK_DELIVERY_DLQ_URL! });
export const handler = sqsHandler((records) => deliverRecords(records, queue));
