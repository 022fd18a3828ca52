import { spawn } from 'node:child_process';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runImport } from '../../infra/ops/import.ts';
import { newMerchant, useApi } from '../support/api.ts';
import { eventually } from '../support/eventually.ts';
import { runCli } from '../support/cli.ts';

/** `ops import`, run as a merchant runs it: a child process speaking HTTP to the service. */
const api = useApi();
const ROOT = resolve(import.meta.dirname, '../..');
const SAMPLES = join(ROOT, 'examples/import');

const total = async (token: string, path: string) => (await api.get(path, token)).body.meta.total as number;

describe('ops import', { timeout: 120_000 }, () => {
  it('imports the sample files in dependency order: every row lands, failures go to the file with their line and reason', async () => {
    const { token } = await newMerchant();
    const dir = mkdtempSync(join(tmpdir(), 'import-'));
    const files = ['customers.csv', 'subscriptions.csv', 'orders.csv', 'events.jsonl'];
    const args = ['import', '--url', api.base, '--token', token, '--checkpoint', join(dir, 'cp.json'), '--failures', join(dir, 'failed.jsonl')];
    const kinds = ['--customers', '--subscriptions', '--orders', '--events'];
    const r = await runCli([...args, ...files.flatMap((f, i) => [kinds[i], join(SAMPLES, f)])], process.env);
    expect(r.code, r.stderr).toBe(0);
    expect(r.json).toMatchObject({
      resumed: false,
      customers: { rows: 3, created: 3, failed: 0 },
      subscriptions: { rows: 4, created: 4, failed: 0 },
      orders: { rows: 4, created: 4, failed: 0 },
      events: { rows: 3, created: 3, failed: 0 },
      failures_file: null,
    });
    expect(await total(token, '/customers')).toBe(5); // and new.customer@ and kay@, created by their items
    expect(await total(token, '/subscriptions?status=active')).toBe(3);
    expect((await api.get('/orders?start_date=2024-03-01&end_date=2024-03-31', token)).body.data.map((o: { order_no: string }) => o.order_no)).toEqual(['ORD-2024-0002']);
    // Ada 1490 (upgraded), Grace 990, the yearly 290, Kay's monthly order 300 ended in 2024.
    expect((await api.get('/metrics/summary', token)).body.data.current_mrr).toBe('2770.00');

    // A rerun of a finished import sends nothing.
    const again = await runCli([...args, ...files.flatMap((f, i) => [kinds[i], join(SAMPLES, f)])], process.env);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stderr).toContain('already complete');
    expect(await total(token, '/subscriptions/events')).toBe(3 + 5); // recorded + created/cancel of the imports
  });

  it('an interrupted run resumes where it stopped: nothing missing, nothing twice', async () => {
    const { token } = await newMerchant();
    const dir = mkdtempSync(join(tmpdir(), 'import-'));
    const orders = join(dir, 'orders.csv');
    const events = join(dir, 'events.jsonl');
    const rows = 800;
    writeFileSync(
      orders,
      ['order_no,customer_email,amount,status,billing_cycle,created_at,paid_at']
        .concat(Array.from({ length: rows }, (_, i) => `R-${i},c${i % 40}@example.com,${100 + (i % 7)},paid,one-time,2025-0${1 + (i % 9)}-0${1 + (i % 9)}T00:00:00Z,`))
        .concat(['R-bad,not-an-email,10,paid,one-time,,'])
        .join('\n'),
    );
    writeFileSync(events, `${Array.from({ length: 150 }, (_, i) => JSON.stringify({ customer_email: `c${i % 40}@example.com`, event_type: 'created', old_amount: '0', new_amount: String(10 + i), occurred_at: `2024-01-01T00:00:${String(i % 60).padStart(2, '0')}Z` })).join('\n')}\n{oops\n`);
    const checkpoint = join(dir, 'cp.json');
    const failures = join(dir, 'failed.jsonl');
    const args = ['infra/ops/cli.ts', 'import', '--url', api.base, '--token', token, '--orders', orders, '--events', events, '--checkpoint', checkpoint, '--failures', failures];

    // Killed once some batches are answered and recorded (one process, as `npm run ops` runs it: tsx's CLI would fork a second).
    const child = spawn(process.execPath, ['--import', 'tsx', ...args], { cwd: ROOT, env: { ...process.env, NODE_NO_WARNINGS: '1' }, stdio: 'ignore' });
    await eventually(() => existsSync(checkpoint) && JSON.parse(readFileSync(checkpoint, 'utf8')).files.orders.batches_done >= 3, 60_000, 'three batches answered');
    child.kill('SIGKILL');
    await new Promise((r) => child.once('exit', r));
    const stoppedAt = JSON.parse(readFileSync(checkpoint, 'utf8')).files.orders.batches_done as number;
    expect(stoppedAt).toBeLessThan(9);

    const resumed = await runCli(args.slice(1), process.env);
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(resumed.stderr).toContain('resuming run');
    // The batch in flight when it stopped is sent again under its key: replayed, or (if it had not finished) found by order_no.
    expect(resumed.json).toMatchObject({ resumed: true, orders: { rows: rows + 1, failed: 1 }, events: { rows: 151, created: 150, failed: 1 } });
    expect(resumed.json.orders.created + resumed.json.orders.updated).toBe(rows);
    expect(resumed.json.orders.updated).toBeLessThanOrEqual(100);
    expect(await total(token, '/orders')).toBe(rows);
    expect(await total(token, '/subscriptions/events')).toBe(150);
    const failed = readFileSync(failures, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
    expect(failed).toEqual([
      { kind: 'orders', file: orders, line: rows + 2, identifier: 'R-bad', reason: 'validation_error', message: 'The customer email field must be a valid email address.' },
      { kind: 'events', file: events, line: 151, identifier: '', reason: 'invalid_line', message: expect.stringContaining('The line is not valid JSON') },
    ]);
  });

  it('honours 429 Retry-After, sending the same batch again under the same idempotency key', async () => {
    const seen: { at: number; key: string | undefined; run: string | undefined }[] = [];
    const server = createServer((req: IncomingMessage, res) => {
      req.resume();
      req.on('end', () => {
        seen.push({ at: Date.now(), key: req.headers['x-idempotency-key'] as string, run: req.headers['x-import-run'] as string });
        if (seen.length === 1) {
          res.writeHead(429, { 'retry-after': '1', 'content-type': 'application/json' }).end('{"message":"Too Many Requests"}');
          return;
        }
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ data: { total: 1, created: 1, updated: 0, skipped: 0, failed: 0, results: { created: [{ index: 0, id: 1, identifier: 'a' }], updated: [], skipped: [], failed: [] } } }));
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const dir = mkdtempSync(join(tmpdir(), 'import-'));
      writeFileSync(join(dir, 'c.csv'), 'email\na@example.com\n');
      const summary = await runImport({
        url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
        token: 'ras_x',
        files: { customers: join(dir, 'c.csv') },
        checkpoint: join(dir, 'cp.json'),
        failures: join(dir, 'f.jsonl'),
        batchSize: 100,
        progress: false,
      });
      expect(summary).toMatchObject({ customers: { rows: 1, created: 1 } });
      expect(seen).toHaveLength(2);
      expect(seen[1].key).toBe(seen[0].key);
      expect(seen[0].key).toBe(`${summary.run_id}:customers:1`);
      expect(seen[0].run).toBe(summary.run_id);
      expect(seen[1].at - seen[0].at).toBeGreaterThanOrEqual(1000);
    } finally {
      server.close();
    }
  });

  it('refuses a checkpoint of another import, and says what is missing', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'import-'));
    writeFileSync(join(dir, 'a.csv'), 'email\na@example.com\n');
    writeFileSync(join(dir, 'cp.json'), JSON.stringify({ version: 1, run_id: 'x', url: 'http://elsewhere/v1', complete: false, files: {} }));
    const other = await runCli(['import', '--url', api.base, '--token', 't', '--customers', join(dir, 'a.csv'), '--checkpoint', join(dir, 'cp.json')], process.env);
    expect(other.code).toBe(1);
    expect(other.stderr).toContain('belongs to another import');
    const missing = await runCli(['import', '--token', 't'], process.env);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('--url is required');
  });
});
