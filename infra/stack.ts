import { Annotations, CfnOutput, Duration, Fn, RemovalPolicy, Stack, type StackProps } from 'aws-cdk-lib';
import { AccessLogFormat } from 'aws-cdk-lib/aws-apigateway';
import {
  type CfnStage,
  CorsHttpMethod,
  HttpApi,
  HttpMethod,
  HttpRoute,
  HttpRouteKey,
  HttpStage,
  LogGroupLogDestination,
  PayloadFormatVersion,
  type ThrottleSettings,
} from 'aws-cdk-lib/aws-apigatewayv2';
import { HttpLambdaIntegration } from 'aws-cdk-lib/aws-apigatewayv2-integrations';
import { EventBus } from 'aws-cdk-lib/aws-events';
import { PolicyStatement } from 'aws-cdk-lib/aws-iam';
import { Key } from 'aws-cdk-lib/aws-kms';
import { Secret } from 'aws-cdk-lib/aws-secretsmanager';
import { LogGroup, RetentionDays } from 'aws-cdk-lib/aws-logs';
import type { Construct, Node } from 'constructs';
import { authKindOf, BASE_PATH, FUNCTION_TIMEOUT_SECONDS, type Ability, type RouteDef } from '#lib/http/route';
import { NOT_FOUND_HANDLER, routeList, type RouteName } from '#lib/api/routes';
import { RouteGroup, routeGroupOf } from './constructs/route-group.ts';
import { ApiFunction, METRICS_NAMESPACE_ENV, SERVICE_NAME, type TableAccess } from './constructs/api-function.ts';
import { BackofficeIdentity } from './constructs/backoffice-identity.ts';
import { DashboardSite } from './constructs/dashboard-site.ts';
import { DataTable } from './constructs/data-table.ts';
import { ApiMonitoring } from './constructs/monitoring.ts';
import { acknowledgeNagFindings } from './nag.ts';
import { OutboxRelay } from './constructs/outbox-relay.ts';
import { PendingMovesApplier } from './constructs/pending-moves-applier.ts';
import { RecountWorker } from './constructs/recount-worker.ts';
import { WebhookDelivery } from './constructs/webhook-delivery.ts';
import { CancelScheduler } from './constructs/cancel-scheduler.ts';
import { ApiFront, type OriginLock } from './constructs/api-front.ts';
import { EdgeStack, WEB_ACL_ARN_OUTPUT, wafRateLimitFor } from './edge-stack.ts';
import { ORIGIN_VERIFY_ENV } from '#lib/http/front-door';
import { PROJECT_ROOT } from './paths.ts';

export const STACK_BASE_NAME = 'RevenueAnalyticsApi';
export const LOG_LEVELS = ['DEBUG', 'INFO', 'WARN', 'ERROR', 'SILENT'] as const;

export type ApiStackProps = StackProps & {
  /**
   * With `edge`: CloudFront reaches the API only on this custom domain, with its client certificate,
   * and the execute-api endpoint is disabled (infra/constructs/api-front.ts `OriginLock`).
   */
  originLock?: OriginLock;
  /** Deployment stage; names the event bus and is passed to the functions as STAGE. */
  stage?: string;
  /** docs/authentication-and-limits.md: 3,600 per merchant per hour. */
  rateLimitPerHour?: number;
  /** docs/authentication-and-limits.md: 10 per source IP per minute. */
  unauthenticatedRateLimitPerMinute?: number;
  logLevel?: (typeof LOG_LEVELS)[number];
  /** Account-level guard in front of the per-merchant limits: every route's bucket unless `routeThrottleFor` sizes it. */
  throttle?: Required<ThrottleSettings>;
  /**
   * The most requests per second one merchant may send to the routes of an ability (order writes
   * 500/s, subscription changes 100/s): those routes' stage throttle is at least this, so one
   * merchant at full speed is never cut by the stage's default bucket.
   */
  merchantPeakPerSecond?: Partial<Record<Ability, number>>;
  /**
   * Keep the table, its key and the user pool when the stack (or they) are deleted, with deletion
   * protection on. Always true for prod; other stages default to false (`cdk destroy` removes them).
   */
  retainTable?: boolean;
  /** Where package.json and the handler modules live (tests point it elsewhere). */
  projectRoot?: string;
  /** The routes to build (the route table unless told: tests build a larger table to measure head-room). */
  routes?: readonly (RouteDef & { name: string })[];
  /**
   * For `sam local start-api` only: point every function at a DynamoDB Local table (the
   * functions' TABLE_NAME otherwise resolves to a logical id there). Never deploy such a template.
   */
  localDynamo?: { endpoint: string; tableName: string };
  /**
   * The us-east-1 stack holding the web ACL (`buildStacks` makes it): when given, the API gets its
   * front door, a CloudFront distribution with that web ACL and the origin secret the functions
   * check, and the API's public URL is the distribution's. Absent, the API is reached on its
   * execute-api URL as before (`-c edge=false`: a team that fronts the API with its own edge).
   */
  edge?: EdgeStack;
};

/** The stage whose stack keeps its data and has termination protection. */
export const PROD_STAGE = 'prod';

export const DEFAULTS = {
  stage: PROD_STAGE,
  rateLimitPerHour: 3600,
  unauthenticatedRateLimitPerMinute: 10,
  logLevel: 'INFO',
  throttle: { rateLimit: 100, burstLimit: 200 },
  merchantPeakPerSecond: { 'orders:write': 500, 'subscriptions:write': 100 } as Partial<Record<Ability, number>>,
  /** The table `npm start` creates in DynamoDB Local. */
  localTableName: 'revenue-analytics',
} as const;

/**
 * Table access of a route's function: write routes write the merchant's items and the outbox (those
 * whose change builds a generation of the figures also put it with BatchWriteItem and update the
 * token's copy of the settings; the back office's token routes write token items), except those that send a signed request
 * to a merchant-chosen URL (they decrypt signing secrets: test, manual retry), which write webhook
 * items only; public routes (such as the OpenAPI document) read no data, only the token and
 * rate-window items every request touches.
 */
export const tableAccessFor = (route: Pick<RouteDef, 'writes' | 'ability' | 'auth' | 'secrets' | 'recounts' | 'tokens'>): TableAccess =>
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

/** The one KMS action a route's function may take on the webhook secrets key (RouteDef `secrets`). */
export const KMS_ACTION = { encrypt: 'kms:Encrypt', decrypt: 'kms:Decrypt' } as const;

/**
 * A route's own stage throttle, when its bucket must be larger than the stage default: the routes
 * of an ability one merchant may call at `peaks[ability]` per second get that rate (and a burst of
 * twice it); every other route keeps the default bucket (undefined).
 */
export const routeThrottleFor = (
  route: Pick<RouteDef, 'ability'>,
  stageThrottle: Required<ThrottleSettings>,
  peaks: Partial<Record<Ability, number>>,
): Required<ThrottleSettings> | undefined => {
  const peak = route.ability ? peaks[route.ability] : undefined;
  if (peak === undefined || peak <= stageThrottle.rateLimit) return undefined;
  return { rateLimit: peak, burstLimit: Math.max(stageThrottle.burstLimit, 2 * peak) };
};

/** PascalCase construct id from a route name: customersList → CustomersList. */
export const constructIdFor = (routeName: string) => routeName.charAt(0).toUpperCase() + routeName.slice(1);

/**
 * The API: one DynamoDB table, one Lambda function per entry of the route table behind an HTTP
 * API at /v1, a catch-all 404 function, the event bus for webhook events, the outbox relay
 * that publishes them to it from the table's stream, and the webhook delivery that consumes them;
 * from the same stream, the applier of the pending moves batches write and the recount worker.
 */
export class ApiStack extends Stack {
  readonly table: DataTable;
  readonly api: HttpApi;
  readonly eventBus: EventBus;
  /** Encrypts webhook signing secrets (lib/webhooks/secrets.ts); kept with the table. */
  readonly webhookSecretsKey: Key;
  readonly outboxRelay: OutboxRelay;
  /** Applies the pending-moves items batches write, from the table's stream. */
  readonly pendingMovesApplier: PendingMovesApplier;
  /** Recounts the figures after a change of time zone or exchange rates (its jobs from the table's stream), switches, and retires the generation before. */
  readonly recountWorker: RecountWorker;
  readonly webhookDelivery: WebhookDelivery;
  readonly cancelScheduler: CancelScheduler;
  readonly functions: Record<RouteName, ApiFunction>;
  /** The route table this stack was built from. */
  readonly routeTable: readonly (RouteDef & { name: string })[];
  /** Each route's API Gateway route, by route name. */
  readonly routes: Record<RouteName, HttpRoute>;
  /** The nested stacks holding the route functions, one per route family (`routeGroupOf`). */
  readonly routeGroups: Record<string, RouteGroup>;
  readonly notFoundFunction: ApiFunction;
  readonly monitoring: ApiMonitoring;
  readonly dashboard: DashboardSite;
  /** The CloudFront distribution and origin secret in front of the API (when built with an edge stack). */
  readonly front?: ApiFront;
  /** The secret list cursors are sealed with (a key derived per merchant, lib/shared/cursor.ts). */
  readonly cursorSecret: Secret;
  /** The API's public base URL, `…/v1`: the distribution's when fronted, else the execute-api URL. */
  readonly apiUrl: string;

  constructor(scope: Construct, id: string, props: ApiStackProps = {}) {
    const stage = props.stage ?? DEFAULTS.stage;
    if (stage === 'local') throw new Error('stage "local" is reserved for the local stack (it relaxes webhook URL rules)');
    if (stage === PROD_STAGE && props.retainTable === false)
      throw new Error('the prod stack always keeps its data: retainTable=false is refused for stage prod');
    // The stage throttle is the account's backstop: above what one merchant may send (its own limit,
    // per hour) and below the account's Lambda concurrency (docs/operations.md: Concurrency and throttling).
    const throttle = props.throttle ?? DEFAULTS.throttle;
    const merchantPerSecond = (props.rateLimitPerHour ?? DEFAULTS.rateLimitPerHour) / 3600;
    if (throttle.rateLimit < merchantPerSecond || throttle.burstLimit < throttle.rateLimit) {
      throw new Error(
        `stage throttling (${throttle.rateLimit}/s, burst ${throttle.burstLimit}) must allow at least one merchant's limit (${merchantPerSecond.toFixed(2)}/s) and a burst of at least the rate`,
      );
    }
    // A prod stack cannot be deleted until its termination protection is turned off by hand.
    super(scope, id, { ...props, terminationProtection: props.terminationProtection ?? stage === PROD_STAGE });
    const projectRoot = props.projectRoot ?? PROJECT_ROOT;

    const retain = props.retainTable ?? stage === PROD_STAGE;
    this.table = new DataTable(this, 'Table', { retain });
    // The stored secrets are useless without it: it lives (and is kept) with the table.
    this.webhookSecretsKey = new Key(this, 'WebhookSecretsKey', {
      description: 'Encrypts webhook signing secrets stored in the table (encryption context: merchant_id)',
      enableKeyRotation: true,
      removalPolicy: retain ? RemovalPolicy.RETAIN : RemovalPolicy.DESTROY,
    });

    // The functions' Powertools metrics land in a namespace named after the stack, so stages never mix.
    const observability = { STAGE: stage, LOG_LEVEL: props.logLevel ?? DEFAULTS.logLevel, [METRICS_NAMESPACE_ENV]: this.stackName };
    // Behind the edge, every API function refuses requests without CloudFront's origin secret.
    this.front = props.edge ? new ApiFront(this, 'Front') : undefined;
    // Generated at deploy time and resolved by CloudFormation into the functions' environment (never in
    // the template). Replacing it only makes the cursors given out before refused (422): lists restart.
    this.cursorSecret = new Secret(this, 'CursorSecret', {
      description: 'Seals list cursors (AES-256-GCM, a key derived per merchant): a cursor shows nothing of the keys it names',
      generateSecretString: { passwordLength: 64, excludePunctuation: true, includeSpace: false },
      removalPolicy: RemovalPolicy.DESTROY,
    });
    const environment = {
      ...observability,
      RATE_LIMIT_PER_HOUR: String(props.rateLimitPerHour ?? DEFAULTS.rateLimitPerHour),
      UNAUTHENTICATED_RATE_LIMIT_PER_MINUTE: String(props.unauthenticatedRateLimitPerMinute ?? DEFAULTS.unauthenticatedRateLimitPerMinute),
      ...(this.front ? { [ORIGIN_VERIFY_ENV]: this.front.secretValue } : {}),
      CURSOR_SECRET: this.cursorSecret.secretValue.unsafeUnwrap(),
    };
    const apiFunction = (
      scope: Construct,
      fnId: string,
      handlerPath: string,
      description: string,
      access: TableAccess,
      timeoutSeconds = FUNCTION_TIMEOUT_SECONDS,
    ) =>
      new ApiFunction(scope, fnId, {
        projectRoot,
        handlerPath,
        description,
        environment,
        timeout: Duration.seconds(timeoutSeconds),
      }).bindTable(this.table, access);

    this.notFoundFunction = apiFunction(this, 'NotFoundFunction', NOT_FOUND_HANDLER, `$default (${NOT_FOUND_HANDLER})`, 'pipeline');
    // The merchant dashboard (S3 + CloudFront); the browser calls the API from its origin (CORS).
    this.dashboard = new DashboardSite(this, 'Dashboard', { projectRoot, retain });
    this.api = new HttpApi(this, 'HttpApi', {
      apiName: `${SERVICE_NAME}-${stage}`,
      description: 'Revenue analytics API',
      createDefaultStage: false,
      // Locked origin: the execute-api URL answers 403 itself, before any stage (docs/deployment-and-protection.md).
      disableExecuteApiEndpoint: Boolean(this.front && props.originLock),
      corsPreflight: {
        allowOrigins: [this.dashboard.origin],
        allowHeaders: ['authorization', 'content-type'],
        allowMethods: [CorsHttpMethod.GET, CorsHttpMethod.POST, CorsHttpMethod.PUT, CorsHttpMethod.PATCH, CorsHttpMethod.DELETE],
        // The CSV downloads page by X-Next-Cursor (a CSV answer has no room for meta); the dashboard reads Recount-Pending.
        exposeHeaders: [
          'x-request-id',
          'x-ratelimit-limit',
          'x-ratelimit-remaining',
          'x-ratelimit-reset',
          'retry-after',
          'x-total-count',
          'x-next-cursor',
          'recount-pending',
        ],
        maxAge: Duration.hours(1),
      },
      defaultIntegration: new HttpLambdaIntegration('NotFoundIntegration', this.notFoundFunction, {
        payloadFormatVersion: PayloadFormatVersion.VERSION_2_0,
      }),
    });

    // Back-office users (Cognito) and the JWT authorizer of the back-office routes.
    const backoffice = new BackofficeIdentity(this, 'BackofficeIdentity', {
      stage,
      retain,
      dashboard: { callbackUrl: this.dashboard.url, domainPrefix: `revenue-dashboard-${stage}-${this.account}` },
    });
    const functions: Partial<Record<RouteName, ApiFunction>> = {};
    const routes: Partial<Record<RouteName, HttpRoute>> = {};
    this.routeGroups = {};
    this.routeTable = props.routes ?? routeList;
    for (const route of this.routeTable) {
      const name = constructIdFor(route.name);
      const routeKey = `${route.method} ${BASE_PATH}${route.path}`;
      // Route functions live in nested stacks by family, so the root template stays far from 500 resources.
      const groupId = routeGroupOf(route);
      const group = (this.routeGroups[groupId] ??= new RouteGroup(this, groupId, groupId.replace(/Routes$/, '')));
      // Routes that call a merchant's webhook URL (test, retry) run longer than the others.
      const fn = apiFunction(
        group,
        `${name}Function`,
        route.handler,
        `${routeKey} (${route.handler})`,
        tableAccessFor(route),
        route.timeoutSeconds,
      );
      // Routes open to the dashboard verify its users' ID tokens themselves (no authorizer on a token route).
      if (route.dashboard) {
        fn.addEnvironment('BACKOFFICE_JWT_ISSUER', backoffice.issuer);
        fn.addEnvironment('BACKOFFICE_JWT_AUDIENCE', backoffice.dashboardClient!.userPoolClientId);
      }
      // Functions that issue webhook secrets may only encrypt them; those that sign deliveries only decrypt.
      if (route.secrets) {
        fn.addEnvironment('WEBHOOK_KMS_KEY_ID', this.webhookSecretsKey.keyArn);
        fn.addToRolePolicy(new PolicyStatement({ actions: [KMS_ACTION[route.secrets]], resources: [this.webhookSecretsKey.keyArn] }));
      }
      routes[route.name as RouteName] = new HttpRoute(group, `${name}Route`, {
        httpApi: this.api,
        routeKey: HttpRouteKey.with(`${BASE_PATH}${route.path}`, HttpMethod[route.method]),
        integration: new HttpLambdaIntegration(`${name}Integration`, fn, {
          payloadFormatVersion: PayloadFormatVersion.VERSION_2_0,
        }),
        ...(authKindOf(route) === 'backoffice' ? { authorizer: backoffice.authorizer } : {}),
      });
      functions[route.name as RouteName] = fn;
    }
    this.functions = functions as Record<RouteName, ApiFunction>;
    this.routes = routes as Record<RouteName, HttpRoute>;

    if (props.originLock && !this.front) throw new Error('originLock needs the edge (CloudFront is the only client it lets in)');
    if (props.edge && this.front) {
      if (props.originLock) this.front.lockOrigin(this.api, props.originLock);
      else
        Annotations.of(this.front).addWarningV2(
          'revenue-analytics:originNotLocked',
          'The execute-api URL stays open: a flood sent there round CloudFront takes from the stage throttle every merchant shares. Set -c originDomain, originCertificateArn, originTruststoreUri and originClientCertificateArn to lock it (docs/deployment-and-protection.md).',
        );
      // The web ACL's ARN, read from the edge stack's output at deploy time (it is deployed first).
      this.front.fronting(this.api, Fn.getStackOutput(props.edge.stackName, WEB_ACL_ARN_OUTPUT, props.edge.region));
      this.addStackDependency(props.edge, "the API distribution uses the edge stack's web ACL");
    }
    this.apiUrl = this.front ? this.front.url : `${this.api.apiEndpoint}${BASE_PATH}`;

    this.dashboard.deploy({
      apiBase: this.apiUrl,
      auth: {
        kind: 'cognito',
        domain: backoffice.domain!.baseUrl(),
        clientId: backoffice.dashboardClient!.userPoolClientId,
        redirectUri: this.dashboard.url,
      },
    });

    if (props.localDynamo) {
      for (const fn of [this.notFoundFunction, ...Object.values(this.functions)]) {
        fn.addEnvironment('DYNAMODB_ENDPOINT', props.localDynamo.endpoint);
        fn.addEnvironment('TABLE_NAME', props.localDynamo.tableName);
      }
      Annotations.of(this).addWarningV2(
        'revenue-analytics:localDynamo',
        `Functions use DynamoDB at ${props.localDynamo.endpoint}: this template is for sam local, do not deploy it.`,
      );
    }

    const accessLogs = new LogGroup(this, 'AccessLogs', {
      retention: RetentionDays.ONE_MONTH,
      removalPolicy: RemovalPolicy.DESTROY,
    });
    // Routes one merchant may call faster than the default bucket allows get a bucket of their own.
    const peaks = props.merchantPeakPerSecond ?? DEFAULTS.merchantPeakPerSecond;
    const routeSettings = Object.fromEntries(
      this.routeTable.flatMap((route) => {
        const own = routeThrottleFor(route, throttle, peaks);
        // RouteSettings is a plain JSON property: written as CloudFormation names it.
        return own
          ? [[`${route.method} ${BASE_PATH}${route.path}`, { ThrottlingRateLimit: own.rateLimit, ThrottlingBurstLimit: own.burstLimit }]]
          : [];
      }),
    );
    const apiStage = new HttpStage(this, 'DefaultStage', {
      httpApi: this.api,
      stageName: '$default',
      autoDeploy: true,
      throttle,
      accessLogSettings: {
        destination: new LogGroupLogDestination(accessLogs),
        format: AccessLogFormat.custom(
          JSON.stringify({
            requestId: '$context.requestId',
            ip: '$context.identity.sourceIp',
            requestTime: '$context.requestTime',
            method: '$context.httpMethod',
            path: '$context.path',
            routeKey: '$context.routeKey',
            status: '$context.status',
            protocol: '$context.protocol',
            responseLength: '$context.responseLength',
            latency: '$context.responseLatency',
            integrationLatency: '$context.integrationLatency',
            integrationError: '$context.integrationErrorMessage',
          }),
        ),
      },
    });
    if (Object.keys(routeSettings).length) {
      (apiStage.node.defaultChild as CfnStage).routeSettings = routeSettings;
      // A route's settings name its route key, which must exist first: the routes are in the nested stacks.
      for (const group of Object.values(this.routeGroups)) apiStage.node.addDependency(group);
    }
    this.front?.mapOrigin(this.api, apiStage);

    // Webhook events (docs/webhook-endpoints.md) are published here by the outbox relay and delivered from here.
    this.eventBus = new EventBus(this, 'EventBus', { eventBusName: `${SERVICE_NAME}-${stage}` });
    const workerEnvironment = observability;
    this.outboxRelay = new OutboxRelay(this, 'OutboxRelay', {
      table: this.table,
      eventBus: this.eventBus,
      projectRoot,
      environment: workerEnvironment,
    });
    // A second stream consumer: applies the aggregate moves batches leave as pending-moves items.
    this.pendingMovesApplier = new PendingMovesApplier(this, 'PendingMovesApplier', {
      table: this.table,
      projectRoot,
      environment: workerEnvironment,
    });
    // A third: runs the recount jobs a change of time zone or exchange rates puts (the next generation of the figures).
    this.recountWorker = new RecountWorker(this, 'RecountWorker', {
      table: this.table,
      projectRoot,
      environment: workerEnvironment,
    });
    this.webhookDelivery = new WebhookDelivery(this, 'WebhookDelivery', {
      eventBus: this.eventBus,
      table: this.table,
      secretsKey: this.webhookSecretsKey,
      projectRoot,
      environment: workerEnvironment,
    });

    this.cancelScheduler = new CancelScheduler(this, 'CancelScheduler', {
      eventBus: this.eventBus,
      table: this.table,
      projectRoot,
      stage,
      environment: workerEnvironment,
    });

    this.monitoring = new ApiMonitoring(this, 'Monitoring', {
      stage,
      api: this.api,
      apiStageName: apiStage.stageName,
      apiFunctions: [...Object.values(this.functions), this.notFoundFunction],
      outboxRelay: this.outboxRelay,
      pendingMovesApplier: this.pendingMovesApplier,
      recountWorker: this.recountWorker,
      webhookDelivery: this.webhookDelivery,
      cancelScheduler: this.cancelScheduler,
      table: this.table,
      eventBus: this.eventBus,
      metricsNamespace: this.stackName,
    });

    new CfnOutput(this, 'ApiUrl', {
      value: this.apiUrl,
      description: this.front
        ? 'The API (CloudFront, behind the web ACL); its execute-api URL refuses direct calls'
        : 'The API (execute-api)',
    });
    new CfnOutput(this, 'TableName', { value: this.table.tableName });
    new CfnOutput(this, 'EventBusName', { value: this.eventBus.eventBusName });
    new CfnOutput(this, 'EventBusArn', { value: this.eventBus.eventBusArn });
    new CfnOutput(this, 'OutboxDeadLetterQueueUrl', { value: this.outboxRelay.deadLetterQueue.queueUrl });
    new CfnOutput(this, 'PendingMovesDeadLetterQueueUrl', { value: this.pendingMovesApplier.deadLetterQueue.queueUrl });
    new CfnOutput(this, 'RecountDeadLetterQueueUrl', { value: this.recountWorker.deadLetterQueue.queueUrl });
    const webhooks = this.webhookDelivery;
    new CfnOutput(this, 'WebhookEventsQueueUrl', { value: webhooks.eventsQueue.queueUrl });
    new CfnOutput(this, 'WebhookEventsDeadLetterQueueUrl', { value: webhooks.eventsDeadLetterQueue.queueUrl });
    new CfnOutput(this, 'WebhookRuleDeadLetterQueueUrl', { value: webhooks.ruleDeadLetterQueue.queueUrl });
    new CfnOutput(this, 'WebhookDeliveryQueueUrl', { value: webhooks.deliveryQueue.queueUrl });
    new CfnOutput(this, 'WebhookDeliveryDeadLetterQueueUrl', { value: webhooks.deliveryDeadLetterQueue.queueUrl });
    new CfnOutput(this, 'AlarmTopicArn', {
      value: this.monitoring.alarmTopic.topicArn,
      description: 'Subscribe the on-call here (every alarm of the stack)',
    });

    // cdk-nag findings that are right for this stack, each on its resource with its reason (infra/nag.ts).
    acknowledgeNagFindings(this);
  }
}

/** What `cdk -c` sets: the API stack's props and the edge's (`buildStacks`). */
export type AppProps = Omit<ApiStackProps, 'edge'> & {
  /** The CloudFront distribution and the us-east-1 web ACL in front of the API. Default true. */
  edgeProtection?: boolean;
  /** Requests per IP per 5 minutes before WAF answers 429 (default: `wafRateLimitFor` the API's own limits). */
  wafRateLimit?: number;
  /** `block` (default) or `count` what the AWS managed rule groups match. */
  wafManagedRules?: 'block' | 'count';
};

/**
 * The app's stacks for one stage: the edge stack (`<name>-Edge`, us-east-1: the web ACL) unless
 * `edgeProtection` is false, and the API stack, which depends on it.
 */
export const buildStacks = (scope: Construct, props: AppProps, id = stackNameFor(props.stage)) => {
  const { edgeProtection, wafRateLimit, wafManagedRules, ...apiProps } = props;
  const stage = props.stage ?? DEFAULTS.stage;
  const edge =
    edgeProtection === false
      ? undefined
      : new EdgeStack(scope, `${id}-Edge`, {
          env: props.env,
          stage,
          description: 'Revenue analytics API: the AWS WAF web ACL in front of its CloudFront distribution (us-east-1)',
          terminationProtection: stage === PROD_STAGE,
          rateLimit:
            wafRateLimit ??
            wafRateLimitFor(
              props.rateLimitPerHour ?? DEFAULTS.rateLimitPerHour,
              props.unauthenticatedRateLimitPerMinute ?? DEFAULTS.unauthenticatedRateLimitPerMinute,
            ),
          managedRulesAction: wafManagedRules,
        });
  const api = new ApiStack(scope, id, { ...apiProps, edge });
  return { api, edge };
};

/** Stack props from `cdk -c key=value` (values arrive as strings); bad values fail the synth. */
export const propsFromContext = (node: Node): AppProps => {
  const ctx = (key: string): string | undefined => {
    const v = node.tryGetContext(key);
    return v === undefined || v === null || v === '' ? undefined : String(v);
  };
  const positiveInt = (key: string): number | undefined => {
    const raw = ctx(key);
    if (raw === undefined) return undefined;
    const n = Number(raw);
    if (!Number.isInteger(n) || n <= 0) throw new Error(`context ${key} must be a positive integer, got "${raw}"`);
    return n;
  };
  const stage = ctx('stage');
  if (stage !== undefined && !/^[a-z][a-z0-9-]{0,19}$/.test(stage)) {
    throw new Error(`context stage must be lowercase letters, digits and dashes (max 20), got "${stage}"`);
  }
  const logLevel = ctx('logLevel')?.toUpperCase();
  if (logLevel !== undefined && !(LOG_LEVELS as readonly string[]).includes(logLevel)) {
    throw new Error(`context logLevel must be one of ${LOG_LEVELS.join(', ')}, got "${logLevel}"`);
  }
  const retain = ctx('retainTable');
  if (retain !== undefined && retain !== 'true' && retain !== 'false') {
    throw new Error(`context retainTable must be true or false, got "${retain}"`);
  }
  const edge = ctx('edge');
  if (edge !== undefined && edge !== 'true' && edge !== 'false') throw new Error(`context edge must be true or false, got "${edge}"`);
  const wafManagedRules = ctx('wafManagedRules');
  if (wafManagedRules !== undefined && wafManagedRules !== 'block' && wafManagedRules !== 'count') {
    throw new Error(`context wafManagedRules must be block or count, got "${wafManagedRules}"`);
  }
  const wafRateLimit = positiveInt('wafRateLimit');
  if (wafRateLimit !== undefined && wafRateLimit < 10)
    throw new Error(`context wafRateLimit must be at least 10 (WAF's smallest limit), got "${wafRateLimit}"`);
  const localEndpoint = ctx('localDynamoEndpoint');
  if (localEndpoint !== undefined && !/^https?:\/\/[^/\s]+\/?$/.test(localEndpoint)) {
    throw new Error(`context localDynamoEndpoint must be an http(s) URL such as http://host.docker.internal:8000, got "${localEndpoint}"`);
  }
  // The locked origin: all four, or none.
  const lockKeys = ['originDomain', 'originCertificateArn', 'originTruststoreUri', 'originClientCertificateArn'] as const;
  const lockValues = lockKeys.map((k) => ctx(k));
  if (lockValues.some((v) => v !== undefined) && lockValues.some((v) => v === undefined)) {
    throw new Error(`context ${lockKeys.join(', ')} lock the API's origin together: give all four or none`);
  }
  const [originDomain, originCertificateArn, originTruststoreUri, originClientCertificateArn] = lockValues;
  const rateLimit = positiveInt('throttleRateLimit');
  const burstLimit = positiveInt('throttleBurstLimit');
  const orderWrites = positiveInt('orderWritesPerSecond');
  const subscriptionWrites = positiveInt('subscriptionWritesPerSecond');
  return {
    merchantPeakPerSecond:
      orderWrites === undefined && subscriptionWrites === undefined
        ? undefined
        : {
            'orders:write': orderWrites ?? DEFAULTS.merchantPeakPerSecond['orders:write'],
            'subscriptions:write': subscriptionWrites ?? DEFAULTS.merchantPeakPerSecond['subscriptions:write'],
          },
    stage,
    rateLimitPerHour: positiveInt('rateLimitPerHour'),
    unauthenticatedRateLimitPerMinute: positiveInt('unauthenticatedRateLimitPerMinute'),
    logLevel: logLevel as ApiStackProps['logLevel'],
    retainTable: retain === undefined ? undefined : retain === 'true',
    throttle:
      rateLimit === undefined && burstLimit === undefined
        ? undefined
        : { rateLimit: rateLimit ?? DEFAULTS.throttle.rateLimit, burstLimit: burstLimit ?? DEFAULTS.throttle.burstLimit },
    localDynamo:
      localEndpoint === undefined ? undefined : { endpoint: localEndpoint, tableName: ctx('localTableName') ?? DEFAULTS.localTableName },
    edgeProtection: edge === undefined ? undefined : edge === 'true',
    originLock: originDomain
      ? {
          domainName: originDomain,
          certificateArn: originCertificateArn!,
          truststoreUri: originTruststoreUri!,
          clientCertificateArn: originClientCertificateArn!,
        }
      : undefined,
    wafRateLimit,
    wafManagedRules: wafManagedRules as AppProps['wafManagedRules'],
  };
};

/** `RevenueAnalyticsApi` for prod, `RevenueAnalyticsApi-<stage>` otherwise. */
export const stackNameFor = (stage: string | undefined) =>
  !stage || stage === DEFAULTS.stage ? STACK_BASE_NAME : `${STACK_BASE_NAME}-${stage}`;
