import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createLocalServer, TALLY_HEADERS } from '../../infra/local/server.ts';
import { createMerchant, createToken } from '#lib/merchants/service';

/** An answer with the DynamoDB requests and capacity units of that request alone (the server's per-invocation tally). */
export type BenchResponse<T = any> = {
  status: number;
  body: T;
  requests: number;
  capacityUnits: number;
  byCommand: Record<string, number>;
};
export type BenchApi = Awaited<ReturnType<typeof startApi>>;

/** The local server (real handlers through the route table) in this process, on 127.0.0.1, exposing each request's tally. */
export const startApi = async () => {
  const server: Server = await createLocalServer({ exposeRequestTally: true });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;

  const request = async <T = any>(
    method: string,
    path: string,
    token?: string | null,
    body?: unknown,
    headers: Record<string, string> = {},
  ): Promise<BenchResponse<T>> => {
    const h: Record<string, string> = { ...headers };
    if (token) h.authorization = `Bearer ${token}`;
    if (body !== undefined) h['content-type'] = 'application/json';
    const res = await fetch(`${base}${path}`, { method, headers: h, body: body === undefined ? undefined : JSON.stringify(body) });
    const text = await res.text();
    return {
      status: res.status,
      body: (text ? JSON.parse(text) : undefined) as T,
      requests: Number(res.headers.get(TALLY_HEADERS.requests)),
      capacityUnits: Number(res.headers.get(TALLY_HEADERS.capacity)),
      byCommand: JSON.parse(res.headers.get(TALLY_HEADERS.commands) ?? '{}') as Record<string, number>,
    };
  };

  return {
    base,
    server,
    request,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
};

/** A fresh merchant with an every-ability token: each bench side writes to its own merchant. */
export const benchMerchant = async (label: string) => {
  const merchant = await createMerchant(`bench ${label}`);
  const { token } = await createToken(merchant.merchant_id);
  return { merchantId: merchant.merchant_id, token };
};

/** Fails the bench with the answer when a call did not get the status expected. */
export const expectStatus = (res: BenchResponse, status: number, what: string): void => {
  if (res.status !== status) throw new Error(`${what}: expected ${status}, got ${res.status} ${JSON.stringify(res.body).slice(0, 500)}`);
};
