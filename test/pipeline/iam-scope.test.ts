import { describe, expect, it } from 'vitest';
import { keys } from '#lib/db/keys';
import { PIPELINE_UPDATES, TOKEN_LOOKUP, WEBHOOK_WRITES, type KeyedGrant } from '../../infra/constructs/api-function.ts';
import { newMerchant, useApi } from '../support/api.ts';
import { isolatedClock } from './support.ts';
import { iamLike, recordSentRequests, type Sent } from '../support/sent-requests.ts';

/**
 * The requests the pipeline of a read route (or the 404) sends, as DynamoDB receives them, checked
 * against the IAM grants such functions have on AWS (infra/constructs/api-function.ts): every
 * UpdateItem names only the attributes its grant lists (key, update and condition expressions, as
 * `dynamodb:Attributes` counts them), asks back for updated attributes at most, and the only other
 * request is the token lookup. DynamoDB Local checks no IAM: this is where a new attribute in the
 * stamp or the counter would fail before AWS refused it.
 */
process.env.UNAUTHENTICATED_RATE_LIMIT_PER_MINUTE = '100000';
const clock = isolatedClock();
const api = useApi();

const { during } = recordSentRequests('iam-scope:record');

const EXPRESSION_WORDS = new Set([
  'SET',
  'ADD',
  'REMOVE',
  'DELETE',
  'AND',
  'OR',
  'NOT',
  'BETWEEN',
  'IN',
  'attribute_exists',
  'attribute_not_exists',
  'attribute_type',
  'begins_with',
  'contains',
  'size',
  'if_not_exists',
  'list_append',
]);
/** The top-level attribute names a request names: its key, and every name in its expressions. */
const attributesOf = (body: Record<string, any>): string[] => {
  const names = new Set<string>(Object.keys(body.Key ?? {}));
  for (const expression of [body.UpdateExpression, body.ConditionExpression].filter(Boolean) as string[]) {
    for (const [word] of expression.replace(/:[A-Za-z0-9_]+/g, ' ').matchAll(/#?[A-Za-z_][A-Za-z0-9_]*/g)) {
      if (EXPRESSION_WORDS.has(word)) continue;
      names.add(word.startsWith('#') ? body.ExpressionAttributeNames[word] : word);
    }
  }
  return [...names].sort();
};
const grantFor = (grants: KeyedGrant[], operation: string, pk: string) =>
  grants.filter((g) => g.action === operation && g.leadingKeys.some((p) => iamLike(p, pk)));

const pipelineRequests = async (run: () => Promise<unknown>) => (await during(run)).requests;

const expectInsideGrants = (requests: Sent[]) => {
  for (const { operation, body } of requests) {
    const pk = body.Key?.pk?.S as string;
    if (operation === 'GetItem') {
      expect(grantFor([TOKEN_LOOKUP], operation, pk), pk).toHaveLength(1);
      continue;
    }
    expect(operation).toBe('UpdateItem');
    const grants = grantFor(PIPELINE_UPDATES, operation, pk);
    expect(grants, `${operation} ${pk}`).toHaveLength(1);
    expect(
      attributesOf(body).filter((a) => !grants[0].attributes!.includes(a)),
      `${pk}: ${body.UpdateExpression} / ${body.ConditionExpression}`,
    ).toEqual([]);
    expect(['NONE', 'UPDATED_OLD', 'UPDATED_NEW']).toContain(body.ReturnValues ?? 'NONE');
  }
};

describe('requests stay inside the IAM grants of the functions that send them', () => {
  it('an authenticated read: the token lookup, the request count and the use stamp, each to the attribute', async () => {
    const { token } = await newMerchant();
    clock.set(new Date(clock.start * 1000 + 3_600_000).toISOString());
    const requests = await pipelineRequests(() => api.get('/customers/1', token));
    const updates = requests.filter((r) => r.operation === 'UpdateItem');
    // Both updates happened (the first use of the minute stamps the token).
    expect(updates.map((u) => (u.body.Key.pk.S as string).split('#')[0]).sort()).toEqual(['RATE', 'TOKEN']);
    // The route's own reads are the read grants' business; no other write is made.
    expect(requests.filter((r) => ['PutItem', 'DeleteItem', 'TransactWriteItems', 'BatchWriteItem'].includes(r.operation))).toEqual([]);
    expectInsideGrants(
      requests.filter(
        (r) => r.operation === 'UpdateItem' || (r.operation === 'GetItem' && (r.body.Key.pk.S as string).startsWith('TOKEN#')),
      ),
    );
    // The stamp names the key and last_used_at only: never status, merchant_id or abilities.
    expect(attributesOf(updates.find((u) => u.body.Key.pk.S.startsWith('TOKEN#'))!.body)).toEqual(['last_used_at', 'pk', 'sk']);
  });

  it("a merchant's webhook items are reachable by the webhook senders' grant (merchant ids as the store makes them)", async () => {
    const { merchantId } = await newMerchant();
    for (const key of [
      keys.webhookEndpoint(merchantId, 1),
      keys.webhookEndpointHealth(merchantId, 1),
      keys.webhookDeliveryLogHead(merchantId, 1),
    ]) {
      expect(grantFor(WEBHOOK_WRITES, 'PutItem', key.pk), key.pk).toHaveLength(1);
    }
    // …and none of its other items.
    for (const key of [
      keys.merchant(merchantId),
      keys.customerExternalId(merchantId, 'x#WEBHOOK#1'),
      keys.totals(merchantId, 'WEBHOOK_ENDPOINTS', 0),
    ]) {
      expect(grantFor(WEBHOOK_WRITES, 'PutItem', key.pk), key.pk).toEqual([]);
    }
  });

  it('an invalid token and an unknown path (the 404 function): the per-IP count only', async () => {
    const invalid = await pipelineRequests(() => api.get('/customers', 'ras_not_a_token'));
    const unknown = await pipelineRequests(() => api.get('/no-such-path'));
    for (const requests of [invalid, unknown]) {
      expect(requests.some((r) => r.operation === 'UpdateItem' && (r.body.Key.pk.S as string).startsWith('RATE#IP#'))).toBe(true);
      expectInsideGrants(requests);
    }
  });
});
