import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { ABILITIES } from '#lib/auth/abilities';
import { describe, expect, it, vi } from 'vitest';
import { hashToken } from '#lib/auth/tokens';
import { db, tableName } from '#lib/db/client';
import { keys } from '#lib/db/keys';
import { createMerchant, regenerateToken } from '#lib/merchants/service';
import { newMerchant, useApi } from '../support/api.ts';
import { failDynamoWhen, isolatedClock } from '../pipeline/support.ts';
import { backoffice, backofficeJwt, OPERATIONS, type Operation } from './support.ts';

/** The token's life through the back office, last_used_at, and what each operation costs. */
process.env.UNAUTHENTICATED_RATE_LIMIT_PER_MINUTE = '100000';
const clock = isolatedClock();
const api = useApi();

const item = async (key: { pk: string; sk: string }) =>
  (await db().send(new GetCommand({ TableName: tableName(), Key: key, ConsistentRead: true }))).Item;
const at = (unixSeconds: number) => `${new Date(unixSeconds * 1000).toISOString().slice(0, 19)}Z`;

describe('token lifecycle through the back office', () => {
  it('create → use → regenerate (old refused, new accepted) → revoke (refused) → create again; 409 while valid', async () => {
    const merchant = await createMerchant('Back office shop');
    const admin = await backofficeJwt(merchant.merchant_id, 'admin');

    const none = await backoffice(api, 'view', admin);
    expect(none.status).toBe(404);
    expect(none.body).toEqual({ message: 'Resource not found' });
    expect((await backoffice(api, 'regenerate', admin)).status).toBe(404);
    expect((await backoffice(api, 'revoke', admin)).status).toBe(404);

    const created = await backoffice(api, 'create', admin);
    expect(created.status).toBe(201);
    // The one answer that carries the token in plain text: no cache keeps it (nor any other answer).
    expect(created.headers.get('cache-control')).toBe('no-store');
    expect(none.headers.get('cache-control')).toBe('no-store');
    const first = created.body.data.token as string;
    expect(created.body.data).toEqual({
      token: expect.stringMatching(/^ras_[0-9A-Za-z]{40,}$/),
      prefix: first.slice(0, 8),
      last_four: first.slice(-4),
      abilities: expect.arrayContaining(['customers:read', 'customers:write', 'orders:write', 'webhooks:read', 'analytics:read']),
      created_at: at(clock.start),
      last_used_at: null,
    });
    expect([...created.body.data.abilities].sort()).toEqual([...ABILITIES].sort()); // new tokens carry every ability
    // Shown once: the view never carries it.
    const viewed = await backoffice(api, 'view', admin);
    expect(viewed.body.data).toEqual({ ...created.body.data, token: undefined });
    expect(JSON.stringify(viewed.body)).not.toContain(first);

    expect((await api.get('/customers', first)).status).toBe(200);
    const again = await backoffice(api, 'create', admin);
    expect(again.status).toBe(409);
    expect(again.body).toEqual({ message: 'A valid token already exists. Revoke it before creating a new one.' });
    expect((await api.get('/customers', first)).status).toBe(200); // the refused create changed nothing

    const regenerated = await backoffice(api, 'regenerate', admin);
    expect(regenerated.status).toBe(200);
    const second = regenerated.body.data.token as string;
    expect(second).not.toBe(first);
    expect(regenerated.body.data).toMatchObject({
      last_four: second.slice(-4),
      abilities: created.body.data.abilities,
      last_used_at: null,
    });
    const old = await api.get('/customers', first);
    expect(old.status).toBe(401);
    expect(old.body).toEqual({ message: 'Unauthenticated.' });
    expect((await api.get('/customers', second)).status).toBe(200);

    const revoked = await backoffice(api, 'revoke', admin);
    expect(revoked.status).toBe(204);
    expect(revoked.body).toBeUndefined();
    expect((await api.get('/customers', second)).status).toBe(401);
    expect((await backoffice(api, 'view', admin)).status).toBe(404);
    expect((await backoffice(api, 'revoke', admin)).status).toBe(404); // irreversible, and nothing left to revoke
    expect((await backoffice(api, 'regenerate', admin)).status).toBe(404); // a revoked token is not brought back
    expect((await api.get('/customers', second)).status).toBe(401);

    const third = await backoffice(api, 'create', admin);
    expect(third.status).toBe(201);
    expect((await api.get('/customers', third.body.data.token)).status).toBe(200);
    expect((await api.get('/customers', second)).status).toBe(401);
  });
});

describe('last_used_at', () => {
  it('is stamped at most once a minute, on the token item (no TTL), never in the rate windows', async () => {
    const { merchantId, token } = await newMerchant();
    const user = await backofficeJwt(merchantId, 'user');
    const lastUsed = async () => (await backoffice(api, 'view', user)).body.data.last_used_at;
    const updates = async () => {
      const { res, byCommand } = await api.counted('GET', '/customers/1', { token }, { stamp: false });
      expect(res.status).toBe(404);
      return byCommand.UpdateItemCommand;
    };
    const t0 = clock.start;
    clock.set(at(t0));
    expect(await lastUsed()).toBeNull();

    expect(await updates()).toBe(2); // the rate counter and the first stamp
    expect(await lastUsed()).toBe(at(t0));
    clock.set(at(t0 + 30));
    expect(await updates()).toBe(1); // within the minute: no write
    clock.set(at(t0 + 59));
    expect(await updates()).toBe(1);
    expect(await lastUsed()).toBe(at(t0));
    clock.set(at(t0 + 60));
    expect(await updates()).toBe(2);
    expect(await lastUsed()).toBe(at(t0 + 60));

    // Where it lives: the token item, which has no TTL; the rate window (which expires) holds only counts.
    const tokenItem = await item(keys.token(hashToken(token)));
    expect(tokenItem).toMatchObject({ last_used_at: at(t0 + 60) });
    expect(tokenItem?.expires_at).toBeUndefined();
    const window = await item(keys.merchantRateWindow(merchantId, Math.floor((t0 + 60) / 3600) * 3600));
    expect(window?.expires_at).toEqual(expect.any(Number));
    expect(window?.last_used_at).toBeUndefined();

    // Hours later (every rate window of that time expired) the view still shows it.
    clock.set(at(t0 + 5 * 3600));
    expect(await lastUsed()).toBe(at(t0 + 60));
  });

  it('concurrent first uses in a minute leave one stamp; a regenerated token starts with none', async () => {
    const { merchantId, token } = await newMerchant();
    const admin = await backofficeJwt(merchantId, 'admin');
    clock.set(at(clock.start + 7200));
    const results = await Promise.all(Array.from({ length: 8 }, () => api.get('/customers', token)));
    expect(results.map((r) => r.status)).toEqual(Array(8).fill(200));
    expect((await backoffice(api, 'view', admin)).body.data.last_used_at).toBe(at(clock.start + 7200));

    const regenerated = await backoffice(api, 'regenerate', admin);
    expect((await backoffice(api, 'view', admin)).body.data.last_used_at).toBeNull();
    await api.get('/customers', regenerated.body.data.token);
    expect((await backoffice(api, 'view', admin)).body.data.last_used_at).toBe(at(clock.start + 7200));
    // The old token's item is gone and is not brought back by a late stamp.
    expect(await item(keys.token(hashToken(token)))).toBeUndefined();
  });

  it('a failed stamp never fails the request (fault injected)', async () => {
    const { merchantId, token } = await newMerchant();
    clock.set(at(clock.start + 3 * 3600));
    const fault = failDynamoWhen((c) => c.constructor.name === 'UpdateCommand' && String(c.input.Key?.pk).startsWith('TOKEN#'));
    try {
      expect((await api.get('/customers', token)).status).toBe(200);
      expect(fault).toHaveBeenCalled();
    } finally {
      fault.mockRestore();
    }
    expect((await backoffice(api, 'view', await backofficeJwt(merchantId, 'user'))).body.data.last_used_at).toBeNull();
    await api.get('/customers', token);
    expect((await backoffice(api, 'view', await backofficeJwt(merchantId, 'user'))).body.data.last_used_at).toBe(
      at(clock.start + 3 * 3600),
    );
  });
});

describe('losing a race', () => {
  /** Runs `rival` just before the next transaction the request sends, so that transaction finds the token changed. */
  const raceNextTransaction = (rival: () => Promise<unknown>) => {
    const client = db();
    const original = client.send.bind(client);
    let raced = false;
    return vi.spyOn(client, 'send').mockImplementation((async (command: any, ...rest: unknown[]) => {
      if (!raced && command.constructor.name === 'TransactWriteCommand') {
        raced = true;
        await rival();
      }
      return (original as any)(command, ...rest);
    }) as never);
  };

  it('a regenerate or revoke overtaken by another answers 409 with Retry-After (retrying it is safe), and changes nothing', async () => {
    const { merchantId } = await newMerchant();
    const admin = await backofficeJwt(merchantId, 'admin');
    for (const op of ['regenerate', 'revoke'] as const) {
      if (op === 'revoke') await regenerateToken(merchantId);
      let winner = '';
      const race = raceNextTransaction(async () => (winner = (await regenerateToken(merchantId)).token));
      let res: Awaited<ReturnType<typeof backoffice>>;
      try {
        res = await backoffice(api, op, admin);
      } finally {
        race.mockRestore();
      }
      expect(res.status, op).toBe(409);
      expect(res.headers.get('retry-after'), op).toBe('1');
      expect(res.headers.get('x-request-id'), op).toEqual(expect.any(String));
      expect(res.body.message, op).toMatch(/^The token changed while it was being (regenerated|revoked)\. Try again\.$/);
      // The rival's token is the valid one; the lost request left no trace.
      expect((await api.get('/customers', winner)).status, op).toBe(200);
    }
    // The retry the header invites succeeds.
    expect((await backoffice(api, 'revoke', admin)).status).toBe(204);
  });
});

describe('request budgets of the back office', () => {
  it('view 4, create 3, regenerate 4, revoke 4; refusals 0 (authorizer), 2 (401 unknown merchant, 403)', async () => {
    const { merchantId } = await newMerchant();
    const admin = await backofficeJwt(merchantId, 'admin');
    const user = await backofficeJwt(merchantId, 'user');
    const call = async (op: Operation, jwt: string | null) => {
      const [method, path] = OPERATIONS[op];
      return api.counted(method, path, { headers: jwt ? { authorization: `Bearer ${jwt}` } : {} });
    };
    const expectCost = async (op: Operation, jwt: string | null, status: number, byCommand: Record<string, number>) => {
      const { res, byCommand: seen } = await call(op, jwt);
      expect(res.status, op).toBe(status);
      expect(seen, op).toEqual(byCommand);
    };
    // merchant (identity), back-office window, then the operation's own reads and one transaction.
    await expectCost('view', user, 200, { GetItemCommand: 3, UpdateItemCommand: 1 });
    await expectCost('regenerate', admin, 200, { GetItemCommand: 2, UpdateItemCommand: 1, TransactWriteItemsCommand: 1 });
    await expectCost('revoke', admin, 204, { GetItemCommand: 2, UpdateItemCommand: 1, TransactWriteItemsCommand: 1 });
    await expectCost('create', admin, 201, { GetItemCommand: 1, UpdateItemCommand: 1, TransactWriteItemsCommand: 1 });
    await expectCost('create', admin, 409, { GetItemCommand: 1, UpdateItemCommand: 1, TransactWriteItemsCommand: 1 });
    await expectCost('revoke', user, 403, { GetItemCommand: 1, UpdateItemCommand: 1 });
    await expectCost('view', null, 401, {}); // refused by the JWT authorizer: no function runs
    const unknown = await backofficeJwt('mer_unknown000000000000', 'admin');
    await expectCost('view', unknown, 401, { GetItemCommand: 1, UpdateItemCommand: 1 }); // per-IP window
  });

  it('the API token pipeline: the once-a-minute stamp is the only extra request', async () => {
    const { token } = await newMerchant(['customers:read']);
    clock.set(at(clock.start + 4 * 3600));
    // The token (GetItem), the rate window and the stamp (UpdateItem), the customer with its timeline head (BatchGetItem).
    const first = await api.counted('GET', '/customers/1', { token }, { stamp: false });
    expect(first.byCommand).toEqual({ GetItemCommand: 1, UpdateItemCommand: 2, BatchGetItemCommand: 1 });
    const next = await api.counted('GET', '/customers/1', { token }, { stamp: false });
    expect(next.byCommand).toEqual({ GetItemCommand: 1, UpdateItemCommand: 1, BatchGetItemCommand: 1 });
  });
});
