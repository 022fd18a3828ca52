import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ABILITIES, type Ability } from '#lib/auth/abilities';
import { db, tableName } from '#lib/db/client';
import { keys } from '#lib/db/keys';
import { createToken, revokeToken } from '#lib/merchants/service';
import { resetResolver, setResolver } from '#lib/webhooks/url-safety';
import { newMerchant, useApi } from '../support/api.ts';

/**
 * Who may do what to a webhook endpoint (docs/api-conventions.md): 401, 403 per ability
 * (`webhooks:read` for GETs, `webhooks:write` otherwise), 404 for unknown, malformed and other
 * merchants' ids, and isolation between merchants.
 */

const api = useApi();
beforeAll(() => setResolver(async () => ['93.184.215.14']));
afterAll(() => resetResolver());

const UNAUTHENTICATED = { message: 'Unauthenticated.' };
const FORBIDDEN = { message: 'This action is unauthorized.' };
const NOT_FOUND = { message: 'Resource not found' };

type Merchant = { merchantId: string; token: string };

const create = async (token: string, body: Record<string, unknown> = {}) => {
  const r = await api.post('/webhook-endpoints', token, { url: 'https://hooks.example.com/a', events: ['*'], ...body });
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  return r.body.data as { id: number; secret: string };
};

const stored = async (merchantId: string, id: number) =>
  (await db().send(new GetCommand({ TableName: tableName(), Key: keys.webhookEndpoint(merchantId, id), ConsistentRead: true }))).Item;

/** Everything a merchant can see of its endpoints, plus the stored items (secrets included). */
const snapshot = async ({ merchantId, token }: Merchant) => {
  const list = await api.get('/webhook-endpoints?per_page=100', token);
  expect(list.status).toBe(200);
  return {
    list: list.body.data,
    total: list.body.meta.total,
    items: await Promise.all(list.body.data.map((e: any) => stored(merchantId, e.id))),
  };
};

type Target = {
  name: string;
  method: string;
  path: (id: number | string) => string;
  body?: () => Record<string, unknown>;
  ability: Ability;
  ok: number;
};
const targets: Target[] = [
  { name: 'GET /webhook-endpoints', method: 'GET', path: () => '/webhook-endpoints', ability: 'webhooks:read', ok: 200 },
  { name: 'GET /webhook-endpoints/{id}', method: 'GET', path: (id) => `/webhook-endpoints/${id}`, ability: 'webhooks:read', ok: 200 },
  {
    name: 'POST /webhook-endpoints',
    method: 'POST',
    path: () => '/webhook-endpoints',
    body: () => ({ url: 'https://hooks.example.com/new', events: ['order.paid'] }),
    ability: 'webhooks:write',
    ok: 201,
  },
  {
    name: 'PATCH /webhook-endpoints/{id}',
    method: 'PATCH',
    path: (id) => `/webhook-endpoints/${id}`,
    body: () => ({ description: 'changed' }),
    ability: 'webhooks:write',
    ok: 200,
  },
  {
    name: 'POST /webhook-endpoints/{id}/rotate-secret',
    method: 'POST',
    path: (id) => `/webhook-endpoints/${id}/rotate-secret`,
    ability: 'webhooks:write',
    ok: 200,
  },
  {
    name: 'DELETE /webhook-endpoints/{id}',
    method: 'DELETE',
    path: (id) => `/webhook-endpoints/${id}`,
    ability: 'webhooks:write',
    ok: 204,
  },
];
const byId = targets.filter((t) => t.path(1) !== t.path(2));

const send = (t: Target, token: string | null, id: number | string, headers?: Record<string, string>) =>
  api.request(t.method, t.path(id), { token, body: t.body?.(), headers });

describe('authentication and abilities', () => {
  let m: Merchant;
  let id: number;
  beforeAll(async () => {
    m = await newMerchant();
    id = (await create(m.token)).id;
  });

  it.each(targets.map((t) => [t.name, t] as const))('%s: 401 without a token or with a bad one; nothing changes', async (_n, t) => {
    const before = await snapshot(m);
    for (const [what, headers] of [
      ['no header', {}],
      ['never-issued token', { authorization: `Bearer ras_${'A'.repeat(40)}` }],
      ['another scheme carrying the valid token', { authorization: `Basic ${m.token}` }],
    ] as [string, Record<string, string>][]) {
      const r = await send(t, null, id, headers);
      expect(r.status, what).toBe(401);
      expect(r.body, what).toEqual(UNAUTHENTICATED);
    }
    expect(await snapshot(m)).toEqual(before);
  });

  it.each(targets.map((t) => [t.name, t] as const))(
    '%s: 403 with a token lacking its ability (even with every other one)',
    async (_n, t) => {
      const others = ABILITIES.filter((a) => a !== t.ability);
      for (const abilities of [['customers:read'], others] as Ability[][]) {
        const limited = await newMerchant(abilities);
        const r = await send(t, limited.token, 1);
        expect(r.status, `${abilities.join(',')}: ${JSON.stringify(r.body)}`).toBe(403);
        expect(r.body).toEqual(FORBIDDEN);
      }
    },
  );

  it('a webhooks:read token reads but changes nothing; a webhooks:write token writes but reads nothing', async () => {
    const owner = await newMerchant();
    const e = await create(owner.token);
    await revokeToken(owner.merchantId);
    const readOnly = (await createToken(owner.merchantId, ['webhooks:read'])).token;
    const before = await snapshot({ ...owner, token: readOnly });
    for (const t of targets) {
      const r = await send(t, readOnly, e.id);
      if (t.ability === 'webhooks:read') expect(r.status, t.name).toBe(200);
      else {
        expect(r.status, t.name).toBe(403);
        expect(r.body).toEqual(FORBIDDEN);
      }
    }
    expect(await snapshot({ ...owner, token: readOnly })).toEqual(before);

    await revokeToken(owner.merchantId);
    const writeOnly = (await createToken(owner.merchantId, ['webhooks:write'])).token;
    for (const t of targets) {
      const r = await send(t, writeOnly, e.id);
      if (t.ability === 'webhooks:write') expect(r.status, `${t.name}: ${JSON.stringify(r.body)}`).toBe(t.ok);
      else {
        expect(r.status, t.name).toBe(403);
        expect(r.body).toEqual(FORBIDDEN);
      }
    }
    expect(await stored(owner.merchantId, e.id)).toBeUndefined();
  });
});

describe("404: unknown, malformed and other merchants' ids", () => {
  let a: Merchant;
  let b: Merchant;
  let bOwn: { id: number; secret: string };
  beforeAll(async () => {
    a = await newMerchant();
    b = await newMerchant();
    // A has endpoints 1 and 2; B has 1..3, so B's 3 exists for no other merchant than B.
    await create(a.token);
    await create(a.token);
    await create(b.token);
    await create(b.token);
    bOwn = await create(b.token, { description: "B's" });
    expect(bOwn.id).toBe(3);
  });

  it.each(byId.map((t) => [t.name, t] as const))(
    "%s: another merchant's id, an unknown id and non-numeric ids are 404; nothing changes",
    async (_n, t) => {
      const beforeA = await snapshot(a);
      const beforeB = await snapshot(b);
      for (const id of [
        bOwn.id,
        999_999,
        'abc',
        '0',
        '-1',
        '1.5',
        '01',
        '1e3',
        ' 1',
        '99999999999999999999',
        '9007199254740993',
        encodeURIComponent('1 OR 1=1'),
      ]) {
        const r = await send(t, a.token, id);
        expect(r.status, `${t.name} ${id}: ${JSON.stringify(r.body)}`).toBe(404);
        expect(r.body).toEqual(NOT_FOUND);
      }
      expect(await snapshot(a)).toEqual(beforeA);
      expect(await snapshot(b)).toEqual(beforeB);
    },
  );

  it("lists are per merchant: A never sees B's endpoints, and B's are untouched by A's writes", async () => {
    const listA = (await api.get('/webhook-endpoints', a.token)).body;
    const listB = (await api.get('/webhook-endpoints', b.token)).body;
    expect(listA.meta.total).toBe(2);
    expect(listB.meta.total).toBe(3);
    expect(listA.data.map((e: any) => e.id).sort()).toEqual([1, 2]);
    expect(listB.data.find((e: any) => e.id === 3).description).toBe("B's");
    // A changes, rotates and deletes its own endpoint 1: B's endpoint 1 stays as it was.
    const bOneBefore = await stored(b.merchantId, 1);
    expect((await api.patch('/webhook-endpoints/1', a.token, { status: 'disabled' })).status).toBe(200);
    expect((await api.post('/webhook-endpoints/1/rotate-secret', a.token)).status).toBe(200);
    expect((await api.del('/webhook-endpoints/1', a.token)).status).toBe(204);
    expect(await stored(b.merchantId, 1)).toEqual(bOneBefore);
    expect((await api.get('/webhook-endpoints/1', b.token)).status).toBe(200);
  });
});
