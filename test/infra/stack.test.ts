import { type Stack, App } from 'aws-cdk-lib';
import type { Template } from 'aws-cdk-lib/assertions';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { keys, RATE_PREFIX } from '#lib/db/keys';
import { createTableInput, TTL_ATTRIBUTE } from '#lib/db/table';
import { authKindOf, BASE_PATH, FUNCTION_TIMEOUT_SECONDS } from '#lib/http/route';
import { NOT_FOUND_HANDLER, routeList, type RouteName } from '#lib/api/routes';
import { type ApiStack, DEFAULTS, propsFromContext, stackNameFor, type ApiStackProps } from '../../infra/stack.ts';
import type { ApiFunction } from '../../infra/constructs/api-function.ts';
import { OUTBOX_RELAY_HANDLER, OUTBOX_SWEEPER_HANDLER, PENDING_MOVES_APPLIER_HANDLER, RECOUNT_WORKER_HANDLER } from '../../infra/paths.ts';
import { SWEEP_FUNCTION_TIMEOUT_SECONDS, SWEEP_INTERVAL_MINUTES } from '#lib/outbox/sweeper';
import { isOutboxInsert } from '#lib/outbox/relay';
import { isPendingMovesInsert } from '#lib/metrics/pending-applier';
import { isRecountJobInsert, RECOUNT_JOB_ENTITY } from '#lib/metrics/recount';
import { aggregateKey, pendingHome } from '#lib/metrics/store';
import { PENDING_MOVES_ENTITY } from '#lib/db/writes';
import { outboxInsert, outboxItem, streamRecord } from '../outbox/support/records.ts';
import { alarmsOn, fixtureProjectRoot, logicalId, resources, roleGrants, synthStack, type Grant, type Resource } from './support/stack.ts';

let fixture: ReturnType<typeof fixtureProjectRoot>;
beforeAll(() => {
  fixture = fixtureProjectRoot();
});
afterAll(() => fixture.remove());

/** Without CDK's CloudFormation validation: test/infra/checks.test.ts lints the template (cfn-lint). */
const synth = (props: ApiStackProps = {}) => synthStack(fixture.root, props);

let defaults: ReturnType<typeof synth>;
/** Every prop set away from its default, in one synth. */
let variant: ReturnType<typeof synth>;
beforeAll(() => {
  defaults = synth({});
  variant = synth({
    rateLimitPerHour: 120,
    unauthenticatedRateLimitPerMinute: 3,
    logLevel: 'DEBUG',
    stage: 'dev',
    throttle: { rateLimit: 5, burstLimit: 7 },
    retainTable: false,
    localDynamo: { endpoint: 'http://host.docker.internal:8000', tableName: 'local-table' },
  });
});

/** The functions no route reaches: the outbox relay and sweeper, the pending-moves applier, the recount worker and the webhook consumers (test/infra/webhook-delivery.test.ts). */
const workerIds = (stack: ApiStack) =>
  new Set(
    [
      stack.outboxRelay.function,
      stack.outboxRelay.sweeper,
      stack.pendingMovesApplier.function,
      stack.recountWorker.function,
      stack.webhookDelivery.fanOutFunction,
      stack.webhookDelivery.deliveryFunction,
      stack.cancelScheduler.checkFunction,
    ].map((fn) => logicalId(stack, fn)),
  );
/** CDK's own custom-resource handlers (the dashboard's upload, its bucket's emptying on delete). */
const isCdkProvider = (id: string) => /^Custom(S3AutoDeleteObjects|CDKBucketDeployment)/.test(id);
/** The API's functions (route handlers and the 404 function), by logical id. */
const apiFunctionEntries = ({ stack, template }: { stack: ApiStack; template: Template }) => {
  const workers = workerIds(stack);
  return Object.entries(resources(template, 'AWS::Lambda::Function')).filter(([id]) => !workers.has(id) && !isCdkProvider(id));
};
const apiFunctions = (synthesized: { stack: ApiStack; template: Template }) => apiFunctionEntries(synthesized).map(([, fn]) => fn);

/** The function a route's integration invokes, followed through the template's references. */
const functionBehindRoute = (template: Template, routeKey: string) => {
  const routes = Object.values(resources(template, 'AWS::ApiGatewayV2::Route')).filter((r) => r.Properties.RouteKey === routeKey);
  expect(routes, `route ${routeKey}`).toHaveLength(1);
  const target = routes[0].Properties.Target as { 'Fn::Join': [string, [string, { Ref: string }]] };
  expect(target['Fn::Join'][1][0]).toBe('integrations/');
  const integration = resources(template, 'AWS::ApiGatewayV2::Integration')[target['Fn::Join'][1][1].Ref];
  expect(integration.Properties).toMatchObject({ IntegrationType: 'AWS_PROXY', PayloadFormatVersion: '2.0' });
  const fnId = integration.Properties.IntegrationUri['Fn::GetAtt'][0] as string;
  return { fnId, fn: resources(template, 'AWS::Lambda::Function')[fnId] };
};

/** Whether a stream record passes an event source mapping's filter pattern (lists of allowed values, nested objects). */
const matches = (p: any, value: any): boolean =>
  Array.isArray(p)
    ? p.includes(value)
    : value !== null && typeof value === 'object' && Object.entries(p).every(([k, sub]) => matches(sub, value[k]));

describe('routes', () => {
  it('every route-table entry has its own route, integration and function at METHOD /v1<path>', () => {
    const { stack, template } = defaults;
    const seen = new Set<string>();
    for (const route of routeList) {
      const { fnId, fn } = functionBehindRoute(template, `${route.method} ${BASE_PATH}${route.path}`);
      const construct = stack.functions[route.name as RouteName];
      expect(fnId).toBe(logicalId(stack, construct));
      expect(construct.handlerPath).toBe(route.handler);
      expect(fn.Properties.Description).toContain(route.handler);
      expect(fn.Properties.Handler).toBe('index.handler');
      seen.add(fnId);
    }
    expect(seen.size).toBe(routeList.length);
  });

  it('unmatched requests ($default) go to the not-found function', () => {
    const { stack, template } = defaults;
    const { fnId, fn } = functionBehindRoute(template, '$default');
    expect(fnId).toBe(logicalId(stack, stack.notFoundFunction));
    expect(fn.Properties.Description).toContain(NOT_FOUND_HANDLER);
    template.resourceCountIs('AWS::ApiGatewayV2::Route', routeList.length + 1);
    // …and the outbox relay and sweeper, the pending-moves applier, the recount worker, the two webhook consumers and the cancellation check, which no route reaches.
    template.resourceCountIs('AWS::Lambda::Function', routeList.length + 8);
  });

  it('the $default stage deploys itself, is throttled and writes access logs', () => {
    const stage = Object.values(resources(defaults.template, 'AWS::ApiGatewayV2::Stage'));
    expect(stage).toHaveLength(1);
    expect(stage[0].Properties).toMatchObject({
      StageName: '$default',
      AutoDeploy: true,
      DefaultRouteSettings: {
        ThrottlingRateLimit: DEFAULTS.throttle.rateLimit,
        ThrottlingBurstLimit: DEFAULTS.throttle.burstLimit,
      },
    });
    const { DestinationArn, Format } = stage[0].Properties.AccessLogSettings;
    expect(DestinationArn['Fn::GetAtt'][1]).toBe('Arn');
    expect(resources(defaults.template, 'AWS::Logs::LogGroup')[DestinationArn['Fn::GetAtt'][0]]).toBeDefined();
    expect(JSON.parse(Format)).toMatchObject({ requestId: '$context.requestId', routeKey: '$context.routeKey', status: '$context.status' });
  });

  it('routes one merchant may call faster than the default bucket allows get their own: order writes 500/s, subscription changes 100/s', () => {
    const stageOf = (s: typeof defaults) =>
      Object.values(resources(s.template, 'AWS::ApiGatewayV2::Stage'))[0] as Resource & { DependsOn?: string[] };
    const keysOf = (ability: string) => routeList.filter((r) => r.ability === ability).map((r) => `${r.method} ${BASE_PATH}${r.path}`);
    const bucket = (rate: number, burst: number) => ({ ThrottlingRateLimit: rate, ThrottlingBurstLimit: burst });
    const orderWrites = keysOf('orders:write');
    expect(orderWrites).toEqual(expect.arrayContaining(['POST /v1/orders', 'POST /v1/orders/batch']));
    // Defaults (100/s a route): order writes get 500/s (burst 1,000); subscription changes fit the default bucket.
    expect(stageOf(defaults).Properties.RouteSettings).toEqual(Object.fromEntries(orderWrites.map((k) => [k, bucket(500, 1000)])));
    // A stage default of 5/s: subscription changes need their own 100/s bucket too.
    expect(stageOf(variant).Properties.RouteSettings).toEqual(
      Object.fromEntries([
        ...orderWrites.map((k) => [k, bucket(500, 1000)]),
        ...keysOf('subscriptions:write').map((k) => [k, bucket(100, 200)]),
      ]),
    );
    // Route settings name route keys, so the stage waits for every nested stack of routes.
    const { stack } = defaults;
    for (const group of Object.values(stack.routeGroups))
      expect(stageOf(defaults).DependsOn).toContain(stack.getLogicalId(group.nestedStackResource as never));
  });

  it("outputs the API URL under /v1 (its CloudFront distribution's: test/infra/edge.test.ts), the table name and the event bus", () => {
    const { stack, template } = defaults;
    const outputs = template.findOutputs('*');
    const distributionId = stack.getLogicalId(stack.front!.distribution.node.defaultChild as never);
    expect(outputs.ApiUrl.Value).toEqual({ 'Fn::Join': ['', ['https://', { 'Fn::GetAtt': [distributionId, 'DomainName'] }, BASE_PATH]] });
    expect(outputs.TableName.Value).toEqual({ Ref: stack.getLogicalId(stack.table.node.defaultChild as never) });
    const busId = stack.getLogicalId(stack.eventBus.node.defaultChild as never);
    expect(outputs.EventBusName.Value).toEqual({ Ref: busId });
    template.hasResourceProperties('AWS::Events::EventBus', { Name: `revenue-analytics-api-${DEFAULTS.stage}` });
    // The bus's rules: webhook delivery (test/infra/webhook-delivery.test.ts) and the scheduler's four (cancellations,
    // trial conversions, delinquent cancellations, renewal graces); the outbox sweeper's schedule is on the default bus.
    const rules = Object.values(resources(template, 'AWS::Events::Rule'));
    expect(rules.filter((r) => JSON.stringify(r.Properties.EventBusName) === JSON.stringify({ Ref: busId }))).toHaveLength(5);
    expect(rules.filter((r) => r.Properties.ScheduleExpression)).toHaveLength(1);
    expect(rules).toHaveLength(6);
    // The renewal rule matches its internal event only, and hands the state machine the customer and the grace's end.
    const renewal = rules.find((r) => JSON.stringify(r.Properties.EventPattern ?? {}).includes('customer.renewal_grace'))!;
    expect(renewal.Properties.EventPattern['detail-type']).toEqual(['customer.renewal_grace']);
    expect(JSON.stringify(renewal.Properties.Targets[0].InputTransformer)).toContain('$.detail.data.object.customer_id');
    // …and no webhook rule matches an internal event.
    const webhook = rules.filter((r) => JSON.stringify(r.Properties.EventPattern ?? {}).includes('order.paid'));
    expect(webhook).toHaveLength(1);
    expect(webhook[0].Properties.EventPattern['detail-type']).not.toContain('customer.renewal_grace');
  });
});

describe('table', () => {
  const byName = <T extends { AttributeName?: string; IndexName?: string }>(list: T[]) =>
    [...list].sort((a, b) => String(a.AttributeName ?? a.IndexName).localeCompare(String(b.AttributeName ?? b.IndexName)));

  it('has the keys, indexes, TTL and stream lib/db/table.ts defines for DynamoDB Local', () => {
    const expected = createTableInput('unused');
    const tables = Object.values(resources(defaults.template, 'AWS::DynamoDB::Table'));
    expect(tables).toHaveLength(1);
    const p = tables[0].Properties;
    expect(p.KeySchema).toEqual(expected.KeySchema);
    expect(byName(p.AttributeDefinitions)).toEqual(byName(expected.AttributeDefinitions));
    expect(byName(p.GlobalSecondaryIndexes)).toEqual(byName(expected.GlobalSecondaryIndexes));
    expect(p.BillingMode).toBe(expected.BillingMode);
    expect(p.StreamSpecification).toEqual({ StreamViewType: expected.StreamSpecification.StreamViewType });
    expect(p.TimeToLiveSpecification).toEqual({ AttributeName: TTL_ATTRIBUTE, Enabled: true });
    expect(p.PointInTimeRecoverySpecification).toEqual({ PointInTimeRecoveryEnabled: true });
    expect(tables[0].DeletionPolicy).toBe('Retain');
  });

  it('is deleted with the stack only when retainTable is false', () => {
    const { template } = variant;
    expect(Object.values(resources(template, 'AWS::DynamoDB::Table'))[0].DeletionPolicy).toBe('Delete');
  });
});

describe('functions', () => {
  it("run nodejs22.x on arm64 with tracing, a 30-day log group, the configuration env and their route's timeout", () => {
    const { stack, template } = defaults;
    const tableRef = { Ref: stack.getLogicalId(stack.table.node.defaultChild as never) };
    const logGroups = resources(template, 'AWS::Logs::LogGroup');
    // Functions that use webhook secrets also get the secrets key (see 'webhook secrets key').
    const keyArn = { 'Fn::GetAtt': [stack.getLogicalId(stack.webhookSecretsKey.node.defaultChild as never), 'Arn'] };
    const byId = new Map(routeList.map((r) => [logicalId(stack, stack.functions[r.name as RouteName]), r]));
    const fns = apiFunctionEntries(defaults);
    expect(fns).toHaveLength(routeList.length + 1);
    for (const [fnId, fn] of fns) {
      const route = byId.get(fnId);
      expect(fn.Properties).toMatchObject({
        Runtime: 'nodejs22.x',
        Architectures: ['arm64'],
        MemorySize: 512,
        Timeout: route?.timeoutSeconds ?? FUNCTION_TIMEOUT_SECONDS,
        TracingConfig: { Mode: 'Active' },
      });
      expect(fn.Properties.Environment.Variables).toEqual({
        TABLE_NAME: tableRef,
        STAGE: DEFAULTS.stage,
        LOG_LEVEL: 'INFO',
        RATE_LIMIT_PER_HOUR: '3600',
        UNAUTHENTICATED_RATE_LIMIT_PER_MINUTE: '10',
        POWERTOOLS_SERVICE_NAME: 'revenue-analytics-api',
        POWERTOOLS_METRICS_NAMESPACE: stack.stackName,
        NODE_OPTIONS: '--enable-source-maps',
        // The front door's secret (asserted in test/infra/edge.test.ts).
        ORIGIN_VERIFY_SECRET: expect.anything(),
        // The cursor secret, resolved from Secrets Manager at deploy time (never in the template).
        CURSOR_SECRET: { 'Fn::Join': ['', ['{{resolve:secretsmanager:', expect.anything(), ':SecretString:::}}']] },
        ...(route?.secrets ? { WEBHOOK_KMS_KEY_ID: keyArn } : {}),
        // Values asserted in test/infra/dashboard-site.test.ts.
        ...(route?.dashboard ? { BACKOFFICE_JWT_ISSUER: expect.anything(), BACKOFFICE_JWT_AUDIENCE: expect.anything() } : {}),
      });
      expect(logGroups[fn.Properties.LoggingConfig.LogGroup.Ref].Properties.RetentionInDays).toBe(30);
    }
  });

  it('every one, workers included, imports Powertools from the one observability layer (nodejs22.x, either architecture)', () => {
    const { stack, template } = defaults;
    const layers = Object.entries(resources(template, 'AWS::Lambda::LayerVersion'));
    expect(layers).toHaveLength(1);
    const [layerId, layer] = layers[0]!;
    expect(layer.Properties).toMatchObject({ CompatibleRuntimes: ['nodejs22.x'], CompatibleArchitectures: ['arm64', 'x86_64'] });
    const fns = Object.entries(resources(template, 'AWS::Lambda::Function')).filter(([id]) => !isCdkProvider(id));
    expect(fns).toHaveLength(routeList.length + 1 + workerIds(stack).size);
    for (const [fnId, fn] of fns) expect(fn.Properties.Layers, fnId).toEqual([{ Ref: layerId }]);
  });

  it('take rate limits, log level and throttling from stack props', () => {
    const { template } = variant;
    const fns = apiFunctions(variant);
    expect(fns).toHaveLength(routeList.length + 1);
    for (const fn of fns) {
      expect(fn.Properties.Environment.Variables).toMatchObject({
        RATE_LIMIT_PER_HOUR: '120',
        UNAUTHENTICATED_RATE_LIMIT_PER_MINUTE: '3',
        LOG_LEVEL: 'DEBUG',
        STAGE: 'dev',
      });
    }
    template.hasResourceProperties('AWS::ApiGatewayV2::Stage', {
      DefaultRouteSettings: { ThrottlingRateLimit: 5, ThrottlingBurstLimit: 7 },
    });
    template.hasResourceProperties('AWS::Events::EventBus', { Name: 'revenue-analytics-api-dev' });
  });

  it('point at DynamoDB Local only in a template synthesized for sam local', () => {
    const fns = apiFunctions(variant);
    expect(fns).toHaveLength(routeList.length + 1);
    for (const fn of fns) {
      expect(fn.Properties.Environment.Variables).toMatchObject({
        DYNAMODB_ENDPOINT: 'http://host.docker.internal:8000',
        TABLE_NAME: 'local-table',
      });
    }
  });
});

describe('table grants', () => {
  /** Every DynamoDB grant of a function's role, one per action and resource. */
  const dynamoGrants = (stack: Stack, template: Template, fn: ApiFunction): Grant[] =>
    roleGrants(stack, template, fn).filter((g) => g.action.startsWith('dynamodb:'));

  /** A condition written out: the leading keys, the attributes (`[…]`), and `updated only` for the ReturnValues limit. */
  const describeCondition = (condition: any): string => {
    const { 'ForAllValues:StringLike': like, 'ForAllValues:StringEquals': equals, StringEqualsIfExists: ifExists, ...rest } = condition;
    expect(rest).toEqual({});
    const parts = [(like['dynamodb:LeadingKeys'] as string[]).join(',')];
    if (equals) parts.push(`[${(equals['dynamodb:Attributes'] as string[]).join(',')}]`);
    if (ifExists) {
      expect(ifExists).toEqual({ 'dynamodb:ReturnValues': ['NONE', 'UPDATED_OLD', 'UPDATED_NEW'] });
      parts.push('updated only');
    }
    // Attributes without the ReturnValues limit (or the reverse) would leave a way round the list.
    expect(Boolean(equals)).toBe(Boolean(ifExists));
    return ` ${parts.join(' ')}`;
  };
  /** Grants written as `Action on table|index [condition]`, so a failure reads as a policy. */
  const describeGrants = (stack: ApiStack, grants: Grant[]) => {
    const tableArn = { 'Fn::GetAtt': [stack.getLogicalId(stack.table.node.defaultChild as never), 'Arn'] };
    const indexName = (resource: unknown) =>
      ['gsi1', 'gsi2', 'gsi3', 'gsi4'].find(
        (name) => JSON.stringify(resource) === JSON.stringify({ 'Fn::Join': ['', [tableArn, `/index/${name}`]] }),
      );
    return grants
      .map(({ action, resource, condition }) => {
        const on =
          JSON.stringify(resource) === JSON.stringify(tableArn)
            ? 'table'
            : indexName(resource)
              ? `index ${indexName(resource)}`
              : JSON.stringify(resource);
        const when = condition === undefined ? '' : describeCondition(condition);
        return `${action.replace(/^dynamodb:/, '')} on ${on}${when}`;
      })
      .sort();
  };

  /** The webhook partitions of a merchant whose id is `mer_` and 20 hex digits. */
  const WEBHOOK = `M#mer_${'?'.repeat(20)}#WEBHOOK#*`;
  /** The settings partitions of a merchant's generations of the figures: what a settings change puts (its next generation's zone and rates). */
  const GENERATION_SETTINGS = `M#mer_${'?'.repeat(20)}#G*#SETTINGS`;
  /** The request pipeline's two updates: a request count, and the token's use stamp, each to the attribute. */
  const PIPELINE_UPDATES = [
    'UpdateItem on table RATE#M#*,RATE#IP#* [pk,sk,count,expires_at] updated only',
    'UpdateItem on table TOKEN#* [pk,sk,last_used_at] updated only',
  ];
  /** What write routes write: the merchant's own partitions and the outbox's (never a token or rate-window item). */
  const DATA = `M#mer_${'?'.repeat(20)},M#mer_${'?'.repeat(20)}#*,OUTBOX#*,OUTBOX_EVENT#*`;
  const WRITE_GRANTS = [
    'BatchGetItem on table',
    `ConditionCheckItem on table ${DATA}`,
    `DeleteItem on table ${DATA}`,
    'GetItem on table',
    `PutItem on table ${DATA}`,
    'Query on index gsi1',
    'Query on index gsi2',
    'Query on index gsi3',
    'Query on index gsi4',
    'Query on table',
    `UpdateItem on table ${DATA}`,
    ...PIPELINE_UPDATES,
  ].sort();
  /** The exact grants per kind, written out (not derived from api-function.ts) so a change shows here. */
  const expected = {
    // Token lookup and rate counter only: no Query, no index, no data item.
    // UpdateItem on token items stamps last_used_at (at most once a minute per token).
    pipeline: ['GetItem on table TOKEN#*', ...PIPELINE_UPDATES],
    read: [
      'BatchGetItem on table',
      'GetItem on table',
      'Query on index gsi1',
      'Query on index gsi2',
      'Query on index gsi3',
      'Query on index gsi4',
      'Query on table',
      ...PIPELINE_UPDATES,
    ],
    // Test and manual retry call merchant-chosen URLs: they write webhook items only.
    webhookSend: [
      'BatchGetItem on table',
      `DeleteItem on table ${WEBHOOK}`,
      'GetItem on table',
      `PutItem on table ${WEBHOOK}`,
      `UpdateItem on table ${WEBHOOK}`,
      ...PIPELINE_UPDATES,
    ],
    // TransactWriteItems is authorised per contained action (no IAM action of its own).
    write: WRITE_GRANTS,
    // A write route's, BatchWriteItem on generations' settings items only, and the token's copy of the
    // figures' state: zone, generation, recount (PUT /settings, PUT /exchange-rates).
    recount: [
      ...WRITE_GRANTS,
      `BatchWriteItem on table ${GENERATION_SETTINGS}`,
      'UpdateItem on table TOKEN#* [pk,sk,timezone,metrics_generation,metrics_recount,delinquency_days] updated only',
    ].sort(),
    // The back office's token routes: a write route's, and token items.
    tokens: [...WRITE_GRANTS, ...['ConditionCheckItem', 'DeleteItem', 'PutItem', 'UpdateItem'].map((a) => `${a} on table TOKEN#*`)].sort(),
  };

  it('every function gets exactly the DynamoDB actions its kind calls, and no more', () => {
    const { stack, template } = defaults;
    const kinds = new Map<ApiFunction, keyof typeof expected>([[stack.notFoundFunction, 'pipeline']]);
    // Derived here on its own, not with infra/stack.ts `tableAccessFor`: a route given the wrong kind there must fail here.
    for (const route of routeList) {
      const kind =
        route.secrets === 'decrypt'
          ? 'webhookSend'
          : route.recounts
            ? 'recount'
            : route.tokens
              ? 'tokens'
              : route.writes
                ? 'write'
                : authKindOf(route) === 'none'
                  ? 'pipeline'
                  : 'read';
      kinds.set(stack.functions[route.name as RouteName], kind);
    }
    // The OpenAPI document and the 404 function only authenticate and count.
    expect(kinds.get(stack.functions.openapi)).toBe('pipeline');
    // The routes that send to a merchant's URL: the test event and the manual retry.
    expect(
      routeList
        .filter((r) => kinds.get(stack.functions[r.name as RouteName]) === 'webhookSend')
        .map((r) => r.name)
        .sort(),
    ).toEqual(['webhookEndpointsRetryDelivery', 'webhookEndpointsTest']);
    // The routes whose change starts a recount of the figures.
    expect(
      routeList
        .filter((r) => kinds.get(stack.functions[r.name as RouteName]) === 'recount')
        .map((r) => r.name)
        .sort(),
    ).toEqual(['exchangeRatesPut', 'settingsPut']);
    expect([...kinds.values()]).toEqual(expect.arrayContaining(['read', 'write']));
    expect(kinds.size).toBe(apiFunctions(defaults).length);
    for (const [fn, kind] of kinds) {
      expect(describeGrants(stack, dynamoGrants(stack, template, fn)), `${fn.handlerPath} (${kind})`).toEqual(expected[kind]);
    }
  });

  it("no policy in the stack grants Scan, DescribeTable, BatchWriteItem but on generations' settings (routes) or their items (recount worker), or wildcards; only the stream consumers (outbox relay, pending-moves applier, recount worker) read the stream", () => {
    const { stack, template } = defaults;
    const streamRoles = [stack.outboxRelay.function, stack.pendingMovesApplier.function, stack.recountWorker.function].map((fn) =>
      stack.getLogicalId(fn.role!.node.defaultChild as never),
    );
    const policies = Object.values(resources(template, 'AWS::IAM::Policy'));
    const actionsOf = (list: Resource[]) =>
      list.flatMap((p) => p.Properties.PolicyDocument.Statement as { Action: string | string[] }[]).flatMap((s) => [s.Action].flat());
    const actions = actionsOf(policies);
    const apiActions = actionsOf(
      policies.filter((p) => !(p.Properties.Roles as { Ref: string }[]).some((r) => streamRoles.includes(r.Ref))),
    );
    expect(actions).toContain('dynamodb:GetItem');
    for (const forbidden of ['dynamodb:Scan', 'dynamodb:DescribeTable', 'dynamodb:TransactWriteItems']) {
      expect(actions).not.toContain(forbidden);
    }
    // BatchWriteItem only keyed: for the API, to generations' settings items (a settings change's puts);
    // for the recount worker, to the aggregates and settings of any (an older generation's retirement).
    const recountRole = stack.getLogicalId(stack.recountWorker.function.role!.node.defaultChild as never);
    const m = `M#mer_${'?'.repeat(20)}`;
    type Statement = { Action: string | string[]; Condition?: Record<string, Record<string, string[]>> };
    const batchWrites = policies.flatMap((p) =>
      (p.Properties.PolicyDocument.Statement as Statement[])
        .filter((s) => [s.Action].flat().includes('dynamodb:BatchWriteItem'))
        .map((s) => ({ s, worker: (p.Properties.Roles as { Ref: string }[]).some((r) => r.Ref === recountRole) })),
    );
    expect(batchWrites.length).toBeGreaterThan(1);
    for (const { s, worker } of batchWrites) {
      expect([s.Action].flat()).toEqual(['dynamodb:BatchWriteItem']);
      expect(s.Condition?.['ForAllValues:StringLike']?.['dynamodb:LeadingKeys']?.join(',')).toBe(
        worker ? `${m}#MRR*,${m}#COHORT*,${m}#SALES*,${m}#CHURN_REASONS*,${m}#G*#SETTINGS,${m}#G*#SEGMENTS#*` : GENERATION_SETTINGS,
      );
    }
    for (const streamRead of ['dynamodb:GetRecords', 'dynamodb:GetShardIterator', 'dynamodb:DescribeStream', 'dynamodb:ListStreams']) {
      expect(apiActions).not.toContain(streamRead);
      expect(actions).toContain(streamRead);
    }
    expect(actions.filter((a) => a.startsWith('dynamodb:') && a.includes('*'))).toEqual([]);
  });

  it("LeadingKeys conditions name only the rate-window, token, outbox, webhook and metrics prefixes, which no other data key can match (the recount worker's: under 'recount worker')", () => {
    const recountRole = defaults.stack.getLogicalId(defaults.stack.recountWorker.function.role!.node.defaultChild as never);
    const conditions = Object.values(resources(defaults.template, 'AWS::IAM::Policy'))
      .filter((p) => !(p.Properties.Roles as { Ref: string }[]).some((r) => r.Ref === recountRole))
      .flatMap(
        (p) =>
          p.Properties.PolicyDocument.Statement as { Action: string | string[]; Condition?: Record<string, Record<string, string[]>> }[],
      )
      .filter((s) => [s.Action].flat().some((a) => a.startsWith('dynamodb:')))
      .flatMap((s) => (s.Condition ? [s.Condition] : []));
    expect(conditions.length).toBeGreaterThan(0);
    const patterns = new Set<string>();
    for (const condition of conditions) {
      expect(Object.keys(condition['ForAllValues:StringLike'])).toEqual(['dynamodb:LeadingKeys']);
      for (const p of condition['ForAllValues:StringLike']['dynamodb:LeadingKeys']) patterns.add(p);
    }
    const webhook = `M#mer_${'?'.repeat(20)}#WEBHOOK#*`;
    // The fan-out's reads (the endpoint list and count) and the delivery worker's list entry; a customer's partitions (the cancel check's Query).
    const exact = ['WEBHOOK_LIST', 'TOTALS#000', 'CUSTOMER#*'].map((p) => `M#mer_${'?'.repeat(20)}#${p}`);
    // Write routes' own: a merchant's partitions, whole (`M#<m>`, `M#<m>#…`), which no other merchant's or non-merchant key can match.
    const merchantWide = [`M#mer_${'?'.repeat(20)}`, `M#mer_${'?'.repeat(20)}#*`];
    // The pending-moves applier's: a merchant's MRR and cohort partitions (whole or a segment's) and its churn by reason.
    const metrics = [
      `M#mer_${'?'.repeat(20)}#MRR*`,
      `M#mer_${'?'.repeat(20)}#COHORT*`,
      `M#mer_${'?'.repeat(20)}#SALES*`,
      `M#mer_${'?'.repeat(20)}#CHURN_REASONS*`,
    ];
    // The applier's and the recount worker's backlog counts and figures versions, and the applier's pace ledger.
    const counts = [`M#mer_${'?'.repeat(20)}#PENDING#*`, `M#mer_${'?'.repeat(20)}#FIGURES#*`, `M#mer_${'?'.repeat(20)}#PACE`];
    expect([...patterns].sort()).toEqual(
      [
        ...metrics,
        ...counts,
        GENERATION_SETTINGS,
        ...exact,
        ...merchantWide,
        webhook,
        'OUTBOX#*',
        'OUTBOX_EVENT#*',
        'RATE#IP#*',
        'RATE#M#*',
        'TOKEN#*',
      ].sort(),
    );
    expect(
      [...patterns]
        .filter(
          (p) =>
            !p.startsWith('TOKEN#') &&
            !p.startsWith('OUTBOX') &&
            p !== webhook &&
            !exact.includes(p) &&
            !merchantWide.includes(p) &&
            !metrics.includes(p) &&
            !counts.includes(p) &&
            p !== GENERATION_SETTINGS,
        )
        .every((p) => p.startsWith(RATE_PREFIX)),
    ).toBe(true);

    // IAM StringLike: `*` is any run of characters, `?` one character.
    const like = (pattern: string) => {
      const escaped = pattern
        .replace(/[.+^$(){}|[\]\\]/g, '\\$&')
        .replace(/\*/g, '.*')
        .replace(/\?/g, '.');
      return new RegExp(`^${escaped}$`);
    };
    const matchingAll = (pk: string) => [...patterns].filter((p) => like(p).test(pk));
    // The write routes' merchant-wide patterns reach every partition of a real merchant (checked
    // below: and of no other key); the narrower grants are told apart without them.
    const matching = (pk: string) => matchingAll(pk).filter((p) => !merchantWide.includes(p));
    expect(matching(keys.merchantRateWindow('mer_1', 3600).pk)).toEqual(['RATE#M#*']);
    expect(matching(keys.ipRateWindow('203.0.113.9', 60).pk)).toEqual(['RATE#IP#*']);
    expect(matching(keys.token('ab12').pk)).toEqual(['TOKEN#*']);
    // A merchant's webhook items, and anything else under an endpoint's partition (such as a per-day counter), match the webhook pattern.
    const merchant = `mer_${'0a'.repeat(10)}`;
    const endpointPk = keys.webhookEndpoint(merchant, 7).pk;
    for (const pk of [
      endpointPk,
      keys.webhookDeliveryState(merchant, 7, 'evt_1').pk,
      keys.webhookDelivery(merchant, 7, '2025-01-01T00:00:00Z', 'evt_1', 1).pk,
      `${endpointPk}#DAY#2025-01-01`,
    ]) {
      expect(matching(pk), pk).toEqual([webhook]);
    }
    // The backlog counts, the figures versions and the pace ledger match their own patterns, no metrics one.
    expect(matching(keys.pendingBacklog(merchant, 5).pk)).toEqual([counts[0]]);
    expect(matching(keys.figuresVersion(merchant, 47).pk)).toEqual([counts[1]]);
    expect(matching(keys.applierPace(merchant, 5, 1).pk)).toEqual([counts[2]]);
    // A merchant's aggregate items and the pending-moves items among them match one metrics pattern each.
    const segment = { dimension: 'plan' as const, value: 'Pro#MRR' };
    for (const [pk, pattern] of [
      [keys.metricsDay(merchant, '2025-01-01', 0).pk, metrics[0]],
      [keys.metricsMonth(merchant, '2025-01', 3, segment).pk, metrics[0]],
      [pendingHome(merchant, 'M#2025-01', 0).pk, metrics[0]],
      [keys.metricsCohort(merchant, '2025-01', '2025-02', 0).pk, metrics[1]],
      [pendingHome(merchant, 'C#2025-01#2025-02', 5, segment).pk, metrics[1]],
      [aggregateKey(merchant, 'SD#2025-01-01', 0).pk, metrics[2]],
      [pendingHome(merchant, 'SY#2025-01-01', 4, { dimension: 'payment_method', value: 'atm' }).pk, metrics[2]],
      [aggregateKey(merchant, 'SC#2025-01#2025-02', 7, { dimension: 'currency', value: 'USD' }, 3).pk, metrics[2]],
      [keys.churnReason(merchant, 'M', '2025-01', 'price', 0).pk, metrics[3]],
      [pendingHome(merchant, 'RM#2025-01#price', 0).pk, metrics[3]],
    ]) {
      expect(matching(pk), pk).toEqual([pattern]);
    }
    // A later generation's items match its metrics pattern only, like generation 0's (and a segment named like a generation);
    // a generation's settings and segment registry, the settings pattern.
    for (const [pk, pattern] of [
      [keys.metricsDay(merchant, '2025-01-01', 0, null, 3).pk, [metrics[0]]],
      [keys.metricsMonth(merchant, '2025-01', 3, { dimension: 'plan', value: 'G1' }, 12).pk, [metrics[0]]],
      [keys.metricsCohort(merchant, '2025-01', '2025-02', 0, null, 2).pk, [metrics[1]]],
      [keys.churnReason(merchant, 'M', '2025-01', 'price', 0, 2).pk, [metrics[3]]],
      [keys.generationZone(merchant, 2).pk, [GENERATION_SETTINGS]],
      [keys.metricsMonth(merchant, '2025-01', 3, { dimension: 'plan', value: 'G1' }).pk, [metrics[0]]],
    ] as const) {
      expect(matching(pk).sort(), pk).toEqual([...pattern].sort());
    }
    // Merchant ids and external ids are free text in keys: none can reach a pattern (`#WEBHOOK#` or `#MRR` in an external id neither).
    expect(matching(keys.outbox('mer_1', '2025-01-01T00:00:00Z', 'evt_1').pk)).toEqual(['OUTBOX#*']);
    expect(matching(keys.outboxEvent('mer_1', 'evt_1').pk)).toEqual(['OUTBOX_EVENT#*']);
    for (const tricky of ['RATE#M#x', 'TOKEN#x', 'OUTBOX#x', '*', merchant]) {
      const dataKeys = [
        keys.merchant(tricky),
        keys.merchantToken(tricky),
        keys.sequences(tricky),
        keys.totals(tricky, 'ORDERS', 1),
        keys.customer(tricky, 1),
        keys.customerEmail(tricky, 'a@example.com'),
        keys.customerExternalId(tricky, 'RATE#M#x'),
        keys.customerExternalId(tricky, '#WEBHOOK#1'),
        keys.customerExternalId(tricky, '#MRR'),
        keys.order(tricky, '#COHORT#1'),
        keys.plan(tricky, 'MRR', 0),
        keys.order(tricky, '#WEBHOOK#1'),
        keys.totals(tricky, 'WEBHOOK_ENDPOINTS', 0),
        keys.order(tricky, 'TOKEN#1'),
        keys.idempotency(tricky, 'k'),
        keys.statsDay(tricky, '2025-01-01', 1),
        keys.customerPayment(tricky, 1, '2025-01-01T00:00:00Z', 'RATE#1'),
        keys.statsMonth(tricky, '2025-01', 1),
        keys.activity(tricky, 1),
        keys.activitySequence(tricky),
        keys.activityTotals(tricky, 'RATE#1', '2025-01', 1),
      ];
      // A real merchant's customer partitions and its endpoint count's are reached by their exact grants only.
      for (const key of dataKeys)
        expect(
          matching(key.pk).filter((p) => !exact.includes(p)),
          key.pk,
        ).toEqual([]);
    }
    expect(matching(keys.customer(merchant, 1).pk)).toEqual([exact[2]]);
    expect(matching(keys.totals(merchant, 'WEBHOOK_ENDPOINTS', 0).pk)).toEqual([exact[1]]);
  });
});

describe('webhook secrets key', () => {
  it('one KMS key with rotation, kept with the table by default (deleted with it when retainTable is false)', () => {
    const secretsKey = (s: typeof defaults) =>
      resources(s.template, 'AWS::KMS::Key')[s.stack.getLogicalId(s.stack.webhookSecretsKey.node.defaultChild as never)];
    expect(secretsKey(defaults).Properties.EnableKeyRotation).toBe(true);
    expect(secretsKey(defaults).DeletionPolicy).toBe('Retain');
    expect(secretsKey(variant).DeletionPolicy).toBe('Delete');
  });

  it('the functions that issue secrets (create, rotate-secret) may only Encrypt; those that send (test, retry, the delivery) only Decrypt', () => {
    const { stack, template } = defaults;
    const using = (kind: 'encrypt' | 'decrypt') =>
      routeList
        .filter((r) => r.secrets === kind)
        .map((r) => r.name as string)
        .sort();
    expect(using('encrypt')).toEqual(['webhookEndpointsCreate', 'webhookEndpointsRotateSecret']);
    expect(using('decrypt')).toEqual(['webhookEndpointsRetryDelivery', 'webhookEndpointsTest']);
    const keyArn = { 'Fn::GetAtt': [stack.getLogicalId(stack.webhookSecretsKey.node.defaultChild as never), 'Arn'] };
    // The table key's grants (through DynamoDB only) are asserted in test/infra/operations.test.ts.
    const kmsGrants = (fn: ApiFunction) =>
      roleGrants(stack, template, fn)
        .filter((g) => g.action.startsWith('kms:') && JSON.stringify(g.resource) === JSON.stringify(keyArn))
        .map(({ action, resource }) => ({ action, resource }));
    for (const route of routeList) {
      const expected = route.secrets === 'encrypt' ? 'kms:Encrypt' : route.secrets === 'decrypt' ? 'kms:Decrypt' : undefined;
      expect(kmsGrants(stack.functions[route.name as RouteName]), route.name).toEqual(
        expected ? [{ action: expected, resource: keyArn }] : [],
      );
    }
    expect(kmsGrants(stack.notFoundFunction)).toEqual([]);
    expect(kmsGrants(stack.outboxRelay.function)).toEqual([]);
    expect(kmsGrants(stack.webhookDelivery.fanOutFunction)).toEqual([]);
    expect(kmsGrants(stack.webhookDelivery.deliveryFunction)).toEqual([{ action: 'kms:Decrypt', resource: keyArn }]);
    const actions = Object.values(resources(template, 'AWS::IAM::Policy'))
      .flatMap((p) => p.Properties.PolicyDocument.Statement as { Action: string | string[]; Resource: unknown }[])
      .filter((s) => JSON.stringify(s.Resource) === JSON.stringify(keyArn))
      .flatMap((s) => [s.Action].flat());
    expect(new Set(actions.filter((a) => a.startsWith('kms:')))).toEqual(new Set(['kms:Encrypt', 'kms:Decrypt']));
  });
});

describe('app context', () => {
  const contextProps = (context: Record<string, unknown>) => propsFromContext(new App({ context }).node);

  it('parses -c values (strings) into stack props and names the stack after the stage', () => {
    expect(
      contextProps({
        stage: 'dev',
        rateLimitPerHour: '100',
        unauthenticatedRateLimitPerMinute: '5',
        logLevel: 'debug',
        retainTable: 'false',
        throttleRateLimit: '9',
      }),
    ).toEqual({
      stage: 'dev',
      rateLimitPerHour: 100,
      unauthenticatedRateLimitPerMinute: 5,
      logLevel: 'DEBUG',
      retainTable: false,
      throttle: { rateLimit: 9, burstLimit: DEFAULTS.throttle.burstLimit },
    });
    expect(contextProps({ orderWritesPerSecond: '800' }).merchantPeakPerSecond).toEqual({
      'orders:write': 800,
      'subscriptions:write': 100,
    });
    expect(contextProps({ localDynamoEndpoint: 'http://host.docker.internal:8000' }).localDynamo).toEqual({
      endpoint: 'http://host.docker.internal:8000',
      tableName: DEFAULTS.localTableName,
    });
    expect(contextProps({}).localDynamo).toBeUndefined();
    expect(stackNameFor(undefined)).toBe('RevenueAnalyticsApi');
    expect(stackNameFor('prod')).toBe('RevenueAnalyticsApi');
    expect(stackNameFor('dev')).toBe('RevenueAnalyticsApi-dev');
  });

  it('refuses bad values instead of deploying them', () => {
    expect(() => contextProps({ rateLimitPerHour: '0' })).toThrow(/rateLimitPerHour/);
    expect(() => contextProps({ rateLimitPerHour: '1.5' })).toThrow(/rateLimitPerHour/);
    expect(() => contextProps({ logLevel: 'LOUD' })).toThrow(/logLevel/);
    expect(() => contextProps({ stage: 'Prod_1' })).toThrow(/stage/);
    expect(() => contextProps({ retainTable: 'yes' })).toThrow(/retainTable/);
    expect(() => contextProps({ localDynamoEndpoint: 'host.docker.internal:8000' })).toThrow(/localDynamoEndpoint/);
    // "local" relaxes webhook URL rules in the functions, so a deployed stack may not use it.
    expect(() => synth({ stage: 'local' })).toThrow(/local/);
  });
});

/**
 * A stream consumer's dead-letter queue (by logical id) is encrypted and TLS-only and alarms at one
 * message; its function (by logical id) alarms when 5 minutes behind the stream (unless `lag` is
 * false: no such alarm); the alarms notify the stack's alarm topic (test/infra/operations.test.ts).
 */
const expectStreamConsumerAlarms = (fn: string, queue: string, { lag = true } = {}) => {
  const { template } = defaults;
  expect(resources(template, 'AWS::SQS::Queue')[queue].Properties).toEqual({
    SqsManagedSseEnabled: true,
    MessageRetentionPeriod: 14 * 24 * 3600,
  });
  template.hasResourceProperties('AWS::SQS::QueuePolicy', {
    Queues: [{ Ref: queue }],
    PolicyDocument: {
      Statement: [{ Effect: 'Deny', Action: 'sqs:*', Condition: { Bool: { 'aws:SecureTransport': 'false' } }, Principal: { AWS: '*' } }],
    },
  });
  // Both alarms notify the stack's alarm topic (test/infra/operations.test.ts).
  const topic = defaults.stack.getLogicalId(defaults.stack.monitoring.alarmTopic.node.defaultChild as never);
  expect(alarmsOn(template, 'ApproximateNumberOfMessagesVisible', { 'Fn::GetAtt': [queue, 'QueueName'] })).toEqual([
    expect.objectContaining({
      comparison: 'GreaterThanThreshold',
      threshold: 0,
      datapoints: 1,
      evaluationPeriods: 1,
      actions: [{ Ref: topic }],
      metrics: [expect.objectContaining({ namespace: 'AWS/SQS', stat: 'Maximum', period: 60 })],
    }),
  ]);
  expect(alarmsOn(template, 'IteratorAge', { Ref: fn })).toEqual(
    lag
      ? [
          expect.objectContaining({
            comparison: 'GreaterThanThreshold',
            threshold: 300_000,
            actions: [{ Ref: topic }],
            metrics: [expect.objectContaining({ namespace: 'AWS/Lambda', stat: 'Maximum', period: 60 })],
          }),
        ]
      : [],
  );
};

describe('outbox relay', () => {
  const ids = ({ stack }: { stack: ApiStack }) => {
    const relay = stack.outboxRelay;
    return {
      fn: logicalId(stack, relay.function),
      role: stack.getLogicalId(relay.function.role!.node.defaultChild as never),
      table: stack.getLogicalId(stack.table.node.defaultChild as never),
      bus: stack.getLogicalId(stack.eventBus.node.defaultChild as never),
      queue: stack.getLogicalId(relay.deadLetterQueue.node.defaultChild as never),
    };
  };
  /** The relay's stream mapping (the webhook consumers have SQS mappings of their own). */
  const relayMapping = ({ stack, template }: { stack: ApiStack; template: Template }) => {
    const fn = logicalId(stack, stack.outboxRelay.function);
    const found = Object.values(resources(template, 'AWS::Lambda::EventSourceMapping')).filter(
      (m) => m.Properties.FunctionName?.Ref === fn,
    );
    expect(found).toHaveLength(1);
    return found[0];
  };

  it('reads the table stream, which carries new images', () => {
    const { table } = ids(defaults);
    expect(resources(defaults.template, 'AWS::DynamoDB::Table')[table].Properties.StreamSpecification).toEqual({
      StreamViewType: 'NEW_IMAGE',
    });
    expect(relayMapping(defaults).Properties.EventSourceArn).toEqual({ 'Fn::GetAtt': [table, 'StreamArn'] });
  });

  it('is fed by an event source mapping: outbox INSERTs, batches of 100 / 1 s, partial failures, bisect, retried until the record leaves the stream, then the DLQ', () => {
    const { fn, queue } = ids(defaults);
    const mapping = relayMapping(defaults).Properties;
    expect(mapping).toEqual({
      FunctionName: { Ref: fn },
      EventSourceArn: expect.anything(),
      StartingPosition: 'TRIM_HORIZON',
      BatchSize: 100,
      MaximumBatchingWindowInSeconds: 1,
      ParallelizationFactor: 1,
      FunctionResponseTypes: ['ReportBatchItemFailures'],
      BisectBatchOnFunctionError: true,
      // -1: no retry limit; no MaximumRecordAgeInSeconds (-1 by default): a record is retried for as long as the stream keeps it (24 h).
      MaximumRetryAttempts: -1,
      DestinationConfig: { OnFailure: { Destination: { 'Fn::GetAtt': [queue, 'Arn'] } } },
      FilterCriteria: { Filters: [{ Pattern: expect.any(String) }] },
    });
    expect(JSON.parse(mapping.FilterCriteria.Filters[0].Pattern)).toEqual({
      eventName: ['INSERT'],
      dynamodb: { NewImage: { entity: { S: ['outbox'] } } },
    });
  });

  it('its filter lets through exactly the records the relay (and the local poller) publish', () => {
    const pattern = JSON.parse(relayMapping(defaults).Properties.FilterCriteria.Filters[0].Pattern);
    // Lambda filter semantics for exact-value lists: every named field must hold one of the values.
    const records = [
      outboxInsert('mer_filter'),
      streamRecord('MODIFY', outboxItem('mer_filter', 'order.paid', {})),
      streamRecord('REMOVE', outboxItem('mer_filter', 'order.paid', {})),
      streamRecord('INSERT', { pk: 'RATE#M#mer_filter#1', sk: 'RATE', count: 1 }),
      streamRecord('INSERT', { pk: 'M#mer_filter#ORDER#1', sk: 'ORDER', entity: 'order' }),
    ];
    expect(records.map((r) => matches(pattern, r))).toEqual([true, false, false, false, false]);
    expect(records.map(isOutboxInsert)).toEqual(records.map((r) => matches(pattern, r)));
  });

  it('least privilege: stream reads on the stream, decrypt its records, PutEvents on the bus, send to its DLQ, its own logs, and on the table only UpdateItem of outbox marks', () => {
    const { role, table, bus, queue, fn } = ids(defaults);
    const tableKey = defaults.stack.getLogicalId(defaults.stack.table.encryptionKey!.node.defaultChild as never);
    const logGroup = resources(defaults.template, 'AWS::Lambda::Function')[fn].Properties.LoggingConfig.LogGroup.Ref;
    const policies = Object.values(resources(defaults.template, 'AWS::IAM::Policy')).filter((p) =>
      (p.Properties.Roles as { Ref: string }[]).some((r) => r.Ref === role),
    );
    expect(policies).toHaveLength(1);
    const named = (resource: unknown) => {
      const text = JSON.stringify(resource);
      if (text === JSON.stringify({ 'Fn::GetAtt': [table, 'StreamArn'] })) return 'stream';
      if (text === JSON.stringify({ 'Fn::GetAtt': [table, 'Arn'] })) return 'table';
      if (text === JSON.stringify({ 'Fn::GetAtt': [bus, 'Arn'] })) return 'bus';
      if (text === JSON.stringify({ 'Fn::GetAtt': [queue, 'Arn'] })) return 'dlq';
      if (text === JSON.stringify({ 'Fn::GetAtt': [tableKey, 'Arn'] })) return 'table key';
      if (text === JSON.stringify({ 'Fn::GetAtt': [logGroup, 'Arn'] })) return 'own log group';
      return text;
    };
    const viaDynamoDb = {
      StringEquals: { 'kms:ViaService': { 'Fn::Join': ['', ['dynamodb.', { Ref: 'AWS::Region' }, '.amazonaws.com']] } },
    };
    const grants = (
      policies[0].Properties.PolicyDocument.Statement as {
        Effect: string;
        Action: string | string[];
        Resource: unknown;
        Condition?: unknown;
      }[]
    )
      .flatMap((st) => {
        expect(st.Effect).toBe('Allow');
        return [st.Action]
          .flat()
          .flatMap((a) =>
            [st.Resource]
              .flat()
              .map(
                (r) =>
                  `${a} on ${named(r)}${st.Condition ? ` if ${JSON.stringify(st.Condition) === JSON.stringify(viaDynamoDb) ? 'via DynamoDB' : JSON.stringify(st.Condition)}` : ''}`,
              ),
          );
      })
      .sort();
    expect(grants).toEqual([
      'dynamodb:DescribeStream on stream',
      'dynamodb:GetRecords on stream',
      'dynamodb:GetShardIterator on stream',
      'dynamodb:ListStreams on stream',
      `dynamodb:UpdateItem on table if {"ForAllValues:StringLike":{"dynamodb:LeadingKeys":["OUTBOX#*"]}}`,
      'events:PutEvents on bus',
      'kms:Decrypt on table key if via DynamoDB',
      'kms:DescribeKey on table key if via DynamoDB',
      'kms:Encrypt on table key if via DynamoDB',
      'kms:GenerateDataKey on table key if via DynamoDB',
      'logs:CreateLogStream on own log group',
      'logs:PutLogEvents on own log group',
      'sqs:GetQueueAttributes on dlq',
      'sqs:GetQueueUrl on dlq',
      'sqs:SendMessage on dlq',
      // Active tracing, as every function (these actions take no resource).
      'xray:PutTelemetryRecords on "*"',
      'xray:PutTraceSegments on "*"',
    ]);
    // No managed policy (AWSLambdaBasicExecutionRole would allow logs on every log group).
    expect(resources(defaults.template, 'AWS::IAM::Role')[role].Properties.ManagedPolicyArns).toBeUndefined();
  });

  it('publishes to the stack bus as the service, with the project runtime and the table it stamps', () => {
    const { fn, bus } = ids(defaults);
    const { Properties: p } = resources(defaults.template, 'AWS::Lambda::Function')[fn];
    expect(p).toMatchObject({
      Runtime: 'nodejs22.x',
      Architectures: ['arm64'],
      Timeout: 10,
      TracingConfig: { Mode: 'Active' },
      Handler: 'index.handler',
    });
    expect(p.Description).toContain(OUTBOX_RELAY_HANDLER);
    expect(p.Environment.Variables).toEqual({
      TABLE_NAME: { Ref: ids(defaults).table },
      EVENT_BUS_NAME: { Ref: bus },
      EVENT_SOURCE: 'revenue-analytics-api',
      STAGE: DEFAULTS.stage,
      LOG_LEVEL: 'INFO',
      POWERTOOLS_SERVICE_NAME: 'revenue-analytics-api',
      POWERTOOLS_METRICS_NAMESPACE: defaults.stack.stackName,
      NODE_OPTIONS: '--enable-source-maps',
    });
    expect(resources(defaults.template, 'AWS::Logs::LogGroup')[p.LoggingConfig.LogGroup.Ref].Properties.RetentionInDays).toBe(30);
    // The variant stack: its stage and log level reach the relay too.
    const v = ids(variant);
    expect(resources(variant.template, 'AWS::Lambda::Function')[v.fn].Properties.Environment.Variables).toMatchObject({
      STAGE: 'dev',
      LOG_LEVEL: 'DEBUG',
    });
  });

  it('its dead-letter queue is encrypted, TLS-only and alarmed on depth; falling behind the stream is alarmed too', () => {
    const { fn, queue } = ids(defaults);
    expectStreamConsumerAlarms(fn, queue);
    expect(defaults.template.findOutputs('OutboxDeadLetterQueueUrl').OutboxDeadLetterQueueUrl.Value).toEqual({ Ref: queue });
  });
});

describe('pending-moves applier', () => {
  const ids = ({ stack }: { stack: ApiStack }) => {
    const applier = stack.pendingMovesApplier;
    return {
      fn: logicalId(stack, applier.function),
      table: stack.getLogicalId(stack.table.node.defaultChild as never),
      tableKey: stack.getLogicalId(stack.table.encryptionKey!.node.defaultChild as never),
      queue: stack.getLogicalId(applier.deadLetterQueue.node.defaultChild as never),
    };
  };
  const mappingOf = ({ stack, template }: { stack: ApiStack; template: Template }) => {
    const found = Object.values(resources(template, 'AWS::Lambda::EventSourceMapping')).filter(
      (m) => m.Properties.FunctionName?.Ref === ids({ stack }).fn,
    );
    expect(found).toHaveLength(1);
    return found[0].Properties;
  };

  it('exists, runs its handler with the project runtime, and is fed by its own stream mapping: pending-moves INSERTs, partial failures, bisect, bounded retries, then the DLQ', () => {
    const { fn, table, queue } = ids(defaults);
    const { Properties: p } = resources(defaults.template, 'AWS::Lambda::Function')[fn];
    expect(p).toMatchObject({
      Runtime: 'nodejs22.x',
      Architectures: ['arm64'],
      Timeout: FUNCTION_TIMEOUT_SECONDS,
      Handler: 'index.handler',
    });
    expect(p.Description).toContain(PENDING_MOVES_APPLIER_HANDLER);
    expect(p.Environment.Variables).toMatchObject({ TABLE_NAME: { Ref: table }, STAGE: DEFAULTS.stage });
    expect(mappingOf(defaults)).toEqual({
      FunctionName: { Ref: fn },
      EventSourceArn: { 'Fn::GetAtt': [table, 'StreamArn'] },
      StartingPosition: 'TRIM_HORIZON',
      BatchSize: 50,
      MaximumBatchingWindowInSeconds: 1,
      ParallelizationFactor: 1,
      FunctionResponseTypes: ['ReportBatchItemFailures'],
      BisectBatchOnFunctionError: true,
      // Bounded: an item given up on stays pending, read in, and applied by `ops metrics rebuild`.
      MaximumRetryAttempts: 10,
      MaximumRecordAgeInSeconds: 3600,
      DestinationConfig: { OnFailure: { Destination: { 'Fn::GetAtt': [queue, 'Arn'] } } },
      FilterCriteria: { Filters: [{ Pattern: expect.any(String) }] },
    });
  });

  it('its filter lets through exactly the records the applier (and the local poller) apply', () => {
    const pattern = JSON.parse(mappingOf(defaults).FilterCriteria.Filters[0].Pattern);
    expect(pattern).toEqual({ eventName: ['INSERT'], dynamodb: { NewImage: { entity: { S: [PENDING_MOVES_ENTITY] } } } });
    const home = pendingHome('mer_filter', 'M#2025-01', 0);
    const item = { pk: home.pk, sk: `${home.sk}#P#b1#000`, entity: PENDING_MOVES_ENTITY, moves: '[]' };
    const records = [
      streamRecord('INSERT', item),
      streamRecord('MODIFY', item),
      streamRecord('REMOVE', item),
      streamRecord('INSERT', { ...item, entity: undefined }),
      outboxInsert('mer_filter'),
    ];
    expect(records.map((r) => matches(pattern, r))).toEqual([true, false, false, false, false]);
    expect(records.map(isPendingMovesInsert)).toEqual(records.map((r) => matches(pattern, r)));
  });

  it('least privilege: stream reads on the stream; GetItem, UpdateItem, DeleteItem on the metrics partitions only; its DLQ; the table key', () => {
    const { stack, template } = defaults;
    const { table, tableKey, queue } = ids(defaults);
    const name = (resource: unknown) => {
      const text = JSON.stringify(resource);
      if (text === JSON.stringify({ 'Fn::GetAtt': [table, 'StreamArn'] })) return 'stream';
      if (text === JSON.stringify({ 'Fn::GetAtt': [table, 'Arn'] })) return 'table';
      if (text === JSON.stringify({ 'Fn::GetAtt': [tableKey, 'Arn'] })) return 'table key';
      if (text === JSON.stringify({ 'Fn::GetAtt': [queue, 'Arn'] })) return 'dlq';
      return text;
    };
    const grants = roleGrants(stack, template, stack.pendingMovesApplier.function)
      .filter((g) => !g.action.startsWith('logs:') && !g.action.startsWith('xray:'))
      .map((g) => {
        const { 'ForAllValues:StringLike': like, ...rest } = (g.condition ?? {}) as Record<string, Record<string, string[]>>;
        if (g.action.startsWith('dynamodb:') && name(g.resource) === 'table') expect(rest).toEqual({});
        return `${g.action} on ${name(g.resource)}${like ? ` ${like['dynamodb:LeadingKeys'].join(',')}` : ''}`;
      })
      .sort();
    const metrics = `M#mer_${'?'.repeat(20)}#MRR*,M#mer_${'?'.repeat(20)}#COHORT*,M#mer_${'?'.repeat(20)}#SALES*,M#mer_${'?'.repeat(20)}#CHURN_REASONS*`;
    expect(grants).toEqual([
      `dynamodb:DeleteItem on table ${metrics}`,
      'dynamodb:DescribeStream on stream',
      `dynamodb:GetItem on table ${metrics}`,
      'dynamodb:GetRecords on stream',
      'dynamodb:GetShardIterator on stream',
      'dynamodb:ListStreams on stream',
      `dynamodb:UpdateItem on table ${metrics}`,
      `dynamodb:UpdateItem on table M#mer_${'?'.repeat(20)}#PENDING#*,M#mer_${'?'.repeat(20)}#FIGURES#*,M#mer_${'?'.repeat(20)}#PACE`,
      'kms:Decrypt on table key',
      'kms:DescribeKey on table key',
      'kms:Encrypt on table key',
      'kms:GenerateDataKey on table key',
      'sqs:GetQueueAttributes on dlq',
      'sqs:GetQueueUrl on dlq',
      'sqs:SendMessage on dlq',
    ]);
  });

  it('its dead-letter queue is encrypted, TLS-only, alarmed on depth and an output; falling behind the stream is alarmed too', () => {
    const { fn, queue } = ids(defaults);
    expectStreamConsumerAlarms(fn, queue);
    expect(defaults.template.findOutputs('PendingMovesDeadLetterQueueUrl').PendingMovesDeadLetterQueueUrl.Value).toEqual({ Ref: queue });
  });
});

describe('recount worker', () => {
  const ids = ({ stack }: { stack: ApiStack }) => {
    const worker = stack.recountWorker;
    return {
      fn: logicalId(stack, worker.function),
      table: stack.getLogicalId(stack.table.node.defaultChild as never),
      tableKey: stack.getLogicalId(stack.table.encryptionKey!.node.defaultChild as never),
      queue: stack.getLogicalId(worker.deadLetterQueue.node.defaultChild as never),
    };
  };
  const mappingOf = ({ stack, template }: { stack: ApiStack; template: Template }) => {
    const found = Object.values(resources(template, 'AWS::Lambda::EventSourceMapping')).filter(
      (m) => m.Properties.FunctionName?.Ref === ids({ stack }).fn,
    );
    expect(found).toHaveLength(1);
    return found[0].Properties;
  };
  const merchant = `mer_${'?'.repeat(20)}`;

  it('exists, runs its handler for up to 5 minutes, and is fed by its own stream mapping: recount-job INSERTs one at a time, ten batches in flight per shard, partial failures, bounded retries, then the DLQ', () => {
    const { fn, table, queue } = ids(defaults);
    const { Properties: p } = resources(defaults.template, 'AWS::Lambda::Function')[fn];
    expect(p).toMatchObject({
      Runtime: 'nodejs22.x',
      Architectures: ['arm64'],
      Timeout: 300,
      Handler: 'index.handler',
    });
    expect(p.Description).toContain(RECOUNT_WORKER_HANDLER);
    expect(p.Environment.Variables).toMatchObject({ TABLE_NAME: { Ref: table }, STAGE: DEFAULTS.stage });
    expect(mappingOf(defaults)).toEqual({
      FunctionName: { Ref: fn },
      EventSourceArn: { 'Fn::GetAtt': [table, 'StreamArn'] },
      StartingPosition: 'TRIM_HORIZON',
      // A job takes a whole invocation, and starts at once.
      BatchSize: 1,
      MaximumBatchingWindowInSeconds: 0,
      // Ten batches in flight per stream shard: one merchant's jobs stay in order, other merchants' recounts do not wait behind them.
      ParallelizationFactor: 10,
      FunctionResponseTypes: ['ReportBatchItemFailures'],
      BisectBatchOnFunctionError: true,
      // Bounded: a job given up on stays in the table; until it is run again the figures stay those of the settings before the change.
      MaximumRetryAttempts: 5,
      MaximumRecordAgeInSeconds: 3600,
      DestinationConfig: { OnFailure: { Destination: { 'Fn::GetAtt': [queue, 'Arn'] } } },
      FilterCriteria: { Filters: [{ Pattern: expect.any(String) }] },
    });
  });

  it('its filter lets through exactly the records the worker runs', () => {
    const pattern = JSON.parse(mappingOf(defaults).FilterCriteria.Filters[0].Pattern);
    expect(pattern).toEqual({ eventName: ['INSERT'], dynamodb: { NewImage: { entity: { S: [RECOUNT_JOB_ENTITY] } } } });
    const item = {
      ...keys.recountJob('mer_filter', '000001#j'),
      entity: RECOUNT_JOB_ENTITY,
      merchant_id: 'mer_filter',
      from_id: 1,
      round: 1,
    };
    const home = pendingHome('mer_filter', 'M#2025-01', 0);
    const records = [
      streamRecord('INSERT', item),
      streamRecord('MODIFY', item),
      streamRecord('REMOVE', item),
      streamRecord('INSERT', { ...item, entity: undefined }),
      streamRecord('INSERT', { pk: home.pk, sk: `${home.sk}#P#b1#000`, entity: PENDING_MOVES_ENTITY, moves: '[]' }),
      outboxInsert('mer_filter'),
    ];
    expect(records.map((r) => matches(pattern, r))).toEqual([true, false, false, false, false, false]);
    expect(records.map(isRecountJobInsert)).toEqual(records.map((r) => matches(pattern, r)));
  });

  it("least privilege: stream reads on the stream; each table action on the merchant's partitions it is used on only; its DLQ; the table key", () => {
    const { stack, template } = defaults;
    const { table, tableKey, queue } = ids(defaults);
    const name = (resource: unknown) => {
      const text = JSON.stringify(resource);
      if (text === JSON.stringify({ 'Fn::GetAtt': [table, 'StreamArn'] })) return 'stream';
      if (text === JSON.stringify({ 'Fn::GetAtt': [table, 'Arn'] })) return 'table';
      if (text === JSON.stringify({ 'Fn::GetAtt': [tableKey, 'Arn'] })) return 'table key';
      if (text === JSON.stringify({ 'Fn::GetAtt': [queue, 'Arn'] })) return 'dlq';
      return text;
    };
    const grants = roleGrants(stack, template, stack.recountWorker.function)
      .filter((g) => !g.action.startsWith('logs:') && !g.action.startsWith('xray:'))
      .map((g) => {
        const {
          'ForAllValues:StringLike': like,
          'ForAllValues:StringEquals': equals,
          StringEqualsIfExists: ifExists,
          ...rest
        } = (g.condition ?? {}) as Record<string, Record<string, string[]>>;
        // No table-wide grant: every table action is keyed (and, the token's, to the attribute).
        if (g.action.startsWith('dynamodb:') && name(g.resource) === 'table') expect(like).toBeDefined();
        if (g.action.startsWith('dynamodb:') && name(g.resource) === 'table') expect(rest).toEqual({});
        // Attributes only with the ReturnValues limit (either alone would leave a way round the list).
        expect(Boolean(equals)).toBe(Boolean(ifExists));
        if (ifExists) expect(ifExists).toEqual({ 'dynamodb:ReturnValues': ['NONE', 'UPDATED_OLD', 'UPDATED_NEW'] });
        const attributes = equals ? ` [${equals['dynamodb:Attributes'].join(',')}] updated only` : '';
        return `${g.action} on ${name(g.resource)}${like ? ` ${like['dynamodb:LeadingKeys'].join(',')}` : ''}${attributes}`;
      })
      .sort();
    const m = `M#${merchant}`;
    const metrics = `${m}#MRR*,${m}#COHORT*,${m}#SALES*,${m}#CHURN_REASONS*`;
    expect(grants).toEqual(
      [
        `dynamodb:BatchGetItem on table ${m}#CUSTOMER#*`,
        // An older generation's retirement: its items deleted, and nothing else.
        `dynamodb:BatchWriteItem on table ${metrics},${m}#G*#SETTINGS,${m}#G*#SEGMENTS#*`,
        `dynamodb:ConditionCheckItem on table ${m}#GENERATION#*`,
        `dynamodb:DeleteItem on table ${m}#RECOUNT,${metrics}`,
        'dynamodb:DescribeStream on stream',
        `dynamodb:GetItem on table ${m},${m}#RECOUNT,${metrics}`,
        'dynamodb:GetRecords on stream',
        'dynamodb:GetShardIterator on stream',
        'dynamodb:ListStreams on stream',
        `dynamodb:PutItem on table ${m}#RECOUNT,${metrics}`,
        `dynamodb:Query on table ${m}#CUSTOMER#*,${metrics},${m}#G*#SETTINGS,${m}#G*#SEGMENTS#*`,
        `dynamodb:UpdateItem on table ${m},${m}#CUSTOMER#*,${metrics},${m}#PENDING#*,${m}#FIGURES#*,${m}#GENERATION#*`,
        // The switch: the token's copy of the figures' state, those attributes only.
        'dynamodb:UpdateItem on table TOKEN#* [pk,sk,timezone,metrics_generation,metrics_recount,delinquency_days] updated only',
        'kms:Decrypt on table key',
        'kms:DescribeKey on table key',
        'kms:Encrypt on table key',
        'kms:GenerateDataKey on table key',
        'sqs:GetQueueAttributes on dlq',
        'sqs:GetQueueUrl on dlq',
        'sqs:SendMessage on dlq',
      ].sort(),
    );
  });

  it("its LeadingKeys reach a merchant's own, job, customer, metrics, generation and token partitions, and no other data key, whatever its free text", () => {
    const patterns = new Set(
      roleGrants(defaults.stack, defaults.template, defaults.stack.recountWorker.function).flatMap(
        (g) =>
          (g.condition as Record<string, Record<string, string[]>> | undefined)?.['ForAllValues:StringLike']?.['dynamodb:LeadingKeys'] ??
          [],
      ),
    );
    // IAM StringLike: `*` is any run of characters, `?` one character.
    const like = (pattern: string) =>
      new RegExp(
        `^${pattern
          .replace(/[.+^$(){}|[\]\\]/g, '\\$&')
          .replace(/\*/g, '.*')
          .replace(/\?/g, '.')}$`,
      );
    const reached = (pk: string) => [...patterns].some((p) => like(p).test(pk));
    const id = `mer_${'0a'.repeat(10)}`;
    const segment = { dimension: 'plan' as const, value: 'Pro#MRR' };
    for (const key of [
      keys.merchant(id),
      keys.sequences(id),
      keys.recountJob(id, '000002#x'),
      keys.customerTimeline(id, 123456),
      keys.customerTimelineChunk(id, 7, '2025-01'),
      keys.metricsDay(id, '2025-01-01', 3, segment),
      keys.metricsCohort(id, '2025-01', '2025-02', 0),
      keys.churnReason(id, 'M', '2025-01', 'price', 0),
      pendingHome(id, 'M#2025-01', 0),
      keys.pendingBacklog(id, 5),
      keys.figuresVersion(id, 47),
      // A later generation's items, settings and segment registry (the recount fills them; a retirement deletes them).
      keys.metricsDay(id, '2025-01-01', 3, segment, 2),
      keys.generationZone(id, 2),
      keys.generationRates(id, 2, 'USD'),
      keys.generationSegment(id, 2, 'plan', 'Pro', 5),
      keys.generation(id, 7),
      // The switch's copy of the figures' state on the token.
      keys.token('ab12'),
    ]) {
      expect(reached(key.pk), key.pk).toBe(true);
    }
    // A merchant id of another shape, and every other kind of item, even with `#CUSTOMER#` or `#RECOUNT` in its free text:
    // the plans and the exchange rates too (the recount reads a generation's own rates).
    for (const key of [
      keys.merchant(`${id}0`),
      keys.customer('mer_1', 1),
      keys.order(id, '#CUSTOMER#1'),
      keys.customerExternalId(id, '#RECOUNT'),
      keys.plan(id, 'Pro', 0),
      keys.planCustomer(id, 'Pro#1', 9),
      keys.exchangeRates(id, 'USD'),
      keys.customerEmail(id, 'a#customer#1@example.com'),
      keys.customerMetadata(id, 'k', '#CUSTOMER#1', 1),
      keys.subscription(id, 1),
      keys.subscriptionExternalId(id, '#PLANS'),
      keys.idempotency(id, '#RATES'),
      keys.webhookEndpoint(id, 1),
      keys.totals(id, 'ORDERS', 1),
      keys.statsDay(id, '2025-01-01', 1),
      keys.activity(id, 1),
      keys.outbox(id, '2025-01-01T00:00:00Z', 'evt_1'),
      keys.outboxEvent(id, 'evt_1'),
      keys.merchantRateWindow(id, 3600),
    ]) {
      expect(reached(key.pk), key.pk).toBe(false);
    }
  });

  it('its dead-letter queue is encrypted, TLS-only, alarmed on depth and an output; no lag alarm (a job may hold its shard for 5 minutes)', () => {
    const { fn, queue } = ids(defaults);
    expectStreamConsumerAlarms(fn, queue, { lag: false });
    expect(defaults.template.findOutputs('RecountDeadLetterQueueUrl').RecountDeadLetterQueueUrl.Value).toEqual({ Ref: queue });
  });
});

describe('outbox sweeper', () => {
  const ids = ({ stack }: { stack: ApiStack }) => ({
    fn: logicalId(stack, stack.outboxRelay.sweeper),
    table: stack.getLogicalId(stack.table.node.defaultChild as never),
    bus: stack.getLogicalId(stack.eventBus.node.defaultChild as never),
    tableKey: stack.getLogicalId(stack.table.encryptionKey!.node.defaultChild as never),
  });

  it('runs on a schedule every SWEEP_INTERVAL_MINUTES, each run within its timeout, a failed run not retried (the next run is)', () => {
    const { fn } = ids(defaults);
    const rules = Object.values(resources(defaults.template, 'AWS::Events::Rule')).filter((r) =>
      (r.Properties.Targets ?? []).some((t: { Arn: unknown }) => JSON.stringify(t.Arn) === JSON.stringify({ 'Fn::GetAtt': [fn, 'Arn'] })),
    );
    expect(rules).toHaveLength(1);
    expect(rules[0].Properties).toMatchObject({ ScheduleExpression: `rate(${SWEEP_INTERVAL_MINUTES} minutes)`, State: 'ENABLED' });
    expect(rules[0].Properties.EventBusName).toBeUndefined();
    expect(rules[0].Properties.Targets[0].RetryPolicy).toEqual({ MaximumRetryAttempts: 0 });
    const { Properties: p } = resources(defaults.template, 'AWS::Lambda::Function')[fn];
    expect(p.Timeout).toBe(SWEEP_FUNCTION_TIMEOUT_SECONDS);
    expect(SWEEP_FUNCTION_TIMEOUT_SECONDS).toBeLessThan(SWEEP_INTERVAL_MINUTES * 60);
    expect(p.Description).toContain(OUTBOX_SWEEPER_HANDLER);
    defaults.template.hasResourceProperties('AWS::Lambda::EventInvokeConfig', { FunctionName: { Ref: fn }, MaximumRetryAttempts: 0 });
  });

  it('least privilege: lists merchants (gsi1) and pending marks (gsi4), reads marks and event items, stamps marks, puts events on the bus', () => {
    const { stack, template } = defaults;
    const { table, bus, tableKey } = ids(defaults);
    const name = (resource: unknown) => {
      const text = JSON.stringify(resource);
      if (text === JSON.stringify({ 'Fn::GetAtt': [table, 'Arn'] })) return 'table';
      if (text === JSON.stringify({ 'Fn::GetAtt': [bus, 'Arn'] })) return 'bus';
      if (text === JSON.stringify({ 'Fn::GetAtt': [tableKey, 'Arn'] })) return 'table key';
      const index = /\/index\/(gsi\d)/.exec(text);
      return index ? `index ${index[1]}` : 'other';
    };
    const grants = roleGrants(stack, template, stack.outboxRelay.sweeper)
      .filter((g) => !g.action.startsWith('logs:') && !g.action.startsWith('xray:'))
      .map((g) => {
        const leading = (g.condition as { 'ForAllValues:StringLike'?: { 'dynamodb:LeadingKeys': string[] } } | undefined)?.[
          'ForAllValues:StringLike'
        ]?.['dynamodb:LeadingKeys'];
        return `${g.action} on ${name(g.resource)}${leading ? ` ${leading.join(',')}` : ''}`;
      })
      .sort();
    expect(grants).toEqual([
      'dynamodb:BatchGetItem on table OUTBOX#*,OUTBOX_EVENT#*',
      'dynamodb:Query on index gsi1',
      'dynamodb:Query on index gsi4',
      'dynamodb:UpdateItem on table OUTBOX#*',
      'events:PutEvents on bus',
      'kms:Decrypt on table key',
      'kms:DescribeKey on table key',
      'kms:Encrypt on table key',
      'kms:GenerateDataKey on table key',
    ]);
  });
});
