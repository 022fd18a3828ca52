import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tableName } from '#lib/db/client';
import { WriteSet } from '#lib/db/writes';
import { createMerchant } from '#lib/merchants/service';
import { addOutboxEvent } from '#lib/outbox/store';
import { formatTimestamp } from '#lib/shared/time';
import { DEV_REPLAY_PATH, localReplay } from '../../infra/local/dev-events.ts';
import { type BusEvent, LocalBus } from '../../infra/local/local-bus.ts';
import { createLocalServer } from '../../infra/local/server.ts';
import { runCli } from '../support/cli.ts';

/**
 * `ops events replay` against the stack `npm start` runs: no EventBridge endpoint, so the CLI finds
 * the running server through the stack file and asks it (`POST /dev/events/replay`, from this
 * machine only) to replay onto its own bus, as npm start wires it (infra/local/start.ts).
 */
const ago = (minutes: number) => formatTimestamp(new Date(Date.now() - minutes * 60_000));

describe('ops events replay against npm start', { timeout: 90_000 }, () => {
  const bus = new LocalBus();
  const published: BusEvent[] = [];
  bus.subscribe((e) => void published.push(e));
  let server: Server;
  let port = 0;
  const dir = mkdtempSync(join(tmpdir(), 'replay-local-'));
  const stackFile = join(dir, 'stack.json');
  const writeStack = (over: Record<string, unknown> = {}) =>
    writeFileSync(
      stackFile,
      JSON.stringify({
        pid: process.pid,
        dynamodbEndpoint: process.env.DYNAMODB_ENDPOINT,
        tableName: tableName(),
        apiUrl: `http://localhost:${port}/v1`,
        ...over,
      }),
    );
  const { EVENTBRIDGE_ENDPOINT: _none, ...base } = process.env;
  const env = { ...base, LOCAL_STACK_FILE: stackFile };
  const replay = (merchantId: string, since: string) => runCli(['events', 'replay', '--merchant', merchantId, '--since', since], env);

  beforeAll(async () => {
    server = await createLocalServer({ devReplay: localReplay(bus.publish) });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(async () => {
    await new Promise((resolve) => server?.close(resolve));
    rmSync(dir, { recursive: true, force: true });
  });

  const record = async (merchantId: string, at: string) => {
    const ws = new WriteSet();
    const id = addOutboxEvent(ws, merchantId, 'order.paid', { order_no: `R-${Math.random()}` }, at);
    await ws.commit();
    return id;
  };

  it("publishes the merchant's events since T onto npm start's bus, and no other", async () => {
    writeStack();
    const merchantId = (await createMerchant('Local replay shop')).merchant_id;
    const other = (await createMerchant('Local other shop')).merchant_id;
    const before = await record(merchantId, ago(120));
    const since = ago(90);
    const inRange = [await record(merchantId, ago(60)), await record(merchantId, ago(1))];
    await record(other, ago(30));
    published.length = 0;

    const run = await replay(merchantId, since);
    expect(run.code, run.stderr).toBe(0);
    expect(run.json).toEqual({ merchant_id: merchantId, since, events: 2, published: 2, unpublished: 0 });
    const ids = published.map((e) => e.detail.id);
    expect(ids.sort()).toEqual([...inRange].sort());
    expect(ids).not.toContain(before);
    expect(published.every((e) => e.detail.merchant_id === merchantId && e['detail-type'] === 'order.paid')).toBe(true);
  });

  it('an unknown merchant, a start older than 3 days, npm start not running, or another table: each says so', async () => {
    writeStack();
    const unknown = await replay('mer_00000000000000000000', ago(60));
    expect(unknown.code).toBe(1);
    expect(JSON.parse(unknown.stderr)).toEqual({ error: 'Merchant mer_00000000000000000000 does not exist.', status: 404 });
    const merchantId = (await createMerchant('Local replay refusals')).merchant_id;
    const old = await replay(merchantId, ago(3 * 24 * 60 + 5));
    expect(old.code).toBe(2);
    expect(old.stderr).toMatch(/older than the outbox keeps events \(3 days, by TTL\)/);

    writeStack({ pid: 2 ** 22 + 12345 }); // no such process
    const stopped = await replay(merchantId, ago(60));
    expect(stopped.code).toBe(2);
    expect(stopped.stderr).toMatch(/npm start, which is not running.*EVENTBRIDGE_ENDPOINT/);

    writeStack({ tableName: 'another-table' });
    const elsewhere = await replay(merchantId, ago(60));
    expect(elsewhere.code).toBe(2);
    expect(elsewhere.stderr).toMatch(/npm start serves the table another-table/);
  });

  /** A raw request, so that Host and Origin are what the test says. */
  const send = (opts: { method?: string; headers?: Record<string, string>; body?: string }) =>
    new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = request(
        { host: '127.0.0.1', port, path: DEV_REPLAY_PATH, method: opts.method ?? 'POST', headers: opts.headers },
        (res) => {
          let text = '';
          res.on('data', (c) => (text += c));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
        },
      );
      req.on('error', reject);
      req.end(opts.body);
    });

  it('the endpoint answers only this machine: a foreign Host, a browser page (Origin) or a form body get nothing', async () => {
    const merchantId = (await createMerchant('Local replay guard')).merchant_id;
    await record(merchantId, ago(5));
    const body = JSON.stringify({ merchant: merchantId, since: ago(10) });
    const json = { 'content-type': 'application/json' };
    published.length = 0;
    // A page of another site whose name was pointed at 127.0.0.1 sends its own name: the API's 404.
    expect((await send({ headers: { ...json, host: `evil.example.com:${port}` }, body })).status).toBe(404);
    expect((await send({ headers: { ...json, host: `localhost:${port}`, origin: 'https://evil.example.com' }, body })).status).toBe(404);
    expect((await send({ headers: { 'content-type': 'text/plain', host: `localhost:${port}` }, body })).status).toBe(415);
    expect((await send({ method: 'GET', headers: { host: `localhost:${port}` } })).status).toBe(405);
    expect(published).toEqual([]);
    const ok = await send({ headers: { ...json, host: `localhost:${port}` }, body });
    expect(ok.status, ok.body).toBe(200);
    expect(JSON.parse(ok.body)).toMatchObject({ merchant_id: merchantId, events: 1, published: 1 });
    expect(published).toHaveLength(1);
  });
});
