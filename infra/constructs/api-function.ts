import { Duration, RemovalPolicy, Stack } from 'aws-cdk-lib';
import type { ITable } from 'aws-cdk-lib/aws-dynamodb';
import { PolicyStatement, Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import { Architecture, Function as LambdaFunction, type FunctionProps, Runtime, Tracing } from 'aws-cdk-lib/aws-lambda';
import { LogGroup, RetentionDays } from 'aws-cdk-lib/aws-logs';
import type { Construct } from 'constructs';
import { churnReasonsPartition, cohortPartition, keys, metricsPartition, OUTBOX_EVENT_PREFIX, OUTBOX_PREFIX } from '#lib/db/keys';
import { GSIS, TABLE_KEYS, type IndexName } from '#lib/db/table';
import { RATE_WINDOW_ATTRIBUTES } from '#lib/auth/rate-limit';
import { TOKEN_USE_ATTRIBUTE } from '#lib/auth/tokens';
import { FUNCTION_TIMEOUT_SECONDS } from '#lib/http/route';
import { SERVICE_NAME } from '#lib/observability';
import { FUNCTION_HANDLER } from '../bundles/build.ts';
import { functionCode } from './bundled-code.ts';
import { ObservabilityLayer } from './observability-layer.ts';

/** The service name (Powertools' `service`), defined once in lib/observability.ts. */
export { SERVICE_NAME };

/** Partition keys of the rate-window items, as IAM patterns built from the key module. */
export const RATE_WINDOW_PK_PATTERNS = [keys.merchantRateWindow('*', 0).pk, keys.ipRateWindow('*', 0).pk];
/** Partition keys of the token-hash lookup items (`TOKEN#<sha256>`). */
export const TOKEN_PK_PATTERNS = [keys.token('*').pk];
/**
 * A merchant id as IAM can match it exactly: `mer_` and 20 hex digits (lib/merchants/store.ts),
 * one `?` per character. A `*` there could stretch over `#`: `M#*#WEBHOOK#*` would also match a
 * customer marker whose external id (free text) holds `#WEBHOOK#`.
 */
export const MERCHANT_ID_IAM_PATTERN = `mer_${'?'.repeat(20)}`;
/** Partition keys of a customer's items (`M#<m>#CUSTOMER#<id>`): among them its MRR timeline's head and chunks. */
export const CUSTOMER_PK_PATTERN = `${keys.customer(MERCHANT_ID_IAM_PATTERN, 0).pk.replace(/0$/, '')}*`;

/**
 * Partition keys of a webhook endpoint's items: the endpoint, its delivery states and health
 * (`M#<m>#WEBHOOK#<id>`), its delivery log (`…#DELIVERIES`), and anything else kept under the
 * endpoint's own partition prefix (such as a per-day delivery counter): nothing of another resource.
 */
export const WEBHOOK_PK_PATTERNS = [`${keys.webhookEndpoint(MERCHANT_ID_IAM_PATTERN, 0).pk.replace(/0$/, '')}*`];

/**
 * How a function uses the table:
 * - `pipeline`: only what every request does (token lookup, rate counter): the 404 function and
 *   public routes such as the OpenAPI document;
 * - `read`: read routes (`writes: false`), which still count requests;
 * - `webhookSend`: the routes that send a signed request to a merchant's URL (test, manual retry):
 *   they read like a read route and write webhook items only;
 * - `write`: write routes: reads, and writes on the merchant's own partitions and the outbox's,
 *   never on token or rate-window items beyond the pipeline's updates;
 * - `recount`: the write routes whose change starts a recount of the figures (`recounts`): a write
 *   route's actions, BatchWriteItem on generations' settings items only, and the token's copy of
 *   the figures' state (zone, generation, recount);
 * - `tokens`: the back office's token routes (`tokens`): a write route's actions and token items.
 */
export type TableAccess = 'pipeline' | 'read' | 'webhookSend' | 'write' | 'recount' | 'tokens';

/**
 * What DynamoDB asks KMS for on a caller's behalf when the table is under a customer-managed key:
 * every table user decrypts the table key; writers also encrypt under it. Named actions, no
 * `GenerateDataKey*`-style wildcards, and only through DynamoDB (`kms:ViaService`).
 */
export const TABLE_KEY_ACTIONS = {
  read: ['kms:Decrypt', 'kms:DescribeKey'],
  write: ['kms:Encrypt', 'kms:GenerateDataKey'],
} as const;
const WRITE_ACTIONS = new Set<string>(['PutItem', 'UpdateItem', 'DeleteItem']);

export type TableAction =
  | 'GetItem'
  | 'BatchGetItem'
  | 'Query'
  | 'PutItem'
  | 'UpdateItem'
  | 'DeleteItem'
  | 'ConditionCheckItem'
  | 'BatchWriteItem';

/**
 * An action allowed only on items whose partition key matches one of `leadingKeys` (IAM
 * `dynamodb:LeadingKeys`), and, with `attributes`, only when every attribute the request names is
 * one of them (`dynamodb:Attributes`: for UpdateItem the key attributes and every attribute of the
 * update and condition expressions) and it asks back for updated attributes at most
 * (`dynamodb:ReturnValues` NONE, UPDATED_OLD or UPDATED_NEW: ALL_OLD/ALL_NEW would return others).
 */
export type KeyedGrant = { action: TableAction; leadingKeys: string[]; attributes?: string[] };

const KEY_ATTRIBUTES = [TABLE_KEYS.partitionKey, TABLE_KEYS.sortKey];
/**
 * A settings change's puts (lib/metrics/recount.ts `startRecount`): BatchWriteItem on the settings
 * items of a generation (`M#<m>#G<n>#SETTINGS`), never on any other item.
 */
export const GENERATION_SETTINGS_WRITES: KeyedGrant = {
  action: 'BatchWriteItem',
  leadingKeys: [`${keys.merchant(MERCHANT_ID_IAM_PATTERN).pk}#G*#SETTINGS`],
};
/**
 * A write route's writes: the merchant's own partitions (`M#<m>`, `M#<m>#…`) and the outbox's
 * (`OUTBOX#…`, `OUTBOX_EVENT#…`, led by prefixes no data key takes). Token and rate-window items
 * are out of reach but for the pipeline's two updates (`PIPELINE_UPDATES`).
 */
export const DATA_PK_PATTERNS = [
  keys.merchant(MERCHANT_ID_IAM_PATTERN).pk,
  `${keys.merchant(MERCHANT_ID_IAM_PATTERN).pk}#*`,
  `${OUTBOX_PREFIX}*`,
  `${OUTBOX_EVENT_PREFIX}*`,
];
const DATA_WRITES: KeyedGrant[] = (['PutItem', 'UpdateItem', 'DeleteItem', 'ConditionCheckItem'] as const).map((action) => ({
  action,
  leadingKeys: DATA_PK_PATTERNS,
}));
/** A settings change's copy of what requests read from their token (lib/merchants/store.ts `addMerchantChanges`), to the attribute. */
export const TOKEN_SETTINGS_UPDATE: KeyedGrant = {
  action: 'UpdateItem',
  leadingKeys: TOKEN_PK_PATTERNS,
  attributes: [...KEY_ATTRIBUTES, 'timezone', 'metrics_generation', 'metrics_recount', 'delinquency_days'],
};
/** Issuing, replacing and revoking a token (lib/merchants/store.ts). */
const TOKEN_WRITES: KeyedGrant[] = (['PutItem', 'UpdateItem', 'DeleteItem', 'ConditionCheckItem'] as const).map((action) => ({
  action,
  leadingKeys: TOKEN_PK_PATTERNS,
}));

/** The token lookup of every request (lib/auth/tokens.ts `authenticate`). */
export const TOKEN_LOOKUP: KeyedGrant = { action: 'GetItem', leadingKeys: TOKEN_PK_PATTERNS };
/**
 * The two updates every authenticated or counted request makes, to the attribute: a request count
 * (lib/auth/rate-limit.ts: ADD `count`, SET `expires_at` on `RATE#…`) and the token's use stamp
 * (lib/auth/tokens.ts `stampTokenUse`: SET `last_used_at` on `TOKEN#…`, at most once a minute).
 * Two grants, so a token item can never take `expires_at` (TTL would delete it) nor a rate window
 * `last_used_at`; merchant id, abilities and status are in neither.
 */
export const PIPELINE_UPDATES: KeyedGrant[] = [
  { action: 'UpdateItem', leadingKeys: RATE_WINDOW_PK_PATTERNS, attributes: [...KEY_ATTRIBUTES, ...Object.values(RATE_WINDOW_ATTRIBUTES)] },
  { action: 'UpdateItem', leadingKeys: TOKEN_PK_PATTERNS, attributes: [...KEY_ATTRIBUTES, TOKEN_USE_ATTRIBUTE] },
];
/**
 * What a webhook attempt writes (lib/webhooks/delivery.ts `attemptAndRecord`, one transaction):
 * Put of the log entry (`…#DELIVERIES`), Update of the delivery state, Update or Delete of the
 * endpoint's health; the delivery worker also Updates the endpoint when it disables it.
 */
export const WEBHOOK_WRITES: KeyedGrant[] = (['PutItem', 'UpdateItem', 'DeleteItem'] as const).map((action) => ({
  action,
  leadingKeys: WEBHOOK_PK_PATTERNS,
}));

/**
 * The DynamoDB actions of each kind, and nothing the code does not call (`grep -rn "Command(" lib
 * functions`: Get, BatchGet, Query, Update, TransactWrite). TransactWriteItems is no IAM action:
 * each Put/Update/Delete/ConditionCheck inside a transaction is authorised as PutItem, UpdateItem,
 * DeleteItem or ConditionCheckItem. No Scan, DescribeTable or stream actions; BatchWriteItem only
 * for a new generation's settings items (`GENERATION_SETTINGS_WRITES`).
 *
 * - `table`:   on any item of the table;
 * - `keyed`:   only on some items (and attributes): `KeyedGrant`;
 * - `indexes`: on each of the table's global secondary indexes, by name (`<table arn>/index/gsi1`, …:
 *              no wildcard resource).
 */
const WRITE_ACCESS = {
  table: ['GetItem', 'BatchGetItem', 'Query'] as TableAction[],
  keyed: [...DATA_WRITES, ...PIPELINE_UPDATES],
  indexes: ['Query'] as TableAction[],
};
export const TABLE_ACCESS: Record<TableAccess, { table: TableAction[]; keyed: KeyedGrant[]; indexes: TableAction[] }> = {
  pipeline: { table: [], keyed: [TOKEN_LOOKUP, ...PIPELINE_UPDATES], indexes: [] },
  read: { table: ['GetItem', 'BatchGetItem', 'Query'], keyed: PIPELINE_UPDATES, indexes: ['Query'] },
  // Reads the endpoint (GetItem), or it and the delivery state (BatchGetItem); the dashboard's caller reads the merchant.
  webhookSend: { table: ['GetItem', 'BatchGetItem'], keyed: [...PIPELINE_UPDATES, ...WEBHOOK_WRITES], indexes: [] },
  write: WRITE_ACCESS,
  recount: { ...WRITE_ACCESS, keyed: [...WRITE_ACCESS.keyed, GENERATION_SETTINGS_WRITES, TOKEN_SETTINGS_UPDATE] },
  tokens: { ...WRITE_ACCESS, keyed: [...WRITE_ACCESS.keyed, ...TOKEN_WRITES] },
};

const dynamodb = (actions: TableAction[]) => actions.map((a) => `dynamodb:${a}`);

/** The IAM condition of a keyed grant. */
export const keyedCondition = (grant: KeyedGrant) => ({
  'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': grant.leadingKeys },
  ...(grant.attributes
    ? {
        'ForAllValues:StringEquals': { 'dynamodb:Attributes': grant.attributes },
        StringEqualsIfExists: { 'dynamodb:ReturnValues': ['NONE', 'UPDATED_OLD', 'UPDATED_NEW'] },
      }
    : {}),
});

export type ApiFunctionProps = Omit<FunctionProps, 'code' | 'handler' | 'runtime' | 'logGroup'> & {
  /** Node.js 22 unless told. */
  runtime?: Runtime;
  /** Directory holding package.json, package-lock.json and the handler modules. */
  projectRoot: string;
  /** Handler module relative to `projectRoot` (as written in the route table); it exports `handler`. */
  handlerPath: string;
  /** Retention of the function's own log group (30 days unless told). */
  logRetention?: RetentionDays;
};

/** CloudWatch namespace of the functions' Powertools metrics (EMF), read from POWERTOOLS_METRICS_NAMESPACE. */
export const METRICS_NAMESPACE_ENV = 'POWERTOOLS_METRICS_NAMESPACE';

/**
 * A Lambda function for one API handler: its ESM bundle from the one esbuild build of every
 * function (infra/bundles/build.ts; locally, no Docker), with the project's runtime defaults, the
 * observability layer its bundle imports Powertools from, its own log group and its own role. The
 * role starts empty (no AWSLambdaBasicExecutionRole, whose `logs:*` reach every log group): it may
 * write to its own log group and send X-Ray traces, and every other grant is added by name
 * (`bindTable`, `grantTableActions`, `addToRolePolicy`).
 */
export class ApiFunction extends LambdaFunction {
  readonly handlerPath: string;

  constructor(scope: Construct, id: string, props: ApiFunctionProps) {
    const { projectRoot, handlerPath, logRetention, environment, layers, ...rest } = props;
    // A sibling of the function because `this` cannot be used before super(); passing it in means
    // the function depends on it, so Lambda never creates an unmanaged group first.
    const logGroup = new LogGroup(scope, `${id}LogGroup`, {
      retention: logRetention ?? RetentionDays.ONE_MONTH,
      removalPolicy: RemovalPolicy.DESTROY,
    });
    // A sibling for the same reason; the function's own log group is its only logs grant.
    const role =
      props.role ??
      new Role(scope, `${id}Role`, { assumedBy: new ServicePrincipal('lambda.amazonaws.com'), description: `Execution role of ${id}` });
    super(scope, id, {
      runtime: Runtime.NODEJS_22_X,
      architecture: Architecture.ARM_64,
      memorySize: 512,
      timeout: Duration.seconds(FUNCTION_TIMEOUT_SECONDS),
      // Adds xray:PutTraceSegments and xray:PutTelemetryRecords on "*" to the role: X-Ray has no
      // resource-level permissions, the one wildcard resource in the stack (infra/nag.ts).
      tracing: Tracing.ACTIVE,
      logGroup,
      role,
      ...rest,
      // The bundle imports /opt/nodejs/observability.mjs: without the layer it cannot start.
      layers: [ObservabilityLayer.of(scope, projectRoot), ...(layers ?? [])],
      code: functionCode(scope, projectRoot, handlerPath),
      handler: FUNCTION_HANDLER,
      environment: {
        LOG_LEVEL: 'INFO',
        POWERTOOLS_SERVICE_NAME: SERVICE_NAME,
        NODE_OPTIONS: '--enable-source-maps',
        ...environment,
      },
    });
    this.handlerPath = handlerPath;
    // logs:CreateLogStream and logs:PutLogEvents on this log group only (the group itself exists).
    logGroup.grantWrite(role);
  }

  /** Least-privilege table access: exactly the actions `TABLE_ACCESS` lists for this kind of function. */
  bindTable(table: ITable, access: TableAccess): this {
    const grant = TABLE_ACCESS[access];
    return this.grantTableActions(table, { table: grant.table, allIndexes: grant.indexes, keyed: grant.keyed });
  }

  /**
   * TABLE_NAME and exactly these DynamoDB actions: on the table's items, on items whose partition
   * key matches a pattern and to the attribute (`keyed`: `KeyedGrant`), on named indexes, or
   * on every index (each named). For functions outside the route table's kinds (the webhook
   * consumers), whose needs are narrower than any row of `TABLE_ACCESS`. Adds the table key's
   * actions these calls need when the table has a customer-managed key.
   */
  grantTableActions(
    table: ITable,
    grant: {
      table?: TableAction[];
      keyed?: KeyedGrant[];
      indexes?: Partial<Record<IndexName, TableAction[]>>;
      allIndexes?: TableAction[];
    },
  ): this {
    this.addEnvironment('TABLE_NAME', table.tableName);
    if (grant.table?.length) {
      this.addToRolePolicy(new PolicyStatement({ actions: dynamodb(grant.table), resources: [table.tableArn] }));
    }
    for (const keyed of grant.keyed ?? []) {
      this.addToRolePolicy(
        new PolicyStatement({ actions: dynamodb([keyed.action]), resources: [table.tableArn], conditions: keyedCondition(keyed) }),
      );
    }
    for (const [index, actions] of Object.entries(grant.indexes ?? {})) {
      if (actions?.length)
        this.addToRolePolicy(new PolicyStatement({ actions: dynamodb(actions), resources: [`${table.tableArn}/index/${index}`] }));
    }
    if (grant.allIndexes?.length) {
      const indexArns = GSIS.map((g) => `${table.tableArn}/index/${g.indexName}`);
      this.addToRolePolicy(new PolicyStatement({ actions: dynamodb(grant.allIndexes), resources: indexArns }));
    }
    const used = [
      ...(grant.table ?? []),
      ...(grant.keyed ?? []).map((k) => k.action),
      ...Object.values(grant.indexes ?? {}).flat(),
      ...(grant.allIndexes ?? []),
    ];
    if (used.length)
      this.grantTableKey(
        table,
        used.some((a) => a !== undefined && WRITE_ACTIONS.has(a)),
      );
    return this;
  }

  /** The table key's actions this function's DynamoDB calls need (none when the table has no customer-managed key). */
  grantTableKey(table: ITable, writes: boolean): this {
    if (!table.encryptionKey) return this;
    this.addToRolePolicy(
      new PolicyStatement({
        actions: [...TABLE_KEY_ACTIONS.read, ...(writes ? TABLE_KEY_ACTIONS.write : [])],
        resources: [table.encryptionKey.keyArn],
        conditions: { StringEquals: { 'kms:ViaService': `dynamodb.${Stack.of(this).region}.amazonaws.com` } },
      }),
    );
    return this;
  }
}
