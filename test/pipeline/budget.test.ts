import { describe, expect, it } from 'vitest';
import { newMerchant, useApi } from '../support/api.ts';
import { isolatedClock, withEnv } from './support.ts';
import { generateToken } from '#lib/auth/tokens';

/** What the pipeline itself costs in DynamoDB calls, before any handler runs. */
process.env.UNAUTHENTICATED_RATE_LIMIT_PER_MINUTE = '100000';
isolatedClock();
const api = useApi();

describe('pipeline request budget', () => {
  it('one counter update per request, plus one token lookup when a token is presented', async () => {
    const { token } = await newMerchant(['customers:read']);
    const cases: [string, Parameters<typeof api.counted>, number, Record<string, number>][] = [
      ['no token → 401', ['GET', '/customers/1'], 401, { UpdateItemCommand: 1 }],
      [
        'malformed token → 401, no lookup',
        ['GET', '/customers/1', { headers: { authorization: 'Bearer short' } }],
        401,
        { UpdateItemCommand: 1 },
      ],
      ['unknown token → 401', ['GET', '/customers/1', { token: generateToken() }], 401, { GetItemCommand: 1, UpdateItemCommand: 1 }],
      ['public document', ['GET', '/openapi.json'], 200, { UpdateItemCommand: 1 }],
      [
        'missing ability → 403',
        ['POST', '/customers', { token, body: { email: 'a@example.com' } }],
        403,
        { GetItemCommand: 1, UpdateItemCommand: 1 },
      ],
      ['unknown route → 404', ['GET', '/nope', { token }], 404, { GetItemCommand: 1, UpdateItemCommand: 1 }],
      ['handler read → 404', ['GET', '/customers/1', { token }], 404, { GetItemCommand: 1, UpdateItemCommand: 1, BatchGetItemCommand: 1 }],
    ];
    for (const [label, args, status, byCommand] of cases) {
      const { res, byCommand: seen } = await api.counted(...args);
      expect(res.status, label).toBe(status);
      expect(seen, label).toEqual(byCommand);
    }
    const writer = await newMerchant();
    const bad = await api.counted('POST', '/customers', {
      token: writer.token,
      rawBody: '{',
      headers: { 'content-type': 'application/json' },
    });
    expect(bad.res.status).toBe(400);
    expect(bad.byCommand).toEqual({ GetItemCommand: 1, UpdateItemCommand: 1 });
    await withEnv({ RATE_LIMIT_PER_HOUR: '1' }, async () => {
      const over = await api.counted('GET', '/customers/1', { token });
      expect(over.res.status).toBe(429);
      expect(over.byCommand).toEqual({ GetItemCommand: 1, UpdateItemCommand: 1 });
    });
  });
});

describe('per-request DynamoDB tally', () => {
  it('stays each request’s own under concurrency, with the capacity units DynamoDB reported', async () => {
    const { token } = await newMerchant(['customers:read', 'customers:write']);
    const alone = await api.counted('GET', '/customers/999999', { token });
    expect(alone.res.status).toBe(404);
    expect(alone.capacityUnits).toBeGreaterThan(0);
    // 20 reads and 20 creates at once: a process-global counter would add them all up.
    const calls = await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        i % 2
          ? api.counted('GET', '/customers/999999', { token })
          : api.counted('POST', '/customers', { token, body: { email: `c${i}@example.com` } }),
      ),
    );
    for (const [i, c] of calls.entries()) {
      if (i % 2) {
        expect(c.res.status).toBe(404);
        expect(c.byCommand).toEqual(alone.byCommand);
        expect(c.capacityUnits).toBe(alone.capacityUnits);
      } else {
        expect(c.res.status).toBe(201);
        expect(c.requests).toBeLessThanOrEqual(5);
      }
    }
  });
});
