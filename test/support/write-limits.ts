import type { BuildMiddleware, MetadataBearer } from '@smithy/types';
import { afterEach, beforeAll } from 'vitest';

/**
 * Every test runs under AWS's write limits, tighter than DynamoDB Local's: a test fails when it
 * writes an item over 64 KB (our own ceiling, well under DynamoDB's 400 KB, so nothing grows
 * unnoticed with a customer's or merchant's history) or a transaction over 100 actions or 4 MB.
 * The check reads each request as sent (DynamoDB JSON), refuses it before it reaches DynamoDB
 * Local, and fails the test that made it (`afterEach`), whichever code path wrote it. An update's
 * result is not seen: its values are counted instead (a lower bound).
 */
export const ITEM_CEILING_BYTES = 64 * 1024;
export const MAX_TRANSACTION_ACTIONS = 100;
export const MAX_TRANSACTION_BYTES = 4 * 1024 * 1024;

type AttributeValue = Record<string, unknown>;

/** DynamoDB's item-size rule, closely enough for a ceiling: names plus values, maps and lists with their overhead. */
const valueSize = (av: AttributeValue): number => {
  const [type, v] = Object.entries(av)[0] ?? ['NULL', true];
  switch (type) {
    case 'S':
      return Buffer.byteLength(String(v));
    case 'N':
      return Math.ceil(String(v).replace(/[-.]/g, '').replace(/^0+/, '').length / 2) + 1;
    case 'B':
      return Buffer.from(String(v), 'base64').length;
    case 'SS':
      return (v as string[]).reduce((s, x) => s + Buffer.byteLength(x), 0);
    case 'NS':
      return (v as string[]).reduce((s, x) => s + valueSize({ N: x }), 0);
    case 'BS':
      return (v as string[]).reduce((s, x) => s + Buffer.from(x, 'base64').length, 0);
    case 'L':
      return 3 + (v as AttributeValue[]).reduce((s, x) => s + 1 + valueSize(x), 0);
    case 'M':
      return 3 + itemSize(v as Record<string, AttributeValue>) + Object.keys(v as object).length;
    default:
      return 1; // BOOL, NULL
  }
};
export const itemSize = (item: Record<string, AttributeValue>): number =>
  Object.entries(item).reduce((s, [name, v]) => s + Buffer.byteLength(name) + valueSize(v), 0);

export class WriteLimitError extends Error {
  override name = 'WriteLimitError';
}

/** What the request would break, if anything. */
export const writeLimitBreaches = (operation: string, body: Record<string, any>, bodyBytes: number): string[] => {
  const out: string[] = [];
  const item = (where: string, it: Record<string, AttributeValue> | undefined) => {
    const size = it ? itemSize(it) : 0;
    if (size > ITEM_CEILING_BYTES)
      out.push(`${where}: an item of ${size} bytes (ceiling ${ITEM_CEILING_BYTES}; key ${JSON.stringify([it?.pk, it?.sk])})`);
  };
  const update = (where: string, values: Record<string, AttributeValue> | undefined) => {
    const size = values ? itemSize(values) : 0;
    if (size > ITEM_CEILING_BYTES) out.push(`${where}: an update carrying ${size} bytes of values (ceiling ${ITEM_CEILING_BYTES})`);
  };
  if (operation === 'PutItem') item('PutItem', body.Item);
  if (operation === 'UpdateItem') update('UpdateItem', body.ExpressionAttributeValues);
  if (operation === 'BatchWriteItem') {
    for (const requests of Object.values(body.RequestItems ?? {}) as { PutRequest?: { Item: Record<string, AttributeValue> } }[][]) {
      for (const r of requests) item('BatchWriteItem', r.PutRequest?.Item);
    }
  }
  if (operation === 'TransactWriteItems') {
    const actions = (body.TransactItems ?? []) as Record<string, any>[];
    if (actions.length > MAX_TRANSACTION_ACTIONS)
      out.push(`TransactWriteItems: ${actions.length} actions (at most ${MAX_TRANSACTION_ACTIONS})`);
    if (bodyBytes > MAX_TRANSACTION_BYTES) out.push(`TransactWriteItems: ${bodyBytes} bytes (at most ${MAX_TRANSACTION_BYTES})`);
    for (const a of actions) {
      item('TransactWriteItems Put', a.Put?.Item);
      update('TransactWriteItems Update', a.Update?.ExpressionAttributeValues);
    }
  }
  return out;
};

const breaches: string[] = [];

/** Breaches recorded since the last call (for the check's own tests). */
export const takeWriteLimitBreaches = (): string[] => breaches.splice(0);

const NAME = 'testWriteLimits';
const guard: BuildMiddleware<object, MetadataBearer> = (next, context) => async (args) => {
  const raw = (args.request as { body?: unknown } | undefined)?.body;
  // The JSON body as serialized: a string, or bytes with the SDK's schema serde.
  const body = typeof raw === 'string' ? raw : raw instanceof Uint8Array ? new TextDecoder().decode(raw) : null;
  if (body) {
    const operation = String(context.commandName ?? '').replace(/Command$/, '');
    const found = writeLimitBreaches(operation, JSON.parse(body), Buffer.byteLength(body));
    if (found.length) {
      breaches.push(...found);
      throw new WriteLimitError(found.join('; '));
    }
  }
  return next(args);
};

// Installed once the test file is loaded, not when this file is: importing the client here would
// load the pipeline's modules before a test file sets up their environment (tracing.test.ts).
beforeAll(async () => {
  const stack = (await import('#lib/db/client')).db().middlewareStack;
  stack.remove(NAME);
  stack.add(guard, { step: 'build', name: NAME });
});

afterEach(() => {
  const found = takeWriteLimitBreaches();
  if (found.length) throw new WriteLimitError(`this test wrote past AWS's limits:\n- ${found.join('\n- ')}`);
});
