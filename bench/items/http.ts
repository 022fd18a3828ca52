import { fork, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { benchMerchant } from '../support/api.ts';
import { summarise, type CpuProfile, type ProfileSummary } from '../support/profile.ts';
import type { BenchItem } from '../support/report.ts';
import { round } from '../support/stats.ts';

/**
 * Item 7: the local server (its own process) under autocannon, 20 connections for 20 s, on
 * `GET /orders/{orderNo}` and `POST /orders` (unique order numbers, each for a new customer):
 * requests/s, p50/p99, answers other than the expected 2xx; and where the server's CPU went (a V8
 * profile of the server process during each run: the AWS SDK's share, the top functions).
 */
type AutocannonResult = {
  requests: { average: number; total: number };
  latency: { p50: number; p99: number; average: number };
  non2xx: number;
  errors: number;
  timeouts: number;
  statusCodeStats: Record<string, { count: number }>;
};
type Autocannon = (opts: Record<string, unknown>) => Promise<AutocannonResult>;
const autocannon = createRequire(import.meta.url)('autocannon') as Autocannon;

const SECONDS = Number(process.env.BENCH_HTTP_SECONDS ?? 20);
const CONNECTIONS = 20;
const HERE = dirname(fileURLToPath(import.meta.url));

const startServerProcess = async (): Promise<{
  child: ChildProcess;
  base: string;
  ask: (msg: object, answer: string) => Promise<unknown>;
}> => {
  const child = fork(join(HERE, '../support/serve.ts'), [], {
    execArgv: ['--import', 'tsx'],
    env: { ...process.env },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const ask = (msg: object, answer: string) =>
    new Promise((done) => {
      const on = (m: Record<string, unknown>) => {
        if (answer in m) {
          child.off('message', on);
          done(m[answer]);
        }
      };
      child.on('message', on);
      if (Object.keys(msg).length) child.send(msg);
    });
  const port = await ask({}, 'port');
  return { child, base: `http://127.0.0.1:${port}`, ask };
};

export const item: BenchItem = {
  name: 'http',
  title: `7. HTTP: the local server under autocannon (${CONNECTIONS} connections, ${SECONDS} s)`,
  run: async () => {
    const dir = mkdtempSync(join(tmpdir(), 'bench-http-'));
    const server = await startServerProcess();
    try {
      const { token } = await benchMerchant('http');
      const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
      const order = (n: number) =>
        JSON.stringify({ order_no: `HTTP-${n}`, amount: '10.00', status: 'paid', customer_email: `c${n}@http.bench` });
      let next = 0;
      // Warm-up: handlers loaded, connections open; the order the GET run reads.
      for (let i = 0; i < 30; i++) {
        const r = await fetch(`${server.base}/v1/orders`, { method: 'POST', headers, body: order(next++) });
        if (r.status !== 201) throw new Error(`warm-up POST /orders: ${r.status} ${await r.text()}`);
        await fetch(`${server.base}/v1/orders/HTTP-0`, { headers });
      }
      const runs: { call: string; expected: number; requests: Record<string, unknown> }[] = [
        { call: 'GET /orders/{orderNo}', expected: 200, requests: { method: 'GET', path: '/v1/orders/HTTP-0' } },
        {
          call: 'POST /orders (unique order_no, new customer)',
          expected: 201,
          requests: { method: 'POST', path: '/v1/orders', setupRequest: (req: object) => ({ ...req, body: order(next++) }) },
        },
      ];
      const rows = [];
      for (const run of runs) {
        await server.ask({ profile: 'start' }, 'profiling');
        const r = await autocannon({ url: server.base, connections: CONNECTIONS, duration: SECONDS, headers, requests: [run.requests] });
        const file = join(dir, `${rows.length}.cpuprofile`);
        await server.ask({ profile: 'stop', file }, 'profiled');
        const profile: ProfileSummary = summarise(JSON.parse(readFileSync(file, 'utf8')) as CpuProfile);
        const statuses = Object.fromEntries(Object.entries(r.statusCodeStats ?? {}).map(([k, v]) => [k, v.count]));
        const unexpected =
          Object.entries(statuses)
            .filter(([k]) => Number(k) !== run.expected)
            .reduce((s, [, n]) => s + n, 0) +
          r.errors +
          r.timeouts;
        rows.push({
          call: run.call,
          rps: round(r.requests.average, 0),
          total: r.requests.total,
          p50: r.latency.p50,
          p99: r.latency.p99,
          statuses,
          unexpected,
          profile,
        });
      }
      return {
        tables: [
          {
            columns: [
              'call',
              'requests/s',
              'p50 ms',
              'p99 ms',
              'answers',
              'unexpected (non-2xx, errors, timeouts)',
              'server CPU in the AWS SDK',
            ],
            rows: rows.map((r) => [r.call, r.rps, r.p50, r.p99, JSON.stringify(r.statuses), r.unexpected, `${r.profile.sdk_share} %`]),
          },
          {
            title: 'Server CPU profile by area (% of busy samples)',
            columns: ['call', 'top areas'],
            rows: rows.map((r) => [
              r.call,
              Object.entries(r.profile.by_area)
                .slice(0, 8)
                .map(([a, p]) => `${a} ${p}`)
                .join('; '),
            ]),
          },
        ],
        targets: rows.map((r) => ({ name: `${r.call}: unexpected answers`, value: r.unexpected, target: '0', met: r.unexpected === 0 })),
        notes: [
          "The server runs in its own process (forked, tsx) against the bench's DynamoDB Local; autocannon runs in the bench process. Profiles are the server process's own (V8 sampling, inspector), during each run.",
        ],
        data: { seconds: SECONDS, connections: CONNECTIONS, runs: rows },
      };
    } finally {
      await new Promise<void>((done) => {
        const force = setTimeout(() => server.child.kill('SIGKILL'), 5_000);
        server.child.once('exit', () => {
          clearTimeout(force);
          done();
        });
        server.child.send({ exit: true });
      });
      rmSync(dir, { recursive: true, force: true });
    }
  },
};
