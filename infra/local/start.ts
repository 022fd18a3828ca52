import { mkdirSync } from 'node:fs';
import type { Server } from 'node:http';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { db, tableName } from '#lib/db/client';
import { keys } from '#lib/db/keys';
import { BASE_PATH } from '#lib/http/route';
import { createToken, regenerateToken, revokeToken } from '#lib/merchants/store';
import { WriteSet } from '#lib/db/writes';
import { now } from '#lib/clock';
import { formatTimestamp } from '#lib/shared/time';
import { ensureTable, startDynamoDbLocal } from './dynamodb.ts';

/**
 * `npm start`: DynamoDB Local (unless DYNAMODB_ENDPOINT names one), the table, a demo merchant and
 * token, and the API at http://localhost:PORT/v1. Ctrl-C stops everything it started.
 */
const DEMO_MERCHANT = 'mer_demo';

const seedDemo = async (): Promise<string> => {
  const existing = await db().send(new GetCommand({ TableName: tableName(), Key: keys.merchant(DEMO_MERCHANT), ConsistentRead: true }));
  if (!existing.Item) {
    await new WriteSet()
      .put('merchant', {
        ...keys.merchant(DEMO_MERCHANT),
        merchant_id: DEMO_MERCHANT,
        name: 'Demo merchant',
        reporting_currency: 'TWD',
        created_at: formatTimestamp(now()),
      })
      .commit();
    return (await createToken(DEMO_MERCHANT)).token;
  }
  // Persisted data (DATA_DIR): the old plain token is unknown, so issue a fresh one.
  try {
    return (await regenerateToken(DEMO_MERCHANT)).token;
  } catch {
    await revokeToken(DEMO_MERCHANT).catch(() => undefined);
    return (await createToken(DEMO_MERCHANT)).token;
  }
};

const main = async () => {
  process.env.STAGE ??= 'local';
  process.env.TABLE_NAME ??= 'revenue-analytics';
  process.env.AWS_REGION ??= 'us-east-1';
  const port = Number(process.env.PORT ?? 3000);
  let stopDynamo: (() => void) | undefined;
  if (!process.env.DYNAMODB_ENDPOINT) {
    const dataDir = process.env.DATA_DIR;
    if (dataDir) mkdirSync(dataDir, { recursive: true });
    const dynamo = await startDynamoDbLocal({ port: Number(process.env.DYNAMODB_PORT ?? 8000), dataDir });
    process.env.DYNAMODB_ENDPOINT = dynamo.endpoint;
    stopDynamo = dynamo.stop;
  }
  const endpoint = process.env.DYNAMODB_ENDPOINT;
  await ensureTable(endpoint, tableName());
  const token = await seedDemo();

  const { createLocalServer } = await import('./server.ts');
  const servers: Server[] = [];
  const hosts = process.env.HOST ? [process.env.HOST] : ['127.0.0.1', '::1'];
  for (const host of hosts) {
    const server = await createLocalServer();
    await new Promise<void>((resolveListen) => {
      server.once('error', (err: NodeJS.ErrnoException) => {
        if (host === '::1' && (err.code === 'EADDRNOTAVAIL' || err.code === 'EAFNOSUPPORT')) return resolveListen();
        console.error(`cannot listen on ${host}:${port}: ${err.message}`);
        stopDynamo?.();
        process.exit(1);
      });
      server.listen(port, host, () => {
        servers.push(server);
        resolveListen();
      });
    });
  }

  console.log(`Revenue Analytics API   http://localhost:${port}${BASE_PATH}`);
  console.log(`OpenAPI document        http://localhost:${port}${BASE_PATH}/openapi.json`);
  console.log(`DynamoDB endpoint       ${endpoint} (table ${tableName()}${process.env.DATA_DIR ? `, data in ${process.env.DATA_DIR}` : ', in memory'})`);
  console.log(`Demo merchant           ${DEMO_MERCHANT}`);
  console.log(`Demo token              ${token}`);
  console.log(`\ncurl -H "Authorization: Bearer ${token}" http://localhost:${port}${BASE_PATH}/customers`);

  const shutdown = () => {
    for (const s of servers) s.close();
    stopDynamo?.();
    process.exit(0);
  };
  process.on('SIGINT', shutdown);
  process.on('SIGTERM', shutdown);
};

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
