import { GetCommand, PutCommand, QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { describe, expect, it } from 'vitest';
import { db, tableName } from '#lib/db/client';
import { keys } from '#lib/db/keys';
import { routes } from '#lib/customers/routes';
import { asFunction, WORKER_FUNCTIONS } from '#lib/shared/invocation';
import { checkedFunctions, takeIamDenials } from '../support/iam-check.ts';

/**
 * The IAM check itself (test/support/iam-check.ts): a request a function's synthesized policy
 * denies is refused with AccessDeniedException and recorded; an allowed one goes through; code
 * outside any function is not checked.
 */
const as = <T>(fn: string, run: () => Promise<T>) => asFunction(fn, run)();
const refusal = async (run: () => Promise<unknown>) => {
  const err = await run().then(
    () => null,
    (e: Error) => e,
  );
  const denials = takeIamDenials();
  return { name: err?.name, denials };
};

describe('requests are checked against the sending function’s policy', () => {
  it('a read route may read but not write; a worker only where its keyed grants reach', async () => {
    const merchant = keys.merchant('mer_00000000000000000000');
    const read = routes.customersGet.handler;
    expect(await as(read, () => db().send(new GetCommand({ TableName: tableName(), Key: merchant })))).toBeDefined();
    const put = await refusal(() => as(read, () => db().send(new PutCommand({ TableName: tableName(), Item: { ...merchant, x: 1 } }))));
    expect(put.name).toBe('AccessDeniedException');
    expect(put.denials).toEqual([expect.stringMatching(/^customersGet may not dynamodb:PutItem on arn:\S+ \(key M#mer_0+ \| /)]);
    // The relay may only stamp outbox marks: an update elsewhere is denied, naming the key.
    const update = await refusal(() =>
      as(WORKER_FUNCTIONS.outboxRelay, () =>
        db().send(
          new UpdateCommand({
            TableName: tableName(),
            Key: merchant,
            UpdateExpression: 'SET x = :x',
            ExpressionAttributeValues: { ':x': 1 },
          }),
        ),
      ),
    );
    expect(update.denials).toEqual([expect.stringContaining('outboxRelay may not dynamodb:UpdateItem')]);
    // The token lookup's grant is a GetItem on TOKEN# keys only: the 404 function may not Query.
    const query = await refusal(() =>
      as(WORKER_FUNCTIONS.notFound, () =>
        db().send(
          new QueryCommand({
            TableName: tableName(),
            KeyConditionExpression: 'pk = :p',
            ExpressionAttributeValues: { ':p': 'TOKEN#x' },
          }),
        ),
      ),
    );
    expect(query.denials).toEqual([expect.stringContaining('notFound may not dynamodb:Query')]);
  });

  it('every function the code runs as is a function of the stack, with its policy', async () => {
    const { routeList } = await import('#lib/api/routes');
    const names = [...Object.values(WORKER_FUNCTIONS), ...routeList.map((r) => r.handler)];
    expect(names.filter((n) => !checkedFunctions().includes(n))).toEqual([]);
  });

  it('code outside any function (a test’s own setup) is not checked', async () => {
    const key = { pk: 'IAM-CHECK#outside', sk: 'x' };
    await db().send(new PutCommand({ TableName: tableName(), Item: key }));
    expect(takeIamDenials()).toEqual([]);
  });
});
