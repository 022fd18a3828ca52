import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { connect } from 'node:net';
import { resolve } from 'node:path';
import { DescribeTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { afterEach, describe, expect, it } from 'vitest';
import { freePort } from '../../infra/local/dynamodb.ts';

/**
 * `npm start` (tsx infra/local/start.ts) as a child process, stopped with SIGINT (Ctrl-C) or SIGTERM.
 * It runs as `node --import tsx` so the signal reaches start.ts itself: the tsx CLI's relay SIGKILLs a
 * child that does not acknowledge a signal within 30 ms, which a loaded machine cannot promise.
 */
const ROOT = resolve(import.meta.dirname, '../..');

type Stack = { child: ChildProcess; token: string; base: string; output: () => string };
const started: ChildProcess[] = [];

const start = async (env: Record<string, string | undefined>): Promise<Stack> => {
  const childEnv: NodeJS.ProcessEnv = { ...process.env, NODE_NO_WARNINGS: '1', HOST: '127.0.0.1', ...env };
  for (const [k, v] of Object.entries(env)) if (v === undefined) delete childEnv[k];
  const child = spawn(process.execPath, ['--import', 'tsx', 'infra/local/start.ts'], { cwd: ROOT, env: childEnv, stdio: ['ignore', 'pipe', 'pipe'] });
  started.push(child);
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));
  const token = await new Promise<string>((done, fail) => {
    const timer = setInterval(() => {
      const m = /Demo token\s+(ras_[0-9A-Za-z]+)/.exec(out);
      if (m) {
        clearInterval(timer);
        done(m[1]);
      }
    }, 50);
    child.once('exit', (code) => {
      clearInterval(timer);
      fail(new Error(`npm start exited (${code}) before it was ready:\n${out}`));
    });
  });
  expect(out).toContain(`http://localhost:${env.PORT}/v1`);
  return { child, token, base: `http://127.0.0.1:${env.PORT}/v1`, output: () => out };
};

const stop = (child: ChildProcess, signal: NodeJS.Signals = 'SIGINT'): Promise<number | null> =>
  new Promise((done) => {
    if (child.exitCode !== null) return done(child.exitCode);
    child.once('exit', (code) => done(code));
    child.kill(signal);
  });

/** After a failure: Ctrl-C first (so the stack stops its DynamoDB Local), SIGKILL if that does not end it. */
afterEach(async () => {
  for (const child of started.splice(0)) {
    if (child.exitCode !== null || child.signalCode !== null) continue;
    const force = setTimeout(() => child.kill('SIGKILL'), 10_000);
    await stop(child);
    clearTimeout(force);
  }
});

const portOpen = (port: number): Promise<boolean> =>
  new Promise((done) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      done(true);
    });
    socket.once('error', () => done(false));
  });

/** Processes whose command line names `-port <port>` (DynamoDB Local's jar), from /proc. */
const dynamoProcesses = (port: number): number[] =>
  readdirSync('/proc')
    .filter((p) => /^\d+$/.test(p))
    .filter((pid) => {
      try {
        const args = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
        const at = args.indexOf('-port');
        return args.some((a) => a.endsWith('DynamoDBLocal.jar')) && at >= 0 && args[at + 1] === String(port);
      } catch {
        return false;
      }
    })
    .map(Number);

const get = async (base: string, path: string, token?: string) => {
  const res = await fetch(`${base}${path}`, { headers: token ? { authorization: `Bearer ${token}` } : {} });
  return { status: res.status, body: (await res.json()) as any };
};

describe('npm start', () => {
  it('runs DynamoDB Local and the API with a demo token, and Ctrl-C stops both', { timeout: 120_000 }, async () => {
    const [port, dynamoPort] = [await freePort(), await freePort()];
    const stack = await start({ PORT: String(port), DYNAMODB_PORT: String(dynamoPort), DYNAMODB_ENDPOINT: undefined, TABLE_NAME: undefined });
    expect(stack.output()).toContain(`http://127.0.0.1:${dynamoPort}`);
    expect(dynamoProcesses(dynamoPort)).toHaveLength(1);

    const list = await get(stack.base, '/customers', stack.token);
    expect(list.status).toBe(200);
    expect(list.body).toEqual({ data: [], meta: expect.objectContaining({ current_page: 1, total: 0 }) });
    expect((await get(stack.base, '/customers/1', stack.token)).status).toBe(404);
    expect((await get(stack.base, '/customers')).status).toBe(401);

    // Only the stack's own process is signalled: it must take its DynamoDB Local down itself.
    expect(await stop(stack.child)).toBe(0);
    expect(await portOpen(port)).toBe(false);
    expect(await portOpen(dynamoPort)).toBe(false);
    expect(dynamoProcesses(dynamoPort)).toEqual([]);
  });

  it('uses the DynamoDB named by DYNAMODB_ENDPOINT, creating the table once, and leaves it running', { timeout: 120_000 }, async () => {
    const endpoint = process.env.DYNAMODB_ENDPOINT!;
    const table = `local-start-${process.pid}-${Date.now()}`;
    const client = new DynamoDBClient({ endpoint, region: 'us-east-1', credentials: { accessKeyId: 'local', secretAccessKey: 'local' } });
    await expect(client.send(new DescribeTableCommand({ TableName: table }))).rejects.toMatchObject({ name: 'ResourceNotFoundException' });

    const port = String(await freePort());
    const first = await start({ PORT: port, DYNAMODB_ENDPOINT: endpoint, TABLE_NAME: table, DYNAMODB_PORT: undefined });
    expect(first.output()).toContain(`DynamoDB endpoint       ${endpoint} (table ${table})`);
    const described = await client.send(new DescribeTableCommand({ TableName: table }));
    expect(described.Table?.TableStatus).toBe('ACTIVE');
    expect((await get(first.base, '/customers', first.token)).status).toBe(200);
    expect(await stop(first.child, 'SIGTERM')).toBe(0);

    // Again on the same table: it exists, and the demo merchant gets a fresh token (the old one is refused).
    const second = await start({ PORT: port, DYNAMODB_ENDPOINT: endpoint, TABLE_NAME: table, DYNAMODB_PORT: undefined });
    expect(second.token).not.toBe(first.token);
    expect((await get(second.base, '/customers', second.token)).status).toBe(200);
    expect((await get(second.base, '/customers', first.token)).status).toBe(401);
    expect(await stop(second.child)).toBe(0);
    expect(await portOpen(Number(port))).toBe(false);

    // The endpoint it was given is not its to stop.
    expect((await client.send(new DescribeTableCommand({ TableName: table }))).Table?.TableName).toBe(table);
  });
});
