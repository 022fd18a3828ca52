import { eventually } from '../support/eventually.ts';
import type { Socket } from 'node:dgram';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { tracer } from '#lib/observability';
import { newMerchant, useApi } from '../support/api.ts';

/**
 * Powertools Tracer as on Lambda: this file's process looks like a Lambda execution environment
 * (AWS_EXECUTION_ENV, LAMBDA_TASK_ROOT), and a UDP socket on 127.0.0.1 stands in for the X-Ray
 * daemon the SDK streams subsegments to. The in-process local server keeps answering as usual.
 */
const daemon = await vi.hoisted(async () => {
  const { createSocket } = await import('node:dgram');
  const socket = createSocket('udp4');
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
  process.env.AWS_EXECUTION_ENV = 'AWS_Lambda_nodejs22.x';
  process.env.LAMBDA_TASK_ROOT = process.cwd();
  process.env.AWS_XRAY_DAEMON_ADDRESS = `127.0.0.1:${socket.address().port}`;
  // Set-up calls (merchants, tokens) run outside any invocation: nothing to trace, nothing to say.
  process.env.AWS_XRAY_CONTEXT_MISSING = 'IGNORE_ERROR';
  return socket as Socket;
});
afterAll(() => daemon.close());

type Subsegment = {
  id: string;
  name: string;
  trace_id: string;
  parent_id?: string;
  namespace?: string;
  aws?: { operation?: string; table_name?: string };
  error?: boolean;
  fault?: boolean;
};
const received: Subsegment[] = [];
// Each datagram: a JSON header line, then one (sub)segment document.
daemon.on('message', (msg) => received.push(JSON.parse(msg.toString('utf8').split('\n')[1]!)));

const api = useApi();

/** One invocation's trace header, as Lambda sets it for the runtime. */
const traceId = () =>
  `1-${Math.floor(Date.now() / 1000).toString(16)}-${Array.from({ length: 24 }, () => Math.floor(Math.random() * 16).toString(16)).join('')}`;

/**
 * Waits for the invocation's own subsegment of trace `root` (sent when the handler returns, after its
 * DynamoDB calls') and `calls` DynamoDB subsegments: datagrams arrive after the HTTP answer.
 */
const settle = async (root: string, calls = 0) => {
  const ours = () => received.filter((s) => s.trace_id === root);
  const done = () => ours().some((s) => s.name.startsWith('## ')) && ours().filter((s) => s.name === 'DynamoDB').length >= calls;
  await eventually(done, 5_000, () => `the subsegments of ${root}: ${JSON.stringify(ours().map((s) => s.name))}`, 20);
};

describe('Powertools Tracer in the pipeline', () => {
  it('records the invocation and each of its DynamoDB calls as subsegments of its trace; answers unchanged', async () => {
    expect(tracer?.isTracingEnabled()).toBe(true);
    const { token } = await newMerchant();
    const created = await api.post('/customers', token, { email: `traced-${Date.now()}@example.com` });
    expect(created.status).toBe(201);

    const root = traceId();
    process.env._X_AMZN_TRACE_ID = `Root=${root};Parent=53995c3f42cd8ad8;Sampled=1`;
    received.length = 0;
    // No stamp of the token's last use before the request: every DynamoDB call here is the request's.
    const { res, requests, byCommand } = await api.counted('GET', `/customers/${created.body.data.id}`, { token }, { stamp: false });
    delete process.env._X_AMZN_TRACE_ID;
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual(created.body.data);

    await settle(root, requests);
    const ours = received.filter((s) => s.trace_id === root);
    const invocation = ours.filter((s) => s.name.startsWith('## '));
    expect(invocation).toHaveLength(1);
    const calls = ours.filter((s) => s.name === 'DynamoDB');
    // One subsegment per request the tally counted, under the invocation's, by operation.
    expect(calls).toHaveLength(requests);
    const traced: Record<string, number> = {};
    for (const call of calls) {
      expect(call).toMatchObject({ namespace: 'aws', parent_id: invocation[0]!.id });
      expect(call.error ?? false).toBe(false);
      traced[`${call.aws!.operation}Command`] = (traced[`${call.aws!.operation}Command`] ?? 0) + 1;
    }
    expect(traced).toEqual(byCommand);
    // A BatchGetItem names its tables inside RequestItems, so its subsegment carries no table_name.
    expect(new Set(calls.map((c) => c.aws!.table_name).filter((t) => t !== undefined))).toEqual(
      new Set([process.env.TABLE_NAME ?? 'revenue-analytics']),
    );
  });

  it('never records response bodies (tokens, personal data)', async () => {
    const { token } = await newMerchant();
    const email = `private-${Date.now()}@example.com`;
    const root = traceId();
    process.env._X_AMZN_TRACE_ID = `Root=${root};Parent=53995c3f42cd8ad8;Sampled=1`;
    received.length = 0;
    const res = await api.post('/customers', token, { email });
    delete process.env._X_AMZN_TRACE_ID;
    expect(res.status).toBe(201);
    await settle(root);
    expect(received.length).toBeGreaterThan(0);
    const sent = JSON.stringify(received);
    expect(sent).not.toContain(email);
    expect(sent).not.toContain(token);
  });
});
