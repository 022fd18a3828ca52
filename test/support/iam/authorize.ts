/**
 * IAM's view of an AWS request, and IAM's answer to it, for the policies of the synthesized stack:
 * which (action, resource, condition keys) a request asks to be authorised for, and whether a
 * function's statements allow every one. Pure: test/support/iam-check.ts feeds it every request a
 * function's code sends in a test, test/support/iam/policies.ts the statements.
 */

/** One Allow statement of a function's role, its resources rendered (`renderResource`). */
export type Statement = { actions: string[]; resources: string[]; condition?: Record<string, Record<string, string[]>> };

/** What IAM authorises for one request: one per item the request names (batches and transactions). */
export type Authorization = {
  action: string;
  /** The ARN, as the policies render it; `*` when only the action is checked (an emulator's queue). */
  resource: string;
  /** dynamodb:LeadingKeys: the partition key the item or query names. */
  leadingKeys?: string[];
  /** dynamodb:Attributes: the top-level attributes the request names. */
  attributes?: string[];
  /** dynamodb:ReturnValues, dynamodb:Select, when the request sets them. */
  returnValues?: string;
  select?: string;
  /** A short description for a failure message: the item's key. */
  key?: string;
};

/** The table's stand-in ARN (`arn:<logical id>`), as `renderResource` writes `Fn::GetAtt [id, Arn]`. */
export const arnOf = (logicalId: string) => `arn:${logicalId}`;

/**
 * A statement's resource as a string: `Fn::GetAtt [id, Arn]` → `arn:<id>`, `Ref id` → `ref:<id>`,
 * `Fn::Join` joined, `Fn::Sub`'s text. Two grants on the same table render alike, which is all the
 * check needs.
 */
export const renderResource = (value: unknown): string => {
  if (typeof value === 'string') return value;
  if (Array.isArray(value)) return value.map(renderResource).join('');
  const [fn, arg] = Object.entries(value as Record<string, unknown>)[0] ?? [];
  if (fn === 'Fn::GetAtt') {
    const [id, attribute] = arg as [string, string];
    return attribute === 'Arn' ? arnOf(id) : `${attribute}:${id}`;
  }
  if (fn === 'Ref') return `ref:${arg as string}`;
  if (fn === 'Fn::Join') {
    const [separator, parts] = arg as [string, unknown[]];
    return parts.map(renderResource).join(separator);
  }
  if (fn === 'Fn::Sub') return Array.isArray(arg) ? String(arg[0]) : String(arg);
  return JSON.stringify(value);
};

/** IAM's string wildcards: `*` any run of characters, `?` one (each pattern compiled once: every request of every test is checked). */
const compiled = new Map<string, RegExp>();
export const iamLike = (pattern: string, value: string) => {
  let re = compiled.get(pattern);
  if (!re) {
    re = new RegExp(
      `^${pattern
        .replace(/[.+^$(){}|[\]\\]/g, '\\$&')
        .replace(/\*/g, '.*')
        .replace(/\?/g, '.')}$`,
    );
    compiled.set(pattern, re);
  }
  return re.test(value);
};

const EXPRESSION_WORDS = new Set(['SET', 'ADD', 'REMOVE', 'DELETE', 'AND', 'OR', 'NOT', 'BETWEEN', 'IN']);

/**
 * The top-level attributes an expression names (what `dynamodb:Attributes` counts): the first
 * element of each document path (`a.b[1]` names `a`), names resolved, functions and values skipped.
 */
export const attributesOfExpression = (expression: string | undefined, names: Record<string, string> = {}): string[] => {
  if (!expression) return [];
  const out = new Set<string>();
  const text = expression.replace(/:[A-Za-z0-9_]+/g, ' ');
  for (const m of text.matchAll(/(^|[^.\w#])(#?[A-Za-z_][A-Za-z0-9_]*)(\s*\()?/g)) {
    const [, , word, call] = m;
    if (call || EXPRESSION_WORDS.has(word!)) continue;
    out.add(word!.startsWith('#') ? (names[word!] ?? word!) : word!);
  }
  return [...out];
};

type Body = Record<string, any>;
type Key = Record<string, { S?: string; N?: string }>;
const pkOf = (key: Key | undefined) => key?.pk?.S ?? key?.pk?.N ?? '';
const describe = (key: Key | undefined) => `${pkOf(key)} | ${key?.sk?.S ?? key?.sk?.N ?? ''}`;

/**
 * The authorisations a DynamoDB request (its wire JSON) needs. `tableArn` maps the request's
 * table name to the resource the policies name. Batches and transactions are authorised item by
 * item, each under its own action: a transaction's Put as PutItem, and so on (TransactWriteItems
 * is no IAM action).
 */
export const dynamodbAuthorizations = (operation: string, body: Body, tableArn: (tableName: string) => string): Authorization[] => {
  const names = (body.ExpressionAttributeNames ?? {}) as Record<string, string>;
  const itemWrite = (action: string, table: string, op: Body, kind: 'put' | 'update' | 'delete' | 'check'): Authorization => {
    const key = (kind === 'put' ? op.Item : op.Key) as Key;
    const opNames = (op.ExpressionAttributeNames ?? names) as Record<string, string>;
    const attributes = new Set<string>(Object.keys(kind === 'put' ? op.Item : op.Key));
    for (const a of [...attributesOfExpression(op.UpdateExpression, opNames), ...attributesOfExpression(op.ConditionExpression, opNames)])
      attributes.add(a);
    return {
      action,
      resource: tableArn(table),
      leadingKeys: [pkOf(key)],
      attributes: [...attributes],
      returnValues: op.ReturnValues,
      key: describe(key),
    };
  };
  switch (operation) {
    case 'GetItem':
      return [
        {
          action: 'GetItem',
          resource: tableArn(body.TableName),
          leadingKeys: [pkOf(body.Key)],
          ...(body.ProjectionExpression ? { attributes: attributesOfExpression(body.ProjectionExpression, names) } : {}),
          key: describe(body.Key),
        },
      ];
    case 'PutItem':
      return [itemWrite('PutItem', body.TableName, body, 'put')];
    case 'UpdateItem':
      return [itemWrite('UpdateItem', body.TableName, body, 'update')];
    case 'DeleteItem':
      return [itemWrite('DeleteItem', body.TableName, body, 'delete')];
    case 'Query': {
      // The partition key's equality: `pk` on the table, the first equality on an index.
      const equalities = [...String(body.KeyConditionExpression ?? '').matchAll(/(#?\w+)\s*=\s*(:\w+)/g)];
      const [, name, value] = equalities.find(([, n]) => body.IndexName || (names[n!] ?? n) === 'pk') ?? [];
      if (!value) throw new Error(`a Query whose partition key the IAM check cannot read: ${body.KeyConditionExpression}`);
      const partition = body.ExpressionAttributeValues?.[value]?.S ?? body.ExpressionAttributeValues?.[value]?.N;
      const resource = body.IndexName ? `${tableArn(body.TableName)}/index/${body.IndexName}` : tableArn(body.TableName);
      return [
        {
          action: 'Query',
          resource,
          ...(partition !== undefined ? { leadingKeys: [String(partition)] } : {}),
          select: body.Select,
          key: `${names[name!] ?? name} = ${partition}${body.IndexName ? ` (index ${body.IndexName})` : ''}`,
        },
      ];
    }
    case 'Scan':
      return [
        { action: 'Scan', resource: body.IndexName ? `${tableArn(body.TableName)}/index/${body.IndexName}` : tableArn(body.TableName) },
      ];
    case 'BatchGetItem':
      return Object.entries(body.RequestItems as Record<string, { Keys: Key[] }>).flatMap(([table, r]) =>
        r.Keys.map((k) => ({ action: 'BatchGetItem', resource: tableArn(table), leadingKeys: [pkOf(k)], key: describe(k) })),
      );
    case 'BatchWriteItem':
      return Object.entries(body.RequestItems as Record<string, Body[]>).flatMap(([table, writes]) =>
        writes.map((w) =>
          w.PutRequest
            ? itemWrite('BatchWriteItem', table, w.PutRequest, 'put')
            : itemWrite('BatchWriteItem', table, w.DeleteRequest, 'delete'),
        ),
      );
    case 'TransactWriteItems':
      return (body.TransactItems as Body[]).map((item) => {
        const [kind, op] = Object.entries(item)[0]!;
        const action = { Put: 'PutItem', Update: 'UpdateItem', Delete: 'DeleteItem', ConditionCheck: 'ConditionCheckItem' }[kind];
        if (!action) throw new Error(`unknown transaction action ${kind}`);
        const as = ({ Put: 'put', Update: 'update', Delete: 'delete', ConditionCheck: 'check' } as const)[kind as 'Put'];
        return itemWrite(action, op.TableName, op, as);
      });
    case 'TransactGetItems':
      return (body.TransactItems as Body[]).map(({ Get }) => ({
        action: 'GetItem',
        resource: tableArn(Get.TableName),
        leadingKeys: [pkOf(Get.Key)],
        key: describe(Get.Key),
      }));
    default:
      return [{ action: operation, resource: body.TableName ? tableArn(body.TableName) : '*' }];
  }
};

/** The request-context value of a condition key, or undefined when the request has none. */
const contextValue = (a: Authorization, key: string): string[] | undefined => {
  switch (key) {
    case 'dynamodb:LeadingKeys':
      return a.leadingKeys;
    case 'dynamodb:Attributes':
      return a.attributes;
    case 'dynamodb:ReturnValues':
      return a.returnValues === undefined ? undefined : [a.returnValues];
    case 'dynamodb:Select':
      return a.select === undefined ? undefined : [a.select];
    default:
      throw new Error(`the IAM check does not know the condition key ${key}: teach test/support/iam/authorize.ts`);
  }
};

const MATCHERS: Record<string, (policy: string, value: string) => boolean> = {
  StringEquals: (p, v) => p === v,
  StringLike: iamLike,
};

/** One condition operator over one key, as IAM evaluates it (set operators included). */
const conditionHolds = (operator: string, key: string, values: string[], a: Authorization): boolean => {
  const m = /^(ForAllValues:|ForAnyValue:)?(String(?:Equals|Like))(IfExists)?$/.exec(operator);
  if (!m) throw new Error(`the IAM check does not know the condition operator ${operator}: teach test/support/iam/authorize.ts`);
  const [, set, base, ifExists] = m;
  const match = (v: string) => values.some((p) => MATCHERS[base!]!(p, v));
  const context = contextValue(a, key);
  // ForAllValues over no values holds (IAM's rule, and why a keyed grant never rests on it alone).
  if (set === 'ForAllValues:') return (context ?? []).every(match);
  if (set === 'ForAnyValue:') return (context ?? []).some(match);
  if (context === undefined) return Boolean(ifExists);
  return context.every(match);
};

/** The statement that allows `a`, if any. */
export const allowingStatement = (statements: Statement[], a: Authorization, service = 'dynamodb'): Statement | undefined =>
  statements.find(
    (s) =>
      s.actions.some((action) => iamLike(action, `${service}:${a.action}`)) &&
      (a.resource === '*' || s.resources.some((r) => iamLike(r, a.resource))) &&
      Object.entries(s.condition ?? {}).every(([operator, keys]) =>
        Object.entries(keys).every(([key, values]) => conditionHolds(operator, key, [values].flat(), a)),
      ),
  );
