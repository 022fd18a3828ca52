import { describe, expect, it } from 'vitest';
import { newMerchant, useApi } from '../support/api.ts';
import { isolatedClock } from '../pipeline/support.ts';
import { backofficeJwt, forgedJwt } from '../backoffice/support.ts';
import { signLocalJwt } from '../../infra/local/backoffice-jwt.ts';
import { routeList } from '#lib/api/routes';

/**
 * Token routes open to the dashboard (RouteDef `dashboard`) also take a back-office JWT, verified by
 * the pipeline: the caller acts as its merchant claim's merchant, with its role in place of an ability.
 */
process.env.UNAUTHENTICATED_RATE_LIMIT_PER_MINUTE = '100000';
isolatedClock();
const api = useApi();

const UNAUTHENTICATED = { message: 'Unauthenticated.' };
const FORBIDDEN = { message: 'This action is unauthorized.' };
const asJwt = (jwt: string) => ({ authorization: `Bearer ${jwt}` });
const claimsFor = (merchantId: string, groups = ['admin']) => ({
  sub: 'u-1',
  'custom:merchant_id': merchantId,
  'cognito:groups': groups,
  token_use: 'id',
});

const order = (n: number, email: string) => ({
  order_no: `D-${n}-${Math.random().toString(36).slice(2, 8)}`,
  customer_email: email,
  amount: '10.50',
  status: 'paid',
});

describe('the dashboard identity on token routes', () => {
  it('a JWT reads its own merchant only, as the merchant token does', async () => {
    const a = await newMerchant();
    const b = await newMerchant();
    await api.post('/orders', a.token, order(1, 'a@example.com'));
    await api.post('/orders', b.token, order(2, 'b@example.com'));
    await api.post('/orders', b.token, order(3, 'b@example.com'));
    const jwtA = await backofficeJwt(a.merchantId, 'user');

    await api.post('/customers', a.token, { email: 'c@example.com', name: 'C' });
    for (const path of [
      '/orders',
      '/orders/stats',
      '/subscriptions/events',
      '/metrics/summary',
      '/webhook-endpoints',
      '/customers',
      '/customers?search=a%40',
      '/subscriptions',
      '/exchange-rates',
    ]) {
      const byJwt = await api.get(path, null, asJwt(jwtA));
      const byToken = await api.get(path, a.token);
      expect(byJwt.status, path).toBe(200);
      expect(byJwt.body, path).toEqual(byToken.body);
    }
    const orders = await api.get('/orders', null, asJwt(jwtA));
    expect(orders.body.meta.total).toBe(1);
    expect(orders.body.data.map((o: { customer_email: string }) => o.customer_email)).toEqual(['a@example.com']);
    // B's endpoint id is unknown to A.
    const endpointB = await api.post('/webhook-endpoints', b.token, { url: 'http://127.0.0.1:9/hook', events: ['*'] });
    expect(endpointB.status).toBe(201);
    expect((await api.get(`/webhook-endpoints/${endpointB.body.data.id}/deliveries`, null, asJwt(jwtA))).status).toBe(404);
  });

  it('forged, expired, wrong-audience, wrong-issuer and unknown-merchant JWTs are 401; routes not open to the dashboard refuse any JWT', async () => {
    const { merchantId } = await newMerchant();
    const forged = await forgedJwt(claimsFor(merchantId));
    const refused = {
      forged,
      expired: (await signLocalJwt(claimsFor(merchantId), { ttlSeconds: -60 })).token,
      audience: (await signLocalJwt(claimsFor(merchantId), { audience: 'another-client' })).token,
      issuer: (await signLocalJwt(claimsFor(merchantId), { issuer: 'https://cognito-idp.example/other' })).token,
      accessToken: (await signLocalJwt({ ...claimsFor(merchantId), token_use: 'access' })).token,
      unknownMerchant: await backofficeJwt('mer_nobody', 'admin'),
      unsigned: `${Buffer.from('{"alg":"none"}').toString('base64url')}.${Buffer.from(JSON.stringify(claimsFor(merchantId))).toString('base64url')}.x`,
    };
    for (const [why, jwt] of Object.entries(refused)) {
      const res = await api.get('/orders/stats', null, asJwt(jwt));
      expect(res.status, why).toBe(401);
      expect(res.body, why).toEqual(UNAUTHENTICATED);
    }
    const valid = await backofficeJwt(merchantId, 'admin');
    expect((await api.get('/orders/stats', null, asJwt(valid))).status).toBe(200);
    for (const path of ['/subscriptions/1', '/webhook-endpoints/1', '/orders/X-1'])
      expect((await api.get(path, null, asJwt(valid))).status, path).toBe(401);
    expect((await api.post('/orders', null, order(4, 'x@example.com'), asJwt(valid))).status).toBe(401);
    expect((await api.post('/customers', null, { email: 'x@example.com' }, asJwt(valid))).status).toBe(401);
  });

  it('a user JWT may read but not send a test event (403, nothing sent); an admin may', async () => {
    const { merchantId, token } = await newMerchant();
    const endpoint = await api.post('/webhook-endpoints', token, { url: 'http://127.0.0.1:9/hook', events: ['*'] });
    const path = `/webhook-endpoints/${endpoint.body.data.id}`;
    const user = await backofficeJwt(merchantId, 'user');
    const admin = await backofficeJwt(merchantId, 'admin');
    const denied = await api.post(`${path}/test`, null, undefined, asJwt(user));
    expect(denied.status).toBe(403);
    expect(denied.body).toEqual(FORBIDDEN);
    expect((await api.get(`${path}/deliveries`, null, asJwt(user))).body.data).toEqual([]);
    const sent = await api.post(`${path}/test`, null, undefined, asJwt(admin));
    expect(sent.status).toBe(200);
    expect(sent.body.data).toMatchObject({ event_type: 'webhook.test', attempt: 1 });
    expect((await api.get(`${path}/deliveries`, null, asJwt(user))).body.data).toHaveLength(1);
    // A JWT without a role: authenticated, not allowed.
    const noRole = (await signLocalJwt(claimsFor(merchantId, ['viewers']))).token;
    expect((await api.get('/orders', null, asJwt(noRole))).body).toEqual(FORBIDDEN);
  });

  it('webhook endpoints: a user JWT may not create, change, rotate, retry or delete (403, nothing changed); an admin may', async () => {
    const { merchantId, token } = await newMerchant();
    const user = asJwt(await backofficeJwt(merchantId, 'user'));
    const admin = asJwt(await backofficeJwt(merchantId, 'admin'));
    const body = { url: 'http://127.0.0.1:9/hook', events: ['order.paid'] };
    expect((await api.post('/webhook-endpoints', null, body, user)).body).toEqual(FORBIDDEN);
    expect((await api.get('/webhook-endpoints', token)).body.data).toEqual([]);
    const created = await api.post('/webhook-endpoints', null, body, admin);
    expect(created.status).toBe(201);
    expect(created.body.data.secret).toMatch(/^whsec_/);
    const path = `/webhook-endpoints/${created.body.data.id}`;
    const denied = [
      await api.request('PATCH', path, { body: { status: 'disabled' }, headers: user }),
      await api.post(`${path}/rotate-secret`, null, undefined, user),
      await api.post(`${path}/deliveries/evt_x/retry`, null, undefined, user),
      await api.request('DELETE', path, { headers: user }),
    ];
    for (const res of denied) expect(res.body).toEqual(FORBIDDEN);
    const { secret: _, ...unchanged } = created.body.data;
    expect((await api.get(path, token)).body.data).toEqual(unchanged);
    const patched = await api.request('PATCH', path, { body: { status: 'disabled', description: 'by the dashboard' }, headers: admin });
    expect(patched.body.data).toMatchObject({ status: 'disabled', description: 'by the dashboard' });
    const rotated = await api.post(`${path}/rotate-secret`, null, undefined, admin);
    expect(rotated.body.data.secret).toMatch(/^whsec_/);
    expect(rotated.body.data.secret).not.toBe(created.body.data.secret);
    expect((await api.post(`${path}/deliveries/evt_unknown/retry`, null, undefined, admin)).status).toBe(404);
    expect((await api.request('DELETE', path, { headers: admin })).status).toBe(204);
    expect((await api.get(path, token)).status).toBe(404);
  });

  it('GET /backoffice/me names the caller: merchant, reporting currency, role', async () => {
    const { merchantId, token } = await newMerchant(undefined, 'USD');
    for (const role of ['admin', 'user'] as const) {
      const me = await api.get('/backoffice/me', null, asJwt(await backofficeJwt(merchantId, role)));
      expect(me.status).toBe(200);
      expect(me.body.data).toEqual({ merchant_id: merchantId, name: expect.any(String), reporting_currency: 'USD', timezone: 'UTC', role });
    }
    expect((await api.get('/backoffice/me', token)).status).toBe(401);
  });

  it('counts in the merchant hourly window, shared with its API token', async () => {
    const { merchantId, token } = await newMerchant();
    const jwt = await backofficeJwt(merchantId, 'user');
    const first = await api.get('/orders/stats', token);
    const second = await api.get('/orders/stats', null, asJwt(jwt));
    expect(second.headers.get('x-ratelimit-limit')).toBe(first.headers.get('x-ratelimit-limit'));
    expect(Number(second.headers.get('x-ratelimit-remaining'))).toBe(Number(first.headers.get('x-ratelimit-remaining')) - 1);
    expect(second.headers.get('x-ratelimit-reset')).toBe(first.headers.get('x-ratelimit-reset'));
  });

  it('the route table opens exactly the dashboard routes, reads to both roles and writes to admins; OpenAPI lists both schemes', async () => {
    const open = routeList.filter((r) => r.dashboard).map((r) => `${r.method} ${r.path} ${r.dashboard!.roles.join('+')}`);
    expect(open.sort()).toEqual(
      [
        'GET /orders admin+user',
        'GET /orders/stats admin+user',
        'GET /subscriptions/events admin+user',
        'GET /metrics/mrr admin+user',
        'GET /metrics/summary admin+user',
        'GET /metrics/cohorts admin+user',
        'GET /metrics/plans admin+user',
        'GET /metrics/churn-reasons admin+user',
        'GET /metrics/movements admin+user',
        'GET /metrics/sales admin+user',
        'GET /metrics/payment-methods admin+user',
        'GET /metrics/purchase-cohorts admin+user',
        'GET /metrics/trials admin+user',
        'GET /metrics/recovery admin+user',
        'GET /metrics/forecast admin+user',
        'GET /webhook-endpoints admin+user',
        'GET /webhook-endpoints/{id}/deliveries admin+user',
        'POST /webhook-endpoints/{id}/test admin',
        'GET /activity admin+user',
        'GET /activity/{id} admin+user',
        'GET /customers admin+user',
        'GET /customers/{idOrExternalId} admin+user',
        'GET /customers/{idOrExternalId}/activities admin+user',
        'GET /subscriptions admin+user',
        'GET /settings admin+user',
        'GET /exchange-rates admin+user',
        'PUT /exchange-rates/{currency} admin',
        'POST /webhook-endpoints admin',
        'PATCH /webhook-endpoints/{id} admin',
        'DELETE /webhook-endpoints/{id} admin',
        'POST /webhook-endpoints/{id}/rotate-secret admin',
        'POST /webhook-endpoints/{id}/deliveries/{event_id}/retry admin',
      ].sort(),
    );
    for (const r of routeList.filter((x) => x.dashboard && x.writes)) expect(r.dashboard!.roles, r.path).toEqual(['admin']);
    const { body: doc } = await api.get('/openapi.json');
    expect(doc.paths['/orders/stats'].get).toMatchObject({
      security: [{ bearerAuth: ['orders:read'] }, { backofficeJwt: ['admin', 'user'] }],
      'x-backoffice-roles': ['admin', 'user'],
    });
    expect(doc.paths['/webhook-endpoints/{id}/test'].post).toMatchObject({
      'x-backoffice-roles': ['admin'],
      'x-required-ability': 'webhooks:write',
    });
    expect(doc.paths['/customers'].post.security).toEqual([{ bearerAuth: ['customers:write'] }]);
  });
});
