import type { BuildMiddleware, MetadataBearer } from '@smithy/types';
import { afterAll, beforeAll } from 'vitest';
import { db } from '#lib/db/client';

/** A request as DynamoDB receives it: the operation and its JSON body. */
export type Sent = { operation: string; body: Record<string, any> };

/**
 * Records every request the shared client sends from the file's first test to its last (a build
 * middleware, so the body is what goes on the wire). The IAM tests check these against the grants
 * the sending functions have on AWS, where DynamoDB Local checks none. `during(run)` gives the
 * requests `run` sent.
 */
export const recordSentRequests = (name: string) => {
  const sent: Sent[] = [];
  const record: BuildMiddleware<object, MetadataBearer> = (next, context) => async (args) => {
    const raw = (args.request as { body?: unknown } | undefined)?.body;
    // The JSON body as serialized: a string, or bytes with the SDK's schema serde.
    const body = typeof raw === 'string' ? raw : raw instanceof Uint8Array ? new TextDecoder().decode(raw) : null;
    if (body) sent.push({ operation: String(context.commandName ?? '').replace(/Command$/, ''), body: JSON.parse(body) });
    return next(args);
  };
  beforeAll(() => db().middlewareStack.add(record, { step: 'build', name }));
  afterAll(() => {
    db().middlewareStack.remove(name);
  });
  return {
    during: async <T>(run: () => Promise<T>): Promise<{ result: T; requests: Sent[] }> => {
      sent.length = 0;
      const result = await run();
      return { result, requests: sent.splice(0) };
    },
  };
};

export { iamLike } from './iam/authorize.ts';
