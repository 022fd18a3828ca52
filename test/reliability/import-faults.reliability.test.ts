import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Decimal from 'decimal.js';
import { afterAll, describe, expect, it } from 'vitest';
import { resetClock, setClock } from '#lib/clock';
import { db } from '#lib/db/client';
import { runImport } from '../../infra/ops/import.ts';
import { figuresFromOrders, listAll, pickFigures, storedOrders } from '../orders/helpers.ts';
import { newMerchant, useApi } from '../support/api.ts';
import { seededRandom, throttle } from '../support/faults.ts';
import { allPages } from '../support/pages.ts';

/**
 * `ops import` of an orders file (2,000 rows; IMPORT_ORDERS to change) through the in-process API while DynamoDB loses answers of
 * transactions that landed and throttles calls (SDK middlewares, the only mock allowed): what the
 * tool reports is exactly what is stored. Failed rows are absent, stored rows are there once, the
 * stats and every customer's figures equal a recomputation over the stored orders, and the
 * activity log's totals equal the sum of the batch answers the tool received.
 */
process.env.RATE_LIMIT_PER_HOUR = '1000000';
const api = useApi();
afterAll(() => resetClock());

// 2,000 in CI (about 70 s); 10,000 by hand takes several minutes (docs/benchmarks.md).
const ORDERS = Number(process.env.IMPORT_ORDERS ?? 2_000);
const CUSTOMERS = 400;
const NOW = '2025-06-15T12:00:00Z';
/** Share of transactions whose first answer is lost after they landed, and of all DynamoDB calls throttled. */
const LOST = 0.1;
const THROTTLED = 0.02;

/** A row of the file: one in a hundred is invalid (an amount with three decimals), refused by the API. */
const rowOf = (n: number) => ({
  order_no: `IMP-${n}`,
  amount: n % 100 === 37 ? '1.005' : `${(n % 90) + 1}.${String(n % 100).padStart(2, '0')}`,
  customer_email: `c${n % CUSTOMERS}@import.test`,
  status: n % 3 === 0 ? 'pending' : 'paid',
});

/**
 * Loses the answer of a seeded share of TransactWriteItems after DynamoDB applied them, once per
 * transaction (by its ClientRequestToken), per SDK attempt: the SDK's re-send of the same token is
 * answered as landed.
 */
const loseFirstAnswers = (rate: number, seed: number) => {
  const random = seededRandom(seed);
  const lostTokens = new Set<string>();
  const stats = { transactions: 0, lost: 0, resent: 0 };
  const name = `import-faults:lost#${seed}`;
  db().middlewareStack.add(
    ((next: any, context: any) => async (args: any) => {
      if (context.commandName !== 'TransactWriteItemsCommand') return next(args);
      const token = String(args.input.ClientRequestToken);
      if (lostTokens.has(token)) stats.resent++;
      else stats.transactions++;
      const out = await next(args);
      if (lostTokens.has(token) || !(random() < rate)) return out;
      lostTokens.add(token);
      stats.lost++;
      throw Object.assign(new Error('socket hang up: answer lost after the request was sent'), { name: 'TimeoutError' });
    }) as never,
    { step: 'deserialize', priority: 'low', name },
  );
  return { stats, uninstall: () => db().middlewareStack.remove(name) };
};

describe('ops import of orders under lost answers and throttling', { timeout: 600_000 }, () => {
  it('reports exactly the failed rows; what it reports stored is stored once, and the figures and the activity log agree', async () => {
    // A running clock from noon of a fixed day: the stats' day holds the whole import, and the
    // function instance's throttle bucket refills with time as it does on AWS.
    const origin = Date.now();
    setClock(() => new Date(Date.parse(NOW) + (Date.now() - origin)));
    const { merchantId, token } = await newMerchant();
    const dir = mkdtempSync(join(tmpdir(), 'import-faults-'));
    const file = join(dir, 'orders.jsonl');
    writeFileSync(file, `${Array.from({ length: ORDERS }, (_, n) => JSON.stringify(rowOf(n))).join('\n')}\n`);

    const lost = loseFirstAnswers(LOST, 3);
    const throttled = throttle({ rate: THROTTLED, seed: 5, error: 'ThrottlingException' });
    const log: string[] = [];
    const started = Date.now();
    let summary: Awaited<ReturnType<typeof runImport>>;
    try {
      summary = await runImport({
        url: api.base,
        token,
        files: { orders: file },
        checkpoint: join(dir, 'cp.json'),
        failures: join(dir, 'failed.jsonl'),
        batchSize: 100,
        progress: false,
        maxAttempts: 20,
        log: (line) => log.push(line),
      });
    } finally {
      lost.uninstall();
      throttled.uninstall();
    }
    const seconds = (Date.now() - started) / 1000;
    const totals = (summary as any).orders as {
      rows: number;
      batches: number;
      created: number;
      updated: number;
      skipped: number;
      failed: number;
    };
    const failures = readFileSync(join(dir, 'failed.jsonl'), 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as { line: number; identifier: string; reason: string });
    const byReason: Record<string, number> = {};
    for (const f of failures) byReason[f.reason] = (byReason[f.reason] ?? 0) + 1;
    const waits = log.filter((l) => /Retry-After/.test(l)).length;
    console.info(
      `[import faults] ${ORDERS} rows in ${seconds.toFixed(1)} s: ${JSON.stringify(totals)}; failed by reason ${JSON.stringify(byReason)}; ` +
        `${waits} batch answers retried after Retry-After; transactions ${lost.stats.transactions}, answers lost ${lost.stats.lost}, re-sent ${lost.stats.resent}; ` +
        `DynamoDB calls ${throttled.stats.seen}, throttled ${throttled.stats.injected} ${JSON.stringify(throttled.stats.byCommand)}`,
    );
    expect(lost.stats.lost).toBeGreaterThan(0);
    expect(throttled.stats.injected).toBeGreaterThan(0);
    expect(totals.rows).toBe(ORDERS);
    expect(totals.created + totals.updated + totals.skipped + totals.failed).toBe(ORDERS);
    expect(failures).toHaveLength(totals.failed);

    // Every invalid row is among the failed ones, for its amount.
    const invalid = Array.from({ length: ORDERS }, (_, n) => n).filter((n) => n % 100 === 37);
    const failedNos = new Set(failures.map((f) => f.identifier || rowOf(f.line - 1).order_no));
    for (const n of invalid) expect(failedNos.has(`IMP-${n}`), `IMP-${n}`).toBe(true);
    for (const f of failures) expect(['validation_error', 'throttled', 'conflict'], JSON.stringify(f)).toContain(f.reason);

    // Failed rows are absent; every other row is stored once, as its row says.
    const stored = await storedOrders(merchantId);
    const storedNos = stored.map((o) => o.order_no as string);
    expect(new Set(storedNos).size).toBe(storedNos.length);
    const expectedNos = Array.from({ length: ORDERS }, (_, n) => `IMP-${n}`).filter((no) => !failedNos.has(no));
    const failedButStored = failures.filter((f) => storedNos.includes(f.identifier));
    expect(failedButStored, 'rows reported failed that are stored').toEqual([]);
    expect(storedNos.sort()).toEqual(expectedNos.sort());
    expect(stored.length).toBe(totals.created + totals.updated + totals.skipped);
    for (const o of stored) {
      const row = rowOf(Number(String(o.order_no).slice(4)));
      expect({ amount: new Decimal(o.amount).toFixed(2), status: o.status }, row.order_no).toEqual({
        amount: new Decimal(row.amount).toFixed(2),
        status: row.status,
      });
    }

    // The figures equal a recomputation over the stored orders (read through the API).
    const { orders, total } = (await listAll(api, token)) as { orders: any[]; total: number };
    expect(total).toBe(stored.length);
    expect(orders).toHaveLength(stored.length);
    const paid = orders.filter((o) => o.status === 'paid');
    const revenue = paid.reduce((s, o) => s.plus(o.amount), new Decimal(0)).toFixed(2);
    expect((await api.get('/orders/stats', token)).body.data).toEqual({
      today_revenue: revenue,
      monthly_revenue: revenue,
      today_count: orders.length,
      today_success_rate: new Decimal(paid.length).times(100).div(orders.length).toDecimalPlaces(1, Decimal.ROUND_HALF_UP).toNumber(),
    });
    const { items: customers } = await allPages(api, token, '/customers');
    expect(customers).toHaveLength(new Set(orders.map((o) => o.customer_id)).size);
    for (const c of customers) expect(pickFigures(c), c.email).toEqual(figuresFromOrders(orders.filter((o) => o.customer_id === c.id)));

    // The activity log of the run: its totals are the sum of the batch answers.
    const { items: entries } = await allPages(api, token, `/activity?import_run=${summary!.import_run}`);
    const sum = (field: 'created' | 'updated' | 'skipped' | 'failed') => entries.reduce((n, e) => n + e[field], 0);
    expect({
      batches: entries.length,
      created: sum('created'),
      updated: sum('updated'),
      skipped: sum('skipped'),
      failed: sum('failed'),
    }).toEqual({
      batches: totals.batches,
      created: totals.created,
      updated: totals.updated,
      skipped: totals.skipped,
      failed: totals.failed,
    });
  });
});
