import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, expect } from 'vitest';
import { createLocalServer, TALLY_HEADERS } from '../../infra/local/server.ts';
import { createMerchant, createToken } from '#lib/merchants/service';
import type { Ability } from '#lib/http/route';
import { authenticate, hashToken, stampTokenUse } from '#lib/auth/tokens';
import { settleRecounts } from '#lib/metrics/recount';
import { checkAnswer } from './contract.ts';

export type ApiResponse<T = any> = { status: number; headers: Headers; body: T };

/**
 * Starts the local server (the real handlers through the route table) on 127.0.0.1 for one test
 * file, and returns a small client. Every answer it receives must match the OpenAPI document: a
 * mismatch fails the request (test/support/contract.ts).
 */
export const useApi = (options: Parameters<typeof createLocalServer>[0] = {}) => {
  let server: Server;
  let base = '';
  beforeAll(async () => {
    server = await createLocalServer({ exposeRequestTally: true, ...options });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
  });
  afterAll(async () => {
    await new Promise((r) => server.close(r));
  });

  const request = async <T = any>(
    method: string,
    path: string,
    opts: { token?: string | null; body?: unknown; rawBody?: string; headers?: Record<string, string>; settle?: boolean } = {},
  ): Promise<ApiResponse<T>> => {
    const headers: Record<string, string> = { ...(opts.headers ?? {}) };
    if (opts.token) headers.authorization = `Bearer ${opts.token}`;
    let body: string | undefined = opts.rawBody;
    if (opts.body !== undefined) {
      body = JSON.stringify(opts.body);
      headers['content-type'] ??= 'application/json';
    }
    const res = await fetch(`${base}${path}`, { method, headers, body });
    const text = await res.text();
    // Every answer is checked against the OpenAPI document (test/support/contract.ts).
    await checkAnswer({ method, path, status: res.status, headers: res.headers, text });
    let parsed: unknown = text;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      /* not JSON: keep the text so the assertion shows it */
    }
    // A settings change's recount runs in the background (the worker, on AWS and under `npm start`):
    // here it is run to its switch before the answer is handed over, unless the test looks at it pending.
    if (opts.settle !== false && method === 'PUT' && RECOUNTING_PATH.test(path) && res.headers.get('recount-pending') === 'true')
      await settleRecounts(await merchantOf(headers));
    return { status: res.status, headers: res.headers, body: parsed as T };
  };

  /**
   * Counts the DynamoDB requests one API call makes (the server runs in this process). Budgets are
   * per request in the steady state: the token's last_used_at is stamped first (as by a use within the
   * minute), so the at-most-once-a-minute stamp is not counted here; `{ stamp: false }` counts it.
   */
  const counted = async <T = any>(...args: [...Parameters<typeof request>, { stamp?: boolean }?]) => {
    const [method, path, opts, { stamp = true } = {}] = args;
    if (stamp && opts?.token) await stampTokenUse({ tokenHash: hashToken(opts.token), lastUsedAt: null });
    const res = await request<T>(method, path, opts);
    // The request's own tally (per invocation), so concurrent calls elsewhere never count here.
    const requests = Number(res.headers.get(TALLY_HEADERS.requests));
    const capacityUnits = Number(res.headers.get(TALLY_HEADERS.capacity));
    const byCommand = JSON.parse(res.headers.get(TALLY_HEADERS.commands) ?? '{}') as Record<string, number>;
    return { res, requests, capacityUnits, byCommand };
  };

  return {
    get base() {
      return base;
    },
    request,
    counted,
    get: <T = any>(path: string, token?: string | null, headers?: Record<string, string>) => request<T>('GET', path, { token, headers }),
    post: <T = any>(path: string, token: string | null, body?: unknown, headers?: Record<string, string>) =>
      request<T>('POST', path, { token, body, headers }),
    put: <T = any>(path: string, token: string | null, body?: unknown) => request<T>('PUT', path, { token, body }),
    patch: <T = any>(path: string, token: string | null, body?: unknown) => request<T>('PATCH', path, { token, body }),
    del: <T = any>(path: string, token: string | null) => request<T>('DELETE', path, { token }),
  };
};

const RECOUNTING_PATH = /^\/(settings|exchange-rates\/)/;
/** The merchant a request was made for: its token's, or its back-office ID token's `merchant_id` claim. */
const merchantOf = async (headers: Record<string, string>): Promise<string> => {
  const bearer = /^Bearer\s+(\S+)$/.exec(headers.authorization ?? '')?.[1] ?? '';
  if (bearer.startsWith('ras_')) return (await authenticate(bearer))!.merchantId;
  return JSON.parse(Buffer.from(bearer.split('.')[1], 'base64url').toString())['custom:merchant_id'];
};

/** A fresh merchant with a token (all abilities unless given): tests isolate by merchant. */
export const newMerchant = async (abilities?: Ability[], reportingCurrency?: string) => {
  const merchant = await createMerchant(`test ${Math.random().toString(36).slice(2, 8)}`, reportingCurrency);
  const { token } = await createToken(merchant.merchant_id, abilities);
  return { merchantId: merchant.merchant_id, token };
};

/**
 * Sends again while the answer is a 409 with Retry-After (the merchant's figures being recounted for
 * a settings change, or contention), as a client honouring it would, only sooner; 40 times at most.
 */
export const honouringRetryAfter = async <R extends { status: number; headers: Headers }>(send: () => Promise<R>): Promise<R> => {
  for (let i = 0; ; i++) {
    const res = await send();
    if (res.status !== 409 || !res.headers.get('retry-after') || i >= 40) return res;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
};

/** The body of an answer, after checking its status (200 unless given; the body shown when it differs). */
export const ok = async <T = any>(p: Promise<{ status: number; body: any }>, status = 200): Promise<T> => {
  const r = await p;
  expect(r.status, JSON.stringify(r.body)).toBe(status);
  return r.body as T;
};
