import { connect } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { newMerchant, useApi } from '../support/api.ts';
import { createCustomer } from '#lib/customers/service';
import { FUNCTION_TIMEOUT_SECONDS } from '#lib/http/route';
import { lambdaContext, MAX_HEADER_SIZE } from '../../infra/local/server.ts';

/** The local server hands handlers the event API Gateway (HTTP API, payload 2.0) would. */
const api = useApi();

describe('local server routing', () => {
  it('decodes path parameters exactly once, as API Gateway does', async () => {
    const { merchantId, token } = await newMerchant();
    const spaced = await createCustomer(merchantId, { email: 'spaced@example.com', external_id: 'crm 7 é' });
    const percent = await createCustomer(merchantId, { email: 'percent@example.com', external_id: 'x%41' });
    const a = await api.get(`/customers/${encodeURIComponent('crm 7 é')}`, token);
    expect(a.status).toBe(200);
    expect(a.body.data.id).toBe(spaced.id);
    // "%2541" is "%41" once decoded; decoding twice would look for "xA".
    const b = await api.get('/customers/x%2541', token);
    expect(b.status).toBe(200);
    expect(b.body.data.id).toBe(percent.id);
    // A malformed escape is passed through as sent, and simply matches nothing.
    expect((await api.get('/customers/%E0%A4%A', token)).status).toBe(404);
  });

  it('prefers a static segment over a parameter (/orders/stats is not order "stats")', async () => {
    const { token } = await newMerchant();
    const stats = await api.get('/orders/stats', token);
    expect(stats.status).toBe(200);
    expect(stats.body.data).toHaveProperty('today_count');
  });
});

describe('local server Lambda context', () => {
  const saved = process.env.LOCAL_FUNCTION_TIMEOUT_MS;
  afterEach(() => {
    if (saved === undefined) delete process.env.LOCAL_FUNCTION_TIMEOUT_MS;
    else process.env.LOCAL_FUNCTION_TIMEOUT_MS = saved;
  });

  it('counts the function timeout down from the start of the invocation', async () => {
    delete process.env.LOCAL_FUNCTION_TIMEOUT_MS;
    const context = lambdaContext('customersList', 'req-1');
    const first = context.getRemainingTimeInMillis();
    expect(first).toBeLessThanOrEqual(FUNCTION_TIMEOUT_SECONDS * 1000);
    expect(first).toBeGreaterThan(FUNCTION_TIMEOUT_SECONDS * 1000 - 1_000);
    await new Promise((r) => setTimeout(r, 120));
    expect(context.getRemainingTimeInMillis()).toBeLessThanOrEqual(first - 100);
    // An invocation that started earlier has less left.
    expect(lambdaContext('customersList', 'req-2', Date.now() - 4_000).getRemainingTimeInMillis()).toBeLessThanOrEqual(6_000);
  });

  it('takes LOCAL_FUNCTION_TIMEOUT_MS at each invocation and never goes below zero', async () => {
    process.env.LOCAL_FUNCTION_TIMEOUT_MS = '50';
    const short = lambdaContext('customersList', 'req-3');
    expect(short.getRemainingTimeInMillis()).toBeLessThanOrEqual(50);
    await new Promise((r) => setTimeout(r, 80));
    expect(short.getRemainingTimeInMillis()).toBe(0);
    process.env.LOCAL_FUNCTION_TIMEOUT_MS = '2000';
    expect(lambdaContext('customersList', 'req-4').getRemainingTimeInMillis()).toBeGreaterThan(1_000);
    // Not a positive number: the real timeout.
    process.env.LOCAL_FUNCTION_TIMEOUT_MS = 'soon';
    expect(lambdaContext('customersList', 'req-5').getRemainingTimeInMillis()).toBeGreaterThan(FUNCTION_TIMEOUT_SECONDS * 1000 - 1_000);
  });
});

describe('local server refusing oversized requests', () => {
  const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

  const expectJsonRefusal = async (res: Response, status: number, message: string) => {
    expect(res.status).toBe(status);
    expect(res.headers.get('content-type')).toBe('application/json');
    expect(res.headers.get('x-request-id')).toMatch(UUID);
    expect(await res.json()).toEqual({ message });
  };

  it('answers a head over the limit with JSON 431 (headers) or 414 (URL) and a request id', async () => {
    const { token } = await newMerchant();
    // API Gateway takes 10,240 bytes of request line and header values: such a request is served.
    const withinGateway = await fetch(`${api.base}/customers`, {
      headers: { authorization: `Bearer ${token}`, 'x-pad': 'p'.repeat(9_000) },
    });
    expect(withinGateway.status).toBe(200);

    for (const size of [20_000, 200_000]) {
      const header = await fetch(`${api.base}/customers`, { headers: { authorization: `Bearer ${token}`, 'x-pad': 'p'.repeat(size) } });
      await expectJsonRefusal(header, 431, 'Request header fields too large.');
      const url = await fetch(`${api.base}/customers?search=${'q'.repeat(size)}`, { headers: { authorization: `Bearer ${token}` } });
      await expectJsonRefusal(url, 414, 'The request URI is too long.');
    }
    // The server keeps serving.
    expect((await fetch(`${api.base}/customers`, { headers: { authorization: `Bearer ${token}` } })).status).toBe(200);
    expect(MAX_HEADER_SIZE).toBeGreaterThan(10_240);
  });

  it('answers a raw oversized or malformed request with a complete JSON response', async () => {
    const raw = (request: string): Promise<string> =>
      new Promise((done, fail) => {
        const { hostname, port } = new URL(api.base);
        const socket = connect(Number(port), hostname, () => socket.end(request));
        let out = '';
        socket.on('data', (d) => (out += d));
        socket.on('close', () => done(out));
        socket.on('error', fail);
      });
    const big = await raw(`GET /v1/customers HTTP/1.1\r\nHost: x\r\nX-Pad: ${'p'.repeat(20_000)}\r\n\r\n`);
    const [head, body] = big.split('\r\n\r\n');
    expect(head.split('\r\n')[0]).toBe('HTTP/1.1 431 Request Header Fields Too Large');
    expect(head).toMatch(/\r\nContent-Type: application\/json\r\n/);
    expect(head).toMatch(/\r\nX-Request-Id: [0-9a-f-]{36}\r\n/);
    expect(head).toContain(`Content-Length: ${Buffer.byteLength(body)}`);
    expect(JSON.parse(body)).toEqual({ message: 'Request header fields too large.' });

    const garbage = await raw('NOT HTTP AT ALL\r\n\r\n');
    expect(garbage.split('\r\n')[0]).toBe('HTTP/1.1 400 Bad Request');
    expect(JSON.parse(garbage.split('\r\n\r\n')[1])).toEqual({ message: 'The request is not valid HTTP.' });
  });
});
