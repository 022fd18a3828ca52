import { INVALID_DATA as INVALID } from '#lib/errors';
import { randomUUID } from 'node:crypto';
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, Context } from 'aws-lambda';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { newMerchant, useApi } from '../support/api.ts';
import { captureLogs, failDynamoWhen, isolatedClock } from './support.ts';
import { BatchGetCommand } from '@aws-sdk/lib-dynamodb';
import { conflict } from '#lib/http/errors';
import { email, metadata } from '#lib/shared/fields';
import { apiHandler, MAX_BODY_BYTES } from '#lib/api/handler';
import { defineRoute } from '#lib/http/route';

/** docs/api-conventions.md: the error bodies and the headers every response carries. */
process.env.UNAUTHENTICATED_RATE_LIMIT_PER_MINUTE = '100000';
isolatedClock();
const api = useApi();
afterEach(() => vi.restoreAllMocks());

const NOT_FOUND = { message: 'Resource not found' };
const expectEnvelope = (r: { headers: Headers }) => {
  expect(r.headers.get('content-type')).toBe('application/json');
  expect(r.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
  for (const h of ['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset']) expect(r.headers.get(h), h).toMatch(/^\d+$/);
};

describe('400 and 413: bodies the pipeline cannot read', () => {
  it('answers 400 with the exact body for anything that is not JSON', async () => {
    const { token } = await newMerchant();
    for (const rawBody of ['{', 'not json', '{"email":"a@example.com",}', "{'email':'a@example.com'}", '{"email":"a@example.com"} x']) {
      const r = await api.request('POST', '/customers', { token, rawBody, headers: { 'content-type': 'application/json' } });
      expect(r.status, rawBody).toBe(400);
      expect(r.body).toEqual({ message: 'The request body is not valid JSON.' });
      expectEnvelope(r);
    }
    expect((await api.get('/customers', token)).body.meta.total).toBe(0);
  });

  it('reads JSON whatever the content type says, and an empty body as {}', async () => {
    const { token } = await newMerchant();
    const plain = await api.request('POST', '/customers', {
      token,
      rawBody: '{"email":"plain@example.com"}',
      headers: { 'content-type': 'text/plain' },
    });
    expect(plain.status).toBe(201);
    const empty = await api.request('POST', '/customers', { token, rawBody: '' });
    expect(empty.status).toBe(422);
    expect(empty.body).toEqual({ message: INVALID, errors: { email: ['The email field is required.'] } });
  });

  it('answers 413 above 1 MiB (checked before parsing) and accepts exactly 1 MiB', async () => {
    const { token } = await newMerchant();
    const shell = '{"email":"big@example.com","name":""}';
    const exact = shell.replace('""', `"${'n'.repeat(MAX_BODY_BYTES - shell.length)}"`);
    expect(Buffer.byteLength(exact)).toBe(MAX_BODY_BYTES);
    const atLimit = await api.request('POST', '/customers', { token, rawBody: exact });
    expect(atLimit.status).toBe(422); // read and validated: the name is too long
    expect(Object.keys(atLimit.body.errors)).toEqual(['name']);

    for (const rawBody of [exact.replace('"n', '"nn'), `{${'x'.repeat(MAX_BODY_BYTES)}`]) {
      const r = await api.request('POST', '/customers', { token, rawBody });
      expect(r.status).toBe(413);
      expect(r.body).toEqual({ message: 'The request body is too large.' });
      expectEnvelope(r);
    }
    // Multi-byte characters count as bytes, not characters.
    const wide = shell.replace('""', `"${'é'.repeat(MAX_BODY_BYTES / 2)}"`);
    expect((await api.request('POST', '/customers', { token, rawBody: wide })).status).toBe(413);
  });
});

describe('404 for unknown routes', () => {
  const root = () => api.base.replace(/\/v1$/, '');
  const cases: [string, string][] = [
    ['GET', '/v1/nope'],
    ['GET', '/v1/customers/1/extra'],
    ['GET', '/v1/customers/'],
    ['GET', '/v1'],
    ['GET', '/v1/'],
    ['GET', '/'],
    ['GET', '/customers/1'],
    ['GET', '/v2/customers'],
    ['GET', '/v1customers'],
  ];

  it('answers 404 with the exact body and every header, with or without a token', async () => {
    const { token } = await newMerchant();
    for (const [method, path] of cases) {
      for (const headers of [{}, { authorization: `Bearer ${token}` }] as Record<string, string>[]) {
        const res = await fetch(`${root()}${path}`, { method, headers });
        const label = `${method} ${path} ${Object.keys(headers)}`;
        expect(res.status, label).toBe(404);
        expect(await res.json(), label).toEqual(NOT_FOUND);
        expectEnvelope(res);
      }
    }
    // With a token the merchant window counted them, after none before.
    const r = await api.get('/customers/1', token);
    expect(Number(r.headers.get('x-ratelimit-remaining'))).toBe(3600 - cases.length - 1);
  });
});

describe('405 for a known path asked with a method it does not serve', () => {
  const root = () => api.base.replace(/\/v1$/, '');
  const cases: [string, string, string][] = [
    ['PATCH', '/v1/customers', 'GET, POST'],
    ['DELETE', '/v1/orders', 'GET, POST'],
    ['POST', '/v1/openapi.json', 'GET'],
    ['PUT', '/v1/orders/stats', 'GET, PATCH'],
    ['POST', '/v1/subscriptions/7/cancel', 'PUT'],
    ['GET', '/v1/customers/batch', ''],
    ['HEAD', '/v1/metrics/mrr', 'GET'],
  ];

  it('answers 405 {message: "Method not allowed."} with Allow and every header, with or without a token', async () => {
    const { token } = await newMerchant();
    for (const [method, path, allow] of cases) {
      for (const headers of [{}, { authorization: `Bearer ${token}` }] as Record<string, string>[]) {
        const res = await fetch(`${root()}${path}`, { method, headers });
        const label = `${method} ${path} ${Object.keys(headers)}`;
        if (!allow) {
          // GET /customers/batch is the customer whose external id is "batch": a route serves it.
          expect(res.status, label).not.toBe(405);
          continue;
        }
        expect(res.status, label).toBe(405);
        expect(res.headers.get('allow'), label).toBe(allow);
        if (method !== 'HEAD') expect(await res.json(), label).toEqual({ message: 'Method not allowed.' });
        expectEnvelope(res);
      }
    }
  });
});

describe('422', () => {
  it('has the exact shape, one entry per field, messages naming the field', async () => {
    const { token } = await newMerchant();
    const r = await api.post('/customers', token, { email: 'not-an-email', name: 42, metadata: 'x', unknown_field: true });
    expect(r.status).toBe(422);
    expect(r.body).toEqual({
      message: INVALID,
      errors: {
        email: ['The email field must be a valid email address.'],
        name: ['The name field must be a string.'],
        metadata: ['The metadata field must be an object.'],
      },
    });
    expectEnvelope(r);
    expect((await api.post('/customers', token, [])).body).toEqual({
      message: INVALID,
      errors: { body: ['The body field must be an object.'] },
    });
  });

  it('ignores unknown fields in an otherwise valid body', async () => {
    const { token } = await newMerchant();
    const r = await api.post('/customers', token, { email: 'extra@example.com', favourite_colour: 'blue' });
    expect(r.status).toBe(201);
    expect(r.body.data).not.toHaveProperty('favourite_colour');
  });
});

/** A route that exists only here, to drive the pipeline with nested schemas and faults. */
const testRoute = defineRoute({
  method: 'POST',
  path: '/pipeline-test',
  handler: 'test',
  ability: 'customers:write',
  writes: false,
  summary: 'test',
  description: 'A route of this test only.',
  tags: [],
  request: {
    body: z.object({
      customer: z.object({ email: email(), address: z.object({ city: z.string() }) }),
      items: z.array(z.object({ qty: z.int().min(1) })).max(3),
      metadata: metadata().optional(),
    }),
  },
  responses: {},
});

const invoke = async (
  fn: Parameters<typeof apiHandler<typeof testRoute>>[1],
  opts: { token: string; body?: string; base64?: boolean },
): Promise<APIGatewayProxyStructuredResultV2> => {
  const requestId = randomUUID();
  const event = {
    version: '2.0',
    routeKey: 'POST /v1/pipeline-test',
    rawPath: '/v1/pipeline-test',
    rawQueryString: '',
    headers: { authorization: `Bearer ${opts.token}`, 'content-type': 'application/json' },
    requestContext: {
      requestId,
      http: { method: 'POST', path: '/v1/pipeline-test', protocol: 'HTTP/1.1', sourceIp: '203.0.113.7', userAgent: 'test' },
    },
    body: opts.base64 ? Buffer.from(opts.body ?? '').toString('base64') : opts.body,
    isBase64Encoded: Boolean(opts.base64),
  } as unknown as APIGatewayProxyEventV2;
  const context = { awsRequestId: requestId, functionName: 'pipelineTest', getRemainingTimeInMillis: () => 30_000 } as Context;
  return apiHandler(testRoute, fn)(event, context);
};

describe('the pipeline with a nested body', () => {
  it('reports nested fields by dot path, array items by index', async () => {
    const { token } = await newMerchant();
    const handler = vi.fn();
    const res = await invoke(handler, {
      token,
      body: JSON.stringify({ customer: { email: 'x', address: {} }, items: [{ qty: 1 }, { qty: 0 }, { qty: 'two' }], metadata: [] }),
    });
    expect(handler).not.toHaveBeenCalled();
    expect(res.statusCode).toBe(422);
    expect(JSON.parse(res.body!)).toEqual({
      message: INVALID,
      errors: {
        'customer.email': ['The email field must be a valid email address.'],
        'customer.address.city': ['The city field is required.'],
        'items.1.qty': ['The qty field must be at least 1.'],
        'items.2.qty': ['The qty field must be an integer.'],
        metadata: ['The metadata field must be an object.'],
      },
    });
  });

  it('hands the handler the parsed body, base64-encoded or not', async () => {
    const { token } = await newMerchant();
    const body = JSON.stringify({ customer: { email: 'A@Example.com', address: { city: 'Taipei' } }, items: [{ qty: 2 }] });
    for (const base64 of [false, true]) {
      const res = await invoke(async ({ body: parsed, auth }) => ({ status: 200, body: { parsed, merchant: auth.merchantId } }), {
        token,
        body,
        base64,
      });
      expect(res.statusCode).toBe(200);
      expect(JSON.parse(res.body!).parsed).toEqual({
        customer: { email: 'a@example.com', address: { city: 'Taipei' } },
        items: [{ qty: 2 }],
      });
      expect(res.headers).toMatchObject({ 'Content-Type': 'application/json', 'X-RateLimit-Limit': '3600' });
    }
    const big = await invoke(vi.fn(), { token, body: `"${'x'.repeat(MAX_BODY_BYTES)}"`, base64: true });
    expect(big.statusCode).toBe(413);
  });

  it('renders an HttpError thrown by the handler with its headers, and a 204 without a body', async () => {
    const { token } = await newMerchant();
    const body = JSON.stringify({ customer: { email: 'a@example.com', address: { city: 'x' } }, items: [] });
    const thrown = await invoke(
      async () => {
        const err = conflict('Already there.');
        (err.headers as Record<string, string>)['X-Extra'] = 'yes';
        throw err;
      },
      { token, body },
    );
    expect(thrown).toMatchObject({ statusCode: 409, body: JSON.stringify({ message: 'Already there.' }), headers: { 'X-Extra': 'yes' } });
    expect(thrown.headers!['X-Request-Id']).toBeTruthy();
    const empty = await invoke(async () => ({ status: 204 }), { token, body });
    expect(empty.statusCode).toBe(204);
    expect(empty.body).toBe('');
    expect(empty.headers!['X-RateLimit-Remaining']).toMatch(/^\d+$/);
  });
});

describe('500', () => {
  it('answers {message: "Server Error"} with no internals, and logs the cause with the request id', async () => {
    const { token } = await newMerchant();
    const fault = failDynamoWhen(
      // The customer's read (with its timeline head, one BatchGetItem).
      (c) => c instanceof BatchGetCommand && JSON.stringify(c.input.RequestItems).includes('#CUSTOMER#'),
      new Error('disk on fire at /var/secret'),
    );
    const { result: r, lines } = await captureLogs(() => api.get('/customers/1', token));
    expect(fault).toHaveBeenCalled();
    expect(r.status).toBe(500);
    expect(r.body).toEqual({ message: 'Server Error' });
    expectEnvelope(r);
    const requestId = r.headers.get('x-request-id');
    const error = lines.find((l) => l.level === 'ERROR');
    expect(error).toMatchObject({ request_id: requestId, message: 'unhandled error' });
    expect(JSON.stringify(error)).toContain('disk on fire at /var/secret');
    expect(JSON.stringify(lines)).not.toContain(token);

    fault.mockRestore();
    expect((await api.get('/customers/1', token)).status).toBe(404);
  });

  it('answers 500 for an exception thrown by a handler', async () => {
    const { token } = await newMerchant();
    const body = JSON.stringify({ customer: { email: 'a@example.com', address: { city: 'x' } }, items: [] });
    const { result: res } = await captureLogs(() =>
      invoke(
        async () => {
          throw new TypeError('cannot read properties of undefined');
        },
        { token, body },
      ),
    );
    expect(res.statusCode).toBe(500);
    expect(res.body).toBe(JSON.stringify({ message: 'Server Error' }));
    expect(res.headers).toMatchObject({ 'Content-Type': 'application/json', 'X-RateLimit-Limit': '3600' });
  });
});
