/**
 * Stands in for `@smithy/core/event-streams` in function bundles: the SDK loads it only for
 * operations with event-stream members, and no operation this project calls (DynamoDB, SQS, KMS,
 * EventBridge) has one. Reaching it anyway is a loud error, not a silent one.
 */
const absent = (): never => {
  throw new Error('@smithy/core/event-streams is not bundled (infra/bundles/options.ts)');
};
export const eventStreamSerdeProvider = absent;
export class EventStreamSerde {
  constructor() {
    absent();
  }
}
