import { ScanCommand } from '@aws-sdk/lib-dynamodb';
import { describe, expect, it } from 'vitest';
import { newMerchant, useApi } from '../support/api.ts';
import { isolatedClock } from './support.ts';
import { authenticate, bearerToken, generateToken, hashToken } from '#lib/auth/tokens';
import { createCustomer } from '#lib/customers/service';
import { db, tableName } from '#lib/db/client';
import { createMerchant, createToken, regenerateToken, revokeToken } from '#lib/merchants/service';
import { ConflictError, DomainError, NotFoundError } from '#lib/errors';
import { toHttpError } from '#lib/http/errors';
import { ensureTable } from '../../infra/local/dynamodb.ts';

/** docs/authentication-and-limits.md: who may call, and what a refusal looks like. */
process.env.UNAUTHENTICATED_RATE_LIMIT_PER_MINUTE = '100000';
isolatedClock();
const api = useApi();

const UNAUTHENTICATED = { message: 'Unauthenticated.' };
const FORBIDDEN = { message: 'This action is unauthorized.' };

const expectRefused = (r: { status: number; headers: Headers; body: unknown }) => {
  expect(r.status).toBe(401);
  expect(r.body).toEqual(UNAUTHENTICATED);
  expect(r.headers.get('content-type')).toBe('application/json');
  expect(r.headers.get('x-request-id')).toBeTruthy();
  expect(r.headers.get('x-ratelimit-limit')).toBe('100000');
};

describe('401 for every kind of bad credential', () => {
  it('refuses a missing Authorization header', async () => {
    expectRefused(await api.get('/customers/1'));
  });

  it('refuses malformed headers, even when they carry a valid token', async () => {
    const { token } = await newMerchant();
    const body = token.slice(4);
    const malformed = [
      'Bearer',
      'Bearer ',
      `Basic ${Buffer.from(`user:${token}`).toString('base64')}`,
      `Token ${token}`,
      token, // no scheme
      `Bearer tok_${body}`, // wrong token prefix
      `Bearer ${token.slice(0, 43)}`, // ras_ + 39 characters
      `Bearer ras_${'a'.repeat(39)}`,
      `Bearer ${token}!`, // outside base62
      `Bearer ${token} ${token}`,
      `Bearer ${token.slice(0, 20)}-${token.slice(21)}`,
    ];
    for (const authorization of malformed) {
      const r = await api.get('/customers/1', null, { authorization });
      expect(r.status, authorization).toBe(401);
      expect(r.body).toEqual(UNAUTHENTICATED);
    }
    // The same token, well formed, is accepted (the scheme is case-insensitive, RFC 7235).
    expect((await api.get('/customers/1', null, { authorization: `Bearer ${token}` })).status).toBe(404);
    expect((await api.get('/customers/1', null, { authorization: `bearer ${token}` })).status).toBe(404);
  });

  it('refuses a well-formed token that was never issued', async () => {
    expectRefused(await api.get('/customers/1', generateToken()));
  });

  it('refuses a revoked token on the very next request, for good', async () => {
    const { merchantId, token } = await newMerchant();
    expect((await api.get('/customers/1', token)).status).toBe(404);
    await revokeToken(merchantId);
    expectRefused(await api.get('/customers/1', token));
    // A new token does not bring the revoked one back.
    const fresh = await createToken(merchantId);
    expect((await api.get('/customers/1', fresh.token)).status).toBe(404);
    expectRefused(await api.get('/customers/1', token));
  });

  it('refuses the old token right after regeneration; the new one works and keeps the abilities', async () => {
    const { merchantId, token } = await newMerchant(['customers:read']);
    expect((await api.get('/customers/1', token)).status).toBe(404);
    const regenerated = await regenerateToken(merchantId);
    expect(regenerated.token).not.toBe(token);
    expect(regenerated.abilities).toEqual(['customers:read']);
    expectRefused(await api.get('/customers/1', token));
    expect((await api.get('/customers/1', regenerated.token)).status).toBe(404);
    expect((await api.get('/customers', regenerated.token)).status).toBe(200);
    expect((await api.post('/customers', regenerated.token, { email: 'a@example.com' })).status).toBe(403);
  });
});

describe('403 for a token without the ability', () => {
  it('answers 403 with the exact body, before looking at the request', async () => {
    const { token } = await newMerchant(['orders:read']);
    for (const [method, path, body] of [
      ['GET', '/customers/1', undefined],
      ['GET', '/customers', undefined],
      ['POST', '/customers', { email: 'not-an-email' }],
      ['GET', '/customers?per_page=0', undefined],
    ] as const) {
      const r = await api.request(method, path, { token, body });
      expect(r.status, `${method} ${path}`).toBe(403);
      expect(r.body).toEqual(FORBIDDEN);
      expect(r.headers.get('x-request-id')).toBeTruthy();
      expect(r.headers.get('x-ratelimit-remaining')).toMatch(/^\d+$/);
    }
    // The ability it has is honoured.
    expect((await api.get('/orders/stats', token)).status).toBe(200);
  });

  it('stores nothing for a refused write', async () => {
    const { merchantId, token } = await newMerchant(['customers:read']);
    expect((await api.post('/customers', token, { email: 'refused@example.com' })).status).toBe(403);
    const list = await api.get('/customers', token);
    expect(list.body.meta.total).toBe(0);
    expect(merchantId).toMatch(/^mer_/);
  });
});

describe('tokens', () => {
  it('look like ras_ + 40 or more base62 characters and are unique', () => {
    const tokens = Array.from({ length: 200 }, generateToken);
    for (const t of tokens) expect(t).toMatch(/^ras_[0-9A-Za-z]{40,}$/);
    expect(new Set(tokens).size).toBe(tokens.length);
    // Every base62 character turns up: the alphabet is not truncated.
    expect(new Set(tokens.join('').slice(0, 20_000).replace(/^ras_/gm, '')).size).toBeGreaterThanOrEqual(62);
    expect(bearerToken(`Bearer ${tokens[0]}`)).toBe(tokens[0]);
  });

  it('are stored only as SHA-256 hashes: the plain value appears in no item of the table', async () => {
    // A table of its own: scanning the shared one (other files' large seeds) would hold DynamoDB
    // Local for seconds and stall every other test file's requests meanwhile.
    const shared = process.env.TABLE_NAME;
    process.env.TABLE_NAME = `auth-scan-${process.pid}`;
    await ensureTable(process.env.DYNAMODB_ENDPOINT!, tableName());
    try {
      const { merchantId, token } = await newMerchant();
      const regenerated = (await regenerateToken(merchantId)).token;
      expect((await api.get('/customers/1', regenerated)).status).toBe(404); // writes the rate window too
      // The whole table: a parallel scan.
      const items: Record<string, unknown>[] = [];
      const SEGMENTS = 4;
      await Promise.all(
        Array.from({ length: SEGMENTS }, async (_, Segment) => {
          let ExclusiveStartKey: Record<string, unknown> | undefined;
          do {
            const page = await db().send(new ScanCommand({ TableName: tableName(), ExclusiveStartKey, Segment, TotalSegments: SEGMENTS }));
            items.push(...((page.Items ?? []) as Record<string, unknown>[]));
            ExclusiveStartKey = page.LastEvaluatedKey;
          } while (ExclusiveStartKey);
        }),
      );
      const text = items.map((i) => JSON.stringify(i));
      const mine = text.filter((t) => t.includes(merchantId));
      // merchant, token pointer, rate window, and the hash-keyed token items (old, now deleted, and new)
      expect(mine.length).toBeGreaterThanOrEqual(3);
      for (const plain of [token, regenerated]) {
        expect(text.filter((t) => t.includes(plain))).toEqual([]);
        expect(text.filter((t) => t.includes(plain.slice(4)))).toEqual([]);
      }
      expect(hashToken(regenerated)).toMatch(/^[0-9a-f]{64}$/);
      expect(mine.some((t) => t.includes(`TOKEN#${hashToken(regenerated)}`))).toBe(true);
      expect(mine.some((t) => t.includes(`TOKEN#${hashToken(token)}`))).toBe(false); // the old one is gone
    } finally {
      process.env.TABLE_NAME = shared;
    }
  });

  it('one valid token per merchant: a second create is refused with 409 until the first is revoked', async () => {
    const merchant = await createMerchant('two tokens');
    const first = await createToken(merchant.merchant_id);
    const refused = await createToken(merchant.merchant_id).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(ConflictError);
    expect(toHttpError(refused)).toMatchObject({
      status: 409,
      body: { message: 'A valid token already exists. Revoke it before creating a new one.' },
    });
    expect(await authenticate(first.token)).not.toBeNull();
    await revokeToken(merchant.merchant_id);
    const second = await createToken(merchant.merchant_id);
    expect(await authenticate(second.token)).toMatchObject({ merchantId: merchant.merchant_id });
    await expect(revokeToken('mer_missing')).rejects.toBeInstanceOf(NotFoundError);
    await expect(regenerateToken('mer_missing')).rejects.toBeInstanceOf(NotFoundError);
  });

  it('concurrent creates leave exactly one token', async () => {
    const merchant = await createMerchant('race');
    const results = await Promise.allSettled(Array.from({ length: 5 }, () => createToken(merchant.merchant_id)));
    const made = results.flatMap((r) => (r.status === 'fulfilled' ? [r.value.token] : []));
    expect(made).toHaveLength(1);
    for (const r of results) if (r.status === 'rejected') expect(r.reason).toBeInstanceOf(ConflictError);
    expect(await authenticate(made[0])).not.toBeNull();
  });

  it('a revoke racing a regenerate never leaves a token valid after a successful revoke of it', async () => {
    for (let i = 0; i < 8; i++) {
      const { merchantId, token } = await newMerchant();
      const [regen, revoke] = await Promise.allSettled([regenerateToken(merchantId), revokeToken(merchantId)]);
      const valid = [token, ...(regen.status === 'fulfilled' ? [regen.value.token] : [])];
      const live = (await Promise.all(valid.map(authenticate))).filter(Boolean);
      expect(live.length).toBeLessThanOrEqual(1);
      expect(await authenticate(token)).toBeNull(); // the original is gone either way
      if (revoke.status === 'fulfilled' && regen.status === 'fulfilled') {
        // Both succeeded, so the revoke came second and took the regenerated token with it.
        expect(live).toHaveLength(0);
      }
      for (const r of [regen, revoke]) if (r.status === 'rejected') expect(r.reason).toBeInstanceOf(DomainError);
    }
  });
});

describe('merchant isolation', () => {
  it("a token never reaches another merchant's customer (404, by id and by external_id)", async () => {
    const a = await newMerchant();
    const b = await newMerchant();
    const customer = await createCustomer(b.merchantId, { email: 'b-only@example.com', external_id: 'crm-b-1' });
    for (const ref of [String(customer.id), 'crm-b-1']) {
      const mine = await api.get(`/customers/${ref}`, b.token);
      expect(mine.status).toBe(200);
      expect(mine.body.data.email).toBe('b-only@example.com');
      const theirs = await api.get(`/customers/${ref}`, a.token);
      expect(theirs.status).toBe(404);
      expect(theirs.body).toEqual({ message: 'Resource not found' });
    }
    expect((await api.get('/customers', a.token)).body.meta.total).toBe(0);
  });
});
