import { PutRuleCommand, PutTargetsCommand, type EventBridgeClient } from '@aws-sdk/client-eventbridge';

export { motoInstalled, startMoto } from '../../../infra/local/moto.ts';

/**
 * SQS through its JSON protocol (the project has no SQS client): moto picks the service from the
 * credential scope of the Authorization header, and checks no signature.
 */
export const sqsClient =
  (endpoint: string) =>
  async <T = any>(action: string, input: Record<string, unknown>): Promise<T> => {
    const res = await fetch(endpoint, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-amz-json-1.0',
        'x-amz-target': `AmazonSQS.${action}`,
        authorization: 'AWS4-HMAC-SHA256 Credential=local/20260101/us-east-1/sqs/aws4_request, SignedHeaders=host, Signature=0',
      },
      body: JSON.stringify(input),
    });
    const text = await res.text();
    if (!res.ok) throw new Error(`SQS ${action}: ${res.status} ${text}`);
    return (text ? JSON.parse(text) : {}) as T;
  };

/**
 * A rule on `bus` sending the events that match `pattern` to a queue, with the queue policy that
 * lets the rule (EventBridge, `aws:SourceArn`) send to it as on AWS.
 */
export const ruleToQueue = async (
  eventBridge: EventBridgeClient,
  sqs: ReturnType<typeof sqsClient>,
  opts: { bus: string; rule: string; pattern: object; queueUrl: string },
) => {
  const { Attributes } = await sqs<{ Attributes: { QueueArn: string } }>('GetQueueAttributes', {
    QueueUrl: opts.queueUrl,
    AttributeNames: ['QueueArn'],
  });
  const rule = await eventBridge.send(
    new PutRuleCommand({ Name: opts.rule, EventBusName: opts.bus, EventPattern: JSON.stringify(opts.pattern) }),
  );
  await sqs('SetQueueAttributes', {
    QueueUrl: opts.queueUrl,
    Attributes: {
      Policy: JSON.stringify({
        Version: '2012-10-17',
        Statement: [
          {
            Effect: 'Allow',
            Principal: { Service: 'events.amazonaws.com' },
            Action: 'sqs:SendMessage',
            Resource: Attributes.QueueArn,
            Condition: { ArnEquals: { 'aws:SourceArn': rule.RuleArn } },
          },
        ],
      }),
    },
  });
  await eventBridge.send(
    new PutTargetsCommand({ Rule: opts.rule, EventBusName: opts.bus, Targets: [{ Id: 'queue', Arn: Attributes.QueueArn }] }),
  );
  return { ruleArn: rule.RuleArn!, queueArn: Attributes.QueueArn };
};
