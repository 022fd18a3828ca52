import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { newMerchant, useApi } from '../support/api.ts';
import { checkAnswer } from '../support/contract.ts';
import { generateSchema, SCHEMA_FILE } from '../../clients/typescript/generate.ts';
import {
  createApiClient,
  IDEMPOTENT_POSTS,
  paginate,
  retryAfterMs,
  retryingFetch,
  type ApiClientOptions,
} from '../../clients/typescript/index.ts';
import { openApiDocument } from '#lib/api/openapi';

/** The typed client (clients/typescript, docs/typed-client.md): in step with the document, and its own layer. */
const api = useApi();

/** The client against the local server, each answer checked against the document like useApi's. */
const client = (token: string, options: Partial<ApiClientOptions> = {}) =>
  createApiClient({
    baseUrl: api.base,
    token,
    fetch: async (request) => {
      const res = await (options.fetch ?? fetch)(request);
      const url = new URL(request.url);
      await checkAnswer({
        method: request.method,
        path: `${url.pathname.replace(/^\/v1/, '')}${url.search}`,
        status: res.status,
        headers: res.headers,
        text: await res.clone().text(),
      });
      return res;
    },
    ...(options.retry !== undefined ? { retry: options.retry } : {}),
  });

describe('the typed client', () => {
  it('has the types the current document generates (npm run client:generate)', async () => {
    // A difference here: the document changed and the client was not regenerated.
    expect(readFileSync(SCHEMA_FILE, 'utf8')).toBe(await generateSchema());
  }, 60_000);

  it('sends an idempotency key on exactly the POSTs whose operation reads X-Idempotency-Key', () => {
    const doc = JSON.parse(JSON.stringify(openApiDocument()));
    const reading = Object.entries<any>(doc.paths)
      .filter(([, item]) => item.post?.parameters?.some((p: any) => p.in === 'header' && p.name === 'x-idempotency-key'))
      .map(([path]) => path)
      .sort();
    expect([...IDEMPOTENT_POSTS].sort()).toEqual(reading);
  });

  it('reads every page of a list by meta.next_cursor', async () => {
    const { token } = await newMerchant();
    const c = client(token);
    for (let i = 0; i < 5; i++) {
      const { error } = await c.POST('/customers', { body: { email: `page${i}@example.com`, name: `Page ${i}` } });
      expect(error).toBeUndefined();
    }
    const seen: string[] = [];
    for await (const customer of paginate(c, '/customers', { params: { query: { per_page: 2 } } })) seen.push(customer.email);
    expect(seen.sort()).toEqual([0, 1, 2, 3, 4].map((i) => `page${i}@example.com`));
  });

  it('gives POST /orders an idempotency key, so a retried 503 replays instead of creating twice', async () => {
    const { token } = await newMerchant();
    const keys: string[] = [];
    let calls = 0;
    const c = createApiClient({
      baseUrl: api.base,
      token,
      retry: { sleep: async () => undefined },
      // The first answer is lost behind a 503 after the order was stored.
      fetch: async (request) => {
        keys.push(request.headers.get('x-idempotency-key') ?? '');
        const res = await fetch(request);
        return ++calls === 1 ? new Response('{"message":"busy"}', { status: 503, headers: { 'retry-after': '1' } }) : res;
      },
    });
    const { data, response } = await c.POST('/orders', {
      body: { order_no: 'IDEM-1', customer_email: 'idem@example.com', amount: '10.00', currency: 'USD', status: 'paid' },
    });
    expect(response.status).toBe(201);
    expect(response.headers.get('idempotent-replayed')).toBe('true');
    expect(keys).toHaveLength(2);
    expect(keys[0]).toMatch(/^[0-9a-f-]{36}$/);
    expect(keys[1]).toBe(keys[0]);
    const list = await client(token).GET('/orders', { params: { query: { per_page: 10 } } });
    expect(list.data?.data.map((o) => o.id)).toEqual([data!.data.id]);
  });
});

describe('retries', () => {
  const answers = (...statuses: [number, string?][]) => {
    const sent: Request[] = [];
    const base = async (request: Request) => {
      sent.push(request);
      const [status, retryAfter] = statuses[Math.min(sent.length, statuses.length) - 1];
      return new Response('{}', { status, headers: retryAfter ? { 'retry-after': retryAfter } : {} });
    };
    return { sent, base };
  };

  it('retry a 429 after its Retry-After, whatever the method', async () => {
    const { sent, base } = answers([429, '3'], [200]);
    const waits: number[] = [];
    const res = await retryingFetch(base, { sleep: async (ms) => void waits.push(ms) })(
      new Request('http://x/v1/customers', { method: 'POST', body: '{}' }),
    );
    expect(res.status).toBe(200);
    expect(sent).toHaveLength(2);
    expect(waits).toEqual([3000]);
  });

  it('are bounded: attempts in all, each pause at most maxDelayMs; the last answer is returned', async () => {
    const { sent, base } = answers([503, '3600']);
    const waits: number[] = [];
    const res = await retryingFetch(base, { attempts: 3, maxDelayMs: 5_000, sleep: async (ms) => void waits.push(ms) })(
      new Request('http://x/v1/customers'),
    );
    expect(res.status).toBe(503);
    expect(sent).toHaveLength(3);
    expect(waits).toEqual([5_000, 5_000]);
  });

  it('never repeat a 503 of a POST without an idempotency key (it may have been stored)', async () => {
    const { sent, base } = answers([503, '1'], [200]);
    const res = await retryingFetch(base, { sleep: async () => undefined })(
      new Request('http://x/v1/customers', { method: 'POST', body: '{}' }),
    );
    expect(res.status).toBe(503);
    expect(sent).toHaveLength(1);
  });

  it('read Retry-After as seconds or an HTTP date', () => {
    expect(retryAfterMs('2')).toBe(2000);
    expect(retryAfterMs(new Date(10_000).toUTCString(), 4_000)).toBe(6_000);
    expect(retryAfterMs(null)).toBeNull();
    expect(retryAfterMs('soon')).toBeNull();
  });
});
