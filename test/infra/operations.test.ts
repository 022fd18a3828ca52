import { App } from 'aws-cdk-lib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiFunction, TABLE_KEY_ACTIONS } from '../../infra/constructs/api-function.ts';
import { ALARM_THRESHOLDS, MAX_METRICS_PER_ALARM } from '../../infra/constructs/monitoring.ts';
import { ApiStack, DEFAULTS } from '../../infra/stack.ts';
import { routeGroupOf } from '../../infra/constructs/route-group.ts';
import { routeList } from '#lib/api/routes';
import { alarmViews, fixtureProjectRoot, idOf, resources, roleGrants, synthStack, type Resource } from './support/stack.ts';

/**
 * The production items in the template (docs/operations.md, docs/deployment-and-protection.md): the table's protection and key, stages, least
 * privilege (logs, X-Ray, the table key), tracing and metrics configuration, alarms on one topic,
 * the dashboard, and the concurrency policy. Two synths: prod (defaults) and dev.
 */
let fixture: ReturnType<typeof fixtureProjectRoot>;
let prod: ReturnType<typeof synthStack>;
let dev: ReturnType<typeof synthStack>;
beforeAll(() => {
  fixture = fixtureProjectRoot();
  prod = synthStack(fixture.root);
  dev = synthStack(fixture.root, { stage: 'dev' });
});
afterAll(() => fixture.remove());

const arn = (id: string) => ({ 'Fn::GetAtt': [id, 'Arn'] });
const only = (s: typeof prod, type: string) => {
  const found = Object.entries(resources(s.template, type));
  expect(found, type).toHaveLength(1);
  return { id: found[0][0], ...found[0][1] };
};
/** Every Lambda function of the stack (routes, 404, relay, webhook consumers). */
const allFunctions = (s: typeof prod) => s.stack.node.findAll().filter((c): c is ApiFunction => c instanceof ApiFunction);
const statements = (s: typeof prod) =>
  Object.values(resources(s.template, 'AWS::IAM::Policy')).flatMap(
    (p) => p.Properties.PolicyDocument.Statement as { Effect: string; Action: string | string[]; Resource: unknown; Condition?: unknown }[],
  );

describe('table', () => {
  it('prod: encrypted under its own rotated customer-managed key; PITR, TTL, stream; deletion-protected and retained with its key', () => {
    const table = only(prod, 'AWS::DynamoDB::Table');
    const keyId = idOf(prod.stack, prod.stack.table.encryptionKey!);
    expect(table.Properties).toMatchObject({
      SSESpecification: { SSEEnabled: true, SSEType: 'KMS', KMSMasterKeyId: arn(keyId) },
      DeletionProtectionEnabled: true,
      PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
      TimeToLiveSpecification: { AttributeName: 'expires_at', Enabled: true },
      StreamSpecification: { StreamViewType: 'NEW_IMAGE' },
    });
    expect(table).toMatchObject({ DeletionPolicy: 'Retain', UpdateReplacePolicy: 'Retain' });
    const key = resources(prod.template, 'AWS::KMS::Key')[keyId];
    expect(key.Properties.EnableKeyRotation).toBe(true);
    expect(key.DeletionPolicy).toBe('Retain');
  });

  it('other stages: deleted with the stack, no deletion protection, unless retainTable=true; prod refuses retainTable=false', () => {
    const table = only(dev, 'AWS::DynamoDB::Table');
    expect(table.DeletionPolicy).toBe('Delete');
    expect(table.Properties.DeletionProtectionEnabled).toBe(false);
    expect(resources(dev.template, 'AWS::KMS::Key')[idOf(dev.stack, dev.stack.table.encryptionKey!)].DeletionPolicy).toBe('Delete');
    // Refused before anything is built.
    expect(() => new ApiStack(new App(), 'Refused', { projectRoot: fixture.root, retainTable: false })).toThrow(/prod/);
    expect(() => new ApiStack(new App(), 'Refused', { projectRoot: fixture.root, stage: 'prod', retainTable: false })).toThrow(/prod/);
  });
});

describe('stages', () => {
  it('prod has termination protection, other stages not; names carry the stage', () => {
    expect(prod.stack.terminationProtection).toBe(true);
    expect(dev.stack.terminationProtection).toBe(false);
    for (const [s, stage] of [
      [prod, 'prod'],
      [dev, 'dev'],
    ] as const) {
      expect(only(s, 'AWS::Events::EventBus').Properties.Name).toBe(`revenue-analytics-api-${stage}`);
      expect(only(s, 'AWS::SNS::Topic').Properties.TopicName).toBe(`revenue-analytics-api-${stage}-alarms`);
      expect(only(s, 'AWS::CloudWatch::Dashboard').Properties.DashboardName).toBe(`revenue-analytics-api-${stage}`);
      expect(only(s, 'AWS::Cognito::UserPool').Properties.UserPoolName).toBe(`revenue-analytics-backoffice-${stage}`);
    }
  });
});

describe('least privilege', () => {
  it('no role has a managed policy; each function writes logs to its own log group only', () => {
    for (const [id, role] of Object.entries(resources(prod.template, 'AWS::IAM::Role')))
      expect(role.Properties.ManagedPolicyArns, id).toBeUndefined();
    const fns = allFunctions(prod);
    expect(fns).toHaveLength(Object.keys(resources(prod.template, 'AWS::Lambda::Function')).length);
    const lambdas = resources(prod.template, 'AWS::Lambda::Function');
    for (const fn of fns) {
      const ownGroup = lambdas[idOf(prod.stack, fn)].Properties.LoggingConfig.LogGroup.Ref;
      const logs = roleGrants(prod.stack, prod.template, fn).filter((g) => g.action.startsWith('logs:'));
      expect(logs, fn.node.path).toEqual([
        { action: 'logs:CreateLogStream', resource: arn(ownGroup), condition: undefined },
        { action: 'logs:PutLogEvents', resource: arn(ownGroup), condition: undefined },
      ]);
    }
  });

  it("the only wildcard resource is X-Ray's (no resource-level permissions), and no action is a wildcard", () => {
    const all = statements(prod);
    for (const s of all) expect(s.Effect).toBe('Allow');
    const wildcard = all.filter((s) => [s.Resource].flat().some((r) => typeof r === 'string' && r.includes('*')));
    // The state machine's tracing also reads sampling rules.
    expect(new Set(wildcard.flatMap((s) => [s.Action].flat()))).toEqual(
      new Set(['xray:PutTraceSegments', 'xray:PutTelemetryRecords', 'xray:GetSamplingRules', 'xray:GetSamplingTargets']),
    );
    expect(wildcard.every((s) => JSON.stringify(s.Resource) === '"*"')).toBe(true);
    // Every function traces, and so does the cancellation scheduler's state machine: each has that statement.
    expect(wildcard).toHaveLength(allFunctions(prod).length + 1);
    expect(all.flatMap((s) => [s.Action].flat()).filter((a) => a.includes('*'))).toEqual([]);
  });

  it('the table key: through DynamoDB only; decrypt for every table user, encrypt only for those that write', () => {
    const keyArn = arn(idOf(prod.stack, prod.stack.table.encryptionKey!));
    const viaDynamoDb = {
      StringEquals: { 'kms:ViaService': { 'Fn::Join': ['', ['dynamodb.', { Ref: 'AWS::Region' }, '.amazonaws.com']] } },
    };
    const writes = new Set(['dynamodb:PutItem', 'dynamodb:UpdateItem', 'dynamodb:DeleteItem']);
    let writers = 0;
    for (const fn of allFunctions(prod)) {
      const grants = roleGrants(prod.stack, prod.template, fn);
      const keyGrants = grants.filter((g) => JSON.stringify(g.resource) === JSON.stringify(keyArn));
      for (const g of keyGrants) expect(g.condition).toEqual(viaDynamoDb);
      const writer = grants.some((g) => writes.has(g.action));
      writers += writer ? 1 : 0;
      const expected = [...TABLE_KEY_ACTIONS.read, ...(writer ? TABLE_KEY_ACTIONS.write : [])].sort();
      expect(keyGrants.map((g) => g.action).sort(), fn.node.path).toEqual(expected);
    }
    // Readers exist (the relay, the fan-out), and so do writers.
    expect(writers).toBeGreaterThan(0);
    expect(writers).toBeLessThan(allFunctions(prod).length);
  });
});

describe('observability', () => {
  it('every function traces actively and names the Powertools service and metrics namespace (the stack)', () => {
    // The stack's own functions (CDK's custom-resource handlers, such as the dashboard site's deployment, are not ours).
    const lambdas = Object.fromEntries(
      allFunctions(prod).map((fn) => [idOf(prod.stack, fn), resources(prod.template, 'AWS::Lambda::Function')[idOf(prod.stack, fn)]]),
    );
    for (const [id, fn] of Object.entries(lambdas)) {
      expect(fn.Properties.TracingConfig, id).toEqual({ Mode: 'Active' });
      expect(fn.Properties.Environment.Variables, id).toMatchObject({
        POWERTOOLS_SERVICE_NAME: 'revenue-analytics-api',
        POWERTOOLS_METRICS_NAMESPACE: prod.stack.stackName,
      });
    }
    for (const fn of allFunctions(dev)) {
      expect(
        resources(dev.template, 'AWS::Lambda::Function')[idOf(dev.stack, fn)].Properties.Environment.Variables.POWERTOOLS_METRICS_NAMESPACE,
      ).toBe(dev.stack.stackName);
    }
  });

  it('every alarm notifies the one alarm topic, which is KMS-encrypted, TLS-only and writable by CloudWatch', () => {
    const topic = only(prod, 'AWS::SNS::Topic');
    const keyId = (topic.Properties.KmsMasterKeyId as { 'Fn::GetAtt': [string, string] })['Fn::GetAtt'][0];
    const key = resources(prod.template, 'AWS::KMS::Key')[keyId];
    expect(key.Properties.EnableKeyRotation).toBe(true);
    expect(key.Properties.KeyPolicy.Statement).toContainEqual(
      expect.objectContaining({
        Effect: 'Allow',
        Principal: { Service: 'cloudwatch.amazonaws.com' },
        Action: ['kms:Decrypt', 'kms:GenerateDataKey'],
      }),
    );
    const policy = only(prod, 'AWS::SNS::TopicPolicy');
    expect(policy.Properties.PolicyDocument.Statement).toContainEqual(
      expect.objectContaining({ Effect: 'Deny', Condition: { Bool: { 'aws:SecureTransport': 'false' } } }),
    );
    const alarms = alarmViews(prod.template);
    expect(alarms.length).toBeGreaterThan(0);
    for (const a of alarms) expect(a.actions, a.name).toEqual([{ Ref: topic.id }]);
    expect(prod.template.findOutputs('AlarmTopicArn').AlarmTopicArn.Value).toEqual({ Ref: topic.id });
  });

  it('every function alarms on errors and on throttles, per minute: the workers each, route functions in groups of at most 10', () => {
    const alarms = alarmViews(prod.template);
    const stack = prod.stack;
    const workers = new Set<ApiFunction>([
      stack.outboxRelay.function,
      stack.outboxRelay.sweeper,
      stack.pendingMovesApplier.function,
      stack.recountWorker.function,
      stack.webhookDelivery.fanOutFunction,
      stack.webhookDelivery.deliveryFunction,
      stack.cancelScheduler.checkFunction,
    ]);
    for (const fn of allFunctions(prod)) {
      const dimension = JSON.stringify([{ Name: 'FunctionName', Value: { Ref: idOf(stack, fn) } }]);
      for (const metricName of ['Errors', 'Throttles']) {
        const on = alarms.filter((a) =>
          a.metrics.some((m) => m.namespace === 'AWS/Lambda' && m.metricName === metricName && JSON.stringify(m.dimensions) === dimension),
        );
        expect(on, `${metricName} ${fn.node.path}`).toHaveLength(1);
        expect(on[0]).toMatchObject({ comparison: 'GreaterThanThreshold', threshold: 0 });
        for (const m of on[0].metrics) expect(m).toMatchObject({ namespace: 'AWS/Lambda', metricName, stat: 'Sum', period: 60 });
        if (workers.has(fn)) {
          expect(on[0].metrics).toHaveLength(1);
        } else {
          expect(on[0].metrics.length).toBeLessThanOrEqual(MAX_METRICS_PER_ALARM);
          // Missing data (no invocation) counts as 0, and the description names the function.
          expect(on[0].expression).toBe(on[0].metrics.map((m) => `FILL(${m.id}, 0)`).join(' + '));
          expect(on[0].description).toContain(fn.handlerPath);
        }
      }
    }
    // Alarms stay few (42 today: per worker function, per queue, per stream consumer's lag but the recount worker's, route functions in groups of 10): the root template keeps head-room for more routes.
    expect(alarms.length).toBeLessThanOrEqual(44);
  });

  it("every template keeps head-room under CloudFormation's limits, today and with twice the routes", () => {
    // CloudFormation's limits per template: 500 resources, 200 parameters, 200 outputs.
    const counts = (templates: typeof prod.templates) =>
      Object.entries(templates).map(([name, t]) => ({
        name,
        resources: Object.keys(t.Resources).length,
        parameters: Object.keys(t.Parameters ?? {}).length,
        outputs: Object.keys(t.Outputs ?? {}).length,
      }));
    const today = counts(prod.templates);
    // The root, one nested stack per route family, and the edge stack (us-east-1: the web ACL).
    expect(today.length).toBe(1 + new Set(prod.stack.routeTable.map(routeGroupOf)).size + 1);
    for (const t of today) expect(t.resources, t.name).toBeLessThanOrEqual(250);
    // Each route family twice as large (a copy of every route, in its own family's stack).
    const routes = [...routeList, ...routeList.map((r) => ({ ...r, name: `${r.name}Copy`, path: `${r.path}/copy` }))];
    const doubled = synthStack(fixture.root, { routes });
    const twice = counts(doubled.templates);
    expect(twice.length).toBe(today.length);
    for (const t of twice) {
      expect(t.resources, t.name).toBeLessThanOrEqual(450);
      expect(t.parameters, t.name).toBeLessThanOrEqual(100);
      expect(t.outputs, t.name).toBeLessThanOrEqual(100);
    }
    // The figures, for the record (docs/deployment-and-protection.md).
    console.info(JSON.stringify({ today, twice }));
  }, 180_000);

  it('the API alarms when more than 1 % of its answers in 5 minutes are 5xx', () => {
    const apiId = idOf(prod.stack, prod.stack.api);
    const on = alarmViews(prod.template).filter((a) => a.metrics.some((m) => m.namespace === 'AWS/ApiGateway'));
    expect(on).toEqual([
      expect.objectContaining({
        comparison: 'GreaterThanThreshold',
        threshold: ALARM_THRESHOLDS.api5xxRate,
        metrics: [
          {
            id: 'm1',
            namespace: 'AWS/ApiGateway',
            metricName: '5xx',
            // The 5xx metric is 0 or 1 per request: its average is the share of 5xx answers.
            stat: 'Average',
            period: 300,
            dimensions: [
              { Name: 'ApiId', Value: { Ref: apiId } },
              { Name: 'Stage', Value: '$default' },
            ],
          },
        ],
      }),
    ]);
    expect(ALARM_THRESHOLDS.api5xxRate).toBe(0.01);
  });

  it('every dead-letter queue alarms at one message; the table alarms on throttled requests', () => {
    const relay = prod.stack.outboxRelay;
    const w = prod.stack.webhookDelivery;
    const alarms = alarmViews(prod.template);
    const applier = prod.stack.pendingMovesApplier;
    for (const dlq of [
      relay.deadLetterQueue,
      applier.deadLetterQueue,
      prod.stack.recountWorker.deadLetterQueue,
      w.eventsDeadLetterQueue,
      w.ruleDeadLetterQueue,
      w.deliveryDeadLetterQueue,
    ]) {
      const queueName = { 'Fn::GetAtt': [idOf(prod.stack, dlq), 'QueueName'] };
      const depth = alarms.filter((a) =>
        a.metrics.some(
          (m) => m.metricName === 'ApproximateNumberOfMessagesVisible' && JSON.stringify(m.dimensions).includes(JSON.stringify(queueName)),
        ),
      );
      expect(depth, dlq.node.path).toEqual([expect.objectContaining({ comparison: 'GreaterThanThreshold', threshold: 0 })]);
    }
    const tableRef = { Ref: idOf(prod.stack, prod.stack.table) };
    for (const metricName of ['ReadThrottleEvents', 'WriteThrottleEvents']) {
      expect(
        alarms.filter((a) =>
          a.metrics.some((m) => m.metricName === metricName && JSON.stringify(m.dimensions).includes(JSON.stringify(tableRef))),
        ),
      ).toHaveLength(1);
    }
  });

  it("one dashboard: the API, the table, the queues, each function, and a search over the functions' own metrics", () => {
    // The body is a Fn::Join of JSON text and references: references become <Ref:Id> markers.
    const parts = only(prod, 'AWS::CloudWatch::Dashboard').Properties.DashboardBody['Fn::Join'][1] as (string | { Ref: string })[];
    const text = parts.map((p) => (typeof p === 'string' ? p : `<Ref:${p.Ref}>`)).join('');
    const widgets = (JSON.parse(text) as { widgets: { properties: { metrics?: unknown[][] } }[] }).widgets;
    const metrics = widgets.flatMap((w) => w.properties.metrics ?? []).flat();
    const expressions = metrics.flatMap((m) =>
      m && typeof m === 'object' && 'expression' in m ? [(m as { expression: string }).expression] : [],
    );
    expect(expressions).toContain(`SEARCH('{"${prod.stack.stackName}","service"} "service"="revenue-analytics-api" ', 'Sum', 60)`);
    const names = new Set(metrics.filter((m): m is string => typeof m === 'string'));
    for (const fn of allFunctions(prod)) expect(names.has(`<Ref:${idOf(prod.stack, fn)}>`), fn.node.path).toBe(true);
    for (const namespace of ['AWS/ApiGateway', 'AWS/DynamoDB', 'AWS/SQS', 'AWS/Events', 'AWS/Lambda'])
      expect(names.has(namespace), namespace).toBe(true);
    // Iterator age is shown for the stream consumers only: the outbox relay, the pending-moves applier and the recount worker.
    const iterator = widgets.filter((w) => (w.properties.metrics ?? []).some((m) => m.includes('IteratorAge')));
    expect(iterator.map((w) => w.properties.metrics!.flat().filter((m) => typeof m === 'string' && m.startsWith('<Ref:')))).toEqual([
      [`<Ref:${idOf(prod.stack, prod.stack.outboxRelay.function)}>`],
      [`<Ref:${idOf(prod.stack, prod.stack.pendingMovesApplier.function)}>`],
      [`<Ref:${idOf(prod.stack, prod.stack.recountWorker.function)}>`],
    ]);
  });
});

describe('concurrency and throttling', () => {
  it('no function reserves concurrency (docs/operations.md: the policy); the stage throttle is the backstop', () => {
    for (const [id, fn] of Object.entries(resources(prod.template, 'AWS::Lambda::Function') as Record<string, Resource>)) {
      expect(fn.Properties.ReservedConcurrentExecutions, id).toBeUndefined();
    }
    const stage = only(prod, 'AWS::ApiGatewayV2::Stage').Properties.DefaultRouteSettings;
    // Above what one merchant may send (3,600 an hour = 1/s), so it only ever limits the sum of merchants.
    expect(stage.ThrottlingRateLimit).toBeGreaterThanOrEqual(DEFAULTS.rateLimitPerHour / 3600);
    expect(stage.ThrottlingBurstLimit).toBeGreaterThanOrEqual(stage.ThrottlingRateLimit);
    const refused = (throttle: { rateLimit: number; burstLimit: number }, rateLimitPerHour?: number) => () =>
      new ApiStack(new App(), 'Refused', { projectRoot: fixture.root, stage: 'dev', throttle, rateLimitPerHour });
    expect(refused({ rateLimit: 1, burstLimit: 1 }, 7200)).toThrow(/stage throttling/);
    expect(refused({ rateLimit: 10, burstLimit: 5 })).toThrow(/stage throttling/);
  });
});
