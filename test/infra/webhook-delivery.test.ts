import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EVENT_TYPES } from '#lib/outbox/store';
import { routes } from '#lib/api/routes';
import { MAX_VISIBILITY_SECONDS } from '#lib/webhooks/queue';
import { DELIVERY_FUNCTION_TIMEOUT_SECONDS, MAX_ATTEMPTS, RETRY_DELAYS_SECONDS, RETRY_JITTER } from '#lib/webhooks/schedule';
import type { ApiFunction } from '../../infra/constructs/api-function.ts';
import { WEBHOOK_EVENT_PATTERN, WEBHOOK_RULE_NAME } from '../../infra/constructs/webhook-delivery.ts';
import { WEBHOOK_DELIVER_HANDLER, WEBHOOK_FAN_OUT_HANDLER } from '../../infra/paths.ts';
import { DEFAULTS } from '../../infra/stack.ts';
import { alarmsOn, alarmViews, fixtureProjectRoot, idOf, resources, roleGrants, synthStack } from './support/stack.ts';

/** The webhook delivery's AWS resources (infra/constructs/webhook-delivery.ts) in the stack's template. */
let fixture: ReturnType<typeof fixtureProjectRoot>;
let synthesized: ReturnType<typeof synthStack>;
beforeAll(() => {
  fixture = fixtureProjectRoot();
  synthesized = synthStack(fixture.root);
});
afterAll(() => fixture.remove());

const DAY = 24 * 3600;

const ids = () => {
  const { stack } = synthesized;
  const w = stack.webhookDelivery;
  return {
    bus: idOf(stack, stack.eventBus),
    table: idOf(stack, stack.table),
    key: idOf(stack, stack.webhookSecretsKey),
    rule: idOf(stack, w.rule),
    events: idOf(stack, w.eventsQueue),
    eventsDlq: idOf(stack, w.eventsDeadLetterQueue),
    ruleDlq: idOf(stack, w.ruleDeadLetterQueue),
    deliveries: idOf(stack, w.deliveryQueue),
    deliveryDlq: idOf(stack, w.deliveryDeadLetterQueue),
    fanOut: idOf(stack, w.fanOutFunction),
    delivery: idOf(stack, w.deliveryFunction),
  };
};
const arn = (id: string) => ({ 'Fn::GetAtt': [id, 'Arn'] });
const queueProps = (id: string) => resources(synthesized.template, 'AWS::SQS::Queue')[id].Properties;
/** The statements of a queue's resource policy. */
const queuePolicy = (id: string) => {
  const found = Object.values(resources(synthesized.template, 'AWS::SQS::QueuePolicy')).filter(
    (p) => JSON.stringify(p.Properties.Queues) === JSON.stringify([{ Ref: id }]),
  );
  expect(found).toHaveLength(1);
  return found[0].Properties.PolicyDocument.Statement as unknown[];
};

describe('rule', () => {
  it('matches the service source and the known event types (the one pattern the moto test uses too)', () => {
    const { bus } = ids();
    const rules = Object.values(resources(synthesized.template, 'AWS::Events::Rule')).filter(
      (r) => r.Properties.Name === WEBHOOK_RULE_NAME,
    );
    expect(rules).toHaveLength(1);
    expect(rules[0].Properties).toMatchObject({ Name: WEBHOOK_RULE_NAME, EventBusName: { Ref: bus }, State: 'ENABLED' });
    expect(rules[0].Properties.EventPattern).toEqual(WEBHOOK_EVENT_PATTERN);
    // Written out, so a change of the shared object shows here.
    expect(WEBHOOK_EVENT_PATTERN).toEqual({ source: ['revenue-analytics-api'], 'detail-type': [...EVENT_TYPES] });
    expect(EVENT_TYPES).toHaveLength(14);
  });

  it('targets the events queue, retries 24 h, then parks events in its own dead-letter queue', () => {
    const { rule, events, ruleDlq } = ids();
    const { Targets } = resources(synthesized.template, 'AWS::Events::Rule')[rule].Properties;
    expect(Targets).toEqual([
      {
        Id: expect.any(String),
        Arn: arn(events),
        DeadLetterConfig: { Arn: arn(ruleDlq) },
        RetryPolicy: { MaximumRetryAttempts: 185, MaximumEventAgeInSeconds: DAY },
      },
    ]);
    // Only this rule may send to the two queues (besides the TLS-only deny every queue has).
    const fromRule = (queue: string, actions: string[]) => {
      const statements = queuePolicy(queue) as {
        Effect: string;
        Action: string | string[];
        Principal: unknown;
        Resource: unknown;
        Condition: unknown;
      }[];
      const allows = statements.filter((st) => st.Effect === 'Allow');
      expect(allows).toHaveLength(1);
      expect([allows[0].Action].flat().sort()).toEqual(actions);
      expect(allows[0]).toMatchObject({
        Principal: { Service: 'events.amazonaws.com' },
        Resource: arn(queue),
        Condition: { ArnEquals: { 'aws:SourceArn': arn(rule) } },
      });
    };
    fromRule(events, ['sqs:GetQueueAttributes', 'sqs:GetQueueUrl', 'sqs:SendMessage']);
    fromRule(ruleDlq, ['sqs:SendMessage']);
  });
});

describe('queues', () => {
  it('the events queue: 60 s visibility (6 × the fan-out timeout), 14 days, its DLQ after 5 receives', () => {
    const { events, eventsDlq, fanOut } = ids();
    const fnTimeout = resources(synthesized.template, 'AWS::Lambda::Function')[fanOut].Properties.Timeout;
    expect(queueProps(events)).toEqual({
      SqsManagedSseEnabled: true,
      MessageRetentionPeriod: 14 * DAY,
      VisibilityTimeout: 6 * fnTimeout,
      RedrivePolicy: { deadLetterTargetArn: arn(eventsDlq), maxReceiveCount: 5 },
    });
    expect(fnTimeout).toBe(10);
  });

  it('the deliveries queue: 180 s visibility (6 × the delivery timeout), 4 days (longer than the schedule), its DLQ after 20 receives', () => {
    const { deliveries, deliveryDlq, delivery } = ids();
    const fnTimeout = resources(synthesized.template, 'AWS::Lambda::Function')[delivery].Properties.Timeout;
    expect(fnTimeout).toBe(DELIVERY_FUNCTION_TIMEOUT_SECONDS);
    expect(queueProps(deliveries)).toEqual({
      SqsManagedSseEnabled: true,
      MessageRetentionPeriod: 4 * DAY,
      VisibilityTimeout: 6 * DELIVERY_FUNCTION_TIMEOUT_SECONDS,
      RedrivePolicy: { deadLetterTargetArn: arn(deliveryDlq), maxReceiveCount: 20 },
    });
    // A message is kept from its first send: the longest schedule (every pause +10 %) and every
    // attempt at the function's timeout must end well inside the retention.
    const longest = RETRY_DELAYS_SECONDS.reduce((n, d) => n + d * (1 + RETRY_JITTER), 0) + MAX_ATTEMPTS * DELIVERY_FUNCTION_TIMEOUT_SECONDS;
    expect(longest / 3600).toBeCloseTo(30.4, 0);
    expect(4 * DAY - longest).toBeGreaterThan(DAY);
    // Each pause fits one ChangeMessageVisibility; the redrive only counts crashes beyond the attempts.
    expect(Math.max(...RETRY_DELAYS_SECONDS) * (1 + RETRY_JITTER)).toBeLessThanOrEqual(MAX_VISIBILITY_SECONDS);
    expect(MAX_ATTEMPTS).toBe(9);
    expect(20).toBeGreaterThan(2 * MAX_ATTEMPTS);
  });

  it('dead-letter queues keep 14 days; every queue is SQS-encrypted and TLS-only', () => {
    const { events, eventsDlq, ruleDlq, deliveries, deliveryDlq } = ids();
    for (const dlq of [eventsDlq, ruleDlq, deliveryDlq]) {
      expect(queueProps(dlq)).toEqual({ SqsManagedSseEnabled: true, MessageRetentionPeriod: 14 * DAY });
    }
    for (const queue of [events, eventsDlq, ruleDlq, deliveries, deliveryDlq]) {
      expect(queuePolicy(queue)).toContainEqual({
        Effect: 'Deny',
        Action: 'sqs:*',
        Condition: { Bool: { 'aws:SecureTransport': 'false' } },
        Principal: { AWS: '*' },
        Resource: arn(queue),
      });
    }
  });
});

describe('consumers', () => {
  const mappingOf = (fnId: string) => {
    const found = Object.values(resources(synthesized.template, 'AWS::Lambda::EventSourceMapping')).filter(
      (m) => m.Properties.FunctionName?.Ref === fnId,
    );
    expect(found).toHaveLength(1);
    return found[0].Properties;
  };

  it('each function consumes its queue in batches of 10 with partial batch failures, at most 5 / 20 invocations at once', () => {
    const { fanOut, delivery, events, deliveries } = ids();
    expect(mappingOf(fanOut)).toEqual({
      FunctionName: { Ref: fanOut },
      EventSourceArn: arn(events),
      BatchSize: 10,
      FunctionResponseTypes: ['ReportBatchItemFailures'],
      ScalingConfig: { MaximumConcurrency: 5 },
    });
    expect(mappingOf(delivery)).toEqual({
      FunctionName: { Ref: delivery },
      EventSourceArn: arn(deliveries),
      BatchSize: 10,
      FunctionResponseTypes: ['ReportBatchItemFailures'],
      ScalingConfig: { MaximumConcurrency: 20 },
    });
  });

  it('run the handlers with the project runtime, their timeouts and exactly their configuration', () => {
    const { fanOut, delivery, deliveries, deliveryDlq, table, key } = ids();
    const fns = resources(synthesized.template, 'AWS::Lambda::Function');
    const common = {
      STAGE: DEFAULTS.stage,
      LOG_LEVEL: 'INFO',
      POWERTOOLS_SERVICE_NAME: 'revenue-analytics-api',
      POWERTOOLS_METRICS_NAMESPACE: synthesized.stack.stackName,
      NODE_OPTIONS: '--enable-source-maps',
      TABLE_NAME: { Ref: table },
    };
    expect(fns[fanOut].Properties).toMatchObject({
      Runtime: 'nodejs22.x',
      Architectures: ['arm64'],
      Timeout: 10,
      TracingConfig: { Mode: 'Active' },
      Handler: 'index.handler',
    });
    expect(fns[fanOut].Properties.Description).toContain(WEBHOOK_FAN_OUT_HANDLER);
    expect(fns[fanOut].Properties.Environment.Variables).toEqual({ ...common, WEBHOOK_DELIVERY_QUEUE_URL: { Ref: deliveries } });
    expect(fns[delivery].Properties).toMatchObject({
      Runtime: 'nodejs22.x',
      Architectures: ['arm64'],
      Timeout: 30,
      TracingConfig: { Mode: 'Active' },
      Handler: 'index.handler',
    });
    expect(fns[delivery].Properties.Description).toContain(WEBHOOK_DELIVER_HANDLER);
    expect(fns[delivery].Properties.Environment.Variables).toEqual({
      ...common,
      WEBHOOK_DELIVERY_QUEUE_URL: { Ref: deliveries },
      WEBHOOK_DELIVERY_DLQ_URL: { Ref: deliveryDlq },
      WEBHOOK_KMS_KEY_ID: arn(key),
    });
  });
});

describe('least privilege', () => {
  /** A function's grants as `action on <name>`, sorted, so a failure reads as a policy. */
  const grantsOf = (fn: ApiFunction) => {
    const i = ids();
    const { stack, template } = synthesized;
    const logGroup = resources(template, 'AWS::Lambda::Function')[idOf(stack, fn)].Properties.LoggingConfig.LogGroup.Ref;
    const names: [string, unknown][] = [
      ['table', arn(i.table)],
      ['table key', arn(idOf(stack, stack.table.encryptionKey!))],
      ['own log group', arn(logGroup)],
      ['index gsi1', { 'Fn::Join': ['', [arn(i.table), '/index/gsi1']] }],
      ['key', arn(i.key)],
      ['events queue', arn(i.events)],
      ['deliveries queue', arn(i.deliveries)],
      ['delivery dlq', arn(i.deliveryDlq)],
      ['*', '*'],
    ];
    const named = (resource: unknown) =>
      names.find(([, r]) => JSON.stringify(r) === JSON.stringify(resource))?.[0] ?? JSON.stringify(resource);
    const viaDynamoDb = {
      StringEquals: { 'kms:ViaService': { 'Fn::Join': ['', ['dynamodb.', { Ref: 'AWS::Region' }, '.amazonaws.com']] } },
    };
    return roleGrants(stack, template, fn)
      .map((g) => {
        const on = `${g.action} on ${named(g.resource)}`;
        if (g.condition === undefined) return on;
        const webhookItems = { 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': [`M#mer_${'?'.repeat(20)}#WEBHOOK#*`] } };
        if (JSON.stringify(g.condition) === JSON.stringify(webhookItems)) return `${on} webhook items`;
        // The request pipeline's updates (the route functions; asserted in test/infra/stack.test.ts).
        const keyed = (g.condition as Record<string, Record<string, string[]>>)['ForAllValues:StringLike']?.['dynamodb:LeadingKeys'];
        if (keyed) return `${on} ${keyed.join(',')}`;
        expect(g.condition).toEqual(viaDynamoDb);
        return `${on} via DynamoDB`;
      })
      .sort();
  };
  // What each consumer may do is proven by use: every request its code sends in the tests is
  // checked against its policy (test/support/iam-check.ts). These are the ceilings on top.
  const TABLE_WRITES = /^dynamodb:(PutItem|UpdateItem|DeleteItem|ConditionCheckItem|BatchWriteItem) /;
  it('fan-out: no write to the table; its table reads keyed to two partitions; SendMessage to the deliveries queue only', () => {
    const grants = grantsOf(synthesized.stack.webhookDelivery.fanOutFunction);
    expect(grants.filter((g) => TABLE_WRITES.test(g))).toEqual([]);
    expect(grants.filter((g) => /^dynamodb:\w+ on table$/.test(g))).toEqual([]);
    expect(grants.filter((g) => g.startsWith('sqs:SendMessage'))).toEqual(['sqs:SendMessage on deliveries queue']);
  });

  it('delivery: writes on webhook items only, no Query, kms:Decrypt only, SendMessage to its DLQ only', () => {
    const grants = grantsOf(synthesized.stack.webhookDelivery.deliveryFunction);
    // It calls merchant-chosen URLs: the endpoint's own partitions (`M#<m>#WEBHOOK#<id>…`) and its list entry, nothing else.
    for (const g of grants.filter((g) => TABLE_WRITES.test(g))) expect(g).toMatch(/ on table (webhook items|M#mer_\?{20}#WEBHOOK_LIST)$/);
    expect(grants.filter((g) => g.includes('Query') || (g.includes('GetItem on') && !g.includes('BatchGetItem')))).toEqual([]);
    expect(grants.filter((g) => g.startsWith('kms:') && !g.includes('table key'))).toEqual(['kms:Decrypt on key']);
    expect(grants.filter((g) => g.startsWith('sqs:SendMessage'))).toEqual(['sqs:SendMessage on delivery dlq']);
  });

  it('the consumers have no managed policy (their logs grant is their own log group, above)', () => {
    const roles = resources(synthesized.template, 'AWS::IAM::Role');
    for (const fn of [synthesized.stack.webhookDelivery.fanOutFunction, synthesized.stack.webhookDelivery.deliveryFunction]) {
      expect(roles[idOf(synthesized.stack, fn.role!)].Properties.ManagedPolicyArns).toBeUndefined();
    }
  });

  it('the test and retry routes: kms:Decrypt only, the secrets key id, and a 30 s timeout', () => {
    const { stack, template } = synthesized;
    const fns = resources(template, 'AWS::Lambda::Function');
    for (const name of ['webhookEndpointsTest', 'webhookEndpointsRetryDelivery'] as const) {
      const fn = stack.functions[name];
      expect(routes[name].timeoutSeconds).toBe(30);
      expect(fns[idOf(stack, fn)].Properties.Timeout).toBe(30);
      expect(fns[idOf(stack, fn)].Properties.Environment.Variables.WEBHOOK_KMS_KEY_ID).toEqual(arn(ids().key));
      expect(grantsOf(fn).filter((g) => g.startsWith('kms:') && g.endsWith(' on key'))).toEqual(['kms:Decrypt on key']);
    }
    for (const name of ['webhookEndpointsCreate', 'webhookEndpointsRotateSecret'] as const) {
      expect(grantsOf(stack.functions[name]).filter((g) => g.startsWith('kms:') && g.endsWith(' on key'))).toEqual(['kms:Encrypt on key']);
      expect(fns[idOf(stack, stack.functions[name])].Properties.Timeout).toBe(10);
    }
  });
});

describe('alarms and outputs', () => {
  /** Every alarm notifies the stack's alarm topic (test/infra/operations.test.ts). */
  const topic = () => ({ Ref: idOf(synthesized.stack, synthesized.stack.monitoring.alarmTopic) });
  const queueDepth = () =>
    expect.objectContaining({
      comparison: 'GreaterThanThreshold',
      threshold: 0,
      datapoints: 1,
      evaluationPeriods: 1,
      actions: [topic()],
      metrics: [expect.objectContaining({ namespace: 'AWS/SQS', stat: 'Maximum', period: 60 })],
    });

  it('one message in any webhook dead-letter queue (events, rule, deliveries) alarms', () => {
    const { eventsDlq, ruleDlq, deliveryDlq } = ids();
    for (const dlq of [eventsDlq, ruleDlq, deliveryDlq]) {
      expect(alarmsOn(synthesized.template, 'ApproximateNumberOfMessagesVisible', { 'Fn::GetAtt': [dlq, 'QueueName'] })).toEqual([
        queueDepth(),
      ]);
    }
  });

  it('an event waiting more than 5 minutes for the fan-out alarms', () => {
    const { events } = ids();
    expect(alarmsOn(synthesized.template, 'ApproximateAgeOfOldestMessage', { 'Fn::GetAtt': [events, 'QueueName'] })).toEqual([
      expect.objectContaining({ comparison: 'GreaterThanThreshold', threshold: 300, actions: [topic()] }),
    ]);
  });

  it("the rule's failed invocations (and events it could not park) alarm, on the custom bus's rule dimensions", () => {
    const { bus } = ids();
    const rule = alarmViews(synthesized.template).filter((a) => a.metrics.some((m) => m.namespace === 'AWS/Events'));
    expect(rule).toHaveLength(1);
    expect(rule[0]).toMatchObject({ comparison: 'GreaterThanOrEqualToThreshold', threshold: 1, evaluationPeriods: 1, actions: [topic()] });
    expect(rule[0].expression).toBe('FILL(failed, 0) + FILL(lost, 0)');
    const dims = [
      { Name: 'EventBusName', Value: { Ref: bus } },
      { Name: 'RuleName', Value: WEBHOOK_RULE_NAME },
    ];
    expect(rule[0].metrics.map((m) => [m.id, m.metricName, m.stat, m.dimensions])).toEqual([
      ['failed', 'FailedInvocations', 'Sum', dims],
      ['lost', 'InvocationsFailedToBeSentToDlq', 'Sum', dims],
    ]);
  });

  it('outputs every webhook queue URL', () => {
    const { events, eventsDlq, ruleDlq, deliveries, deliveryDlq } = ids();
    const outputs = synthesized.template.findOutputs('*');
    expect({
      WebhookEventsQueueUrl: outputs.WebhookEventsQueueUrl.Value,
      WebhookEventsDeadLetterQueueUrl: outputs.WebhookEventsDeadLetterQueueUrl.Value,
      WebhookRuleDeadLetterQueueUrl: outputs.WebhookRuleDeadLetterQueueUrl.Value,
      WebhookDeliveryQueueUrl: outputs.WebhookDeliveryQueueUrl.Value,
      WebhookDeliveryDeadLetterQueueUrl: outputs.WebhookDeliveryDeadLetterQueueUrl.Value,
    }).toEqual({
      WebhookEventsQueueUrl: { Ref: events },
      WebhookEventsDeadLetterQueueUrl: { Ref: eventsDlq },
      WebhookRuleDeadLetterQueueUrl: { Ref: ruleDlq },
      WebhookDeliveryQueueUrl: { Ref: deliveries },
      WebhookDeliveryDeadLetterQueueUrl: { Ref: deliveryDlq },
    });
  });
});
