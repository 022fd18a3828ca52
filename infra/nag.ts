import { CfnResource, Token, Validations, type App, type IPolicyValidationPlugin } from 'aws-cdk-lib';
import type { Queue } from 'aws-cdk-lib/aws-sqs';
import { AwsSolutionsChecks, ServerlessChecks } from 'cdk-nag';
import type { IConstruct } from 'constructs';
import { authKindOf } from '#lib/http/route';
import type { RouteName } from '#lib/api/routes';
import { ApiFunction } from './constructs/api-function.ts';
import type { ApiStack } from './stack.ts';

/** The cdk-nag 3 packs `cdk synth` runs (infra/app.ts) and test/infra/nag.test.ts checks. */
export const nagPacks = (app?: App) => [new AwsSolutionsChecks(app), new ServerlessChecks(app)];

/** Registers the packs: a finding that is not acknowledged below fails `cdk synth`. */
export const addNagChecks = (app: App) => Validations.of(app).addPlugins(...(nagPacks(app) as IPolicyValidationPlugin[]));

/**
 * Why each finding that stays is right for this stack. Every acknowledgment is made on the one
 * CloudFormation resource it is about (never a stack or a subtree), by `acknowledgeNagFindings`.
 */
export const NAG_REASONS = {
  xrayWildcard:
    'X-Ray: xray:PutTraceSegments and xray:PutTelemetryRecords support no resource-level permissions, so Resource "*" is the only form (active tracing). Every other statement names its resources.',
  runtime:
    'nodejs22.x on purpose: the code is built and tested for the Node 22 line (esbuild target node22, SDK bundled); moving to a newer runtime is a deliberate upgrade with its own test run, not a default.',
  noAsyncInvocation:
    'Never invoked asynchronously, so a function DLQ would never receive anything: API functions are invoked synchronously by API Gateway (the caller gets the answer), the relay, the pending-moves applier and the recount worker by stream mappings with on-failure SQS destinations, the outbox sweeper by its schedule with no retry (a failed run is followed by the next, which finds the same pending events in the table), the webhook consumers by SQS mappings whose queues redrive to dead-letter queues.',
  tokenRoute:
    'Authorised by the function, not API Gateway: the API token is looked up in the table on every request (docs/authentication-and-limits.md: a revoked or regenerated token is refused on the very next request, which an authorizer cache would not guarantee) and unauthenticated requests are rate limited per IP.',
  publicRoute:
    'Public by design: the OpenAPI document needs no token (docs/decisions.md); like any request without a valid token it counts against the per-IP limit.',
  defaultRoute:
    "The catch-all ($default) only answers 404 for unknown paths (after counting the request against the caller's rate window); it reads no data.",
  cognitoLite:
    'Lite plan on purpose: users are created by operators only (no self sign-up), MFA with an authenticator app is required for everyone, and the pool holds a handful of merchant admins; Plus (threat protection) is priced per user for risks these settings already close.',
  deadLetterQueue:
    "This queue IS a dead-letter queue (a Lambda stream mapping's on-failure destination or an EventBridge target's DLQ): cdk-nag only recognises DLQs named in an SQS redrive policy. It is alarmed at one message.",
  endOfLine:
    'A dead-letter queue is the end of the line: there is nothing further to redrive to. It keeps messages 14 days and is alarmed at one message.',
  sqsMapping:
    'SQS event source mappings cannot have an on-failure destination (only stream and Kafka mappings can): failed messages return to the queue and its redrive policy moves them to its dead-letter queue.',
  siteBucketLogs:
    'The dashboard bucket holds only the public, rebuildable web bundle and is read by CloudFront alone (OAC); server access logs would record nothing but CloudFront.',
  siteGeo: 'The dashboard is for merchants anywhere: no geo restriction.',
  siteWaf:
    'A static bundle with no server side: every API call it makes is authenticated and rate-limited by the API itself, so a web ACL in front of the files buys nothing.',
  siteLogs: 'Access logs of a static bundle are not needed: the API calls it makes are logged by API Gateway.',
  siteTls:
    'TLSv1.2_2021 is requested; with the default *.cloudfront.net certificate CloudFront keeps its own TLS floor until a custom domain and ACM certificate are added (docs/backoffice-and-dashboard.md).',
  apiGeo: 'The API serves merchants anywhere: no geo restriction; the web ACL limits each IP instead.',
  apiLogs:
    "CloudFront access logs would need a bucket of their own (with ACLs) and would record nothing new: every request the web ACL blocks or counts is in its WAF log (us-east-1, Authorization redacted), and every request that reaches the API is in API Gateway's access log.",
  apiTls:
    'TLSv1.2_2021 is requested; with the default *.cloudfront.net certificate CloudFront keeps its own TLS floor until a custom domain and ACM certificate are added (docs/deployment-and-protection.md).',
  originSecret:
    "The origin secret only tells CloudFront's requests from direct calls to the execute-api URL (it grants no data access). CloudFormation resolves it into the distribution's origin header and the functions' environment at deploy time, so a Secrets Manager rotation would reach neither end until the next deploy and would refuse every request in between; it is changed by a deploy instead (docs/deployment-and-protection.md).",
  cursorSecret:
    "The cursor secret only seals list cursors (it grants no data access: a cursor is still checked against the merchant's own list). CloudFormation resolves it into the functions' environment at deploy time, so a rotation would reach them only at the next deploy; it is changed by a deploy, which only makes outstanding cursors refused (docs/api-conventions.md).",
  schedulerTracing:
    "X-Ray: the cancellation scheduler's state machine traces its executions, and its tracing grants (xray:PutTraceSegments, PutTelemetryRecords, GetSamplingRules, GetSamplingTargets) support no resource-level permissions.",
  schedulerInvoke:
    "CDK's LambdaInvoke grants lambda:InvokeFunction on the check function and its versions (`<arn>:*`): one function, no other.",
  schedulerLogs:
    'Execution logs would need wildcard log-delivery permissions; the check function logs every decision (applied, not due, replaced), and executions are traced by X-Ray and kept in the Step Functions history for 90 days.',
  sweepSchedule:
    'The outbox sweeper runs on a schedule every few minutes: a run that fails, or that the schedule cannot deliver, is followed by the next, which finds the same pending events in the table (nothing is lost); the function alarms on errors.',
  cdkHandler:
    "A CDK-provided deploy-time custom-resource handler (dashboard upload, bucket emptying on a dev stack's deletion), not a service function: CDK writes its role (the AWS-managed basic execution role), its runtime and its grants (this bucket's objects, the CDK asset objects, CloudFront invalidations).",
} as const;

const acknowledge = (construct: IConstruct | undefined, id: string, reason: string) => {
  if (!construct || !CfnResource.isCfnResource(construct))
    throw new Error(`cdk-nag acknowledgment ${id}: expected a CloudFormation resource, got ${construct?.node.path}`);
  Validations.of(construct).acknowledge({ id, reason });
};
const resourceOf = (construct: IConstruct) => construct.node.defaultChild;

/** Records every acknowledgment on the stack's resources (called at the end of ApiStack's constructor). */
export const acknowledgeNagFindings = (stack: ApiStack) => {
  const functions = stack.node.findAll().filter((c): c is ApiFunction => c instanceof ApiFunction);
  for (const fn of functions) {
    acknowledge(fn.role?.node.tryFindChild('DefaultPolicy')?.node.defaultChild, 'AwsSolutions-IAM5[Resource::*]', NAG_REASONS.xrayWildcard);
    acknowledge(resourceOf(fn), 'AwsSolutions-L1', NAG_REASONS.runtime);
    acknowledge(resourceOf(fn), 'Serverless-LambdaLatestVersion', NAG_REASONS.runtime);
    acknowledge(resourceOf(fn), 'Serverless-LambdaDLQ', NAG_REASONS.noAsyncInvocation);
  }

  for (const route of stack.routeTable) {
    const kind = authKindOf(route);
    if (kind === 'backoffice') continue; // the Cognito JWT authorizer
    const construct = stack.routes[route.name as RouteName];
    acknowledge(resourceOf(construct), 'AwsSolutions-APIG4', kind === 'token' ? NAG_REASONS.tokenRoute : NAG_REASONS.publicRoute);
  }
  acknowledge(resourceOf(stack.api.node.findChild('DefaultRoute')), 'AwsSolutions-APIG4', NAG_REASONS.defaultRoute);

  const pool = stack.node.findChild('BackofficeIdentity').node.findChild('UserPool');
  acknowledge(resourceOf(pool), 'AwsSolutions-COG8', NAG_REASONS.cognitoLite);

  const site = stack.dashboard;
  acknowledge(resourceOf(site.bucket), 'AwsSolutions-S1', NAG_REASONS.siteBucketLogs);
  acknowledge(resourceOf(site.distribution), 'AwsSolutions-CFR1', NAG_REASONS.siteGeo);
  acknowledge(resourceOf(site.distribution), 'AwsSolutions-CFR2', NAG_REASONS.siteWaf);
  acknowledge(resourceOf(site.distribution), 'AwsSolutions-CFR3', NAG_REASONS.siteLogs);
  acknowledge(resourceOf(site.distribution), 'AwsSolutions-CFR4', NAG_REASONS.siteTls);
  // CDK's annotation is on the L2 distribution, so its acknowledgment is too.
  Validations.of(site.distribution).acknowledge({
    id: 'Annotation::@aws-cdk/aws-cloudfront:minimumProtocolVersionWithoutCertificate',
    reason: NAG_REASONS.siteTls,
  });
  // The upload handler's grants, as cdk-nag 3 names each wildcard (bucket objects, CDK's asset bucket, invalidations).
  const known = (value: string, pseudo: string) => (Token.isUnresolved(value) ? `<AWS::${pseudo}>` : value);
  const uploadWildcards = [
    ...['s3:GetBucket*', 's3:GetObject*', 's3:List*', 's3:Abort*', 's3:DeleteObject*'].map((a) => `Action::${a}`),
    'Resource::*',
    `Resource::<${stack.resolve(stack.getLogicalId(resourceOf(site.bucket) as CfnResource))}.Arn>/*`,
    `Resource::arn:${known(stack.partition, 'Partition')}:s3:::cdk-${stack.synthesizer.bootstrapQualifier ?? 'hnb659fds'}-assets-<AWS::AccountId>-${known(stack.region, 'Region')}/*`,
  ];
  // CDK's singleton handlers (stack root): each finding on the resource it is about.
  for (const handler of stack.node.children.filter((c) => /^Custom::(CDKBucketDeployment|S3AutoDeleteObjects)/.test(c.node.id))) {
    for (const r of handler.node.findAll().filter(CfnResource.isCfnResource)) {
      const findings: Record<string, string[]> = {
        'AWS::IAM::Role': ['AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole]'],
        'AWS::IAM::Policy': uploadWildcards.map((w) => `AwsSolutions-IAM5[${w}]`),
        'AWS::Lambda::Function': [
          'AwsSolutions-L1',
          'Serverless-LambdaDLQ',
          'Serverless-LambdaLatestVersion',
          'Serverless-LambdaTracing',
          'Serverless-LambdaDefaultMemorySize',
          'Serverless-LambdaAsyncFailureDestination',
        ],
      };
      for (const id of findings[r.cfnResourceType] ?? []) acknowledge(r, id, NAG_REASONS.cdkHandler);
    }
  }

  // The API's front door (when built with the edge stack): its distribution and origin secret.
  if (stack.front) {
    const api = stack.front.distribution;
    acknowledge(resourceOf(api), 'AwsSolutions-CFR1', NAG_REASONS.apiGeo);
    acknowledge(resourceOf(api), 'AwsSolutions-CFR3', NAG_REASONS.apiLogs);
    acknowledge(resourceOf(api), 'AwsSolutions-CFR4', NAG_REASONS.apiTls);
    Validations.of(api).acknowledge({
      id: 'Annotation::@aws-cdk/aws-cloudfront:minimumProtocolVersionWithoutCertificate',
      reason: NAG_REASONS.apiTls,
    });
    acknowledge(resourceOf(stack.front.secret), 'AwsSolutions-SMG4', NAG_REASONS.originSecret);
  }

  acknowledge(resourceOf(stack.cursorSecret), 'AwsSolutions-SMG4', NAG_REASONS.cursorSecret);

  const sweeper = stack.outboxRelay.sweeper;
  acknowledge(resourceOf(stack.outboxRelay.sweepSchedule), 'Serverless-EventBusDLQ', NAG_REASONS.sweepSchedule);
  acknowledge(
    sweeper.node.tryFindChild('EventInvokeConfig')?.node.defaultChild,
    'Serverless-LambdaAsyncFailureDestination',
    NAG_REASONS.sweepSchedule,
  );

  const webhooks = stack.webhookDelivery;
  const queue = (q: Queue) => resourceOf(q);
  const scheduler = stack.cancelScheduler;
  for (const dlq of [
    stack.outboxRelay.deadLetterQueue,
    stack.pendingMovesApplier.deadLetterQueue,
    stack.recountWorker.deadLetterQueue,
    webhooks.ruleDeadLetterQueue,
    scheduler.deadLetterQueue,
  ]) {
    acknowledge(queue(dlq), 'AwsSolutions-SQS3', NAG_REASONS.deadLetterQueue);
  }
  const machinePolicy = scheduler.stateMachine.role.node.tryFindChild('DefaultPolicy')?.node.defaultChild;
  acknowledge(machinePolicy, 'AwsSolutions-IAM5[Resource::*]', NAG_REASONS.schedulerTracing);
  const checkId = stack.resolve(stack.getLogicalId(resourceOf(scheduler.checkFunction) as CfnResource));
  acknowledge(machinePolicy, `AwsSolutions-IAM5[Resource::<${checkId}.Arn>:*]`, NAG_REASONS.schedulerInvoke);
  acknowledge(resourceOf(scheduler.stateMachine), 'AwsSolutions-SF1', NAG_REASONS.schedulerLogs);
  for (const dlq of [
    stack.outboxRelay.deadLetterQueue,
    stack.pendingMovesApplier.deadLetterQueue,
    stack.recountWorker.deadLetterQueue,
    webhooks.ruleDeadLetterQueue,
    scheduler.deadLetterQueue,
    webhooks.eventsDeadLetterQueue,
    webhooks.deliveryDeadLetterQueue,
  ]) {
    acknowledge(queue(dlq), 'Serverless-SQSRedrivePolicy', NAG_REASONS.endOfLine);
  }
  for (const consumer of [webhooks.fanOutFunction, webhooks.deliveryFunction]) {
    const mappings = consumer.node.children.filter((c) => c.node.id.startsWith('SqsEventSource:'));
    if (mappings.length !== 1) throw new Error(`${consumer.node.path}: expected one SQS event source, found ${mappings.length}`);
    acknowledge(resourceOf(mappings[0]), 'Serverless-LambdaEventSourceMappingDestination', NAG_REASONS.sqsMapping);
  }
};
