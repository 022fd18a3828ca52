import { join } from 'node:path';
import { Duration, RemovalPolicy, Stack } from 'aws-cdk-lib';
import type { ITable } from 'aws-cdk-lib/aws-dynamodb';
import { PolicyStatement, Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import { Architecture, Runtime, Tracing } from 'aws-cdk-lib/aws-lambda';
import { NodejsFunction, type NodejsFunctionProps } from 'aws-cdk-lib/aws-lambda-nodejs';
import { LogGroup, RetentionDays } from 'aws-cdk-lib/aws-logs';
import type { Construct } from 'constructs';
import { keys } from '#lib/db/keys';
import { GSIS, type IndexName } from '#lib/db/table';
import { FUNCTION_TIMEOUT_SECONDS } from '#lib/http/route';
import { cdkBundling } from '../bundles/options.ts';

export const SERVICE_NAME = 'revenue-analytics-api';

/** Partition keys of the rate-window items, as IAM patterns built from the key module. */
export const RATE_WINDOW_PK_PATTERNS = [keys.merchantRateWindow('*', 0).pk, keys.ipRateWindow('*', 0).pk];
/** Partition keys of the token-hash lookup items (`TOKEN#<sha256>`). */
export const TOKEN_PK_PATTERNS = [keys.token('*').pk];

/**
 * How a function uses the table:
 * - `pipeline`: only what every request does (token lookup, rate counter): the 404 function and
 *   public routes such as the OpenAPI document;
 * - `read`: read routes (`writes: false`), which still count requests;
 * - `write`: write routes.
 */
export type TableAccess = 'pipeline' | 'read' | 'write';

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
  | 'ConditionCheckItem';

/**
 * The DynamoDB actions of each kind, and nothing the code does not call (`grep -rn "Command(" lib
 * functions`: Get, BatchGet, Query, Update, TransactWrite). TransactWriteItems is no IAM action:
 * each Put/Update/Delete/ConditionCheck inside a transaction is authorised as PutItem, UpdateItem,
 * DeleteItem or ConditionCheckItem. No Scan, BatchWriteItem, DescribeTable or stream actions.
 *
 * - `table`:   on any item of the table;
 * - `keyed`:   only on the items the request pipeline touches, by an IAM `dynamodb:LeadingKeys`
 *              condition: GetItem of `TOKEN#…` (token lookup), UpdateItem of `RATE#…` (rate windows)
 *              and of `TOKEN#…` (last_used_at);
 * - `indexes`: on each of the table's global secondary indexes, by name (`<table arn>/index/gsi1`, …:
 *              no wildcard resource).
 */
export const TABLE_ACCESS: Record<TableAccess, { table: TableAction[]; keyed: ('GetItem' | 'UpdateItem')[]; indexes: TableAction[] }> = {
  pipeline: { table: [], keyed: ['GetItem', 'UpdateItem'], indexes: [] },
  read: { table: ['GetItem', 'BatchGetItem', 'Query'], keyed: ['UpdateItem'], indexes: ['Query'] },
  write: {
    table: ['GetItem', 'BatchGetItem', 'Query', 'PutItem', 'UpdateItem', 'DeleteItem', 'ConditionCheckItem'],
    keyed: [],
    indexes: ['Query'],
  },
};

const dynamodb = (actions: TableAction[]) => actions.map((a) => `dynamodb:${a}`);

/**
 * The partition-key patterns a keyed action is limited to. UpdateItem reaches token items only to
 * stamp `last_used_at` (lib/auth/tokens.ts `stampTokenUse`, at most once a minute per token).
 */
const KEYED_PATTERNS = { GetItem: TOKEN_PK_PATTERNS, UpdateItem: [...RATE_WINDOW_PK_PATTERNS, ...TOKEN_PK_PATTERNS] };

export type ApiFunctionProps = Omit<NodejsFunctionProps, 'entry' | 'projectRoot' | 'depsLockFilePath' | 'code' | 'logGroup'> & {
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
 * A Lambda function for one API handler: ESM bundle built locally by esbuild (no Docker), with
 * the project's runtime defaults, its own log group and its own role. The role starts empty (no
 * AWSLambdaBasicExecutionRole, whose `logs:*` reach every log group): it may write to its own log
 * group and send X-Ray traces, and every other grant is added by name (`bindTable`,
 * `grantTableActions`, `addToRolePolicy`).
 */
export class ApiFunction extends NodejsFunction {
  readonly handlerPath: string;

  constructor(scope: Construct, id: string, props: ApiFunctionProps) {
    const { projectRoot, handlerPath, logRetention, environment, bundling, ...rest } = props;
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
      entry: join(projectRoot, handlerPath),
      projectRoot,
      depsLockFilePath: join(projectRoot, 'package-lock.json'),
      environment: {
        LOG_LEVEL: 'INFO',
        POWERTOOLS_SERVICE_NAME: SERVICE_NAME,
        NODE_OPTIONS: '--enable-source-maps',
        ...environment,
      },
      // The one definition of how functions are bundled (infra/bundles/options.ts).
      bundling: {
        ...cdkBundling(),
        ...bundling,
      },
    });
    this.handlerPath = handlerPath;
    // logs:CreateLogStream and logs:PutLogEvents on this log group only (the group itself exists).
    logGroup.grantWrite(role);
  }

  /** Least-privilege table access: exactly the actions `TABLE_ACCESS` lists for this kind of function. */
  bindTable(table: ITable, access: TableAccess): this {
    const grant = TABLE_ACCESS[access];
    return this.grantTableActions(table, {
      table: grant.table,
      allIndexes: grant.indexes,
      keyed: Object.fromEntries(grant.keyed.map((action) => [action, KEYED_PATTERNS[action]])),
    });
  }

  /**
   * TABLE_NAME and exactly these DynamoDB actions: on the table's items, on items whose partition
   * key matches a pattern (`keyed`, an IAM `dynamodb:LeadingKeys` condition), on named indexes, or
   * on every index (each named). For functions outside the route table's kinds (the webhook
   * consumers), whose needs are narrower than any row of `TABLE_ACCESS`. Adds the table key's
   * actions these calls need when the table has a customer-managed key.
   */
  grantTableActions(
    table: ITable,
    grant: {
      table?: TableAction[];
      keyed?: Partial<Record<TableAction, string[]>>;
      indexes?: Partial<Record<IndexName, TableAction[]>>;
      allIndexes?: TableAction[];
    },
  ): this {
    this.addEnvironment('TABLE_NAME', table.tableName);
    if (grant.table?.length) {
      this.addToRolePolicy(new PolicyStatement({ actions: dynamodb(grant.table), resources: [table.tableArn] }));
    }
    for (const [action, patterns] of Object.entries(grant.keyed ?? {})) {
      this.addToRolePolicy(
        new PolicyStatement({
          actions: dynamodb([action as TableAction]),
          resources: [table.tableArn],
          conditions: { 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': patterns } },
        }),
      );
    }
    for (const [index, actions] of Object.entries(grant.indexes ?? {})) {
      if (actions?.length) this.addToRolePolicy(new PolicyStatement({ actions: dynamodb(actions), resources: [`${table.tableArn}/index/${index}`] }));
    }
    if (grant.allIndexes?.length) {
      const indexArns = GSIS.map((g) => `${table.tableArn}/index/${g.indexName}`);
      this.addToRolePolicy(new PolicyStatement({ actions: dynamodb(grant.allIndexes), resources: indexArns }));
    }
    const used = [
      ...(grant.table ?? []),
      ...(Object.keys(grant.keyed ?? {}) as TableAction[]),
      ...Object.values(grant.indexes ?? {}).flat(),
      ...(grant.allIndexes ?? []),
    ];
    if (used.length) this.grantTableKey(table, used.some((a) => a !== undefined && WRITE_ACTIONS.has(a)));
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
