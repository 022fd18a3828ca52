import { checkScheduledCancel, type ScheduledCancel } from '#lib/subscriptions/schedule';

/**
 * The cancellation scheduler's task (infra/constructs/cancel-scheduler.ts): applies a scheduled
 * cancellation once due, else says when the state machine should look again.
 */
export const handler = async (input: ScheduledCancel) => checkScheduledCancel(input);
