import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { connect } from 'node:net';
import { networkInterfaces, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { QueryCommand, DescribeTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { afterEach, describe, expect, it } from 'vitest';
import { freePort } from '../../infra/local/dynamodb.ts';
import { MERCHANT_DIRECTORY } from '#lib/db/keys';

/**
 * `npm start` (tsx infra/local/start.ts) as a child process, stopped with SIGINT (Ctrl-C) or SIGTERM.
 * It runs as `node --import tsx` so the signal reaches start.ts itself: the tsx CLI's relay SIGKILLs a
 * child that does not acknowledge a signal within 30 ms, which a loaded machine cannot promise.
 */
const ROOT = resolve(import.meta.dirname, '../..');

type Stack = { child: ChildProcess; token: string; base: string; output: () => string };
const started: ChildProcess[] = [];
/** DynamoDB Local processes a test orphaned on purpose: killed after a failure. */
const orphans: number[] = [];

const start = async (env: Record<string, string | undefined>): Promise<Stack> => {
  const childEnv: NodeJS.ProcessEnv = {
    ...process.env,
    NODE_NO_WARNINGS: '1',
    HOST: '127.0.0.1',
    LOCAL_STACK_FILE: join(mkdtempSync(join(tmpdir(), 'start-')), 'stack.json'),
    ...env,
  };
  for (const [k, v] of Object.entries(env)) if (v === undefined) delete childEnv[k];
  const child = spawn(process.execPath, ['--import', 'tsx', 'infra/local/start.ts'], {
    cwd: ROOT,
    env: childEnv,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
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
  for (const pid of orphans.splice(0)) {
    try {
      if (readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('DynamoDBLocal')) process.kill(pid, 'SIGKILL');
    } catch {
      /* gone */
    }
  }
});

const portOpen = (port: number, host = '127.0.0.1'): Promise<boolean> =>
  new Promise((done) => {
    const socket = connect(port, host);
    socket.once('connect', () => {
      socket.destroy();
      done(true);
    });
    socket.once('error', () => done(false));
  });

/** Java processes running DynamoDB Local (the jar, or our loopback launcher) with `-port <port>`, from /proc. */
const dynamoProcesses = (port: number): number[] =>
  readdirSync('/proc')
    .filter((p) => /^\d+$/.test(p))
    .filter((pid) => {
      try {
        const args = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
        const at = args.indexOf('-port');
        return args[0].endsWith('java') && args.some((a) => a.includes('DynamoDBLocal')) && at >= 0 && args[at + 1] === String(port);
      } catch {
        return false;
      }
    })
    .map(Number);

/** Local addresses (hex, as /proc/net/tcp{,6} writes them) of the sockets listening on `port`. */
const listeningAddresses = (port: number): string[] =>
  ['/proc/net/tcp', '/proc/net/tcp6'].flatMap((file) =>
    readFileSync(file, 'utf8')
      .split('\n')
      .slice(1)
      .map((line) => line.trim().split(/\s+/))
      .filter((f) => f.length > 3 && f[3] === '0A' && parseInt(f[1].split(':')[1], 16) === port)
      .map((f) => f[1].split(':')[0]),
  );
/** 127.0.0.1 in /proc/net/tcp, and as ::ffff:127.0.0.1 or ::1 in /proc/net/tcp6. */
const LOOPBACK = ['0100007F', '0000000000000000FFFF00000100007F', '00000000000000000000000001000000'];

const get = async (base: string, path: string, token?: string) => {
  const res = await fetch(`${base}${path}`, { headers: token ? { authorization: `Bearer ${token}` } : {} });
  return { status: res.status, body: (await res.json()) as any };
};

describe('npm start', () => {
  it('runs DynamoDB Local and the API with a demo token, and Ctrl-C stops both', { timeout: 120_000 }, async () => {
    const [port, dynamoPort] = [await freePort(), await freePort()];
    const stack = await start({
      PORT: String(port),
      DYNAMODB_PORT: String(dynamoPort),
      DYNAMODB_ENDPOINT: undefined,
      TABLE_NAME: undefined,
    });
    expect(stack.output()).toContain(`http://127.0.0.1:${dynamoPort}`);
    expect(dynamoProcesses(dynamoPort)).toHaveLength(1);
    // DynamoDB Local answers on loopback only, not on the machine's other addresses.
    expect(stack.output()).not.toContain('all interfaces');
    const listening = listeningAddresses(dynamoPort);
    expect(listening.length).toBeGreaterThan(0);
    expect(listening.filter((a) => !LOOPBACK.includes(a))).toEqual([]);
    const external = Object.values(networkInterfaces())
      .flat()
      .find((a) => a && a.family === 'IPv4' && !a.internal);
    if (external) expect(await portOpen(dynamoPort, external.address)).toBe(false);

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
    // The demo merchant is in the merchant directory (the sweeper's and `ops merchant list`'s), once.
    const directory = await client.send(
      new QueryCommand({
        TableName: table,
        IndexName: 'gsi1',
        KeyConditionExpression: 'gsi1pk = :p',
        ExpressionAttributeValues: { ':p': { S: MERCHANT_DIRECTORY } },
      }),
    );
    expect(directory.Items?.map((i) => i.merchant_id?.S)).toEqual(['mer_demo']);
  });

  it('relays outbox events to the local bus, one line each; started again, it resumes after its checkpoint', {
    timeout: 120_000,
  }, async () => {
    const env = {
      PORT: String(await freePort()),
      DYNAMODB_ENDPOINT: process.env.DYNAMODB_ENDPOINT!,
      TABLE_NAME: `local-relay-${process.pid}-${Date.now()}`,
      DYNAMODB_PORT: undefined,
      EVENTBRIDGE_ENDPOINT: undefined,
      // Both starts keep their state (the relay checkpoint) in the same .local folder.
      LOCAL_STACK_FILE: join(mkdtempSync(join(tmpdir(), 'start-relay-')), 'stack.json'),
    };
    const order = async (stack: Stack, orderNo: string) => {
      const res = await fetch(`${stack.base}/orders`, {
        method: 'POST',
        headers: { authorization: `Bearer ${stack.token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ order_no: orderNo, amount: '10.00', customer_email: 'relay@example.com', status: 'paid' }),
      });
      expect(res.status).toBe(201);
    };
    const eventLines = async (stack: Stack, n: number) => {
      const lines = () => stack.output().match(/^event order\.\w+ evt_[0-9a-f]{24} \(mer_demo\)$/gm) ?? [];
      for (const until = Date.now() + 20_000; lines().length < n; await new Promise((r) => setTimeout(r, 100))) {
        if (Date.now() > until) throw new Error(`${lines().length} of ${n} event lines:\n${stack.output()}`);
      }
      return lines();
    };

    const first = await start(env);
    expect(first.output()).toContain('Outbox relay            table stream → local bus (one line per event)');
    // The other stream consumer, with its own poller (test/metrics/local-applier.test.ts applies an item through it).
    expect(first.output()).toContain("Pending-moves applier   table stream → batches' aggregate moves applied");
    await order(first, 'RELAY-1');
    const firstEvents = await eventLines(first, 2);
    expect(firstEvents.map((l) => l.split(' ')[1])).toEqual(['order.created', 'order.paid']);
    expect(await stop(first.child)).toBe(0);

    const second = await start(env);
    await order(second, 'RELAY-2');
    const secondEvents = await eventLines(second, 2);
    await new Promise((r) => setTimeout(r, 500));
    // Only the new order's events: the first ones were checkpointed.
    expect(await eventLines(second, 2)).toHaveLength(2);
    for (const line of firstEvents) expect(secondEvents).not.toContain(line);
    expect(await stop(second.child)).toBe(0);
  });

  it('after kill -9, the ops CLI says the stack is gone and the next start stops the orphaned DynamoDB Local', {
    timeout: 180_000,
  }, async () => {
    const stackFile = join(mkdtempSync(join(tmpdir(), 'killed-')), 'stack.json');
    const [port, dynamoPort] = [await freePort(), await freePort()];
    const env = {
      PORT: String(port),
      DYNAMODB_PORT: String(dynamoPort),
      DYNAMODB_ENDPOINT: undefined,
      TABLE_NAME: undefined,
      LOCAL_STACK_FILE: stackFile,
    };
    const first = await start(env);
    const [orphan] = dynamoProcesses(dynamoPort);
    orphans.push(orphan);
    expect(JSON.parse(readFileSync(stackFile, 'utf8'))).toMatchObject({ pid: first.child.pid, dynamodbPid: orphan });

    expect(await stop(first.child, 'SIGKILL')).toBe(null);
    // Nothing stopped DynamoDB Local, and the stack file is stale.
    expect(dynamoProcesses(dynamoPort)).toEqual([orphan]);
    expect(existsSync(stackFile)).toBe(true);

    // The operator CLI (no endpoint, no AWS credentials) names the problem instead of a credentials error.
    const { DYNAMODB_ENDPOINT: _e, TABLE_NAME: _t, AWS_PROFILE: _p, AWS_ACCESS_KEY_ID: _k, ...rest } = process.env;
    const cli = await new Promise<{ code: number; stdout: string; stderr: string }>((done) =>
      execFile(
        process.execPath,
        ['--import', 'tsx', 'infra/ops/cli.ts', 'merchant', 'create', '--name', 'x'],
        { cwd: ROOT, env: { ...rest, NODE_NO_WARNINGS: '1', HOME: tmpdir(), LOCAL_STACK_FILE: stackFile }, timeout: 30_000 },
        (err, stdout, stderr) => done({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
      ),
    );
    expect(cli.code).toBe(1);
    expect(cli.stdout).toBe('');
    expect(cli.stderr).toContain(
      `the local stack recorded in ${stackFile} is not running (npm start was killed?); start it again or set DYNAMODB_ENDPOINT`,
    );

    // The same ports again: the next start stops the orphan (freeing its port) and replaces the file.
    const second = await start(env);
    expect(second.output()).toContain(
      `A previous npm start (pid ${first.child.pid}) was not stopped cleanly: stopped its orphaned DynamoDB Local (pid ${orphan}), removed its ${stackFile}`,
    );
    const [fresh] = dynamoProcesses(dynamoPort);
    expect(fresh).not.toBe(orphan);
    expect(dynamoProcesses(dynamoPort)).toEqual([fresh]);
    expect(JSON.parse(readFileSync(stackFile, 'utf8'))).toMatchObject({ pid: second.child.pid, dynamodbPid: fresh });
    expect((await get(second.base, '/customers', second.token)).status).toBe(200);
    expect(await stop(second.child)).toBe(0);
    expect(existsSync(stackFile)).toBe(false);
    expect(dynamoProcesses(dynamoPort)).toEqual([]);
  });
});
