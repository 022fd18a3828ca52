import { eventually } from '../support/eventually.ts';
import { spawn, type ChildProcess } from 'node:child_process';
import { resolve } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { signatureHeaders, webhookBody } from '#lib/webhooks/deliver';
import { newWebhookSecret } from '#lib/webhooks/secrets';
import { freePort } from '../../infra/local/dynamodb.ts';

/** `npm run ops -- webhooks listen`: the developer's local receiver, verifying as a merchant's would. */
const ROOT = resolve(import.meta.dirname, '../..');
// node itself (not the tsx wrapper, which would leave its node child running when killed).
const cli = (args: string[]) =>
  spawn(process.execPath, ['--import', 'tsx', 'infra/ops/cli.ts', ...args], { cwd: ROOT, env: { ...process.env, NODE_NO_WARNINGS: '1' } });

const children: ChildProcess[] = [];
afterEach(() => {
  for (const c of children.splice(0)) c.kill('SIGKILL');
});

const listen = async (args: string[]) => {
  const child = cli(['webhooks', 'listen', ...args]);
  children.push(child);
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c) => (stdout += c));
  child.stderr.on('data', (c) => (stderr += c));
  const until = Date.now() + 25_000;
  while (!/listening on/.test(stderr)) {
    if (Date.now() > until || child.exitCode !== null) throw new Error(`receiver did not start: ${stderr}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  return { child, out: () => stdout };
};

const EVENT = {
  id: 'evt_00112233445566778899aabb',
  type: 'order.paid',
  created_at: '2026-03-01T10:00:00Z',
  data: { object: { order_no: 'A-1' } },
};

const post = (port: number, body: string, headers: Record<string, string>) =>
  fetch(`http://127.0.0.1:${port}/`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });

describe('ops webhooks listen', () => {
  it('prints verified deliveries, refuses a tampered one (400), and answers 500 to the first N with --fail-first', async () => {
    const secret = newWebhookSecret();
    const port = await freePort();
    const { out } = await listen(['--port', String(port), '--secret', secret, '--fail-first', '1']);
    const body = webhookBody(EVENT);
    const headers = signatureHeaders(EVENT.id, body, [secret], new Date());

    expect((await post(port, body, headers)).status).toBe(500);
    expect((await post(port, body, headers)).status).toBe(204);
    expect((await post(port, body.replace('A-1', 'A-2'), headers)).status).toBe(400);
    expect((await post(port, body, signatureHeaders(EVENT.id, body, [newWebhookSecret()], new Date()))).status).toBe(400);

    // Each line is printed before its answer, but the pipe from the child may deliver it later
    // (complete lines only).
    const lines = () =>
      out()
        .split('\n')
        .slice(0, -1)
        .filter((l) => /^\d{4}-/.test(l) && l.includes(EVENT.id));
    await eventually(
      () => lines().length >= 4,
      10_000,
      () => `4 delivery lines:\n${out()}`,
      20,
    );
    expect(lines()).toHaveLength(4);
    expect(
      lines()
        .slice(0, 2)
        .every((l) => l.includes('order.paid') && l.endsWith('verified')),
    ).toBe(true);
    expect(
      lines()
        .slice(2)
        .every((l) => l.includes('REJECTED')),
    ).toBe(true);
    expect(out()).toContain(JSON.stringify(EVENT));
  });

  it('refuses a bad --port', async () => {
    const child = cli(['webhooks', 'listen', '--port', 'x']);
    let stderr = '';
    child.stderr.on('data', (c) => (stderr += c));
    const code = await new Promise((r) => child.on('exit', r));
    expect(code).toBe(2);
    expect(stderr).toMatch(/--port must be a whole number/);
  });
});
