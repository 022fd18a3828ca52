import { spawn } from 'node:child_process';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { existsSync, mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runImport } from '../../infra/ops/import.ts';
import { newMerchant, useApi } from '../support/api.ts';
import { eventually } from '../support/eventually.ts';
import { runCli } from '../support/cli.ts';
import { freePort } from '../../infra/local/dynamodb.ts';

/** `ops import`, run as a merchant runs it: a child process speaking HTTP to the service. */
const api = useApi();
const ROOT = resolve(import.meta.dirname, '../..');
const SAMPLES = join(ROOT, 'examples/import');

const total = async (token: string, path: string) => (await api.get(path, token)).body.meta.total as number;

type Exchange = { path: string; run: string; key: string; status: number; replayed: boolean; requestId: string; body: any };

/**
 * A recording relay in front of the API: what each batch request carried and what it answered. A
 * request is carried through to its answer even when the client is killed mid-request, so every
 * batch the service applied is on record.
 */
const startRecorder = async () => {
  const seen: Exchange[] = [];
  let pending = 0;
  const server = createServer((req, res) => {
    pending++;
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', async () => {
      try {
        const headers = Object.fromEntries(
          Object.entries(req.headers).filter(([k]) => k !== 'host' && k !== 'connection' && k !== 'content-length'),
        ) as Record<string, string>;
        const upstream = await fetch(`${api.base}${req.url!.replace(/^\/v1/, '')}`, {
          method: req.method,
          headers,
          body: req.method === 'GET' ? undefined : Buffer.concat(chunks),
        });
        const text = await upstream.text();
        if (req.url!.includes('/batch')) {
          seen.push({
            path: req.url!,
            run: req.headers['x-import-run'] as string,
            key: req.headers['x-idempotency-key'] as string,
            status: upstream.status,
            replayed: upstream.headers.get('idempotent-replayed') === 'true',
            requestId: upstream.headers.get('x-request-id') ?? '',
            body: JSON.parse(text),
          });
        }
        const answerHeaders: Record<string, string> = {};
        upstream.headers.forEach((v, k) => {
          if (k !== 'content-length' && k !== 'transfer-encoding' && k !== 'content-encoding') answerHeaders[k] = v;
        });
        res.writeHead(upstream.status, answerHeaders).end(text);
      } catch {
        res.destroy();
      } finally {
        pending--;
      }
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    seen,
    idle: () => pending === 0,
    close: () => new Promise((r) => server.close(r)),
  };
};

/** A stand-in service whose batch endpoints answer one item created (the first request `first`, when given, with Retry-After: 1). */
const fakeService = async ({ first }: { first?: number } = {}) => {
  const seen: { at: number; key: string | undefined; run: string | undefined }[] = [];
  const server = createServer((req: IncomingMessage, res) => {
    req.resume();
    req.on('end', () => {
      seen.push({ at: Date.now(), key: req.headers['x-idempotency-key'] as string, run: req.headers['x-import-run'] as string });
      if (first && seen.length === 1) {
        res.writeHead(first, { 'retry-after': '1', 'content-type': 'application/json' }).end('{"message":"Too Many Requests"}');
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          data: {
            total: 1,
            created: 1,
            updated: 0,
            skipped: 0,
            failed: 0,
            results: { created: [{ index: 0, id: 1, identifier: 'a' }], updated: [], skipped: [], failed: [] },
          },
        }),
      );
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`, seen, close: () => server.close() };
};

describe('ops import', { timeout: 120_000 }, () => {
  it('imports the sample files in dependency order: every row lands, failures go to the file with their line and reason', async () => {
    const { token } = await newMerchant();
    const dir = mkdtempSync(join(tmpdir(), 'import-'));
    const files = ['customers.csv', 'subscriptions.csv', 'orders.csv', 'events.jsonl'];
    const args = [
      'import',
      '--url',
      api.base,
      '--token',
      token,
      '--checkpoint',
      join(dir, 'cp.json'),
      '--failures',
      join(dir, 'failed.jsonl'),
    ];
    const kinds = ['--customers', '--subscriptions', '--orders', '--events'];
    const r = await runCli([...args, ...files.flatMap((f, i) => [kinds[i], join(SAMPLES, f)])], process.env);
    expect(r.code, r.stderr).toBe(0);
    expect(r.json).toMatchObject({
      import_run: expect.stringMatching(/^run_[0-9a-f]{16}$/),
      resumed: false,
      customers: { rows: 3, created: 3, failed: 0 },
      subscriptions: { rows: 4, created: 4, failed: 0 },
      orders: { rows: 4, created: 4, failed: 0 },
      events: { rows: 3, created: 3, failed: 0 },
      failures_file: null,
    });
    expect(await total(token, '/customers')).toBe(5); // and new.customer@ and kay@, created by their items
    expect(await total(token, '/subscriptions?status=active')).toBe(3);
    expect(
      (await api.get('/orders?start_date=2024-03-01&end_date=2024-03-31', token)).body.data.map((o: { order_no: string }) => o.order_no),
    ).toEqual(['ORD-2024-0002']);
    // Ada 1490 (upgraded), Grace 990, the yearly 290, Kay's monthly order 300 ended in 2024.
    expect((await api.get('/metrics/summary', token)).body.data.current_mrr).toBe('2770.00');

    // A rerun of a finished import sends nothing.
    const again = await runCli([...args, ...files.flatMap((f, i) => [kinds[i], join(SAMPLES, f)])], process.env);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stderr).toContain('already complete');
    expect(await total(token, '/subscriptions/events')).toBe(3 + 5); // recorded + created/cancel of the imports
  });

  it('an interrupted run resumes where it stopped, under the same run id: nothing missing, nothing twice', async () => {
    const { token } = await newMerchant();
    const recorder = await startRecorder();
    const dir = mkdtempSync(join(tmpdir(), 'import-'));
    const orders = join(dir, 'orders.csv');
    const events = join(dir, 'events.jsonl');
    const rows = 800;
    writeFileSync(
      orders,
      ['order_no,customer_email,amount,status,billing_cycle,created_at,paid_at']
        .concat(
          Array.from(
            { length: rows },
            (_, i) => `R-${i},c${i % 40}@example.com,${100 + (i % 7)},paid,one-time,2025-0${1 + (i % 9)}-0${1 + (i % 9)}T00:00:00Z,`,
          ),
        )
        .concat(['R-bad,not-an-email,10,paid,one-time,,'])
        .join('\n'),
    );
    writeFileSync(
      events,
      `${Array.from({ length: 150 }, (_, i) => JSON.stringify({ customer_email: `c${i % 40}@example.com`, event_type: 'created', old_amount: '0', new_amount: String(10 + i), occurred_at: `2024-01-01T00:00:${String(i % 60).padStart(2, '0')}Z` })).join('\n')}\n{oops\n`,
    );
    const checkpoint = join(dir, 'cp.json');
    const failures = join(dir, 'failed.jsonl');
    const args = [
      'infra/ops/cli.ts',
      'import',
      '--url',
      recorder.url,
      '--token',
      token,
      '--orders',
      orders,
      '--events',
      events,
      '--checkpoint',
      checkpoint,
      '--failures',
      failures,
    ];

    // Killed once some batches are answered and recorded (one process, as `npm run ops` runs it: tsx's CLI would fork a second).
    const child = spawn(process.execPath, ['--import', 'tsx', ...args], {
      cwd: ROOT,
      env: { ...process.env, NODE_NO_WARNINGS: '1' },
      stdio: 'ignore',
    });
    await eventually(
      () => existsSync(checkpoint) && JSON.parse(readFileSync(checkpoint, 'utf8')).files.orders.batches_done >= 3,
      60_000,
      'three batches answered',
    );
    child.kill('SIGKILL');
    await new Promise((r) => child.once('exit', r));
    const stopped = JSON.parse(readFileSync(checkpoint, 'utf8'));
    const stoppedAt = stopped.files.orders.batches_done as number;
    expect(stoppedAt).toBeLessThan(9);
    const run = stopped.run_id as string;
    expect(run).toMatch(/^run_[0-9a-f]{16}$/);

    const resumed = await runCli(args.slice(1), process.env);
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(resumed.stderr).toContain(`resuming run ${run}`);
    expect(resumed.stderr).toMatch(new RegExp(`import run ${run}: 11 batches, \\d+ created, \\d+ updated, 0 skipped, 2 failed`));
    expect(resumed.json.import_run).toBe(run);
    // The batch in flight when it stopped is sent again under its key: replayed, or (if it had not finished) found by order_no.
    expect(resumed.json).toMatchObject({
      resumed: true,
      orders: { rows: rows + 1, failed: 1 },
      events: { rows: 151, created: 150, failed: 1 },
    });
    expect(resumed.json.orders.created + resumed.json.orders.updated).toBe(rows);
    expect(resumed.json.orders.updated).toBeLessThanOrEqual(100);
    expect(await total(token, '/orders')).toBe(rows);
    expect(await total(token, '/subscriptions/events')).toBe(150);
    const failed = readFileSync(failures, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(failed).toEqual([
      {
        kind: 'orders',
        file: orders,
        line: rows + 2,
        identifier: 'R-bad',
        reason: 'validation_error',
        message: 'The customer email field must be a valid email address.',
      },
      {
        kind: 'events',
        file: events,
        line: 151,
        identifier: '',
        reason: 'invalid_line',
        message: expect.stringContaining('The line is not valid JSON'),
      },
    ]);

    // Every batch request of both processes carried the run id, and its idempotency key is the run's.
    await eventually(recorder.idle, 30_000, 'the batch in flight at the kill to be answered');
    await recorder.close();
    expect(recorder.seen.length).toBeGreaterThanOrEqual(11);
    for (const x of recorder.seen) {
      expect(x.run, x.path).toBe(run);
      expect(x.key, x.path).toMatch(new RegExp(`^${run}:(orders|events):\\d+$`));
    }
    expect(new Set(recorder.seen.map((x) => x.key)).size).toBe(11); // 9 of orders, 2 of events: the one in flight sent again under its key

    // The activity log lists exactly the batches the service applied under the run (a replay applies nothing), with their answers' counts.
    const applied = recorder.seen.filter((x) => x.status === 200 && !x.replayed);
    const log = (await api.get(`/activity?import_run=${run}&per_page=100`, token)).body;
    expect(log.meta).toMatchObject({ total: applied.length, next_cursor: null });
    const counts = ({ total, created, updated, skipped, failed }: Record<string, number>) => ({ total, created, updated, skipped, failed });
    const byRequest = (list: { requestId: string; counts: object }[]) => [...list].sort((a, b) => a.requestId.localeCompare(b.requestId));
    expect(
      byRequest(
        log.data.map((e: { request_id: string; import_run: string } & Record<string, number>) => ({
          requestId: e.request_id,
          run: e.import_run,
          counts: counts(e),
        })),
      ),
    ).toEqual(byRequest(applied.map((x) => ({ requestId: x.requestId, run, counts: counts(x.body.data) }))));
  }, 180_000);

  it('a wrong address fails at once, naming it; a URL that is not the API root stops at its first 404; nothing is marked done', async () => {
    const { token } = await newMerchant();
    const dir = mkdtempSync(join(tmpdir(), 'import-'));
    writeFileSync(join(dir, 'c.csv'), 'email\na@example.com\n');
    // The token from the environment; state in the folder of its own under the working folder.
    const env = { ...process.env, RAS_API_TOKEN: token };
    const closed = `http://127.0.0.1:${await freePort()}/v1`;
    const started = Date.now();
    const refused = await runCli(['import', '--url', closed, '--customers', join(dir, 'c.csv')], env, dir);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(`cannot reach ${closed} (ECONNREFUSED)`);
    expect(Date.now() - started).toBeLessThan(15_000);
    const state = join(dir, '.ops-import/checkpoint.json');
    expect(existsSync(state) && JSON.parse(readFileSync(state, 'utf8')).complete).toBe(false);

    const root = api.base.replace(/\/v1$/, '');
    const wrong = await runCli(
      ['import', '--url', root, '--customers', join(dir, 'c.csv'), '--checkpoint', join(dir, 'cp.json')],
      env,
      dir,
    );
    expect(wrong.code).toBe(1);
    expect(wrong.stderr).toContain(`is ${root} the API root (such as http://localhost:3000/v1)?`);
    if (existsSync(join(dir, 'cp.json')))
      expect(JSON.parse(readFileSync(join(dir, 'cp.json'), 'utf8'))).toMatchObject({
        complete: false,
        files: { customers: { batches_done: 0 } },
      });
    expect(await total(token, '/customers')).toBe(0);

    // The token from a file: the run goes through.
    writeFileSync(join(dir, 'token'), `${token}\n`);
    const good = await runCli(
      ['import', '--url', api.base, '--token-file', join(dir, 'token'), '--customers', join(dir, 'c.csv')],
      process.env,
      dir,
    );
    expect(good.code, good.stderr).toBe(0);
    expect(good.json).toMatchObject({ customers: { created: 1 }, checkpoint: join(dir, '.ops-import/checkpoint.json') });
  });

  it('Ctrl-C stops the run and says how to resume (exit 130); the same command then finishes it', async () => {
    const { token } = await newMerchant();
    const dir = mkdtempSync(join(tmpdir(), 'import-'));
    writeFileSync(join(dir, 'c.csv'), `email\n${Array.from({ length: 30 }, (_, i) => `ctrl${i}@example.com`).join('\n')}\n`);
    const args = ['import', '--url', api.base, '--customers', join(dir, 'c.csv'), '--batch-size', '1'];
    const env = { ...process.env, RAS_API_TOKEN: token, NODE_NO_WARNINGS: '1' };
    const child = spawn(resolve(ROOT, 'node_modules/.bin/tsx'), [resolve(ROOT, 'infra/ops/cli.ts'), ...args], { cwd: dir, env });
    let stderr = '';
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    await eventually(async () => (await total(token, '/customers')) > 0, 20_000, 'a first batch');
    child.kill('SIGINT');
    const code = await new Promise<number | null>((r) => child.on('exit', (c) => r(c)));
    expect(code).toBe(130);
    expect(stderr).toMatch(
      /stopped \(Ctrl-C\): run the same command again to resume run run_[0-9a-f]{16} from .*\.ops-import\/checkpoint\.json/,
    );
    const resumed = await runCli(args, env, dir);
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(resumed.json).toMatchObject({ resumed: true });
    expect(await total(token, '/customers')).toBe(30);
  });

  it('honours 429 Retry-After, sending the same batch again under the same idempotency key', async () => {
    const service = await fakeService({ first: 429 });
    try {
      const dir = mkdtempSync(join(tmpdir(), 'import-'));
      writeFileSync(join(dir, 'c.csv'), 'email\na@example.com\n');
      const summary = await runImport({
        url: service.url,
        token: 'ras_x',
        files: { customers: join(dir, 'c.csv') },
        checkpoint: join(dir, 'cp.json'),
        failures: join(dir, 'f.jsonl'),
        batchSize: 100,
        progress: false,
      });
      const { seen } = service;
      expect(summary).toMatchObject({ customers: { rows: 1, created: 1 } });
      expect(seen).toHaveLength(2);
      expect(seen[1].key).toBe(seen[0].key);
      expect(summary.import_run).toMatch(/^run_[0-9a-f]{16}$/);
      expect(seen[0].key).toBe(`${summary.import_run}:customers:1`);
      expect(seen[0].run).toBe(summary.import_run);
      expect(seen[1].at - seen[0].at).toBeGreaterThanOrEqual(1000);
    } finally {
      service.close();
    }
  });

  it('a checkpoint written before runs had an id gets one, kept for the rest of the run', async () => {
    const service = await fakeService();
    try {
      const dir = mkdtempSync(join(tmpdir(), 'import-'));
      const file = join(dir, 'c.csv');
      writeFileSync(file, 'email\na@example.com\nb@example.com\n');
      const checkpoint = join(dir, 'cp.json');
      const st = statSync(file);
      const totals = { rows: 2, batches: 1, created: 1, updated: 0, skipped: 0, failed: 0 };
      const customers = { path: resolve(file), size: st.size, mtime_ms: Math.floor(st.mtimeMs), batches_done: 1, totals };
      writeFileSync(checkpoint, JSON.stringify({ version: 1, url: service.url, complete: false, files: { customers } }));
      const logs: string[] = [];
      const summary = await runImport({
        url: service.url,
        token: 'ras_x',
        files: { customers: file },
        checkpoint,
        failures: join(dir, 'f.jsonl'),
        batchSize: 1,
        progress: false,
        log: (l) => logs.push(l),
      });
      const run = summary.import_run;
      expect(run).toMatch(/^run_[0-9a-f]{16}$/);
      expect(summary).toMatchObject({ resumed: true, customers: { rows: 2, batches: 2, created: 2 } });
      expect(service.seen.map((x) => [x.key, x.run])).toEqual([[`${run}:customers:2`, run]]);
      expect(JSON.parse(readFileSync(checkpoint, 'utf8')).run_id).toBe(run);
      expect(logs.join('\n')).toContain(`had no run id: its remaining batches are sent as run ${run}`);
      expect(logs.at(-1)).toMatch(new RegExp(`^import run ${run}: 2 batches, 2 created, 0 updated, 0 skipped, 0 failed`));
    } finally {
      service.close();
    }
  });

  it('refuses a checkpoint of another import, and says what is missing', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'import-'));
    writeFileSync(join(dir, 'a.csv'), 'email\na@example.com\n');
    writeFileSync(
      join(dir, 'cp.json'),
      JSON.stringify({ version: 1, run_id: 'x', url: 'http://elsewhere/v1', complete: false, files: {} }),
    );
    const other = await runCli(
      ['import', '--url', api.base, '--token', 't', '--customers', join(dir, 'a.csv'), '--checkpoint', join(dir, 'cp.json')],
      process.env,
    );
    expect(other.code).toBe(1);
    expect(other.stderr).toContain('belongs to another import');
    const missing = await runCli(['import', '--token', 't'], process.env);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('--url is required');
  });
});
