/// <reference lib="dom" />
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { ApiError, AS_CSV, createApi, csvPage, ok, query } from '../../web/src/api.ts';
import type { DashboardConfig } from '../../web/src/auth.ts';

/**
 * The dashboard's calls (web/src/api.ts) through the typed client, against a scripted fetch: the
 * back-office ID token as the bearer, one fresh sign-in on a 401, and the server's message on errors.
 */
const SESSION_URL = 'https://dash.test/dev/session';
const config: DashboardConfig = { apiBase: 'https://api.test/v1', auth: { kind: 'local', sessionUrl: SESSION_URL } };
const b64 = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');
/**
 * A development ID token valid for an hour from the test's start, numbered by sign-in. The expiry is
 * fixed per test: read from the clock at each call, a token issued before a second ticks over and
 * the one the test expects after it would differ (this test failed that way once).
 */
let startedAt = 0;
const jwt = (n: number) => `${b64({ alg: 'RS256' })}.${b64({ n, exp: startedAt + 3600 })}.sig`;
const json = (status: number, body?: unknown) =>
  new Response(body === undefined ? null : JSON.stringify(body), { status, headers: { 'content-type': 'application/json' } });

type Sent = { method: string; url: string; authorization: string | null; accept: string | null };
let sent: Sent[];
let signIns: number;
let answers: Response[];

beforeEach(() => {
  startedAt = Math.floor(Date.now() / 1000);
  sent = [];
  signIns = 0;
  answers = [];
  const storage = new Map<string, string>();
  vi.stubGlobal('sessionStorage', {
    getItem: (k: string) => storage.get(k) ?? null,
    setItem: (k: string, v: string) => storage.set(k, v),
    removeItem: (k: string) => storage.delete(k),
  });
  vi.stubGlobal('fetch', async (input: RequestInfo | URL) => {
    if (input === SESSION_URL) return json(200, { id_token: jwt(++signIns) });
    const request = input as Request;
    sent.push({
      method: request.method,
      url: request.url,
      authorization: request.headers.get('authorization'),
      accept: request.headers.get('accept'),
    });
    const answer = answers.shift();
    if (!answer) throw new Error(`no answer scripted for ${request.method} ${request.url}`);
    return answer;
  });
});
afterEach(() => vi.unstubAllGlobals());

describe('the dashboard API', () => {
  it('sends the stored ID token as the bearer, asks for JSON, and leaves unset filters out of the query', async () => {
    const api = createApi(config);
    const page = { data: [], meta: { current_page: 2, per_page: 10, total: 0, last_page: 1, next_cursor: null } };
    answers.push(json(200, page), json(200, { data: { id: 7 } }));
    const filters = { status: '' as const, customer_email: 'a+b@example.com', start_date: '', page: 2, per_page: 10 };
    expect(await ok(api.GET('/orders', { params: { query: query(filters) } }))).toEqual(page);
    await ok(api.GET('/activity/{id}', { params: { path: { id: 7 } } }));
    expect(sent).toEqual([
      {
        method: 'GET',
        url: 'https://api.test/v1/orders?customer_email=a%2Bb%40example.com&page=2&per_page=10',
        authorization: `Bearer ${jwt(1)}`,
        accept: 'application/json',
      },
      { method: 'GET', url: 'https://api.test/v1/activity/7', authorization: `Bearer ${jwt(1)}`, accept: 'application/json' },
    ]);
    expect(signIns).toBe(1);
  });

  it('a 401 gets one fresh sign-in and the call again; a second 401 is an ApiError with the server message', async () => {
    const api = createApi(config);
    answers.push(json(401, { message: 'Unauthenticated.' }), json(200, { data: { merchant_id: 'mer_1' } }));
    expect(await ok(api.GET('/backoffice/me'))).toEqual({ data: { merchant_id: 'mer_1' } });
    expect(sent.map((s) => s.authorization)).toEqual([`Bearer ${jwt(1)}`, `Bearer ${jwt(2)}`]);

    sent = [];
    answers.push(json(401, { message: 'Unauthenticated.' }), json(401, { message: 'Unauthenticated.' }));
    const err = await ok(api.GET('/metrics/summary')).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApiError);
    expect(err).toMatchObject({ status: 401, message: 'Unauthenticated.' });
    expect(sent.map((s) => s.authorization)).toEqual([`Bearer ${jwt(2)}`, `Bearer ${jwt(3)}`]);
    expect(signIns).toBe(3);
  });

  it('other failures are ApiErrors at once (no retry): the server message, else HTTP <status>', async () => {
    const api = createApi(config);
    answers.push(json(403, { message: 'This action is unauthorized.' }), json(503, {}), json(502));
    const failure = (call: Promise<unknown>) => call.catch((e: ApiError) => [e.status, e.message]);
    expect(await failure(ok(api.POST('/webhook-endpoints/{id}/test', { params: { path: { id: 3 } } })))).toEqual([
      403,
      'This action is unauthorized.',
    ]);
    expect(await failure(ok(api.GET('/metrics/cohorts')))).toEqual([503, 'HTTP 503']);
    expect(await failure(ok(api.DELETE('/backoffice/api-token')))).toEqual([502, 'HTTP 502']);
    expect(sent.map((s) => `${s.method} ${s.url}`)).toEqual([
      'POST https://api.test/v1/webhook-endpoints/3/test',
      'GET https://api.test/v1/metrics/cohorts',
      'DELETE https://api.test/v1/backoffice/api-token',
    ]);
  });

  it("a 422 keeps the server's messages per field", async () => {
    const api = createApi(config);
    const body = { message: 'The given data was invalid.', errors: { url: ['The url field must be a valid URL.'] } };
    answers.push(json(422, body));
    const err = await ok(api.POST('/webhook-endpoints', { body: { url: 'ftp://x', events: ['*'] } })).catch((e: ApiError) => e);
    expect(err).toMatchObject({ status: 422, message: body.message, errors: body.errors });
  });

  it("a list as CSV: asks for text/csv, keeps the text as it is, and reads the next page's cursor from X-Next-Cursor", async () => {
    const api = createApi(config);
    const text = 'id,email\r\n1,"a,b@example.com"\r\n';
    const csv = (next?: string) =>
      new Response(text, {
        status: 200,
        headers: { 'content-type': 'text/csv; charset=utf-8', ...(next ? { 'x-next-cursor': next } : {}) },
      });
    answers.push(csv('abc'), csv(), json(503, { message: 'The service is busy.' }));
    const call = (cursor?: string) =>
      api.GET('/customers', { params: { query: query({ search: 'a', per_page: 100, cursor }) }, ...AS_CSV });
    expect(await csvPage(call())).toEqual({ text, next: 'abc' });
    expect(await csvPage(call('abc'))).toEqual({ text, next: null });
    expect(await csvPage(call()).catch((e: ApiError) => [e.status, e.message])).toEqual([503, 'The service is busy.']);
    expect(sent.slice(0, 2)).toEqual([
      { method: 'GET', url: 'https://api.test/v1/customers?search=a&per_page=100', authorization: `Bearer ${jwt(1)}`, accept: 'text/csv' },
      {
        method: 'GET',
        url: 'https://api.test/v1/customers?search=a&per_page=100&cursor=abc',
        authorization: `Bearer ${jwt(1)}`,
        accept: 'text/csv',
      },
    ]);
  });

  it('a 204 is a success without a body', async () => {
    const api = createApi(config);
    answers.push(new Response(null, { status: 204 }));
    expect(await ok(api.DELETE('/backoffice/api-token'))).toBeUndefined();
  });
});
